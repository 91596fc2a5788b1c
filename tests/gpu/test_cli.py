"""`strata gpu` through the CLI's own entry point (the composed core, as users run it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import GpuDetectionError
from tests.gpu.conftest import LINUX_CASES, linux_tree

STARTUP = "  Device 0: AMD Radeon Graphics, gfx1200 (0x1200), VMM: no, Wave Size: 32, VRAM: 16304 MiB\n"


def run(*argv: str) -> int:
    return run_command(["gpu", *argv])


def test_json_on_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["platform"] == "linux" and data["origin"] == "live sysfs"
    assert data["host"]["ram_total"] > 0
    if not [g for g in data["gpus"] if g["vendor"] == "AMD"]:  # this machine has no GPU
        assert data["summary"][0] == "No AMD GPU found."


@pytest.mark.parametrize("case", LINUX_CASES)
def test_json_on_each_captured_tree(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--json", "--sysfs-root", str(linux_tree(case))) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["origin"] == f"captured tree {linux_tree(case)}"
    assert set(data["telemetry"]) == {g["key"] for g in data["gpus"]}
    for gpu in data["gpus"]:
        assert gpu["vendor_id"] in ("0x1002", "0x10de", "0x8086")
        assert gpu["verdict_text"]


def test_text_report_for_strix_halo(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--sysfs-root", str(linux_tree("strix-halo"))) == 0
    out = capsys.readouterr().out
    assert "AMD Radeon 8060S [card1]" in out
    assert "integrated (APU)" in out
    assert "VRAM: 512.0 MiB, shared (GTT): 96.0 GiB" in out
    assert "memory usable by models: 96.5 GiB" in out
    assert "ROCm: ROCm via gfx1151 build" in out  # the ROCm family from the engine catalog, as in the GUI


def test_watch_prints_samples_with_na(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--watch", "--count", "3", "--interval", "0", "--sysfs-root",
               str(linux_tree("laptop-780m-rx7600"))) == 0
    lines = capsys.readouterr().out.splitlines()
    watch = [ln for ln in lines if "card0: load" in ln]
    assert len(watch) == 2
    assert "card0: load 14 %" in watch[0] and "n/a" in watch[0]  # the 780M has no power sensor


def test_watch_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--json", "--watch", "--count", "2", "--interval", "0", "--sysfs-root",
               str(linux_tree("rx6600"))) == 0
    out = capsys.readouterr().out
    last = json.loads(out.strip().splitlines()[-1])
    assert last["card0"]["temperature_c"] == 38.0


def test_capture_then_replay_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "machine.json"
    assert run("--json", "--sysfs-root", str(linux_tree("rx7900xtx")), "--capture", str(snap)) == 0
    first = json.loads(capsys.readouterr().out)
    assert run("--json", "--snapshot", str(snap)) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["gpus"] == first["gpus"]
    assert replay["telemetry"]["card0"]["power_w"] == 88.0


def test_windows_snapshot_option(windows_snapshot_file, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--json", "--windows-snapshot", str(windows_snapshot_file("strix-halo"))) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["platform"] == "windows"
    assert data["gpus"][0]["gfx_target"] == "gfx1151"
    assert data["driver_status"]["state"] == "ok"


def test_engine_log_resolves_unknown_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(STARTUP)
    assert run("--json", "--sysfs-root", str(linux_tree("unknown-amd")), "--engine-log", str(log)) == 0
    gpu = json.loads(capsys.readouterr().out)["gpus"][0]
    assert gpu["gfx_target"] == "gfx1200"


def test_bad_inputs_are_user_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(GpuDetectionError, match="not a Strata GPU snapshot"):
        run("--snapshot", str(bad))
    with pytest.raises(GpuDetectionError, match="Could not read the GPU snapshot"):
        run("--snapshot", str(tmp_path / "missing.json"))
    with pytest.raises(GpuDetectionError, match="is not a folder"):
        run("--sysfs-root", str(tmp_path / "nowhere"))
