"""The pure parts of the local API: Ollama durations and options, model ids, reading statistics off a stream."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from strata_gui.core.models.library import LibraryEntry
from strata_gui.core.serve.catalog import assign_ids, file_id
from strata_gui.core.serve.ollama_api import (
    as_openai_chat,
    parse_keep_alive,
    response_format,
    sampling_fields,
    think_fields,
)
from strata_gui.core.serve.router import KEEP_FOREVER
from strata_gui.core.serve.wire import ApiError, Meter


@pytest.mark.parametrize(("value", "seconds"), [
    (None, None), ("", None), (0, 0.0), ("0", 0.0), (300, 300.0), ("300", 300.0), ("5m", 300.0),
    ("1h30m", 5400.0), ("1.5s", 1.5), ("250ms", 0.25), (-1, KEEP_FOREVER), ("-1", KEEP_FOREVER), ("-5m", KEEP_FOREVER),
    # Past what a timer can wait (and /api/ps can date): forever, as the client meant.
    ("720h", KEEP_FOREVER), (1e12, KEEP_FOREVER), ("9" * 400 + "h", KEEP_FOREVER), ("480h", 480 * 3600.0),
])
def test_keep_alive_durations(value: object, seconds: float | None) -> None:
    assert parse_keep_alive(value) == seconds


@pytest.mark.parametrize("value", ["soon", "5 m", "5mm", True, [1], "m5"])
def test_keep_alive_nonsense_is_a_400(value: object) -> None:
    with pytest.raises(ApiError) as err:
        parse_keep_alive(value)
    assert err.value.status == 400


@pytest.mark.parametrize("calls", [5, "get_weather", {"function": {"name": "f"}}])
def test_ollama_tool_calls_that_are_not_a_list_are_a_400(calls: object) -> None:
    """They were iterated as they came: a number answered 500 "'int' object is not iterable"."""
    with pytest.raises(ApiError, match="tool_calls must be a list") as err:
        as_openai_chat([{"role": "assistant", "content": "", "tool_calls": calls}])
    assert err.value.status == 400


def test_options_map_to_engine_fields() -> None:
    assert sampling_fields({"num_predict": 64, "num_keep": 4, "repeat_penalty": 1.1, "min_p": 0.05,
                            "num_ctx": 8192, "num_gpu": 99, "seed": None}) == {
        "max_tokens": 64, "n_keep": 4, "repeat_penalty": 1.1, "min_p": 0.05}
    assert sampling_fields({"num_predict": -1}) == {}  # until the end of the context: the engine's default
    with pytest.raises(ApiError):
        sampling_fields({"num_predict": "many"})
    assert response_format("json") == {"type": "json_object"} and response_format("") is None
    with pytest.raises(ApiError):
        response_format("yaml")
    assert think_fields(True) == {} and think_fields("high") == {"reasoning_effort": "high"}
    with pytest.raises(ApiError):
        think_fields("max")


def _entry(path: str, repo: str | None = None, quant: str = "") -> LibraryEntry:
    return LibraryEntry(Path(path), (Path(path),), "hub cache" if repo else "folder", 1, repo, quant=quant)


def test_model_ids() -> None:
    entries = [
        _entry("/hub/a/Model-Q4_K_M.gguf", "acme/Model-GGUF", "Q4_K_M"),
        _entry("/hub/a/Model-Q8_0.gguf", "acme/Model-GGUF", "Q8_0"),
        _entry("/hub/b/Other-Q4_0.gguf", "acme/Other-GGUF", "Q4_0"),
        _entry("/mine/tiny-F16.gguf"),
        _entry("/other/tiny-F16.gguf"),
        _entry("/mine/big-00001-of-00003.gguf"),
    ]
    assert assign_ids(entries) == ["acme/Model-GGUF:Q4_K_M", "acme/Model-GGUF:Q8_0", "acme/Other-GGUF",
                                   "tiny-F16", "tiny-F16-2", "big"]
    assert file_id(Path("x/Model.GGUF")) == "Model"


@pytest.mark.parametrize("line_end", [b"\n", b"\r", b"\r\n"])
def test_meter_reads_statistics_cut_anywhere_by_the_network(line_end: bytes) -> None:
    stream = (b'data: {"choices":[{"delta":{"role":"assistant"}}]}\r\n\r\n'
              b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
              + b"".join(b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n' for _ in range(500))
              + b'data: {"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"prompt_n":5,"predicted_n":502,'
                b'"predicted_per_second":80.5,"cache_n":2}}\n\n'
                b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":502}}\n\ndata: [DONE]\n\n'
              ).replace(b"\n", line_end)
    for size in (1, 7, 64, 4096):
        meter = Meter(time.perf_counter)
        for i in range(0, len(stream), size):
            meter.feed_sse(stream[i:i + size])
        meter.end_sse()
        assert meter.ttft_s is not None and not meter.failed
        assert (meter.timings["predicted_n"], meter.timings["cache_n"], meter.usage["prompt_tokens"]) == (502, 2, 7)
    meter = Meter(time.perf_counter)
    meter.feed_sse(b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: {"error":{"message":"boom"}}\n\n')
    meter.end_sse()
    assert meter.failed


@pytest.mark.parametrize("line_end", [b"\n", b"\r", b"\r\n"])
def test_the_model_is_renamed_in_a_passed_through_stream_cut_anywhere(line_end: bytes) -> None:
    """The engine names the file it loaded; the client reads the id it asked for, in every event,
    whatever the line ends and wherever the network cut the stream. Every other byte is passed on
    as it came."""
    from strata_gui.core.serve.wire import EventRenamer

    stream = (b'data: {"model":"/home/me/models/x.gguf","choices":[{"delta":{"content":"a"}}]}\n\n'
              b': keep-alive\n\n'
              b'data: {"choices":[{"delta":{"content":"\\"model\\": \\"no\\""}}],\n'
              b'data: "model": "/home/me/models/x.gguf"}\n\n'
              b"data: [DONE]\n\n").replace(b"\n", line_end)
    expected = stream.replace(b'"model":"/home/me/models/x.gguf"', b'"model":"acme/X"').replace(
        b'"model": "/home/me/models/x.gguf"', b'"model":"acme/X"')
    assert expected.count(b'"model":"acme/X"') == 2
    for cut in range(len(stream) + 1):
        renamer = EventRenamer("acme/X")
        out = renamer.feed(stream[:cut]) + renamer.feed(stream[cut:]) + renamer.rest()
        assert out == expected, cut
    # Each event goes out once its blank line arrived, not at the end of the stream.
    first = stream[:stream.index(b"}" + line_end * 2) + 1 + 2 * len(line_end)]
    assert EventRenamer("acme/X").feed(first) == first.replace(b'"/home/me/models/x.gguf"', b'"acme/X"')
