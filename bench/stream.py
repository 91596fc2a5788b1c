"""Streaming overhead of Strata's chat path against a raw httpx client, on one real engine.

Interleaved repetitions on the same llama-server and prompt:
  * raw:    httpx streaming + minimal SSE parsing, nothing else;
  * strata: ChatService -> ChatClient -> events -> ChatPage widgets (offscreen Qt, qasync loop).
Each token is stamped when the client can show it: for raw, when its piece is parsed; for strata,
when the message's text widget first *paints* with that token in its rendered text (what the user
sees, so batching and frame pacing are charged to Strata). TTFT is the first stamp after the
request starts; the decode rate is the tokens after the first divided by the time from the first
to the last stamp. While each stream runs, a probe task measures how late the event loop wakes it
(the longest stall the UI would feel), and the process CPU time per reply is recorded (less noisy
than rates when other work loads the machine).

With --replay RATE, one reply of the engine is recorded and both paths then read it from a
loopback server (its own process) that sends it at RATE tokens/s: the engine no longer competes for
the CPU, so the figures show the client's own overhead even while other work loads the machine
(the streamed text is the same; Strata answers through its remote-engine path; the engine tok/s
column is then the recorded reply's).

With --content markdown or thinking, the replayed reply is not the test model's (random words) but a
long reply as a real model writes one, framed exactly as llama-server sends it (the chunks of a
capture in tests/data/chat/streams): ``markdown`` is --tokens tokens (default 8,000) of Markdown with
fenced code in Python, Rust and TypeScript, tables, nested lists and inline math
(bench/data/long-reply.md, repeated); ``thinking`` is --thinking tokens (default 2,000) of
``reasoning_content`` deltas, then --tokens (default 1,000) of that Markdown as ``content``. The
decode rate is the answer's (both paths stamp answer tokens only); the stall probe covers the whole
reply, thinking included. These need no engine (--replay defaults to 2,000 tok/s).

Usage: python bench/stream.py [--engine DIR] [--model FILE] [--reps 5] [--tokens 512] [--replay 1000]
                              [--content engine|markdown|thinking] [--thinking 2000]
Defaults: the CPU test engine from ~/.cache/strata-dev/engines.env and the generated test model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from PySide6.QtWidgets import QApplication

from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.client import ChatClient, SamplingParams
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.supervisor import ServerSupervisor
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.chat.message_widget import CodeBlock, MessageWidget, TextBlock
from strata_gui.ui.event_loop import new_event_loop
from strata_gui.ui.pages.chat_page import ChatPage
from tests.support.engines import bench_engine_and_model

PROMPT = "Write a long story about a lighthouse keeper."


class StallProbe:
    """Wakes every millisecond; records the worst lateness while running."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - t - 0.001)

    def __enter__(self) -> StallProbe:
        self.worst = 0.0
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def rates(stamps: list[float], start: float) -> tuple[float, float]:
    ttft = stamps[0] - start
    span = stamps[-1] - stamps[0]
    # A reply that appeared in one paint did not stream at all: rate 0, not infinity.
    decode = (len(stamps) - 1) / span if len(stamps) > 1 and span > 0 else 0.0
    return ttft, decode


Sample = tuple[float, float, float, int, float, float]
# ttft s, decode tok/s, worst stall s, pieces, server tok/s, process CPU s


