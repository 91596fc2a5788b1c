"""ChatService end to end on the real CPU engine: send, stop, regenerate, edit, crash, fallback."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import ChatError, ServerError
from strata_gui.core.chat.records import COMPLETE, INTERRUPTED, STOPPED
from strata_gui.core.chat.service import ChatService, EngineStatus, MessageAdded, MessageDelta, Notice
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.supervisor import ServerState
from tests.chat.conftest import run_with_service, until
from tests.runtime.conftest import cpu_spec, rocm_crashing_during_load, rocm_without_libraries, vulkan_spec
from tests.support import engines as _engines

Engines = _engines.TestEngines
pytestmark = pytest.mark.engine


def _short(svc: ChatService, conv_id: int, max_tokens: int = 16) -> None:
    conv = svc.store.conversation(conv_id)
    assert conv is not None
    svc.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=max_tokens, seed=3),
                              system_prompt="You are terse.")


def test_work_that_waits_for_first_tokens_runs_after_the_first_token_is_shown(test_engines: Engines,
                                                                             test_model: Path) -> None:
    """The app's start-up checks wait for :meth:`ChatService.first_tokens_in`: a message sent at
    once gets its first token before them, also when its engine is still loading."""
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        await asyncio.wait_for(svc.first_tokens_in(), 1)  # nothing sent: at once
        conv = svc.new_conversation()
        _short(svc, conv.id)
        sending = asyncio.create_task(svc.send(conv.id, "Tell me about the moon"))
        await asyncio.sleep(0)
        waited: list[int] = []  # how many events had been emitted when the wait ended

        async def checks() -> None:
            await svc.first_tokens_in()
            waited.append(len(events))

        waiting = asyncio.create_task(checks())
        await until(lambda: any(isinstance(e, EngineStatus) for e in events))
        assert not waiting.done()  # the engine is loading: no token yet
        reply = await sending
        await asyncio.wait_for(waiting, 5)
        first = next(i for i, e in enumerate(events) if isinstance(e, MessageDelta))
        assert waited[0] > first  # ended after the first token was out
        assert reply.status == COMPLETE
        # A reply stopped before its first token does not leave the wait stuck.
        stopped = asyncio.create_task(svc.send(conv.id, "Again"))
        await asyncio.sleep(0)
        stopped.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopped
        await asyncio.wait_for(svc.first_tokens_in(), 5)

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_send_streams_saves_and_reports_stats(test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> int:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id)
        reply = await svc.send(conv.id, "Tell me about the moon")
        assert reply.status == COMPLETE and reply.content
        assert reply.stats.predicted_n == 16 and reply.stats.decode_tps and reply.stats.ttft_s is not None
        assert reply.stats.engine == "CPU" and reply.stats.backend == "cpu"
        assert reply.settings["sampling"]["max_tokens"] == 16
        deltas = [e for e in events if isinstance(e, MessageDelta)]
        assert len(deltas) > 1 and "".join(d.text for d in deltas) == reply.content
        assert [type(e) for e in events if isinstance(e, MessageAdded)] == [MessageAdded, MessageAdded]
        assert any(isinstance(e, EngineStatus) and e.state is ServerState.READY for e in events)
        # The engine starts with the first message: the user sees it (and the reply's place) first.
        kinds = [type(e) for e in events]
        assert kinds.index(MessageAdded) < kinds.index(EngineStatus)
        assert max(i for i, k in enumerate(kinds) if k is MessageAdded) < kinds.index(MessageDelta)
        assert svc.context_used(conv.id) == reply.stats.context_used > 16
        assert svc.context_size == 1024
        return conv.id

    conv_id = run_with_service([cpu_spec(test_engines)], test_model, body)
    # Persistence across an app restart: a fresh store sees the conversation.
    with ConversationStore(AppPaths.from_environment().database_file) as store:
        conv = store.conversation(conv_id)
        assert conv is not None and conv.title == "Tell me about the moon"
        assert [m.role for m in store.messages(conv_id)] == ["user", "assistant"]


def test_a_running_engine_has_the_request_before_the_messages_are_announced(
        test_engines: Engines, test_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listeners build widgets for new messages: with the engine running, that work comes after the
    request reached it, so it overlaps the prompt's processing instead of delaying it."""
    # The fallback that announces anyway after 30 ms (a slow remote engine) is test_streaming's;
    # here it would only race a loaded machine's thread scheduling.
    monkeypatch.setattr("strata_gui.core.chat.announcer.ANNOUNCE_WAIT", 10.0)
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=4)
        await svc.send(conv.id, "warm up")
        sup = svc.supervisor
        assert sup is not None
        async with httpx.AsyncClient(trust_env=False) as fresh:  # not the reply's closing connection
            slots = (await fresh.get(sup.base_url + "/slots", headers=sup.auth_headers())).json()
        tasks_before = {s["id"]: s.get("id_task") for s in slots}
        engine_had_it: list[bool] = []

        def on_event(event: object) -> None:
            if isinstance(event, MessageAdded):
                # Blocking the loop here: only a request already written can reach the engine.
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    slots = httpx.get(sup.base_url + "/slots", headers=sup.auth_headers()).json()
                    if any(s.get("id_task") != tasks_before[s["id"]] for s in slots):
                        break
                    time.sleep(0.002)
                engine_had_it.append(time.monotonic() < deadline)

        svc.events.subscribe(on_event)
        reply = await svc.send(conv.id, "and again")
        assert reply.status == COMPLETE
        assert engine_had_it == [True, True]

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_stop_keeps_the_partial_reply_and_frees_the_slot(test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=900)
        task = asyncio.create_task(svc.send(conv.id, "Write a long story"))
        await until(lambda: sum(isinstance(e, MessageDelta) for e in events) >= 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        reply = svc.store.messages(conv.id)[-1]
        assert reply.status == STOPPED and reply.content and reply.stats.finish_reason == "stopped"
        # the meter counts at least what the stopped reply generated (it read 0 for such a session)
        assert svc.context_used(conv.id) >= 10
        sup = svc.supervisor
        assert sup is not None
        async with httpx.AsyncClient(trust_env=False) as http:
            for _ in range(100):
                slots = (await http.get(sup.base_url + "/slots", headers=sup.auth_headers())).json()
                if not any(s["is_processing"] for s in slots):
                    break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("slot still busy after Stop")

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_regenerate_and_edit_and_resend(test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=8)
        first = await svc.send(conv.id, "one")
        second = await svc.regenerate(conv.id)
        msgs = svc.store.messages(conv.id)
        assert [m.id for m in msgs] == [msgs[0].id, second.id] and second.id != first.id
        await svc.send(conv.id, "two")
        assert len(svc.store.messages(conv.id)) == 4
        user_one = msgs[0]
        edited = await svc.edit_and_resend(user_one.id, "one, edited")
        msgs = svc.store.messages(conv.id)
        assert [(m.role, m.content) for m in msgs][:1] == [("user", "one, edited")]
        assert [m.id for m in msgs][1:] == [edited.id] and edited.status == COMPLETE
        with pytest.raises(ChatError):
            await svc.edit_and_resend(edited.id, "not mine")

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_engine_killed_mid_reply_keeps_partial_and_restarts(test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=16)
        await svc.send(conv.id, "warm up")  # the first request succeeded: later failures are not fallbacks
        svc.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=900))
        # The random test model may end a reply early (end of sequence): ask again until one is
        # still streaming when the engine is killed.
        for attempt in range(5):
            task = asyncio.create_task(svc.send(conv.id, f"long answer please ({attempt})"))
            before = len(events)
            await until(lambda t=task, b=before: t.done() or sum(isinstance(e, MessageDelta) for e in events[b:]) >= 5)
            if not task.done():
                break
            await task
        assert svc.supervisor is not None and svc.supervisor.pid is not None
        os.kill(svc.supervisor.pid, signal.SIGKILL)
        with pytest.raises(ServerError, match="partial reply was kept") as info:
            await task
        assert "SIGKILL" in info.value.message
        partial = svc.store.messages(conv.id)[-1]
        assert partial.status == INTERRUPTED and partial.content
        assert svc.engine_state is ServerState.CRASHED
        again = await svc.send(conv.id, "are you back?")
        assert again.status == COMPLETE and svc.engine_state is ServerState.READY

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_first_request_failure_falls_back_and_resends(test_engines: Engines, test_model: Path) -> None:
    from dataclasses import replace

    plan = [cpu_spec(test_engines), replace(cpu_spec(test_engines), id="cpu-2", label="CPU (second)")]

    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=400)
        await svc.ensure_engine()
        first_pid = svc.supervisor.pid  # type: ignore[union-attr]
        task = asyncio.create_task(svc.send(conv.id, "hello"))
        await until(lambda: any(isinstance(e, MessageDelta) for e in events))
        os.kill(first_pid, signal.SIGKILL)  # type: ignore[arg-type]
        reply = await task
        assert reply.status == COMPLETE and reply.stats.engine == "CPU (second)"
        notices = [e for e in events if isinstance(e, Notice)]
        assert len(notices) == 1
        assert notices[0].text.startswith("CPU engine crashed while answering (exit code -9, killed by SIGKILL)")
        assert notices[0].text.endswith("Continuing on CPU (second).")
        msgs = svc.store.messages(conv.id)
        assert [m.role for m in msgs] == ["user", "assistant"]  # resent into the same reply, conversation kept
        assert svc.on_fallback_engine
        await svc.retry_preferred_engine()
        assert svc.engine is plan[0] and not svc.on_fallback_engine

    run_with_service(plan, test_model, body)


