"""How close a reply comes to the hardware's limits, and why it may be far from them.

One owner for the ceilings of a model on this machine, both computed for the device the chosen
engine really runs on (:mod:`strata_gui.core.engines.run_device`):

* decode, bound by memory: that device's memory bandwidth (the GPU id table's spec-sheet figure;
  the CPU's measured copy bandwidth) over the model's bytes per token
  (:mod:`strata_gui.core.models.bandwidth`) and, for a partial offload, the layers the fit puts on
  the GPU;
* prefill, bound by arithmetic: that device's peak matrix rate for the weights' type (the GPU id
  table's spec-sheet figures; the CPU's cores × clock × FLOPs per cycle) over the model's FLOPs per
  prompt token (:mod:`strata_gui.core.models.compute`). A partial offload counts the GPU's rate:
  llama.cpp multiplies a large batch on the GPU, copying the layers kept in system memory there.

The chat's statistics, the benchmark, ``models inspect`` and ``bench --json`` all ask it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base import texts
from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import StrataError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text, joined
from strata_gui.core.engines.probe import is_software_device
from strata_gui.core.engines.resolver import EngineResolver
from strata_gui.core.engines.run_device import RunDevice
from strata_gui.core.engines.slow_path import MIN_SLOW_PATH_PROMPT, SLOW_PREFILL_SHARE, slow_path_finding
from strata_gui.core.gpu.cpu_peak import CpuPeak, cpu_peak, read_cpu_facts
from strata_gui.core.gpu.membw import CpuBandwidth
from strata_gui.core.gpu.model import GpuInfo, format_mem
from strata_gui.core.models.bandwidth import CPU_DEVICE, Ceiling, TokenBytes, decode_ceiling, read_token_bytes
from strata_gui.core.models.compute import ComputeRate, PrefillCeiling, TokenFlops, read_token_flops
from strata_gui.core.models.fit import FitEstimate, Verdict
from strata_gui.core.runtime.client import ReplyStats, share_phrase
from strata_gui.core.runtime.engine import Backend, EngineSpec

__all__ = ["LOW_SHARE", "DecodeLimit", "DecodeLimits", "resizable_bar_warning", "share_phrase"]

log = logging.getLogger(__name__)

# Below this share of the ceiling a reply's statistics carry the warnings that explain it.
LOW_SHARE = 0.5
# Prompts shorter than this are not compared with the compute ceiling: a small batch is bound by
# launching kernels and reading the weights once, not by arithmetic.
MIN_PREFILL_TOKENS = 128


def _this_cpu_peak() -> CpuPeak | None:
    import psutil

    return cpu_peak(read_cpu_facts(), psutil.cpu_count(logical=False) or psutil.cpu_count())


@dataclass(frozen=True)
class DecodeLimit:
    """The ceiling for one model here, with what keeps a reply from it.

    Attributes:
        ceiling: Bytes per token and bandwidth per device (None: a bandwidth is unknown).
        where: Where the engine runs.
        warnings: Causes that slow decoding, each with its fix.
        gpu_layers, total_layers: The offload the ceiling assumed.
        peak: Which peak the ceiling is against: ``"nominal"`` (a spec sheet's figure) or
            ``"measured"`` (the CPU's copy bandwidth, measured here).
        other_peak: The same memory's other peak, (kind, GB/s, source), where both are known: an
            APU's system memory has a nominal figure and one measured here (published runs reach
            70–81 % of Strix Halo's nominal 256 GB/s, about 96 % of its measured peak).
    """

    ceiling: Ceiling | None
    where: RunDevice
    warnings: tuple[str, ...] = field(default=())
    gpu_layers: int | None = None
    total_layers: int = 0
    peak: str = "nominal"
    other_peak: tuple[str, float, str] | None = None

    @property
    def device_kind(self) -> str:
        """"gpu", "cpu" or "gpu+cpu" (a partial offload: both in series)."""
        if self.ceiling is None or self.ceiling.on_cpu_only:
            return "cpu" if self.where.on_cpu else "gpu"
        return "gpu+cpu" if len([p for p in self.ceiling.parts if p.bytes_per_token]) > 1 else "gpu"

    def share(self, tokens_per_s: float) -> float | None:
        return self.ceiling.share(tokens_per_s) if self.ceiling is not None else None

    def to_json(self, tokens_per_s: float | None = None) -> dict[str, Any]:
        data: dict[str, Any] = self.ceiling.to_json(tokens_per_s) if self.ceiling is not None else {
            "ceiling_tps": None, "share": None}
        data.update({"device_kind": self.device_kind, "runs_on": self.where.describe(),
                     "warnings": [str(w) for w in self.warnings],
                     # the same sentences as templates and arguments: shown in the reader's language
                     "warning_texts": [texts.to_json(w) for w in self.warnings], "gpu_layers": self.gpu_layers,
                     "total_layers": self.total_layers, "peak": self.peak})
        other = self._other_ceiling()
        if other is not None and self.other_peak is not None:
            share = tokens_per_s / other if tokens_per_s and other > 0 else None
            data["other_peak"] = {"peak": self.other_peak[0], "gbps": self.other_peak[1], "source": self.other_peak[2],
                                  "ceiling_tps": round(other, 2),
                                  "share": float(f"{share:.4g}") if share is not None else None}
        return data

    def _other_ceiling(self) -> float | None:
        """The ceiling against the other peak (one device only: a split has no single other peak)."""
        if self.ceiling is None or self.other_peak is None:
            return None
        parts = [p for p in self.ceiling.parts if p.bytes_per_token]
        if len(parts) != 1 or parts[0].gbps <= 0:
            return None
        return self.ceiling.tokens_per_s * self.other_peak[1] / parts[0].gbps


def _collect_here() -> None:
    """Free pending garbage on the calling (GUI) thread before work goes to a worker: a collection
    the worker's allocations start would free whatever Qt objects wait in it off the GUI thread
    ("Timers cannot be stopped from another thread", or a crash). Runs once per model and once for
    the CPU measurement, never per reply. Not needed (and skipped: a full collection costs ~17 ms of
    a one-shot `strata chat`) where the collector is off (the app's GC pump) or Qt is not loaded."""
    if gc.isenabled() and "PySide6.QtCore" in sys.modules:
        gc.collect()


def resizable_bar_warning(gpu: GpuInfo) -> str | None:
    """The cause and fix when a discrete GPU's BAR shows the CPU only part of its VRAM (Resizable
    BAR off: 256 MiB of 24 GiB), from what the driver reports (Linux: ``mem_info_vis_vram_total``)."""
    vram, visible = gpu.vram_total, gpu.visible_vram
    if gpu.integrated or not vram or not visible or visible >= 0.9 * vram:
        return None
    return (f"Resizable BAR is off on {gpu.name}: the CPU can reach only {format_mem(visible)} of its "
            f"{format_mem(vram)} VRAM ({gpu.sources.get('visible_vram', 'driver')}). Turn on Resizable BAR "
            "(Smart Access Memory) and Above 4G Decoding in the firmware (BIOS/UEFI) settings: without it "
            "models load slower and engines copy through a small window.")


class DecodeLimits:
    """Decode ceilings for models on this machine.

    Args:
        resolver: Which engine runs, on which devices (and the GPU report with its bandwidths).
        cpu: The CPU's measured memory bandwidth (measured on first need, then kept).
        fit: The fit of a model with its load options (the layers a partial offload puts on the
            GPU); None when unknown.
    """

    def __init__(self, resolver: EngineResolver, cpu: CpuBandwidth,
                 fit: Callable[[Path], FitEstimate | None] = lambda _model: None,
                 cpu_peak: Callable[[], CpuPeak | None] = _this_cpu_peak) -> None:
        self.resolver = resolver
        self.cpu = cpu
        self._fit = fit
        self._read_cpu_peak = cpu_peak
        self._cpu_peak: tuple[CpuPeak | None] | None = None  # read once: (None,) when the OS does not say
        self._flops: dict[tuple[str, int, int], TokenFlops] = {}
        self._slow_told: set[tuple[str, str]] = set()  # (model, engine) told of its slow path
        self._tokens: dict[tuple[str, int, int], TokenBytes] = {}
        self._reading: dict[tuple[str, int, int], asyncio.Task[TokenBytes]] = {}  # prefetches under way

    @staticmethod
    def _key(model: Path) -> tuple[str, int, int]:
        st = model.stat()
        return str(model.resolve()), st.st_size, int(st.st_mtime)

    def _has_tokens(self, model: Path) -> bool:
        return self._key(model) in self._tokens

    def token_bytes(self, model: Path) -> TokenBytes:
        """Bytes per token of ``model`` (cached per file version; blocking on first read)."""
        key = self._key(model)
        if key not in self._tokens:
            self._tokens[key] = read_token_bytes(model)
        return self._tokens[key]

    def prefetch(self, model: Path) -> None:
        """Start reading ``model``'s bytes per token on a worker (call on the loop): a reply just
        started, and its statistics need them at its end (~10 ms of a one-shot `strata chat` that
        otherwise came after the last token)."""
        try:
            key = self._key(model)
        except OSError:
            return
        if key in self._tokens or key in self._reading:
            return
        _collect_here()
        task = asyncio.get_running_loop().create_task(
            run_blocking(lambda: self.token_bytes(model), name="strata-decode-limit"), name="strata-decode-limit")
        self._reading[key] = task

        def done(t: asyncio.Task[TokenBytes]) -> None:
            self._reading.pop(key, None)
            if not t.cancelled() and t.exception() is not None:  # told again by limit_async, which reads anew
                log.debug("bytes per token of %s not read ahead: %s", model, t.exception())

        task.add_done_callback(done)

    def _all_gpus(self) -> list[GpuInfo]:
        report = self.resolver.gpus.last_report
        return list(report.gpus) if report is not None else []

    def _gpus(self) -> list[GpuInfo]:
        report = self.resolver.gpus.last_report
        if report is None:
            return []
        chosen = {p.key for p in self.resolver.gpu_picks() if p.chosen}
        return [g for g in report.gpus if g.key in chosen]

    def _where(self, engine: EngineSpec | None) -> RunDevice:
        where = self.resolver.run_on()
        if engine is None or engine.backend is Backend.REMOTE:
            return where
        if engine.backend is Backend.CPU:
            return where if where.on_cpu else RunDevice(True, engine.label, (), where.gpus, "a CPU engine runs it",
                                                        differs=bool(where.gpus))
        probe = self.resolver.engines.last_probe(engine.id, self.resolver.primary_target())
        mine = [d for d in (probe.devices if probe is not None else ()) if d.name in engine.devices] \
            or [d for d in (probe.devices if probe is not None else ()) if d.kind.lower() == str(engine.backend)]
        if mine and all(is_software_device(d) for d in mine):
            return where if where.on_cpu else RunDevice(True, engine.label, (), where.gpus,
                                                        f"{engine.label} sees only a software driver",
                                                        differs=bool(where.gpus))
        return RunDevice(False, engine.label, where.engine_devices, where.gpus) if where.on_cpu else where

    def limit(self, model: Path, depth: int = 0, engine: EngineSpec | None = None, *,
              measure_cpu: bool = True) -> DecodeLimit:
        """The ceiling of ``model`` at ``depth`` on the engine that runs it (blocking: reads the
        header, and measures the CPU's bandwidth once when it is needed and ``measure_cpu``).

        Raises:
            GGUFError: the model's header cannot be read.
            OSError: the model cannot be read.
        """
        tokens = self.token_bytes(model)
        where = self._where(engine)

        def cpu() -> tuple[float, str] | None:
            # Measured only when the CPU reads part of the model (on the CPU, or a partial offload).
            figure = self.cpu.known() or (self.cpu.measure() if measure_cpu else None)
            return (figure.gbps, figure.source) if figure is not None else None

        warnings: list[str] = []
        gpu_layers: int | None = None
        if where.on_cpu:
            ceiling = decode_ceiling(tokens, depth, gpu=None, cpu=cpu())
            if where.gpus:  # a GPU is there but unused: say why and what fixes it (no GPU: nothing to fix)
                said = T(QT_TRANSLATE_NOOP("Core", "Runs on the CPU: {why}."),
                         why=where.why or T(QT_TRANSLATE_NOOP("Core", "the engine runs on the processor")))
                warnings.append(joined([said, where.fix]) if where.fix else said)
            # An APU's table row names its system memory's nominal peak: the same memory the CPU reads.
            apu = next((g for g in self._all_gpus() if g.integrated and g.bandwidth_gbps), None)
            nominal = (("nominal", apu.bandwidth_gbps, apu.sources.get("bandwidth", "GPU id table"))
                       if apu is not None and apu.bandwidth_gbps else None)
            return DecodeLimit(ceiling, where, tuple(warnings), None, tokens.n_layers, "measured", nominal)
        else:
            gpus = self._gpus()
            fit = self._safe_fit(model)
            if fit is not None and fit.verdict is Verdict.PARTIAL:
                gpu_layers = fit.gpu_layers
                spilled = fit.total_layers - fit.gpu_layers
                warnings.append(
                    f"{spilled} of {fit.total_layers} layers (and their KV cache) run from system memory: the model "
                    f"does not fit in the GPU's memory at {fit.n_ctx} tokens of context. A smaller context, a "
                    "quantised KV cache or a smaller quant keeps it all on the GPU.")
            elif fit is not None and fit.verdict is Verdict.CPU_ONLY:
                gpu_layers = 0
            gpu = self._gpu_part(gpus)
            if gpu is None:  # the table does not know this GPU's bandwidth: no ceiling, not a guess
                ceiling = None
            elif gpu_layers == 0:
                ceiling = decode_ceiling(tokens, depth, gpu=None, cpu=cpu())
            else:
                ceiling = decode_ceiling(tokens, depth, gpu=gpu, cpu=cpu() if gpu_layers is not None else None,
                                         gpu_layers=gpu_layers)
            warnings += self._pick_warnings()
            warnings += [w for g in gpus if (w := resizable_bar_warning(g)) is not None]
        measured = self.cpu.known()
        other = (("measured", measured.gbps, measured.source)
                 if measured is not None and len(gpus) == 1 and gpus[0].integrated else None)
        return DecodeLimit(ceiling, where, tuple(warnings), gpu_layers, tokens.n_layers, "nominal", other)

    async def limit_async(self, model: Path, depth: int = 0, engine: EngineSpec | None = None) -> DecodeLimit:
        """:meth:`limit` from the event loop: only the header read and the CPU measurement run on a
        worker thread (each once); the resolver's answers are asked here, on the loop, so a worker
        never builds (and never garbage-collects) more than those two need."""
        pending = self._reading.get(self._key(model))
        if pending is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(pending)
        if not self._has_tokens(model):
            _collect_here()
            await run_blocking(lambda: self.token_bytes(model), name="strata-decode-limit")
        if self.cpu.known() is None:
            where = self._where(engine)
            fit = None if where.on_cpu else self._safe_fit(model)
            apu = not where.on_cpu and any(g.integrated for g in self._gpus())  # its measured peak, beside the nominal
            if where.on_cpu or apu or (fit is not None and fit.verdict in (Verdict.PARTIAL, Verdict.CPU_ONLY)):
                _collect_here()
                await run_blocking(self.cpu.measure, name="strata-memory-bandwidth")
        return self.limit(model, depth, engine, measure_cpu=False)

    def _safe_fit(self, model: Path) -> FitEstimate | None:
        try:
            return self._fit(model)
        except (StrataError, OSError, ValueError) as exc:
            log.info("no fit for %s: %s", model, exc)
            return None

    @staticmethod
    def _gpu_part(gpus: list[GpuInfo]) -> tuple[str, float, str] | None:
        known = [g for g in gpus if g.bandwidth_gbps]
        if not known or len(known) != len(gpus):
            return None
        # Layers split over several GPUs are read one GPU after the other, each its share of the
        # memory: the slowest sets the pace of its part; in series this is the memory-weighted mean.
        sizes = [max(1, g.model_memory or 1) for g in known]
        total = sum(sizes)
        seconds = sum(s / total / (g.bandwidth_gbps or 1) for s, g in zip(sizes, known, strict=True))
        names = " + ".join(g.name for g in known)
        source = "; ".join(g.sources.get("bandwidth", "GPU id table") for g in known)
        return names, 1.0 / seconds, source

    def _pick_warnings(self) -> list[str]:
        picks = self.resolver.gpu_picks()
        chosen = [p for p in picks if p.chosen]
        discrete = [p for p in picks if not p.chosen and p.amd and not p.integrated]
        if chosen and all(p.integrated for p in chosen) and discrete:
            return [f"The integrated {chosen[0].name} runs models while {discrete[0].name} is not used: choose the "
                    "discrete GPU on the GPU page (Models run on) for its own, faster memory."]
        return []

    def benchmark_limit(self, model: Path, engine: EngineSpec | None, depth: int, prefill_tokens: int,
                        gen_tokens: int, decode_tps: float | None,
                        prefill_tps: float | None = None) -> dict[str, Any] | None:
        """A benchmark run's ceilings and shares (``bench --json``, the benchmark table): its decode
        reads the context left by the depth and the prefill, plus half the generated tokens; its
        prefill (under ``"prefill"``) reads ``prefill_tokens`` after ``depth``. The decode keys are
        None when only the prefill ceiling is known; None when neither is."""
        prefill = self.prefill_json(model, prefill_tokens, depth, engine, prefill_tps)
        try:
            limit = self.limit(model, depth + prefill_tokens + gen_tokens // 2, engine)
        except (StrataError, OSError) as exc:
            log.info("no decode ceiling for %s: %s", model, exc)
            return {"ceiling_tps": None, "share": None, "prefill": prefill} if prefill else None
        if limit.ceiling is None:
            return {"ceiling_tps": None, "share": None, "prefill": prefill} if prefill else None
        return {**limit.to_json(decode_tps), "prefill": prefill}

    async def reply_limits(self, engine: EngineSpec | None, model: Path, stats: ReplyStats) -> dict[str, Any]:
        """What the chat keeps with a reply's statistics: ``"limit"`` (decode: ceiling, share, device
        and, when the reply is slow for this hardware, the warnings) and ``"prefill_limit"`` (the
        prompt's compute ceiling and share); each only when known."""
        out: dict[str, Any] = {}
        if stats.prefill_tps and stats.prompt_n:
            if not self._has_flops(model):  # the header is read once, on a worker (as limit_async does)
                _collect_here()
                with contextlib.suppress(StrataError, OSError):  # unreadable: prefill_json says so, decode goes on
                    await run_blocking(lambda: self.token_flops(model), name="strata-prefill-limit")
            prefill = self.prefill_json(model, stats.prompt_n, stats.cache_n or 0, engine, stats.prefill_tps,
                                        tell_once=True)
            if prefill is not None:
                out["prefill_limit"] = prefill
        if stats.decode_tps:
            # The average depth while decoding: the prompt, then half the reply on top.
            depth = (stats.prompt_n or 0) + (stats.cache_n or 0) + (stats.predicted_n or 0) // 2
            decode = await self.reply_limit(engine, model, stats.decode_tps, depth)
            if decode is not None:
                out["limit"] = decode
        return out

    def _has_flops(self, model: Path) -> bool:
        try:
            return self._key(model) in self._flops
        except OSError:
            return False

    async def reply_limit(self, engine: EngineSpec | None, model: Path, decode_tps: float,
                          depth: int) -> dict[str, Any] | None:
        """A reply's decode ceiling, share, device and (when the reply is slow for this hardware)
        the warnings. None when the ceiling is unknown."""
        limit = await self.limit_async(model, depth, engine)
        share = limit.share(decode_tps)
        if share is None:
            return None
        data = limit.to_json(decode_tps)
        if share >= LOW_SHARE and not limit.where.on_cpu:
            data["warnings"] = []
        return data

    # -- prefill ----------------------------------------------------------------------------------------
    def token_flops(self, model: Path) -> TokenFlops:
        """FLOPs per prompt token of ``model`` (cached per file version; blocking on first read)."""
        key = self._key(model)
        if key not in self._flops:
            self._flops[key] = read_token_flops(model)
        return self._flops[key]

    def cpu_peak(self) -> CpuPeak | None:
        """The CPU's peak arithmetic, read from the OS once."""
        if self._cpu_peak is None:
            self._cpu_peak = (self._read_cpu_peak(),)
        return self._cpu_peak[0]

    def compute_rate(self, where: RunDevice, compute_type: str) -> ComputeRate | None:
        """The peak rate of the device(s) the model runs on for weights of ``compute_type``; None
        when a device has no figure for it (the table does not know the product, or the type)."""
        if where.on_cpu:
            peak = self.cpu_peak()
            if peak is None:
                return None
            return ComputeRate(CPU_DEVICE, peak.rate(compute_type), "int8" if compute_type == "int8" else
                               "bf16" if compute_type == "bf16" and peak.bf16_factor > 1 else "fp32", peak.source)
        gpus = self._gpus()
        rates = [g.compute_tflops.get(compute_type) for g in gpus]
        if not gpus or any(r is None for r in rates):
            return None
        # Layers split over several GPUs are multiplied one GPU after the other, each its share.
        sizes = [max(1, g.model_memory or 1) for g in gpus]
        seconds = sum(s / sum(sizes) / (r or 1) for s, r in zip(sizes, rates, strict=True))
        rate = rates[0] if len(gpus) == 1 and rates[0] else 1.0 / seconds
        return ComputeRate(" + ".join(g.name for g in gpus), rate, compute_type,
                           "; ".join(g.sources.get("compute", "GPU id table") for g in gpus))

    def prefill_limit(self, model: Path, prompt_tokens: int, depth: int = 0,
                      engine: EngineSpec | None = None) -> tuple[PrefillCeiling | None, RunDevice]:
        """The prefill ceiling of a ``prompt_tokens`` prompt read after ``depth`` cached tokens
        (blocking: reads the header once), and where it runs.

        Raises:
            GGUFError: the model's header cannot be read.
            OSError: the model cannot be read.
        """
        flops = self.token_flops(model)
        where = self._where(engine)
        rate = self.compute_rate(where, flops.compute_type)
        if rate is None or prompt_tokens <= 0:
            return None, where
        return PrefillCeiling(rate, flops.per_token(prompt_tokens, depth), prompt_tokens, depth), where

    def prefill_json(self, model: Path, prompt_tokens: int, depth: int, engine: EngineSpec | None,
                     prefill_tps: float | None, *, tell_once: bool = False) -> dict[str, Any] | None:
        """A prefill's ceiling and share (None: unknown, or a prompt too short to compare), with
        ``"slow_path"`` (a saved text) when a ROCm prefill that slow is explained by its tuning
        table. ``tell_once``: that finding only the first time for this model and engine."""
        if prompt_tokens < MIN_PREFILL_TOKENS:
            return None
        try:
            ceiling, where = self.prefill_limit(model, prompt_tokens, depth, engine)
        except (StrataError, OSError) as exc:
            log.info("no prefill ceiling for %s: %s", model, exc)
            return None
        if ceiling is None:
            return None
        data = ceiling.to_json(prefill_tps, "cpu" if where.on_cpu else "gpu")
        told = (str(model), engine.id if engine is not None else "")
        if tell_once and told in self._slow_told:
            return data  # said once for this model and engine: the manifests and table are not read again
        finding = self._slow_path(engine, data.get("share"), prompt_tokens)
        if finding is not None:
            self._slow_told.add(told)
            data["slow_path"] = texts.to_json(finding)
        return data

    def _slow_path(self, engine: EngineSpec | None, share: Any, prompt_tokens: int) -> Text | None:
        # The cheap conditions first: only then are the installed manifests and the table read.
        if engine is None or engine.backend is not Backend.ROCM or not isinstance(share, (int, float)) \
                or share >= SLOW_PREFILL_SHARE or prompt_tokens < MIN_SLOW_PATH_PROMPT:
            return None
        engines = self.resolver.engines
        try:
            installed = engines.get(engine.id)
        except StrataError:
            return None  # an engine folder chosen for this session: no tuning record to check
        target = self.resolver.primary_target()
        return slow_path_finding(installed, target.gfx if target is not None else None, engines.catalog,
                                 float(share), prompt_tokens)
