"""ConversationStore on a real SQLite file: CRUD, search, paging, migrations, crash recovery."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from strata_gui.core.base.errors import StorageError
from strata_gui.core.chat.records import COMPLETE, INTERRUPTED, STREAMING
from strata_gui.core.chat.schema import MIGRATIONS, SCHEMA_VERSION
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.client import ReplyStats, SamplingParams


@pytest.fixture
def db_path() -> Path:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths.database_file


def test_conversations_and_messages_survive_a_restart(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Trip", system_prompt="Be brief", sampling=SamplingParams(temperature=0.2))
        store.add_message(conv.id, "user", "hello")
        reply = store.add_message(conv.id, "assistant", "", status=STREAMING)
        store.update_message(reply.id, content="hi there", status=COMPLETE,
                             stats=ReplyStats(predicted_n=2, decode_tps=10.0, engine="CPU"))
    assert db_path.exists()
    with ConversationStore(db_path) as store:
        [conv2] = store.conversations()
        assert conv2.title == "Trip" and conv2.system_prompt == "Be brief" and conv2.sampling.temperature == 0.2
        msgs = store.messages(conv2.id)
        assert [(m.role, m.content, m.status) for m in msgs] == [("user", "hello", COMPLETE),
                                                                  ("assistant", "hi there", COMPLETE)]
        assert msgs[1].stats.predicted_n == 2 and msgs[1].stats.engine == "CPU"
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reply_left_streaming_is_marked_interrupted_on_open(db_path: Path) -> None:
    store = ConversationStore(db_path).open()
    conv = store.create_conversation()
    reply = store.add_message(conv.id, "assistant", "half a sen", status=STREAMING)
    store.close()  # the app died here
    with ConversationStore(db_path) as store:
        msg = store.message(reply.id)
        assert msg is not None and msg.status == INTERRUPTED and msg.content == "half a sen"


def test_tool_calls_left_waiting_or_running_by_a_closed_app_are_settled_on_open(db_path: Path) -> None:
    """After the app was killed during a call, the call showed "running…" (or "waiting for your
    answer", with no buttons) for ever."""
    from strata_gui.core.chat.records import (
        TOOL_ALLOWED,
        TOOL_ERROR,
        TOOL_PENDING,
        TOOL_RUNNING,
        ToolCallRecord,
    )

    store = ConversationStore(db_path).open()
    conv = store.create_conversation()
    reply = store.add_message(conv.id, "assistant", "", status=COMPLETE, tool_calls=[
        ToolCallRecord("a", "add", "{}", "2", TOOL_ALLOWED), ToolCallRecord("b", "hang", "{}", None, TOOL_RUNNING),
        ToolCallRecord("c", "echo", "{}", None, TOOL_PENDING)])
    store.close()  # the app died here
    with ConversationStore(db_path) as store:
        msg = store.message(reply.id)
        assert msg is not None
        assert [(c.id, c.status, c.result) for c in msg.tool_calls] == [
            ("a", TOOL_ALLOWED, "2"), ("b", TOOL_ERROR, "Stopped: Strata closed while the tool ran."),
            ("c", TOOL_ERROR, "Not run: Strata closed before it was answered.")]


def test_rename_delete_search_and_paging(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        a = store.create_conversation("Recipes")
        b = store.create_conversation("Physics")
        store.add_message(b.id, "user", "what is 100% entropy_x?")
        store.rename(a.id, "Cooking")
        assert [c.title for c in store.conversations()] == ["Physics", "Cooking"]
        assert [c.title for c in store.conversations("cook")] == ["Cooking"]
        assert [c.title for c in store.conversations("ENTROPY_x")] == ["Physics"]
        assert store.conversations("100%") and not store.conversations("1000%")
        store.add_messages(a.id, [("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(50)])
        page = store.messages(a.id, limit=10)
        assert [m.content for m in page] == [f"m{i}" for i in range(40, 50)]
        older = store.messages(a.id, limit=10, before_id=page[0].id)
        assert [m.content for m in older] == [f"m{i}" for i in range(30, 40)]
        store.delete_messages_from(a.id, page[5].id)
        assert store.count_messages(a.id) == 45
        store.delete_conversation(a.id)
        assert store.count_messages(a.id) == 0 and [c.title for c in store.conversations()] == ["Physics"]


def test_migrates_a_version_1_database(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.execute("CREATE TABLE other_component (x)")  # another component's table in the same file
    db.execute("INSERT INTO schema_version VALUES ('dashboards', 7)")
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 1)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at) VALUES ('old', 1, 1)")
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'hi', 1)")
    db.commit()
    db.close()
    with ConversationStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 7
        [msg] = store.messages(1)
        assert msg.content == "hi" and msg.stats.predicted_n is None and msg.settings == {}
        assert store.db.execute("SELECT version FROM schema_version WHERE component='dashboards'").fetchone()[0] == 7


def test_newer_schema_is_refused(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        store.db.execute("UPDATE schema_version SET version=99 WHERE component='chat'")
    with pytest.raises(StorageError, match="newer Strata"):
        ConversationStore(db_path).open()


def test_a_damaged_file_is_moved_aside_and_a_new_one_started(db_path: Path) -> None:
    garbage = b"this is not a database" * 100
    db_path.write_bytes(garbage)
    with ConversationStore(db_path, clock=lambda: 1_700_000_000.0) as store:
        assert store.notice is not None and "damaged (file is not a database)" in store.notice
        (kept,) = db_path.parent.glob(db_path.name + ".damaged-*")
        assert not kept.name.endswith("-wal")
        assert f"The old file was kept as {kept}." in store.notice
        assert kept.read_bytes() == garbage  # nothing of the user's is lost
        store.create_conversation("after")
    with ConversationStore(db_path) as again:
        assert again.notice is None and [c.title for c in again.conversations()] == ["after"]


def test_images_are_kept_with_their_message_and_go_with_it(db_path: Path) -> None:
    from strata_gui.core.chat.images import ChatImage
    from tests.support.images import png_bytes

    first, second = ChatImage.from_bytes(png_bytes(seed=1), "cat.png"), ChatImage.from_bytes(png_bytes(seed=2))
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Look")
        msg = store.add_message(conv.id, "user", "what is this?", images=[first, second])
        store.add_message(conv.id, "assistant", "a gradient")
    with ConversationStore(db_path) as store:  # a restart: the images come back, in order, byte for byte
        [user, reply] = store.messages(conv.id)
        assert user.images == (first, second) and user.images[0].mime == "image/png"
        assert user.images[0].name == "cat.png" and reply.images == ()
        assert store.message(msg.id).images == (first, second)  # type: ignore[union-attr]
        # Deleting the conversation drops its images with it (no orphan rows).
        store.delete_conversation(conv.id)
        assert store.db.execute("SELECT COUNT(*) FROM chat_images").fetchone()[0] == 0


def test_a_version_3_database_gains_images(db_path: Path) -> None:
    from strata_gui.core.chat.images import ChatImage
    from tests.support.images import png_bytes

    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for migration in MIGRATIONS[:3]:
        for statement in migration:
            db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 3)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at) VALUES ('old', 1, 1)")
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'hi', 1)")
    db.commit()
    db.close()
    with ConversationStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        [old] = store.messages(1)
        assert old.content == "hi" and old.images == ()
        image = ChatImage.from_bytes(png_bytes())
        store.add_message(1, "user", "", images=[image])
        assert store.messages(1)[-1].images == (image,)


def test_only_images_the_engine_reads_are_accepted(tmp_path: Path) -> None:
    from strata_gui.core.base.errors import ChatError
    from strata_gui.core.chat.images import ChatImage
    from tests.support.images import write_png

    image = ChatImage.from_file(write_png(tmp_path / "a.png"))
    assert image.mime == "image/png" and image.data_url().startswith("data:image/png;base64,iVBORw0KGgo")
    (tmp_path / "a.webp").write_bytes(b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    with pytest.raises(ChatError, match="not a PNG, JPEG, GIF or BMP"):
        ChatImage.from_file(tmp_path / "a.webp")
    with pytest.raises(ChatError, match="Cannot read"):
        ChatImage.from_file(tmp_path / "missing.png")


def _v4_database(path: Path) -> None:
    """A database as Strata wrote it at schema 4: every table filled, an image, stats, settings."""
    from tests.support.images import png_bytes

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for migration in MIGRATIONS[:4]:
        for statement in migration:
            db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 4)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at, system_prompt, sampling_json, model,"
               " ran_on) VALUES ('old', 1, 2, 'Be brief', '{\"temperature\": 0.2, \"seed\": 7}', 'm.gguf', 'local:CPU')")
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, status, created_at) VALUES (1, 'user', 'hi', "
               "'complete', 1)")
    db.execute("INSERT INTO chat_images(message_id, position, mime, name, data) VALUES (1, 0, 'image/png', 'a.png', ?)",
               (png_bytes(seed=3),))
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, status, created_at, settings_json, stats_json,"
               " ran_on) VALUES (1, 'assistant', 'hello', 'stopped', 2, '{\"model\": \"m.gguf\"}',"
               " '{\"ttft_s\": 0.05, \"predicted_n\": 3, \"finish_reason\": \"stopped\"}', 'local:CPU')")
    db.commit()
    db.close()