def test_bad_gguf_gives_a_clear_message_without_fallback(
    test_engines: Engines, broken_models: dict[str, Path],
) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        with pytest.raises(ServerError, match="could not load the model file"):
            await svc.send(conv.id, "hello")
        assert not any(isinstance(e, Notice) for e in events)
        assert svc.store.messages(conv.id)[0].content == "hello"  # the user's message was saved first

    run_with_service([cpu_spec(test_engines), cpu_spec(test_engines)], broken_models["bad_magic"], body)


def test_auto_fallback_off_reports_the_failure(test_engines: Engines, test_model: Path, tmp_path: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        with pytest.raises(ServerError, match="library it needs was not found"):
            await svc.ensure_engine()
        assert not any(isinstance(e, Notice) for e in events)

    plan = [rocm_without_libraries(test_engines, tmp_path), cpu_spec(test_engines)]
    run_with_service(plan, test_model, body, auto_fallback=False)


@pytest.mark.vulkan
@pytest.mark.slow
def test_broken_rocm_engines_fall_back_to_vulkan(test_engines: Engines, test_model: Path, tmp_path: Path) -> None:
    """(a) the Vulkan binary without its libraries, (b) a real server that segfaults while loading."""
    plan = [rocm_without_libraries(test_engines, tmp_path), rocm_crashing_during_load(test_engines, tmp_path),
            vulkan_spec(test_engines)]
    plan[1] = type(plan[1])(plan[1].id, "ROCm (crashing)", "rocm", plan[1].server_path, plan[1].env)

    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, max_tokens=4)
        reply = await svc.send(conv.id, "hi")
        assert reply.status == COMPLETE and reply.stats.engine == "Vulkan" and reply.stats.backend == "vulkan"
        notices = [e.text for e in events if isinstance(e, Notice)]
        assert notices[0].startswith("ROCm engine could not start: a library it needs was not found")
        assert notices[0].endswith("Continuing on ROCm (crashing).")
        assert notices[1] == ("ROCm (crashing) engine crashed while loading (exit code -11, killed by SIGSEGV)."
                              " Continuing on Vulkan.")
        assert [m.role for m in svc.store.messages(conv.id)] == ["user", "assistant"]

    run_with_service(plan, test_model, body, context_size=512)


