"""Images in chat, end to end: the composed app, the real CPU llama-server with a real (random-weight)
vision projector, SQLite, and the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import psutil
import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose
from strata_gui.cli import run_command
from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.base.errors import ChatError
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.ui.bridge import AsyncBridge
from tests.support.engines import TestEngines
from tests.support.gguf_model import ProjectorSpec
from tests.support.images import png_bytes, write_png

HOOKS = UiHooks(open_path=lambda _p: None, choose_folder=lambda: None, choose_model=lambda: None,
                save_path=lambda _n: None)


def _app(qapp: QApplication) -> tuple[AppServices, AsyncBridge, AppUi]:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    return services, bridge, compose(services, bridge, qapp, HOOKS)


def _close(loop: asyncio.AbstractEventLoop, services: AppServices, bridge: AsyncBridge, ui: AppUi) -> None:
    ui.window.close()
    loop.run_until_complete(bridge.shutdown())
    loop.run_until_complete(services.aclose())
    ui.window.deleteLater()


def _send(loop: asyncio.AbstractEventLoop, ui: AppUi, services: AppServices, text: str) -> tuple[int, object]:
    conv = ui.pages.chat.new_conversation()
    services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=8, seed=3))
    handle = ui.pages.chat.send_text(text)
    assert handle is not None
    loop.run_until_complete(asyncio.wait_for(handle.wait(), 120))
    assert handle.error is None, handle.error
    return conv, handle.result


@pytest.mark.engine
def test_an_image_reaches_the_engine_and_comes_back_after_a_restart(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, test_engines: TestEngines,
        vision_model: Path, tmp_path: Path) -> None:
    services, bridge, ui = _app(qapp)
    chat = ui.pages.chat
    try:
        ui.window.show()
        _engine, probe = qasync_loop.run_until_complete(services.engines.add_local(test_engines.cpu_dir, "cpu"))
        assert probe.usable, probe.message
        chat.set_model(vision_model)
        # The same words without and with a picture: the picture adds exactly its image tokens.
        _, plain = _send(qasync_loop, ui, services, "What is in the picture?")
        sup = services.chat.supervisor
        assert sup is not None and sup.pid is not None
        cmdline = psutil.Process(sup.pid).cmdline()
        assert cmdline[cmdline.index("--mmproj") + 1].endswith("mmproj-strata-test-llava-F16.gguf")
        chat.attach_files([write_png(tmp_path / "gradient.png", seed=7)])
        assert len(chat.attachments.images) == 1 and chat.attachments.isVisible()
        conv, seen = _send(qasync_loop, ui, services, "What is in the picture?")
        assert chat.attachments.images == [] and not chat.attachments.isVisible()
        assert seen.content and seen.stats.predicted_n == 8  # type: ignore[attr-defined]
        prompt = lambda r: (r.stats.prompt_n or 0) + (r.stats.cache_n or 0)  # noqa: E731
        assert prompt(seen) - prompt(plain) == ProjectorSpec().image_tokens
        user_widget = next(w for w in chat.message_widgets.values() if w.message.role == "user")
        assert len(user_widget.images) == 1 and not user_widget.images[0].pixmap().isNull()
    finally:
        _close(qasync_loop, services, bridge, ui)

    # A restart of the app: the conversation shows the picture again, from the database.
    services, bridge, ui = _app(qapp)
    try:
        ui.window.show()
        ui.pages.chat.open_conversation(conv)
        [user, reply] = [w for _, w in sorted(ui.pages.chat.message_widgets.items())]
        assert user.message.images[0].data == png_bytes(seed=7) and user.images[0].toolTip() == "gradient.png"
        assert user.images[0].pixmap().width() > 0 and reply.text == seen.content  # type: ignore[attr-defined]
    finally:
        _close(qasync_loop, services, bridge, ui)


def test_pasted_picture_and_a_model_without_projector(qtbot: QtBot, qapp: QApplication,
                                                       qasync_loop: asyncio.AbstractEventLoop,
                                                       vision_model: Path, test_model: Path) -> None:
    from PySide6.QtCore import QMimeData
    from PySide6.QtGui import QImage

    services, bridge, ui = _app(qapp)
    chat = ui.pages.chat
    try:
        ui.window.show()
        chat.set_model(vision_model)
        mime = QMimeData()
        image = QImage()
        assert image.loadFromData(png_bytes(seed=2))
        mime.setImageData(image)
        chat.input.insertFromMimeData(mime)  # what Ctrl+V and a drop do
        assert [im.mime for im in chat.attachments.images] == ["image/png"]
        assert chat.input.toPlainText() == ""  # the picture did not become text
        chat.attachments.remove(0)
        assert not chat.attachments.isVisible()
        # A text-only model: attaching is refused with the reason, nothing is queued.
        chat.set_model(test_model)
        assert not chat.attach_image(png_bytes(), "x.png")
        assert chat.attachments.images == [] and "cannot see images" in chat.notice.text.text()
    finally:
        _close(qasync_loop, services, bridge, ui)


@pytest.mark.engine
def test_cli_sends_an_image(test_engines: TestEngines, vision_model: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    picture = write_png(tmp_path / "p.png", seed=4)
    base = ["chat", "-m", str(vision_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "512",
            "--max-tokens", "4", "--seed", "1", "--json"]
    assert run_command([*base, "Describe"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert run_command([*base, "--image", str(picture), "Describe"]) == 0
    seen = json.loads(capsys.readouterr().out)
    assert seen["images"] == 1 and seen["projector"].endswith("mmproj-strata-test-llava-F16.gguf") and seen["reply"]
    tokens = lambda d: d["stats"]["prompt_n"] + (d["stats"]["cache_n"] or 0)  # noqa: E731
    assert tokens(seen) - tokens(plain) == ProjectorSpec().image_tokens


def test_cli_refuses_an_image_for_a_text_only_model(test_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ChatError, match="cannot see images"):
        run_command(["chat", "-m", str(test_model), "--image", str(write_png(tmp_path / "p.png")), "Hi"])


@pytest.mark.engine
def test_a_projector_added_later_reloads_the_engine_with_it(test_engines: TestEngines, vision_model: Path,
                                                           tmp_path: Path) -> None:
    import shutil

    from strata_gui.core.chat.images import ChatImage
    from tests.chat.conftest import run_with_service
    from tests.runtime.conftest import cpu_spec

    folder = tmp_path / "model"
    folder.mkdir()
    model = Path(shutil.copy(vision_model, folder / "llava-F16.gguf"))

    async def body(svc: Any, _events: list[Any]) -> None:
        conv = svc.new_conversation()
        svc.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=4, seed=1))
        await svc.send(conv.id, "Hi")
        first = svc.supervisor.pid
        assert "--mmproj" not in psutil.Process(first).cmdline() and not svc.accepts_images
        # The projector arrives (a download finished, or the user copied it in).
        shutil.copy(vision_model.parent / "mmproj-strata-test-llava-F16.gguf", folder / "mmproj-llava-F16.gguf")
        reply = await svc.send(conv.id, "And this?", images=[ChatImage.from_bytes(png_bytes())])
        assert svc.supervisor.pid != first and "--mmproj" in psutil.Process(svc.supervisor.pid).cmdline()
        assert reply.status == "complete" and reply.stats.predicted_n == 4

    run_with_service([cpu_spec(test_engines)], model, body)
