"""Models page: search the hub, pick a quant by its fit verdict, download, manage the library.

Every hub call runs through the bridge. Typing restarts a debounce timer; each search carries a
generation number, and a response whose generation is not the newest is dropped, so a slow
answer to an old query never replaces the results of a newer one (the old task is also
cancelled). Downloads belong to the core's DownloadManager (one at a time, a queue that survives
restarts): the Downloads tab sends it commands and shows the events it publishes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl, Signal, SignalInstance
from PySide6.QtGui import QColor, QDesktopServices, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError, format_bytes
from strata_gui.core.models import (
    DownloadEvent,
    DownloadJob,
    DownloadState,
    FitReport,
    ImageReport,
    ImageVariantFit,
    JobFinished,
    JobProgress,
    JobStateChanged,
    LibraryEntry,
    ModelDetail,
    ModelService,
    RepoSummary,
    SearchPage,
)
from strata_gui.core.runtime import EMBEDDING, IMAGE, RERANKER, SPEECH, TEXT, EngineKind, kind_named
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.i18n import LiveTexts, core_text, error_text
from strata_gui.ui.models_widgets import DownloadRow, EmptyState, GgufDropArea, SearchHitWidget, verdict_color
from strata_gui.ui.pages.base import Page

SEARCH_DEBOUNCE_MS = 350
SORT_KEYS = ("downloads", "likes", "trending", "updated")


class ModelsPage(Page):
    """Find GGUF models on the hub, see which quant fits the GPU, download and manage them.

    Args:
        model_service: The core model facade (hub endpoint, cache, downloads, library).
        bridge: Runs core coroutines and reports their errors.
        open_url: Opens a folder in the file manager (``QDesktopServices.openUrl`` by default).
    """

    page_title = "Models"
    page_icon = "SP_DriveHDIcon"
    use_model = Signal(object)  # Path of a library model the user wants to chat with
    make_images = Signal(object)  # Path of a library image model the user wants to draw with

    def __init__(self, model_service: ModelService, bridge: AsyncBridge, parent: QWidget | None = None,
                 *, open_url: Callable[[QUrl], Any] | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.page_title = self.tr("Models")
        self.service = model_service
        self.bridge = bridge
        self._open_url = open_url or QDesktopServices.openUrl
        self._search_generation = 0
        self._detail_generation = 0
        self.search_handle: TaskHandle | None = None
        self.detail_handle: TaskHandle | None = None
        self.library_handle: TaskHandle | None = None
        self.downloads = model_service.downloads
        self._commanded: set[str] = set()  # jobs started from this page: their errors get a dialog
        self.next_url: str | None = None
        self.detail: ModelDetail | None = None
        self.report: FitReport | None = None
        self.image_report: ImageReport | None = None  # set instead of ``report`` for an image repo
        self.library: list[LibraryEntry] = []
        self.download_rows: dict[str, DownloadRow] = {}
        self.confirm_box: QMessageBox | None = None
        self._shown_once = False

        self.header = self.texts.header(lambda: self.tr("Models"), lambda: self.tr(
            "Find chat and image models on the Hugging Face hub, see which file fits your GPU, "
            "and manage the models on this computer."))
        self.tabs = QTabWidget()
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_browse(), "")),
                       lambda: self.tr("Browse the hub"))
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_downloads(), "")),
                       lambda: self.tr("Downloads"))
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_library(), "")),
                       lambda: self.tr("Library"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 20, 24, 20)
        layout.addWidget(self.header)
        layout.addWidget(self.offline_notice)
        layout.addWidget(self.tabs, 1)
        self.apply_offline()
        follow(self, self.downloads.events, self._on_download_event)

    # ------------------------------------------------------------------ browse tab
    def _build_browse(self) -> QWidget:
        bar = self._build_search_bar()
        left = self._build_results()
        self._build_details()

        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.detail_stack)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setChildrenCollapsible(False)

        self.offline_notice = QFrame()
        self.offline_notice.setObjectName("notice")
        self.offline_notice.setProperty("level", "warning")
        on = QHBoxLayout(self.offline_notice)
        on.setContentsMargins(12, 8, 12, 8)
        on_label = QLabel()
        self.texts.set(on_label.setText, lambda: self.tr("Offline mode is on: the hub is not contacted. Your library still works; "
                                  "turn offline mode off in Settings to search and download."))
        on_label.setWordWrap(True)
        on.addWidget(on_label)

        page = QWidget()
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 12, 0, 0)
        pl.addLayout(bar)
        pl.addWidget(split, 1)
        return page

    def _build_search_bar(self) -> QHBoxLayout:
        """The search field (searches as you type, after a pause), text or image models, and the order."""
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText(self.tr("Search GGUF models (e.g. qwen 7b instruct)"))
        self.search_box.setClearButtonEnabled(True)
        self.sort_box = QComboBox()
        for key, text in zip(SORT_KEYS, (self.tr("Most downloaded"), self.tr("Most liked"),
                                         self.tr("Trending"), self.tr("Recently updated")), strict=True):
            self.sort_box.addItem(text, key)
        self.debounce = QTimer(self)
        self.debounce.setSingleShot(True)
        self.debounce.setInterval(SEARCH_DEBOUNCE_MS)
        self.debounce.timeout.connect(self.start_search)
        self.search_box.textChanged.connect(lambda _t: self.debounce.start())
        self.search_box.returnPressed.connect(self.start_search)
        self.sort_box.currentIndexChanged.connect(lambda _i: self.start_search())
        # Text (GGUF for llama.cpp) or image models (text-to-image for stable-diffusion.cpp).
        self.kind_box = QComboBox()
        self.texts.item(self.kind_box, lambda: self.tr("Text models"), TEXT.name)  # Qt keeps plain data: the kind's name
        self.texts.item(self.kind_box, lambda: self.tr("Image models"), IMAGE.name)
        self.texts.item(self.kind_box, lambda: self.tr("Speech models"), SPEECH.name)
        self.kind_box.currentIndexChanged.connect(self._on_kind_changed)
        bar = QHBoxLayout()
        bar.addWidget(self.search_box, 1)
        bar.addWidget(self.kind_box)
        bar.addWidget(self.sort_box)
        return bar

    def _build_results(self) -> QWidget:
        """The hits (more load as you scroll) or the empty state, and the status line under them."""
        self.results = QListWidget()
        self.results.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        # Hits are two-line widgets with dark text: a light selection keeps them readable.
        self.results.setStyleSheet("QListWidget::item:selected { background: rgba(234, 88, 12, 0.18); }")
        self.results.currentItemChanged.connect(self._on_hit_selected)
        self.results.verticalScrollBar().valueChanged.connect(self._maybe_load_more)
        self.results_status = QLabel()
        self.results_status.setObjectName("muted")
        self.results_status.setWordWrap(True)  # a hub error with its hint, in a narrow column
        self.results_empty = EmptyState(self.tr("Type a model name above, or browse the most downloaded GGUF models."))
        self.results_stack = QStackedWidget()
        self.results_stack.addWidget(self.results_empty)
        self.results_stack.addWidget(self.results)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.results_stack, 1)
        ll.addWidget(self.results_status)
        return left

    def _build_details(self) -> None:
        """The picked model: its quants and whether they fit, Download, and its model card, in
        :attr:`detail_stack` (an empty state until a model is picked)."""
        self.detail_title = QLabel()
        self.detail_title.setObjectName("sectionTitle")
        self.detail_title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail_meta = QLabel()
        self.detail_meta.setObjectName("muted")
        self.detail_meta.setWordWrap(True)
        self.fit_note = QLabel()
        self.fit_note.setWordWrap(True)
        self.quant_table = QTableWidget(0, 5)
        self.quant_table.setHorizontalHeaderLabels([self.tr("Quant"), self.tr("Size"), self.tr("Fit"),
                                                    self.tr("Max context"), self.tr("File")])
        self.quant_table.verticalHeader().hide()
        self.quant_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.quant_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.quant_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.quant_table.horizontalHeader().setStretchLastSection(True)
        self.quant_table.setMinimumHeight(160)
        self.download_button = QPushButton(self.tr("Download selected quant"))
        self.download_button.setEnabled(False)
        self.download_button.clicked.connect(self.download_selected)
        self.quant_table.itemSelectionChanged.connect(self._on_quant_selection)
        # Image repos: what one download fetches (model + text encoders + VAE) or which part is missing.
        self.image_plan = QLabel()
        self.image_plan.setWordWrap(True)
        self.image_plan.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.image_plan.hide()
        self.card_view = QTextBrowser()
        self.card_view.setOpenExternalLinks(True)
        self.card_view.setMinimumHeight(160)
        self.detail_empty = EmptyState(self.tr("Pick a model on the left to see its files and whether they fit your GPU."))
        detail_body = QWidget()
        dl = QVBoxLayout(detail_body)
        dl.setContentsMargins(12, 0, 0, 0)
        dl.addWidget(self.detail_title)
        dl.addWidget(self.detail_meta)
        dl.addWidget(self.fit_note)
        dl.addWidget(self.quant_table, 2)
        dl.addWidget(self.image_plan)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.download_button)
        dl.addLayout(row)
        card_title = QLabel()
        self.texts.set(card_title.setText, lambda: self.tr("Model card"))
        card_title.setObjectName("sectionTitle")
        dl.addWidget(card_title)
        dl.addWidget(self.card_view, 3)
        self.detail_stack = QStackedWidget()
        self.detail_stack.addWidget(self.detail_empty)
        self.detail_stack.addWidget(detail_body)

    def apply_offline(self) -> None:
        """Show the offline notice and keep hub controls off while Settings.offline is set."""
        offline = self.service.offline
        self.offline_notice.setVisible(offline)
        for w in (self.search_box, self.kind_box, self.sort_box, self.results, self.download_button):
            w.setEnabled(not offline)
        if offline:
            self.tabs.setCurrentIndex(2)

    def on_shown(self) -> None:
        """First visit: load the library, the unfinished downloads and the most downloaded models."""
        self.apply_offline()
        if self._shown_once:
            return
        self._shown_once = True
        for job in self.downloads.jobs():
            self._add_row(job)
        self._update_downloads_empty()
        self.refresh_library()
        if not self.service.offline:
            self.start_search()

    @property
    def search_kind(self) -> EngineKind:
        """What the browse tab searches for: chat (GGUF) or image models."""
        return kind_named(str(self.kind_box.currentData() or ""))

    def _on_kind_changed(self, _index: int) -> None:
        placeholders = {IMAGE.name: self.tr("Search image models (e.g. flux, stable diffusion)"),
                        SPEECH.name: self.tr("Search speech models (e.g. whisper.cpp, large-v3)")}
        self.search_box.setPlaceholderText(placeholders.get(self.search_kind.name,
                                                            self.tr("Search GGUF models (e.g. qwen 7b instruct)")))
        self.start_search()

    def start_search(self) -> None:
        """Search for the current text and sort; an older search still running is dropped."""
        if self.service.offline:
            return
        self.debounce.stop()
        self._search_generation += 1
        generation = self._search_generation
        if self.search_handle is not None:
            self.search_handle.cancel()
        text = self.search_box.text()
        sort = str(self.sort_box.currentData())
        kind = self.search_kind
        self.next_url = None
        self.results_status.setText(self.tr("Searching…"))
        handle = self.bridge.run(lambda _p: self.service.search(text, sort, kind=kind), name="Search models",
                                 show_errors=False)
        handle.succeeded.connect(lambda page: self._on_search_page(generation, page, replace=True))
        handle.failed.connect(lambda err: self._on_search_failed(generation, err))
        self.search_handle = handle

    def _maybe_load_more(self, value: int) -> None:
        bar = self.results.verticalScrollBar()
        if value >= bar.maximum() - 2 and bar.maximum() > 0:
            self.load_more()

    def load_more(self) -> None:
        """Fetch the next page of the current search (the results list scrolled to its end)."""
        if not self.next_url or (self.search_handle is not None and self.search_handle.is_running):
            return
        generation = self._search_generation
        next_url = self.next_url
        self.results_status.setText(self.tr("Loading more…"))
        handle = self.bridge.run(lambda _p: self.service.search(next_url=next_url), name="More models",
                                 show_errors=False)
        handle.succeeded.connect(lambda page: self._on_search_page(generation, page, replace=False))
        handle.failed.connect(lambda err: self._on_search_failed(generation, err))
        self.search_handle = handle

    def _on_search_page(self, generation: int, page: SearchPage, *, replace: bool) -> None:
        if generation != self._search_generation:
            return  # a newer search started; this answer is stale
        if replace:
            self.results.clear()
        for hit in page.items:
            self._add_hit(hit)
        self.next_url = page.next_url
        count = self.results.count()
        if count == 0:
            empties = {IMAGE.name: self.tr("No image models match “%1”. Try fewer or other words."),
                       SPEECH.name: self.tr("No speech models match “%1”. Try fewer or other words.")}
            empty = empties.get(self.search_kind.name, self.tr("No GGUF models match “%1”. Try fewer or other words."))
            self.results_empty.setText(empty.replace("%1", self.search_box.text()))
            self.results_stack.setCurrentWidget(self.results_empty)
            self._clear_detail()
        else:
            self.results_stack.setCurrentWidget(self.results)
            if self.detail is None and self.detail_stack.currentWidget() is self.detail_empty:
                self.detail_empty.setText(self.tr(
                    "Pick a model on the left to see its files and whether they fit your GPU."))
        more = self.tr(" · scroll for more") if page.next_url else ""
        self.results_status.setText(self.tr("%n model(s)", "", count) + more)

    def _add_hit(self, hit: RepoSummary) -> None:
        item = QListWidgetItem()
        item.setData(Qt.ItemDataRole.UserRole, hit.repo_id)
        widget = SearchHitWidget(hit, downloaded=hit.repo_id.lower() in self._library_repos())
        item.setSizeHint(widget.sizeHint())
        self.results.addItem(item)
        self.results.setItemWidget(item, widget)

    def _clear_detail(self) -> None:
        """A search found nothing: the pane lets go of the model it showed (it stayed, as if it were a
        result of this search) and says there are no results; a detail still loading is dropped."""
        self._detail_generation += 1
        if self.detail_handle is not None:
            self.detail_handle.cancel()
        self.detail, self.report, self.image_report = None, None, None
        self.detail_empty.setText(self.tr("No results: no model to show."))
        self.detail_stack.setCurrentWidget(self.detail_empty)

    def _library_repos(self) -> set[str]:
        """The hub repositories with files in the library (as the last scan found it), lower case."""
        return {e.repo_id.lower() for e in self.library if e.repo_id}

    def _mark_downloaded_hits(self) -> None:
        """Mark the shown hits whose files are in the library (a scan may end after the search)."""
        repos = self._library_repos()
        for i in range(self.results.count()):
            widget = self.results.itemWidget(self.results.item(i))
            if isinstance(widget, SearchHitWidget):
                widget.set_downloaded(widget.hit.repo_id.lower() in repos)

    def _on_search_failed(self, generation: int, err: StrataError) -> None:
        if generation != self._search_generation:
            return
        self.results_status.setText(error_text(err))

    def hit_ids(self) -> list[str]:
        return [str(self.results.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.results.count())]

    def _on_hit_selected(self, current: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        if current is not None:
            self.show_detail(str(current.data(Qt.ItemDataRole.UserRole)))

    def show_detail(self, repo_id: str) -> None:
        """Load repo info, card and fit verdicts for ``repo_id`` (a newer selection wins)."""
        self._detail_generation += 1
        generation = self._detail_generation
        if self.detail_handle is not None:
            self.detail_handle.cancel()
        self.detail_stack.setCurrentIndex(1)
        self.detail_title.setText(repo_id)
        self.detail_meta.setText(self.tr("Loading files and reading the model header…"))
        self.fit_note.clear()
        self.quant_table.setRowCount(0)
        self.image_plan.hide()
        self.card_view.clear()
        self.download_button.setEnabled(False)

        async def load(_p: object) -> tuple[ModelDetail, FitReport | ImageReport]:
            detail = await self.service.detail(repo_id)
            if detail.kind is IMAGE:
                return detail, await self.service.image_report(detail)
            if detail.kind is SPEECH:  # a whisper file's memory is its size plus fixed buffers: no header read
                return detail, self.service.speech_report(detail)
            return detail, await self.service.fit_report(detail)

        handle = self.bridge.run(load, name=f"Model {repo_id}")
        handle.succeeded.connect(lambda res: self._on_detail(generation, *res))
        handle.failed.connect(lambda err: self._on_detail_failed(generation, err))
        self.detail_handle = handle

    def _on_detail_failed(self, generation: int, err: StrataError) -> None:
        if generation == self._detail_generation:
            self.detail_meta.setText(error_text(err))

    def _on_detail(self, generation: int, detail: ModelDetail, report: FitReport | ImageReport) -> None:
        if generation != self._detail_generation:
            return
        if isinstance(report, ImageReport):
            self._show_image_detail(detail, report)
            return
        self.detail, self.report, self.image_report = detail, report, None
        self.quant_table.setHorizontalHeaderLabels([self.tr("Quant"), self.tr("Size"), self.tr("Fit"),
                                                    self.tr("Max context"), self.tr("File")])
        self.download_button.setText(self.tr("Download selected quant"))
        meta = [self.tr("%n download(s)", "", detail.downloads),
                self.tr("%n like(s)", "", detail.likes)]
        if report.architecture:
            meta.append(self.tr("architecture %1").replace("%1", report.architecture))
        if report.trained_context:
            meta.append(self.tr("trained context %1").replace("%1", str(report.trained_context)))
        if detail.gated:
            meta.append(self.tr("gated: needs an access token"))
        if detail.vision:
            meta.append(self.tr("vision: sees images in chat (its projector downloads with the model)"))
        self.detail_meta.setText(" · ".join(meta))
        target = report.target
        note = self.tr("Fit for %1 (%2 usable) at context %3.").replace("%1", core_text(target.name)).replace(
            "%2", format_bytes(target.usable_bytes)).replace("%3", str(report.n_ctx))
        if report.note:
            note += " " + core_text(report.note)
        self.fit_note.setText(note)
        self.quant_table.setRowCount(len(report.fits))
        bold = QFont()
        bold.setBold(True)
        for row, fit in enumerate(report.fits):
            label = fit.entry.label + (self.tr("  (recommended)") if fit.is_default else "")
            verdict = core_text(fit.estimate.describe()) if fit.estimate else self.tr("unknown")
            if fit.bf16:
                verdict += " · " + {"fast": self.tr("BF16: fast on this GPU"), "slow": self.tr("BF16: slow on this GPU"),
                                    "unsupported": self.tr("BF16: not supported by this GPU")}.get(fit.bf16, fit.bf16)
            max_ctx = str(fit.estimate.max_context) if fit.estimate and fit.estimate.max_context else "–"
            cells = [label, format_bytes(fit.entry.size), verdict, max_ctx, fit.entry.name]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 2:
                    item.setForeground(QColor(verdict_color(fit.estimate)))
                if fit.is_default:
                    item.setFont(bold)
                self.quant_table.setItem(row, col, item)
            if fit.is_default:
                self.quant_table.selectRow(row)
        self.quant_table.resizeColumnsToContents()
        if not report.fits:
            self.fit_note.setText(self.tr("This repository has no GGUF files to download."))
        self.card_view.setMarkdown(detail.card or self.tr("*This repository has no model card.*"))
        self._on_quant_selection()

    def _show_image_detail(self, detail: ModelDetail, report: ImageReport) -> None:
        """An image repo: its model files, each with the parts that download with it and a fit verdict."""
        self.detail, self.report, self.image_report = detail, None, report
        meta = [self.tr("%n download(s)", "", detail.downloads),
                self.tr("%n like(s)", "", detail.likes)]
        speech = detail.kind is SPEECH
        if report.family:
            meta.append((self.tr("speech model: %1") if speech else self.tr("image model: %1")).replace(
                "%1", report.family))
        if detail.gated:
            meta.append(self.tr("gated: needs an access token"))
        self.detail_meta.setText(" · ".join(meta))
        note = ""
        if speech:
            note = self.tr("Fit for %1 (%2 usable): each file and whisper.cpp's working memory.").replace(
                "%1", core_text(report.target.name)).replace("%2", format_bytes(report.target.usable_bytes))
        elif report.family:
            note = self.tr("Fit for %1 (%2 usable) making %3×%4 images, with the parts each file needs.").replace(
                "%1", core_text(report.target.name)).replace("%2", format_bytes(report.target.usable_bytes)).replace(
                "%3", str(report.width)).replace("%4", str(report.height))
        if report.note:
            note = (note + " " + core_text(report.note)).strip()
        if not report.fits:
            note = self.tr("This repository has no single-file image model (.gguf or .safetensors) to download.")
        self.fit_note.setText(note)
        self.quant_table.setHorizontalHeaderLabels([self.tr("Variant"), self.tr("Size with parts"), self.tr("Fit"),
                                                    self.tr("Downloads with it"), self.tr("File")])
        self.download_button.setText(self.tr("Download model and parts"))
        self.quant_table.setRowCount(len(report.fits))
        bold = QFont()
        bold.setBold(True)
        colors = {"gpu": "#15803d", "cpu": "#475569", "too_large": "#b91c1c"}
        for row, fit in enumerate(report.fits):
            label = fit.entry.label + (self.tr("  (recommended)") if fit.is_default else "")
            verdict = fit.fit.message if fit.fit else self.tr("unknown")
            cells = [label, format_bytes(fit.size), verdict, self._parts_text(fit), fit.entry.name]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 2:
                    item.setForeground(QColor(colors.get(fit.fit.verdict, "#475569") if fit.fit else "#475569"))
                if col == 3 and fit.missing:
                    item.setForeground(QColor("#b91c1c"))
                if fit.is_default:
                    item.setFont(bold)
                self.quant_table.setItem(row, col, item)
            if fit.is_default:
                self.quant_table.selectRow(row)
        self.quant_table.resizeColumnsToContents()
        self.card_view.setMarkdown(detail.card or self.tr("*This repository has no model card.*"))
        self._on_quant_selection()

    def _parts_text(self, fit: ImageVariantFit) -> str:
        if fit.missing:
            return self.tr("missing: %1").replace("%1", ", ".join(m.name for m in fit.missing))
        if not fit.companions:
            return self.tr("everything is in this file")
        return ", ".join(c.path.rsplit("/", 1)[-1] for c in fit.companions)

    def selected_variant(self) -> ImageVariantFit | None:
        """The image model file picked in the table (None for a text repo or no selection)."""
        rows = self.quant_table.selectionModel().selectedRows()
        if self.image_report is None or not rows or rows[0].row() >= len(self.image_report.fits):
            return None
        return self.image_report.fits[rows[0].row()]

    def _on_quant_selection(self) -> None:
        """Enable Download for a selection; for an image file, say what it fetches or what is missing."""
        selected = bool(self.quant_table.selectedItems()) and not self.service.offline
        # a greyed button says why: nothing picked yet, or no network
        self.download_button.setToolTip(
            self.tr("Strata is offline: downloads need the network.") if self.service.offline
            else "" if self.quant_table.selectedItems()
            else self.tr("Pick a file in the table first."))
        if self.image_report is None:
            self.image_plan.hide()
            self.download_button.setEnabled(selected)
            return
        variant = self.selected_variant()
        if variant is None:
            self.image_plan.hide()
            self.download_button.setEnabled(False)
            return
        if variant.missing:
            text = self.tr("%1 needs parts this repository does not have:").replace("%1", variant.entry.name)
            text += "\n" + "\n".join("• " + m.describe() for m in variant.missing)
        else:
            names = [f.path for f in variant.files]
            text = self.tr("Downloads %n file(s), %2 in total: %3", "", len(names)).replace(
                "%2", format_bytes(variant.size)).replace("%3", ", ".join(names))
        self.image_plan.setText(text)
        self.image_plan.show()
        self.download_button.setEnabled(selected and not variant.missing)

    # ------------------------------------------------------------------ downloads tab
    def _build_downloads(self) -> QWidget:
        self.rows_box = QVBoxLayout()
        self.rows_box.setSpacing(8)
        self.downloads_empty = EmptyState(self.tr("No downloads. Pick a quant in “Browse the hub” and press Download."))
        holder = QWidget()
        hl = QVBoxLayout(holder)
        hl.addWidget(self.downloads_empty)
        hl.addLayout(self.rows_box)
        hl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(holder)
        scroll.setFrameShape(QFrame.Shape.NoFrame)

        self.token_frame = QFrame()
        self.token_frame.setObjectName("notice")
        self.token_frame.setProperty("level", "warning")
        self.token_label = QLabel()
        self.texts.set(self.token_label.setText, lambda: self.tr("This model is gated or private. Accept its terms on the hub, then paste "
                                          "an access token (saved in the hub's own token store)."))
        self.token_label.setWordWrap(True)
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.texts.set(self.token_edit.setPlaceholderText, lambda: self.tr("hf_…"))
        self.token_button = QPushButton()
        self.texts.set(self.token_button.setText, lambda: self.tr("Save token and retry"))
        self.token_button.clicked.connect(self.save_token_and_retry)
        tl = QVBoxLayout(self.token_frame)
        tl.setContentsMargins(12, 8, 12, 8)
        tl.addWidget(self.token_label)
        trow = QHBoxLayout()
        trow.addWidget(self.token_edit, 1)
        trow.addWidget(self.token_button)
        tl.addLayout(trow)
        self.token_frame.hide()
        self._token_job: DownloadJob | None = None

        page = QWidget()
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 12, 0, 0)
        pl.addWidget(self.token_frame)
        pl.addWidget(scroll, 1)
        return page

    def _update_downloads_empty(self) -> None:
        self.downloads_empty.setVisible(not self.download_rows)
        n = sum(1 for r in self.download_rows.values() if not r.shown_state.finished)
        self.tabs.setTabText(1, self.tr("Downloads") + (f" ({n})" if n else ""))

    def _add_row(self, job: DownloadJob) -> DownloadRow:
        row = self.download_rows.get(job.job_id)
        if row is not None:
            row.job = job  # the same quant queued again after it finished
            return row
        row = DownloadRow(job)
        job_id = job.job_id
        row.pause_requested.connect(lambda: self.pause_download(job_id))
        row.resume_requested.connect(lambda: self.resume_download(job_id))
        row.cancel_requested.connect(lambda: self.cancel_download(job_id))
        self.rows_box.addWidget(row)
        self.download_rows[job_id] = row
        self._update_downloads_empty()
        return row

    def _on_download_event(self, event: DownloadEvent) -> None:
        """Show what the download manager reports (on the loop, which is the GUI thread)."""
        if isinstance(event, JobProgress):
            row = self.download_rows.get(event.job_id)
            if row is not None:
                row.show_progress(event.progress)
        elif isinstance(event, JobFinished):
            self.refresh_library()
        elif isinstance(event, JobStateChanged):
            self._on_job_state(event)

    def _on_job_state(self, event: JobStateChanged) -> None:
        if event.state is DownloadState.CANCELLED:
            self._remove_row(event.job_id)
            return
        row = self._add_row(event.job)
        row.set_state(event.state, core_text(event.error.message) if event.error else event.job.error)
        self._update_downloads_empty()
        if event.state is DownloadState.FAILED and event.error is not None:
            if event.needs_token:
                self._token_job = event.job
                self.token_frame.show()
                self.token_edit.setFocus()
            elif event.job_id in self._commanded:
                self.bridge.error_occurred.emit(event.error)

    def _command(self, job_id: str, command: Callable[[str], None]) -> None:
        self._commanded.add(job_id)
        try:
            command(job_id)
        except StrataError as err:
            self.bridge.error_occurred.emit(err)

    def download_selected(self) -> None:
        """Queue the selected quant (a split set as one unit); the manager starts it in turn."""
        if self.detail is None:
            return
        rows = self.quant_table.selectionModel().selectedRows()
        if not rows:
            return
        try:
            if self.image_report is not None:
                variant = self.selected_variant()
                if variant is None or variant.missing:
                    return
                job = self.service.enqueue_image(self.detail, variant)
            elif self.report is not None:
                job = self.downloads.enqueue(self.detail, self.report.fits[rows[0].row()].entry)
            else:
                return
        except StrataError as err:
            self.bridge.error_occurred.emit(err)
            return
        self._commanded.add(job.job_id)
        self._add_row(job).set_state(job.state, job.error)
        self.tabs.setCurrentIndex(1)

    def pause_download(self, job_id: str) -> None:
        """Stop a download, keeping what arrived (Resume continues from there)."""
        self._command(job_id, self.downloads.pause)

    def resume_download(self, job_id: str) -> None:
        self._command(job_id, self.downloads.resume)

    def cancel_download(self, job_id: str) -> None:
        """Stop and forget a download, deleting its partial files."""
        self._command(job_id, self.downloads.cancel)

    def _remove_row(self, job_id: str) -> None:
        row = self.download_rows.pop(job_id, None)
        if row is not None:
            row.setParent(None)
            row.deleteLater()
        self._update_downloads_empty()

    def save_token_and_retry(self) -> None:
        token = self.token_edit.text().strip()
        if not token:
            return
        job = self._token_job
        try:
            if job is None:
                self.service.save_token(token)
            else:
                self._commanded.add(job.job_id)
                self.downloads.save_token_and_retry(job.job_id, token)
        except StrataError as err:
            self.bridge.error_occurred.emit(err)
            return
        self.token_edit.clear()
        self.token_frame.hide()
        self._token_job = None

    # ------------------------------------------------------------------ library tab
    def _build_library(self) -> QWidget:
        self.open_button = QPushButton()
        self.texts.set(self.open_button.setText, lambda: self.tr("Open GGUF…"))
        self.open_button.clicked.connect(self.choose_file)
        self.refresh_button = QPushButton()
        self.texts.set(self.refresh_button.setText, lambda: self.tr("Refresh"))
        self.refresh_button.clicked.connect(self.refresh_library)
        self.reveal_button = QPushButton()
        self.texts.set(self.reveal_button.setText, lambda: self.tr("Show in folder"))
        self.reveal_button.clicked.connect(self.reveal_selected)
        self.delete_button = QPushButton()
        self.texts.set(self.delete_button.setText, lambda: self.tr("Delete…"))
        self.delete_button.clicked.connect(self.request_delete)
        self.chat_button = QPushButton(self.tr("Chat with this model"))
        self.chat_button.setDefault(True)
        self.chat_button.clicked.connect(self._chat_with_selected)
        self.library_status = QLabel()
        self.library_status.setObjectName("muted")
        tools = QHBoxLayout()
        tools.addWidget(self.library_status, 1)
        tools.addWidget(self.open_button)
        tools.addWidget(self.refresh_button)
        tools.addWidget(self.reveal_button)
        tools.addWidget(self.delete_button)
        tools.addWidget(self.chat_button)

        headers = [self.tr("Model"), self.tr("Architecture"), self.tr("Parameters"), self.tr("Quant"),
                   self.tr("Context"), self.tr("Size"), self.tr("Chat template"), self.tr("Where / status")]
        self.library_table = QTableWidget(0, len(headers))
        self.library_table.setHorizontalHeaderLabels(headers)
        self.library_table.verticalHeader().hide()
        self.library_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.library_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.library_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.library_table.horizontalHeader().setStretchLastSection(True)
        self.library_table.itemSelectionChanged.connect(self._update_library_buttons)
        self.library_table.doubleClicked.connect(lambda _index: self._chat_with_selected())
        self.library_empty = EmptyState(self.tr(
            "No models yet. Download one from “Browse the hub”, press “Open GGUF…”, "
            "or drop .gguf files here."))
        self.library_stack = QStackedWidget()
        self.library_stack.addWidget(self.library_empty)
        self.library_stack.addWidget(self.library_table)
        page = GgufDropArea()
        page.files_dropped.connect(lambda paths: self.open_files([Path(p) for p in paths]))
        self.library_page = page
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 12, 0, 0)
        pl.addLayout(tools)
        pl.addWidget(self.library_stack, 1)
        self._update_library_buttons()
        return page

    def _update_library_buttons(self) -> None:
        entry = self.selected_entry()
        has = entry is not None
        self.reveal_button.setEnabled(has)
        self.delete_button.setEnabled(has)
        # Only chat and image models have a page to use them on: embedding models and rerankers answer
        # other apps (the local API), speech models the chat's microphone.
        use = self._use_page(entry)
        self.chat_button.setEnabled(use is not None)
        self.chat_button.setText(use[0] if use is not None else self.tr("Chat with this model"))

    def _use_page(self, entry: LibraryEntry | None) -> tuple[str, SignalInstance] | None:
        """The button's words and the signal that opens the page a model is used on (kind → page)."""
        if entry is None or entry.broken:
            return None
        pages = {TEXT.name: (self.tr("Chat with this model"), self.use_model),
                 IMAGE.name: (self.tr("Make images with this model"), self.make_images)}
        return pages.get(entry.kind.name)

    def _chat_with_selected(self) -> None:
        entry = self.selected_entry()
        use = self._use_page(entry)
        if entry is not None and use is not None:
            use[1].emit(entry.path)

    def library_paths(self, kind: EngineKind = TEXT) -> list[Path]:
        """Usable models of one kind (chat models by default; Stable Diffusion and relatives ...)
        from the last library scan (for other pages' model pickers)."""
        return [e.path for e in self.library if not e.broken and e.kind == kind]

    def refresh_library(self) -> None:
        if self.library_handle is not None and self.library_handle.is_running:
            return
        self.library_status.setText(self.tr("Scanning…"))
        handle = self.bridge.run(lambda _p: self.service.scan_library(), name="Scan models")
        handle.succeeded.connect(self._show_library)
        handle.failed.connect(lambda err: self.library_status.setText(error_text(err)))
        self.library_handle = handle

    def _template_cell(self, entry: LibraryEntry) -> str:
        """The library's "chat template" column: yes/no for chat models, else what the model is."""
        kinds = {IMAGE.name: self.tr("image model"), EMBEDDING.name: self.tr("embedding model"),
                 SPEECH.name: self.tr("speech model"), RERANKER.name: self.tr("reranker")}
        if entry.kind.name in kinds:
            return kinds[entry.kind.name]
        return self.tr("yes") if entry.has_chat_template else self.tr("no")

    def _show_library(self, entries: list[LibraryEntry]) -> None:
        self.library = list(entries)
        self._mark_downloaded_hits()
        table = self.library_table
        table.setRowCount(len(entries))
        for row, e in enumerate(entries):
            where = e.repo_id or str(e.path.parent) if not e.broken else self.tr("Broken: %1").replace("%1", core_text(e.error))
            template = "" if e.broken else self._template_cell(e)
            cells = [e.display_name, e.architecture, e.params_text, e.quant,
                     str(e.context_length) if e.context_length else "", format_bytes(e.size), template, where]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(str(e.path) if col == 0 else text)
                if e.broken:
                    item.setForeground(QColor("#b91c1c"))
                table.setItem(row, col, item)
        table.resizeColumnsToContents()
        self.library_stack.setCurrentWidget(self.library_table if entries else self.library_empty)
        total = sum(e.size for e in entries)
        broken = sum(1 for e in entries if e.broken)
        text = self.tr("%n model(s) · %2 on disk", "", len(entries)).replace("%2", format_bytes(total))
        if broken:
            text += self.tr(" · %1 broken").replace("%1", str(broken))
        self.library_status.setText(text)
        self._update_library_buttons()

    def selected_entry(self) -> LibraryEntry | None:
        rows = self.library_table.selectionModel().selectedRows() if self.library_table.selectionModel() else []
        if not rows or rows[0].row() >= len(self.library):
            return None
        return self.library[rows[0].row()]

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open model"), "",
                                              self.tr("Models (*.gguf *.safetensors)"))
        if path:
            self.open_files([Path(path)])

    def open_files(self, paths: list[Path]) -> None:
        """Add single files to the library (they are listed even when broken)."""
        async def add(_p: object) -> None:
            for p in paths:
                await self.service.open_file(p, keep=True)  # the user added it: listed after a restart too

        handle = self.bridge.run(add, name="Open model")
        handle.finished.connect(self.refresh_library)
        self.tabs.setCurrentIndex(2)

    def reveal_selected(self) -> None:
        entry = self.selected_entry()
        if entry is not None:
            self._open_url(QUrl.fromLocalFile(str(entry.path.parent)))

    def request_delete(self) -> None:
        """Ask before deleting the selected model (all parts of a split set)."""
        entry = self.selected_entry()
        if entry is None:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Delete model"),
                          self.tr("Delete %1? This frees %2 on disk.").replace("%1", entry.display_name)
                          .replace("%2", format_bytes(entry.size)),
                          QMessageBox.StandardButton.Cancel, self)
        delete = box.addButton(self.tr("Delete"), QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.finished.connect(lambda _r: self._delete_confirmed(entry) if box.clickedButton() is delete else None)
        self.confirm_box = box
        box.open()

    def _delete_confirmed(self, entry: LibraryEntry) -> None:
        handle = self.bridge.run(lambda _p: self.service.delete(entry), name=f"Delete {entry.display_name}")
        handle.succeeded.connect(lambda freed: self.library_status.setText(
            self.tr("Deleted %1, freed %2.").replace("%1", entry.display_name).replace("%2", format_bytes(freed))))
        handle.succeeded.connect(lambda _f: self._rescan_after_delete())

    def _rescan_after_delete(self) -> None:
        message = self.library_status.text()
        self.refresh_library()
        if self.library_handle is not None:
            self.library_handle.succeeded.connect(lambda _e: self.library_status.setText(
                message + "  " + self.library_status.text()))
