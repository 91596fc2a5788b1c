"""Remote engines through real servers: a second llama-server with an API key, an OpenAI-like one."""

from __future__ import annotations

import asyncio
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import ChatError, NetworkError
from strata_gui.core.chat.records import COMPLETE, FAILED
from strata_gui.core.chat.service import ChatService, MessageDelta
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import Settings, SettingsStore
from strata_gui.core.platform.logging_setup import close_logging, configure_logging
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.remote.service import RemoteService, normalize_base_url
from strata_gui.core.runtime.client import SamplingParams
from tests.support.engines import TestEngines, running_server
from tests.support.pool import real_pool
from tests.support.remote_server import WORDS, openai_like_server
from tests.support.settings import settings_service

KEY = "sk-remote-test-7f3a9c"


@pytest.fixture(scope="module")
def keyed_server(test_engines: TestEngines, test_model: Path) -> Iterator[str]:
    with running_server(test_engines.cpu_server, test_model, extra=["--api-key", KEY]) as base:
        yield base


def _remote(paths: AppPaths, http: httpx.AsyncClient) -> RemoteService:
    return RemoteService(paths.config_dir / "remote_engines.json", FileSecretStore(paths.config_dir / "secrets.json"),
                         http)


def test_base_url_normalized() -> None:
    assert normalize_base_url(" http://host:8000/v1/ ") == "http://host:8000"
    with pytest.raises(ChatError):
        normalize_base_url("host:8000")


def test_key_kept_out_of_settings_list_and_log(tmp_path: Path) -> None:
    paths = AppPaths.from_environment()
    paths.ensure()
    configure_logging(paths.log_file, verbose=True)
    try:
        SettingsStore(paths.settings_file).save(Settings())

        async def main() -> None:
            async with httpx.AsyncClient(trust_env=False) as http:
                svc = _remote(paths, http)
                ep = svc.add("lab", "http://127.0.0.1:9/v1", KEY)
                assert svc.get("lab").has_key and svc.api_key(ep) == KEY
                with pytest.raises(NetworkError):
                    await svc.list_models(ep)
                logging.getLogger("strata_gui").info("endpoints: %s", svc.endpoints())

        asyncio.run(main())
    finally:
        close_logging()
    secrets_file = paths.config_dir / "secrets.json"
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert KEY not in secrets_file.read_text()  # encoded; the user-only permission is the protection
    for f in (paths.settings_file, paths.config_dir / "remote_engines.json", paths.log_file):
        assert f.exists(), f
        assert KEY not in f.read_text(), f


@pytest.mark.engine
def test_right_key_lists_models_and_chats_with_stats(keyed_server: str) -> None:
    async def main() -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        async with httpx.AsyncClient(trust_env=False) as http:
            remote = _remote(paths, http)
            ep = remote.add("second box", keyed_server, KEY)
            models = await remote.list_models(ep)
            assert models
            ep = remote.set_model(ep, models[0])
            chat = ChatService(ConversationStore(paths.database_file).open(), real_pool(http),
                               http, settings_service())
            chat.set_remote(remote.client(ep))
            deltas: list[str] = []
            chat.events.subscribe(lambda e: deltas.append(e.text) if isinstance(e, MessageDelta) else None)
            conv = chat.new_conversation()
            chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=12, seed=1))
            try:
                msg = await chat.send(conv.id, "Say hello")
            finally:
                await chat.aclose()
                await chat.pool.aclose()
            assert msg.status == COMPLETE and msg.content and "".join(deltas) == msg.content
            assert msg.stats.decode_tps and msg.stats.ttft_s is not None and msg.stats.predicted_n
            assert msg.stats.backend == "remote" and msg.stats.engine == ep.label
            assert msg.ran_on == f"remote:{ep.label}"
            store = ConversationStore(paths.database_file).open()
            try:
                conv_after = store.conversation(conv.id)
                assert conv_after is not None and conv_after.ran_on == f"remote:{ep.label}"
            finally:
                store.close()

    asyncio.run(main())


