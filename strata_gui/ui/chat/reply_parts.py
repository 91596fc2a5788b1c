"""Parts of a reply besides its answer: the model's thinking, the tool calls it asked for, a tool's
result, and the reply's notices (nothing arriving, a format failure, a JSON check).

Each part is built only when a reply has it, so a plain reply costs nothing more than before.
"""

from __future__ import annotations

import json
import time

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ChatError, shown
from strata_gui.core.chat import (
    TOOL_ALLOWED,
    TOOL_DENIED,
    TOOL_ERROR,
    TOOL_PENDING,
    TOOL_RUNNING,
    TOOL_STOPPED,
    Message,
    ToolCallRecord,
)
from strata_gui.core.runtime import parse_tool_arguments
from strata_gui.ui.i18n import LiveTexts

MAX_ARGUMENT_CHARS = 2_000  # arguments that are not a JSON object are shown as written, up to this
MAX_SHOWN_CHARS = 20_000  # a tool result longer than this is cut in the view (Copy takes it all)


def duration_text(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``2 min 5 s``, in the user's language."""
    if seconds < 10:
        return QCoreApplication.translate("ReplyParts", "{0:.1f} s").format(seconds)
    if seconds < 60:
        return QCoreApplication.translate("ReplyParts", "{0:.0f} s").format(seconds)
    minutes, rest = divmod(round(seconds), 60)
    if not rest:
        return QCoreApplication.translate("ReplyParts", "{0} min").format(minutes)
    return QCoreApplication.translate("ReplyParts", "{0} min {1} s").format(minutes, rest)


class PlainView(QPlainTextEdit):
    """Read-only plain text as tall as its lines, up to ``max_height``; longer text scrolls inside it."""

    def __init__(self, max_height: int) -> None:
        super().__init__()
        self._max_height = max_height
        self.document().contentsChanged.connect(self.fit)

    def fit(self) -> None:
        lines = max(1, int(self.document().size().height()))  # wrapped lines (plain-text layout)
        margins = self.contentsMargins()
        wanted = (lines * self.fontMetrics().lineSpacing() + 2 * int(self.document().documentMargin())
                  + margins.top() + margins.bottom() + 2)
        height = min(self._max_height, wanted)
        if self.height() != height:
            self.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit()


def _plain_view(text: str, max_height: int = 260) -> PlainView:
    """Read-only plain text that scrolls inside itself when long (thinking, tool results)."""
    view = PlainView(max_height)
    view.setReadOnly(True)
    view.setFrameShape(QFrame.Shape.NoFrame)
    view.setPlainText(text)
    view.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    palette = view.palette()
    palette.setColor(QPalette.ColorRole.Base, palette.color(QPalette.ColorRole.Window))
    palette.setColor(QPalette.ColorRole.Text, palette.color(QPalette.ColorRole.PlaceholderText))
    view.setPalette(palette)
    return view


class ThinkingBlock(QFrame):
    """The model's thinking, above its answer: open while it thinks, folded once the answer starts
    (unless the reader opened or closed it), with its length and Copy.

    The header reads "Thinking… 120 tokens" while it streams, "Thought for 12 s · 840 tokens" after.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("thinkingBlock")
        self.text = ""
        self._shown = ""
        self._started = time.monotonic()
        self._ended: float | None = None
        self._tokens = 0
        self.user_chose = False  # the reader opened or folded it: the answer no longer folds it
        self.toggle = QToolButton()
        self.toggle.setObjectName("thinkingToggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setAutoRaise(True)
        self.toggle.clicked.connect(self._clicked)
        self.copy_button = QToolButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy"))
        self.texts.set(self.copy_button.setToolTip, lambda: self.tr("Copy the thinking"))
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy)
        self.view = _plain_view("")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.toggle)
        top.addStretch(1)
        top.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.view)
        self.show_live(0)

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_expanded(self, on: bool) -> None:
        self.toggle.setChecked(on)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.view.setVisible(on)

    def _clicked(self, on: bool) -> None:
        self.user_chose = True
        self.set_expanded(on)

    def append(self, text: str) -> None:
        self.text += text

    def render_text(self) -> None:
        """Show the text gathered since the last render (appended, not re-laid out)."""
        if self.text == self._shown:
            return
        if self.text.startswith(self._shown):
            self.view.moveCursor(self.view.textCursor().MoveOperation.End)
            self.view.insertPlainText(self.text[len(self._shown):])
        else:
            self.view.setPlainText(self.text)
        self._shown = self.text
        bar = self.view.verticalScrollBar()
        bar.setValue(bar.maximum())  # the newest thinking in view while it streams

    def show_live(self, tokens: int) -> None:
        """While thinking: "Thinking… N tokens"."""
        self._tokens = tokens
        self.toggle.setText(self.tr("Thinking… {0:,} tokens").format(tokens) if tokens else self.tr("Thinking…"))

    def answer_started(self) -> None:
        """The answer began: the thinking is over; fold it unless the reader chose otherwise."""
        if self._ended is None:
            self._ended = time.monotonic()
            self.toggle.setText(self.tr("Thought for {0}").format(duration_text(self._ended - self._started)))
        if not self.user_chose:
            self.set_expanded(False)

    def show_done(self, seconds: float | None, tokens: int | None, *, answered: bool = True) -> None:
        """The thinking as saved: "Thought for 12 s · 840 tokens", folded under an answer unless the
        reader opened it (a reply that is only thinking stays open: it is all there is to read)."""
        parts = []
        if seconds is not None:
            parts.append(self.tr("Thought for {0}").format(duration_text(seconds)))
        else:
            parts.append(self.tr("Thinking"))
        if tokens:
            parts.append(self.tr("{0:,} tokens").format(tokens))
        self.toggle.setText(" · ".join(parts))
        if not self.user_chose:
            self.set_expanded(not answered)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text.strip())


class ToolCallBox(QFrame):
    """One tool call a reply asked for: the tool, its arguments, what became of it, and while it
    waits for the user, "Allow once / Always allow this tool / Deny".

    Signals:
        decided(str call_id, str decision): ``"allow_once"``, ``"always"`` or ``"deny"``.
    """

    decided = Signal(str, str)

    def __init__(self, record: ToolCallRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("toolCall")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.record = record
        # The tool's name, arguments and description are the server's and the model's words: plain text
        # (a name holding HTML would otherwise be drawn as HTML) with control characters shown.
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setObjectName("toolCallTitle")
        self.state = QLabel()
        self.state.setObjectName("muted")
        self.state.setWordWrap(True)
        self.arguments = QLabel()
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.arguments.setTextFormat(Qt.TextFormat.PlainText)
        self.arguments.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.arguments.setWordWrap(True)
        self.question = QLabel()
        self.question.setTextFormat(Qt.TextFormat.PlainText)
        self.question.setWordWrap(True)
        self.allow_button = QPushButton()
        self.texts.set(self.allow_button.setText, lambda: self.tr("Allow once"))
        self.always_button = QPushButton()
        self.texts.set(self.always_button.setText, lambda: self.tr("Always allow this tool"))
        self.deny_button = QPushButton()
        self.texts.set(self.deny_button.setText, lambda: self.tr("Deny"))
        self.allow_button.clicked.connect(lambda: self._decide("allow_once"))
        self.always_button.clicked.connect(lambda: self._decide("always"))
        self.deny_button.clicked.connect(lambda: self._decide("deny"))
        buttons = QHBoxLayout()
        buttons.addWidget(self.question, 1)
        buttons.addWidget(self.allow_button)
        buttons.addWidget(self.always_button)
        buttons.addWidget(self.deny_button)
        self.approval = QWidget()
        self.approval.setLayout(buttons)
        buttons.setContentsMargins(0, 0, 0, 0)
        self.approval.hide()
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addWidget(self.state, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addLayout(head)
        layout.addWidget(self.arguments)
        layout.addWidget(self.approval)
        self.set_record(record)

    @property
    def asking(self) -> bool:
        return not self.approval.isHidden()

    def set_record(self, record: ToolCallRecord, server: str = "") -> None:
        self.record = record
        self.title.setText(self.tr("Tool call: {0}").format(shown(record.name)))
        try:
            args = json.dumps(parse_tool_arguments(record.arguments), indent=2, ensure_ascii=False)
        except ChatError:  # as the model wrote them, cut (the call's result says why they were refused)
            args = record.arguments if len(record.arguments) <= MAX_ARGUMENT_CHARS else (
                record.arguments[:MAX_ARGUMENT_CHARS] + "…")
        self.arguments.setText(shown(args))
        texts = {
            TOOL_PENDING: self.tr("waiting for your answer"),
            TOOL_RUNNING: self.tr("running…"),
            TOOL_ALLOWED: self.tr("done in {0}").format(duration_text(record.duration_s or 0.0)),
            TOOL_DENIED: self.tr("denied"),
            TOOL_ERROR: self.tr("failed"),
            TOOL_STOPPED: self.tr("stopped"),
        }
        self.state.setText(texts.get(record.status, record.status))
        if record.status != TOOL_PENDING:
            self.approval.hide()

    def ask(self, server: str, description: str) -> None:
        """Show the question and the three answers (nothing runs unasked)."""
        text = self.tr("Run {0} of the tool server {1}?").format(shown(self.record.name), shown(server))
        if description.strip():
            text += "\n" + shown(description.strip().splitlines()[0])
        self.question.setText(text)
        self.approval.show()
        self.allow_button.setFocus()

    def stop_asking(self) -> None:
        self.approval.hide()

    def _decide(self, decision: str) -> None:
        self.approval.hide()
        self.decided.emit(self.record.id, decision)


class ToolResultView(QFrame):
    """A ``tool`` message: the result of one call, folded to one line until opened."""

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("toolResult")
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self.set_expanded)
        self.copy_button = QToolButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy"))
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy)
        self.details = QLabel()
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setObjectName("muted")
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.view = _plain_view("", 200)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.toggle)
        top.addStretch(1)
        top.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.view)
        layout.addWidget(self.details)
        self.message: Message = message
        self.set_message(message)
        self.set_expanded(False)

    @property
    def failed(self) -> bool:
        return bool(self.message.settings.get("outcome", "ok") != "ok")

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.message.content)

    def set_message(self, message: Message) -> None:
        self.message = message
        server = shown(str(message.settings.get("server") or ""))
        outcome = str(message.settings.get("outcome") or "ok")
        name = shown(message.tool_name) or self.tr("tool")
        if outcome == "ok":
            head = self.tr("Result of {0}").format(name) + (f" ({server})" if server else "")
        elif outcome == "denied":
            head = self.tr("{0} was not run: you denied it").format(name)
        elif outcome == "stopped":
            head = self.tr("{0} was stopped").format(name)
        else:
            # A server that crashed, hung or failed: said here, in the conversation; the chat goes on.
            head = self.tr("{0} failed: {1}").format(name, shown(message.content.splitlines()[0]) if message.content
                                                     else "")
        self.toggle.setText(head)
        self.toggle.setToolTip(head)
        cut = message.content if len(message.content) <= MAX_SHOWN_CHARS else (
            message.content[:MAX_SHOWN_CHARS] + "\n…")
        self.view.setPlainText(shown(cut))  # Copy takes the result as the server sent it
        details = str(message.settings.get("details") or "")
        self.details.setText(shown(details))

    def set_expanded(self, on: bool) -> None:
        if self.toggle.isChecked() != on:
            self.toggle.setChecked(on)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.view.setVisible(on)
        self.details.setVisible(on and bool(self.details.text()))