def test_a_version_4_database_upgrades_with_nothing_lost(db_path: Path) -> None:
    from strata_gui.core.chat.records import OUTPUT_OFF, StructuredOutput, ThinkingSettings, ToolCallRecord
    from tests.support.images import png_bytes

    _v4_database(db_path)
    with ConversationStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 7
        [conv] = store.conversations()
        assert (conv.title, conv.system_prompt, conv.model, conv.ran_on) == ("old", "Be brief", "m.gguf", "local:CPU")
        assert conv.sampling == SamplingParams(temperature=0.2, seed=7) and (conv.created_at, conv.updated_at) == (1, 2)
        assert conv.structured_output == StructuredOutput() and conv.structured_output.mode == OUTPUT_OFF
        assert conv.thinking == ThinkingSettings()
        user, reply = store.messages(conv.id)
        assert (user.role, user.content, user.status) == ("user", "hi", COMPLETE)
        assert [(im.mime, im.name, im.data) for im in user.images] == [("image/png", "a.png", png_bytes(seed=3))]
        assert (reply.content, reply.status, reply.ran_on, reply.settings) == ("hello", "stopped", "local:CPU",
                                                                                {"model": "m.gguf"})
        assert reply.stats == ReplyStats(ttft_s=0.05, predicted_n=3, finish_reason="stopped")
        assert (reply.thinking, reply.tool_calls, reply.tool_call_id, reply.tool_name) == ("", (), "", "")
        # The upgraded file takes the new fields.
        ran = ToolCallRecord("c1", "f", "{}", "done", "allowed", 0.5)
        store.update_message(reply.id, thinking="Let me see", tool_calls=[ran])
    with ConversationStore(db_path) as store:
        reply = store.messages(1)[-1]
        assert reply.thinking == "Let me see" and reply.tool_calls == (ran,)
        assert reply.content == "hello"


