"""`strata remote add|list|models|remove|chat`: OpenAI-compatible endpoints on other machines.

``strata remote chat NAME "prompt"`` runs the reply through the same chat service as the app and
`strata chat` (thinking, ``--json-schema``, ``--mcp-config`` tools: see
:mod:`strata_gui.commands.chat_session`); its ``--json`` object has ``text`` (the answer) as well.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from strata_gui.commands import chat_session
from strata_gui.core.app_services import AppServices
from strata_gui.core.base import ChatError, shown_json
from strata_gui.core.chat import Notice
from strata_gui.core.remote import RemoteService, describe
from strata_gui.core.runtime import SamplingParams


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("remote", help="remote OpenAI-compatible engines (vLLM, SGLang, llama-server, Strata)")
    rsub = p.add_subparsers(dest="remote_command", metavar="ACTION", required=True)
    add = rsub.add_parser("add", help="add or replace an endpoint")
    add.add_argument("name")
    add.add_argument("url", help="server address, e.g. http://192.168.1.20:8000 (a trailing /v1 is fine)")
    key = add.add_mutually_exclusive_group()
    key.add_argument("--api-key-stdin", action="store_true", help="read the API key from standard input")
    key.add_argument("--api-key-env", metavar="VAR", help="take the API key from this environment variable")
    add.add_argument("--model", default="", help="model id on that server (default: its first)")
    add.add_argument("--no-check", action="store_true", help="save without asking the server for its models")
    ls = rsub.add_parser("list", help="list endpoints (keys are never printed)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    models = rsub.add_parser("models", help="list the models an endpoint serves")
    models.add_argument("name")
    models.add_argument("--json", action="store_true", help="machine-readable output")
    rm = rsub.add_parser("remove", help="forget an endpoint and its key")
    rm.add_argument("name")
    chat = rsub.add_parser("chat", help="ask one question through an endpoint")
    chat.add_argument("name")
    chat.add_argument("prompt")
    chat.add_argument("--max-tokens", type=int, default=None)
    chat.add_argument("--system", default="", help="system prompt")
    chat.add_argument("--json", action="store_true", help="print one JSON object instead of streaming text")
    chat_session.add_arguments(chat)
    chat.set_defaults(keep_conversations=False)  # a one-off prompt is not kept with the app's conversations
    p.set_defaults(func=run)


def _key(args: argparse.Namespace) -> str | None:
    if args.api_key_stdin:
        return sys.stdin.readline().strip() or None
    if args.api_key_env:
        value = os.environ.get(args.api_key_env, "").strip()
        if not value:
            raise ChatError(f"The environment variable {args.api_key_env} is empty.")
        return value
    return None


async def run(args: argparse.Namespace, app: AppServices) -> int:
    if args.remote_command == "chat":
        return await _chat(args, app)
    return await _run(args, app.remote)


async def _run(args: argparse.Namespace, remote: RemoteService) -> int:
    action = args.remote_command
    if action == "add":
        if args.no_check:
            endpoint = remote.add(args.name, args.url, _key(args), args.model)
            print(f"added {endpoint.name}: {endpoint.base_url}")
        else:
            endpoint, models = await remote.add_checked(args.name, args.url, _key(args), args.model)
            print(f"added {endpoint.name}: {endpoint.base_url} ({len(models)} model(s); using {endpoint.model or '-'})")
        return 0
    if action == "list":
        endpoints = remote.endpoints()
        if args.json:
            print(json.dumps([describe(e) for e in endpoints], indent=2))
        elif not endpoints:
            print("no remote engines; add one with: strata remote add NAME URL")
        else:
            for e in endpoints:
                print(f"{e.name}\t{e.base_url}\t{'key' if e.has_key else 'no key'}\t{e.model or '-'}")
        return 0
    endpoint = remote.get(args.name)
    if action == "models":
        models = await remote.list_models(endpoint)
        print(json.dumps(models) if args.json else "\n".join(models))
        return 0
    if action == "remove":
        remote.remove(endpoint)
        print(f"removed {endpoint.name}")
        return 0
    raise ChatError(f"Unknown action {action}.")


async def _chat(args: argparse.Namespace, app: AppServices) -> int:
    endpoint = app.remote.get(args.name)
    structured = chat_session.structured_output(args.json_schema)
    service = app.chat
    service.set_remote(app.remote.client(endpoint))
    printer = chat_session.Printer(sys.stdout, sys.stderr, quiet=args.json)
    service.events.subscribe(lambda e: printer.say(e.text) if isinstance(e, Notice) else printer.on_event(e))
    host = chat_session.configure(service, args, printer, app.base.paths.log_dir)
    try:
        conv = service.new_conversation()
        service.store.update_settings(conv.id, system_prompt=args.system,
                                      sampling=SamplingParams(max_tokens=args.max_tokens),
                                      thinking=chat_session.thinking(args.think), structured_output=structured)
        reply = await service.send(conv.id, args.prompt)
        messages = chat_session.turn(service, conv.id, after=min(m.id for m in service.store.messages(conv.id)))
    finally:
        if host is not None:
            await host.aclose()
    if args.json:
        print(shown_json(json.dumps({"text": reply.content, **chat_session.result_json(messages),
                                     "stats": reply.stats.to_json(), "notices": printer.notices}, ensure_ascii=False)))
    else:
        print()
        print(reply.stats.summary(), file=sys.stderr)
    return 0
