"""The shipped starter list loads, spans small to large models, and is judged per GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.core.base.errors import ModelError
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.models.fit import GIB, MemoryTarget, Verdict
from strata_gui.core.models.starters import (
    STARTERS_FILE,
    judge_starters,
    load_starters,
    parse_starters,
    recommend,
)


def test_shipped_list_is_valid_and_spans_half_a_gigabyte_to_nine() -> None:
    starters = load_starters(kernels_dir() / STARTERS_FILE)
    assert 3 <= len(starters) <= 6
    sizes = [s.size for s in starters]
    assert sizes == sorted(sizes)
    assert sizes[0] < 0.6e9 and 8e9 < sizes[-1] < 9.5e9
    for s in starters:
        assert s.file.endswith(".gguf") and s.quant.lower() in s.file.lower()
        assert s.repo.count("/") == 1 and s.description.endswith(".")


def test_fit_verdicts_follow_the_gpu() -> None:
    starters = load_starters(kernels_dir() / STARTERS_FILE)
    ram = 32 * GIB
    big = judge_starters(starters, MemoryTarget("Radeon RX 7900 XTX", 24 * GIB), ram, 4096)
    assert all(f.estimate.verdict is Verdict.FULL_GPU for f in big)
    assert recommend(big) == big[-1]  # the largest that fits fully
    small = judge_starters(starters, MemoryTarget("Radeon RX 6600", 8 * GIB), ram, 4096)
    verdicts = [f.estimate.verdict for f in small]
    assert verdicts[0] is Verdict.FULL_GPU and verdicts[-1] is Verdict.PARTIAL
    best = recommend(small)
    assert best is not None and best.estimate.verdict is Verdict.FULL_GPU and best.model.size < 8 * GIB
    none = judge_starters(starters, MemoryTarget("no GPU", 0), 16 * GIB, 4096)
    assert {f.estimate.verdict for f in none} <= {Verdict.CPU_ONLY, Verdict.WONT_FIT}
    first = recommend(none)
    assert first is not None and first.model == starters[0]  # on the processor: the smallest


def _entry(**over: object) -> dict[str, object]:
    e: dict[str, object] = {
        "id": "a", "name": "A", "repo": "o/r", "file": "a-Q4_K_M.gguf", "quant": "Q4_K_M", "size": 10,
        "description": "d.",
        "shape": {"n_layers": 2, "kv_heads": 1, "head_dim": 8, "trained_context": 512, "n_vocab": 10,
                  "embedding_length": 8},
    }
    e.update(over)
    return e


@pytest.mark.parametrize(("data", "says"), [
    ({"version": 2, "models": [_entry()]}, "not a version 1"),
    ({"version": 1, "models": []}, "lists no models"),
    ({"version": 1, "models": [_entry(size="big")]}, "'size' is missing or not a int"),
    ({"version": 1, "models": [_entry(size=0)]}, "'size' must be positive"),
    ({"version": 1, "models": [_entry(file="a.bin")]}, "not a GGUF file"),
    ({"version": 1, "models": [_entry(repo="norepo")]}, "not owner/name"),
    ({"version": 1, "models": [_entry(), _entry()]}, "appears twice"),
    ({"version": 1, "models": [_entry(shape={"n_layers": 2})]}, "'kv_heads' is missing"),
])
def test_damaged_lists_are_refused_with_the_reason(data: dict[str, object], says: str) -> None:
    with pytest.raises(ModelError, match=says):
        parse_starters(data)


def test_unreadable_file_is_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / STARTERS_FILE
    bad.write_text("{")
    with pytest.raises(ModelError, match="not valid JSON"):
        load_starters(bad)
    with pytest.raises(ModelError, match="Could not read"):
        load_starters(tmp_path / "missing.json")
    bad.write_text(json.dumps({"version": 1, "models": [_entry()]}))
    assert load_starters(bad)[0].shape.kv_heads_per_layer == (1, 1)