def test_thinking_tool_calls_and_settings_survive_a_restart(db_path: Path) -> None:
    from strata_gui.core.chat.records import (
        OUTPUT_JSON,
        OUTPUT_SCHEMA,
        TOOL_ALLOWED,
        TOOL_DENIED,
        TOOL_PENDING,
        StructuredOutput,
        ThinkingSettings,
        ToolCallRecord,
    )
    from strata_gui.core.runtime.client import ResponseFormat, ToolCall

    schema_text = '{"type": "object", "properties": {"city": {"type": "string"}}}'
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Tools", thinking=ThinkingSettings(enabled=True, effort="high", budget=512))
        store.update_settings(conv.id, structured_output=StructuredOutput(OUTPUT_SCHEMA, schema_text))
        store.add_message(conv.id, "user", "weather in Paris and Rome?")
        calls = [ToolCall("c1", "get_weather", '{"city": "Paris"}'), ToolCall("c2", "get_weather", '{"city": "Rome"}')]
        reply = store.add_message(conv.id, "assistant", "", status=STREAMING, thinking="Two cities",
                                  tool_calls=[ToolCallRecord.from_call(c) for c in calls])
        store.update_message(reply.id, status=COMPLETE,
                             stats=ReplyStats(ttft_s=0.1, answer_s=1.5, thinking_n=40, thinking_s=1.4))
        store.update_tool_call(reply.id, ToolCallRecord("c1", "get_weather", '{"city": "Paris"}', "18 C",
                                                        TOOL_ALLOWED, 0.25))
        store.update_tool_call(reply.id, ToolCallRecord("c2", "get_weather", '{"city": "Rome"}', None, TOOL_DENIED))
        store.add_message(conv.id, "tool", "18 C", tool_call_id="c1", tool_name="get_weather")
    with ConversationStore(db_path) as store:
        conv2 = store.conversation(conv.id)
        assert conv2 is not None
        assert conv2.thinking == ThinkingSettings(True, "high", 512)
        assert conv2.structured_output == StructuredOutput(OUTPUT_SCHEMA, schema_text)
        options = conv2.request_options(max_tokens=64)
        assert options.response_format == ResponseFormat({"type": "object", "properties": {"city": {"type": "string"}}})
        assert (options.thinking, options.effort, options.thinking_budget, options.max_tokens) == (True, "high", 512, 64)
        _, reply2, result = store.messages(conv.id)
        assert reply2.thinking == "Two cities" and reply2.stats.thinking_n == 40 and reply2.stats.answer_s == 1.5
        assert "thought 40 tokens in 1.4 s" in reply2.stats.summary()
        assert [(c.id, c.result, c.status, c.duration_s) for c in reply2.tool_calls] == [
            ("c1", "18 C", TOOL_ALLOWED, 0.25), ("c2", None, TOOL_DENIED, None)]
        assert [c.call() for c in reply2.tool_calls] == calls
        assert (result.role, result.content, result.tool_call_id, result.tool_name) == ("tool", "18 C", "c1",
                                                                                       "get_weather")
        store.update_tool_call(reply2.id, ToolCallRecord("c3", "other"))  # an id not there yet is added
        assert store.message(reply2.id).tool_calls[-1] == ToolCallRecord("c3", "other", "", None,  # type: ignore[union-attr]
                                                                        TOOL_PENDING)
        store.update_settings(conv.id, structured_output=StructuredOutput(OUTPUT_JSON, schema_text))
        json_conv = store.conversation(conv.id)
        assert json_conv is not None and json_conv.request_options().response_format == ResponseFormat()
        assert json_conv.structured_output.schema == schema_text  # kept for switching back


