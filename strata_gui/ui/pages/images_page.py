"""Images: describe a picture, pick the size, steps and seed, and watch stable-diffusion.cpp draw it.

The page only asks the core's :class:`~strata_gui.core.images.ImageService` and shows what it says:
which engine will draw (the resolver's image plan), per-step progress, a fallback notice when an
engine fails and the next one takes the job, and the gallery of PNGs on disk (each with its
settings embedded, so "Use these settings again" works on any of them, even after a restart).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QIcon, QImage, QKeySequence, QPixmap, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError, run_blocking
from strata_gui.core.images import (
    GalleryImage,
    ImageEvent,
    ImageNotice,
    ImageProgress,
    ImageRequest,
    ImageResult,
    ImageService,
)
from strata_gui.core.models import LibraryEntry
from strata_gui.core.runtime import IMAGE
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.i18n import LiveTexts, core_text
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import NoticeBanner

# stable-diffusion.cpp's sampling methods (its --sampling-method names), the usual first.
SAMPLERS = ("euler_a", "euler", "heun", "dpm2", "dpm++2s_a", "dpm++2m", "dpm++2mv2", "ipndm", "ipndm_v", "lcm",
            "ddim_trailing", "tcd")
THUMB = 112
GALLERY_LIMIT = 500  # newest first; older images stay on disk ("Open folder")


class ImagesPage(Page):
    """Prompt, settings, Generate / Cancel, the preview and the gallery.

    Args:
        images: The core's image service (engines, jobs, gallery).
        bridge: Runs the jobs and the gallery scan off the paint path.
        models: Reads the library's image model files (off the event loop's paint path).
        choose_model: Asks the user for an image model file (None when cancelled).
        open_path: Opens a file or folder in the OS (the gallery folder).
        last_model: The model chosen last time (a path; "" for none): the page opens with it.
        remember_model: Saves the model the user picks, for the next start.
        read_model: Reads a file the user browsed to (what kind of model it is): a chat GGUF is
            refused with a word instead of failing when a picture is asked for.
    """

    page_title = "Images"
    page_icon = "SP_DesktopIcon"
    image_made = Signal(object)  # ImageResult (tests and the dashboard follow it)
    engines_requested = Signal()  # "Set up image engines…": the Engines page's image tab

    def __init__(self, images: ImageService, bridge: AsyncBridge, *, models: Callable[[], Awaitable[list[Path]]],
                 choose_model: Callable[[], str | None], open_path: Callable[[Path], object],
                 last_model: Callable[[], str] = lambda: "", remember_model: Callable[[Path], object] = lambda _p: None,
                 read_model: Callable[[Path], Awaitable[LibraryEntry]] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self._read_model = read_model
        self.model_check: TaskHandle | None = None  # reading a browsed file before it is chosen
        self.page_title = self.tr("Images")
        self._last_model = last_model
        self._remember_model = remember_model
        self._images = images
        self._bridge = bridge
        self._models = models
        self._choose_model = choose_model
        self._open_path = open_path
        self._handle: TaskHandle | None = None
        self._scan: TaskHandle | None = None
        self.models_task: TaskHandle | None = None
        self._entries: dict[str, GalleryImage] = {}
        self._loaded_once = False

        header = self.texts.header(lambda: self.tr("Images"), lambda: self.tr(
            "Describe a picture and a local Stable Diffusion model draws it on this computer. Every image is saved "
            "with its settings, so you can make it again."))
        self.banner = NoticeBanner()

        form_scroll = self._build_form_section()
        right = self._build_preview_section()

        split = QSplitter()
        split.addWidget(form_scroll)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(header)
        layout.addWidget(self.banner)
        layout.addWidget(split, 1)

        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.generate)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.cancel)
        QShortcut(QKeySequence.StandardKey.Copy, self.gallery, self.copy_selected)
        follow(self, images.events, self._on_event)
        self._set_selected(None)
        self._show_plan()

    # -- sections -------------------------------------------------------------------------------------
    def _build_form_section(self) -> QScrollArea:
        """The settings form, Generate / Cancel, the progress bar and the status line, scrolled."""
        form = self._build_settings_form()
        self.generate_button = QPushButton()
        self.texts.set(self.generate_button.setText, lambda: self.tr("Generate"))
        self.generate_button.setDefault(True)
        self.texts.set(self.generate_button.setToolTip, lambda: self.tr("Make the images (Ctrl+Enter)"))
        self.generate_button.clicked.connect(self.generate)
        self.cancel_button = QPushButton()
        self.texts.set(self.cancel_button.setText, lambda: self.tr("Cancel"))
        self.texts.set(self.cancel_button.setToolTip, lambda: self.tr("Stop drawing and free the engine (Esc)"))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        buttons = QHBoxLayout()
        buttons.addWidget(self.generate_button, 1)
        buttons.addWidget(self.cancel_button)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.bar.hide()
        self.status = QLabel()
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)

        form_box = QWidget()
        form_layout = QVBoxLayout(form_box)
        form_layout.setContentsMargins(0, 0, 8, 0)
        form_layout.addLayout(form)
        form_layout.addLayout(buttons)
        form_layout.addWidget(self.bar)
        form_layout.addWidget(self.status)
        form_layout.addStretch(1)
        form_scroll = QScrollArea()
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        form_scroll.setWidget(form_box)
        # As narrow as the form allows (rows wrap), so the preview keeps its room in the smallest window.
        form_scroll.setMinimumWidth(form_box.minimumSizeHint().width()
                                    + form_scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent))
        return form_scroll

    def _build_settings_form(self) -> QFormLayout:
        """Model (with its engine line), prompts, size, steps, CFG, sampler, seed and count."""
        self.model = QComboBox()
        self.model.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model.setMinimumContentsLength(18)
        self.model.currentIndexChanged.connect(self._model_changed)
        self.browse = QPushButton()
        self.texts.set(self.browse.setText, lambda: self.tr("Browse…"))
        self.browse.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.browse)
        # Wrapped, never shortened: with no model it is a sentence of guidance, in a narrow form.
        self.engine_line = QLabel()
        self.engine_line.setObjectName("muted")
        self.engine_line.setWordWrap(True)
        self.setup_button = QPushButton()
        self.texts.set(self.setup_button.setText, lambda: self.tr("Set up image engines…"))
        self.setup_button.clicked.connect(self.engines_requested)
        self.setup_button.hide()
        self.prompt = QPlainTextEdit()
        self.texts.set(self.prompt.setPlaceholderText, lambda: self.tr("A lighthouse on a cliff at dawn, oil painting"))
        self.prompt.setTabChangesFocus(True)
        self.prompt.setFixedHeight(96)
        self.negative = QPlainTextEdit()
        self.texts.set(self.negative.setPlaceholderText, lambda: self.tr("What to keep out (optional): blurry, text"))
        self.negative.setTabChangesFocus(True)
        self.negative.setFixedHeight(52)
        self.width_box = self._side_box(512)
        self.height_box = self._side_box(512)
        size_row = QHBoxLayout()
        size_row.addWidget(self.width_box)
        size_row.addWidget(QLabel("×"))
        size_row.addWidget(self.height_box)
        size_row.addStretch(1)
        self.steps = QSpinBox()
        self.steps.setRange(1, 500)
        self.steps.setValue(20)
        self.cfg = QDoubleSpinBox()
        self.cfg.setRange(0.0, 30.0)
        self.cfg.setSingleStep(0.5)
        self.cfg.setDecimals(1)
        self.cfg.setValue(7.0)
        self.sampler = QComboBox()
        self.sampler.addItems(SAMPLERS)
        self.seed = QSpinBox()
        self.seed.setRange(-1, 2**31 - 65)
        self.seed.setValue(-1)
        self.texts.set(self.seed.setSpecialValueText, lambda: self.tr("Random"))
        self.texts.set(self.seed.setToolTip, lambda: self.tr("The first image's seed; the next images of the batch use the next seeds."))
        self.count = QSpinBox()
        self.count.setRange(1, 64)
        self.count.setValue(1)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # In the smallest window a field that does not fit beside its label goes under it (the
        # form was cut at its right edge, behind a sideways scroll bar).
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow(self.texts.label(lambda: self.tr("Model")), model_row)
        form.addRow("", self.engine_line)
        form.addRow("", self.setup_button)
        form.addRow(self.texts.label(lambda: self.tr("Prompt")), self.prompt)
        form.addRow(self.texts.label(lambda: self.tr("Negative prompt")), self.negative)
        form.addRow(self.texts.label(lambda: self.tr("Size")), size_row)
        form.addRow(self.texts.label(lambda: self.tr("Steps")), self.steps)
        form.addRow(self.texts.label(lambda: self.tr("CFG scale")), self.cfg)
        form.addRow(self.texts.label(lambda: self.tr("Sampler")), self.sampler)
        form.addRow(self.texts.label(lambda: self.tr("Seed")), self.seed)
        form.addRow(self.texts.label(lambda: self.tr("Images")), self.count)
        return form

    def _build_preview_section(self) -> QWidget:
        """The preview of the selected image, its details and actions, and the gallery."""
        self.preview = QLabel()
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(QSize(256, 256))
        self.preview.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.preview.setObjectName("muted")
        self.preview.setText(self.tr("Your images appear here."))
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setObjectName("muted")
        self.reuse_button = QPushButton()
        self.texts.set(self.reuse_button.setText, lambda: self.tr("Use these settings again"))
        self.reuse_button.clicked.connect(self.reuse_selected)
        self.copy_button = QPushButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy image"))
        self.copy_button.clicked.connect(self.copy_selected)
        self.folder_button = QPushButton()
        self.texts.set(self.folder_button.setText, lambda: self.tr("Open folder"))
        self.folder_button.clicked.connect(self.open_folder)
        actions = QHBoxLayout()
        actions.addWidget(self.reuse_button)
        actions.addWidget(self.copy_button)
        actions.addStretch(1)
        self.gallery = QListWidget()
        self.gallery.setViewMode(QListWidget.ViewMode.IconMode)
        self.gallery.setIconSize(QSize(THUMB, THUMB))
        self.gallery.setGridSize(QSize(THUMB + 12, THUMB + 12))
        self.gallery.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.gallery.setMovement(QListWidget.Movement.Static)
        self.gallery.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.gallery.setFixedHeight(THUMB + 34)
        self.gallery.setFlow(QListWidget.Flow.LeftToRight)
        self.gallery.setWrapping(False)
        self.gallery.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.gallery.currentItemChanged.connect(lambda cur, _prev: self._show_selected(cur))
        self.gallery.itemDoubleClicked.connect(lambda item: self._open_path(Path(item.data(Qt.ItemDataRole.UserRole))))
        self.gallery_label = QLabel()
        self.gallery_label.setObjectName("muted")
        self.gallery_label.setWordWrap(True)
        # The folder beside the gallery's line: the image's own actions alone stay narrow enough for
        # the smallest window (all three on one row pushed the panel over the form).
        gallery_row = QHBoxLayout()
        gallery_row.addWidget(self.gallery_label, 1)
        gallery_row.addWidget(self.folder_button)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(8, 0, 0, 0)
        right_layout.addWidget(self.preview, 1)
        right_layout.addWidget(self.details)
        right_layout.addLayout(actions)
        right_layout.addLayout(gallery_row)
        right_layout.addWidget(self.gallery)
        return right

    # -- Page ---------------------------------------------------------------------------------------
    def on_shown(self) -> None:
        self.refresh_models()
        if not self._loaded_once:
            self._loaded_once = True
            self.reload_gallery()

    # -- the form -----------------------------------------------------------------------------------
    @staticmethod
    def _side_box(value: int) -> QSpinBox:
        box = QSpinBox()
        box.setRange(64, 4096)
        box.setSingleStep(64)
        box.setValue(value)
        box.setSuffix(" px")
        box.setMinimumWidth(96)
        return box

    def refresh_models(self) -> TaskHandle | None:
        """Read the library's image models, then offer them (the current choice and files chosen by
        hand stay)."""
        if self.models_task is not None and self.models_task.is_running:
            return self.models_task
        handle = self._bridge.run(lambda _p: self._models(), name="Find image models", show_errors=False)
        handle.succeeded.connect(self._offer_models)
        self.models_task = handle
        return handle

    def _model_changed(self, _index: int) -> None:
        model = self.current_model()
        if model is not None and str(model) != self._last_model():
            self._remember_model(model)
        self._show_plan()

    def _offer_models(self, library: list[Path]) -> None:
        current = self.current_model()
        if current is None and self._last_model():
            last = Path(self._last_model())
            current = last if last.is_file() else None  # what the user drew with last time
        known = [Path(self.model.itemData(i)) for i in range(self.model.count())]
        paths = list(dict.fromkeys([*library, *(p for p in known if p.exists())]))
        self.model.blockSignals(True)
        self.model.clear()
        for p in paths:
            self.model.addItem(p.name, str(p))
            self.model.setItemData(self.model.count() - 1, str(p), Qt.ItemDataRole.ToolTipRole)
        if current is not None:
            self._select(current)
        self.model.blockSignals(False)
        self._show_plan()

    def _select(self, path: Path) -> None:
        idx = self.model.findData(str(path))
        if idx < 0:
            self.model.insertItem(0, path.name, str(path))
            self.model.setItemData(0, str(path), Qt.ItemDataRole.ToolTipRole)
            idx = 0
        self.model.setCurrentIndex(idx)

    def set_model(self, path: Path) -> None:
        """Choose ``path`` as the model (added to the list when the library does not have it); it is
        remembered for the next start."""
        self._select(path)
        self._remember_model(path)
        self._show_plan()

    def current_model(self) -> Path | None:
        data = self.model.currentData()
        return Path(data) if data else None

    def _browse(self) -> None:
        chosen = self._choose_model()
        if chosen:
            self.use_file(Path(chosen))

    def use_file(self, path: Path) -> TaskHandle | None:
        """Choose a file the user browsed to once it reads as an image model; a chat (or embedding)
        GGUF is refused in the banner, and the model shown stays (it was taken without a word, and
        only the engine's failure said something was wrong)."""
        read = self._read_model
        if read is None:
            self.set_model(path)
            return None
        handle = self._bridge.run(lambda _p: read(path), name="Read the model", show_errors=False)
        handle.succeeded.connect(self._use_read_file)
        handle.failed.connect(lambda err: self._show_error(err.message, err.hint))
        self.model_check = handle
        return handle

    def _use_read_file(self, entry: LibraryEntry) -> None:
        refusal = entry.refusal_for(IMAGE)
        if not refusal:
            self.banner.hide()
            self.set_model(entry.path)
            return
        self.banner.show_message(core_text(refusal) + " " + self.tr(
            "The Images page draws with image models (Stable Diffusion, FLUX…); chat with this one on the "
            "Chat page."), "warning")

    def _show_plan(self) -> None:
        model = self.current_model()
        self.setup_button.setVisible(model is not None and not self._images.plan(model))
        self.engine_line.setToolTip("")  # the plan's reasons, when there is a plan
        if model is None:
            self.engine_line.setText(self.tr("No image model yet: get one on the Models page, or Browse… for a "
                                             "file (.gguf or .safetensors)."))
            return
        plan = self._images.plan(model)
        if not plan:
            self.engine_line.setText(self.tr("No image engine installed: install one on the Engines page."))
            return
        text = self.tr("Draws on %1").replace("%1", core_text(plan[0].label))
        if len(plan) > 1:
            text += " · " + self.tr("then %1 if it fails").replace("%1", core_text(plan[1].label))
        self.engine_line.setText(text)
        self.engine_line.setToolTip("\n".join(f"{s.label}: {s.reason}" for s in plan))

    def request(self) -> ImageRequest:
        """The settings the form shows."""
        return ImageRequest(
            prompt=self.prompt.toPlainText().strip(), negative_prompt=self.negative.toPlainText().strip(),
            width=self.width_box.value(), height=self.height_box.value(), steps=self.steps.value(),
            cfg_scale=round(self.cfg.value(), 2), sampler=self.sampler.currentText(), seed=self.seed.value(),
            count=self.count.value())

    def apply_request(self, request: ImageRequest) -> None:
        """Fill the form with ``request`` (its count too)."""
        self.prompt.setPlainText(request.prompt)
        self.negative.setPlainText(request.negative_prompt)
        self.width_box.setValue(request.width)
        self.height_box.setValue(request.height)
        self.steps.setValue(request.steps)
        self.cfg.setValue(request.cfg_scale)
        if self.sampler.findText(request.sampler) < 0:
            self.sampler.addItem(request.sampler)
        self.sampler.setCurrentText(request.sampler)
        self.seed.setValue(request.seed)
        self.count.setValue(request.count)

    # -- jobs ---------------------------------------------------------------------------------------
    @property
    def running(self) -> TaskHandle | None:
        return self._handle

    def generate(self) -> TaskHandle | None:
        """Start a job with the form's settings; returns its handle (None when it cannot start)."""
        if self._handle is not None:
            return None
        model = self.current_model()
        if model is None:
            self._show_error(self.tr("Choose an image model first."),
                             self.tr("Get one on the Models page, or Browse… for a file."))
            return None
        request = self.request()
        try:
            request.validate()
        except StrataError as exc:
            self._show_error(exc.message, exc.hint)
            return None
        self.banner.hide()
        images = self._images
        handle = self._bridge.run(lambda _p: images.generate(model, request), name="Make images",
                                  show_errors=False)
        self._handle = handle
        self.generate_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.bar.setRange(0, 0)
        self.bar.show()
        self.status.setText(self.tr("Starting…"))
        handle.succeeded.connect(self._done)
        handle.failed.connect(lambda err: self._show_error(err.message, err.hint))
        handle.cancelled.connect(lambda: self.status.setText(self.tr("Cancelled; the engine was stopped.")))
        handle.finished.connect(self._finished)
        return handle

    def cancel(self) -> None:
        if self._handle is not None:
            self.cancel_button.setEnabled(False)
            self.status.setText(self.tr("Cancelling…"))
            self._handle.cancel()

    def _finished(self) -> None:
        self._handle = None
        self.generate_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.bar.hide()
        self._show_plan()

    def _done(self, result: ImageResult) -> None:
        n = len(result.images)
        text = self.tr("%n image(s) in %1 s on %2", "", n).replace("%1", f"{result.seconds:.1f}").replace(
            "%2", result.engine.label)
        if result.seconds_per_step:
            text += " · " + self.tr("%1 s per step").replace("%1", f"{result.seconds_per_step:.2f}")
        self.status.setText(text)
        for img in reversed(result.images):
            self._add_entry(img, at_top=True)
        if result.images:
            self.gallery.setCurrentRow(0)
        self._update_gallery_label()
        self.image_made.emit(result)

    def _on_event(self, event: ImageEvent) -> None:
        if isinstance(event, ImageNotice):
            self.banner.show_message(core_text(event.message), "warning")
        elif isinstance(event, ImageProgress) and self._handle is not None:
            self._show_progress(event)

    def _show_progress(self, p: ImageProgress) -> None:
        if p.phase == "loading":
            self.bar.setRange(0, 0)
            self.status.setText(self.tr("Loading the model on %1…").replace("%1", p.engine))
        elif p.phase == "saving":
            self.bar.setRange(0, 1000)
            self.bar.setValue(1000)
            self.status.setText(self.tr("Saving…"))
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(p.fraction * 1000))
            text = (self.tr("Image %1 of %2 · step %3 of %4").replace("%1", str(p.image)).replace("%2", str(p.images))
                    .replace("%3", str(p.step)).replace("%4", str(p.steps)))
            if p.seconds_per_step:
                text += " · " + self.tr("%1 s per step").replace("%1", f"{p.seconds_per_step:.2f}")
            self.status.setText(f"{text} · {p.engine}")

    def _show_error(self, message: str, hint: str | None = "") -> None:
        message, hint = core_text(message), core_text(hint or "")
        self.banner.show_message(f"{message} — {hint}" if hint else message, "error")
        self.status.setText(message)

    # -- the gallery ------------------------------------------------------------------------------
    def reload_gallery(self) -> TaskHandle:
        """Read the gallery folder again (off the event loop: every PNG's settings are read)."""
        gallery = self._images.gallery

        async def scan(_p: object) -> list[GalleryImage]:
            return await run_blocking(gallery.images, name="strata-gallery-scan")

        handle = self._bridge.run(scan, name="Read the gallery", show_errors=False)
        handle.succeeded.connect(self._fill_gallery)
        handle.failed.connect(lambda err: self._show_error(err.message, err.hint))
        self._scan = handle
        return handle

    def _fill_gallery(self, entries: list[GalleryImage]) -> None:
        self.gallery.clear()
        self._entries.clear()
        for img in entries[:GALLERY_LIMIT]:
            self._add_entry(img, at_top=False)
        if entries and self.gallery.currentRow() < 0:
            self.gallery.setCurrentRow(0)
        self._update_gallery_label()

    def _add_entry(self, img: GalleryImage, *, at_top: bool) -> None:
        key = str(img.path)
        self._entries[key] = img
        pixmap = QPixmap(key)
        icon = QIcon(pixmap.scaled(THUMB, THUMB, Qt.AspectRatioMode.KeepAspectRatio,
                                   Qt.TransformationMode.SmoothTransformation)) if not pixmap.isNull() else QIcon()
        item = QListWidgetItem(icon, "")
        item.setData(Qt.ItemDataRole.UserRole, key)
        item.setToolTip(img.request.prompt)
        item.setSizeHint(QSize(THUMB + 8, THUMB + 8))
        if at_top:
            self.gallery.insertItem(0, item)
        else:
            self.gallery.addItem(item)

    def _update_gallery_label(self) -> None:
        n = self.gallery.count()
        self.gallery_label.setText(self.tr("Gallery · %n image(s)", "", n) if n else
                                   self.tr("Gallery · empty: the images you make are kept here."))

    def gallery_entries(self) -> list[GalleryImage]:
        """The gallery as shown, left to right."""
        return [self._entries[self.gallery.item(i).data(Qt.ItemDataRole.UserRole)]
                for i in range(self.gallery.count())]

    def selected(self) -> GalleryImage | None:
        item = self.gallery.currentItem()
        return self._entries.get(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _show_selected(self, item: QListWidgetItem | None) -> None:
        self._set_selected(self._entries.get(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None)

    def _set_selected(self, img: GalleryImage | None) -> None:
        for b in (self.reuse_button, self.copy_button):
            b.setEnabled(img is not None)
        if img is None:
            self.preview.setPixmap(QPixmap())
            self.preview.setText(self.tr("Your images appear here."))
            self.details.setText("")
            return
        self._preview_pixmap = QPixmap(str(img.path))
        self._scale_preview()
        r = img.request
        parts = [r.prompt]
        if r.negative_prompt:
            parts.append(self.tr("Not: %1").replace("%1", r.negative_prompt))
        facts = [f"{r.width}×{r.height}", self.tr("%n step(s)", "", r.steps), f"CFG {r.cfg_scale:g}", r.sampler,
                 self.tr("seed %1").replace("%1", str(r.seed))]
        if img.model:
            facts.append(img.model)
        if img.engine:
            facts.append(img.engine)
        if img.seconds:
            facts.append(self.tr("%1 s").replace("%1", f"{img.seconds:.1f}"))
        parts.append(" · ".join(facts))
        self.details.setText("\n".join(parts))

    def _scale_preview(self) -> None:
        pixmap = getattr(self, "_preview_pixmap", None)
        if pixmap is None or pixmap.isNull():
            return
        size = self.preview.size()
        # Small images (a 64 px test, a thumbnail-sized model) are enlarged with hard edges, not blurred.
        mode = (Qt.TransformationMode.FastTransformation if pixmap.width() * 2 <= size.width()
                else Qt.TransformationMode.SmoothTransformation)
        self.preview.setPixmap(pixmap.scaled(size, Qt.AspectRatioMode.KeepAspectRatio, mode))

    def resizeEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        super().resizeEvent(event)
        self._scale_preview()

    def reuse_selected(self) -> None:
        """Fill the form with the selected image's settings (its own seed, one image)."""
        img = self.selected()
        if img is None:
            return
        self.apply_request(img.request)
        found = next((i for i in range(self.model.count()) if Path(self.model.itemData(i)).name == img.model), None)
        if found is not None:
            self.model.setCurrentIndex(found)
        elif img.model:
            # its model is not in the list: say so rather than drawing it with another one
            self.status.setText(self.tr("Settings loaded, but %1 (the model that drew it) is not in your library: "
                                        "Browse… for it, or Generate with the model shown.").replace("%1", img.model))
            return
        self.status.setText(self.tr("Settings of the selected image loaded: Generate makes it again."))

    def copy_selected(self) -> None:
        img = self.selected()
        if img is not None:
            QGuiApplication.clipboard().setImage(QImage(str(img.path)))
            self.status.setText(self.tr("Image copied."))

    def open_folder(self) -> None:
        folder = self._images.gallery.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._show_error(self.tr("Could not create %1: %2").replace("%1", str(folder)).replace(
                "%2", exc.strerror or str(exc)))
            return
        self._open_path(folder)
