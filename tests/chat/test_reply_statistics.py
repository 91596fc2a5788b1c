"""The statistics under a reply, as a reader sees them in the real chat page (issue 48, item 11):
they get the bubble's width, never wrap inside "tok/s", and a warning that holds for the whole
conversation ("Runs on the CPU: …") is said under one reply, not repeated under every one."""

from __future__ import annotations

from PySide6.QtGui import QTextLayout

from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.runtime.client import ReplyStats
from strata_gui.ui.chat.message_widget import MessageWidget
from tests.chat.test_chat_page import page_env  # noqa: F401 (fixture)

CPU_WARNING = "Runs on the CPU: no engine for a GPU is installed. Install one on the Engines page to use the GPU."


def _stats(share: float = 0.003) -> ReplyStats:
    limit = {"share": share, "device_kind": "cpu", "ceiling_tps": 40.0, "warnings": [CPU_WARNING]}
    prefill = {"share": 0.3, "device_kind": "cpu"}
    return ReplyStats(ttft_s=0.042, prompt_n=120, prefill_tps=3012.0, decode_tps=760.4, predicted_n=1128,
                      finish_reason="tool_calls", engine="CPU b7601", backend="cpu",
                      extra={"limit": limit, "prefill_limit": prefill})


def _line_starts(text: str, layout_font: object, width: float) -> list[int]:
    layout = QTextLayout(text, layout_font)  # type: ignore[call-overload]
    layout.beginLayout()
    starts = []
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        starts.append(line.textStart())
    layout.endLayout()
    return starts


def test_the_statistics_use_the_bubbles_width_and_keep_their_units_whole(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    page, service, _, _ = page_env
    conv = service.store.create_conversation("Stats")
    service.store.add_message(conv.id, "user", "Hello")
    reply = service.store.add_message(conv.id, "assistant", "Hi.", stats=_stats())
    page.resize(820, 560)
    page.on_shown()
    page.open_conversation(conv.id)
    widget: MessageWidget = page.message_widgets[reply.id]
    qtbot.waitUntil(lambda: widget.stats.isVisible() and widget.stats.width() > 0)
    # Beside the Copy/Regenerate buttons the block was a narrow column; on its own line it spans the bubble.
    margins = widget.layout().contentsMargins()
    assert widget.stats.width() >= widget.width() - margins.left() - margins.right() - 2
    text = widget.stats.text()
    # Words people read: the tool call said, small shares not rounded to 0.
    assert "called a tool" in text and "tool_calls" not in text and "0.3\u00a0% of the CPU's memory limit" in text
    assert "30\u00a0% of the CPU's compute limit" in text
    # However narrow, a line never starts inside "tok/s" nor between a number and its unit.
    forbidden = set()
    at = text.find("tok/")
    while at >= 0:
        forbidden.update(range(at, at + len("tok/\u2060s")))
        at = text.find("tok/", at + 1)
    assert forbidden
    for width in range(40, 500, 9):
        assert not forbidden & set(_line_starts(text, widget.stats.font(), width)), width


def test_a_warning_for_the_whole_conversation_is_said_once(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    page, service, _, _ = page_env
    conv = service.store.create_conversation("CPU")
    replies = []
    for question in ("One", "Two", "Three"):
        service.store.add_message(conv.id, "user", question)
        replies.append(service.store.add_message(conv.id, "assistant", "Answer.", status=COMPLETE, stats=_stats()))
    page.on_shown()
    page.open_conversation(conv.id)
    qtbot.waitUntil(lambda: all(r.id in page.message_widgets for r in replies))
    shown = [CPU_WARNING in page.message_widgets[r.id].stats.text() for r in replies]
    assert shown == [True, False, False]
    # Every reply still has its own figures.
    assert all("tokens generated" in page.message_widgets[r.id].stats.text() for r in replies)
    # Opened again, it is still said once.
    page.open_conversation(conv.id)
    qtbot.waitUntil(lambda: all(r.id in page.message_widgets for r in replies))
    assert [CPU_WARNING in page.message_widgets[r.id].stats.text() for r in replies] == [True, False, False]
