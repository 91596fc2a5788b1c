"""`strata docs list|remove`: the documents attached to the app's conversations and their indexes.

A document is stored once per content: ``list`` shows each with how many conversations have it,
its passages and whether its text was read with notes; ``remove ID`` deletes it, its full-text
index and vectors from every conversation.
"""

from __future__ import annotations

import argparse
import json
import sys

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import DocumentError, format_bytes, shown, shown_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("docs", help="documents attached to conversations: list, remove")
    dsub = p.add_subparsers(dest="docs_command", metavar="ACTION", required=True)
    ls = dsub.add_parser("list", help="every stored document with its index")
    ls.add_argument("--conversation", "-c", type=int, default=None, metavar="ID",
                    help="only this conversation's documents (see `strata chats list`)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    rm = dsub.add_parser("remove", help="delete a document and its index from every conversation")
    rm.add_argument("id", type=int, help="the document's number (see `strata docs list`)")
    p.set_defaults(func=run)


async def run(args: argparse.Namespace, app: AppServices) -> int:
    documents = app.documents
    if args.docs_command == "remove":
        if not documents.delete(args.id):
            raise DocumentError(f"No document {args.id}.", hint="`strata docs list` shows their numbers.")
        print(f"Removed document {args.id} and its index.")
        return 0
    docs = documents.documents(args.conversation) if args.conversation is not None else documents.all_documents()
    if args.json:
        out = [{"id": d.id, "name": d.name, "path": d.path, "kind": d.kind, "size": d.size, "pages": d.pages,
                "chunks": d.chunks, "chars": d.chars, "sha256": d.sha256, "conversations": d.conversations,
                "notes": [n for n in d.notes.splitlines() if n]} for d in docs]
        print(shown_json(json.dumps(out, indent=2, ensure_ascii=False)))
        return 0
    if not docs:
        print("No documents.", file=sys.stderr)
        return 0
    for d in docs:
        pages = f", {d.pages} pages" if d.pages else ""
        used = f", in {d.conversations} conversation{'s' if d.conversations != 1 else ''}" if d.conversations else ""
        print(shown(f"{d.id:>4}  {d.name}  ({d.kind}, {format_bytes(d.size)}{pages}, {d.chunks:,} passages{used})"))
    return 0
