"""When an RPC worker drops, the user is told whether the model still fits what is left."""

from __future__ import annotations

from pathlib import Path

from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.load_options import model_bytes
from strata_gui.core.rpc.service import fit_after_drop


def test_split_model_size_counts_every_shard(split_model: list[Path]) -> None:
    assert model_bytes(split_model[0]) == sum(p.stat().st_size for p in split_model)


def test_no_longer_fits_is_said_with_sizes(test_model: Path) -> None:
    size = test_model.stat().st_size
    small = MemoryTarget(name="RX 7600", vram_bytes=size // 2)
    big = MemoryTarget(name="RX 7900 XTX", vram_bytes=size * 4)
    text = fit_after_drop(test_model, small)
    assert "no longer fits" in text and "processor" in text
    assert fit_after_drop(test_model, big) == ""
