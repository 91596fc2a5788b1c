"""Exit classification on captured engine logs (tests/data/runtime)."""

from __future__ import annotations

from pathlib import Path

from strata_gui.core.runtime.outcome import OutcomeKind, classify_exit, describe_exit_code, load_detail

DATA = Path(__file__).parents[1] / "data" / "runtime"


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def test_rocm_out_of_memory_during_load() -> None:
    out = classify_exit(1, lines("rocm-oom.txt"), during_load=True, engine_label="ROCm")
    assert out.kind is OutcomeKind.OUT_OF_MEMORY
    assert out.message == "ROCm engine ran out of memory while loading the model."
    assert out.engine_fault


def test_windows_access_violation_reads_as_crash() -> None:
    out = classify_exit(-1073741819, lines("rocm-oom.txt")[:3], during_load=True, engine_label="ROCm")
    assert out.kind is OutcomeKind.CRASHED
    assert out.message == "ROCm engine crashed while loading (exit code -1073741819, access violation)."


def test_windows_missing_dll() -> None:
    out = classify_exit(-1073741515, [], during_load=True, engine_label="ROCm")
    assert out.kind is OutcomeKind.MISSING_LIBRARY


def test_signals_and_codes() -> None:
    assert describe_exit_code(-11) == "exit code -11, killed by SIGSEGV"
    assert describe_exit_code(3) == "exit code 3"


def test_load_details() -> None:
    assert load_detail("load_tensors: offloaded 33/33 layers to GPU") == "Offloaded 33/33 layers to the GPU"
    assert load_detail("0.00.001 I srv  load_model: loading model '/m.gguf'") == "Loading model…"
    assert load_detail("random line") is None
