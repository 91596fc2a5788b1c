"""One message: role, the model's thinking (folded), Markdown body with copyable code blocks, tool
calls with their approval, a statistics line (a live token counter while it streams), actions."""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import (
    QFontDatabase,
    QGuiApplication,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QTextCursor,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import from_json, shown
from strata_gui.core.chat import (
    COMPLETE,
    FAILED,
    FORMAT_FAILED,
    INTERRUPTED,
    STOPPED,
    STREAMING,
    Message,
    ReplyProgress,
)
from strata_gui.ui.chat.attachments import ImageThumb
from strata_gui.ui.chat.documents import SourcesLabel
from strata_gui.ui.chat.markdown import Segment, plain_extension, split_segments
from strata_gui.ui.chat.reply_parts import ThinkingBlock, ToolCallBox, ToolResultView, duration_text
from strata_gui.ui.i18n import LiveTexts, core_text, keep_translated

MESSAGE_THUMB = 160
COUNTER_GAP_S = 0.25  # the live token counter changes at most this often (a label's relayout per token is waste)


class TextBlock(QTextBrowser):
    """Markdown text sized to its content (no own scrolling).

    A QTextBrowser rather than a rich-text QLabel: re-rendering a long growing paragraph is
    several times cheaper (one document layout instead of QLabel's repeated size passes).
    """

    def __init__(self, text: str, parent: QWidget | None = None, *,
                 background: QPalette.ColorRole = QPalette.ColorRole.Window) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setOpenExternalLinks(True)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        # Opaque, in the bubble's colour: a streaming update then repaints only this block, not
        # the bubble and the list behind it. A palette, not a style sheet (parsing one per block
        # costs milliseconds).
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Base, palette.color(background))
        self.setPalette(palette)
        self.document().setDocumentMargin(0)
        self.paint_cost = 0.0  # CPU seconds spent painting (the chat page paces streaming renders by it)
        self.segment: Segment | None = None
        self.set_segment(Segment("text", text))

    def paintEvent(self, event: QPaintEvent) -> None:
        started = time.thread_time()
        super().paintEvent(event)
        self.paint_cost += time.thread_time() - started

    def setMarkdown(self, markdown: str) -> None:
        """GitHub's Markdown with HTML shown as the text it is: with HTML read, everything after a
        ``<`` that looked like a tag vanished ("std::vector<int> v" showed "std::vector", "<div>"
        hid the rest of the message, "<script>...</script>" vanished)."""
        from PySide6.QtGui import QTextDocument  # its enums not at import (see NoticeBanner.show_message)

        features = QTextDocument.MarkdownFeature
        self.document().setMarkdown(markdown, features.MarkdownDialectGitHub | features.MarkdownNoHTML)

    def set_segment(self, segment: Segment) -> None:
        if segment == self.segment:
            return
        old = self.segment
        # A streaming reply mostly grows by plain words on its last line: append them instead of
        # parsing and rebuilding the whole document; Qt then re-lays out only the last paragraph.
        extra = plain_extension(old.text, segment.text) if old is not None and old.kind == "text" else None
        if extra is None:
            self.setMarkdown(segment.text)
        elif extra:
            cursor = QTextCursor(self.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(extra)
        self.segment = segment
        self._fit()

    def _fit(self) -> None:
        doc = self.document()
        width = max(50, self.viewport().width())
        if doc.textWidth() != width:  # setting it lays the whole document out again, even unchanged
            doc.setTextWidth(width)
        height = math.ceil(doc.size().height()) + 2
        if self.height() != height:
            self.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        event.ignore()  # let the conversation scroll


class CodeBlock(QFrame):
    """A fenced code block in a monospace font with its own Copy button."""

    def __init__(self, segment: Segment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("codeBlock")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.lang = QLabel()
        self.lang.setObjectName("muted")
        self.copy_button = QToolButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy"))
        self.texts.set(self.copy_button.setToolTip, lambda: self.tr("Copy this code"))
        self.copy_button.clicked.connect(self.copy)
        self.code = QLabel()
        self.code.setTextFormat(Qt.TextFormat.PlainText)
        self.code.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(self.lang, 1)
        top.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.addLayout(top)
        layout.addWidget(self.code)
        self.segment: Segment | None = None
        self.set_segment(segment)

    def set_segment(self, segment: Segment) -> None:
        if segment != self.segment:
            self.segment = segment
            self.lang.setText(segment.lang or self.tr("code"))
            self.code.setText(segment.text)

    def copy(self) -> None:
        if self.segment is not None:
            QGuiApplication.clipboard().setText(self.segment.text)


class MessageWidget(QFrame):
    """A message bubble. ``append`` + ``render`` are cheap: only changed segments are updated.

    A reply's thinking, tool calls and notices are built only when it has them.

    Args:
        message: The message shown.
        parent: The conversation's view.
        said: Warnings already shown in the conversation, and under which message (shared by its
            bubbles; None: each bubble shows its own).

    Signals:
        edit_requested(int), regenerate_requested(int): message id.
        answer_step_requested(int): -1 / +1, "‹" / "›" between the kept answers to the question.
        retry_unparsed_requested(int): "Retry without format parsing" (message id).
        tool_decided(int, str, str): the user answered a tool call (message id, call id, decision).
        citation_opened(object): a citation of the reply was clicked (its ``Citation``).
    """

    edit_requested = Signal(int)
    regenerate_requested = Signal(int)
    answer_step_requested = Signal(int)
    retry_unparsed_requested = Signal(int)
    tool_decided = Signal(int, str, str)
    citation_opened = Signal(object)

    def __init__(self, message: Message, parent: QWidget | None = None, *,
                 said: dict[str, int] | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.text = message.content
        self.rendered_text = ""  # what the widgets show: text appended since shows at the next render
        self.thinking_block: ThinkingBlock | None = None
        self.tool_boxes: dict[str, ToolCallBox] = {}
        self.result_view: ToolResultView | None = None
        self.notice: QLabel | None = None  # nothing arriving, a format failure
        self.waiting: QLabel | None = None  # why the reply has not started (its engine is busy)
        self.retry_unparsed_button: QPushButton | None = None
        self.check: QLabel | None = None  # the structured-output check
        # Warning → the message that shows it, shared by the bubbles of one conversation (the chat
        # page's): a warning such as "Runs on the CPU: …" is said under one reply, not every one.
        self.said = said
        self.live_tokens = 0
        self._counter_at = 0.0
        self._silent = False
        self._pending_thinking = ""
        role = message.role
        self.setObjectName({"user": "userMessage", "tool": "toolMessage"}.get(role, "assistantMessage"))
        self._background = (QPalette.ColorRole.AlternateBase if role == "user"
                            else QPalette.ColorRole.Window)
        self.role = QLabel()
        self.role.setObjectName("messageRole")
        self.body = QVBoxLayout()
        self.body.setSpacing(6)
        self.blocks: list[TextBlock | CodeBlock] = []
        self.stats = QLabel()
        self._build_footer(role)
        self.answer_switch: tuple[QPushButton, QLabel, QPushButton] | None = None  # built when first needed
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 6)
        layout.addWidget(self.role)
        # Attached images sit above the text, as they were sent.
        self.images: list[ImageThumb] = []
        if message.images:
            row = QHBoxLayout()
            for image in message.images:
                thumb = ImageThumb(image, MESSAGE_THUMB, self)
                self.images.append(thumb)
                row.addWidget(thumb)
            row.addStretch(1)
            layout.addLayout(row)
        self.parts = QVBoxLayout()  # thinking (above the answer)
        self.parts.setSpacing(4)
        layout.addLayout(self.parts)
        layout.addLayout(self.body)
        self.tools = QVBoxLayout()  # tool calls and notices (below the answer)
        self.tools.setSpacing(4)
        layout.addLayout(self.tools)
        # Which passages of the attached documents went with the question, and its citations.
        self.sources = SourcesLabel(self)
        self.sources.opened.connect(self.citation_opened.emit)
        layout.addWidget(self.sources)
        # The statistics get the bubble's width, on a line of their own: beside the buttons they
        # were squeezed into a column about 11 lines high.
        layout.addWidget(self.stats)
        layout.addLayout(self._actions)
        if role == "tool":
            self.result_view = ToolResultView(message, self)
            self.tools.addWidget(self.result_view)
            self.copy_button.hide()  # the result has its own Copy
        self.render_text()
        self.set_message(message)
        keep_translated(self, self._retranslate, now=False)

    def _set_texts(self) -> None:
        """The texts that do not depend on the message's state: who speaks, the actions."""
        self.role.setText({"user": self.tr("You"), "tool": self.tr("Tool")}.get(self.message.role,
                                                                                  self.tr("Assistant")))
        self.copy_button.setText(self.tr("Copy"))
        self.edit_button.setText(self.tr("Edit"))
        self.regenerate_button.setText(self.tr("Regenerate"))

    def _retranslate(self) -> None:
        """The language changed: every text again, the saved state's included (a streaming reply's
        counter follows at its next token)."""
        self._set_texts()
        if self.message.status != STREAMING:
            self.forget_warnings()  # said again in the new language, by the first bubble that has it
            self.set_message(self.message)

    def _build_footer(self, role: str) -> None:
        """The statistics line, the live counter and the actions (Copy, Edit, Regenerate)."""
        self.stats.setObjectName("muted")
        self.stats.setWordWrap(True)
        self.stats.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The live counter: one line that does not wrap (a wrapping label re-lays the bubble out at
        # each change), shown while the reply streams.
        self.counter = QLabel()
        self.counter.setTextFormat(Qt.TextFormat.PlainText)  # it names the tool the model is calling
        self.counter.setObjectName("muted")
        self.counter.hide()
        self.copy_button = self._action("", self.copy)
        self.edit_button = self._action("", lambda: self.edit_requested.emit(self.message.id))
        self.regenerate_button = self._action("", lambda: self.regenerate_requested.emit(self.message.id))
        self._set_texts()
        self.edit_button.setVisible(role == "user")
        self.regenerate_button.setVisible(False)
        self.stats.hide()  # shown once there is something to say
        actions = QHBoxLayout()
        actions.addWidget(self.counter)
        actions.addStretch(1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.edit_button)
        actions.addWidget(self.regenerate_button)
        self._actions = actions

    def show_answer_choice(self, index: int, count: int) -> None:
        """Show "‹ index/count ›" (several answers to the question) or nothing (one)."""
        if count <= 1:
            if self.answer_switch is not None:
                for w in self.answer_switch:
                    w.hide()
            return
        if self.answer_switch is None:
            back = self._action("‹", lambda: self.answer_step_requested.emit(-1))
            label = QLabel()
            label.setObjectName("muted")
            forward = self._action("›", lambda: self.answer_step_requested.emit(1))
            back.setToolTip(self.tr("Previous answer"))
            forward.setToolTip(self.tr("Next answer"))
            for i, part in enumerate((back, label, forward)):
                self._actions.insertWidget(2 + i, part)  # after the statistics
            self.answer_switch = (back, label, forward)
        back, label, forward = self.answer_switch
        label.setText(f"{index}/{count}")
        label.setToolTip(self.tr("Answer %1 of %2: Regenerate keeps the earlier ones").replace(
            "%1", str(index)).replace("%2", str(count)))
        back.setEnabled(index > 1)
        forward.setEnabled(index < count)
        for w in self.answer_switch:
            w.show()

    def _action(self, text: str, slot: object) -> QPushButton:
        # Parented at once: a parentless button made visible before it is laid out is a top-level
        # window for a moment, which took the focus and closed an open menu (the model picker).
        b = QPushButton(text, self)
        b.setFlat(True)
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        b.clicked.connect(slot)
        return b

    # -- streaming -------------------------------------------------------------------------------
    def append(self, text: str) -> None:
        """Add streamed answer text (rendered at the next :meth:`render_text`)."""
        self.text += text

    def append_thinking(self, text: str) -> None:
        """Add streamed thinking (rendered at the next :meth:`render_text`)."""
        self._pending_thinking += text

    @property
    def thinking_text(self) -> str:
        block = self.thinking_block
        return (block.text if block is not None else "") + self._pending_thinking

    def _thinking(self) -> ThinkingBlock:
        if self.thinking_block is None:
            self.thinking_block = ThinkingBlock(self)
            self.parts.addWidget(self.thinking_block)
        return self.thinking_block

    def set_live(self, tokens: int, tool: str = "") -> None:
        """The live counter under a streaming reply (tokens of every kind so far)."""
        self.live_tokens = tokens
        now = time.monotonic()
        if now - self._counter_at < COUNTER_GAP_S or self.message.status != STREAMING:
            return
        self._counter_at = now
        self._show_counter(tool)

    def _show_counter(self, tool: str = "") -> None:
        if tool:
            text = self.tr("Writing a call to {0}… {1:,} tokens").format(shown(tool), self.live_tokens)
        else:
            text = self.tr("Generating… {0:,} tokens").format(self.live_tokens)
        self.counter.setText(text)
        if self.counter.isHidden():
            self.counter.show()
        block = self.thinking_block
        if block is not None and not self.text:
            block.show_live(self.live_tokens)

    def set_progress(self, progress: ReplyProgress) -> None:
        """What the engine says while nothing arrives: the counter moves on; after a while, a notice."""
        if self.message.status != STREAMING:
            return
        self.live_tokens = max(self.live_tokens, progress.tokens)
        self._counter_at = time.monotonic()
        self._show_counter()
        if progress.silent:
            self._silent = True
            self._show_notice(self.tr(
                "The engine has generated {0:,} tokens, but nothing has arrived for {1}. The model may be writing "
                "something its chat format holds back (a tool call, a structured reply) or thinking the server does "
                "not stream. Stop keeps what arrived.").format(progress.tokens, duration_text(progress.silent_s)))

    def set_waiting(self, text: str) -> None:
        """Why the reply has not started yet, as the engine pool says ("Waiting: 1 request ahead
        for …"); "" once it has (the line goes)."""
        if not text or self.message.status != STREAMING:
            if self.waiting is not None:
                self.waiting.hide()
            return
        if self.waiting is None:
            self.waiting = QLabel()
            self.waiting.setObjectName("muted")
            self.waiting.setWordWrap(True)
            self.tools.insertWidget(0, self.waiting)
        self.waiting.setText(text)
        self.waiting.show()

    def _show_notice(self, text: str, *, retry: bool = False) -> None:
        if self.notice is None:
            self.notice = QLabel()
            self.notice.setObjectName("replyNotice")
            self.notice.setWordWrap(True)
            self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.tools.addWidget(self.notice)
        self.notice.setText(text)
        self.notice.show()
        if retry and self.retry_unparsed_button is None:
            self.retry_unparsed_button = QPushButton(self.tr("Retry without format parsing"))
            self.retry_unparsed_button.setToolTip(self.tr(
                "Reload this model's engine without chat-format parsing and answer this question again, once: the "
                "model's text then arrives as written (thinking and tool calls as plain text). The next reply parses "
                "again; to turn parsing off for this model for good, clear “Read thinking and tool calls” in Load "
                "options."))
            self.retry_unparsed_button.clicked.connect(lambda: self.retry_unparsed_requested.emit(self.message.id))
            row = QHBoxLayout()
            row.addWidget(self.retry_unparsed_button)
            row.addStretch(1)
            self.tools.addLayout(row)
        if self.retry_unparsed_button is not None:
            self.retry_unparsed_button.setVisible(retry)

    def _hide_notice(self) -> None:
        if self.notice is not None:
            self.notice.hide()
        if self.retry_unparsed_button is not None:
            self.retry_unparsed_button.hide()

    def render_text(self) -> None:
        """Bring the widgets in line with :attr:`text`, touching only segments that changed."""
        if self._pending_thinking:
            thinking = self._thinking()
            thinking.append(self._pending_thinking)
            self._pending_thinking = ""
            thinking.render_text()
            if not self.text and self.message.status == STREAMING:
                thinking.show_live(self.live_tokens)
        self.rendered_text = self.text
        structured = self._structured()
        if structured is not None:
            segments = [Segment("code", structured, "json")]
        elif self.message.role == "tool":
            segments = []  # the result shows folded in its own view
        else:
            segments = split_segments(self.text)
        if not segments and self.message.status == STREAMING and self.thinking_block is None:
            segments = [Segment("text", "…")]
        elif segments and self.thinking_block is not None and self.message.status == STREAMING:
            self.thinking_block.answer_started()
        for i, seg in enumerate(segments):
            if i < len(self.blocks):
                block = self.blocks[i]
                if (seg.kind == "code") == isinstance(block, CodeBlock):
                    block.set_segment(seg)
                    continue
                for old in self.blocks[i:]:
                    self.body.removeWidget(old)
                    old.deleteLater()
                del self.blocks[i:]
            new: TextBlock | CodeBlock = (
                CodeBlock(seg, self) if seg.kind == "code" else TextBlock(seg.text, self, background=self._background))
            if isinstance(new, TextBlock):
                new.set_segment(seg)
            self.blocks.append(new)
            self.body.addWidget(new)
        for old in self.blocks[len(segments):]:
            self.body.removeWidget(old)
            old.deleteLater()
        del self.blocks[len(segments):]

    def _structured(self) -> str | None:
        """The reply as indented JSON, when it is a finished structured-output reply that parses."""
        msg = self.message
        if msg.status != COMPLETE or "structured" not in msg.settings or not self.text:
            return None
        try:
            return json.dumps(json.loads(_unfenced(self.text)), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):  # a reply nested thousands deep is shown as its text
            return None

    def take_paint_cost(self) -> float:
        """CPU seconds its text blocks spent painting since the last call."""
        cost = 0.0
        for block in self.blocks:
            if isinstance(block, TextBlock):
                cost += block.paint_cost
                block.paint_cost = 0.0
        return cost

    # -- saved states ------------------------------------------------------------------------------
    def set_message(self, message: Message) -> None:
        """A saved state of the message (finished, interrupted, reset for a retry, a tool call's news)."""
        self.message = message
        if message.status != STREAMING or not message.content:
            self.text = message.content  # final text, or a reply restarted on another engine
        if message.status != STREAMING or message.thinking:
            self._set_thinking(message)
        self.render_text()
        if self.result_view is not None:
            self.result_view.set_message(message)
        self._show_tool_calls(message)
        if message.role == "assistant":
            self.sources.show_message(message)
        status = {
            INTERRUPTED: self.tr("Interrupted: the engine stopped before the reply finished."),
            STOPPED: self.tr("Stopped."),
            FAILED: self.tr("No reply: the engine failed."),
            FORMAT_FAILED: self.tr("The reply stopped here."),
        }.get(message.status, "")
        if message.status == FORMAT_FAILED:
            # The model's doing, not the engine's: said in plain words, everything received kept.
            self._show_notice(self.tr(
                "The model's output did not match its chat format, so the engine could not read it as thinking, "
                "answer or tool calls. Everything that arrived is kept above."),
                retry=message.ran_on.startswith("local:"))
        elif message.status == STREAMING:
            if not self._silent:
                self._hide_notice()
        else:
            self._silent = False
            self._hide_notice()
        if message.role != "assistant":
            summary = ""
        elif message.status == STREAMING:
            summary = ""
            # The counter appears a moment into the reply: the first pieces are painted without
            # waiting for a label's layout, and a quick reply needs no counter.
            self._counter_at = time.monotonic()
        else:
            # The status sentence already says how it ended: the statistics do not repeat it.
            summary = " · ".join(unbroken_units(core_text(p))
                                 for p in message.stats.summary_parts(with_reason=not status))
        if message.status != STREAMING:
            self.counter.hide()
            self.set_waiting("")
            text = "  ".join(p for p in (status, summary) if p)
            # A reply far below the hardware's limit says why, with the fix (core's words).
            limit = message.stats.extra.get("limit") if message.role == "assistant" else None
            warnings = _limit_warnings(limit) if isinstance(limit, dict) else []
            slow_path = message.stats.slow_path if message.role == "assistant" else None
            if slow_path:  # a ROCm prefill on the untuned path: which check failed, and the fix
                warnings.append(core_text(slow_path))
            warnings = [w for w in warnings if self._says(w)]
            if warnings:
                text += "\n" + "\n".join("⚠ " + w for w in warnings)
            self.stats.setText(text)
        else:
            self.stats.setText("")
        self.stats.setVisible(bool(self.stats.text()))
        self._show_check(message)
        self.copy_button.setEnabled(message.status != STREAMING)

    def _says(self, warning: str) -> bool:
        """Whether this bubble shows ``warning``: the first bubble of its conversation to have it does."""
        if self.said is None:
            return True
        return self.said.setdefault(warning, self.message.id) == self.message.id

    def forget_warnings(self) -> None:
        """The bubble goes (a reply regenerated): the next reply with its warnings shows them."""
        if self.said is not None:
            for warning in [w for w, owner in self.said.items() if owner == self.message.id]:
                del self.said[warning]

    def _set_thinking(self, message: Message) -> None:
        if not message.thinking and self.thinking_block is None:
            return
        thinking = self._thinking()
        self._pending_thinking = ""
        if thinking.text.strip() != message.thinking:
            thinking.text = message.thinking
        thinking.render_text()
        thinking.setVisible(bool(message.thinking))
        if message.status != STREAMING:
            thinking.show_done(message.stats.thinking_s, message.stats.thinking_n or None,
                               answered=bool(message.content.strip() or message.tool_calls))

    def _show_tool_calls(self, message: Message) -> None:
        for record in message.tool_calls:
            box = self.tool_boxes.get(record.id)
            if box is None:
                box = ToolCallBox(record, self)
                box.decided.connect(lambda call_id, decision: self.tool_decided.emit(self.message.id, call_id,
                                                                                      decision))
                self.tool_boxes[record.id] = box
                self.tools.insertWidget(len(self.tool_boxes) - 1, box)
            else:
                box.set_record(record)

    def ask_tool(self, call_id: str, server: str, description: str) -> bool:
        """Show "Allow once / Always allow this tool / Deny" on the call (False: no such call shown)."""
        box = self.tool_boxes.get(call_id)
        if box is None:
            return False
        box.ask(server, description)
        return True

    def stop_asking(self, call_id: str) -> None:
        box = self.tool_boxes.get(call_id)
        if box is not None:
            box.stop_asking()

    def _show_check(self, message: Message) -> None:
        check = message.settings.get("structured")
        if not isinstance(check, dict) or message.status != COMPLETE:
            if self.check is not None:
                self.check.hide()
            return
        if self.check is None:
            self.check = QLabel()
            self.check.setObjectName("jsonCheck")
            self.check.setWordWrap(True)
            self.check.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.tools.addWidget(self.check)
        problems = [str(p) for p in check.get("problems") or []]
        schema = check.get("mode") == "schema"
        if not problems:
            text = self.tr("✓ Valid JSON that follows the schema.") if schema else self.tr("✓ Valid JSON.")
        else:
            head = self.tr("The reply does not match the schema:") if schema else self.tr("The reply is not valid JSON:")
            text = "\n".join([head] + [f"• {p}" for p in problems])
        self.check.setText(text)
        self.check.setProperty("ok", not problems)
        self.check.show()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self._structured() or self.text)


_NUMBER_UNIT = re.compile(r"(\d) (?=tok/s|%)")


def unbroken_units(text: str) -> str:
    """``text`` with no line break inside "tok/s" (a word joiner after the slash: it wrapped as
    "tok/ s") nor between a number and its unit (no-break spaces)."""
    return _NUMBER_UNIT.sub("\\1\u00a0", text).replace("tok/s", "tok/\u2060s")


def _unfenced(text: str) -> str:
    """A reply's JSON without the Markdown fence some remote servers wrap it in."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and "\n" in body:
        return body[body.index("\n") + 1:-3]
    return body


def _limit_warnings(limit: dict[str, Any]) -> list[str]:
    """A reply's limit warnings in the reader's language (replies saved before they were kept as
    templates: as they were written)."""
    saved = limit.get("warning_texts")
    if isinstance(saved, list):
        return [core_text(from_json(w)) for w in saved]
    return [str(w) for w in limit.get("warnings", [])]
