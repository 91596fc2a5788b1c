"""Export a conversation as Markdown, JSON or HTML, with its settings, thinking and tool calls.

* JSON keeps everything Strata stores (settings, each message's status, thinking, tool calls with
  their results, statistics and images as base64) and can be read back by other tools.
* Markdown reads well as text and renders on GitHub and in editors: thinking folds in a
  ``<details>`` block, each tool call shows its arguments and result in fences.
* HTML is one self-contained page (style and images inside): the messages' Markdown is rendered
  with markdown-it-py with HTML in messages shown as text, so nothing a model wrote runs.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time
from typing import Any

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

from .records import Conversation, Message, ToolCallRecord
from .store import ConversationStore

FORMATS = ("md", "json", "html")
SUFFIXES = {"md": ".md", "json": ".json", "html": ".html"}
JSON_KIND = "strata-conversation"
JSON_VERSION = 1
ROLE_NAMES = {"user": "You", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _fence(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{lang}\n{text}\n{marks}"


def _message_json(m: Message) -> dict[str, Any]:
    return {"id": m.id, "role": m.role, "content": m.content, "status": m.status, "created_at": m.created_at,
            "thinking": m.thinking, "tool_calls": [c.to_json() for c in m.tool_calls],
            "tool_call_id": m.tool_call_id, "tool_name": m.tool_name, "ran_on": m.ran_on,
            "stats": m.stats.to_json(), "settings": m.settings,
            "images": [{"mime": i.mime, "name": i.name, "data_base64": base64.b64encode(i.data).decode("ascii")}
                       for i in m.images]}


def to_json(conv: Conversation, messages: list[Message]) -> str:
    data = {"kind": JSON_KIND, "version": JSON_VERSION, "id": conv.id, "title": conv.title,
            "created_at": conv.created_at, "updated_at": conv.updated_at, "model": conv.model, "ran_on": conv.ran_on,
            "system_prompt": conv.system_prompt, "sampling": conv.sampling.to_json(),
            "thinking": conv.thinking.to_json(), "structured_output": conv.structured_output.to_json(),
            "messages": [_message_json(m) for m in messages]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _answered_calls(messages: list[Message]) -> set[str]:
    """Calls whose result is shown with the call (their ``tool`` messages are not repeated)."""
    return {c.id for m in messages for c in m.tool_calls if c.result is not None}


def _call_markdown(call: ToolCallRecord) -> str:
    parts = [f"**Tool call** `{call.name}` ({call.status})", _fence(call.arguments or "{}", "json")]
    if call.result is not None:
        parts += ["Result:", _fence(call.result)]
    return "\n\n".join(parts)


def _message_markdown(m: Message) -> str:
    name = ROLE_NAMES.get(m.role, m.role)
    heading = f"## {name}" + (f" ({m.tool_name})" if m.role == "tool" and m.tool_name else "")
    parts = [heading]
    if m.thinking:
        parts.append(f"<details>\n<summary>Thinking</summary>\n\n{_fence(m.thinking)}\n\n</details>")
    if m.content:
        parts.append(_fence(m.content) if m.role == "tool" else m.content)
    parts += [f"*[image: {i.name or i.mime}]*" for i in m.images]
    parts += [_call_markdown(c) for c in m.tool_calls]
    if m.stats.predicted_n:
        parts.append(f"*{m.stats.summary()}*")
    return "\n\n".join(parts)


def to_markdown(conv: Conversation, messages: list[Message]) -> str:
    head = [f"# {conv.title}", ""]
    facts = [f"- Created: {_when(conv.created_at)}"]
    if conv.model:
        facts.append(f"- Model: `{conv.model}`")
    head += facts
    if conv.system_prompt.strip():
        head += ["", "**System prompt:**", "", _fence(conv.system_prompt)]
    shown = _answered_calls(messages)
    body = [_message_markdown(m) for m in messages if not (m.role == "tool" and m.tool_call_id in shown)]
    return "\n".join(head) + "\n\n" + "\n\n".join(body) + "\n"


HTML_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
section { border-radius: 8px; padding: .5rem 1rem; margin: 1rem 0; }
section.user { background: #f1f5f9; }
section.tool, .call { border: 1px dashed #94a3b8; }
.call { border-radius: 6px; padding: .25rem .75rem; margin: .5rem 0; }
h2 { font-size: 1rem; margin: .25rem 0; }
pre { background: #f8fafc; border: 1px solid #e2e8f0; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
details { color: #475569; }
.meta, .stats { color: #64748b; font-size: .85rem; }
img { max-width: 100%; }
"""


def _markdown_html(text: str) -> str:
    from markdown_it import MarkdownIt  # only for HTML exports

    return str(MarkdownIt("commonmark", {"html": False}).enable("table").render(text))


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def _call_html(call: ToolCallRecord) -> str:
    result = f"<div>Result:</div>{_pre(call.result)}" if call.result is not None else ""
    return (f'<div class="call"><div>Tool call <code>{html.escape(call.name)}</code> ({html.escape(call.status)})'
            f"</div>{_pre(call.arguments or '{}')}{result}</div>")


def _message_html(m: Message) -> str:
    name = ROLE_NAMES.get(m.role, m.role) + (f" ({m.tool_name})" if m.role == "tool" and m.tool_name else "")
    parts = [f"<h2>{html.escape(name)}</h2>"]
    if m.thinking:
        parts.append(f"<details><summary>Thinking</summary>{_pre(m.thinking)}</details>")
    if m.content:
        parts.append(_pre(m.content) if m.role == "tool" else _markdown_html(m.content))
    parts += [f'<img alt="{html.escape(i.name)}" src="{i.data_url()}">' for i in m.images]
    parts += [_call_html(c) for c in m.tool_calls]
    if m.stats.predicted_n:
        parts.append(f'<div class="stats">{html.escape(m.stats.summary())}</div>')
    role = m.role if m.role in ROLE_NAMES else "other"
    return f'<section class="{role}">' + "\n".join(parts) + "</section>"


def to_html(conv: Conversation, messages: list[Message]) -> str:
    title = html.escape(conv.title)
    meta = f"Created {_when(conv.created_at)}" + (f" · model {html.escape(conv.model)}" if conv.model else "")
    system = (f"<details open><summary>System prompt</summary>{_pre(conv.system_prompt)}</details>"
              if conv.system_prompt.strip() else "")
    shown = _answered_calls(messages)
    body = "\n".join(_message_html(m) for m in messages if not (m.role == "tool" and m.tool_call_id in shown))
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{HTML_STYLE}</style></head>\n<body><h1>{title}</h1><p class=\"meta\">{meta}</p>{system}\n"
            f"{body}\n</body></html>\n")


def export_conversation(store: ConversationStore, conversation_id: int, fmt: str) -> str:
    """The conversation as text in ``fmt`` (``"md"``, ``"json"`` or ``"html"``).

    Raises:
        ChatError: No such conversation, or an unknown format.
    """
    if fmt not in FORMATS:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "Unknown export format “{fmt}”."), fmt=fmt),
                        hint=QT_TRANSLATE_NOOP("Core", "Choose md (Markdown), json or html."))
    conv = store.conversation(conversation_id)
    if conv is None:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "There is no conversation {id}."), id=conversation_id),
                        hint=QT_TRANSLATE_NOOP("Core", "List them with `strata chats list`."))
    messages = store.messages(conversation_id)
    return {"md": to_markdown, "json": to_json, "html": to_html}[fmt](conv, messages)
