"""`strata chats list|search|export|import`: the app's saved conversations.

``export ID --format md|json|html`` writes one conversation with its thinking and tool calls
(to standard output, or ``-o FILE``); ``import FILE`` reads ChatGPT's ``conversations.json`` or
Open WebUI's chat export and adds every conversation in it, or none when the file is not right.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import run_blocking, shown, shown_json
from strata_gui.core.chat import (
    DEFAULT_TITLE,
    EXPORT_FORMATS,
    MARK_END,
    MARK_START,
    export_conversation,
    import_file,
    search_conversations,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("chats", help="the app's saved conversations: list, search, export, import")
    csub = p.add_subparsers(dest="chats_command", metavar="ACTION", required=True)
    ls = csub.add_parser("list", help="list conversations, most recently active first")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    find = csub.add_parser("search", help="full-text search over every message (and titles)")
    find.add_argument("text")
    find.add_argument("--json", action="store_true", help="machine-readable output")
    export = csub.add_parser("export", help="write a conversation as Markdown, JSON or HTML")
    export.add_argument("id", type=int, help="the conversation's number (see `strata chats list`)")
    export.add_argument("--format", "-f", choices=EXPORT_FORMATS, default="md")
    export.add_argument("--output", "-o", type=Path, metavar="FILE", help="write here instead of standard output")
    imp = csub.add_parser("import", help="add the conversations of a ChatGPT or Open WebUI export (all or none)")
    imp.add_argument("file", type=Path, help="ChatGPT's conversations.json, or an Open WebUI chat export (.json)")
    p.set_defaults(func=run)


async def run(args: argparse.Namespace, app: AppServices) -> int:
    if args.chats_command == "export":
        return await _export(args, app)
    if args.chats_command == "import":
        result = await import_file(app.chat_store, args.file.expanduser())
        n = len(result.conversation_ids)
        print(f"Imported {n:,} conversation{'s' if n != 1 else ''} from {result.source} ({result.messages:,} messages).")
        if result.skipped:
            print(f"Empty conversations left out: {result.skipped:,}.", file=sys.stderr)
        return 0
    hits = search_conversations(app.chat_store, args.text if args.chats_command == "search" else "")
    if args.json:
        out = [{"id": h.conversation.id, "title": h.conversation.title, "updated_at": h.conversation.updated_at,
                "model": h.conversation.model,
                **({"snippet": h.snippet.replace(MARK_START, "").replace(MARK_END, "")} if h.snippet else {})}
               for h in hits]
        print(shown_json(json.dumps(out, indent=2, ensure_ascii=False)))
        return 0
    bold = sys.stdout.isatty()
    for h in hits:
        title = h.conversation.title if h.conversation.title != DEFAULT_TITLE else "New chat"
        print(shown(f"{h.conversation.id:>5}  {title}"))
        if h.snippet:  # the matches in bold on a terminal (the text itself is shown safely)
            pieces = [shown(piece) for piece in h.snippet.replace(MARK_END, MARK_START).split(MARK_START)]
            on, off = ("\x1b[1m", "\x1b[0m") if bold else ("", "")
            print("       " + "".join(p if i % 2 == 0 else on + p + off for i, p in enumerate(pieces)))
    if not hits:
        print("No conversations match." if args.chats_command == "search" else "No conversations yet.",
              file=sys.stderr)
    return 0


async def _export(args: argparse.Namespace, app: AppServices) -> int:
    text = export_conversation(app.chat_store, args.id, args.format)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    path: Path = args.output.expanduser()
    await run_blocking(lambda: path.write_text(text, encoding="utf-8"), name="strata-export")
    print(f"Wrote {path}", file=sys.stderr)
    return 0

