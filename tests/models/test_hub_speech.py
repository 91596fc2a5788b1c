"""Speech models in the model browser (core): whisper.cpp repos (``ggml-*.bin``) found by the
speech-recognition search, their files as variants with a fit verdict (file size plus whisper.cpp's
buffers), downloaded into the library, which tells whisper files by their header, not their name."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.library import describe_model
from strata_gui.core.models.speech_models import SPEECH_OVERHEAD_BYTES, parse_whisper_header, whisper_header
from strata_gui.core.runtime.kinds import SPEECH, TEXT
from tests.support.engines import TestEngines

WHISPER_REPO = "strata/whisper-test"


@pytest.fixture
def hub_repos(hub_repos: list[Any], whisper_model: Path, test_engines: TestEngines) -> list[Any]:
    """The text repos of the model tests plus a whisper.cpp repo: two real whisper models (the
    random-weight one and whisper.cpp's vocab-only tiny) and a VAD model that is no variant."""
    from tests.support.hub_server import HubRepo

    speech = HubRepo(WHISPER_REPO, {
        "README.md": b"# whisper.cpp test models\n",
        "ggml-base.en.bin": whisper_model,
        "ggml-tiny.bin": test_engines.whisper_vocab_model("tiny"),
        "ggml-silero-v6.2.0.bin": test_engines.whisper_vocab_model("tiny"),
    }, downloads=5000, tags=["whisper.cpp"], pipeline_tag="automatic-speech-recognition",
        library_name="whisper.cpp")
    return [*hub_repos, speech]


def test_whisper_files_are_told_by_their_header(whisper_model: Path, test_model: Path, tmp_path: Path) -> None:
    header = whisper_header(whisper_model)
    assert header is not None and header.n_vocab == 51864 and not header.multilingual
    entry = describe_model(whisper_model, "folder")
    assert (entry.kind, entry.architecture, entry.error) == (SPEECH, "whisper", "")
    not_whisper = tmp_path / "ggml-model.bin"  # named like one, but a GGUF inside
    not_whisper.write_bytes(test_model.read_bytes()[:4096])
    assert whisper_header(not_whisper) is None
    assert "no whisper.cpp speech model" in describe_model(not_whisper, "folder").error
    assert parse_whisper_header(b"lmgg" + b"\x00" * 44) is None  # the magic alone is not enough


def test_a_whisper_repo_lists_its_models_with_a_fit_and_downloads_into_the_library(
        make_service: Any, hub: Any, whisper_model: Path) -> None:
    served = whisper_model.read_bytes()

    async def go() -> None:
        async with make_service(hub) as svc:
            found = await svc.search("", kind=SPEECH)
            assert [h.repo_id for h in found.items] == [WHISPER_REPO]
            detail = await svc.detail(WHISPER_REPO)
            assert detail.kind is SPEECH and detail.quants == ()
            # smallest first; the VAD model (ggml-silero-*.bin) is no variant
            assert [q.label for q in detail.images] == ["tiny", "base.en"]
            report = svc.speech_report(detail)
            base = next(f for f in report.fits if f.entry.label == "base.en")
            assert base.is_default and base.fit is not None and base.fit.verdict == "gpu"
            assert base.fit.needed_bytes == base.size + SPEECH_OVERHEAD_BYTES
            tiny_card = MemoryTarget("Radeon 128 MB", 128 * 1024 * 1024)
            assert svc.speech_report(detail, tiny_card).fits[0].fit.verdict == "cpu"  # type: ignore[union-attr]
            paths = await svc.download(svc.enqueue_image(detail, base), lambda p: None)
            assert paths[0].name == "ggml-base.en.bin" and paths[0].stat().st_size == len(served)
            assert await svc.usable_models(SPEECH) == [paths[0]]
            assert paths[0] not in await svc.usable_models(TEXT)
            assert svc.speech_fit(next(e for e in await svc.scan_library() if e.kind is SPEECH)).verdict == "gpu"

    asyncio.run(go())
    searches = [p for _m, p, _ in hub.state.requests if p.startswith("/api/models?")]
    assert "pipeline_tag=automatic-speech-recognition" in searches[0] and "filter=gguf" not in searches[0]