def test_damaged_values_read_as_defaults(db_path: Path) -> None:
    from strata_gui.core.chat.records import TOOL_PENDING, StructuredOutput, ThinkingSettings, ToolCallRecord

    with ConversationStore(db_path) as store:
        conv = store.create_conversation("x")
        msg = store.add_message(conv.id, "assistant", "text")
        store.db.execute(
            "UPDATE chat_conversations SET output_json='{\"mode\": \"yaml\", \"schema\": 5}',"
            " thinking_json='{\"enabled\": \"yes\", \"effort\": \"max\", \"budget\": -3}',"
            " sampling_json='[1, 2]' WHERE id=?", (conv.id,))
        store.db.execute(
            "UPDATE chat_messages SET tool_calls_json=?, stats_json=?, thinking=?, tool_call_id=? WHERE id=?",
            ('[{"id": "a", "name": "f", "arguments": 7, "status": "exploded", "duration_s": "long"},'
             ' {"name": "no id"}, 3, {"id": "b", "name": "g", "result": "ok", "status": "allowed"}]',
             '{"thinking_n": "many", "thinking_s": null, "predicted_n": 4}', b"\xff", b"\x00", msg.id))
        got = store.message(msg.id)
        assert got is not None
        assert got.tool_calls == (ToolCallRecord("a", "f", "", None, TOOL_PENDING, None),
                                  ToolCallRecord("b", "g", "", "ok", "allowed", None))
        assert got.stats == ReplyStats(predicted_n=4) and got.thinking == "" and got.tool_call_id == ""
        store.db.execute("UPDATE chat_messages SET tool_calls_json='not json', stats_json='{' WHERE id=?", (msg.id,))
        got = store.message(msg.id)
        assert got is not None and got.tool_calls == () and got.stats == ReplyStats() and got.content == "text"
        conv2 = store.conversation(conv.id)
        assert conv2 is not None
        assert conv2.structured_output == StructuredOutput() and conv2.thinking == ThinkingSettings()
        assert conv2.sampling == SamplingParams()


