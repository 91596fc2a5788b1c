"""Reading the open conversation ahead: the first token of the next message, with and without.

After a restart the engine's cache is empty: the first message sent in a long conversation waits
for the whole history to be read (prompt processing) before its first token. With
``Settings.read_ahead`` the chat's engine reads the conversation in view while the user types.

Each round restarts the chat's engine (an empty cache, as after a restart), opens a conversation of
``--history`` words the engine has never seen, waits ``--typing`` seconds (the user writing the
message), sends it and times the send to the first token shown (the chat's first ``MessageDelta``).
Rounds alternate read-ahead on and off (the baseline: the same path with the setting off) and the
ratio printed is the median of per-pair ratios. Also printed: in how many rounds the read ahead
outlasted the typing (the reply then waits for the rest of it, which it needs anyway).

Usage: python bench/readahead.py [--model FILE] [--history 900] [--typing 3] [--reps 3]
Default model: a generated 8-layer, width-1024 GGUF (~100 MB: its prompt processing costs time on
a CPU, as a real model's does); the CPU test engine from ~/.cache/strata-dev/engines.env; runs in
a temporary profile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import engines as engine_support
from tests.support import gguf_model

BENCH_MODEL = gguf_model.ModelSpec(layers=8, width=1024, heads=16, kv_heads=4, ff=4096, name="Read Ahead Bench")
WORDS = ("tide", "moon", "ocean", "current", "shore", "wave", "gravity", "orbit", "basin", "harbour", "estuary",
         "sediment", "season", "storm", "breeze", "reef", "lagoon", "channel", "delta", "inlet")


def history_text(words: int, salt: int) -> list[tuple[str, str]]:
    """User and assistant turns of about ``words`` words in all, different for each ``salt``."""
    turns: list[tuple[str, str]] = []
    per_turn = 150
    for i in range(max(2, words // per_turn)):
        text = " ".join(WORDS[(salt * 7 + i * 3 + j) % len(WORDS)] for j in range(per_turn))
        turns.append(("user" if i % 2 == 0 else "assistant", f"Part {salt}.{i}: {text}."))
    if turns[-1][0] == "user":
        turns.append(("assistant", "Noted."))
    return turns


async def run(model: Path, engine: Path, history: int, typing: float, reps: int) -> None:
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.chat.events import MessageDelta
    from strata_gui.core.config.services import build_services
    from strata_gui.core.runtime.client import SamplingParams

    app = build_app_services(build_services())
    chat = app.chat
    first: list[float] = []
    chat.events.subscribe(lambda e: first.append(time.perf_counter()) if isinstance(e, MessageDelta) and not first else None)
    pairs: list[tuple[float, float]] = []
    unfinished: list[bool] = []
    try:
        await app.prepare()
        await app.use_engine_folder(engine)
        app.base.settings_service.update(context_size=8192)
        chat.set_model(model)
        await chat.ensure_engine()  # warm the file cache once, outside the rounds
        for rep in range(reps):
            got: dict[bool, float] = {}
            for on in (True, False) if rep % 2 == 0 else (False, True):
                await chat.stop_engine()  # an empty cache, as after a restart
                app.base.settings_service.update(read_ahead=on)
                conv = chat.new_conversation()
                chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=4, seed=3))
                chat.store.add_messages(conv.id, history_text(history, rep * 2 + on))
                chat.viewing(conv.id)
                await chat.ensure_engine()
                await asyncio.sleep(typing)  # the user writes the message meanwhile
                if on:
                    unfinished.append(chat.reading_ahead)  # the reply then waits for the rest of it
                first.clear()
                sent = time.perf_counter()
                reply = await chat.send(conv.id, "So what happens at the next full moon?")
                assert first, f"no token in the reply ({reply.status})"
                got[on] = first[0] - sent
                print(f"  round {rep + 1} read-ahead {'on ' if on else 'off'}: first token {got[on] * 1000:,.0f} ms"
                      f"  (prompt {reply.stats.prompt_n} tokens read after sending, {reply.stats.cache_n or 0} cached)")
            pairs.append((got[False], got[True]))
    finally:
        await app.aclose()
    med = statistics.median
    print(f"first token after sending, {history} words of history, {typing:g} s of typing:"
          f" without {med(p[0] for p in pairs) * 1000:,.0f} ms  with read-ahead {med(p[1] for p in pairs) * 1000:,.0f} ms"
          f"  ratio {med(p[1] / p[0] for p in pairs):.2f}x (median of {len(pairs)} pairs)")
    if any(unfinished):
        print(f"  the read ahead outlasted the typing in {sum(unfinished)} of {len(unfinished)} rounds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--history", type=int, default=900, help="words of history (about 1.3 tokens each)")
    parser.add_argument("--typing", type=float, default=3.0, help="seconds between opening and sending")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with engine_support.bench_profile("strata-readahead-") as (engines, root):
        model = args.model or gguf_model.write_model(root / "read-ahead-bench.gguf", BENCH_MODEL)
        print(f"model {model.name} ({model.stat().st_size / 1e6:,.0f} MB)  cores {os.cpu_count()}"
              f"  load {os.getloadavg()[0]:.2f}")
        asyncio.run(run(model, engines.cpu_dir, args.history, args.typing, args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
