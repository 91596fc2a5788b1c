"""Export a conversation (Markdown, JSON, HTML) and import ChatGPT's and Open WebUI's exports:
the core on a real SQLite file, `strata chats` through the real CLI, and the chat page's "⋯" menu
through real Qt file dialogs.

The import files under tests/data/chat/imports were written by hand from the shapes those programs
export (see strata_gui/core/chat/importers.py): ChatGPT's ``conversations.json`` (a ``mapping``
tree with a regenerated branch, hidden system message, ``thoughts`` and ``reasoning_recap``, an
image part) and Open WebUI's chat export (``history`` with an abandoned branch and a
``<details type="reasoning">`` block; an older chat with only a ``messages`` list).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QFileDialog

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ChatError
from strata_gui.core.chat.export import export_conversation
from strata_gui.core.chat.images import ChatImage
from strata_gui.core.chat.importers import MAX_IMPORT_BYTES, read_export, save_imported
from strata_gui.core.chat.records import TOOL_ALLOWED, ToolCallRecord
from strata_gui.core.chat.search import search_conversations
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from tests.chat import test_chat_page
from tests.chat.test_chat_page import wait_until
from tests.support.images import png_bytes

page_env = test_chat_page.page_env  # the chat page's fixture: a real store, bridge and pool
IMPORTS = Path(__file__).parent.parent / "data" / "chat" / "imports"


@pytest.fixture
def store() -> ConversationStore:
    paths = AppPaths.from_environment()
    paths.ensure()
    return ConversationStore(paths.database_file).open()


def _tool_chat(store: ConversationStore) -> int:
    conv = store.create_conversation("Weather <b>check</b>", system_prompt="Be brief", model="qwen.gguf")
    store.add_message(conv.id, "user", "Weather in Oslo? <script>alert(1)</script>",
                      images=[ChatImage.from_bytes(png_bytes(seed=1), "sky.png")])
    call = ToolCallRecord("call_1", "get_weather", '{"city": "Oslo"}', result="-3 C, snow", status=TOOL_ALLOWED)
    store.add_message(conv.id, "assistant", "", thinking="I should call the weather tool.", tool_calls=[call])
    store.add_message(conv.id, "tool", "-3 C, snow", tool_call_id="call_1", tool_name="get_weather")
    store.add_message(conv.id, "assistant", "It is **-3 °C** with snow.\n\n```\ncode ``` inside\n```")
    return int(conv.id)


def test_markdown_keeps_thinking_and_tool_calls(store: ConversationStore) -> None:
    md = export_conversation(store, _tool_chat(store), "md")
    assert md.startswith("# Weather <b>check</b>\n") and "- Model: `qwen.gguf`" in md and "Be brief" in md
    assert "## You\n\nWeather in Oslo?" in md and "*[image: sky.png]*" in md
    assert "<details>\n<summary>Thinking</summary>\n\n```\nI should call the weather tool.\n```" in md
    assert '**Tool call** `get_weather` (allowed)\n\n```json\n{"city": "Oslo"}\n```\n\nResult:\n\n```\n-3 C, snow\n```' in md
    assert "## Tool" not in md  # the result is shown with its call, not twice
    assert "It is **-3 °C** with snow." in md


def test_json_keeps_everything(store: ConversationStore) -> None:
    data = json.loads(export_conversation(store, _tool_chat(store), "json"))
    assert data["kind"] == "strata-conversation" and data["title"] == "Weather <b>check</b>"
    assert data["system_prompt"] == "Be brief" and data["model"] == "qwen.gguf"
    user, asked, result, answer = data["messages"]
    assert user["images"][0]["name"] == "sky.png" and user["images"][0]["data_base64"]
    assert asked["thinking"] == "I should call the weather tool."
    assert asked["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}',
                                    "result": "-3 C, snow", "status": "allowed", "duration_s": None}]
    assert (result["role"], result["tool_call_id"], result["tool_name"]) == ("tool", "call_1", "get_weather")
    assert answer["content"].startswith("It is **-3 °C**")


def test_html_is_one_safe_page(store: ConversationStore) -> None:
    page = export_conversation(store, _tool_chat(store), "html")
    assert page.startswith("<!DOCTYPE html>") and "<title>Weather &lt;b&gt;check&lt;/b&gt;</title>" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<strong>-3 °C</strong>" in page  # the reply's Markdown is rendered
    assert '<img alt="sky.png" src="data:image/png;base64,' in page
    assert "<details><summary>Thinking</summary><pre>I should call the weather tool.</pre></details>" in page
    assert "<code>get_weather</code> (allowed)" in page and "<pre>-3 C, snow</pre>" in page


def test_unknown_conversation_or_format(store: ConversationStore) -> None:
    with pytest.raises(ChatError, match="no conversation 99"):
        export_conversation(store, 99, "md")
    with pytest.raises(ChatError, match="Unknown export format"):
        export_conversation(store, _tool_chat(store), "pdf")


def test_chatgpt_export_is_imported(store: ConversationStore) -> None:
    source, conversations = read_export(IMPORTS / "chatgpt-conversations.json")
    result = save_imported(store, source, conversations)
    assert result.source == "ChatGPT" and len(result.conversation_ids) == 1 and result.skipped == 1
    conv = store.conversation(result.conversation_ids[0])
    assert conv is not None and conv.title == "Tea brewing" and conv.model == "o1"
    assert (conv.created_at, conv.updated_at) == (1714000000.123, 1714000300.5)
    messages = store.messages(conv.id)
    assert [(m.role, m.content) for m in messages] == [
        ("user", "How hot should water be for green tea?"), ("assistant", "About **80 °C**, not boiling."),
        ("user", "[image]\nAnd this cup?")]
    assert messages[1].thinking == "Green tea scorches above 85 C." and messages[0].created_at == 1714000010.0
    assert [h.conversation.id for h in search_conversations(store, "scorches")] == [conv.id]  # indexed


def test_open_webui_export_is_imported(store: ConversationStore) -> None:
    result = save_imported(store, *read_export(IMPORTS / "open-webui-export.json"))
    assert result.source == "Open WebUI" and len(result.conversation_ids) == 2 and result.messages == 5
    first, second = (store.conversation(i) for i in result.conversation_ids)
    assert first is not None and second is not None
    assert (first.title, first.model, first.created_at) == ("Rust lifetimes", "qwen3:8b", 1715000000.0)
    user, reply, thanks = store.messages(first.id)
    assert user.content == "What does 'a mean?" and thanks.content == "Thanks"
    assert reply.content == "It names a **lifetime**: how long a reference is valid."
    assert reply.thinking == "The user asks about lifetimes.\nExplain briefly."
    assert [(m.role, m.content) for m in store.messages(second.id)] == [("user", "ping"), ("assistant", "pong")]


@pytest.mark.parametrize(("content", "error"), [
    (b"\x89PNG not json", "not a JSON file"),
    (b'{"a": 1', "not a JSON file"),
    (b"[]", "holds no conversations"),
    (b'[{"foo": 1}]', "not an export of ChatGPT or Open WebUI"),
    (b'[{"title": "x", "mapping": {}}, 5]', "Item 2 of the file is not a conversation"),
    (b'[{"title": "x", "mapping": {}}, {"title": "y", "mapping": []}]', "Conversation 2 of the ChatGPT export"),
    (b'[{"chat": {"history": {}}}, {"chat": {"title": "no messages"}}]', "Chat 2 of the Open WebUI export"),
    (b"[" * 100_000, "not a JSON file"),
])
def test_bad_files_import_nothing(store: ConversationStore, tmp_path: Path, content: bytes, error: str) -> None:
    path = tmp_path / "export.json"
    path.write_bytes(content)
    with pytest.raises(ChatError, match=error) as caught:
        read_export(path)
    assert caught.value.hint and "ChatGPT" in caught.value.hint
    assert store.conversations() == []


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_IMPORT_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ChatError, match="more than the 512 MB"):
        read_export(path)


def test_a_failed_save_adds_nothing(store: ConversationStore) -> None:
    source, conversations = read_export(IMPORTS / "open-webui-export.json")
    conversations[1].messages[1].role = None  # type: ignore[assignment]  # NOT NULL fails on the last insert
    with pytest.raises(Exception, match=r"NOT NULL|save the imported"):
        save_imported(store, source, conversations)
    assert store.conversations() == [] and store.db.execute("SELECT COUNT(*) FROM chat_messages").fetchone()[0] == 0


def test_the_cli_lists_searches_exports_and_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(["chats", "import", str(IMPORTS / "open-webui-export.json")]) == 0
    out, _err = capsys.readouterr()
    assert "Imported 2 conversations from Open WebUI" in out
    assert run_command(["chats", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["title"] for c in listed] == ["Old style", "Rust lifetimes"]
    assert run_command(["chats", "search", "reference"]) == 0
    out = capsys.readouterr().out
    assert "Rust lifetimes" in out and "how long a reference is valid" in out
    rust = listed[1]["id"]
    target = tmp_path / "rust.html"
    assert run_command(["chats", "export", str(rust), "--format", "html", "-o", str(target)]) == 0
    assert "<strong>lifetime</strong>" in target.read_text(encoding="utf-8")
    assert run_command(["chats", "export", str(rust), "-f", "md"]) == 0
    assert capsys.readouterr().out.startswith("# Rust lifetimes\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"foo\": 1}]", encoding="utf-8")
    with pytest.raises(ChatError, match="not an export"):
        run_command(["chats", "import", str(bad)])


def _dialog() -> QFileDialog:
    [dialog] = [w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()]
    return dialog


def test_the_menu_exports_through_a_file_dialog(page_env, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, service, _loop, errors = page_env
    conv_id = _tool_chat(service.store)
    page.on_shown()
    page.open_conversation(conv_id)
    menu = page.conversation_menu
    menu.menu().aboutToShow.emit()
    assert all(a.isEnabled() for a in menu.export_actions.values())
    menu.export_actions["md"].trigger()
    dialog = _dialog()
    assert dialog.acceptMode() == QFileDialog.AcceptMode.AcceptSave
    assert Path(dialog.selectedFiles()[0]).name == "Weather b check b.md"  # no "<>/" in a file name
    dialog.selectFile(str(tmp_path / "chat.md"))
    dialog.accept()
    text = (tmp_path / "chat.md").read_text(encoding="utf-8")
    assert "I should call the weather tool." in text and "get_weather" in text
    assert page.notice.isVisible() and str(tmp_path / "chat.md") in page.notice.text.text()
    assert not errors


def test_the_menu_imports_and_shows_what_it_added(page_env, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, _service, loop, errors = page_env
    page.on_shown()
    bad = tmp_path / "notes.json"
    bad.write_text("not json", encoding="utf-8")
    page.conversation_menu.import_action.trigger()
    dialog = _dialog()
    dialog.selectFile(str(bad))
    dialog.accept()
    loop.run_until_complete(wait_until(page.notice.isVisible))
    assert "not a JSON file" in page.notice.text.text() and page.conversation_list.count() == 0
    good = tmp_path / "conversations.json"
    shutil.copy(IMPORTS / "chatgpt-conversations.json", good)
    page.conversation_menu.import_action.trigger()
    dialog = _dialog()
    dialog.selectFile(str(good))
    dialog.accept()
    loop.run_until_complete(wait_until(lambda: page.conversation_list.count() == 1))
    assert "Imported 1 conversation from ChatGPT." in page.notice.text.text()
    assert page.conversation_list.item(0).text() == "Tea brewing"
    assert [w.message.role for w in page.message_widgets.values()] == ["user", "assistant", "user"]
    assert not errors
