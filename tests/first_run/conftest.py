"""First-run guide test parts: the loopback release server and hub, the composed app, screenshots."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QWidget

from strata_gui.app import AppUi, Pages, UiHooks, compose
from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.models.gguf_meta import read_header
from strata_gui.core.models.starters import StarterModel, parse_starters
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.main_window import MainWindow
from strata_gui.ui.theme import apply_theme
from tests.engines.conftest import UPSTREAM, pack_cpu_zip
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer, github_server
from tests.support.hub_server import HubRepo, RunningHub, running_hub

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
GPU_TREES = REPO_ROOT / "tests" / "data" / "gpu" / "linux"
TEST_REPO = "strata/test-llama-GGUF"
TEST_FILE = "strata-test-llama-Q4_K_M.gguf"


def shoot(widget: QWidget, name: str) -> Path:
    """Save what ``widget`` shows as ``artifacts/screenshots/first-run-<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    QApplication.processEvents()
    out = SCREENSHOTS / f"first-run-{name}.png"
    assert widget.grab().save(str(out))
    return out


async def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll inside one loop run (qasync callbacks must not fire between separate runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture(scope="session")
def cpu_zip(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Path:
    """The real CPU llama-server packed as the upstream Linux release asset."""
    d = tmp_path_factory.mktemp("first-run-archives")
    return pack_cpu_zip(test_engines.cpu_server, d / "llama-b7601-bin-ubuntu-x64.zip")


@pytest.fixture
def releases(cpu_zip: Path) -> Iterator[GitHubServer]:
    """Loopback GitHub with the upstream release holding the CPU build."""
    with github_server() as gh:
        gh.add_release(UPSTREAM, "b7601", [cpu_zip])
        yield gh


@pytest.fixture
def hub(test_model: Path) -> Iterator[RunningHub]:
    """Loopback hub serving the real test GGUF as a Q4_K_M starter."""
    repo = HubRepo(TEST_REPO, {"README.md": b"# Strata test llama\n", TEST_FILE: test_model}, params=4_170_048)
    with running_hub([repo]) as running:
        yield running


@pytest.fixture(scope="session")
def test_starter(test_model: Path) -> StarterModel:
    """A starter entry for the test GGUF, with the shape read from its real header."""
    meta = read_header(test_model)
    entry = {
        "id": "strata-test-llama", "name": "Strata Test Llama", "repo": TEST_REPO, "file": TEST_FILE,
        "quant": "Q4_K_M", "size": test_model.stat().st_size, "license": "mit",
        "description": "A tiny model that answers instantly (for tests).",
        "shape": {"n_layers": meta.block_count, "kv_heads": max(meta.kv_heads_per_layer),
                  "head_dim": meta.key_length, "trained_context": meta.context_length or 2048,
                  "n_vocab": 32000, "embedding_length": meta.embedding_length},
    }
    return parse_starters({"version": 1, "models": [entry]})[0]


@dataclass
class Chooser:
    """Stands in for the file dialogs: what the user would pick."""

    folder: str | None = None
    model: str | None = None
    asked: list[str] = field(default_factory=list)

    def hooks(self) -> UiHooks:
        def folder() -> str | None:
            self.asked.append("folder")
            return self.folder

        def model() -> str | None:
            self.asked.append("model")
            return self.model

        return UiHooks(open_path=lambda _p: None, choose_folder=folder, choose_model=model,
                       save_path=lambda _n: None)


@dataclass
class App:
    ui: AppUi
    chooser: Chooser
    loop: asyncio.AbstractEventLoop

    @property
    def services(self) -> AppServices:
        return self.ui.services

    @property
    def bridge(self) -> AsyncBridge:
        return self.ui.bridge

    @property
    def window(self) -> MainWindow:
        return self.ui.window

    @property
    def hooks(self) -> UiHooks:
        return self.ui.hooks

    @property
    def pages(self) -> Pages:
        return self.ui.pages


@pytest.fixture
def make_app(qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., App]]:
    """Compose the real app (every service and page) on a replayed GPU tree, with settings changed
    as a user would; torn down afterwards (engines stopped, clients closed)."""
    made: list[App] = []

    def make(gpu_tree: str = "no-gpu", **settings: Any) -> App:
        monkeypatch.setenv("STRATA_SYSFS_ROOT", str(GPU_TREES / gpu_tree))
        base = build_services()
        base.settings_service.update(**settings)
        services = build_app_services(base)
        bridge = AsyncBridge()
        chooser = Chooser()
        hooks = chooser.hooks()
        ui = compose(services, bridge, qapp, hooks)
        window = ui.window
        apply_theme(qapp, "light")  # as run_gui does: the screenshots show what users see
        window.resize(1100, 720)
        app = App(ui, chooser, qasync_loop)
        made.append(app)
        return app

    yield make
    for app in made:
        guide = app.ui.first_run
        if guide is not None:
            guide.close()
        app.window.close()
        qasync_loop.run_until_complete(app.bridge.shutdown())
        qasync_loop.run_until_complete(app.services.aclose())
        app.window.deleteLater()


def saved_settings(app: App) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(app.services.base.paths.settings_file.read_text())
    return data
