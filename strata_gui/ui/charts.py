"""Charts that redraw cheaply: points are appended to existing series, never re-plotted whole."""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtCharts import (
    QAbstractAxis,
    QBarCategoryAxis,
    QBarSeries,
    QBarSet,
    QChart,
    QChartView,
    QDateTimeAxis,
    QLineSeries,
    QValueAxis,
)
from PySide6.QtCore import QDateTime, QMargins, QPointF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPen, QResizeEvent
from PySide6.QtWidgets import QWidget

PALETTE = ["#e8590c", "#1c7ed6", "#2f9e44", "#ae3ec9", "#f08c00", "#0ca678"]


def _style_axis(axis: QAbstractAxis) -> QAbstractAxis:
    """Readable labels and quiet grid lines in both light and dark themes."""
    pal = QGuiApplication.palette()
    axis.setLabelsColor(pal.text().color())
    axis.setTitleBrush(pal.text())
    axis.setGridLineColor(pal.mid().color())
    axis.setLinePenColor(pal.mid().color())
    return axis


def nice_axis(top: float, intervals: int = 4, *, fixed: bool = False) -> tuple[float, int, str]:
    """A round top for a value axis from 0 that holds ``top``: (top, tick count, label format).

    Steps are 1, 2, 2.5 or 5 times a power of ten, so ticks read 0, 100, 200, 300, 400 rather than
    0, 92, 183, 275, 367, and small values keep the decimals they need (0.5 GiB is not "1").
    """
    top = max(float(top), 1e-9)
    raw = top / intervals
    power = 10 ** math.floor(math.log10(raw))
    # ``fixed``: exactly ``intervals`` steps, so two axes of one chart share their grid lines
    steps = (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if fixed else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in steps if m * power >= raw * (1 - 1e-9))
    ticks = intervals if fixed else math.ceil(top / step - 1e-9)
    digits = 0
    while digits < 6 and abs(step * 10 ** digits - round(step * 10 ** digits)) > 1e-6:
        digits += 1  # 2.5 → one decimal, 0.25 → two
    return step * ticks, ticks + 1, f"%.{digits}f"


def _apply_nice(axis: QValueAxis, top: float, *, fixed: bool = False) -> None:
    high, ticks, fmt = nice_axis(top, fixed=fixed)
    axis.setRange(0, high)
    axis.setTickCount(ticks)
    axis.setLabelFormat(fmt)


def _empty_axis(axis: QValueAxis) -> None:
    """An axis with nothing to show yet: 0 to 4 in whole steps (0 to 1 in four steps read "0, 0, 1,
    1, 1"), four steps like every axis of a two-axis chart, so the grid lines stay shared."""
    axis.setRange(0, 4)
    axis.setTickCount(5)
    axis.setLabelFormat("%.0f")


def _style_chart(chart: QChart, title: str) -> None:
    chart.setTitle(title)
    chart.setMargins(QMargins(4, 4, 4, 4))
    chart.legend().setAlignment(Qt.AlignmentFlag.AlignBottom)
    chart.setBackgroundRoundness(6)
    pal = QGuiApplication.palette()
    chart.setBackgroundBrush(pal.base())
    chart.setTitleBrush(pal.text())
    chart.legend().setLabelColor(pal.text().color())


