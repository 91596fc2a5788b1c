"""Cold path to the first token: the app, the CLI and the local API against starting llama-server by hand.

Every Strata side runs as a fresh process with an installed engine (``strata engines add-local``)
in a fresh ``STRATA_HOME``; every baseline is a script (this file with ``--raw-child``, standard
library only) that starts the same llama-server command line Strata used (read from Strata's log,
its port changed), polls ``/health`` every 10 ms and sends the same request. Pairs are
interleaved and reported as medians of per-pair ratios (robust to load drift on a shared machine).

* floor (with app): the baseline's script plus a bare PySide6 window (a label and a line edit,
  shown while the server loads) that paints the first token: what any PySide6 app pays at least,
  so the share of the goal left to Strata's own work is visible.
* app: ``strata`` (the GUI) started with the last model chosen and the first-run guide done (so the
  warm start launches that model's engine before Qt is imported, as for users); as soon as the
  window is usable (every sidebar entry there, the chat page built) a message is sent in a new chat;
  measured to the first *painted* token of the reply (then the reply is stopped and the app
  quits). Baseline: the script above, to the first streamed content token. Goal <= 1.5x.
* cli: ``strata chat --model M --max-tokens 8 --seed 7 "hi"``, the process's whole wall time.
  Baseline: the script, to the end of the same streamed reply. Goal <= 2.0x.
* api: ``strata serve --model M`` running (it answers ``/v1/models``), the first request to the
  model, which nothing has loaded yet; against the same request by hand (engine start included).

Usage: python bench/coldstart.py [--engine DIR] [--model FILE] [--reps 5] [--only app,cli,api]
Defaults: the CPU test engine from ~/.cache/strata-dev/engines.env and the generated test model
(9 MB: Strata's own start-up is the whole cost); a bigger --model shows the engine's load counting.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's strata_gui, not an installed one (the children import it)
APP_PROMPT = "Hi"
CLI_ARGS = ["--max-tokens", "8", "--seed", "7"]
CLI_BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "seed": 7,
                            "stream": True}
APP_BODY: dict[str, Any] = {"messages": [{"role": "user", "content": APP_PROMPT}], "stream": True}
API_BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "seed": 7}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raw_request(command: list[str], env: dict[str, str], body: dict[str, Any], first_token: bool,
                on_token: Callable[[str], None] = lambda _text: None,
                launched: Callable[[], None] = lambda: None) -> float:
    """Start llama-server by hand, wait for /health, send ``body``; seconds to the first content
    token (``first_token``; ``on_token`` is called then, with it) or to the end of the answer.
    ``launched`` runs once the server is launched, before the first poll. The server is stopped
    afterwards (a server stopped mid-reply can take a second to exit: not counted)."""
    t0 = time.perf_counter()
    port = free_port()
    i = command.index("--port")
    proc = subprocess.Popen([*command[:i + 1], str(port), *command[i + 2:]], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        launched()
        while True:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            finally:
                conn.close()
            if proc.poll() is not None:
                raise SystemExit(f"llama-server exited with {proc.returncode}")
            time.sleep(0.01)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise SystemExit(f"llama-server answered {resp.status}: {resp.read()[:300]!r}")
        if not body.get("stream"):
            resp.read()
            return time.perf_counter() - t0
        for line in resp:
            if line.startswith(b"data: {"):
                choices = json.loads(line[6:])["choices"]
                if first_token and choices and choices[0]["delta"].get("content"):
                    took = time.perf_counter() - t0
                    on_token(choices[0]["delta"]["content"])
                    conn.close()  # the server stops generating once the client is gone
                    return took
            elif line.startswith(b"data: [DONE]"):
                break
        conn.close()
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def raw_child(spec: str) -> int:
    """The baseline as its own process: prints ``done-at`` (wall clock) at the first token, or when
    the whole answer is in and the server is stopped (as ``strata chat`` ends)."""
    args = json.loads(spec)

    def mark(_text: str = "") -> None:
        print(f"done-at {time.time():.6f}", flush=True)

    raw_request(args["command"], {**os.environ, **args["env"]}, args["body"], args["first_token"], mark)
    if not args["first_token"]:
        mark()
    return 0


def floor_child(spec: str) -> int:
    """What any PySide6 app pays at least: the baseline's script, plus a bare PySide6 window (a
    label and a line edit, shown while the server loads) that paints the first token. Prints
    ``done-at`` once that token is painted."""
    args = json.loads(spec)
    shown: list[Any] = []

    def window() -> None:
        from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QVBoxLayout, QWidget

        app = QApplication([sys.argv[0]])
        top = QWidget()
        layout = QVBoxLayout(top)
        label = QLabel("")
        layout.addWidget(label)
        layout.addWidget(QLineEdit())
        top.resize(1000, 700)
        top.show()
        app.processEvents()
        shown.extend((app, top, label))

    def painted(text: str) -> None:
        shown[2].setText(text)
        shown[2].repaint()
        print(f"done-at {time.time():.6f}", flush=True)

    raw_request(args["command"], {**os.environ, **args["env"]}, args["body"], True, painted, window)
    return 0


def app_child() -> int:
    """The GUI as users start it, with a hook: send a message once the window is usable, print when
    the reply's first token is painted, then stop the reply and quit."""
    from strata_gui import cli

    # What `strata` does first (cli.main): take the one-app lock (or show the running app), then
    # launch the last model's engine before Qt is imported.
    instance, exit_code = cli._claim_app([])
    if exit_code is not None:
        raise SystemExit("another Strata app runs with this STRATA_HOME")
    warm = cli._early_engine([], "")
    import strata_gui.app as app_module
    from strata_gui.ui.chat.message_widget import CodeBlock, MessageWidget, TextBlock

    base_populate = app_module.populate
    painted: list[float] = []
    earlier: set[int] = set()  # messages shown before the send (the last conversation's)
    sent: list[bool] = []

    def populate(window: Any, services: Any, bridge: Any, app: Any, hooks: Any) -> Any:
        ui = base_populate(window, services, bridge, app, hooks)
        app.processEvents()  # usable: what bench/startup.py calls ready
        print(f"ready-at {time.time():.6f}", flush=True)
        page = ui.pages.chat

        async def send() -> None:
            try:
                await reply()
            finally:
                window.close()  # the app quits, also when the hook failed

        async def reply() -> None:
            earlier.update(page.message_widgets)
            page.new_conversation()  # "New chat", as the baseline sends the message alone (no history)
            sent.append(True)
            handle = page.send_text(APP_PROMPT)
            if handle is None:
                print("send refused", file=sys.stderr, flush=True)
                return
            import asyncio

            while not painted and handle.is_running:
                await asyncio.sleep(0.005)
            page.stop()
            await handle.wait()
            if handle.error is not None and not painted:
                print(f"reply failed: {handle.error}", file=sys.stderr, flush=True)

        import asyncio

        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(send()))
        return ui

    for cls in (TextBlock, CodeBlock):
        base_paint = cls.paintEvent

        def paint(widget: Any, event: Any, _base: Any = base_paint) -> None:
            _base(widget, event)
            owner = widget.parentWidget()
            if (sent and not painted and isinstance(owner, MessageWidget) and owner.message.role == "assistant"
                    and owner.message.id not in earlier and owner.rendered_text):
                painted.append(time.time())
                print(f"token-at {painted[0]:.6f}", flush=True)

        cls.paintEvent = paint  # type: ignore[method-assign]
    app_module.populate = populate
    # Then what cli.main does next, and how the app's entry ends (cli.gui_main: no interpreter teardown).
    code = cli._run_gui([], self_test=False, warm=warm, instance=instance)
    cli.exit_now(code)


