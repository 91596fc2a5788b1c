"""Documents in the chat: the conversation's Documents panel (attach, progress with Cancel, remove,
re-index), a reply's sources (which happened, and its citations as links), and the passage a
citation opens (a PDF's page drawn with the passage marked; other documents' passage as text).

Reading, indexing, retrieval and drawing the page are the core's (:mod:`strata_gui.core.documents`);
this module shows them.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import Progress, format_bytes
from strata_gui.core.chat import Message
from strata_gui.core.documents import (
    HYBRID,
    WHOLE,
    Citation,
    DocumentService,
    PageImage,
    StoredDocument,
    citations_of,
    render_page,
)
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.i18n import error_line

if TYPE_CHECKING:
    from strata_gui.core.config import SettingsService

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp"})


def is_image(path: Path) -> bool:
    """Whether a dropped or chosen file goes to the model as a picture (else as a document)."""
    return path.suffix.lower() in IMAGE_SUFFIXES


class DocumentsPanel(QWidget):
    """The open conversation's documents: each with its size, passages, Remove and Re-index; a bar
    with Cancel while one is read, indexed or embedded. Hidden while the conversation has none.

    Signals:
        reported(str, str): something to tell the user (text, level), shown by the page's notice.
    """

    reported = Signal(str, str)

    def __init__(self, documents: DocumentService, bridge: AsyncBridge, parent: QWidget | None = None, *,
                 settings: SettingsService | None = None,
                 embedding_models: Callable[[], Awaitable[list[Path]]] | None = None) -> None:
        super().__init__(parent)
        self.documents = documents
        self.bridge = bridge
        self._settings = settings
        self._embedding_models = embedding_models
        self.conversation_id: int | None = None
        self.task: TaskHandle | None = None
        self.models_task: TaskHandle | None = None
        self.title = QLabel()
        self.title.setObjectName("muted")
        self.list = QListWidget()
        self.list.setMaximumHeight(64)
        self.remove_button = QPushButton(self.tr("Remove"))
        self.remove_button.setToolTip(self.tr("Take this document from the conversation"))
        self.remove_button.clicked.connect(self.remove_selected)
        self.reindex_button = QPushButton(self.tr("Re-index"))
        self.reindex_button.setToolTip(self.tr("Read the file again and rebuild its index"))
        self.reindex_button.clicked.connect(self.reindex_selected)
        self.bar = QProgressBar()
        self.bar.setFixedHeight(14)
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        buttons = QVBoxLayout()
        for button in (self.remove_button, self.reindex_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.list, 1)
        row.addLayout(buttons)
        busy = QHBoxLayout()
        busy.addWidget(self.bar, 1)
        busy.addWidget(self.cancel_button)
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addStretch(1)
        head.addWidget(self._build_vectors())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(head)
        layout.addLayout(row)
        layout.addLayout(busy)
        self._show_busy(False)
        follow(self, documents.events, lambda e: self.refresh() if e.conversation_id == self.conversation_id else None)
        self.refresh()

    def _build_vectors(self) -> QComboBox:
        """"Search: Full text only / full text and vectors from <embedding model>" (Settings' embedding model)."""
        self.vectors = QComboBox()
        self.vectors.setToolTip(self.tr("Passages are found by their words (SQLite full-text search); with an "
                                        "embedding model of the library, also by their meaning"))
        self._fill_vectors([])
        self.vectors.activated.connect(self._vectors_chosen)
        return self.vectors

    def showEvent(self, event: QShowEvent) -> None:
        """List the embedding models each time the panel appears (the library changes; composing the
        page must not start work: it may be built before the event loop runs)."""
        super().showEvent(event)
        self.list_models()

    def list_models(self) -> TaskHandle | None:
        """List the library's embedding models in the search choice (again: the library changes)."""
        if self._embedding_models is None:
            return None
        models = self._embedding_models
        handle = self.bridge.run(lambda _p: models(), name="List embedding models", show_errors=False)
        handle.succeeded.connect(self._fill_vectors)
        self.models_task = handle
        return handle

    def _fill_vectors(self, models: list[Path]) -> None:
        chosen = self._settings.current.embedding_model if self._settings is not None else ""
        paths = list(models)
        if chosen and Path(chosen) not in paths:
            paths.append(Path(chosen))
        self.vectors.clear()
        self.vectors.addItem(self.tr("Full-text search only"), "")
        for path in paths:
            self.vectors.addItem(self.tr("Full text and vectors: %1").replace("%1", path.name), str(path))
        self.vectors.setCurrentIndex(max(0, self.vectors.findData(chosen)))
        self.vectors.setEnabled(self._settings is not None and len(paths) > 0)

    def _vectors_chosen(self, index: int) -> None:
        if self._settings is not None:
            self._settings.update(embedding_model=str(self.vectors.itemData(index) or ""))

    def show_conversation(self, conversation_id: int | None) -> None:
        self.conversation_id = conversation_id
        self.refresh()
        if self.isVisible():
            self.list_models()

    def refresh(self) -> None:
        docs = self.documents.documents(self.conversation_id) if self.conversation_id is not None else []
        self.list.clear()
        for doc in docs:
            item = QListWidgetItem(self._describe(doc))
            item.setData(Qt.ItemDataRole.UserRole, doc.id)
            item.setToolTip("\n".join([doc.path, *[n for n in doc.notes.splitlines() if n]]))
            self.list.addItem(item)
        if docs:
            self.list.setCurrentRow(0)
        self.title.setText(self.tr("Documents (%n)", "", len(docs)))
        self.setVisible(bool(docs) or self._busy)

    def _describe(self, doc: StoredDocument) -> str:
        pages = self.tr(", %n pages", "", doc.pages) if doc.pages else ""
        passages = self.tr("%n passages", "", doc.chunks)
        note = " ⚠" if doc.notes else ""
        return f"{doc.name} ({format_bytes(doc.size)}{pages}, {passages}){note}"

    @property
    def _busy(self) -> bool:
        return self.task is not None and self.task.is_running

    def _show_busy(self, on: bool) -> None:
        self.bar.setVisible(on)
        self.cancel_button.setVisible(on)
        self.remove_button.setEnabled(not on)
        self.reindex_button.setEnabled(not on)

    def _selected(self) -> int | None:
        item = self.list.currentItem()
        return int(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def attach(self, conversation_id: int, paths: list[Path]) -> TaskHandle | None:
        """Index ``paths`` into the conversation, one after another, with progress and Cancel."""
        if self._busy or not paths:
            return None
        self.conversation_id = conversation_id
        docs = self.documents

        async def run(on_progress: Callable[[Progress], None]) -> list[str]:
            notes: list[str] = []
            for path in paths:
                attached = await docs.attach(conversation_id, path, on_progress)
                notes.extend(attached.notes)
                if attached.vectors_missing:
                    notes.append(self.tr("%n passages have no vectors yet (the embedding engine failed: %1); "
                                         "full-text search works, and the next question tries again.", "",
                                         attached.vectors_missing).replace("%1", docs.last_embedding_error))
            return notes

        return self._run(run, self.tr("Attach documents"))

    def reindex_selected(self) -> TaskHandle | None:
        doc_id, conv = self._selected(), self.conversation_id
        if doc_id is None or conv is None or self._busy:
            return None
        docs = self.documents

        async def run(on_progress: Callable[[Progress], None]) -> list[str]:
            return list((await docs.reindex(conv, doc_id, on_progress)).notes)

        return self._run(run, self.tr("Re-index document"))

    def remove_selected(self) -> TaskHandle | None:
        """Remove the selected document (its index is deleted off the GUI thread: a long one's
        chunks and full-text rows take seconds)."""
        doc_id, conv = self._selected(), self.conversation_id
        if doc_id is None or conv is None or self._busy:
            return None
        docs = self.documents

        async def run(_on_progress: Callable[[Progress], None]) -> list[str]:
            await docs.remove(conv, doc_id)
            return []

        return self._run(run, self.tr("Remove document"))

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _run(self, run: Callable[[Callable[[Progress], None]], object], name: str) -> TaskHandle:
        handle = self.bridge.run(run, name=name, show_errors=False)  # type: ignore[arg-type]
        self.task = handle
        self.bar.setRange(0, 0)
        self._show_busy(True)
        self.setVisible(True)
        handle.progress.connect(self._on_progress)
        handle.failed.connect(lambda err: self.reported.emit(error_line(err), "warning"))
        handle.succeeded.connect(self._tell)
        handle.finished.connect(self._on_finished)
        return handle

    def _tell(self, notes: list[str] | None) -> None:
        for note in notes or []:
            self.reported.emit(note, "info")

    def _on_progress(self, progress: Progress) -> None:
        if progress.total:
            self.bar.setRange(0, int(progress.total))
            self.bar.setValue(int(progress.done))
        else:
            self.bar.setRange(0, 0)
        self.bar.setFormat(progress.message + " %v/%m" if progress.total else progress.message)
        self.bar.setTextVisible(True)

    def _on_finished(self) -> None:
        self.task = None
        self._show_busy(False)
        self.refresh()


class SourcesLabel(QLabel):
    """Under a reply: which happened to the documents (whole, or passages retrieved and how), and
    each citation as a link that opens its passage.

    Signals:
        opened(object): a citation was clicked (its :class:`Citation`).
    """

    opened = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("muted")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.citations: list[Citation] = []
        self.linkActivated.connect(self._clicked)
        self.hide()

    def show_message(self, message: Message) -> None:
        record = message.settings.get("documents")
        if not isinstance(record, dict):
            self.citations = []
            self.hide()
            return
        self.citations = citations_of(message.settings)
        search = self.tr("full text and vectors") if record.get("search") == HYBRID else self.tr("full text")
        if record.get("mode") == WHOLE:
            said = self.tr("The attached documents went whole with the question.")
        else:
            used = record.get("used")
            said = self.tr("The %n most relevant passages of the attached documents went with the question (%1).",
                           "", len(used) if isinstance(used, list) else 0).replace("%1", search)
        links = " ".join(f'<a href="cite:{i}">[{c.number}] {html.escape(c.label())}</a>'
                         for i, c in enumerate(self.citations))
        self.setText(f"{html.escape(said)}<br>{self.tr('Sources:')} {links}" if links else html.escape(said))
        self.show()

    def _clicked(self, link: str) -> None:
        index = int(link.removeprefix("cite:"))
        if 0 <= index < len(self.citations):
            self.opened.emit(self.citations[index])


class PassageDialog(QDialog):
    """The passage a citation names: a PDF's page drawn with the passage marked (Previous/Next to
    turn pages), or, for other documents, the passage as text under its heading."""

    def __init__(self, documents: DocumentService, bridge: AsyncBridge, citation: Citation,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.citation = citation
        self.bridge = bridge
        self.setWindowTitle(citation.label())
        self.resize(780, 700)
        self.page_view = QLabel()
        self.page_view.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        scroll = QScrollArea()
        scroll.setWidget(self.page_view)
        scroll.setWidgetResizable(True)
        self.page_scroll = scroll
        self.page_label = QLabel()
        self.text_view = QTextBrowser()
        passage = documents.passage(citation.chunk_id)
        self.passage_text = passage.text if passage is not None else ""
        self.page_image: PageImage | None = None
        self.page = citation.page or 0
        self.render_task: TaskHandle | None = None
        nav = QHBoxLayout()
        self.prev_button = QPushButton(self.tr("Previous page"))
        self.next_button = QPushButton(self.tr("Next page"))
        self.prev_button.clicked.connect(lambda: self.show_page(self.page - 1))
        self.next_button.clicked.connect(lambda: self.show_page(self.page + 1))
        for w in (self.prev_button, self.page_label, self.next_button):
            nav.addWidget(w)
        nav.addStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(nav)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.text_view, 1)
        layout.addWidget(close)
        if citation.page is not None:
            self.text_view.hide()
            self.show_page(citation.page)
        else:
            for hidden in (scroll, self.prev_button, self.next_button):
                hidden.hide()
            self.page_label.setText(html.escape(citation.heading))
            self._show_text()

    def _show_text(self) -> None:
        if not self.passage_text:
            self.text_view.setPlainText(self.tr("This passage is no longer stored (its document was removed)."))
            return
        heading = f"<h3>{html.escape(self.citation.heading)}</h3>" if self.citation.heading else ""
        body = html.escape(self.passage_text).replace("\n", "<br>")
        self.text_view.setHtml(f"{heading}<p style='background:#fff3a0;color:#000'>{body}</p>")

    def show_page(self, page: int) -> TaskHandle | None:
        """Draw page ``page`` (on a worker); the cited page marks the passage."""
        if page < 1 or (self.page_image is not None and page > self.page_image.pages):
            return None
        self.page = page
        path, passage = Path(self.citation.path), self.passage_text if page == self.citation.page else ""

        async def draw(_p: Callable[[Progress], None]) -> PageImage:
            from strata_gui.core.base import run_blocking

            # 1.25: an A4 page is ~745 pixels wide, the dialog's width at 96 dpi
            return await run_blocking(lambda: render_page(path, page, passage, scale=1.25), name="strata-render-page")

        handle = self.bridge.run(draw, name="Show page", show_errors=False)
        handle.succeeded.connect(self._show_image)
        handle.failed.connect(lambda err: self.page_view.setText(error_line(err)))
        self.render_task = handle
        return handle

    def _show_image(self, image: PageImage) -> None:
        self.page_image = image
        qimage = QImage(image.rgba, image.width, image.height, image.stride, QImage.Format.Format_RGBA8888).copy()
        pixmap = QPixmap.fromImage(qimage)
        if image.marks:
            painter = QPainter(pixmap)
            for x, y, w, h in image.marks:
                painter.fillRect(QRect(x - 2, y - 2, w + 4, h + 4), QColor(255, 214, 0, 110))
            painter.end()
            self.page_scroll.ensureVisible(image.marks[0][0], image.marks[0][1], 50, 200)
        self.page_view.setPixmap(pixmap)
        self.page_label.setText(self.tr("Page %1 of %2").replace("%1", str(image.page)).replace(
            "%2", str(image.pages)))
        self.prev_button.setEnabled(image.page > 1)
        self.next_button.setEnabled(image.page < image.pages)
