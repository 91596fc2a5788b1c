"""Presets: saved in the config folder, shared as files, chosen per conversation in the chat
page's settings (real widgets, real SQLite) and by `strata chat --preset` (the real CPU engine)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ChatError
from strata_gui.core.chat.presets import PRESETS_FILE, Preset, PresetStore
from strata_gui.core.chat.records import ThinkingSettings
from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.chat_page import ChatPage
from tests.support import engines as _engines
from tests.support.pool import real_pool
from tests.support.settings import settings_service

TERSE = Preset("Terse", "Answer in one line.", SamplingParams(temperature=0.2, max_tokens=5, seed=3),
               ThinkingSettings(enabled=False), ("files",))


def _store() -> PresetStore:
    paths = AppPaths.from_environment()
    paths.ensure()
    return PresetStore(paths.config_dir / PRESETS_FILE)


def test_presets_are_saved_replaced_and_deleted() -> None:
    store = _store()
    assert store.presets() == []
    store.save(TERSE)
    store.save(Preset("creative", "Be playful.", SamplingParams(temperature=1.2)))
    assert [p.name for p in store.presets()] == ["creative", "Terse"]
    assert _store().get("Terse") == TERSE  # read back from the file, tools and thinking too
    store.save(Preset("Terse", "Two lines."))
    assert store.require("Terse").system_prompt == "Two lines." and len(store.presets()) == 2
    store.delete("creative")
    with pytest.raises(ChatError, match="no preset called “creative”") as caught:
        store.require("creative")
    assert caught.value.hint == "Saved presets: Terse."


def test_a_preset_file_is_shared_and_bad_files_add_nothing(tmp_path: Path) -> None:
    store = _store()
    store.save(TERSE)
    shared = store.export_file("Terse", tmp_path / "terse.json")
    assert json.loads(shared.read_text(encoding="utf-8"))["kind"] == "strata-preset"
    other = PresetStore(tmp_path / "elsewhere" / PRESETS_FILE)  # another machine's config folder
    assert other.import_file(shared) == TERSE and other.presets() == [TERSE]
    for content, error in (("not json", "is not a preset"), ('{"name": "x"}', "not a Strata preset"),
                           ('{"kind": "strata-preset", "name": ""}', "has no name"),
                           ('{"kind": "strata-preset", "name": "' + "n" * 81 + '"}', "1 to 80 characters"),
                           ("[" * 10_000, "is not a preset")):
        bad = tmp_path / "bad.json"
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(ChatError, match=error):
            other.import_file(bad)
    assert other.presets() == [TERSE]


def test_a_damaged_presets_file_is_kept_aside() -> None:
    store = _store()
    store.path.write_text("{broken", encoding="utf-8")
    assert store.presets() == []
    assert list(store.path.parent.glob(PRESETS_FILE + ".corrupt-*"))
    store.save(TERSE)
    assert store.presets() == [TERSE]


@pytest.fixture
def preset_page(qtbot, qasync_loop, test_model: Path) -> Iterator[tuple[ChatPage, ChatService, PresetStore]]:  # type: ignore[no-untyped-def]
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    service = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http,
                          settings_service(context_size=1024, last_model=str(test_model)))
    bridge = AsyncBridge()
    presets = PresetStore(paths.config_dir / PRESETS_FILE)
    page = ChatPage(service, bridge, presets=presets)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    try:
        yield page, service, presets
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(service.aclose())
        qasync_loop.run_until_complete(service.pool.aclose())
        qasync_loop.run_until_complete(http.aclose())


def test_the_picker_saves_and_chooses_presets_per_conversation(preset_page, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, service, presets = preset_page
    bar = page.preset_bar
    assert bar is not None and bar.picker.currentText() == "No preset"
    first = page.new_conversation()
    page.settings_toggle.click()
    panel = page.settings_panel
    panel.system_prompt.setPlainText("Answer like a pirate.")
    panel.temperature.setValue(0.9)
    service.store.update_settings(first, thinking=ThinkingSettings(enabled=True, effort="high"))
    saved = bar.save_as("Pirate")
    assert saved is not None and presets.get("Pirate") == Preset(
        "Pirate", "Answer like a pirate.", SamplingParams(temperature=0.9), ThinkingSettings(enabled=True, effort="high"))
    assert bar.picker.currentText() == "Pirate"
    # A new conversation starts without a preset; choosing one from the list fills its settings.
    second = page.new_conversation()
    assert bar.picker.currentText() == "No preset" and panel.system_prompt.toPlainText() == ""
    bar.picker.setFocus()
    qtbot.keyClick(bar.picker, Qt.Key.Key_Down)
    assert bar.picker.currentText() == "Pirate"
    conv = service.store.conversation(second)
    assert conv is not None and conv.system_prompt == "Answer like a pirate."
    assert conv.sampling == SamplingParams(temperature=0.9) and conv.thinking.effort == "high"
    assert panel.system_prompt.toPlainText() == "Answer like a pirate." and panel.temperature.value() == 0.9
    # Each conversation keeps its own: editing this one leaves the first and the preset alone.
    panel.system_prompt.setPlainText("Answer like a poet.")
    assert service.store.conversation(second).system_prompt == "Answer like a poet."  # type: ignore[union-attr]
    page.open_conversation(second)
    assert bar.picker.currentText() == "No preset"  # its settings no longer match the preset
    page.open_conversation(first)
    assert bar.picker.currentText() == "Pirate"
    assert presets.require("Pirate").system_prompt == "Answer like a pirate."
    # A bad name is refused with a notice, nothing saved.
    assert bar.save_as("   ") is None and page.notice.isVisible() and [p.name for p in presets.presets()] == ["Pirate"]


def test_presets_are_exported_and_imported_through_file_dialogs(preset_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, _service, presets = preset_page
    bar = page.preset_bar
    presets.save(TERSE)
    bar.refresh("Terse")
    bar.export_action.trigger()
    [dialog] = [w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()]
    dialog.selectFile(str(tmp_path / "shared.json"))
    dialog.accept()
    assert Preset.from_json(json.loads((tmp_path / "shared.json").read_text(encoding="utf-8"))) == TERSE
    bar.delete_action.trigger()
    assert presets.presets() == [] and bar.picker.count() == 1
    bar.import_action.trigger()
    [dialog] = [w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()]
    dialog.selectFile(str(tmp_path / "shared.json"))
    dialog.accept()
    assert presets.presets() == [TERSE] and bar.picker.currentText() == "Terse"
    assert "Imported the preset “Terse”." in page.notice.text.text()


@pytest.mark.engine
def test_strata_chat_uses_a_preset(test_engines: _engines.TestEngines, test_model: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    _store().save(TERSE)  # at most 5 tokens, thinking off
    code = run_command(["chat", "--model", str(test_model), "--engine", str(test_engines.cpu_dir), "--ctx-size", "512",
                        "--preset", "Terse", "--json", "Tell me a story"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["stats"]["predicted_n"] == 5
    code = run_command(["chat", "--model", str(test_model), "--engine", str(test_engines.cpu_dir), "--ctx-size", "512",
                        "--preset", "Terse", "--max-tokens", "3", "--json", "Tell me a story"])
    assert code == 0 and json.loads(capsys.readouterr().out)["stats"]["predicted_n"] == 3  # an option overrides
    with pytest.raises(ChatError, match="no preset called “Nope”"):
        run_command(["chat", "--model", str(test_model), "--preset", "Nope", "Hi"])
