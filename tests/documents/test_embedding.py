"""Vectors from an embedding model of the library, on the real CPU engine borrowed from the
engine pool; hybrid search; an engine that dies mid-index leaves full text usable and the vectors
resume later."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.base.progress import Progress
from strata_gui.core.config.services import build_services
from strata_gui.core.documents import HYBRID
from tests.support import gguf_model
from tests.support.documents import write_pdf
from tests.support.engines import TestEngines


@pytest.fixture(scope="module")
def embedding_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A llama GGUF converted as an embedding model (``pooling_type`` mean): the library lists it as one."""
    return gguf_model.write_model(tmp_path_factory.mktemp("embed") / "strata-test-embed-F16.gguf",
                                  gguf_model.ModelSpec(pooling=1, name="Strata Test Embed"))


async def _app(test_engines: TestEngines, model: Path) -> AppServices:
    app = build_app_services(build_services())
    _engine, probe = await app.engines.add_local(test_engines.cpu_dir, "cpu")
    assert probe.usable, probe.message
    await app.prepare()
    app.settings.update(embedding_model=str(model))
    return app


@pytest.mark.engine
def test_passages_get_vectors_on_the_pool_and_the_search_is_hybrid(test_engines: TestEngines, embedding_model: Path,
                                                                   tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "capes.pdf", pages=4)

    async def main() -> None:
        app = await _app(test_engines, embedding_model)
        try:
            seen: list[Progress] = []
            attached = await app.documents.attach(1, pdf, seen.append)
            assert attached.vectors_missing == 0
            store = app.documents.store
            chunks = attached.document.chunks
            assert store.db.execute("SELECT COUNT(*) FROM docs_vectors").fetchone()[0] == chunks
            assert any(p.total == chunks and p.done == chunks for p in seen)  # progress counted the passages
            [engine] = [e for e in app.pool.engines() if e.model == embedding_model]
            assert engine.kind.name == "embedding" and engine.started_by == "documents"
            found, search, note = await app.documents.search(1, "storms of cape 3")
            assert search == HYBRID and note == "" and found
            again = await app.documents.attach(2, pdf)  # the same content: no passage embedded again
            assert again.reused and again.vectors_missing == 0
            assert store.db.execute("SELECT COUNT(*) FROM docs_vectors").fetchone()[0] == chunks
        finally:
            await app.aclose()

    asyncio.run(main())


@pytest.mark.engine
def test_an_embedding_engine_that_dies_mid_index_leaves_full_text_and_resumes(
        test_engines: TestEngines, embedding_model: Path, tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "capes.pdf", pages=30)

    async def main() -> None:
        app = await _app(test_engines, embedding_model)
        try:
            killed: list[int] = []

            def kill_after_first_batch(progress: Progress) -> None:
                if progress.done > 0 and not killed:  # one batch is stored: kill the engine now
                    [engine] = [e for e in app.pool.engines() if e.model == embedding_model]
                    pid = engine.server.pid
                    assert pid is not None
                    psutil.Process(pid).kill()
                    killed.append(pid)

            attached = await app.documents.attach(1, pdf, kill_after_first_batch)
            chunks = attached.document.chunks
            assert killed and 0 < attached.vectors_missing < chunks
            store = app.documents.store
            with_vectors = store.db.execute("SELECT COUNT(*) FROM docs_vectors").fetchone()[0]
            assert with_vectors == chunks - attached.vectors_missing  # the batches before the crash were kept
            # Full text works meanwhile (the index was stored before any vector) ...
            [best, *_] = store.chunks_by_id(store.full_text('"cape" AND "17"', [attached.document.id], 1)).values()
            assert best.page == 17
            # ... and the next question resumes the vectors on a new engine, then searches both ways.
            found, search, _note = await app.documents.search(1, "storms of cape 17")
            assert search == HYBRID and found
            assert store.db.execute("SELECT COUNT(*) FROM docs_vectors").fetchone()[0] == chunks
        finally:
            await app.aclose()

    asyncio.run(main())
