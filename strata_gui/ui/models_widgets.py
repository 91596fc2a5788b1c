"""Widgets of the Models page: a search hit row, a download row with pause/resume/cancel."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import Progress, format_bytes
from strata_gui.core.models import (
    DownloadJob,
    DownloadState,
    FitEstimate,
    RepoSummary,
    Verdict,
    format_params,
)
from strata_gui.ui.i18n import LiveTexts, core_text

VERDICT_COLORS = {
    Verdict.FULL_GPU: "#15803d",
    Verdict.PARTIAL: "#b45309",
    Verdict.CPU_ONLY: "#475569",
    Verdict.WONT_FIT: "#b91c1c",
}


def verdict_color(estimate: FitEstimate | None) -> str:
    return VERDICT_COLORS.get(estimate.verdict, "#475569") if estimate else "#475569"


def compact_count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 1000:
        return f"{n / 1e3:.1f}k"
    return str(n)


class SearchHitWidget(QWidget):
    """Two lines for one search hit: repo name (and whether its files are in the library), then
    downloads · likes · params · updated."""

    def __init__(self, hit: RepoSummary, parent: QWidget | None = None, *, downloaded: bool = False) -> None:
        super().__init__(parent)
        self.hit = hit
        name = QLabel(hit.repo_id)
        name.setStyleSheet("font-weight: 600;")
        self.in_library = QLabel(self.tr("✓ in your library"))
        self.in_library.setStyleSheet("color: #15803d;")
        self.in_library.setToolTip(self.tr("Files of this repository are in your library"))
        self.in_library.setVisible(downloaded)
        parts = [self.tr("%1 download(s)", "", hit.downloads).replace("%1", compact_count(hit.downloads)),
                 self.tr("%1 like(s)", "", hit.likes).replace("%1", compact_count(hit.likes))]
        if hit.params:
            parts.append(self.tr("%1 parameters").replace("%1", format_params(hit.params)))
        if hit.last_modified:
            parts.append(self.tr("updated %1").replace("%1", hit.last_modified.date().isoformat()))
        if hit.gated:
            parts.append(self.tr("gated"))
        meta = QLabel(" · ".join(parts))
        meta.setObjectName("muted")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(1)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(name, 1)
        top.addWidget(self.in_library)
        layout.addLayout(top)
        layout.addWidget(meta)

    def set_downloaded(self, on: bool) -> None:
        """Mark (or unmark) the repository as one whose files are in the library."""
        self.in_library.setVisible(on)


class DownloadRow(QFrame):
    """One queued download: name, bar, bytes/rate/ETA, Pause/Resume and Cancel.

    Signals:
        pause_requested(), resume_requested(), cancel_requested()
    """

    pause_requested = Signal()
    resume_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, job: DownloadJob, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("card")
        self.job = job
        self.title = QLabel(f"{job.repo_id} · {job.name}")
        self.title.setStyleSheet("font-weight: 600;")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.status = QLabel()
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)
        self.pause_button = QPushButton(self.tr("Pause"))
        self.pause_button.clicked.connect(lambda _checked=False: self._toggle())
        self.cancel_button = QPushButton()
        self.texts.set(self.cancel_button.setText, lambda: self.tr("Cancel"))
        self.cancel_button.clicked.connect(lambda _checked=False: self.cancel_requested.emit())
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.pause_button)
        top.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        self.shown_state = job.state
        self.set_state(job.state, job.error)

    @property
    def running(self) -> bool:
        return self.shown_state is DownloadState.DOWNLOADING

    def _toggle(self) -> None:
        if self.shown_state.can_pause:
            self.pause_requested.emit()
        else:
            self.resume_requested.emit()

    def set_state(self, state: DownloadState, error: str = "") -> None:
        """Show the job's state (``error`` is the message of a FAILED one)."""
        self.shown_state = state
        finished = state.finished
        self.pause_button.setText(self.tr("Pause") if self.running else self.tr("Resume"))
        self.pause_button.setVisible(not finished)
        self.pause_button.setEnabled(self.running or state.can_resume)
        self.cancel_button.setVisible(not finished)
        texts = {
            DownloadState.QUEUED: self.tr("Waiting in the queue · %1").replace("%1", format_bytes(self.job.total)),
            DownloadState.DOWNLOADING: self.tr("Starting…"),
            DownloadState.PAUSED: self.tr("Paused · resumes where it stopped"),
            DownloadState.FAILED: self.tr("Failed: %1").replace("%1", core_text(error)),
            DownloadState.DONE: self.tr("Done · in the library"),
        }
        self.status.setText(texts.get(state, ""))
        if state is DownloadState.DONE:
            self.bar.setValue(1000)

    def show_progress(self, p: Progress) -> None:
        fraction = p.fraction
        if fraction is not None:
            self.bar.setValue(int(fraction * 1000))
        self.status.setText(p.describe())


class EmptyState(QLabel):
    """A centred, muted sentence telling the user what to do next."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setObjectName("muted")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setMinimumHeight(80)


class GgufDropArea(QWidget):
    """A container that accepts .gguf files dropped from the file manager.

    Signals:
        files_dropped(list[str]): local paths of the dropped .gguf files.
    """

    files_dropped = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)

    @staticmethod
    def gguf_paths(mime: QMimeData) -> list[str]:
        if not mime.hasUrls():
            return []
        return [u.toLocalFile() for u in mime.urls()
                if u.isLocalFile() and u.toLocalFile().lower().endswith((".gguf", ".safetensors"))]

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if self.gguf_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = self.gguf_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.files_dropped.emit(paths)