class PaintRecorder:
    """Records when the reply's text is painted, and how much of it each paint showed.

    Installed once, before any message widget exists: the text blocks' ``paintEvent`` is wrapped
    at class level (one Python call per paint, nothing per token), and the client's ``on_piece``
    is wrapped to learn where each answer token ends in the reply text.
    """

    def __init__(self) -> None:
        self.paints: list[tuple[float, int]] = []  # (time, length of the rendered reply text)
        self.ends: list[int] = []  # cumulative text length after each token
        self.earlier: set[int] = set()  # messages shown before the reply (theirs are not its paints)
        recorder = self
        for cls in (TextBlock, CodeBlock):
            base_paint = cls.paintEvent

            def paint(widget: Any, event: Any, _base: Any = base_paint) -> None:
                _base(widget, event)
                owner = widget.parentWidget()
                if (isinstance(owner, MessageWidget) and owner.message.role == "assistant"
                        and owner.message.id not in recorder.earlier):
                    recorder.paints.append((time.perf_counter(), len(owner.rendered_text)))

            cls.paintEvent = paint  # type: ignore[method-assign]
        stream = ChatClient.stream

        async def counted(client: ChatClient, messages: Any, *, on_piece: Any = None, **kw: Any) -> Any:
            def piece(p: Any) -> None:
                if p.kind == "answer":
                    recorder.ends.append((recorder.ends[-1] if recorder.ends else 0) + len(p.text))
                on_piece(p)

            return await stream(client, messages, on_piece=piece if on_piece else None, **kw)

        ChatClient.stream = counted  # type: ignore[method-assign,assignment]

    def reset(self, earlier: set[int]) -> None:
        self.paints, self.ends, self.earlier = [], [], earlier

    def shown_all(self) -> bool:
        """Whether the whole reply has been painted."""
        return bool(self.ends and self.paints) and self.paints[-1][1] >= self.ends[-1]

    def stamps(self) -> list[float]:
        """When each token was first painted."""
        out: list[float] = []
        paints = iter(self.paints)
        t, shown = next(paints, (math.inf, 0))
        for end in self.ends:
            while shown < end:
                t, shown = next(paints, (math.inf, 1 << 62))
            out.append(t)
        if out and out[-1] == math.inf:
            raise SystemExit("the end of the reply was never painted")
        return out


async def raw_once(http: httpx.AsyncClient, base: str, sampling: SamplingParams,
                   headers: dict[str, str] | None = None) -> Sample:
    body = {"messages": [{"role": "user", "content": PROMPT}], "stream": True, **sampling.to_request()}
    stamps: list[float] = []
    server_rate = 0.0
    cpu = time.process_time()
    with StallProbe() as probe:
        start = time.perf_counter()
        async with http.stream("POST", base + "/v1/chat/completions", json=body, headers=headers, timeout=None) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    delta = chunk["choices"]
                    if delta and delta[0]["delta"].get("content"):
                        stamps.append(time.perf_counter())
                    if "timings" in chunk:
                        server_rate = chunk["timings"]["predicted_per_second"]
    cpu = time.process_time() - cpu
    ttft, decode = rates(stamps, start)
    return ttft, decode, probe.worst, len(stamps), server_rate, cpu


async def strata_once(service: ChatService, page: ChatPage, sampling: SamplingParams,
                      recorder: PaintRecorder) -> Sample:
    conv_id = page.new_conversation()
    service.store.update_settings(conv_id, sampling=sampling)
    await asyncio.sleep(0.05)  # the new conversation is painted before the user sends, as in use
    recorder.reset(set(page.message_widgets))
    with StallProbe() as probe:
        cpu = time.process_time()
        start = time.perf_counter()
        handle = page.send_text(PROMPT)
        assert handle is not None
        await handle.wait()
        deadline = time.perf_counter() + 1.0
        while not recorder.shown_all() and time.perf_counter() < deadline:
            await asyncio.sleep(0.002)  # the last text is painted after the reply is saved
        cpu = time.process_time() - cpu
    if handle.error is not None:
        raise SystemExit(f"strata path failed: {handle.error}")
    ttft, decode = rates(recorder.stamps(), start)
    return ttft, decode, probe.worst, len(recorder.ends), float(handle.result.stats.decode_tps or 0.0), cpu


def bench_spec(engine_dir: Path) -> EngineSpec:
    """The raw CPU test engine as a launch spec (the benchmark measures the chat path, not the resolver)."""
    return EngineSpec("bench-cpu", "CPU", Backend.CPU, TEXT.executable(engine_dir),
                      {"LD_LIBRARY_PATH": str(engine_dir)})


class ReplayEngine:
    """Strata's seam for an engine it does not manage, pointed at the replay server."""

    label = "replay"

    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self._client = ChatClient(http, base)

    async def stream(self, messages: Any, **kw: Any) -> Any:
        return await self._client.stream(messages, **kw)  # as RemoteChat passes them


async def record_reply(http: httpx.AsyncClient, base: str, sampling: SamplingParams,
                       headers: dict[str, str] | None = None) -> bytes:
    body = {"messages": [{"role": "user", "content": PROMPT}], "stream": True,
            "stream_options": {"include_usage": True}, **sampling.to_request()}
    async with http.stream("POST", base + "/v1/chat/completions", json=body, headers=headers, timeout=None) as resp:
        return await resp.aread()


DATA = Path(__file__).resolve().parent / "data"
CAPTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "chat" / "streams" / "reasoning-then-content.sse"
# Roughly how a BPE vocabulary cuts English and code: a word (with its leading space) up to six
# letters, up to three digits, a run of whitespace, or one other character.
TOKEN = re.compile(r" ?[A-Za-z]{1,6}| ?[0-9]{1,3}|[ \t]*\n|[ \t]+|[^A-Za-z0-9\s]")