def marks(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Runs ``cmd``; seconds from just before its start to each ``name-at`` line it printed, and ``exit``.
    Any exit code but 0 stops the bench (a crash at exit is a fault, not noise)."""
    t0 = time.time()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    end = time.time() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    out = {line.split()[0]: float(line.split()[1]) - t0 for line in proc.stdout.splitlines()
           if re.fullmatch(r"\S+-at \d+\.\d+", line)}
    out["exit"] = end
    return out


def engine_command(log_file: Path) -> list[str]:
    """The llama-server command line of the last engine Strata started (from its log)."""
    lines = [line for line in log_file.read_text(encoding="utf-8").splitlines() if "engine: " in line
             and "starting" in line and "llama-server" in line]
    if not lines:
        raise SystemExit(f"no engine start in {log_file}")
    return lines[-1].split(" engine: ", 1)[1].split()


def ratio_line(name: str, pairs: list[tuple[float, float]], goal: str) -> None:
    med = statistics.median
    print(f"{name}: by hand {med(p[0] for p in pairs) * 1000:.0f} ms  strata {med(p[1] for p in pairs) * 1000:.0f} ms"
          f"  ratio {med(p[1] / p[0] for p in pairs):.2f}x (median of {len(pairs)} pairs; goal {goal})")
    print("  pairs: " + "  ".join(f"{p[0] * 1000:.0f}/{p[1] * 1000:.0f}" for p in pairs))


def main() -> int:
    if sys.argv[1:2] == ["--raw-child"]:
        return raw_child(sys.argv[2])
    if sys.argv[1:2] == ["--app-child"]:
        return app_child()
    if sys.argv[1:2] == ["--floor-child"]:
        return floor_child(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", type=Path)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="app,cli,api", help="comma-separated: app, cli, api")
    args = ap.parse_args()
    from tests.support.engines import bench_engine_and_model  # (not in the children: they time their start)

    engine_dir, model = bench_engine_and_model()
    engine_dir, model = args.engine or engine_dir, args.model or model
    only = set(args.only.split(","))
    py = sys.executable
    home = Path(tempfile.mkdtemp(prefix="strata-coldstart-"))
    env = {**os.environ, "STRATA_HOME": str(home), "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    # Users run from bytecode (pip compiles on install): keep compiled modules, outside the tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    engine_env = {"LD_LIBRARY_PATH": str(engine_dir)}
    strata = [py, "-m", "strata_gui"]
    subprocess.run([*strata, "engines", "add-local", str(engine_dir)], env=env, check=True, cwd=ROOT,
                   capture_output=True)
    log_file = home / "logs" / "strata.log"

    def raw(body: dict[str, Any], command: list[str], first_token: bool) -> float:
        spec = json.dumps({"command": command, "env": engine_env, "body": body, "first_token": first_token})
        return marks([py, __file__, "--raw-child", spec], env)["done-at"]

    print(f"engine {engine_dir}  model {model.name}  reps {args.reps}  cores {os.cpu_count()}"
          f"  load {os.getloadavg()[0]:.2f} (1 min) at start")
    if "cli" in only:
        cli = [*strata, "chat", "--model", str(model), *CLI_ARGS, "hi"]
        marks(cli, env)  # warm-up (file cache, bytecode) and the engine's command line
        command = engine_command(log_file)
        raw(CLI_BODY, command, False)
        cli_pairs = [(raw(CLI_BODY, command, False), marks(cli, env)["exit"]) for _ in range(args.reps)]
        ratio_line("cli one-shot `strata chat` (whole process)", cli_pairs, "<= 2.0x")
    if "app" in only:
        settings_file = home / "config" / "settings.json"
        saved = json.loads(settings_file.read_text(encoding="utf-8")) if settings_file.exists() else {}
        saved.update(last_model=str(model), first_run_done=True)
        settings_file.parent.mkdir(parents=True, exist_ok=True)
        settings_file.write_text(json.dumps(saved), encoding="utf-8")
        gui = [py, __file__, "--app-child"]
        marks(gui, env)  # warm-up
        command = engine_command(log_file)
        raw(APP_BODY, command, True)
        floor_spec = json.dumps({"command": command, "env": engine_env, "body": APP_BODY})
        app_pairs, ready, floor = [], [], []
        for _ in range(args.reps):
            hand = raw(APP_BODY, command, True)
            m = marks(gui, env)
            app_pairs.append((hand, m["token-at"]))
            ready.append(m["ready-at"])
            floor.append((hand, marks([py, __file__, "--floor-child", floor_spec], env)["done-at"]))
        ratio_line("app launch -> first painted token", app_pairs, "<= 1.5x")
        print(f"  window usable at {statistics.median(ready) * 1000:.0f} ms (median)")
        print(f"  floor (the by-hand script plus a bare PySide6 window painting the token):"
              f" {statistics.median(f[1] for f in floor) * 1000:.0f} ms,"
              f" {statistics.median(f[1] / f[0] for f in floor):.2f}x of by hand")
    if "api" in only:
        api_pairs = []
        for rep in range(args.reps + 1):
            port = free_port()
            serve = subprocess.Popen([*strata, "serve", "--model", str(model), "--port", str(port)], env=env,
                                     cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                model_id = ""
                deadline = time.time() + 60
                while not model_id and time.time() < deadline:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    try:
                        conn.request("GET", "/v1/models")
                        model_id = json.loads(conn.getresponse().read())["data"][0]["id"]
                    except (OSError, ValueError, KeyError, IndexError):
                        time.sleep(0.05)
                    finally:
                        conn.close()
                if not model_id:
                    raise SystemExit("strata serve did not answer /v1/models")
                t = time.perf_counter()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("POST", "/v1/chat/completions", json.dumps({**API_BODY, "model": model_id}),
                             {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                through = time.perf_counter() - t
                if resp.status != 200:
                    raise SystemExit(f"strata serve answered {resp.status}")
            finally:
                serve.terminate()
                serve.wait(30)
            command = engine_command(log_file)
            hand = raw_request(command, {**os.environ, **engine_env}, API_BODY, False)
            if rep:  # the first pair warms the file cache
                api_pairs.append((hand, through))
        ratio_line("local API, first request to an unloaded model (server already up)", api_pairs, "<= 1.1x")
    print(f"load {os.getloadavg()[0]:.2f} (1 min) at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
