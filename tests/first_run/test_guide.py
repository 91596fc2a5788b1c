"""The first-run guide on the real composed app: loopback GitHub releases and hub, a replayed
GPU, the real CPU engine and the real test GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from strata_gui.app import open_first_run
from strata_gui.core.base.progress import Progress
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.store import SamplingParams
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.config.services import build_services
from strata_gui.core.models.starters import STARTERS_FILE, StarterModel, load_starters
from strata_gui.ui.first_run import STEP_MODELS, STEP_OFFLINE, STEP_READY, STEP_SETUP, FirstRunGuide
from tests.engines.conftest import archives, github, published  # noqa: F401  (fixtures)
from tests.first_run.conftest import App, saved_settings, shoot, wait_until
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer
from tests.support.hub_server import RunningHub


def _row_texts(guide: FirstRunGuide) -> dict[str, tuple[str, str, str]]:
    out = {}
    for i in range(guide.model_list.topLevelItemCount()):
        item = guide.model_list.topLevelItem(i)
        out[item.data(0, 0x0100)] = (item.text(0), item.text(1), item.text(2))
    return out


@pytest.mark.engine
def test_walk_from_nothing_to_a_chat(releases: GitHubServer, hub: RunningHub, test_starter: StarterModel,  # type: ignore[no-untyped-def]
                                     make_app) -> None:
    # (the servers are listed first: they stop after the app has closed its connections)
    app: App = make_app("rx6600", github_api_url=releases.api_base, hub_endpoint=hub.url, context_size=1024)
    assert app.services.engines.installed() == []
    app.window.show()
    starters = [*load_starters(kernels_dir() / STARTERS_FILE), test_starter]
    guide = open_first_run(app.ui, starters=starters)
    shots: dict[str, Path] = {}

    def shoot_once(name: str) -> None:
        if name not in shots:
            shots[name] = shoot(guide, name)

    async def scenario() -> None:
        # 1. GPUs and the engine plan.
        await wait_until(lambda: guide.plan is not None)
        assert guide.step == STEP_SETUP
        assert "Radeon RX 6600" in guide.gpu_label.text() and "8.0 GiB VRAM" in guide.gpu_label.text()
        plan = guide.plan_label.text()
        assert "1. CPU (recommended)" in plan and "Not used: ROCm" in plan
        assert guide.primary_button.text() == "Download engine" and guide.primary_button.isEnabled()
        shoot_once("1-gpu-and-plan")
        # 2. The engine downloads from the release server, is unpacked and probed.
        guide.primary_button.click()
        handle = guide.engine_handle
        assert handle is not None
        handle.progress.connect(lambda p: shoot_once("2-engine-download")
                                if isinstance(p, Progress) and p.done > 0 else None)
        await handle.wait()
        assert guide.engine is not None and guide.engine.backend == "cpu"
        assert guide.engine_status.text().startswith("Installed: CPU b7601")
        assert not guide.engine_progress.isVisible()
        assert guide.primary_button.text() == "Next"
        shoot_once("3-engine-installed")
        # The app's engine list and chat plan already know the new engine.
        assert [s.backend for s in app.services.chat.plan] == ["cpu"]
        # 3. Starter models with sizes and fit verdicts. The only engine is the CPU build, so they are
        # judged for system RAM and the CPU, not for the RX 6600 no installed engine can use.
        guide.primary_button.click()
        assert guide.step == STEP_MODELS
        rows = _row_texts(guide)
        assert rows["qwen2.5-0.5b-instruct"][1:] == ("468.3 MiB", "Fits in system RAM — runs on the CPU")
        assert not any("GPU" in verdict for _n, _s, verdict in rows.values())
        recommended = [k for k, (name, _s, _v) in rows.items() if name.endswith("(recommended)")]
        assert recommended == ["strata-test-llama"]  # on the processor: the smallest that runs
        assert "runs on the CPU: no GPU engine is installed" in guide.target_label.text()
        shoot_once("4-starter-models")
        # 4. Download the (test) starter from the hub.
        assert guide.select_starter("strata-test-llama")
        assert "strata/test-llama-GGUF" in guide.model_description.text()
        guide.primary_button.click()
        mhandle = guide.model_handle
        assert mhandle is not None
        mhandle.progress.connect(lambda p: shoot_once("5-model-download")
                                 if isinstance(p, Progress) and p.done > 0 else None)
        await mhandle.wait()
        assert guide.step == STEP_READY, guide.model_status.text()
        assert guide.model_path is not None and guide.model_path.name == "strata-test-llama-Q4_K_M.gguf"
        assert guide.model_path.stat().st_size == test_starter.size
        assert "Engine: CPU b7601" in guide.ready_label.text()
        shoot_once("6-ready")
        # 5. Open the chat: the chat page is shown with the model and the installed engine.
        guide.primary_button.click()
        assert not guide.isVisible()
        chat = app.pages.chat
        assert app.window.stack.currentWidget() is chat
        assert app.services.chat.model == guide.model_path
        assert chat.model_label.text() == "strata-test-llama-Q4_K_M.gguf"
        settings = saved_settings(app)
        assert settings["first_run_done"] is True and settings["last_model"] == str(guide.model_path)
        # One message through the real CPU engine streams a reply.
        conv = chat.new_conversation()
        app.services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=8, seed=5))
        reply = chat.send_text("Hello!")
        assert reply is not None
        await reply.wait()
        assistant = [w for w in chat.message_widgets.values() if w.message.role == "assistant"]
        assert len(assistant) == 1 and assistant[0].message.status == COMPLETE and assistant[0].text
        shots["7-chat"] = shoot(app.window, "7-chat")

    app.loop.run_until_complete(scenario())
    assert set(shots) == {"1-gpu-and-plan", "2-engine-download", "3-engine-installed", "4-starter-models",
                          "5-model-download", "6-ready", "7-chat"}


@pytest.mark.engine
def test_cancel_during_the_engine_download_installs_nothing(releases: GitHubServer, make_app) -> None:  # type: ignore[no-untyped-def]
    app: App = make_app(github_api_url=releases.api_base)
    guide = open_first_run(app.ui, starters=[])
    engines = app.services.engines

    async def scenario() -> None:
        await wait_until(lambda: guide.plan is not None)
        assert "No graphics card was found" in guide.gpu_label.text()
        guide.primary_button.click()
        handle = guide.engine_handle
        assert handle is not None
        # The user presses Cancel as soon as the first bytes arrive (a slow link, so it lands mid-download).
        releases.state.block_delay = 0.01
        handle.progress.connect(lambda p: guide.engine_progress.cancel_button.click()
                                if p.done > 0 and guide.engine_progress.cancel_button.isEnabled() else None)
        await handle.wait()
        assert handle.was_cancelled
        assert engines.installed() == []
        assert [p.name for p in engines.engines_dir.iterdir()] == [] if engines.engines_dir.exists() else True
        assert "no engine was installed" in guide.engine_status.text()
        assert guide.engine is None and app.services.chat.plan == []
        shoot(guide, "8-engine-cancelled")
        # Trying again completes the install.
        releases.state.block_delay = 0.0
        assert guide.primary_button.text() == "Download engine" and guide.primary_button.isEnabled()
        guide.primary_button.click()
        assert guide.engine_handle is not None
        await guide.engine_handle.wait()
        assert guide.engine is not None and [e.id for e in engines.installed()] == [guide.engine.id]

    app.loop.run_until_complete(scenario())


@pytest.mark.engine
def test_cancel_during_the_model_download_keeps_nothing(releases: GitHubServer, hub: RunningHub,  # type: ignore[no-untyped-def]
                                                        test_starter: StarterModel, make_app) -> None:
    app: App = make_app(github_api_url=releases.api_base, hub_endpoint=hub.url)
    guide = open_first_run(app.ui, starters=[test_starter])
    downloads = app.services.models.downloads
    models_page = app.pages.models

    async def scenario() -> None:
        await wait_until(lambda: guide.plan is not None)
        guide.primary_button.click()
        assert guide.engine_handle is not None
        await guide.engine_handle.wait()
        guide.primary_button.click()  # Next: the starter models
        assert guide.step == STEP_MODELS and guide.select_starter("strata-test-llama")
        hub.state.chunk_delay = 0.03
        guide.primary_button.click()
        handle = guide.model_handle
        assert handle is not None
        # The guide's download is the download manager's job: the Models page lists it too.
        await wait_until(lambda: len(models_page.download_rows) == 1)
        # The user presses Cancel once the first bytes are there.
        handle.progress.connect(lambda p: guide.model_progress.cancel_button.click()
                                if p.done > 0 and guide.model_progress.cancel_button.isEnabled() else None)
        await handle.wait()
        assert handle.was_cancelled and guide.model_status.text() == "Download cancelled."
        assert guide.step == STEP_MODELS and guide.model_path is None
        assert downloads.jobs() == [] and models_page.download_rows == {}
        cache = app.services.models.cache_dir
        assert not list(cache.rglob("*.incomplete")) and not list(cache.rglob("*.gguf"))
        # Trying again downloads it to the end.
        hub.state.chunk_delay = 0.0
        guide.primary_button.click()
        assert guide.model_handle is not None
        await guide.model_handle.wait()
        assert guide.step == STEP_READY and guide.model_path is not None
        assert guide.model_path.stat().st_size == test_starter.size
        (row,) = models_page.download_rows.values()
        assert row.status.text().startswith("Done")

    app.loop.run_until_complete(scenario())


def test_skip_is_remembered_and_settings_runs_the_guide_again(make_app) -> None:  # type: ignore[no-untyped-def]
    # GitHub is unreachable here: the guide says so and offers the offline choices.
    app: App = make_app(github_api_url="http://127.0.0.1:9")
    app.window.show()
    guide = open_first_run(app.ui, starters=[])
    # The guide owns the window's content area: no page shows through it.
    assert app.window.covered_by is guide and not app.pages.chat.isVisible()

    async def scenario() -> None:
        assert guide.check_handle is not None
        await guide.check_handle.wait()

    app.loop.run_until_complete(scenario())
    assert guide.step == STEP_OFFLINE
    assert guide.offline_label.text().startswith("Strata could not reach the engine releases")
    assert guide.retry_button.isVisibleTo(guide)
    guide.skip_button.click()
    assert not guide.isVisible()
    assert saved_settings(app)["first_run_done"] is True
    assert app.window.covered_by is None and app.pages.chat.isVisible()
    assert build_services().settings.first_run_done is True  # a fresh start will not show it
    # Settings → "Run the first-run guide again".
    app.pages.settings.run_guide_button.click()
    again = app.ui.first_run
    assert again is not guide and again.isVisible() and again.step == STEP_SETUP
    app.pages.settings.run_guide_button.click()
    assert app.ui.first_run is again  # one guide at a time

    async def settle() -> None:
        await again.check_handle.wait()

    app.loop.run_until_complete(settle())
    again.close()


@pytest.mark.engine
def test_offline_offers_local_build_and_gguf(make_app, test_engines: TestEngines, test_model: Path) -> None:  # type: ignore[no-untyped-def]
    app: App = make_app("rx6600", offline=True, context_size=1024)
    app.window.show()
    guide = open_first_run(app.ui, starters=[])

    async def scenario() -> None:
        await wait_until(lambda: guide.step == STEP_OFFLINE)
        assert "offline mode" in guide.offline_label.text()
        assert not guide.retry_button.isVisibleTo(guide)
        assert guide.add_local_button.text() == "Add local build…"
        assert guide.offline_open_button.text() == "Open GGUF…"
        assert guide.add_local_button.isVisibleTo(guide) and guide.offline_open_button.isVisibleTo(guide)
        assert "Radeon RX 6600" in guide.offline_gpu_label.text()
        assert not guide.primary_button.isEnabled()  # nothing to chat with yet
        shoot(guide, "9-offline")
        # A cancelled folder dialog does nothing.
        assert guide.add_local_build() is None
        # The user's own CPU build.
        app.chooser.folder = str(test_engines.cpu_dir)
        guide.backend_combo.setCurrentIndex(guide.backend_combo.findData("cpu"))
        handle = guide.add_local_build()
        assert handle is not None
        await handle.wait()
        assert guide.engine is not None and guide.engine.source == "local", guide.local_status.text()
        assert guide.local_status.text().startswith("Added local-cpu-")
        # A model file already on disk.
        app.chooser.model = str(test_model)
        mh = guide.open_gguf()
        assert mh is not None
        await mh.wait()
        assert guide.model_path == test_model
        assert guide.offline_model_status.text().startswith("Ready: strata-test-llama-F16.gguf")
        assert guide.primary_button.text() == "Open chat" and guide.primary_button.isEnabled()
        shoot(guide, "10-offline-ready")
        guide.primary_button.click()
        assert app.services.chat.model == test_model
        assert [s.backend for s in app.services.chat.plan] == ["cpu"]
        assert app.window.stack.currentWidget() is app.pages.chat

    app.loop.run_until_complete(scenario())
    assert app.chooser.asked == ["folder", "folder", "model"]
    QApplication.processEvents()


@pytest.mark.engine
@pytest.mark.vulkan
def test_the_plan_after_a_rejected_rocm_build_and_llvmpipe_said_plainly(  # type: ignore[no-untyped-def]
        published: GitHubServer, make_app, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Issue 48 item 9: after ROCm was downloaded and rejected, the guide still read "1. ROCm
    (recommended)", and "llvmpipe" was not explained."""
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # this machine's only Vulkan device is Mesa llvmpipe
    app: App = make_app("rx7900xtx", github_api_url=published.api_base)
    guide = open_first_run(app.ui, starters=load_starters(kernels_dir() / STARTERS_FILE))

    async def scenario() -> None:
        await wait_until(lambda: guide.plan is not None)
        assert "1. ROCm (recommended)" in guide.plan_label.text()
        guide.primary_button.click()
        assert guide.engine_handle is not None
        await guide.engine_handle.wait()

    app.loop.run_until_complete(scenario())
    assert guide.engine is not None and guide.engine.backend == "vulkan"
    plan = guide.plan_label.text()
    assert "1. Vulkan (recommended)" in plan and "1. ROCm" not in plan, plan
    assert "Not used: ROCm" in plan and "Tried on this machine: sees no ROCm device" in plan
    assert "llvmpipe" in guide.engine_status.text()
    assert "a software renderer on the CPU, not your GPU" in guide.engine_status.text()
