"""`strata chat --model M [--engine DIR] [--image FILE] [--attach FILE] [--json] "prompt"`: one streamed reply and its statistics.

With ``--image`` the pictures go with the prompt as OpenAI image content; the model's vision
projector (``mmproj`` next to it) is loaded with it, as in the app. Thinking, structured output and
tools (``--think``, ``--json-schema``, ``--mcp-config``) are described in
:mod:`strata_gui.commands.chat_session`; thinking is printed on standard error (dimmed on a
terminal), the answer on standard output.

The engine comes from the core's resolver, as in the app: engines whose last check failed are never
launched, the measured or pinned choice is honoured, and the engine used (and why) is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from strata_gui.commands import chat_session, load_options
from strata_gui.commands.device_option import add_device_option, apply_device_option
from strata_gui.core.app_services import AppServices
from strata_gui.core.base import ChatError, ChatFormatError, run_blocking, shown_json
from strata_gui.core.chat import (
    PRESETS_FILE,
    ChatEvent,
    ChatImage,
    EngineStatus,
    Message,
    Notice,
    PresetStore,
    ThinkingSettings,
)
from strata_gui.core.documents import citations_of
from strata_gui.core.runtime import SamplingParams


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("chat", help="send one prompt to a local model and stream the reply")
    p.add_argument("prompt", help="what to ask")
    p.add_argument("--model", "-m", help="GGUF file (default: the last model used in the app)")
    p.add_argument("--engine", "-e", action="append", default=[], metavar="DIR",
                   help="use the llama-server in DIR first (checked before use; repeat for more; "
                        "installed engines stay as fallbacks)")
    p.add_argument("--image", "-i", action="append", default=[], metavar="FILE", type=Path,
                   help="attach a PNG/JPEG/GIF/BMP image (repeat for more; the model needs its mmproj)")
    p.add_argument("--attach", "-a", action="append", default=[], metavar="FILE", type=Path,
                   help="attach a document: PDF, DOCX, HTML, Markdown, text or source code (repeat for more); "
                        "the reply cites its passages")
    p.add_argument("--embedding-model", metavar="GGUF", default=None, type=Path,
                   help="make vectors of the documents' passages with this embedding model (default: Settings'; "
                        "none: full-text search only)")
    p.add_argument("--preset", metavar="NAME", default=None,
                   help="a preset saved in the app (system prompt, sampling, thinking); the options below override it")
    p.add_argument("--system", default=None, help="system prompt")
    p.add_argument("--max-tokens", type=int, default=None, help="stop after this many tokens")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--no-fallback", action="store_true", help="do not try the next engine when one fails")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming text")
    chat_session.add_arguments(p)
    add_device_option(p)
    load_options.add_arguments(p)
    # A one-off prompt is not kept with the app's conversations.
    p.set_defaults(func=run, keep_conversations=False)


def _model(args: argparse.Namespace, app: AppServices) -> Path:
    chosen = args.model or app.settings.current.last_model
    if not chosen:
        raise ChatError("No model given.", hint="Pass --model FILE.gguf.")
    return Path(chosen).expanduser()


def _settings(args: argparse.Namespace, app: AppServices) -> tuple[str, SamplingParams, ThinkingSettings]:
    """The system prompt, sampling and thinking: ``--preset``'s, with the options given over them."""
    preset = PresetStore(app.base.paths.config_dir / PRESETS_FILE).require(args.preset) if args.preset else None
    given = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
    sampling = preset.sampling if preset else SamplingParams()
    sampling = replace(sampling, **{k: v for k, v in given.items() if v is not None})
    think = chat_session.thinking(args.think) if args.think or preset is None else preset.thinking
    system = args.system if args.system is not None else preset.system_prompt if preset else ""
    return system, sampling, think


def _folders(given: list[str]) -> list[Path]:
    return [Path(f).expanduser() for f in given]