def tokens_of(template: str, count: int) -> list[str]:
    """``count`` tokens of ``template`` repeated, each copy with its number in place of ``{n}``."""
    out: list[str] = []
    n = 1
    while len(out) < count:
        out += TOKEN.findall(template.replace("{n}", str(n)))
        n += 1
    return out[:count]


def synthetic_reply(content: str, answer_tokens: int, thinking_tokens: int) -> bytes:
    """A long reply in llama-server's SSE framing (chunk layout taken from a real capture).

    ``markdown``: ``answer_tokens`` of Markdown as ``content`` deltas; ``thinking``: first
    ``thinking_tokens`` of ``reasoning_content`` deltas, then the answer.
    """
    first = json.loads(CAPTURE.read_text(encoding="utf-8").split("\n\n")[0].removeprefix("data: "))
    envelope = {k: v for k, v in first.items() if k != "choices"}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {"choices": [{"finish_reason": finish, "index": 0, "delta": delta}], **envelope, **extra}
        return b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"

    events = [chunk({"role": "assistant", "content": None})]
    if content == "thinking":
        events += [chunk({"reasoning_content": t})
                   for t in tokens_of((DATA / "thinking.md").read_text(encoding="utf-8"), thinking_tokens)]
    answer = tokens_of((DATA / "long-reply.md").read_text(encoding="utf-8"), answer_tokens)
    events += [chunk({"content": t}) for t in answer]
    n = len(events) - 1
    timings = {"cache_n": 0, "prompt_n": 12, "prompt_ms": 10.0, "prompt_per_token_ms": 0.83,
               "prompt_per_second": 1200.0, "predicted_n": n, "predicted_ms": n * 0.5,
               "predicted_per_token_ms": 0.5, "predicted_per_second": 2000.0}
    events.append(chunk({}, "stop", timings=timings))
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


