"""The driver check on the captured Windows 7900 XTX machine (tests/data/gpu/windows/rx7900xtx),
edited to a driver of the Adrenalin 26.5 series that the catalog lists as breaking ROCm builds
(llama.cpp #23508, lmstudio-bug-tracker #1906). Done when (issue 13): ROCm moves out of the plan
with the reason shown, in the GUI and the CLI alike, and the user can override.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import startup
from strata_gui.core.base.errors import EngineCatalogError
from strata_gui.core.engines import check_driver, load_catalog, parse_catalog
from strata_gui.core.gpu.windows import parse_driver_date
from tests.gpu.conftest import windows_snapshot_data
from tests.parity.test_device_choice import stand_in_rocm_build
from tests.parity.test_gui_cli_parity import cli, gui
from tests.support.engines import TestEngines

BAD_VERSION, BAD_DATE = "32.0.31021.1003", "20260514000000.000000-000"  # a May 2026 (26.5.x) driver


def adrenalin_26_5(data: dict[str, Any]) -> None:
    for adapter in data["wmi"]:
        adapter["DriverVersion"], adapter["DriverDate"] = BAD_VERSION, BAD_DATE


def snapshot(tmp_path: Path, edit: Any = None) -> Path:
    import json

    data = windows_snapshot_data("rx7900xtx")
    if edit is not None:
        edit(data)
    path = tmp_path / "rx7900xtx-snapshot.json"
    path.write_text(json.dumps(data))
    return path


def test_driver_dates_in_every_windows_spelling() -> None:
    assert parse_driver_date("20250619000000.000000-000") == "2025-06-19"  # WMI
    assert parse_driver_date("6-19-2025") == "2025-06-19"  # registry
    assert parse_driver_date("/Date(1750291200000)/") == "2025-06-19"  # ConvertTo-Json of a DateTime
    assert parse_driver_date("") is None and parse_driver_date(None) is None


def test_the_catalog_validator_names_a_bad_driver_entry() -> None:
    import json

    from strata_gui.core.config.resources import kernels_dir

    raw = json.loads((kernels_dir() / "catalog.json").read_text())
    raw["drivers"]["known_bad"][0]["families"] = ["gfx999X"]
    with pytest.raises(EngineCatalogError, match=r"drivers.known_bad\[0\].families"):
        parse_catalog(raw)
    raw["drivers"]["known_bad"][0].update(families=[], dates={})
    with pytest.raises(EngineCatalogError, match="needs a versions or dates range"):
        parse_catalog(raw)
    raw["drivers"]["known_bad"][0].update(versions={"from": "32.0.31000.0", "to": "32.0.31999.9999"},
                                          links=["http://example.com"])
    with pytest.raises(EngineCatalogError, match="https://"):
        parse_catalog(raw)
    raw["drivers"]["known_bad"][0]["links"] = ["https://example.com/report"]
    catalog = parse_catalog(raw)  # a version range alone is a valid rule
    assert catalog.driver_problem("windows", "gfx110X", BAD_VERSION, None) is not None
    assert catalog.driver_problem("windows", "gfx110X", "32.0.21013.1000", None) is None
    assert catalog.driver_problem("linux", "gfx110X", BAD_VERSION, None) is None


def test_the_shipped_catalog_judges_the_captured_drivers(tmp_path: Path) -> None:
    from strata_gui.core.config.resources import kernels_dir
    from strata_gui.core.gpu import build_gpu_service

    catalog = load_catalog()

    def verdict(edit: Any) -> Any:
        report = build_gpu_service(kernels_dir(), snapshot_file=snapshot(tmp_path, edit),
                                   family_of=catalog.family_of).detect()
        return check_driver(report, catalog)

    captured = verdict(None)  # Adrenalin of June 2025 as captured
    assert captured.ok and "32.0.21013.1000 (2025-06-19)" in captured.message
    bad = verdict(adrenalin_26_5)
    assert bad.blocks_rocm and "Adrenalin Edition 26.5.1 and later" in bad.message
    assert "https://github.com/ggml-org/llama.cpp/issues/23508" in bad.links

    def too_old(data: dict[str, Any]) -> None:
        for adapter in data["wmi"]:
            adapter["DriverVersion"], adapter["DriverDate"] = "31.0.24033.1003", "20241210000000.000000-000"

    old = verdict(too_old)
    assert old.blocks_rocm and "older than AMD Software: Adrenalin Edition 25.1.1" in old.message


@pytest.mark.engine
def test_a_known_bad_driver_moves_rocm_out_in_gui_and_cli(
        test_engines: TestEngines, test_model: Path, tmp_path: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_SYSFS_ROOT", raising=False)
    monkeypatch.setenv("STRATA_GPU_SNAPSHOT", str(snapshot(tmp_path, adrenalin_26_5)))
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # llvmpipe is this machine's Vulkan device
    rocm = stand_in_rocm_build(tmp_path / "rocm-gfx110X", test_engines, tmp_path / "launches.txt")
    _rc, rocm_engine = cli(capsys, "engines", "add-local", str(rocm), "--backend", "rocm")
    _rc, vulkan_engine = cli(capsys, "engines", "add-local", str(test_engines.vulkan_dir))

    # CLI: the GPU report says why; the resolver leaves ROCm out with the reason; Vulkan runs.
    rc, gpu = cli(capsys, "gpu")
    assert rc == 0 and gpu["driver_check"]["blocks_rocm"]
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert rc == 0 and plan["chosen"] == vulkan_engine["id"]
    out = next(e for e in plan["engines"] if e["engine"] == rocm_engine["id"])
    assert not out["included"] and out["reason"].startswith("driver check: AMD driver 32.0.31021.1003 (2026-05-14)")
    assert "→ Vulkan instead" in out["reason"]
    # The install plan skips ROCm for the same reason (Windows releases, as published).
    data = Path(__file__).resolve().parents[1] / "data" / "engines"
    rc, install = cli(capsys, "engines", "plan", "--os", "windows",
                      "--releases-json", str(data / "releases-lemonade-sdk-llamacpp-rocm.json"),
                      "--releases-json", str(data / "releases-ggml-org-llama.cpp.json"))
    rocm_candidates = [c for c in install["candidates"] if c["backend"] == "rocm"]
    assert rocm_candidates and not any(c["included"] for c in rocm_candidates)
    assert all(c["reason"].startswith("driver check:") for c in rocm_candidates if c.get("asset"))
    assert install["candidates"][0]["backend"] == "vulkan" and install["candidates"][0]["included"]
    # The user's override, for one run.
    rc, forced = cli(capsys, "engines", "resolve", "--model", str(test_model), "--ignore-driver-check")
    assert forced["chosen"] == rocm_engine["id"] and forced["driver"]["overridden"]

    asyncio.set_event_loop(qasync_loop)  # the CLI's asyncio.run left no current loop for the bridge
    for ui in gui(qtbot, qapp, qasync_loop):
        ui.services.chat.set_model(test_model)
        qasync_loop.run_until_complete(startup(ui))
        page = ui.pages.gpu
        page.on_shown()
        if page.detection_handle is not None:
            qasync_loop.run_until_complete(page.detection_handle.wait())
        assert page.driver_box.isVisibleTo(page)
        assert "Adrenalin Edition 26.5.1 and later" in page.driver_text.text()
        assert "uses the Vulkan engine instead of ROCm" in page.driver_text.text()
        assert "llama.cpp/issues/23508" in page.driver_links.text()
        assert ui.services.resolver.resolve(test_model).to_json()["chosen"] == plan["chosen"]
        # "Use ROCm anyway": saved, and ROCm is back first.
        page.driver_override.setChecked(True)
        assert ui.services.settings.current.ignore_driver_check
        assert "You chose to use ROCm anyway" in page.driver_text.text()
        assert ui.services.resolver.resolve(test_model).to_json()["chosen"] == rocm_engine["id"]
        assert ui.services.chat.plan[0].id == rocm_engine["id"]
    # The CLI reads the saved override too.
    rc, saved = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert saved["chosen"] == rocm_engine["id"]