def test_an_invalid_schema_is_a_chat_error_when_the_request_is_built() -> None:
    from strata_gui.core.base.errors import ChatError
    from strata_gui.core.chat.records import OUTPUT_SCHEMA, StructuredOutput

    with pytest.raises(ChatError, match="not valid JSON"):
        StructuredOutput(OUTPUT_SCHEMA, "{type: object}").response_format()
    with pytest.raises(ChatError, match=r"The schema is not valid: \$\.type"):
        StructuredOutput(OUTPUT_SCHEMA, '{"type": 12}').response_format()
    assert StructuredOutput().response_format() is None


def test_regenerate_keeps_every_answer_and_the_user_can_switch_between_them(db_path: Path) -> None:
    from strata_gui.core.chat.conversations import Conversations
    from strata_gui.core.chat.records import ToolCallRecord

    clock = iter(range(1000, 2000))
    with ConversationStore(db_path, clock=lambda: float(next(clock))) as store:
        chats = Conversations(store)
        conv = chats.new()
        question = chats.add_user_message(conv.id, "What is the weather?")
        # the first answer called a tool, then answered
        store.add_message(conv.id, "assistant", "", tool_calls=[ToolCallRecord("c1", "weather", "{}", "sunny")])
        store.add_message(conv.id, "tool", "sunny", tool_call_id="c1", tool_name="weather")
        store.add_message(conv.id, "assistant", "It is sunny.", stats=ReplyStats(predicted_n=4))
        assert chats.answer_choice(conv.id) == (1, 1)
        chats.drop_replies_to_last_question(conv.id)  # Regenerate
        assert [m.role for m in store.messages(conv.id)] == ["user"]
        store.add_message(conv.id, "assistant", "Rain later.")
        assert chats.answer_choice(conv.id) == (2, 2)
        chats.drop_replies_to_last_question(conv.id)
        store.add_message(conv.id, "assistant", "Cloudy.")
        assert chats.answer_choice(conv.id) == (3, 3)

        assert chats.switch_answer(conv.id, -1)
        assert [m.content for m in store.messages(conv.id)] == ["What is the weather?", "Rain later."]
        assert chats.answer_choice(conv.id) == (2, 3)
        assert chats.switch_answer(conv.id, -1)
        first = store.messages(conv.id)
        assert [m.role for m in first] == ["user", "assistant", "tool", "assistant"]  # the whole answer, tools too
        assert first[1].tool_calls[0].name == "weather" and first[3].stats.predicted_n == 4
        assert chats.answer_choice(conv.id) == (1, 3) and not chats.switch_answer(conv.id, -1)
        assert chats.switch_answer(conv.id, 1) and chats.switch_answer(conv.id, 1)
        assert store.messages(conv.id)[-1].content == "Cloudy." and not chats.switch_answer(conv.id, 1)

    # the kept answers survive a restart ...
    with ConversationStore(db_path) as store:
        chats = Conversations(store)
        assert chats.answer_choice(conv.id) == (3, 3)
        # ... and go when the question is edited (the answers were to the old text)
        chats.edit(question.id, "What is the weather tomorrow?")
        assert chats.answer_choice(conv.id) == (1, 1)
        assert store.reply_versions(conv.id, question.id) == []