def serve_replay(recording: Path, port_file: Path, rate: float) -> None:
    """Serve the recorded SSE reply to every POST, one event per 1/rate s (runs in its own process)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    events = [e + b"\n\n" for e in recording.read_bytes().split(b"\n\n") if e.strip()]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # One small write per token: without this, Nagle's algorithm holds the first event
            # until the client's delayed ACK (40 ms), which the engine's replies never showed.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            start = time.perf_counter()
            for i, event in enumerate(events):
                wait = start + i / rate - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


def main() -> int:
    if sys.argv[1:2] == ["--serve-replay"]:
        serve_replay(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", type=Path)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--tokens", type=int, default=None,
                    help="tokens per reply (answer tokens with --content; default 512, markdown 8,000, thinking 1,000)")
    ap.add_argument("--replay", type=float, metavar="RATE",
                    help="replay one recorded reply at RATE tokens/s instead of asking the engine each time")
    ap.add_argument("--content", choices=("engine", "markdown", "thinking"), default="engine",
                    help="what is replayed: the engine's reply, or a long Markdown or thinking reply")
    ap.add_argument("--thinking", type=int, default=2000, help="thinking tokens before the answer (--content thinking)")
    args = ap.parse_args()
    synthetic = args.content != "engine"
    if args.tokens is None:
        args.tokens = {"engine": 512, "markdown": 8000, "thinking": 1000}[args.content]
    if synthetic and not args.replay:
        args.replay = 2000.0
    engine_dir, model = bench_engine_and_model() if not (args.engine and args.model) else (args.engine, args.model)
    engine_dir = args.engine or engine_dir
    model = args.model or model

    app = QApplication([])
    loop = new_event_loop(app)
    workdir = tempfile.TemporaryDirectory()

    async def run() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            store = ConversationStore(Path(workdir.name) / "bench.sqlite3").open()
            pool = EnginePool(lambda e, m, s: ServerSupervisor(e, m, s, http=http))
            service = ChatService(store, pool, http,
                                  SettingsService(SettingsStore(Path(workdir.name) / "settings.json"),
                                                  Settings(context_size=args.tokens + 512, last_model=str(model))))
            service.set_plan([bench_spec(engine_dir)])
            recorder = PaintRecorder()
            replay: subprocess.Popen[bytes] | None = None
            page = ChatPage(service, AsyncBridge())
            page.resize(1000, 700)
            page.show()
            try:
                sampling = SamplingParams(max_tokens=args.tokens, seed=7, temperature=1.0)
                base, key = "", dict[str, str]()
                if not synthetic:
                    await service.ensure_engine()
                    sup = service.supervisor
                    assert sup is not None
                    base, key = sup.base_url, sup.auth_headers()  # the engine takes Strata's key only
                if args.replay:
                    recording = Path(workdir.name) / "reply.sse"
                    if synthetic:
                        recording.write_bytes(synthetic_reply(args.content, args.tokens, args.thinking))
                    else:
                        recording.write_bytes(await record_reply(http, base, sampling, key))
                        await service.stop_engine()
                    port_file = Path(workdir.name) / "replay.port"
                    replay = subprocess.Popen([sys.executable, __file__, "--serve-replay",  # noqa: ASYNC220 (starts at once)
                                               str(recording), str(port_file), str(args.replay)])
                    while not port_file.exists() or not port_file.read_text():
                        await asyncio.sleep(0.05)
                    base = f"http://127.0.0.1:{port_file.read_text()}"
                    service.set_remote(ReplayEngine(http, base))
                await raw_once(http, base, sampling, key)  # warm-up: prompt cache, page-in
                await strata_once(service, page, sampling, recorder)
                raw: list[Sample] = []
                strata: list[Sample] = []
                for _ in range(args.reps):
                    raw.append(await raw_once(http, base, sampling, key))
                    strata.append(await strata_once(service, page, sampling, recorder))
            finally:
                if replay is not None:
                    replay.terminate()
                    replay.wait()
                await service.aclose()
                await pool.aclose()
                page.deleteLater()
        med = statistics.median
        r_ttft, s_ttft = med(x[0] for x in raw), med(x[0] for x in strata)
        r_dec, s_dec = med(x[1] for x in raw), med(x[1] for x in strata)
        source = f"replayed at {args.replay:,.0f} tok/s" if args.replay else f"engine {engine_dir}"
        kind = {"engine": f"model {model.name}", "markdown": "long Markdown reply",
                "thinking": f"thinking reply ({args.thinking} thinking tokens, then the answer)"}[args.content]
        print(f"{source}  {kind}  reps {args.reps}  answer tokens/reply ~{strata[0][3]}"
              f"  load {os.getloadavg()[0]:.2f} (1 min)  cores {os.cpu_count()}")
        print(f"{'path':8} {'TTFT ms':>9} {'decode tok/s':>13} {'worst stall ms':>15} {'engine tok/s':>13}"
              f" {'CPU ms/reply':>13}")
        for name, rows in (("raw", raw), ("strata", strata)):
            print(f"{name:8} {med(x[0] for x in rows) * 1000:9.1f} {med(x[1] for x in rows):13.1f}"
                  f" {max(x[2] for x in rows) * 1000:15.1f} {med(x[4] for x in rows):13.1f}"
                  f" {med(x[5] for x in rows) * 1000:13.1f}")
        print("pairs (decode ratio / TTFT diff ms / engine tok/s raw:strata):")
        print("  " + "  ".join(f"{s[1] / r[1]:.3f}/{(s[0] - r[0]) * 1000:+.1f}/{r[4]:.0f}:{s[4]:.0f}"
                               for r, s in zip(raw, strata, strict=True)))
        pair_ratio = med(s[1] / r[1] for r, s in zip(raw, strata, strict=True))
        pair_ttft = med(s[0] - r[0] for r, s in zip(raw, strata, strict=True))
        print(f"decode ratio strata/raw: {s_dec / r_dec:.3f} (medians), {pair_ratio:.3f} (median of"
              " adjacent pairs, robust to load drift)   (goal >= 0.98)")
        print("(engine tok/s is the engine's own decode rate: on a shared CPU it drops when the client"
              " uses CPU, so the ratio mixes client overhead with CPU contention)")
        print(f"TTFT difference strata-raw: {(s_ttft - r_ttft) * 1000:+.1f} ms (medians),"
              f" {pair_ttft * 1000:+.1f} ms (pairs)   (goal <= +5 ms)")
        print(f"longest event-loop stall while streaming (strata): {max(x[2] for x in strata) * 1000:.1f} ms"
              "   (goal <= 16 ms)")
        print("  per reply: " + "  ".join(f"{x[2] * 1000:.1f}" for x in strata)
              + "   (raw: " + "  ".join(f"{x[2] * 1000:.1f}" for x in raw) + ")")

    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
        workdir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
