"""Chart axes read like a person would label them: round ticks, decimals where needed, the time of day."""

from __future__ import annotations

import time

from PySide6.QtCharts import QBarSeries, QValueAxis
from pytestqt.qtbot import QtBot

from strata_gui.ui.charts import BarChart, TimeSeriesChart, nice_axis


def _value_axis(chart: BarChart | TimeSeriesChart) -> QValueAxis:
    return next(a for a in chart.chart().axes() if isinstance(a, QValueAxis))


def _ticks(axis: QValueAxis) -> list[str]:
    step = (axis.max() - axis.min()) / (axis.tickCount() - 1)
    return [axis.labelFormat() % (axis.min() + i * step) for i in range(axis.tickCount())]


def test_round_ticks_for_any_top() -> None:
    assert nice_axis(351.4) == (400, 5, "%.0f")
    assert nice_axis(0.46)[2] == "%.1f" and nice_axis(0.46)[0] >= 0.46
    assert nice_axis(9.0)[0] >= 9.0


def test_benchmark_bars_show_round_ticks_and_short_labels(qtbot: QtBot) -> None:
    chart = BarChart("Decode", "tokens/s")
    qtbot.addWidget(chart)
    chart.set_data(["CPU", "Vulkan"], {"decode": [305.542, 120.25]})
    assert _ticks(_value_axis(chart)) == ["0", "100", "200", "300", "400"]
    series = next(s for s in chart.chart().series() if isinstance(s, QBarSeries))
    assert series.labelsPrecision() == 4  # 305.5, not 305.542


def test_small_values_keep_their_decimals_and_time_reads_as_the_clock(qtbot: QtBot) -> None:
    chart = TimeSeriesChart("VRAM used (GiB)", [("VRAM used (GiB)", "left")], window_s=600)
    qtbot.addWidget(chart)
    now = time.time()
    for i, v in enumerate((0.2, 0.4, 0.45)):
        chart.append("VRAM used (GiB)", now - 30 + i * 10, v)
    ticks = _ticks(_value_axis(chart))
    assert len(set(ticks)) == len(ticks), ticks  # never "0, 0, 1, 1"
    assert all("." in t for t in ticks[1:])
    lo, hi = chart.x_axis.min().toSecsSinceEpoch(), chart.x_axis.max().toSecsSinceEpoch()
    assert lo <= now - 30 and now - 10 <= hi + 1 and chart.x_axis.format() == "HH:mm:ss"
    chart.show()
    chart.resize(330, 170)  # a third of the dashboard: fewer time labels so none is cut
    assert chart.x_axis.tickCount() <= 3


def test_two_axes_share_their_grid_lines(qtbot: QtBot) -> None:
    chart = TimeSeriesChart("Tokens per second", [("Prefill", "left"), ("Decode", "right")])
    qtbot.addWidget(chart)
    now = time.time()
    chart.append("Prefill", now, 310.5)
    chart.append("Decode", now, 42.2)
    left, right = chart.axes["left"], chart.axes["right"]
    assert left.tickCount() == right.tickCount()  # the right axis's ticks sit on the left's lines
    assert left.max() >= 310.5 and right.max() >= 42.2 and right.max() <= 2 * 42.2 * 1.1


def test_an_axis_without_data_reads_plainly(qtbot: QtBot) -> None:
    """Chats whose prompts were all cached have decode speeds but no prefill speed: the prefill axis
    read "0, 0, 1, 1, 1" (0 to 1 in four steps, labelled without decimals)."""
    chart = TimeSeriesChart("Tokens per second", [("Prefill", "left"), ("Decode", "right")])
    qtbot.addWidget(chart)
    chart.append("Decode", time.time(), 2716.5)
    left, right = chart.axes["left"], chart.axes["right"]
    assert _ticks(left) == ["0", "1", "2", "3", "4"]
    assert left.tickCount() == right.tickCount()  # its grid lines are the decode axis's
    chart.clear()
    assert _ticks(chart.axes["right"]) == ["0", "1", "2", "3", "4"]
