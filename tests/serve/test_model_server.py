"""Strata as this machine's model server, through the composed core and the real client libraries:
every library model on demand from the engine pool (the real CPU engine), shared with the chat."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anthropic
import httpx
import ollama
import openai
import psutil
import pytest

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.pool import EngineStateChanged, EngineUnloaded, PoolEvent
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.launch import ServerState
from strata_gui.core.serve.server import route_table
from tests.runtime.conftest import templated_model
from tests.support import gguf_model
from tests.support.engines import TestEngines, free_port
from tests.support.poll import until, wait_until

pytestmark = pytest.mark.engine

T = TypeVar("T")
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, test_model: Path) -> Path:
    """A models folder: two chat models and an embedding model (a pooling type in its header)."""
    folder = tmp_path_factory.mktemp("library")
    shutil.copy2(test_model, folder / "alpha-F16.gguf")
    gguf_model.write_model(folder / "bravo-F16.gguf", gguf_model.ModelSpec(seed=99, name="Bravo"))
    gguf_model.write_model(folder / "embed-F16.gguf", gguf_model.ModelSpec(seed=5, name="Embed", pooling=1))
    gguf_model.write_model(folder / "rerank-Q8_0.gguf", gguf_model.ModelSpec(**gguf_model.RERANKER_SPEC_ARGS))
    return folder


def serving(library: Path, engines: TestEngines, body: Callable[[AppServices, str, list[PoolEvent]], Awaitable[T]],
            **settings: object) -> T:
    """The composed core with the CPU engine and ``library`` as its model folder, serving on a free
    port; ``body(app, root_url, pool_events)``."""

    async def main() -> T:
        app = build_app_services(build_services())
        events: list[PoolEvent] = []
        app.pool.events.subscribe(events.append)
        try:
            app.settings.update(model_dirs=[str(library)], serve_port=free_port(), **settings)
            await app.prepare()
            await app.engines.add_local(engines.cpu_dir, "cpu")
            url = await app.serve.start()
            return await body(app, url.removesuffix("/v1"), events)
        finally:
            await app.aclose()

    return asyncio.run(main())


def started(events: list[PoolEvent], model: str) -> int:
    return sum(1 for e in events if isinstance(e, EngineStateChanged) and e.state is ServerState.STARTING
               and e.engine.model.name == model)


def test_the_library_is_served_models_load_on_demand_are_reused_and_evicted(
        library: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, events: list[PoolEvent]) -> None:
        async with openai.AsyncOpenAI(base_url=root + "/v1", api_key="none", max_retries=0) as client:
            ids = sorted(m.id for m in (await client.models.list()).data)
            assert ids == ["alpha-F16", "bravo-F16", "embed-F16", "rerank-Q8_0"]
            assert app.pool.engines() == []  # listing loads nothing
            for _ in range(2):
                reply = await client.chat.completions.create(
                    model="alpha-F16", max_tokens=4, messages=[{"role": "user", "content": "hi"}])
                assert reply.choices[0].message is not None
            assert started(events, "alpha-F16.gguf") == 1  # loaded once, then reused
            stream = await client.chat.completions.create(
                model="bravo-F16", max_tokens=4, stream=True, messages=[{"role": "user", "content": "hi"}])
            chunks = [c async for c in stream]
            assert chunks
        # The budget holds one model: bravo made room by unloading alpha (idle) first.
        [unloaded] = [e for e in events if isinstance(e, EngineUnloaded)]
        assert unloaded.engine.model.name == "alpha-F16.gguf" and "make room" in unloaded.reason
        async with ollama.AsyncClient(host=root) as o:
            ps = await o.ps()
            assert [m.model for m in ps.models] == ["bravo-F16"]
            tags = await o.list()
            assert {m.model for m in tags.models} >= {"alpha-F16", "bravo-F16", "embed-F16"}

    # Each model's estimate is ~330 MiB (its compute buffers): 500 MiB holds one at a time.
    serving(library, test_engines, body, engine_memory_mb=500)


def test_ps_tells_the_context_the_model_was_loaded_with(library: Path, test_engines: TestEngines) -> None:
    """/api/ps said the context the file was trained on (4,096) for an engine running 1,024."""
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with ollama.AsyncClient(host=root) as o:
            assert (await o.generate(model="alpha-F16", prompt="")).done_reason == "load"
            [loaded] = (await o.ps()).models
            [engine] = app.pool.engines()
            assert engine.settings.ctx_size == 1024 and loaded.context_length == 1024
            assert (await o.show("alpha-F16")).modelinfo["llama.context_length"] == 4096  # the trained one

    serving(library, test_engines, body, context_size=1024)


def test_embeddings_concurrent_loads_and_keep_alive(library: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, events: list[PoolEvent]) -> None:
        async with openai.AsyncOpenAI(base_url=root + "/v1", api_key="none", max_retries=0) as client:
            emb = await client.embeddings.create(model="embed-F16", input=["hello", "world"])
            assert len(emb.data) == 2 and len(emb.data[0].embedding) == 64
            # A chat model cannot answer as an embedding model without asking for it by kind; an
            # embedding model is no chat model: refused, saying which kind it is.
            with pytest.raises(openai.BadRequestError, match="kind 'embedding'"):
                await client.chat.completions.create(model="embed-F16", max_tokens=2,
                                                     messages=[{"role": "user", "content": "hi"}])
            # Ten requests while bravo loads start its engine once.
            replies = await asyncio.gather(*(client.chat.completions.create(
                model="bravo-F16", max_tokens=3, messages=[{"role": "user", "content": f"hi {i}"}])
                for i in range(10)))
            assert len(replies) == 10
            assert started(events, "bravo-F16.gguf") == 1
        async with ollama.AsyncClient(host=root) as o:
            vectors = await o.embed(model="embed-F16", input="hello")
            assert len(vectors.embeddings) == 1
            # keep_alive: unloaded a moment after the request, while the others stay.
            await o.generate(model="alpha-F16", prompt="hi", options={"num_predict": 2}, keep_alive="1s")
            assert app.pool.engine_for(library / "alpha-F16.gguf", TEXT) is not None
            await until(lambda: app.pool.engine_for(library / "alpha-F16.gguf", TEXT) is None, 15)
            assert app.pool.engine_for(library / "bravo-F16.gguf", TEXT) is not None

    serving(library, test_engines, body)


def test_the_chat_and_the_api_share_one_engine(library: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, events: list[PoolEvent]) -> None:
        app.chat.set_model(library / "alpha-F16.gguf", remember=False)
        conv = app.chat.new_conversation()
        app.chat.store.update_settings(conv.id, system_prompt="")
        await app.chat.send(conv.id, "hello")
        chat_engine = app.chat.running_engine
        assert chat_engine is not None
        async with anthropic.AsyncAnthropic(base_url=root, api_key="none", max_retries=0) as a:
            reply = await a.messages.create(model="alpha-F16", max_tokens=4,
                                            messages=[{"role": "user", "content": "hi"}])
            assert reply.content
        assert started(events, "alpha-F16.gguf") == 1 and app.chat.running_engine is chat_engine
        loaded = app.serve.router.loaded()
        assert [(m.model.id, m.engine) for m in loaded] == [("alpha-F16", chat_engine.spec.label)]

    serving(library, test_engines, body)


def test_a_wrong_key_is_refused_on_every_route(library: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        assert app.serve.server is not None
        table = route_table(app.serve.server.app)
        # The routes that change the library are among them (Ollama's pull, copy, delete).
        assert {("POST", "/api/pull"), ("POST", "/api/copy"), ("DELETE", "/api/delete")} <= set(table)
        async with httpx.AsyncClient(trust_env=False) as http:
            for method, path in table:
                if path in ("/health", "/"):  # liveness probes, open to all
                    continue
                url = root + path.replace("{model}", "alpha-F16")
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"}):
                    resp = await http.request(method, url, headers=headers, json={"model": "alpha-F16"})
                    assert resp.status_code == 401, (method, path, headers, resp.text)
            key = app.serve.api_key() or ""
            ok = await http.get(root + "/api/tags", headers={"Authorization": f"Bearer {key}"})
            assert ok.status_code == 200
        assert app.pool.engines() == []  # nothing was loaded for a refused request

    def with_key(app: AppServices) -> None:
        app.serve.generate_key()

    async def keyed(app: AppServices, root: str, events: list[PoolEvent]) -> None:
        await app.serve.stop()
        with_key(app)
        url = await app.serve.start()
        await body(app, url.removesuffix("/v1"), events)

    serving(library, test_engines, keyed)


def test_anthropic_stream_carries_thinking_for_a_reasoning_template(tmp_path: Path, test_engines: TestEngines) -> None:
    folder = tmp_path / "reasoning"
    folder.mkdir()
    templated_model(folder, test_engines.llama_src, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")

    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with anthropic.AsyncAnthropic(base_url=root, api_key="none", max_retries=0) as a:
            kinds: list[str] = []
            thinking: list[str] = []
            async with a.messages.stream(model="deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", max_tokens=24,
                                         messages=[{"role": "user", "content": "why?"}]) as stream:
                async for event in stream:
                    if event.type == "content_block_start":
                        kinds.append(event.content_block.type)
                    if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                        thinking.append(event.delta.thinking)
            assert kinds and kinds[0] == "thinking" and "".join(thinking)

    serving(folder, test_engines, body)


def test_strata_serve_runs_headless_and_stops_on_ctrl_c(library: Path, test_engines: TestEngines,
                                                       tmp_path: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    build_services().settings_service.update(model_dirs=[str(library)])  # the user's models folder
    subprocess.run([sys.executable, "-m", "strata_gui", "engines", "add-local", str(test_engines.cpu_dir),
                    "--backend", "cpu"], env=env, check=True, capture_output=True)
    port = free_port()
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "strata_gui", "serve", "--port", str(port),
                             "--log-requests", str(log)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: _answers(f"http://127.0.0.1:{port}/health"), 60)
        with httpx.Client(trust_env=False, timeout=60) as http:
            tags = http.get(f"http://127.0.0.1:{port}/api/tags").json()
            assert {m["name"] for m in tags["models"]} >= {"alpha-F16", "bravo-F16"}
            reply = http.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                              json={"model": "bravo-F16", "max_tokens": 3,
                                    "messages": [{"role": "user", "content": "hi"}]})
            assert reply.status_code == 200
        engines = [p for p in psutil.Process(proc.pid).children(recursive=True)]
        assert engines and all("llama-server" in p.name() for p in engines)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "serving 4 models" in out and "Traceback" not in err, err
    # --log-requests: one JSON line per model request (the listing is no model request).
    [line] = log.read_text(encoding="utf-8").splitlines()
    logged = json.loads(line)
    assert (logged["path"], logged["model"], logged["status"], logged["client"]) == \
        ("/v1/chat/completions", "bravo-F16", 200, "127.0.0.1")
    assert logged["output_tokens"] == 3 and logged["wait_s"] >= 0 and logged["request_body"] is None
    assert not [p for p in engines if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


PASSAGES = ["A cat is a small furry animal that purrs.", "The stock market fell sharply on Monday.",
            "Kittens grow into cats within a year.", "Rain is expected over the weekend."]


def test_a_reranker_is_served_as_its_own_kind_and_other_kinds_are_refused_before_loading(
        library: Path, test_engines: TestEngines) -> None:
    """/v1/rerank and /rerank (llama-server's shape) run the reranker GGUF on the real engine started
    with --reranking; a chat model named there is refused with a 400 naming its kind, and no engine
    starts for it (the pool's events say so)."""
    async def body(app: AppServices, root: str, events: list[PoolEvent]) -> None:
        async with openai.AsyncOpenAI(base_url=root + "/v1", api_key="none", max_retries=0) as client:
            kinds = {m.id: m.model_extra["kind"] for m in (await client.models.list()).data if m.model_extra}
            assert kinds["rerank-Q8_0"] == "rerank"
            # No client library here has a rerank call (openai, ollama and anthropic have none):
            # the request goes through the OpenAI client's raw POST, as RAG tools send it.
            with pytest.raises(openai.BadRequestError, match="kind 'text'") as err:
                await client.post("/rerank", cast_to=httpx.Response,
                                  body={"model": "alpha-F16", "query": "cats", "documents": PASSAGES})
            assert "reranker" in str(err.value)
            with pytest.raises(openai.BadRequestError, match="kind 'rerank'"):
                await client.chat.completions.create(model="rerank-Q8_0", max_tokens=2,
                                                     messages=[{"role": "user", "content": "hi"}])
            assert app.pool.engines() == [] and started(events, "alpha-F16.gguf") == 0
            reply = await client.post("/rerank", cast_to=httpx.Response,
                                      body={"model": "rerank-Q8_0", "query": "cats", "documents": PASSAGES,
                                            "top_n": 3})
            data = reply.json()
        assert data["model"] == "rerank-Q8_0" and data["usage"]["prompt_tokens"] > 0
        results = data["results"]
        assert len(results) == 3 and {r["index"] for r in results} <= set(range(len(PASSAGES)))
        scores = [r["relevance_score"] for r in results]
        assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
        [engine] = app.pool.engines()
        assert engine.kind.name == "rerank"  # started with --reranking: llama-server refuses /rerank otherwise
        # llama-server's own path (no /v1), TEI's request shape ("texts"): a list of {index, score}.
        r = await app.local_http.post(root + "/rerank", json={"model": "rerank-Q8_0", "query": "cats",
                                                               "texts": PASSAGES[:2]})
        assert r.status_code == 200 and sorted(x["index"] for x in r.json()) == [0, 1]
        assert started(events, "rerank-Q8_0.gguf") == 1

    serving(library, test_engines, body)
