"""The local library: hub cache + user folders + opened files, broken files, delete."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from strata_gui.core.models.library import SOURCE_FOLDER, SOURCE_HUB, SOURCE_OPENED, ModelLibrary


def _folder(tmp_path: Path, test_model: Path, split_model: list[Path], broken: dict[str, Path]) -> Path:
    folder = tmp_path / "my-models"
    (folder / "nested").mkdir(parents=True)
    shutil.copy(test_model, folder / "nested" / "llama-F16.gguf")
    for shard in split_model:
        shutil.copy(shard, folder / shard.name)
    for path in broken.values():
        shutil.copy(path, folder / path.name)
    (folder / "notes.txt").write_text("not a model")
    return folder


def test_scan_lists_good_split_and_broken_models(tmp_path: Path, test_model: Path, split_model: list[Path],
                                                 broken_models: dict[str, Path]) -> None:
    folder = _folder(tmp_path, test_model, split_model, broken_models)
    lib = ModelLibrary(tmp_path / "no-cache-yet", [folder])
    entries = {e.path.name: e for e in lib.scan()}
    assert set(entries) == {"llama-F16.gguf", split_model[0].name, "bad-magic.gguf", "truncated.gguf"}
    good = entries["llama-F16.gguf"]
    assert (good.architecture, good.quant, good.context_length, good.has_chat_template) == ("llama", "F16", 4096, True)
    assert good.params == 4_170_048 and good.params_text == "4.2M" and good.source == SOURCE_FOLDER
    split = entries[split_model[0].name]
    assert not split.broken and len(split.files) == 3 and split.params == good.params
    assert split.size == sum(p.stat().st_size for p in split_model)
    assert "bad-magic.gguf is not a GGUF file" in entries["bad-magic.gguf"].error
    assert "incomplete" in entries["truncated.gguf"].error

    (folder / split_model[2].name).unlink()
    split = next(e for e in lib.scan() if e.path.name == split_model[0].name)
    assert "missing 1 of 3 parts" in split.error


def test_opened_file_and_delete(tmp_path: Path, test_model: Path, split_model: list[Path],
                                broken_models: dict[str, Path]) -> None:
    folder = _folder(tmp_path, test_model, split_model, broken_models)
    single = tmp_path / "elsewhere" / "one.gguf"
    single.parent.mkdir()
    shutil.copy(test_model, single)
    lib = ModelLibrary(tmp_path / "cache", [folder])
    entry = lib.open_file(single)
    assert entry.source == SOURCE_OPENED and not entry.broken
    assert any(e.path == single for e in lib.scan())
    assert lib.delete(entry) == test_model.stat().st_size and not single.exists()
    split = next(e for e in lib.scan() if e.path.name == split_model[0].name)
    assert lib.delete(split) == sum(p.stat().st_size for p in split_model)
    assert not list(folder.glob("*-of-00003.gguf"))


def test_hub_cache_models_are_listed_and_deleted(hub: Any, make_service: Any, test_model: Path, tmp_path: Path) -> None:
    size = test_model.stat().st_size

    async def go() -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail("strata/test-llama-GGUF")
            for label in ("Q4_K_M", "Q8_0"):
                quant = next(q for q in detail.quants if q.label == label)
                await svc.download(svc.enqueue(detail, quant), lambda p: None)
            entries = await svc.scan_library()
            assert {e.path.name for e in entries} == {"strata-test-llama-Q4_K_M.gguf", "strata-test-llama-Q8_0.gguf"}
            assert all(e.source == SOURCE_HUB and e.repo_id == "strata/test-llama-GGUF" for e in entries)
            # Both names point at the same blob (same content): deleting one frees nothing yet.
            assert await svc.delete(entries[0]) == 0
            (rest,) = await svc.scan_library()
            assert await svc.delete(rest) == size
            assert await svc.scan_library() == []

    asyncio.run(go())
    assert not (tmp_path / "hf-home" / "hub" / "models--strata--test-llama-GGUF").exists()


def test_rerankers_are_told_apart_by_rank_pooling_or_a_classifier_head(tmp_path: Path, test_model: Path) -> None:
    """A reranker runs as its own kind (llama-server --reranking), never as a chat or embedding model."""
    from strata_gui.core.runtime.kinds import EMBEDDING, RERANKER, TEXT
    from tests.support import gguf_model

    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(test_model, folder / "chat.gguf")
    gguf_model.write_model(folder / "ranked.gguf", gguf_model.ModelSpec(**gguf_model.RERANKER_SPEC_ARGS))
    head_only = {**gguf_model.RERANKER_SPEC_ARGS, "pooling": None}  # a classifier head, no pooling key
    gguf_model.write_model(folder / "head.gguf", gguf_model.ModelSpec(**head_only))
    gguf_model.write_model(folder / "mean.gguf", gguf_model.ModelSpec(pooling=1))
    kinds = {e.path.name: e.kind for e in ModelLibrary(tmp_path / "cache", [folder]).scan()}
    assert kinds == {"chat.gguf": TEXT, "ranked.gguf": RERANKER, "head.gguf": RERANKER, "mean.gguf": EMBEDDING}
