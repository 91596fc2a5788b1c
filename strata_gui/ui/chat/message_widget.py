"""One message: role, Markdown body with copyable code blocks, a statistics line, actions."""

from __future__ import annotations

import math
import time

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

from strata_gui.core.chat import FAILED, INTERRUPTED, STOPPED, STREAMING, Message
from strata_gui.ui.chat.attachments import ImageThumb
from strata_gui.ui.chat.markdown import Segment, plain_extension, split_segments

MESSAGE_THUMB = 160


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
        self.setObjectName("codeBlock")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.lang = QLabel()
        self.lang.setObjectName("muted")
        self.copy_button = QToolButton()
        self.copy_button.setText(self.tr("Copy"))
        self.copy_button.setToolTip(self.tr("Copy this code"))
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

    Signals:
        copy_requested(int), edit_requested(int), regenerate_requested(int): message id.
    """

    edit_requested = Signal(int)
    regenerate_requested = Signal(int)

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.text = message.content
        self.rendered_text = ""  # what the widgets show: text appended since shows at the next render
        self.setObjectName("userMessage" if message.role == "user" else "assistantMessage")
        self._background = (QPalette.ColorRole.AlternateBase if message.role == "user"
                            else QPalette.ColorRole.Window)
        self.role = QLabel(self.tr("You") if message.role == "user" else self.tr("Assistant"))
        self.role.setObjectName("messageRole")
        self.body = QVBoxLayout()
        self.body.setSpacing(6)
        self.blocks: list[TextBlock | CodeBlock] = []
        self.stats = QLabel()
        self.stats.setObjectName("muted")
        self.stats.setWordWrap(True)
        self.stats.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_button = self._action(self.tr("Copy"), self.copy)
        self.edit_button = self._action(self.tr("Edit"), lambda: self.edit_requested.emit(self.message.id))
        self.regenerate_button = self._action(self.tr("Regenerate"),
                                              lambda: self.regenerate_requested.emit(self.message.id))
        self.edit_button.setVisible(message.role == "user")
        self.regenerate_button.setVisible(False)
        actions = QHBoxLayout()
        actions.addWidget(self.stats, 1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.edit_button)
        actions.addWidget(self.regenerate_button)
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
        layout.addLayout(self.body)
        layout.addLayout(actions)
        self.render_text()
        self.set_message(message)

    def _action(self, text: str, slot: object) -> QPushButton:
        b = QPushButton(text)
        b.setFlat(True)
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        b.clicked.connect(slot)
        return b

    def append(self, text: str) -> None:
        """Add streamed text (rendered at the next :meth:`render_text`)."""
        self.text += text

    def render_text(self) -> None:
        """Bring the widgets in line with :attr:`text`, touching only segments that changed."""
        self.rendered_text = self.text
        segments = split_segments(self.text)
        if not segments and self.message.status == STREAMING:
            segments = [Segment("text", "…")]
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

    def take_paint_cost(self) -> float:
        """CPU seconds its text blocks spent painting since the last call."""
        cost = 0.0
        for block in self.blocks:
            if isinstance(block, TextBlock):
                cost += block.paint_cost
                block.paint_cost = 0.0
        return cost

    def set_message(self, message: Message) -> None:
        """A saved state of the message (finished, interrupted, reset for a retry)."""
        self.message = message
        if message.status != STREAMING or not message.content:
            self.text = message.content  # final text, or a reply restarted on another engine
        self.render_text()
        status = {
            INTERRUPTED: self.tr("Interrupted: the engine stopped before the reply finished."),
            STOPPED: self.tr("Stopped."),
            FAILED: self.tr("No reply: the engine failed."),
        }.get(message.status, "")
        # The status sentence already says how it ended: the statistics do not repeat it.
        summary = message.stats.summary(with_reason=not status) if message.role == "assistant" else ""
        self.stats.setText("  ".join(p for p in (status, summary) if p))
        self.copy_button.setEnabled(message.status != STREAMING)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text)
