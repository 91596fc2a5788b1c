"""The chat's "Load options" panel: how the model is loaded and how it replies, with the fit verdict
kept current.

Every edit is checked and judged by the core (:class:`LoadOptionsService`): the verdict changes as
the options change (a q8_0 KV cache takes about half the memory of f16), and valid options are saved
for the model at once. Loading options apply at the next load (the chat reloads the engine for
them); the reply options (reply limit, thinking) go with each request. The thinking controls
appear where the model's chat template has them: a thinking switch, an effort level (gpt-oss), a
thinking block the engine can cut at a budget.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.core.config import RANGES
from strata_gui.core.engines import GpuPick, RunDevice
from strata_gui.core.gpu import format_mem
from strata_gui.core.models import (
    CACHE_TYPES,
    EFFORTS,
    FitEstimate,
    LoadOptions,
    LoadOptionsService,
    ModelShape,
    TemplateCapabilities,
    Verdict,
)
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.i18n import LiveTexts, core_text

_VERDICT_COLOURS = {Verdict.FULL_GPU: "#15803d", Verdict.PARTIAL: "#b45309",
                    Verdict.CPU_ONLY: "#6b7280", Verdict.WONT_FIT: "#b91c1c"}


def _spin(lo: int, hi: int, special: str = "", step: int = 1) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setSingleStep(step)
    if special:
        box.setSpecialValueText(special)  # shown at the lowest value
    return box


class LoadOptionsPanel(QGroupBox):
    """Edits the load options of the chat's model and shows the fit verdict for them.

    Signals:
        saved(): valid options were saved for the model (the next load uses them).

    Args:
        service: The core owner of load options (saving, checking, the fit).
        bridge: Reads the model's header off the event loop.
        gpu_picks: The detected GPUs and which ones models run on (the GPU row offers them).
        choose_devices: Saves the user's GPU choice; without it, no GPU row.
        run_device: Where a model's chosen engine runs: the GPU row offers only the GPUs it can use.
    """

    saved = Signal()

    def __init__(self, service: LoadOptionsService, bridge: AsyncBridge, parent: QWidget | None = None, *,
                 gpu_picks: Callable[[], list[GpuPick]] | None = None,
                 choose_devices: Callable[[list[str]], object] | None = None,
                 run_device: Callable[[Path | None], RunDevice | None] | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setTitle, lambda: self.tr("Load options"))
        self._service = service
        self._bridge = bridge
        self._gpu_picks = gpu_picks or list
        self._choose_devices = choose_devices
        self._run_device = run_device
        self.model: Path | None = None
        self.shape: ModelShape | None = None
        self.estimate: FitEstimate | None = None
        self.shape_handle: TaskHandle | None = None
        self.active = False  # shown by the user: only then is the model's header read
        self._loading = False
        self._saving = False  # this panel is saving (its own save needs no re-show)

        self.template: TemplateCapabilities | None = None
        self.template_handle: TaskHandle | None = None
        self._draft = ""
        self.draft_handle: TaskHandle | None = None
        self._build_option_fields()
        self._build_draft_and_fit_fields()
        self._build_form()
        self._connect_edits()
        self.show_devices()
        self.set_model(None)
        # Saved elsewhere too ("Retry without format parsing", the CLI): the panel shows what is saved.
        follow(self, service.events, self._saved_elsewhere)

    # -- sections (the fields, then the form that places them) -------------------------------------
    def _build_option_fields(self) -> None:
        """How the engine loads the model (context, layers, KV cache, batches, threads) and how it
        replies (reply limit, chat-format parsing, thinking)."""
        default = self.tr("default")
        self.ctx_size = _spin(0, 1 << 20, self.tr("from the model"), 256)
        self.gpu_layers = QComboBox()
        self.gpu_layers.setEditable(True)
        self.gpu_layers.addItems(["all", "auto"])
        self.texts.set(self.gpu_layers.setToolTip, lambda: self.tr("'all', 'auto' or a number of layers"))
        self.flash_attention = QComboBox()
        for value, text in (("auto", self.tr("Auto")), ("on", self.tr("On")), ("off", self.tr("Off"))):
            self.flash_attention.addItem(text, value)
        self.cache_type_k = QComboBox()
        self.cache_type_v = QComboBox()
        for box in (self.cache_type_k, self.cache_type_v):
            for value in CACHE_TYPES:
                box.addItem(value, value)
        self.batch_size = _spin(0, 1 << 16, default)
        self.ubatch_size = _spin(0, 1 << 16, default)
        self.threads = _spin(0, 512, default)
        self.parallel = _spin(*RANGES["parallel_slots"], self.tr("Automatic"))
        self.texts.set(self.parallel.setToolTip, lambda: self.tr("Requests the model answers at the same time (the chat, other apps, "
                                         "reading ahead); each gets the whole context size, and the KV cache "
                                         "holds all of them. Automatic: as many as fit, at most 4"))
        # What each request gets, beside the number (the fit line above it has no room for a second line).
        self.slots_note = QLabel()
        self.slots_note.setObjectName("muted")
        self.slots_note.setWordWrap(True)  # beside the number in a narrow panel (the smallest window)
        self.mmap = QCheckBox()
        self.texts.set(self.mmap.setText, lambda: self.tr("Memory-map the model file"))
        # How the model replies (sent with each request; no reload).
        self.reply_limit = _spin(0, 1 << 20, self.tr("8,192 (default)"), 512)
        self.texts.set(self.reply_limit.setToolTip, lambda: self.tr("Longest reply in tokens, thinking included; a conversation's own "
                                            "\"Max tokens\" wins"))
        self.chat_parsing = QCheckBox()
        self.texts.set(self.chat_parsing.setText, lambda: self.tr("Read thinking and tool calls (chat-format parsing)"))
        # the whole label first: in the narrow panel of the smallest window the box's text is cut
        self.texts.set(self.chat_parsing.setToolTip, lambda: self.chat_parsing.text() + "\n" + self.tr(
            "Off: the engine leaves the model's text as written (for a model whose output keeps failing its chat "
            "format); no tool calls then"))
        self.thinking = QComboBox()
        for value, text in (("auto", self.tr("Model default")), ("on", self.tr("On")), ("off", self.tr("Off"))):
            self.thinking.addItem(text, value)
        self.effort = QComboBox()
        for value in EFFORTS:
            self.effort.addItem(value.capitalize() if value else self.tr("Model default"), value)
        self.thinking_budget = _spin(-1, 1 << 20, self.tr("no limit"), 256)
        self.texts.set(self.thinking_budget.setToolTip, lambda: self.tr("Most thinking tokens per reply; the engine then ends the thinking"))

    def _build_draft_and_fit_fields(self) -> None:
        """The draft model, the fit verdict with Use defaults, and the GPU models run on."""
        # Speculative decoding: a small model of the same vocabulary drafts, the model checks.
        self.draft_label = QLabel()
        self.draft_label.setWordWrap(True)
        self.draft_button = QPushButton()
        self.texts.set(self.draft_button.setText, lambda: self.tr("Choose…"))
        self.texts.set(self.draft_button.setToolTip, lambda: self.tr("A smaller model with the same vocabulary drafts tokens the model "
                                             "then checks (speculative decoding)"))
        self.draft_button.clicked.connect(self._choose_draft)
        self.draft_clear = QPushButton()
        self.texts.set(self.draft_clear.setText, lambda: self.tr("None"))
        self.draft_clear.clicked.connect(lambda: self.set_draft_model(None))
        self.draft_max = _spin(0, 64, self.tr("default"))
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.note = QLabel()
        self.texts.set(self.note.setText, lambda: self.tr("Saved for this model; used at the next load (the engine reloads)."))
        self.note.setObjectName("muted")
        self.note.setWordWrap(True)
        self.reset_button = QPushButton()
        self.texts.set(self.reset_button.setText, lambda: self.tr("Use defaults"))
        self.texts.set(self.reset_button.setToolTip, lambda: self.tr("Forget this model's options: it follows Settings again"))
        self.reset_button.clicked.connect(self.reset)

        # Which GPU the model runs on: the same choice as the GPU page's "Models run on".
        self.device = QComboBox()
        self.texts.set(self.device.setToolTip, lambda: self.tr("The GPU models run on (also on the GPU page); the engine reloads"))
        self.device_reason = QLabel()
        self.device_reason.setObjectName("muted")
        self.device_reason.setWordWrap(True)

    def _build_form(self) -> None:
        """The fields in one form, GPU first and the fit verdict last."""
        form = QFormLayout(self)
        form.addRow(self.texts.label(lambda: self.tr("GPU")), self.device)
        form.addRow("", self.device_reason)
        form.addRow(self.texts.label(lambda: self.tr("Context size")), self.ctx_size)
        form.addRow(self.texts.label(lambda: self.tr("GPU layers")), self.gpu_layers)
        form.addRow(self.texts.label(lambda: self.tr("Flash attention")), self.flash_attention)
        kv = QHBoxLayout()
        kv.addWidget(QLabel(self.tr("K")))
        kv.addWidget(self.cache_type_k, 1)
        kv.addWidget(QLabel(self.tr("V")))
        kv.addWidget(self.cache_type_v, 1)
        form.addRow(self.texts.label(lambda: self.tr("KV cache")), kv)
        form.addRow(self.texts.label(lambda: self.tr("Batch")), self.batch_size)
        form.addRow(self.texts.label(lambda: self.tr("Micro-batch")), self.ubatch_size)
        form.addRow(self.texts.label(lambda: self.tr("Threads")), self.threads)
        parallel = QHBoxLayout()
        parallel.addWidget(self.parallel, 1)
        parallel.addWidget(self.slots_note)
        form.addRow(self.texts.label(lambda: self.tr("Parallel requests")), parallel)
        form.addRow("", self.mmap)
        draft = QHBoxLayout()
        draft.addWidget(self.draft_label, 1)
        draft.addWidget(self.draft_button)
        draft.addWidget(self.draft_clear)
        form.addRow(self.texts.label(lambda: self.tr("Draft model")), draft)
        form.addRow(self.texts.label(lambda: self.tr("Draft tokens")), self.draft_max)
        form.addRow(self.texts.label(lambda: self.tr("Reply limit")), self.reply_limit)
        form.addRow(self.texts.label(lambda: self.tr("Thinking")), self.thinking)
        form.addRow(self.texts.label(lambda: self.tr("Thinking effort")), self.effort)
        form.addRow(self.texts.label(lambda: self.tr("Thinking budget")), self.thinking_budget)
        form.addRow("", self.chat_parsing)
        self._form = form
        form.addRow(self.texts.label(lambda: self.tr("Fit")), self.verdict)
        row = QHBoxLayout()
        row.addWidget(self.note, 1)
        row.addWidget(self.reset_button)
        form.addRow(row)

    def _connect_edits(self) -> None:
        """Every edit is checked and saved (see :meth:`_edited`); the GPU choice goes to the resolver."""
        for spin in (self.ctx_size, self.batch_size, self.ubatch_size, self.threads, self.parallel, self.draft_max,
                     self.reply_limit, self.thinking_budget):
            spin.valueChanged.connect(self._edited)
        for combo in (self.flash_attention, self.cache_type_k, self.cache_type_v, self.thinking, self.effort):
            combo.currentIndexChanged.connect(self._edited)
        self.gpu_layers.currentTextChanged.connect(self._edited)
        self.mmap.toggled.connect(self._edited)
        self.chat_parsing.toggled.connect(self._edited)
        self.device.activated.connect(self._device_chosen)

    def _saved_elsewhere(self, model: Path) -> None:
        if model == self.model and not self._loading and not self._saving:
            self._show(self._service.options(model))
            self._refresh()

    # -- device -------------------------------------------------------------------------------------
    def show_devices(self) -> None:
        """List the AMD GPUs the chosen engine can use, with the one(s) models run on selected, and why
        (the resolver decides); where it can use none (a CPU build, Vulkan on llvmpipe), say so instead."""
        picks, unusable = self._offered_gpus()
        chosen = [p for p in picks if p.chosen]
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItem(self.tr("Automatic"), "")
        for p in picks:
            self.device.addItem(p.name + (self.tr(" (integrated)") if p.integrated else ""), p.key)
        if len(picks) > 1:
            self.device.addItem(self.tr("All of them (split the model)"), "*")
        if len(chosen) == 1:
            self.device.setCurrentIndex(max(0, self.device.findData(chosen[0].key)))
        elif len(chosen) > 1:
            self.device.setCurrentIndex(self.device.count() - 1)
        self.device.blockSignals(False)
        self.device_reason.setText(unusable or "; ".join(f"{p.name}: {p.reason}" for p in chosen))
        visible = bool(picks) and self._choose_devices is not None
        self._form.setRowVisible(self.device, visible)  # the row's label too: no "GPU" over nothing
        self._form.setRowVisible(self.device_reason, visible or bool(unusable and self._choose_devices))

    def _offered_gpus(self) -> tuple[list[GpuPick], str]:
        """The AMD GPUs the model's engine lists in its last check (all detected ones before a check),
        and why none is offered where GPUs were detected but the engine uses none of them."""
        picks = [p for p in self._gpu_picks() if p.amd]
        where = self._run_device(self.model) if self._run_device is not None else None
        if where is None or where.usable_gpus is None:
            return picks, ""
        usable = [p for p in picks if p.key in where.usable_gpus]
        if picks and not usable:
            return [], self.tr("GPU: none to choose, the engine {0}").format(where.describe())
        return usable, ""

    def _device_chosen(self, index: int) -> None:
        if self._choose_devices is None:
            return
        key = str(self.device.itemData(index) or "")
        keys = [p.key for p in self._offered_gpus()[0]] if key == "*" else ([key] if key else [])
        try:
            self._choose_devices(keys)
        except StrataError as exc:
            self.device_reason.setText(core_text(exc.message))
            return
        self.show_devices()
        self._refresh()

    # -- model ------------------------------------------------------------------------------------
    def set_model(self, model: Path | None) -> None:
        """Show ``model``'s options (saved ones, else Settings') and read its shape for the fit."""
        self.model, self.shape, self.estimate = model, None, None
        self.template, self.template_handle = None, None
        self._show_thinking_rows()
        try:
            options = self._service.options(model)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            options = LoadOptions()
        self._show(options)
        self.setEnabled(model is not None)
        if model is None:
            self.verdict.setText(self.tr("Choose a model to see whether it fits."))
            return
        self.verdict.setText(self.tr("Reading the model…"))
        self.shape_handle = None
        if self.active:
            self.show_devices()  # another model may run on another engine
            self.ensure_shape()
            self.ensure_template()

    def activate(self, on: bool) -> None:
        """Show (``on``) or hide the panel; the model's header is read when it is first shown."""
        self.active = on
        self.setVisible(on)
        if on:
            self.show_devices()
            self.ensure_shape()
            self.ensure_template()

    def ensure_shape(self) -> TaskHandle | None:
        """Read the model's shape for the fit verdict unless it is read or being read."""
        model = self.model
        if model is None or self.shape is not None or (self.shape_handle is not None and self.shape_handle.is_running):
            return self.shape_handle
        service = self._service
        handle = self._bridge.run(lambda _p: service.shape(model), name=self.tr("Read the model"),
                                  show_errors=False)
        handle.succeeded.connect(lambda shape: self._shape_read(model, shape))
        handle.failed.connect(lambda err: self._shape_failed(model, err))
        self.shape_handle = handle
        return handle

    def ensure_template(self) -> TaskHandle | None:
        """Read what the model's chat template supports (the thinking rows follow it)."""
        model = self.model
        if model is None or self.template is not None or (
                self.template_handle is not None and self.template_handle.is_running):
            return self.template_handle
        service = self._service
        handle = self._bridge.run(lambda _p: service.template(model), name=self.tr("Read the chat template"),
                                  show_errors=False)
        handle.succeeded.connect(lambda caps: self._template_read(model, caps))
        self.template_handle = handle
        return handle

    def _template_read(self, model: Path, caps: TemplateCapabilities | None) -> None:
        if model == self.model:
            self.template = caps
            self._show_thinking_rows()

    def _show_thinking_rows(self) -> None:
        """Thinking controls only where the template has them (a switch, effort levels, a thinking block)."""
        caps = self.template
        form = self._form
        form.setRowVisible(self.thinking, caps is not None and caps.thinking_toggle is not None)
        form.setRowVisible(self.effort, caps is not None and caps.effort is not None)
        form.setRowVisible(self.thinking_budget, caps is not None and caps.thinking)

    def _shape_read(self, model: Path, shape: ModelShape) -> None:
        if model == self.model:
            self.shape = shape
            self._refresh()

    def _shape_failed(self, model: Path, err: StrataError) -> None:
        if model == self.model:
            self.verdict.setText(self.tr("Cannot judge the fit: {0}").format(core_text(err.message)))

    def _show(self, o: LoadOptions) -> None:
        self._loading = True
        try:
            self.ctx_size.setValue(o.ctx_size)
            self.gpu_layers.setCurrentText(o.gpu_layers)
            self.flash_attention.setCurrentIndex(max(0, self.flash_attention.findData(o.flash_attention)))
            self.cache_type_k.setCurrentIndex(max(0, self.cache_type_k.findData(o.cache_type_k)))
            self.cache_type_v.setCurrentIndex(max(0, self.cache_type_v.findData(o.cache_type_v)))
            self.batch_size.setValue(o.batch_size)
            self.ubatch_size.setValue(o.ubatch_size)
            self.threads.setValue(o.threads)
            self.parallel.setValue(o.parallel)
            self.mmap.setChecked(o.mmap)
            self.draft_max.setValue(o.draft_max)
            self._show_draft(o.draft_model)
            self.reply_limit.setValue(o.max_output_tokens)
            self.chat_parsing.setChecked(o.chat_parsing)
            self.thinking.setCurrentIndex(max(0, self.thinking.findData(o.thinking)))
            self.effort.setCurrentIndex(max(0, self.effort.findData(o.effort)))
            self.thinking_budget.setValue(o.thinking_budget)
        finally:
            self._loading = False

    def options(self) -> LoadOptions:
        """The options as shown."""
        return LoadOptions(
            ctx_size=self.ctx_size.value(), gpu_layers=self.gpu_layers.currentText().strip().lower(),
            flash_attention=str(self.flash_attention.currentData()),
            cache_type_k=str(self.cache_type_k.currentData()), cache_type_v=str(self.cache_type_v.currentData()),
            batch_size=self.batch_size.value(), ubatch_size=self.ubatch_size.value(), threads=self.threads.value(),
            mmap=self.mmap.isChecked(), parallel=self.parallel.value(), draft_model=self._draft,
            draft_max=self.draft_max.value(), chat_parsing=self.chat_parsing.isChecked(),
            max_output_tokens=self.reply_limit.value(), thinking=str(self.thinking.currentData()),
            effort=str(self.effort.currentData()), thinking_budget=self.thinking_budget.value())

    # -- draft model ---------------------------------------------------------------------------------
    def _show_draft(self, path: str) -> None:
        self._draft = path
        self.draft_label.setText(Path(path).name if path else self.tr("none"))
        self.draft_label.setToolTip(path)
        self.draft_label.setStyleSheet("")
        self.draft_clear.setEnabled(bool(path))

    def _choose_draft(self) -> None:
        start = str(self.model.parent) if self.model else ""
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Choose a draft model"), start,
                                              self.tr("GGUF models (*.gguf)"))
        if path:
            self.set_draft_model(Path(path))

    def set_draft_model(self, path: Path | None) -> TaskHandle | None:
        """Use ``path`` as the draft model once the core confirmed it shares the model's vocabulary
        (None: no speculative decoding). A draft that cannot draft is named, and not saved."""
        if self.model is None:
            return None
        if path is None:
            self._show_draft("")
            self._edited()
            return None
        model, service = self.model, self._service
        wanted = self.options().replace(draft_model=str(path))
        self.draft_label.setText(self.tr("Checking {0}…").format(path.name))
        handle = self._bridge.run(lambda _p: service.check_draft(model, wanted), name=self.tr("Check draft model"),
                                  show_errors=False)
        handle.succeeded.connect(lambda _r: self._draft_checked(model, str(path)))
        handle.failed.connect(lambda err: self._draft_refused(model, err))
        self.draft_handle = handle
        return handle

    def _draft_checked(self, model: Path, path: str) -> None:
        if model == self.model:
            self._show_draft(path)
            self._edited()

    def _draft_refused(self, model: Path, err: StrataError) -> None:
        if model == self.model:
            self._show_draft(self._draft)
            self.draft_label.setStyleSheet("color: #b91c1c;")
            self.draft_label.setText(core_text(err.message))

    # -- edits --------------------------------------------------------------------------------------
    def _edited(self) -> None:
        if self._loading:
            return
        problems = self._refresh()
        if problems or self.model is None:
            return  # not saved: what is shown cannot load; the verdict line says why
        self._saving = True
        try:
            self._service.save(self.model, self.options())
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            return
        finally:
            self._saving = False
        self.saved.emit()

    def reset(self) -> None:
        """Forget the model's options and show Settings' defaults."""
        if self.model is None:
            return
        try:
            self._service.forget(self.model)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
        self._show(self._service.options(self.model))
        self._refresh()
        self.saved.emit()

    def _refresh(self) -> list[str]:
        """Show the verdict (or what is wrong) for the options as shown; return the problems."""
        options = self.options()
        problems = self._service.problems(self.shape, options) if self.shape is not None else options.problems()
        self.slots_note.setText("")  # said again below once the fit is known
        if problems:
            self.estimate = None
            self.verdict.setStyleSheet("color: #b91c1c;")
            self.verdict.setText(core_text(problems[0]))
            return problems
        if self.shape is None:
            return []
        e = self.estimate = self._service.fit(self.shape, options)
        self.verdict.setStyleSheet(f"color: {_VERDICT_COLOURS[e.verdict]};")
        self.verdict.setText(self.tr("{0} · KV cache {1} · total {2} of {3}").format(
            self._verdict_text(e), format_mem(e.kv_bytes), format_mem(e.total_bytes), format_mem(e.gpu_bytes)))
        self.slots_note.setText(self._slots_text(e, automatic=options.parallel == 0))
        return []

    def _slots_text(self, e: FitEstimate, *, automatic: bool) -> str:
        """What each request gets: "4 parallel requests × 4,096 tokens each (automatic)"."""
        if e.slots > 1:
            text = self.tr("{0} parallel requests × {1} tokens each").format(e.slots, f"{e.n_ctx:,}")
        else:
            text = self.tr("1 request at a time, {0} tokens").format(f"{e.n_ctx:,}")
        return self.tr("{0} (automatic)").format(text) if automatic else text

    def _verdict_text(self, e: FitEstimate) -> str:
        if e.verdict is Verdict.FULL_GPU:
            return self.tr("Fits fully on the GPU")
        if e.verdict is Verdict.PARTIAL:
            return self.tr("Partly on the GPU ({0} of {1} layers)").format(e.gpu_layers, e.total_layers)
        if e.verdict is Verdict.CPU_ONLY:
            return self.tr("Fits in system RAM — runs on the CPU")
        return self.tr("Too large for this computer")
