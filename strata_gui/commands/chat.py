"""`strata chat --model M [--engine DIR] [--json] "prompt"`: one streamed reply and its statistics."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    EngineStatus,
    MessageDelta,
    Notice,
    default_supervisor_factory,
)
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.errors import ChatError
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.engine import EngineSpec, discover_engines, spec_from_folder
from strata_gui.core.services import Services


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("chat", help="send one prompt to a local model and stream the reply")
    p.add_argument("prompt", help="what to ask")
    p.add_argument("--model", "-m", help="GGUF file (default: the last model used in the app)")
    p.add_argument("--engine", "-e", action="append", default=[], metavar="DIR",
                   help="engine folder containing llama-server; repeat to give fallbacks in order")
    p.add_argument("--system", default="", help="system prompt")
    p.add_argument("--max-tokens", type=int, default=None, help="stop after this many tokens")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--ctx-size", type=int, default=None, help="context size (default: from Settings)")
    p.add_argument("--no-fallback", action="store_true", help="do not try the next engine when one fails")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming text")
    p.set_defaults(func=run)


def _plan(args: argparse.Namespace, services: Services) -> list[EngineSpec]:
    if args.engine:
        return [spec_from_folder(Path(d)) for d in args.engine]
    pinned = services.settings.pinned_engine
    if pinned and Path(pinned).is_dir():
        return [spec_from_folder(Path(pinned))]
    root = Path(services.settings.engines_dir) if services.settings.engines_dir else services.paths.engines_dir
    plan = discover_engines(root)
    if not plan:
        raise ChatError("No engine found.", hint=f"Install one in the app, or pass --engine DIR (searched {root}).")
    return plan


def _model(args: argparse.Namespace, services: Services) -> Path:
    chosen = args.model or services.settings.last_model
    if not chosen:
        raise ChatError("No model given.", hint="Pass --model FILE.gguf.")
    return Path(chosen).expanduser()


async def run(args: argparse.Namespace, services: Services) -> int:
    # Flags change this run only: the app's saved settings stay as they are.
    session: dict[str, object] = {}
    if args.ctx_size is not None:
        session["context_size"] = args.ctx_size
    if args.no_fallback:
        session["auto_fallback"] = False
    if session:
        services.settings_service.override(**session)
    model = _model(args, services)
    plan = _plan(args, services)
    notices: list[str] = []
    stream = not args.json

    def on_event(event: ChatEvent) -> None:
        if isinstance(event, MessageDelta) and stream:
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, Notice):
            notices.append(event.text)
            print(f"note: {event.text}", file=sys.stderr)
        elif isinstance(event, EngineStatus) and stream and sys.stderr.isatty():
            print(f"\r{event.detail[:70]:<70}", end="", file=sys.stderr, flush=True)

    # A one-off prompt is not kept with the app's conversations.
    store = ConversationStore(Path(":memory:")).open()
    async with httpx.AsyncClient(trust_env=False) as http:
        service = ChatService(store, default_supervisor_factory(http, dict(services.environ)), http,
                              services.settings_service)
        service.set_plan(plan)
        service.set_model(model, remember=False)
        service.subscribe(on_event)
        try:
            conv = service.new_conversation()
            store.update_settings(conv.id, system_prompt=args.system, sampling=SamplingParams(
                max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed))
            await service.ensure_engine()
            if stream and sys.stderr.isatty():
                print("\r" + " " * 72 + "\r", end="", file=sys.stderr)
            reply = await service.send(conv.id, args.prompt)
        finally:
            await service.aclose()
    if args.json:
        print(json.dumps({"reply": reply.content, "stats": reply.stats.to_json(),
                          "context_used": reply.stats.context_used, "notices": notices}, indent=2))
    else:
        print()
        print(reply.stats.summary(), file=sys.stderr)
    return 0
