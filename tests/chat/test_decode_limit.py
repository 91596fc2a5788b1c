"""A reply on the real CPU engine carries its decode speed as a share of the CPU's measured memory
bandwidth: the ceiling is the measured copy bandwidth ÷ the bytes one token reads (weights from
the GGUF's tensors plus the KV cache at the reply's depth), and the statistics line says
"NN % of the CPU's memory limit" (issue 27)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from strata_gui.core.app_services import build_app_services
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.services import build_services
from strata_gui.core.models.bandwidth import read_token_bytes
from strata_gui.core.models.compute import read_token_flops
from strata_gui.core.runtime.client import SamplingParams, percent_text
from tests.gpu.conftest import DATA
from tests.support.engines import TestEngines

pytestmark = pytest.mark.engine


def test_a_cpu_reply_reports_its_share_of_the_measured_cpu_bandwidth(
        test_engines: TestEngines, test_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "no-gpu"))

    async def body() -> None:
        app = build_app_services(build_services())
        try:
            await app.prepare()
            await app.use_engine_folder(test_engines.cpu_dir)
            app.chat.set_model(test_model)
            conv = app.chat.new_conversation()
            app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=24, seed=3))
            reads: list[Path] = []

            def counted(path: Path) -> object:
                reads.append(path)
                return read_token_bytes(path)

            monkeypatch.setattr("strata_gui.core.engines.limits.read_token_bytes", counted)
            reply = await app.chat.send(conv.id, "Tell me about the moon")
            assert reply.status == COMPLETE and reply.stats.decode_tps
            # Read once, ahead (while the engine answered), and used by the statistics at the end.
            assert reads == [test_model]
            again = await app.chat.send(conv.id, "And the sun?")
            assert again.stats.extra["limit"]["share"] and reads == [test_model]
            limit = reply.stats.extra["limit"]
            assert limit["device_kind"] == "cpu" and limit["device"] == "the CPU"
            # The CPU's bandwidth was measured once, kept, and is the figure the ceiling used.
            kept = json.loads((AppPaths.from_environment().cache_dir / "memory_bandwidth.json").read_text())
            (part,) = limit["parts"]
            assert part["gbps"] == kept["gbps"] > 0 and part["source"].startswith("measured")
            depth = (reply.stats.prompt_n or 0) + (reply.stats.cache_n or 0) + (reply.stats.predicted_n or 0) // 2
            assert limit["depth"] == depth
            expected = read_token_bytes(test_model).per_token(depth)
            assert limit["bytes_per_token"] == part["bytes_per_token"] == expected
            assert limit["ceiling_tps"] == pytest.approx(kept["gbps"] * 1e9 / expected, rel=1e-3)
            assert limit["share"] == pytest.approx(reply.stats.decode_tps / (kept["gbps"] * 1e9 / expected), rel=1e-3)
            summary = reply.stats.summary()
            assert f"{percent_text(limit['share'])} % of the CPU's measured memory limit" in summary
            # The dashboard keeps the share with the request, for its chart over time.
            recorded = app.dashboard.store.requests()
            assert [r.limit_share for r in recorded] == pytest.approx(
                [reply.stats.extra["limit"]["share"], again.stats.extra["limit"]["share"]])
            # Kept with the message: a later read of the conversation shows the same line.
            stored = app.chat.store.message(reply.id)
            assert stored is not None and stored.stats.summary() == summary
        finally:
            await app.aclose()

    asyncio.run(body())


def test_a_long_prompt_reports_its_prefill_share_of_the_cpus_compute_limit(
        test_engines: TestEngines, test_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefill beside decode (issue 43): the prompt's FLOPs from the GGUF over the CPU's peak
    (cores × clock × FLOPs per cycle, read from the OS), kept with the reply and the dashboard."""
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "no-gpu"))

    async def body() -> None:
        app = build_app_services(build_services())
        try:
            await app.prepare()
            await app.use_engine_folder(test_engines.cpu_dir)
            app.chat.set_model(test_model)
            conv = app.chat.new_conversation()
            app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=8, seed=3))
            reply = await app.chat.send(conv.id, " ".join(["the quick brown fox jumps over the lazy dog"] * 30))
            assert reply.status == COMPLETE and reply.stats.prefill_tps and (reply.stats.prompt_n or 0) >= 128
            prefill = reply.stats.extra["prefill_limit"]
            assert prefill["device_kind"] == "cpu" and prefill["prompt_tokens"] == reply.stats.prompt_n
            peak = app.limits.cpu_peak()
            assert peak is not None and prefill["tflops"] == pytest.approx(peak.tflops)  # F16 weights: the FP32 rate
            flops = read_token_flops(test_model).per_token(reply.stats.prompt_n or 0, reply.stats.cache_n or 0)
            assert prefill["ceiling_tps"] == pytest.approx(peak.tflops * 1e12 / flops, rel=1e-3)
            assert prefill["share"] == pytest.approx(reply.stats.prefill_tps / prefill["ceiling_tps"], rel=1e-3)
            assert "slow_path" not in prefill and reply.stats.slow_path is None  # a CPU has no tuning table
            assert " % of the CPU's compute limit" in reply.stats.summary()
            # A short question is not compared: it is not bound by arithmetic.
            short = await app.chat.send(conv.id, "Why?")
            assert "prefill_limit" not in short.stats.extra or (short.stats.prompt_n or 0) >= 128
            recorded = app.dashboard.store.requests()
            assert recorded[0].prefill_share == pytest.approx(prefill["share"])
        finally:
            await app.aclose()

    asyncio.run(body())
