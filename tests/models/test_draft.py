"""Speculative decoding: the draft's vocabulary is checked first, the real CPU llama-server drafts
with it, and the acceptance rate reaches the statistics line (CLI and the composed chat)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import main
from strata_gui.core.base.errors import ModelError
from strata_gui.core.models.draft import check_draft
from tests.support import gguf_model
from tests.support.engines import TestEngines


@pytest.fixture(scope="module")
def drafts(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> dict[str, Path]:
    """Drafts sharing the test model's vocabulary: a 1-layer one with other weights (it drafts but
    is rarely right) and a twin with the model's own weights (its drafts are accepted)."""
    folder = tmp_path_factory.mktemp("drafts")
    return {
        "small": gguf_model.write_model(folder / "draft-1layer.gguf",
                                        gguf_model.ModelSpec(layers=1, seed=99, name="Strata Test Draft")),
        "twin": gguf_model.write_model(folder / "draft-twin.gguf"),
    }


@pytest.mark.engine
def test_vocabulary_is_checked_before_anything_loads(test_model: Path, drafts: dict[str, Path],
                                                     test_engines: TestEngines) -> None:
    check_draft(test_model, drafts["small"])  # same tokens: fine
    other = test_engines.llama_src / "models" / "ggml-vocab-gpt-2.gguf"  # a real GPT-2 vocabulary
    with pytest.raises(ModelError, match=r"cannot draft for .*vocabulary differs") as info:
        check_draft(test_model, other)
    assert "50,257 tokens" in info.value.message and info.value.hint


def _chat(capsys: pytest.CaptureFixture[str], model: Path, engine: Path, *flags: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    capsys.readouterr()
    code = main(["chat", "-m", str(model), "-e", str(engine), "--ctx-size", "512", "--max-tokens", "48",
                 "--seed", "3", "--temperature", "0", *flags, "--json", "Count from one to twenty"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.mark.engine
def test_cli_chat_drafts_on_the_real_engine_and_shows_the_acceptance(
        test_model: Path, drafts: dict[str, Path], test_engines: TestEngines,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data, err = _chat(capsys, test_model, test_engines.cpu_dir, "--model-draft", str(drafts["twin"]),
                            "--draft-max", "4")
    assert code == 0, err
    stats = data["stats"]
    assert stats["draft_n"] > 0 and stats["draft_accepted"] > 0  # the twin's drafts are the model's own
    # The one-layer draft drafts too, and is mostly wrong: the rate says so.
    code, data, err = _chat(capsys, test_model, test_engines.cpu_dir, "--model-draft", str(drafts["small"]))
    assert code == 0, err
    assert data["stats"]["draft_n"] > 0
    # Streaming mode prints the statistics line with the acceptance rate.
    capsys.readouterr()
    assert main(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "512",
                 "--max-tokens", "24", "--model-draft", str(drafts["twin"]), "Hello"]) == 0
    assert "draft accepted" in capsys.readouterr().err
    # A draft of another vocabulary is refused before any engine starts.
    other = test_engines.llama_src / "models" / "ggml-vocab-gpt-2.gguf"
    assert main(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--model-draft", str(other),
                 "Hi"]) == 1
    assert "vocabulary differs" in capsys.readouterr().err