async def run(args: argparse.Namespace, app: AppServices) -> int:
    load_options.apply(args, app)
    overrides: dict[str, object] = {}
    if args.no_fallback:
        overrides["auto_fallback"] = False
    if overrides:
        app.settings.override(**overrides)  # this run only: never written to the settings file
    apply_device_option(args, app)
    model = _model(args, app)
    await load_options.check(app, model)
    structured = chat_session.structured_output(args.json_schema)  # a bad schema fails before any load
    system, sampling, think = _settings(args, app)  # and an unknown preset
    # A bad file fails here, before any engine loads.
    images = await run_blocking(lambda: [ChatImage.from_file(Path(f).expanduser()) for f in args.image],
                                name="strata-read-images")
    service = app.chat
    service.set_model(model, remember=False)  # a one-off prompt does not change the app's last model
    if images:
        service.check_images_accepted()  # before engines are probed: a text-only model fails at once
    conv = service.new_conversation()
    await _attach(args, app, conv.id, not args.json)  # a bad document fails here too, before any engine
    await app.prepare()
    for folder in _folders(args.engine):
        await app.resolver.use_folder(folder)
    resolution = app.resolver.resolve(model)
    if resolution.chosen is None:
        raise ChatError(resolution.summary(), hint="Install an engine with `strata engines install`, "
                                                   "or pass --engine DIR.")
    service.set_plan(list(resolution.specs))
    stream = not args.json
    printer = chat_session.Printer(sys.stdout, sys.stderr, quiet=not stream)
    if stream:
        print(f"engine: {resolution.summary()}", file=sys.stderr)

    def on_event(event: ChatEvent) -> None:
        if isinstance(event, Notice):
            printer.say(event.text)
        elif isinstance(event, EngineStatus) and stream and sys.stderr.isatty():
            print(f"\r{event.detail[:70]:<70}", end="", file=sys.stderr, flush=True)
        else:
            printer.on_event(event)

    service.events.subscribe(on_event)
    host = chat_session.configure(service, args, printer, app.base.paths.log_dir)
    try:
        service.store.update_settings(conv.id, system_prompt=system, sampling=sampling, thinking=think,
                                      structured_output=structured)
        await service.ensure_engine()
        if stream and sys.stderr.isatty():
            print("\r" + " " * 72 + "\r", end="", file=sys.stderr)
        failure: ChatFormatError | None = None
        try:
            reply = await service.send(conv.id, args.prompt, images=images)
        except ChatFormatError as exc:
            failure = exc
            reply = service.store.messages(conv.id)[-1]
        messages = chat_session.turn(service, conv.id, after=min(m.id for m in service.store.messages(conv.id)))
    finally:
        if host is not None:
            await host.aclose()
    if args.json:
        out = {**chat_session.result_json(messages), "stats": reply.stats.to_json(),
               "context_used": reply.stats.context_used, "notices": printer.notices,
               "engine": resolution.to_json(),
               "projector": str(service.projector) if service.projector else None,
               "images": len(images), **_documents_json(reply)}
        if failure is not None:
            out["error"] = {"message": failure.message, "hint": _parsing_hint(), "details": failure.details}
        print(shown_json(json.dumps(out, indent=2, ensure_ascii=False)))
    else:
        print()
        _print_citations(reply)
        print(reply.stats.summary(), file=sys.stderr)
        if reply.stats.slow_path:
            print(f"warning: {reply.stats.slow_path}", file=sys.stderr)
    if failure is not None:
        raise ChatFormatError(failure.message, hint=_parsing_hint(), details=failure.details)
    return 0


async def _attach(args: argparse.Namespace, app: AppServices, conversation_id: int, stream: bool) -> None:
    """Index each ``--attach`` file into the conversation (a bad file fails before any engine loads;
    the question makes the passages' vectors, when an embedding model is chosen)."""
    if args.embedding_model is not None:
        app.settings.override(embedding_model=str(args.embedding_model.expanduser().resolve()))
    for path in args.attach:
        attached = await app.documents.attach(conversation_id, path.expanduser(), embed=False)
        for note in attached.notes:
            print(f"note: {note}", file=sys.stderr)
        if stream:
            doc = attached.document
            how = "index reused" if attached.reused else f"{doc.chunks:,} passages indexed"
            print(f"attached: {doc.name} ({how})", file=sys.stderr)


def _documents_json(reply: Message) -> dict[str, Any]:
    """``documents`` (which happened: whole or retrieved, and how) and ``citations`` for ``--json``."""
    record = reply.settings.get("documents")
    if not isinstance(record, dict):
        return {"citations": []}
    return {"documents": {k: record.get(k) for k in ("mode", "search", "summary", "used")},
            "citations": [c.to_json() for c in citations_of(reply.settings)]}


def _print_citations(reply: Message) -> None:
    record = reply.settings.get("documents")
    if not isinstance(record, dict):
        return
    print(str(record.get("summary") or ""), file=sys.stderr)
    for citation in citations_of(reply.settings):
        print(f"[{citation.number}] {citation.label()}", file=sys.stderr)


def _parsing_hint() -> str:
    return ("Send it again; if it keeps happening, add --no-chat-parsing (the model's text then arrives as "
            "written: thinking and tool calls as plain text).")