class TimeSeriesChart(QChartView):
    """Lines over wall-clock time, with one or two value axes.

    Args:
        title: Chart title.
        series: (name, axis) pairs; axis "left" or "right".
        window_s: Keep only this many seconds of history (None: keep everything given).
        left_label / right_label: Axis titles (units).
        markers: Draw a dot per point (for discrete events such as requests; a lone point
            would otherwise be invisible).
        gap_s: Two points further apart than this are not joined (the app was closed, the page
            hidden, nothing asked for an hour): the line starts again after the gap.
    """

    def __init__(self, title: str, series: Sequence[tuple[str, str]], *, window_s: float | None = None,
                 left_label: str = "", right_label: str = "", markers: bool = False,
                 gap_s: float | None = None, parent: QWidget | None = None) -> None:
        self._chart = QChart()
        super().__init__(self._chart, parent)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setMinimumHeight(200)
        _style_chart(self._chart, title)
        self._window_s = window_s
        self.x_axis = QDateTimeAxis()
        _style_axis(self.x_axis)
        self.x_axis.setFormat("HH:mm:ss")
        self.x_axis.setTickCount(5)
        self._chart.addAxis(self.x_axis, Qt.AlignmentFlag.AlignBottom)
        self.axes: dict[str, QValueAxis] = {}
        self.series: dict[str, QLineSeries] = {}  # each name's current segment
        self._segments: dict[str, list[QLineSeries]] = {}  # each name's segments, oldest first
        self._gap_ms = gap_s * 1000.0 if gap_s is not None else None
        self._markers = markers
        self._axis_of: dict[str, str] = {}
        self._max: dict[str, float] = {}
        self._last_t: dict[str, float] = {}
        for i, (name, side) in enumerate(series):
            if side not in self.axes:
                axis = QValueAxis()
                _style_axis(axis)
                _empty_axis(axis)
                axis.setTitleText(left_label if side == "left" else right_label)
                self._chart.addAxis(axis, Qt.AlignmentFlag.AlignLeft if side == "left" else Qt.AlignmentFlag.AlignRight)
                self.axes[side] = axis
                self._max[side] = 0.0
            self._axis_of[name] = side
            line = self._new_line(name, QPen(QColor(PALETTE[i % len(PALETTE)]), 2))
            self.series[name] = line
            self._segments[name] = [line]
        self._t_min: float | None = None
        self._t_max: float | None = None

    def _new_line(self, name: str, pen: QPen) -> QLineSeries:
        line = QLineSeries()
        line.setName(name)
        line.setPen(pen)
        line.setPointsVisible(self._markers)
        if self._markers:
            line.setMarkerSize(6.0)
        self._chart.addSeries(line)
        line.attachAxis(self.x_axis)
        line.attachAxis(self.axes[self._axis_of[name]])
        return line

    def _after_gap(self, name: str, x_ms: float) -> QLineSeries:
        """The segment a point at ``x_ms`` goes on: a new one when it comes after a gap."""
        line = self.series[name]
        if self._gap_ms is None or not line.count() or x_ms - line.at(line.count() - 1).x() <= self._gap_ms:
            return line
        segment = self._new_line(name, line.pen())
        for marker in self._chart.legend().markers(segment):  # one legend entry per name
            marker.setVisible(False)
        self.series[name] = segment
        self._segments[name].append(segment)
        return segment

    def clear(self) -> None:
        for name, segments in self._segments.items():
            for extra in segments[1:]:
                self._chart.removeSeries(extra)
                extra.deleteLater()
            self._segments[name] = segments[:1]
            self.series[name] = segments[0]
        for line in self.series.values():
            line.clear()
        for side in self._max:
            self._max[side] = 0.0
            _empty_axis(self.axes[side])
        self._last_t.clear()
        self._t_min = self._t_max = None

    def point_count(self, name: str) -> int:
        return sum(line.count() for line in self._segments[name])

    def values(self, name: str) -> list[float]:
        return [p.y() for line in self._segments[name] for p in line.points()]

    def segment_count(self, name: str) -> int:
        """How many separately drawn lines ``name`` has (one more after each gap)."""
        return len([line for line in self._segments[name] if line.count()])

    def append(self, name: str, t: float, value: float | None) -> None:
        """Add one point (``t`` in epoch seconds); ``None`` (sensor missing) adds nothing."""
        self._last_t[name] = max(t, self._last_t.get(name, t))
        if value is None:
            return
        line = self._after_gap(name, t * 1000.0)
        line.append(QPointF(t * 1000.0, float(value)))
        side = self._axis_of[name]
        if value > self._max[side]:
            self._max[side] = float(value)
            # with a second axis, both keep four steps: their grid lines are the same lines
            _apply_nice(self.axes[side], self._max[side] * 1.1 or 1, fixed=len(self.axes) > 1)
        self._t_max = t if self._t_max is None else max(self._t_max, t)
        self._t_min = t if self._t_min is None else min(self._t_min, t)
        if self._window_s is not None:
            self._trim(name, (self._t_max - self._window_s) * 1000.0)
            self._t_min = max(self._t_min, self._t_max - self._window_s)
        self._update_x()

    def _trim(self, name: str, cutoff_ms: float) -> None:
        """Drop ``name``'s points older than the window, and the segments left empty."""
        kept = []
        for line in self._segments[name]:
            drop = 0
            while drop < line.count() and line.at(drop).x() < cutoff_ms:
                drop += 1
            if drop:
                line.removePoints(0, drop)
            if line.count() or line is self.series[name]:
                kept.append(line)
            else:
                self._chart.removeSeries(line)
                line.deleteLater()
        self._segments[name] = kept

    def include_time(self, t: float) -> None:
        """Widen the time axis to ``t`` without a point (keeps it aligned with a chart above that
        has a point there)."""
        self._t_max = t if self._t_max is None else max(self._t_max, t)
        self._t_min = t if self._t_min is None else min(self._t_min, t)
        self._update_x()

    def extend(self, name: str, points: Sequence[tuple[float, float | None]]) -> None:
        """Append only the points newer than what the series already has."""
        last = self._last_t.get(name)
        for t, v in points:
            if last is None or t > last:
                self.append(name, t, v)

    def _update_x(self) -> None:
        if self._t_min is None or self._t_max is None:
            return
        lo, hi = self._t_min, max(self._t_max, self._t_min + 10)
        pad = (hi - lo) * 0.03  # keep the first and last markers off the frame
        lo, hi = lo - pad, hi + pad
        self.x_axis.setRange(QDateTime.fromMSecsSinceEpoch(int(lo * 1000)),
                             QDateTime.fromMSecsSinceEpoch(int(hi * 1000)))
        span = hi - lo
        self.x_axis.setFormat("HH:mm:ss" if span < 300 else "HH:mm" if span < 86400 else "dd MMM HH:mm")

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        # as many time labels as fit side by side ("10:07:42" is ~60 px): a small chart shows fewer
        self.x_axis.setTickCount(max(2, min(6, self.width() // 110)))


class BarChart(QChartView):
    """One bar per category (engine), optionally with several sets (e.g. prefill and decode)."""

    def __init__(self, title: str, unit: str, parent: QWidget | None = None) -> None:
        self._chart = QChart()
        super().__init__(self._chart, parent)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setMinimumHeight(220)
        _style_chart(self._chart, title)
        self._unit = unit
        self.categories: list[str] = []
        self.values: dict[str, list[float]] = {}

    def set_data(self, categories: list[str], sets: dict[str, list[float]]) -> None:
        chart = self._chart
        chart.removeAllSeries()
        for axis in chart.axes():
            chart.removeAxis(axis)
        self.categories = list(categories)
        self.values = {k: list(v) for k, v in sets.items()}
        series = QBarSeries()
        for i, (name, vals) in enumerate(sets.items()):
            bar = QBarSet(name)
            bar.setColor(QColor(PALETTE[i % len(PALETTE)]))
            bar.append([float(v) for v in vals])
            series.append(bar)
        series.setLabelsVisible(True)
        series.setLabelsFormat("@value")
        top = max((max(v) for v in sets.values() if v), default=1.0)
        series.setLabelsPrecision(3 if top < 10 else 4 if top < 1000 else 6)  # "305.5", not "305.542"
        chart.addSeries(series)
        x = QBarCategoryAxis()
        _style_axis(x)
        x.append(categories)
        y = QValueAxis()
        _style_axis(y)
        y.setTitleText(self._unit)
        _apply_nice(y, top * 1.15 or 1)
        chart.addAxis(x, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(y, Qt.AlignmentFlag.AlignLeft)
        series.attachAxis(x)
        series.attachAxis(y)


def copy_chart_image(view: QChartView) -> bool:
    """Put a picture of the chart on the clipboard (for "Copy chart")."""
    pixmap = view.grab()
    if pixmap.isNull():
        return False
    QGuiApplication.clipboard().setPixmap(pixmap)
    return True
