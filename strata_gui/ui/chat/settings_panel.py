"""Per-conversation system prompt, sampling and reply format (plain, JSON, JSON following a schema)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.core.chat import OUTPUT_JSON, OUTPUT_OFF, OUTPUT_SCHEMA, StructuredOutput
from strata_gui.core.runtime import SamplingParams
from strata_gui.ui.i18n import LiveTexts


def _double(lo: float, hi: float, step: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(lo - step, hi)  # the value below the range means "engine default"
    box.setSingleStep(step)
    box.setDecimals(2)
    box.setSpecialValueText(QCoreApplication.translate("ConversationSettingsPanel", "default"))
    box.setValue(box.minimum())
    return box


def _int(lo: int, hi: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo - 1, hi)
    box.setSpecialValueText(QCoreApplication.translate("ConversationSettingsPanel", "default"))
    box.setValue(box.minimum())
    return box


class ConversationSettingsPanel(QGroupBox):
    """Edits a conversation's system prompt, sampling and reply format; emits ``changed`` when edited.

    A spin box at its lowest value shows "default" and leaves the engine's default in place. The
    reply format asks the engine for JSON (any object, or following the schema written here,
    enforced with a grammar); the reply is then shown indented and checked.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setTitle, lambda: self.tr("Conversation settings"))
        self.system_prompt = QPlainTextEdit()
        self.texts.set(self.system_prompt.setPlaceholderText, lambda: self.tr("System prompt (optional): how the assistant should behave"))
        self.system_prompt.setMaximumHeight(70)
        self.temperature = _double(0.0, 2.0, 0.05)
        self.top_p = _double(0.0, 1.0, 0.05)
        self.top_k = _int(0, 500)
        self.min_p = _double(0.0, 1.0, 0.01)
        self.max_tokens = _int(1, 131072)
        self.seed = _int(0, 2**31 - 1)
        form = QFormLayout(self)
        form.addRow(self.texts.label(lambda: self.tr("System prompt")), self.system_prompt)
        form.addRow(self.texts.label(lambda: self.tr("Temperature")), self.temperature)
        form.addRow(self.texts.label(lambda: self.tr("Top-p")), self.top_p)
        form.addRow(self.texts.label(lambda: self.tr("Top-k")), self.top_k)
        form.addRow(self.texts.label(lambda: self.tr("Min-p")), self.min_p)
        form.addRow(self.texts.label(lambda: self.tr("Max tokens")), self.max_tokens)
        form.addRow(self.texts.label(lambda: self.tr("Seed")), self.seed)
        self.texts.set(self.max_tokens.setToolTip, lambda: self.tr("Longest reply in tokens; default: the model's reply limit "
                                           "(Load options), else 8,192"))
        self.output_mode = QComboBox()
        for mode, text in ((OUTPUT_OFF, self.tr("Text")), (OUTPUT_JSON, self.tr("JSON")),
                           (OUTPUT_SCHEMA, self.tr("JSON following a schema"))):
            self.output_mode.addItem(text, mode)
        self.schema = QPlainTextEdit()
        self.schema.setPlaceholderText('{"type": "object", "properties": {"city": {"type": "string"}}, '
                                       '"required": ["city"]}')
        self.schema.setMaximumHeight(90)
        self.schema_problem = QLabel()
        self.schema_problem.setObjectName("error")
        self.schema_problem.setWordWrap(True)
        form.addRow(self.texts.label(lambda: self.tr("Reply format")), self.output_mode)
        form.addRow(self.texts.label(lambda: self.tr("Schema")), self.schema)
        form.addRow("", self.schema_problem)
        self._form = form
        self._loading = False
        for box in (self.temperature, self.top_p, self.top_k, self.min_p, self.max_tokens, self.seed):
            box.valueChanged.connect(self._emit)
        self.system_prompt.textChanged.connect(self._emit)
        self.output_mode.currentIndexChanged.connect(self._output_changed)
        self.schema.textChanged.connect(self._output_changed)
        self._show_schema_row()

    def _emit(self) -> None:
        if not self._loading:
            self.changed.emit()

    def _show_schema_row(self) -> None:
        on = self.output_mode.currentData() == OUTPUT_SCHEMA
        self._form.setRowVisible(self.schema, on)
        self._form.setRowVisible(self.schema_problem, on and bool(self.schema_problem.text()))

    def _output_changed(self) -> None:
        problem = ""
        output = self.structured_output()
        if output.mode == OUTPUT_SCHEMA:
            try:
                output.response_format()
            except StrataError as exc:
                problem = exc.message
        self.schema_problem.setText(problem)
        self._show_schema_row()
        self._emit()

    def structured_output(self) -> StructuredOutput:
        """The reply format as shown (the schema text is kept even while another mode is chosen)."""
        return StructuredOutput(str(self.output_mode.currentData() or OUTPUT_OFF), self.schema.toPlainText())

    def load(self, system_prompt: str, sampling: SamplingParams,
             structured: StructuredOutput | None = None) -> None:
        self._loading = True
        try:
            output = structured or StructuredOutput()
            self.output_mode.setCurrentIndex(max(0, self.output_mode.findData(output.mode)))
            self.schema.setPlainText(output.schema)
            self.schema_problem.setText("")
            self._show_schema_row()
            self.system_prompt.setPlainText(system_prompt)
            for box, value in ((self.temperature, sampling.temperature), (self.top_p, sampling.top_p),
                               (self.top_k, sampling.top_k), (self.min_p, sampling.min_p),
                               (self.max_tokens, sampling.max_tokens), (self.seed, sampling.seed)):
                box.setValue(box.minimum() if value is None else value)  # type: ignore[arg-type]
        finally:
            self._loading = False

    def sampling(self) -> SamplingParams:
        def val(box: QDoubleSpinBox | QSpinBox) -> float | int | None:
            return None if box.value() == box.minimum() else box.value()

        def ival(box: QSpinBox) -> int | None:
            return None if box.value() == box.minimum() else int(box.value())

        t, p, m = val(self.temperature), val(self.top_p), val(self.min_p)
        return SamplingParams(
            temperature=float(t) if t is not None else None, top_p=float(p) if p is not None else None,
            top_k=ival(self.top_k), min_p=float(m) if m is not None else None,
            max_tokens=ival(self.max_tokens), seed=ival(self.seed))
