"""The app's own resident memory against a bare PySide6 window, and the cost of a long conversation.

Each side is a fresh process (offscreen Qt), interleaved, N times. The app (this file with
``--app-child``) starts as users start it, in a fresh ``STRATA_HOME`` with the first-run guide
done, the test model as the last model, and two conversations: a short recent one (shown at start)
and one of 5,000 messages (questions and long Markdown answers, bench/data/long-reply.md). It
reports its resident set (VmRSS of its own process; no engine is started) three times:

* idle: the start-up checks done, the chat page shown, 1 s settled;
* conversation: after opening the 5,000-message conversation (and the time from the click to the
  first painted message of it: goal <= 100 ms);
* every page: after visiting every page of the sidebar.

The baseline is a bare PySide6 window (a QMainWindow with a label at the app's size), 1 s after
it is shown. Goals: idle <= 2.0x the bare window; the conversation adds <= 40 MB.

Usage: python bench/memory.py [N]
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's strata_gui, not an installed one (the children import it)
MESSAGES = 5000
MINIMAL = """
import sys, time
from PySide6.QtWidgets import QApplication, QMainWindow, QLabel
app = QApplication(sys.argv)
w = QMainWindow(); w.setCentralWidget(QLabel("hello")); w.resize(1180, 760); w.show()
end = time.perf_counter() + 1.0
while time.perf_counter() < end:
    app.processEvents(); time.sleep(0.01)
rss = [l for l in open("/proc/self/status") if l.startswith("VmRSS:")][0].split()[1]
print(f"idle-kb {rss}", flush=True)
"""


def rss_kb() -> int:
    """This process's resident set (kB)."""
    with open("/proc/self/status", encoding="ascii") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def app_child(big_id: int) -> int:
    """The GUI with a hook that measures after start-up, after opening the long conversation and
    after visiting every page, then quits."""
    import strata_gui.app as app_module
    from strata_gui.ui.chat.message_widget import CodeBlock, MessageWidget, TextBlock

    base_populate = app_module.populate
    painted: list[float] = []
    watching: list[bool] = []

    for cls in (TextBlock, CodeBlock):
        base_paint = cls.paintEvent

        def paint(widget: Any, event: Any, _base: Any = base_paint) -> None:
            _base(widget, event)
            if watching and not painted and isinstance(widget.parentWidget(), MessageWidget):
                painted.append(time.perf_counter())

        cls.paintEvent = paint  # type: ignore[method-assign]

    def populate(window: Any, services: Any, bridge: Any, app: Any, hooks: Any) -> Any:
        ui = base_populate(window, services, bridge, app, hooks)
        import asyncio

        async def settle() -> None:
            deadline = time.perf_counter() + 20
            while bridge.running and time.perf_counter() < deadline:  # the start-up checks
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            gc.collect()

        async def measure() -> None:
            await settle()
            print(f"idle-kb {rss_kb()}", flush=True)
            page = ui.pages.chat
            watching.append(True)
            t = time.perf_counter()
            page.open_conversation(big_id)
            while not painted and time.perf_counter() - t < 10:
                await asyncio.sleep(0.001)
            print(f"open-ms {(painted[0] - t) * 1000 if painted else -1:.1f}", flush=True)
            print(f"shown-messages {len(page.message_widgets)}", flush=True)
            await settle()
            print(f"conversation-kb {rss_kb()}", flush=True)
            for index in range(len(window.page_titles())):
                window.show_page_index(index)  # builds the page on this first visit, as a click does
                await asyncio.sleep(0.3)
            await settle()
            print(f"pages-kb {rss_kb()}", flush=True)

        async def run() -> None:
            try:
                await measure()
            finally:
                window.close()

        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(run()))
        return ui

    app_module.populate = populate
    return int(app_module.run_gui([]))


def values(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=180, cwd=ROOT)
    out = {line.split()[0]: float(line.split()[1]) for line in proc.stdout.splitlines()
           if re.fullmatch(r"\S+ -?\d+(\.\d+)?", line)}
    if proc.returncode != 0 or "idle-kb" not in out:
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return out


def prepare_home(home: Path, model: Path) -> int:
    """A lived-in home: settings, a 5,000-message conversation and a short recent one; returns the
    long conversation's id."""
    import json

    sys.path.insert(0, str(ROOT))
    from strata_gui.core.chat.store import ConversationStore

    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "settings.json").write_text(
        json.dumps({"last_model": str(model), "first_run_done": True}), encoding="utf-8")
    (home / "data").mkdir(parents=True, exist_ok=True)
    store = ConversationStore(home / "data" / "strata.sqlite3").open()
    try:
        answer = (Path(__file__).resolve().parent / "data" / "long-reply.md").read_text(encoding="utf-8")
        big = store.create_conversation("A long conversation").id
        items = []
        for i in range(MESSAGES // 2):
            items.append(("user", f"Question {i}: how do I cache the parsed configuration?"))
            items.append(("assistant", answer.replace("{n}", str(i))))
        store.add_messages(big, items)
        recent = store.create_conversation("Recent").id
        store.add_messages(recent, [("user", "Hi"), ("assistant", "Hello! How can I help?")])
        return big
    finally:
        store.close()


def main() -> int:
    if sys.argv[1:2] == ["--app-child"]:
        return app_child(int(sys.argv[2]))
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    home = Path(tempfile.mkdtemp(prefix="strata-memory-"))
    model = Path(tempfile.gettempdir()) / "strata-bench-model.gguf"  # only named: nothing loads it
    big = prepare_home(home, model)
    env = {**os.environ, "STRATA_HOME": str(home), "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    app_cmd = [sys.executable, __file__, "--app-child", str(big)]
    bare_cmd = [sys.executable, "-c", MINIMAL]
    values(app_cmd, env)  # warm-up: bytecode, file cache
    apps, bares = [], []
    for _ in range(n):
        apps.append(values(app_cmd, env))
        bares.append(values(bare_cmd, env))
    med = statistics.median
    mib = 1024

    def m(key: str) -> float:
        return med(a[key] for a in apps)

    bare = med(b["idle-kb"] for b in bares)
    print(f"runs {n}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.2f} (1 min)  messages {MESSAGES}")
    print(f"bare PySide6 window:            {bare / mib:6.1f} MiB")
    print(f"app idle on the chat page:      {m('idle-kb') / mib:6.1f} MiB   "
          f"{med(a['idle-kb'] / b['idle-kb'] for a, b in zip(apps, bares, strict=True)):.2f}x the bare window"
          " (goal <= 2.0x)")
    print(f"after opening {MESSAGES:,} messages: {m('conversation-kb') / mib:6.1f} MiB   "
          f"+{med(a['conversation-kb'] - a['idle-kb'] for a in apps) / 1000:.1f} MB (goal <= +40 MB)"
          f"   first screen painted in {m('open-ms'):.1f} ms (goal <= 100 ms; {m('shown-messages'):.0f} shown)")
    print(f"after visiting every page:      {m('pages-kb') / mib:6.1f} MiB   "
          f"{med(a['pages-kb'] / b['idle-kb'] for a, b in zip(apps, bares, strict=True)):.2f}x the bare window")
    print("  per run (idle / conversation / pages MiB, open ms): "
          + "  ".join(f"{a['idle-kb'] / mib:.0f}/{a['conversation-kb'] / mib:.0f}/{a['pages-kb'] / mib:.0f},"
                      f"{a['open-ms']:.0f}" for a in apps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
