"""Exit classification on captured engine logs (tests/data/runtime)."""

from __future__ import annotations

from pathlib import Path

from strata_gui.core.runtime.outcome import (
    Outcome,
    OutcomeKind,
    Phase,
    classify_exit,
    describe_exit_code,
    describe_outcome,
    load_detail,
)

DATA = Path(__file__).parents[1] / "data" / "runtime"


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def test_rocm_out_of_memory_during_load() -> None:
    out = classify_exit(1, lines("rocm-oom.txt"), phase=Phase.LOADING, subject="ROCm engine")
    assert out.kind is OutcomeKind.OUT_OF_MEMORY
    assert describe_outcome(out) == "ROCm engine ran out of memory while loading the model."
    assert out.engine_fault


def test_windows_access_violation_reads_as_crash() -> None:
    out = classify_exit(-1073741819, lines("rocm-oom.txt")[:3], phase=Phase.LOADING, subject="ROCm engine")
    assert out.kind is OutcomeKind.CRASHED
    assert describe_outcome(out) == "ROCm engine crashed while loading (exit code -1073741819, access violation)."


def test_windows_missing_dll() -> None:
    out = classify_exit(-1073741515, [], phase=Phase.LOADING, subject="ROCm engine")
    assert out.kind is OutcomeKind.MISSING_LIBRARY


def test_signals_and_codes() -> None:
    assert describe_exit_code(-11) == "exit code -11, killed by SIGSEGV"
    assert describe_exit_code(3) == "exit code 3"


def test_load_details() -> None:
    assert load_detail("load_tensors: offloaded 33/33 layers to GPU") == "Offloaded 33/33 layers to the GPU"
    assert load_detail("0.00.001 I srv  load_model: loading model '/m.gguf'") == "Loading model…"
    assert load_detail("random line") is None


def test_the_sentence_follows_the_phase() -> None:
    crash = classify_exit(-9, ["srv  update_slots: ..."], phase=Phase.RUNNING, subject="CPU engine")
    assert crash.kind is OutcomeKind.CRASHED and crash.exit_code == -9 and not crash.during_load
    assert describe_outcome(crash) == "CPU engine crashed while running (exit code -9, killed by SIGKILL)."
    assert describe_outcome(crash, activity="answering") == (
        "CPU engine crashed while answering (exit code -9, killed by SIGKILL).")
    # Before ready, the activity is loading whatever the caller was doing.
    early = classify_exit(-9, [], phase=Phase.LOADING, subject="CPU engine")
    assert describe_outcome(early, activity="answering").startswith("CPU engine crashed while loading")
    assert str(early) == describe_outcome(early)


def test_endings_before_launch_name_the_file() -> None:
    missing = Outcome(OutcomeKind.NOT_FOUND, Phase.STARTING, subject="ROCm engine", path="/e/llama-server")
    assert describe_outcome(missing) == "ROCm engine is not installed (/e/llama-server is missing)."
    refused = Outcome(OutcomeKind.NOT_FOUND, Phase.STARTING, subject="ROCm engine", reason="Exec format error")
    assert describe_outcome(refused) == "ROCm engine could not be started: Exec format error."
    model = Outcome(OutcomeKind.BAD_MODEL, Phase.STARTING, subject="ROCm engine", path="/m.gguf")
    assert describe_outcome(model) == "The model file /m.gguf does not exist."
    slow = Outcome(OutcomeKind.TIMEOUT, Phase.LOADING, 0, subject="ROCm engine", waited=300)
    assert describe_outcome(slow) == "ROCm engine did not become ready within 300 s."