@pytest.mark.engine
def test_wrong_key_is_a_clear_error(keyed_server: str) -> None:
    async def main() -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        async with httpx.AsyncClient(trust_env=False) as http:
            remote = _remote(paths, http)
            with pytest.raises(ChatError, match="rejected the API key"):
                await remote.add_checked("second box", keyed_server, "sk-wrong")
            assert remote.endpoints() == []  # not saved: it did not pass the check
            ep = remote.add("second box", keyed_server, "sk-wrong")
            with pytest.raises(ChatError, match="rejected the API key"):
                await remote.list_models(ep)
            chat = ChatService(ConversationStore(paths.database_file).open(), real_pool(http),
                               http, settings_service())
            chat.set_remote(remote.client(ep))
            conv = chat.new_conversation()
            try:
                with pytest.raises(ChatError, match="API key"):
                    await chat.send(conv.id, "hi")
                last = chat.store.messages(conv.id)[-1]
                assert last.status == FAILED and last.ran_on.startswith("remote:")
            finally:
                await chat.aclose()
                await chat.pool.aclose()

    asyncio.run(main())


def test_add_checked_saves_only_an_endpoint_that_answers() -> None:
    async def main() -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        with openai_like_server() as base:
            async with httpx.AsyncClient(trust_env=False) as http:
                remote = _remote(paths, http)
                ep, models = await remote.add_checked(" lab ", base + "/v1/", "sk-lab")
                assert models == ["org/Model-7B"]
                assert (ep.name, ep.base_url, ep.model, ep.has_key) == ("lab", base, "org/Model-7B", True)
                assert remote.endpoints() == [ep] and remote.api_key(ep) == "sk-lab"
                # Checking the same name against an address where nothing answers: explained, and
                # the endpoint saved before is left exactly as it was (key included).
                with pytest.raises(NetworkError, match=r"Could not reach lab at http://127\.0\.0\.1:9"):
                    await remote.add_checked("lab", "http://127.0.0.1:9", "sk-other")
                assert remote.endpoints() == [ep] and remote.api_key(ep) == "sk-lab"
                with pytest.raises(ChatError, match="answered 404"):
                    await remote.add_checked("other", base + "/nothing-here")
                with pytest.raises(ChatError, match="needs a name"):
                    await remote.add_checked("  ", base)
                assert [e.name for e in remote.endpoints()] == ["lab"]
                # A chosen model is kept rather than replaced by the server's first.
                ep2, _ = await remote.add_checked("pinned", base, model="org/Other")
                assert ep2.model == "org/Other" and not ep2.has_key

    asyncio.run(main())


def test_server_without_timings_gets_client_side_stats() -> None:
    async def main() -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        words = WORDS * 5  # 30 pieces 10 ms apart: enough to make a rate of
        with openai_like_server(words=words) as base:
            async with httpx.AsyncClient(trust_env=False) as http:
                remote = _remote(paths, http)
                ep = remote.add("vllm", base)
                assert await remote.list_models(ep) == ["org/Model-7B"]
                ep = remote.set_model(ep, "org/Model-7B")
                reply = await remote.client(ep).stream([{"role": "user", "content": "hi"}])
        assert reply.text == "".join(words)
        s = reply.stats
        assert s.prefill_tps is None  # the server did not say
        assert s.predicted_n == len(words) and s.prompt_n == 9
        assert s.decode_tps is not None and 0 < s.decode_tps < 200 and s.extra.get("client_side")
        assert s.engine == "vllm · org/Model-7B"

    asyncio.run(main())


def test_a_reply_of_a_few_pieces_gets_no_client_side_rate() -> None:
    """Three network chunks said to hold 400 tokens, all in some 30 ms: no rate can be made of that
    (it read 3,651 tok/s); the count is still shown."""
    async def main() -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        with openai_like_server(words=["One", " two", " three."], completion_tokens=400) as base:
            async with httpx.AsyncClient(trust_env=False) as http:
                remote = _remote(paths, http)
                ep = remote.set_model(remote.add("vllm", base), "org/Model-7B")
                reply = await remote.client(ep).stream([{"role": "user", "content": "hi"}])
        s = reply.stats
        assert s.predicted_n == 400 and s.decode_tps is None and "client_side" not in s.extra
        assert "tok/s" not in s.summary() and "400 tokens generated" in s.summary()

    asyncio.run(main())