def _history(svc: ChatService, conv_id: int, topic: str) -> None:
    """A conversation the engine has never seen (as after a restart): a system prompt and turns."""
    svc.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=4, seed=3),
                              system_prompt=f"You are a patient tutor of {topic}. " * 12)
    svc.store.add_messages(conv_id, [("user", f"Explain {topic} to me, step by step, with examples. " * 6),
                                     ("assistant", f"Here is {topic}: first the basics, then the details. " * 10)])


def test_the_conversation_in_view_is_read_ahead_so_its_next_reply_starts_from_the_cache(
        test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        seen, unseen = svc.new_conversation(), svc.new_conversation()
        _history(svc, seen.id, "tides")
        _history(svc, unseen.id, "volcanoes")
        svc.viewing(seen.id)  # no engine yet: nothing is loaded for it
        await svc.read_ahead_settled()  # a read it started (it must not) has ended here
        assert svc.running_engine is None and svc.last_read_ahead is None
        await svc.ensure_engine()  # the model loads: the conversation in view is read meanwhile
        await svc.read_ahead_settled()
        held = svc.last_read_ahead
        assert held is not None and held > 150
        reply = await svc.send(seen.id, "And the moon?")
        assert reply.status == COMPLETE
        # The whole history came from the cache; only the new message was read after sending.
        assert reply.stats.cache_n is not None and reply.stats.cache_n >= held - 2
        assert reply.stats.prompt_n is not None and reply.stats.prompt_n < 30
        assert f"{reply.stats.cache_n} of " in reply.stats.summary()
        # Off in Settings: nothing is read ahead, the next conversation's reply reads its whole prompt.
        svc.settings_service.update(read_ahead=False)
        svc.viewing(unseen.id)
        await svc.read_ahead_settled()
        assert svc.last_read_ahead == held
        cold = await svc.send(unseen.id, "And the moon?")
        assert cold.status == COMPLETE and (cold.stats.prompt_n or 0) > 150

    run_with_service([cpu_spec(test_engines)], test_model, body)


def test_a_message_sent_during_a_read_ahead_waits_for_its_own_and_stops_another(
        test_engines: Engines, test_model: Path) -> None:
    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        mine, other = svc.new_conversation(), svc.new_conversation()
        _history(svc, mine.id, "glaciers")
        _history(svc, other.id, "deserts")
        await svc.ensure_engine()
        # Sent at once after opening it: the reply waits for the read and continues from it.
        svc.viewing(mine.id)
        assert svc.reading_ahead
        reply = await svc.send(mine.id, "And in summer?")
        assert reply.status == COMPLETE
        assert reply.stats.cache_n is not None and reply.stats.cache_n > 150 and (reply.stats.prompt_n or 0) < 30
        # Another conversation opened, then a message sent in the first one: that read is stopped,
        # the message is answered.
        svc.viewing(other.id)
        reading = svc.read_ahead.task
        assert reading is not None and not reading.done()
        again = await svc.send(mine.id, "And in winter?")
        assert again.status == COMPLETE and reading.cancelled()
        assert not svc.reading_ahead
        # Clicking through: the read of the one passed over is stopped (while it holds the engine),
        # the one stopped at is read once it has let go.
        far = svc.new_conversation()
        _history(svc, far.id, "the history of the Atlantic ocean, its currents, storms and coasts " * 3)
        svc.viewing(far.id)
        engine = svc.running_engine
        assert engine is not None
        await until(lambda: engine.busy, timeout=5, interval=0.001)
        svc.viewing(other.id)
        await svc.read_ahead_settled()
        landed = await svc.send(other.id, "And at night?")
        assert landed.stats.cache_n is not None and landed.stats.cache_n > 150
        assert (landed.stats.prompt_n or 0) < 30

    run_with_service([cpu_spec(test_engines)], test_model, body, context_size=4096)


def test_a_reply_that_cannot_be_saved_still_ends_on_screen_and_says_why(test_engines: Engines,
                                                                       test_model: Path) -> None:
    """Another program holds the database's lock while a reply streams (a backup tool, a second
    copy of a sync client): the saves during the reply failed, the reply stopped with "the engine
    failed", and its bubble stayed "Generating…". Now the reply runs to its end, is shown as it
    ended, and the error says it could not be saved."""
    import sqlite3

    from strata_gui.core.base.errors import StorageError
    from strata_gui.core.chat.service import MessageUpdated

    async def body(svc: ChatService, events: list) -> None:  # type: ignore[type-arg]
        conv = svc.new_conversation()
        _short(svc, conv.id, 40)
        svc.streamer.save_interval = 0.0  # save at every piece, as a long reply does every second
        svc.store.db.execute("PRAGMA busy_timeout = 100")  # the app waits 5 s; the test need not
        other = sqlite3.connect(svc.store.path, timeout=0)
        sending = asyncio.create_task(svc.send(conv.id, "Tell me about the moon"))
        await until(lambda: any(isinstance(e, MessageDelta) for e in events))
        other.execute("BEGIN EXCLUSIVE")  # held until the reply is over
        try:
            with pytest.raises(StorageError):
                await sending
        finally:
            other.rollback()
            other.close()
        [final] = [e.message for e in events if isinstance(e, MessageUpdated) and e.message.role == "assistant"]
        deltas = "".join(e.text for e in events if isinstance(e, MessageDelta))
        assert final.status == COMPLETE and final.content == deltas and final.stats.predicted_n == 40

    run_with_service([cpu_spec(test_engines)], test_model, body)
