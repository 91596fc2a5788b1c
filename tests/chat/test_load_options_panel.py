"""The chat's Load options panel in the composed app: the fit verdict follows the options as they
change, valid options are saved for the model, and the next message loads the real engine with them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.config.services import build_services
from strata_gui.core.gpu import format_mem
from strata_gui.core.runtime import SamplingParams
from strata_gui.ui.bridge import AsyncBridge
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.remote_server import openai_like_server


async def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
def wide_model(tmp_path: Path, test_engines: TestEngines, monkeypatch: pytest.MonkeyPatch) -> Path:
    """32-value heads, so a quantised V cache can load (llama.cpp stores it in 32-value blocks)."""
    return gguf_model.write_model(tmp_path / "wide-F16.gguf", gguf_model.ModelSpec(width=128, heads=4, kv_heads=2))


def _pick(combo: Any, value: str) -> None:
    combo.setCurrentIndex(combo.findData(value))


@pytest.mark.engine
def test_panel_verdict_follows_the_options_and_the_engine_loads_with_them(
        test_engines: TestEngines, wide_model: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop) -> None:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    errors: list[Any] = []
    bridge.error_occurred.connect(errors.append)
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                 choose_model=lambda: None, save_path=lambda _n: None))
    try:
        page = ui.pages.chat
        qasync_loop.run_until_complete(services.use_engine_folder(test_engines.cpu_dir))
        page.set_model(wide_model)
        panel = page.load_options_panel
        assert panel is not None and not panel.isVisibleTo(page)
        page.load_options_toggle.click()  # shown before loading anything
        assert panel.isVisibleTo(page)
        qasync_loop.run_until_complete(_until(lambda: panel.estimate is not None))
        f16 = panel.estimate
        assert f16 is not None and f"KV cache {format_mem(f16.kv_bytes)}" in panel.verdict.text()

        _pick(panel.cache_type_k, "q8_0")
        _pick(panel.cache_type_v, "q8_0")
        q8 = panel.estimate
        assert q8 is not None and q8.kv_bytes * 64 == f16.kv_bytes * 34  # the verdict line moved with it
        assert f"KV cache {format_mem(q8.kv_bytes)}" in panel.verdict.text()
        assert services.load_options.saved(wide_model)["cache_type_v"] == "q8_0"

        # A quantised V cache without flash attention cannot load: said, and not saved.
        _pick(panel.flash_attention, "off")
        assert "needs flash attention" in panel.verdict.text()
        assert services.load_options.saved(wide_model)["flash_attention"] == "auto"
        _pick(panel.flash_attention, "on")
        panel.ctx_size.setValue(1024)
        panel.threads.setValue(2)

        conv = page.new_conversation()
        # A short, seeded reply: random weights can emit odd bytes, the test is about the launch.
        services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=8, seed=5, temperature=0.0))
        page.open_conversation(conv)
        handle = page.send_text("Hello")
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        msgs = services.chat.store.messages(conv)
        assert msgs[-1].status == COMPLETE and msgs[-1].content
        sup = services.chat.supervisor
        assert sup is not None and sup.pid is not None
        cmd = psutil.Process(sup.pid).cmdline()
        assert cmd[cmd.index("-ctk") + 1] == "q8_0" and cmd[cmd.index("-ctv") + 1] == "q8_0"
        # 1,024 tokens for each of the parallel requests the panel says (automatic: as many as fit).
        slots = int(cmd[cmd.index("-np") + 1])
        assert cmd[cmd.index("-fa") + 1] == "on" and cmd[cmd.index("-c") + 1] == str(1024 * slots)
        assert panel.slots_note.text() == (f"{slots} parallel requests × 1,024 tokens each (automatic)" if slots > 1
                                            else "1 request at a time, 1,024 tokens (automatic)")
        assert cmd[cmd.index("-t") + 1] == "2"

        # "Use defaults" forgets them: the panel shows Settings' values and the cache is f16 again.
        panel.reset_button.click()
        assert services.load_options.saved(wide_model) == {}
        assert panel.cache_type_k.currentData() == "f16"
        assert errors == []
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


@pytest.mark.engine
def test_panel_draft_model_is_checked_and_the_reply_shows_the_acceptance(
        test_engines: TestEngines, test_model: Path, tmp_path: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    twin = gguf_model.write_model(tmp_path / "draft-twin.gguf")  # the model's vocabulary and weights
    other_vocab = test_engines.llama_src / "models" / "ggml-vocab-gpt-2.gguf"
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                 choose_model=lambda: None, save_path=lambda _n: None))
    try:
        page = ui.pages.chat
        qasync_loop.run_until_complete(services.use_engine_folder(test_engines.cpu_dir))
        page.set_model(test_model)
        panel = page.load_options_panel
        assert panel is not None
        page.load_options_toggle.click()
        qasync_loop.run_until_complete(_until(lambda: panel.estimate is not None))

        refused = panel.set_draft_model(other_vocab)
        assert refused is not None
        qasync_loop.run_until_complete(refused.wait())
        assert "vocabulary differs" in panel.draft_label.text()
        assert services.load_options.saved(test_model).get("draft_model", "") == ""

        accepted = panel.set_draft_model(twin)
        assert accepted is not None
        qasync_loop.run_until_complete(accepted.wait())
        assert panel.draft_label.text() == twin.name
        assert services.load_options.saved(test_model)["draft_model"] == str(twin)

        conv = page.new_conversation()
        services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=24, seed=5, temperature=0.0))
        page.open_conversation(conv)
        handle = page.send_text("Count from one to ten")
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        reply = services.chat.store.messages(conv)[-1]
        assert reply.status == COMPLETE and reply.stats.draft_n
        assert "draft accepted" in page.message_widgets[reply.id].stats.text()  # what the user reads
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


def test_panel_gpu_row_is_the_device_choice_the_resolver_uses(qtbot: QtBot, qapp: Any, test_model: Path,
                                                              qasync_loop: asyncio.AbstractEventLoop,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """7900 XTX + Raphael iGPU: the chat's GPU row shows the 7900 XTX chosen and why; picking the iGPU
    there is the GPU page's setting too, and the fit is judged against the iGPU from then on."""
    trees = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(trees / "rx7900xtx"))
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                 choose_model=lambda: None, save_path=lambda _n: None))
    try:
        qasync_loop.run_until_complete(services.detect_gpus())
        page = ui.pages.chat
        page.set_model(test_model)
        panel = page.load_options_panel
        assert panel is not None
        panel.activate(True)
        names = [panel.device.itemText(i) for i in range(panel.device.count())]
        assert names == ["Automatic", "AMD Radeon RX 7900 XTX", "AMD Radeon Graphics (Raphael) (integrated)",
                         "All of them (split the model)"]
        assert panel.device.currentText() == "AMD Radeon RX 7900 XTX"
        assert "discrete" in panel.device_reason.text()
        assert services.fit_target().name == "AMD Radeon RX 7900 XTX"
        panel.device.setCurrentIndex(2)
        panel.device.activated.emit(2)
        assert build_services().settings.devices == ["card1"]  # saved: the GPU page shows the same choice
        assert [p.key for p in services.resolver.gpu_picks() if p.chosen] == ["card1"]
        assert panel.device.currentText() == "AMD Radeon Graphics (Raphael) (integrated)"
        assert services.fit_target().name == "AMD Radeon Graphics (Raphael)"
        panel.device.setCurrentIndex(3)
        panel.device.activated.emit(3)
        assert len(services.fit_target().devices) == 2  # both: one split target
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


