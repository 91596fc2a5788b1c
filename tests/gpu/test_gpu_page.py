"""The GPU page on real widgets (offscreen): one card per captured machine, live values, report."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.service import GpuService, build_gpu_service, parse_snapshot_text
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.gpu_page import GpuPage
from strata_gui.ui.theme import apply_theme
from tests.gpu.conftest import LINUX_CASES, WINDOWS_AMD_CASES, family_of, linux_tree

SHOTS = Path("/tmp/strata-shots")


@pytest.fixture
def make_page(qtbot: QtBot, qapp: QApplication,
              qasync_loop: asyncio.AbstractEventLoop) -> Iterator[object]:
    pages: list[GpuPage] = []

    def make(service: GpuService) -> GpuPage:
        apply_theme(qapp, "light")
        service.interval = 0.1  # the captured machines answer at once: two samples need not take 2 s
        bridge = AsyncBridge()
        page = GpuPage(service, bridge)
        qtbot.addWidget(page)
        page.resize(900, 1000)
        page.show()
        page.on_shown()
        assert page.detection_handle is not None
        qasync_loop.run_until_complete(page.detection_handle.wait())
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.close()  # hiding stops the sampler thread


def _shot(page: GpuPage, qtbot: QtBot, name: str) -> Path:
    if page.cards:
        qtbot.waitUntil(lambda: page.telemetry.samples_taken >= 2, timeout=5000)
        page.refresh_telemetry()
    qtbot.wait(50)  # let the layout settle before grabbing
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"gpu-{name}.png"
    assert page.grab().save(str(path))
    return path


@pytest.mark.parametrize("case", LINUX_CASES)
def test_page_renders_each_captured_linux_machine(case: str, make_page, qtbot: QtBot) -> None:
    page = make_page(build_gpu_service(kernels_dir(), sysfs_root=linux_tree(case), family_of=family_of))
    report = page.report
    assert report is not None
    assert [c.gpu.key for c in page.cards] == [g.key for g in report.gpus]
    if report.host.cpu_name != "unknown CPU":
        assert page.cpu_label.text().startswith(report.host.cpu_name)
    # A capture without /proc still names a CPU and its RAM: this machine's, as About does.
    assert "unknown" not in page.cpu_label.text() and page.ram_label.text() not in ("n/a", "—")
    if report.amd_gpus:
        assert page.banner.isHidden()
    else:
        assert page.banner.isVisible()
        assert "No AMD GPU found" in page.banner_text.text()
        assert "CPU engine" in page.banner_text.text()
    _shot(page, qtbot, case)


@pytest.mark.parametrize("case", WINDOWS_AMD_CASES)
def test_page_renders_each_captured_windows_machine(case: str, make_page, qtbot: QtBot,
                                                    windows_snapshot_file) -> None:
    service = build_gpu_service(kernels_dir(), snapshot_file=windows_snapshot_file(case), family_of=family_of)
    page = make_page(service)
    assert page.cards and page.cards[0].gpu.gfx_target in ("gfx1100", "gfx1151")
    assert "with HIP runtime amdhip64_6.dll" in page.notes.text()
    _shot(page, qtbot, f"windows-{case}")


def test_apu_card_shows_shared_memory_and_na_for_missing_sensor(make_page, qtbot: QtBot) -> None:
    page = make_page(build_gpu_service(kernels_dir(), sysfs_root=linux_tree("laptop-780m-rx7600"),
                                       family_of=family_of))
    igpu, dgpu = page.cards
    assert igpu.shared_bar is not None and dgpu.shared_bar is None
    assert igpu.model_memory is not None and "15.8 GiB" in igpu.model_memory.text()
    qtbot.waitUntil(lambda: page.telemetry.samples_taken >= 1, timeout=5000)
    page.refresh_telemetry()
    assert igpu.power.value_text == "n/a"  # the 780M exposes no power sensor: never "0 W"
    assert dgpu.power.value_text == "92.0 W"
    assert igpu.shared_bar.caption.text() == "584.0 MiB of 15.3 GiB used"
    assert igpu.verdict.text() == "ROCm via gfx110X build"


def test_live_values_update_from_the_background_sampler(make_page, qtbot: QtBot, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("rx6600"), tree)
    busy = tree / "sys/class/drm/card0/device/gpu_busy_percent"
    service = build_gpu_service(kernels_dir(), sysfs_root=tree, family_of=family_of)
    service.interval = 0.1
    page = make_page(service)
    card = page.cards[0]
    qtbot.waitUntil(lambda: card.load.value_text == "3 %", timeout=5000)
    busy.write_text("77\n")
    qtbot.waitUntil(lambda: card.load.value_text == "77 %", timeout=5000)
    busy.unlink()  # the sensor disappears (device reset, driver reload): shown as n/a
    qtbot.waitUntil(lambda: card.load.value_text == "n/a", timeout=5000)
    page.hide()
    assert not page.telemetry.running


def test_copy_system_report_is_replayable(make_page, qapp: QApplication, tmp_path: Path) -> None:
    page = make_page(build_gpu_service(kernels_dir(), sysfs_root=linux_tree("strix-halo"), family_of=family_of))
    page.copy_report()
    text = QApplication.clipboard().text()
    assert "Radeon 8060S" in text and "gfx1151" in text
    snapshot = parse_snapshot_text(text, "clipboard")
    report_file = tmp_path / "report.txt"
    report_file.write_text(text)
    replay = build_gpu_service(kernels_dir(), snapshot_file=report_file, family_of=family_of).detect()
    assert snapshot["platform"] == "linux"
    assert [g.to_dict() | {"sources": None} for g in replay.gpus] == \
        [g.to_dict() | {"sources": None} for g in page.report.gpus]


def test_no_gpu_machine_says_so_and_shows_cpu_and_ram(make_page) -> None:
    page = make_page(build_gpu_service(kernels_dir(), sysfs_root=linux_tree("no-gpu"), family_of=family_of))
    assert not page.cards
    assert "No AMD GPU found" in page.banner_text.text()
    assert "Chat still works on the CPU engine" in page.banner_text.text()
    assert "Xeon" in page.cpu_label.text()
    assert page.ram_label.text() == "7.7 GiB"
    assert not page.cards


def test_sleeping_laptop_dgpu_is_shown_asleep(make_page, qtbot: QtBot, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("laptop-780m-rx7600"), tree)
    (tree / "sys/class/drm/card1/device/power/runtime_status").write_text("suspended\n")
    page = make_page(build_gpu_service(kernels_dir(), sysfs_root=tree, family_of=family_of))
    qtbot.waitUntil(lambda: page.telemetry.samples_taken >= 1, timeout=5000)
    page.refresh_telemetry()
    assert page.cards[1].clock.text().startswith("Asleep to save power")
    assert page.cards[1].temperature.value_text == "n/a"
    assert page.cards[0].clock.text() == "Core clock: 2000 MHz"


def test_a_capture_without_cpu_facts_shows_the_machine_about_describes(make_page, tmp_path: Path) -> None:
    import json

    from strata_gui.core.config.paths import AppPaths
    from strata_gui.core.diagnostics.system import collect_system_info
    from strata_gui.core.gpu.linux import capture_linux_tree
    from strata_gui.core.gpu.service import _stamp
    from strata_gui.core.gpu.tree import DirTree

    files = {k: v for k, v in capture_linux_tree(DirTree(linux_tree("rx7900xtx"))).items()
             if not k.startswith("proc/")}  # a capture of sysfs alone: no cpuinfo, no meminfo
    snap = tmp_path / "sysfs-only.json"
    snap.write_text(json.dumps({**_stamp("linux"), "files": files}))
    page = make_page(build_gpu_service(kernels_dir(), snapshot_file=snap, family_of=family_of))
    assert page.report is not None and page.report.host.cpu_name == "unknown CPU"
    about = collect_system_info(AppPaths.from_environment())
    assert page.cpu_label.text().startswith(about.cpu)  # was "unknown CPU" beside About's real name
    assert page.ram_label.text() not in ("n/a", "—", "")