@pytest.mark.engine
def test_panel_offers_only_the_gpus_the_engine_uses_and_none_to_a_remote_engine(
        test_engines: TestEngines, qtbot: QtBot, qapp: Any, test_model: Path,
        qasync_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48 item 13: a 7900 XTX is detected, but the only engine is Vulkan on llvmpipe (this
    machine's real Vulkan build): the GPU row offered the 7900 XTX to an engine that cannot use it.
    It says why there is nothing to choose instead; and Load options are off for a remote engine."""
    trees = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(trees / "rx7900xtx"))
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # llvmpipe is this machine's Vulkan device
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                 choose_model=lambda: None, save_path=lambda _n: None))
    try:
        qasync_loop.run_until_complete(services.detect_gpus())
        qasync_loop.run_until_complete(services.use_engine_folder(test_engines.vulkan_dir))
        page = ui.pages.chat
        page.set_model(test_model)
        panel = page.load_options_panel
        assert panel is not None
        page.resize(1000, 800)
        page.show()
        page.load_options_toggle.click()
        assert panel.isVisibleTo(page)
        assert not panel.device.isVisibleTo(panel)  # no 7900 XTX (nor "Automatic") to choose
        assert panel.device_reason.isVisibleTo(panel)
        assert panel.device_reason.text().startswith("GPU: none to choose, the engine runs on the CPU")
        assert "llvmpipe" in panel.device_reason.text()

        with openai_like_server() as base:
            services.remote.add("gpu box", base)
            page.on_shown()
            page.run_on.setCurrentIndex(1)
            assert services.chat.remote is not None
            toggle = page.load_options_toggle
            assert not toggle.isEnabled() and not panel.isVisibleTo(page)
            assert toggle.toolTip() == "A remote engine loads its model with its own options"
            page.run_on.setCurrentIndex(0)
            assert toggle.isEnabled() and toggle.toolTip() == ""
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


def test_panel_parallel_requests_say_what_each_request_gets(qtbot: QtBot, qapp: Any, test_model: Path,
                                                            qasync_loop: asyncio.AbstractEventLoop) -> None:
    """"Automatic" parallel requests stays automatic when saved; beside it the panel says how many
    requests the model answers at once and the context each one gets; the fit's KV cache counts all
    of them."""
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                 choose_model=lambda: None, save_path=lambda _n: None))
    try:
        page = ui.pages.chat
        page.set_model(test_model)
        panel = page.load_options_panel
        assert panel is not None
        panel.activate(True)
        qasync_loop.run_until_complete(_until(lambda: panel.estimate is not None))
        assert panel.parallel.value() == 0 and panel.parallel.text() == "Automatic"
        automatic = panel.estimate
        assert automatic is not None and automatic.slots == services.load_options.slots(
            test_model, services.load_options.options(test_model))
        assert panel.slots_note.text() == f"{automatic.slots} parallel requests × 4,096 tokens each (automatic)"
        assert panel.slots_note.isVisibleTo(panel)

        panel.parallel.setValue(1)
        one = panel.estimate
        assert one is not None and one.slots == 1 and one.kv_bytes * automatic.slots == automatic.kv_bytes
        assert panel.slots_note.text() == "1 request at a time, 4,096 tokens"
        assert f"KV cache {format_mem(one.kv_bytes)}" in panel.verdict.text()
        assert services.load_options.saved(test_model)["parallel"] == 1

        panel.ctx_size.setValue(1024)
        panel.parallel.setValue(2)
        assert panel.slots_note.text() == "2 parallel requests × 1,024 tokens each"
        assert services.load_options.server_settings(test_model).parallel == 2  # what the next load starts with

        panel.parallel.setValue(0)  # Automatic again: saved as automatic, not as one request
        assert services.load_options.saved(test_model)["parallel"] == 0
        assert panel.slots_note.text().endswith("(automatic)")
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()
