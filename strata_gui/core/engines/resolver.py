"""The engine resolver: the only way from "this model, on this machine" to engines to launch.

Inputs: the detected GPUs (else the gfx override setting), the installed and local engines, their
last probe verdicts (saved across runs), a one-off engine folder chosen for this session, the
measured or user-chosen engine for this model on this GPU, the global pin, and each engine's
launch environment (catalog variables, validated hipBLASLt table). Output: an ordered list of
:class:`EngineSpec`, each with the reason it is there, plus a verdict for every engine left out.

The chat, the benchmark, the local API, RPC lending and the first-run guide all ask this class;
the GUI and the CLI therefore launch the same engine for the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from strata_gui.core.base.errors import EngineError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text
from strata_gui.core.config.settings import Settings, SettingsChange
from strata_gui.core.engines.devices import GpuPick, choose_devices, match_devices, pick_gpus
from strata_gui.core.engines.drivers import DriverVerdict
from strata_gui.core.engines.probe import BACKEND_DEVICE_PREFIX, ProbeResult, is_software_device
from strata_gui.core.engines.records import GpuTarget, InstalledEngine
from strata_gui.core.engines.run_device import RunDevice, run_device
from strata_gui.core.engines.service import EngineService
from strata_gui.core.gpu.model import GpuInfo, GpuReport
from strata_gui.core.models.identity import model_identity
from strata_gui.core.runtime.depth import CLEARLY_FASTER, Crossover, DepthProfile, depth_label, prefill_lead
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.kinds import IMAGE, TEXT, EngineKind

log = logging.getLogger(__name__)


class ChoiceRecord(Protocol):
    @property
    def engine(self) -> str: ...

    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class _Scope:
    """What one resolution decides under: the GPU, the model, the installed engines, pin and driver."""

    gpu: GpuTarget | None
    gpu_key: str
    key: str | None  # the model's identity
    ids: set[str]  # the installed engines of the kind
    pinned: str
    driver: DriverVerdict | None


class ChoiceLookup(Protocol):
    """Where measured / user engine choices per (model identity, GPU) are kept (the metrics store);
    its ``events`` say when they changed."""

    @property
    def events(self) -> Listeners[Any]: ...

    def choice(self, model_key: str, gpu: str) -> ChoiceRecord | None: ...

    def depth_profile(self, model_key: str, gpu: str) -> DepthProfile:
        """Measured decode speed per engine and context depth (the benchmark's depth passes)."""
        ...

    def start_prefill(self, model_key: str, gpu: str) -> dict[str, float]:
        """Measured prefill tokens/s per engine at the start of the context (the latest benchmark)."""
        ...


class GpuReports(Protocol):
    """What the resolver needs of the GPU service (``events``: a detection finished)."""

    last_report: GpuReport | None

    @property
    def events(self) -> Listeners[Any]: ...

    def detect(self) -> GpuReport: ...

    async def detect_async(self) -> GpuReport: ...


@dataclass(frozen=True)
class EngineVerdict:
    """One installed engine's place in a resolution: in (with its rank) or out, and why."""

    engine_id: str
    label: str
    backend: Backend
    included: bool
    reason: str
    probe: str  # the last probe's verdict: "works", "no_device", "failed" or "not probed"

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine_id, "label": self.label, "backend": str(self.backend),
                "included": self.included, "reason": self.reason, "probe": self.probe}


@dataclass(frozen=True)
class Resolution:
    """The engines to try, best first, for one model on this machine."""

    specs: tuple[EngineSpec, ...]
    verdicts: tuple[EngineVerdict, ...]
    gpu: str
    model: str | None = None
    model_key: str | None = None
    notes: tuple[str, ...] = field(default=())
    gpu_picks: tuple[GpuPick, ...] = field(default=())
    driver: DriverVerdict | None = None
    depth: int | None = None  # the conversation's depth the choice was made for (None: not given)
    crossovers: tuple[Crossover, ...] = field(default=())  # where the measured fastest engine changes
    depth_choice: str | None = None  # the engine measured fastest at ``depth``, when that decided
    run_device: RunDevice | None = None  # where the chosen engine really runs (a GPU or the CPU)

    @property
    def chosen(self) -> EngineSpec | None:
        return self.specs[0] if self.specs else None

    @property
    def left_out(self) -> tuple[EngineVerdict, ...]:
        """Installed engines that will not run, each with why (a failed probe, say)."""
        return tuple(v for v in self.verdicts if not v.included)

    def summary(self) -> str:
        """One line: which engine runs and why (or why none can)."""
        if self.chosen is None:
            if not self.verdicts:
                return "No engine is installed."
            return "No installed engine works here: " + "; ".join(
                f"{v.label}: {v.reason}" for v in self.verdicts)
        on = f" · on {', '.join(self.chosen.devices)}" if self.chosen.devices else ""
        return f"{self.chosen.label}: {self.chosen.reason}{on}"

    def report(self) -> str:
        """Every engine, in or out, with its reason (``strata engines resolve``)."""
        lines = [f"GPU: {self.gpu}" + (f" · model: {self.model}" if self.model else "")
                 + (f" · context depth: {self.depth} tokens" if self.depth is not None else "")]
        lines += [f"  {'uses' if p.chosen else 'not used'}: {p.name} [{p.key}]: {p.reason}" for p in self.gpu_picks]
        if self.driver is not None and not self.driver.ok:
            lines.append(f"  driver: {self.driver.message}" + (" (you chose to use ROCm anyway)"
                                                               if self.driver.overridden else ""))
            lines += [f"    see {link}" for link in self.driver.links]
        specs = {s.id: s for s in self.specs}
        rank = 0
        for v in self.verdicts:
            if v.included:
                rank += 1
                lines.append(f"  {rank}. {v.label} ({v.engine_id}): {v.reason}")
                spec = specs.get(v.engine_id)
                if spec is not None and spec.device_reason:
                    lines.append(f"       devices: {', '.join(spec.devices) or 'engine default'}: {spec.device_reason}")
            else:
                lines.append(f"  –  {v.label} ({v.engine_id}): not used: {v.reason}")
        if not self.verdicts:
            lines.append("  No engine is installed (strata engines install).")
        labels = {v.engine_id: v.label for v in self.verdicts}
        lines += [f"  crossover: at about {c.depth} tokens of context the fastest engine changes from "
                  f"{labels.get(c.before, c.before)} to {labels.get(c.after, c.after)}" for c in self.crossovers]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "model": self.model, "model_key": self.model_key,
                "chosen": self.chosen.id if self.chosen else None,
                "reason": self.chosen.reason if self.chosen else self.summary(),
                "order": [s.id for s in self.specs], "engines": [v.to_json() for v in self.verdicts],
                "devices": {s.id: {"devices": list(s.devices), "env": {k: v for k, v in s.env.items()
                                                                       if k in _DEVICE_VARS},
                                   "reason": s.device_reason} for s in self.specs},
                "gpus": [p.to_json() for p in self.gpu_picks],
                "driver": self.driver.to_json() if self.driver is not None else None,
                "depth": self.depth, "depth_choice": self.depth_choice,
                "crossovers": [{"depth": c.depth, "before": c.before, "after": c.after} for c in self.crossovers],
                "notes": list(self.notes),
                "runs_on": self.run_device.to_json() if self.run_device is not None else None}


@dataclass(frozen=True)
class DepthSwitch:
    """Another engine is clearly faster than the running one at the conversation's depth."""

    engine: EngineSpec  # the faster engine (first of the plan at this depth)
    current: str  # the running engine's id
    depth: int
    decode_tps: float  # the faster engine's decode at ``depth``
    current_decode_tps: float
    threshold: int  # the depth from which ``engine`` is at least 10 % faster

    @property
    def gain(self) -> float:
        """How many times as fast (1.25: 25 % faster)."""
        return self.decode_tps / self.current_decode_tps

    def message(self) -> str:
        """What the chat says: who is faster, by how much, from which depth, and the cost."""
        return (f"At {self.depth} tokens of context, {self.engine.label} decodes {self.gain:.2f}× as fast as the "
                f"running engine ({self.decode_tps:.1f} vs {self.current_decode_tps:.1f} tokens/s, measured by "
                f"the benchmark; it is at least 10 % faster from about {depth_label(self.threshold)} tokens). "
                "Switching reloads the model.")


@dataclass(frozen=True)
class ProbeFinding:
    """What the last probe of one installed engine found for one GPU (the GPU page shows it)."""

    engine_id: str
    label: str
    verdict: str  # "works", "no_device", "failed" or "not probed"
    message: str

    @property
    def works(self) -> bool:
        return self.verdict == "works"
_CHECKING = QT_TRANSLATE_NOOP("Core", "Checking {name}")  # a progress step: an engine, or a folder
_DEVICE_VARS = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "LLAMA_ARG_DEVICE",
                "LLAMA_ARG_SPLIT_MODE", "LLAMA_ARG_TENSOR_SPLIT", "LLAMA_ARG_MAIN_GPU")


@dataclass(frozen=True)
class PlansChanged:
    """Something the resolver decides from changed (``why``): engines, GPUs, a choice, a setting.
    Whoever keeps a plan asks again (the chat, the Images page, the status bar)."""

    why: str


# Settings the resolution reads: a change to one of them changes plans.
PLAN_SETTINGS = frozenset({"pinned_engine", "gfx_override", "engines_dir", "devices", "ignore_driver_check"})


class EngineResolver:
    """Decides which engines run, in which order, and why.

    Its answers follow everything they are made from: it listens to the engine service, the GPU
    service, the choice store and the settings, and announces :class:`PlansChanged` on
    :attr:`events` whenever one of them changed, so plans are re-decided in one place.

    Args:
        engines: Installed engines, probes and launch environments.
        gpus: The GPU service (its last report; detected on demand by :meth:`prepare`).
        settings: The live settings (pin, gfx override).
        choices: Measured / user choices per (model identity, GPU).
        identity: Model file → identity key (injected for tests of renamed files).
        settings_events: The settings service's changes (the pin, devices ...); None: not followed.
    """

    def __init__(self, engines: EngineService, gpus: GpuReports, settings: Settings, choices: ChoiceLookup,
                 *, identity: Callable[[Path], str] = model_identity,
                 settings_events: Listeners[SettingsChange] | None = None) -> None:
        self.engines = engines
        self.gpus = gpus
        self.settings = settings
        self.choices = choices
        self._identity = identity
        self._identities: dict[tuple[str, int, int], str] = {}
        self.one_off: list[InstalledEngine] = []  # engine folders chosen for this session, in order
        self.events: Listeners[PlansChanged] = Listeners()
        # run_on() per kind until something plans are made from changes (every fit asks it).
        self._run_on: dict[str, RunDevice] = {}
        engines.events.subscribe(lambda e: self._changed(f"engine {e.engine} {e.what}"))
        gpus.events.subscribe(lambda _e: self._changed("GPUs detected"))
        choices.events.subscribe(lambda _e: self._changed("engine choice or benchmark results"))
        if settings_events is not None:
            settings_events.subscribe(
                lambda c: self._changed("settings: " + ", ".join(sorted(c.keys & PLAN_SETTINGS)))
                if c.keys & PLAN_SETTINGS else None)

    def _changed(self, why: str) -> None:
        self._run_on.clear()
        self.events.emit(PlansChanged(why))

    # -- the machine ------------------------------------------------------------------------------
    def gpu_targets(self) -> list[GpuTarget]:
        """AMD GPUs as the engine planner sees them, the primary first (detected, else the gfx override)."""
        report = self.gpus.last_report
        if report is not None and report.amd_gpus:
            primary = report.primary
            ordered = sorted(report.amd_gpus, key=lambda g: g is not primary)
            return [GpuTarget(g.name, g.device_id, g.gfx_target) for g in ordered]
        return self.engines.gpus_from_settings()

    def gpu_picks(self) -> list[GpuPick]:
        """Which detected GPUs models run on, each with why (the GPU page's device picker)."""
        return pick_gpus(self.gpus.last_report, self.settings.devices)

    def primary_target(self) -> GpuTarget | None:
        targets = self.gpu_targets()
        return targets[0] if targets else None

    def gpu_key(self) -> str:
        """The name results and engine choices are kept under (the primary GPU, or "CPU")."""
        report = self.gpus.last_report
        if report is not None:
            return report.label()
        return self.settings.gfx_override or "CPU"

    def model_key(self, model: Path) -> str | None:
        """The model's identity (cached per file version); None when the file cannot be read."""
        try:
            st = model.stat()
        except OSError:
            return None
        cache_key = (str(model.resolve()), st.st_size, int(st.st_mtime))
        if cache_key not in self._identities:
            try:
                self._identities[cache_key] = self._identity(model)
            except OSError as exc:
                log.warning("cannot read %s for its identity: %s", model, exc)
                return None
        return self._identities[cache_key]

    # -- getting ready -------------------------------------------------------------------------------
    async def prepare(self, on_progress: ProgressCallback = no_progress, *, reprobe: bool = False) -> None:
        """Detect GPUs (once) and probe every engine that has no current verdict (all with ``reprobe``)."""
        if self.gpus.last_report is None:
            await self.gpus.detect_async()
        gpu = self.primary_target()
        engines = self.engines.installed()
        for i, engine in enumerate(engines):
            if not reprobe and self.engines.last_probe(engine.id, gpu) is not None:
                continue
            on_progress(Progress(i, len(engines), T(_CHECKING, name=engine.id)))
            await self.engines.probe(engine, gpu)

    async def use_folder(self, folder: Path, on_progress: ProgressCallback = no_progress, *,
                         need_device: bool = True, kind: EngineKind = TEXT) -> EngineSpec:
        """Put the llama-server in ``folder`` first for this session (probed first; installed engines
        stay behind it as fallbacks). Calling it again adds the next folder after the previous ones.

        ``need_device`` False accepts a build that starts but sees no device of its kind (RPC
        lending on the processor, listing workers' devices).

        Raises:
            EngineInstallError: no llama-server in the folder.
            EngineError: it does not run here (its probe failed).
        """
        on_progress(Progress(0, None, T(_CHECKING, name=folder)))
        gpu = self.primary_target()
        engine = await self.engines.local_engine(folder, None, gpu, kind=kind)
        result = await self.engines.probe(engine, gpu)
        if not result.usable and (need_device or result.verdict == "failed"):
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "The engine in {folder} does not work here: {reason}."),
                                folder=str(folder), reason=result.message),
                              hint=QT_TRANSLATE_NOOP("Core", "Choose another build, or leave the engine to Strata."),
                              details=result.details)
        self.one_off = [e for e in self.one_off if e.id != engine.id] + [engine]
        self._changed(f"engine folder {folder}")
        return self._spec(engine, self._one_off_reason(len(self.one_off) - 1), result, kind)

    def rocm_findings(self, gpu: GpuInfo) -> list[ProbeFinding]:
        """:meth:`probe_findings` of the ROCm engines built for this GPU's family (none for a GPU
        no ROCm build targets: a gfx110X build's failure says nothing about a gfx1036 iGPU)."""
        if not gpu.rocm_family:
            return []
        return self.probe_findings(GpuTarget(gpu.name, gpu.device_id, gpu.gfx_target), family=gpu.rocm_family)

    def probe_findings(self, gpu: GpuTarget, backend: Backend = Backend.ROCM, *,
                       family: str | None = None, kind: EngineKind = TEXT) -> list[ProbeFinding]:
        """The last probe verdict of every installed ``backend`` engine on ``gpu``, working ones first.

        Whether a GPU *can* use ROCm comes from the catalog; whether the installed build *does* run
        on it is only known from its probe, and that is what a user must be told.
        """
        out = []
        for e in self.engines.installed():
            if e.kind.name != kind.builds or Backend.parse(e.backend) is not backend \
                    or (family and e.family and e.family != family):
                continue
            probe = self.engines.last_probe(e.id, gpu)
            if probe is None:
                out.append(ProbeFinding(e.id, self._label(e), "not probed",
                                        QT_TRANSLATE_NOOP("Core", "not checked on this machine yet")))
            else:
                out.append(ProbeFinding(e.id, self._label(e), probe.verdict, probe.message))
        return sorted(out, key=lambda f: not f.works)

    def clear_one_off(self) -> None:
        """Back to the installed engines only."""
        if self.one_off:
            self.one_off = []
            self._changed("engine folders cleared")

    @staticmethod
    def _one_off_reason(index: int) -> str:
        return (T(QT_TRANSLATE_NOOP("Core", "you chose this engine folder")) if index == 0
                else T(QT_TRANSLATE_NOOP("Core", "your next engine folder")))

    # -- deciding ------------------------------------------------------------------------------------
    def installed_specs(self, kind: EngineKind = TEXT) -> list[EngineSpec]:
        """Engines that did not fail their probe, best first, with no model preference."""
        return list(self.resolve(None, kind=kind).specs)

    def plan_for(self, model: Path | None, depth: int | None = None, *, kind: EngineKind = TEXT) -> list[EngineSpec]:
        """The launch order for ``model`` at a conversation ``depth`` (the chat's plan provider)."""
        return list(self.resolve(model, depth=depth, kind=kind).specs)

    def image_plan(self, model: Path | None) -> list[EngineSpec]:
        """The launch order of image engines (``sd-server``) for ``model`` (the image service's plan)."""
        return list(self.resolve(model, kind=IMAGE).specs)

    def resolve(self, model: Path | None, *, depth: int | None = None, kind: EngineKind = TEXT) -> Resolution:
        """Decide the engines for ``model`` (None: no model preference). Never launches anything.

        Args:
            depth: Tokens already in the conversation's context. When the model was benchmarked at
                two depths or more, the measured choice is the engine fastest (decode) at this
                depth instead of at depth 0; a choice of your own or a pin still comes first.
            kind: What the engines will run (:mod:`strata_gui.core.runtime.kinds`): the installed
                builds of ``kind.builds`` in the same order (a one-off folder, ROCm → Vulkan → CPU,
                failed probes left out); the pin and the measured choices order only kinds that
                follow them (``kind.follows_choices``).
        """
        gpu = self.primary_target()
        gpu_key = self.gpu_key()
        order = {b: i for i, b in enumerate(self.engines.catalog.backend_order)}
        key = self.model_key(model) if model is not None else None
        text = kind.follows_choices
        choice = self.choices.choice(key, gpu_key) if key and text else None
        pinned = self.settings.pinned_engine if text else ""
        notes: list[str] = []
        one_off = [e for e in self.one_off if e.kind.name == kind.builds]
        one_off_ids = [e.id for e in one_off]
        installed = [e for e in self.engines.installed()
                     if e.id not in one_off_ids and e.kind.name == kind.builds] + one_off
        ids = {e.id for e in installed}
        if pinned and pinned not in ids:
            notes.append(f"The pinned engine {pinned} is not installed; choosing automatically.")
        if choice is not None and choice.engine not in ids:
            notes.append(f"The engine chosen for this model ({choice.engine}) is not installed any more.")

        driver = self.engines.driver_verdict()
        scope = _Scope(gpu, gpu_key, key, ids, pinned, driver)
        by_depth: tuple[str, str] | None = None  # (engine, reason) measured fastest at ``depth``
        crossovers: tuple[Crossover, ...] = ()
        if text and key and depth is not None and (choice is None or choice.source == "measured"):
            by_depth, crossovers = self._fastest_at_depth(installed, scope, key, depth)
        ranked: list[tuple[tuple[int, int, int, int, float], InstalledEngine, str]] = []
        out: list[EngineVerdict] = []
        probes: dict[str, ProbeResult | None] = {}
        for e in installed:
            probe = self.engines.last_probe(e.id, gpu)
            probes[e.id] = probe
            backend = Backend.parse(e.backend)
            left_out = self._left_out(e, backend, probe, scope, notes)
            if left_out is not None:
                out.append(left_out)
                continue
            tier, reason = self._tier(e.id, backend, gpu, one_off_ids, choice, pinned, by_depth)
            if probe is None:
                reason = T(QT_TRANSLATE_NOOP("Core", "{reason} (not checked on this machine yet)"), reason=reason)
            sub = one_off_ids.index(e.id) if e.id in one_off_ids else 0
            ranked.append(((tier, sub, 0 if probe is not None else 1, order.get(backend, 9), -e.installed_at),
                           e, reason))
        ranked.sort(key=lambda t: t[0])
        if text and key and ranked:
            ranked[0] = (*ranked[0][:2], self._with_prefill_lead(ranked[0][2], key, gpu_key, installed))
        specs = tuple(self._spec(e, reason, probes[e.id], kind) for _k, e, reason in ranked)
        where, specs = self._run_device(specs, probes, out)
        inside = [EngineVerdict(s.id, s.label, s.backend, True, s.reason,
                                probes[s.id].verdict if probes[s.id] is not None else "not probed")  # type: ignore[union-attr]
                  for s in specs]
        return Resolution(specs, tuple(inside + out), gpu_key, model.name if model is not None else None, key,
                          tuple(notes), tuple(self.gpu_picks()), driver, depth, crossovers,
                          by_depth[0] if by_depth is not None else None, where)

    def _with_prefill_lead(self, reason: str, key: str, gpu_key: str, installed: list[InstalledEngine]) -> str:
        """The chosen engine's reason, with what the benchmark said when Vulkan prefilled clearly
        faster than ROCm for this model on this GPU (the chat header's "Why")."""
        backends = {e.id: e.backend for e in installed}
        lead = prefill_lead(self.choices.start_prefill(key, gpu_key), backends.get)
        return T(QT_TRANSLATE_NOOP("Core", "{reason}; {lead}"), reason=reason, lead=lead) if lead else reason

    def _fastest_at_depth(self, installed: list[InstalledEngine], scope: _Scope, key: str,
                          depth: int) -> tuple[tuple[str, str] | None, tuple[Crossover, ...]]:
        """The engine measured fastest at ``depth`` among those that may run (with why), and where
        the measured engines cross over; (None, ()) when the benchmark did not measure enough."""
        runnable = [e.id for e in installed if self._runnable(e, scope.gpu, scope.driver)
                    and self.engines.ledger.held_back(e, scope.ids, model_key=key, gpu=scope.gpu_key,
                                                      pinned=scope.pinned) is None]
        profile = self.choices.depth_profile(key, scope.gpu_key)
        if not profile.usable(runnable):
            return None, ()
        return self._depth_reason(profile, depth, runnable), tuple(profile.crossovers(runnable))

    def _left_out(self, e: InstalledEngine, backend: Backend, probe: ProbeResult | None, scope: _Scope,
                  notes: list[str]) -> EngineVerdict | None:
        """Why an installed engine is not tried (None: it is): held back by an update, its check
        failed, or the driver cannot run ROCm."""
        label = self._label(e)
        pinned, driver = scope.pinned, scope.driver
        # Engine updates decide between builds of one kind: on trial, refused, replaced, bad here.
        held = self.engines.ledger.held_back(e, scope.ids, model_key=scope.key, gpu=scope.gpu_key, pinned=pinned)
        if held is not None:
            return EngineVerdict(e.id, label, backend, False, held, probe.verdict if probe is not None else "not probed")
        if probe is not None and not probe.usable:
            why = f"its last check failed: {probe.message}"
            if e.id == pinned:
                notes.append(f"The pinned engine {label} is not used: {why}.")
            return EngineVerdict(e.id, label, backend, False, why, probe.verdict)
        if backend is Backend.ROCM and driver is not None and driver.blocks_rocm:
            return EngineVerdict(e.id, label, backend, False, driver.skip_reason(),
                                 probe.verdict if probe is not None else "not probed")
        return None

    def _tier(self, engine_id: str, backend: Backend, gpu: GpuTarget | None, one_off_ids: list[str],
              choice: ChoiceRecord | None, pinned: str, by_depth: tuple[str, str] | None) -> tuple[int, str]:
        """Where an engine that may run ranks (0 first) and why: a one-off folder, your choice, the
        pin, measured fastest (at this depth), then the backend order."""
        if engine_id in one_off_ids:
            return 0, self._one_off_reason(one_off_ids.index(engine_id))
        if choice is not None and engine_id == choice.engine and choice.source == "user":
            return 1, T(QT_TRANSLATE_NOOP("Core", "you chose it for this model on this GPU"))
        if engine_id == pinned:
            return 2, T(QT_TRANSLATE_NOOP("Core", "pinned (strata engines pin / Engines page)"))
        if by_depth is not None:
            return (3, by_depth[1]) if engine_id == by_depth[0] else (4, self._order_reason(backend, gpu))
        if choice is not None and engine_id == choice.engine:
            return 3, T(QT_TRANSLATE_NOOP("Core", "measured fastest for this model on this GPU"))
        return 4, self._order_reason(backend, gpu)

    def _run_device(self, specs: tuple[EngineSpec, ...], probes: dict[str, ProbeResult | None],
                    left_out: list[EngineVerdict]) -> tuple[RunDevice, tuple[EngineSpec, ...]]:
        """Where the first engine runs; on the processor, its reason says so (not "on this GPU")."""
        chosen = specs[0] if specs else None
        probe = probes.get(chosen.id) if chosen is not None else None
        where = run_device(chosen, probe.devices if probe is not None else (), self.gpu_picks(),
                           [v.label for v in left_out if v.backend is not Backend.CPU],
                           gpu_engine_behind=any(s.backend is not Backend.CPU for s in specs[1:]),
                           os_name=self.engines.os_name)
        where = replace(where, usable_gpus=self._gpus_seen(chosen, probe))
        if chosen is not None and where.on_cpu:
            reason = _on_this_machine(chosen.reason)
            if where.gpus:  # a GPU is there: say the model does not run on it
                reason = T(QT_TRANSLATE_NOOP("Core", "{reason}; {where}"), reason=reason, where=where.describe())
            specs = (replace(chosen, reason=reason), *specs[1:])
        return where, specs

    def _gpus_seen(self, chosen: EngineSpec | None, probe: ProbeResult | None) -> tuple[str, ...] | None:
        """Keys of the detected GPUs among the devices ``chosen`` listed in its last check: the only
        ones it can be given (a Vulkan build on llvmpipe sees none, though a 7900 XTX is there)."""
        if chosen is not None and chosen.backend is Backend.CPU:
            return ()
        if chosen is None or probe is None:
            return None
        prefix = BACKEND_DEVICE_PREFIX.get(str(chosen.backend))
        # A software device is no detected GPU, whatever its memory size matches.
        mine = [d for d in probe.devices if d.kind == prefix and not is_software_device(d)]
        report = self.gpus.last_report
        return tuple(g.key for g in match_devices(report.amd_gpus if report is not None else [], mine).values())

    def run_on(self, kind: EngineKind = TEXT) -> RunDevice:
        """Where models of ``kind`` run now (the first engine of a plan with no model preference)."""
        # Also keyed by what may change without an event (a blocking detection, a settings object).
        key = f"{kind.name}|{id(self.gpus.last_report)}|{self.settings.devices}|{self.settings.pinned_engine}"
        if key not in self._run_on:
            where = self.resolve(None, kind=kind).run_device
            self._run_on[key] = where if where is not None else RunDevice(False)
        return self._run_on[key]

    def spec_for(self, engine: InstalledEngine, reason: str) -> EngineSpec:
        """How ``engine`` launches here (its environment and devices), whatever the plan says: an
        engine update's trial runs a build the plan does not use yet."""
        return self._spec(engine, reason, self.engines.last_probe(engine.id, self.primary_target()), engine.kind)

    def depth_switch(self, model: Path, depth: int, current: str) -> DepthSwitch | None:
        """Whether another engine is clearly faster (at least 10 % more decode) than ``current`` at
        ``depth``, by this model's measurements: the chat offers the switch (it costs a reload).

        None when the measured choice does not apply (the user chose an engine for the model, a
        pin), when the model was not measured at two depths, or when ``current`` stays fine.
        """
        resolution = self.resolve(model, depth=depth)
        best = resolution.chosen
        key = resolution.model_key
        # Only when the plan follows the measurements by depth (no choice of the user's is above them).
        if best is None or key is None or best.id == current or best.id != resolution.depth_choice:
            return None
        profile = self.choices.depth_profile(key, resolution.gpu)
        ours, theirs = profile.decode_at(current, depth), profile.decode_at(best.id, depth)
        if not ours or not theirs or theirs < (1 + CLEARLY_FASTER) * ours:
            return None
        threshold = profile.clearly_faster_from(current, best.id) or 0
        return DepthSwitch(best, current, depth, theirs, ours, threshold)

    def _runnable(self, engine: InstalledEngine, gpu: GpuTarget | None, driver: DriverVerdict | None) -> bool:
        probe = self.engines.last_probe(engine.id, gpu)
        if probe is not None and not probe.usable:
            return False
        return not (Backend.parse(engine.backend) is Backend.ROCM and driver is not None and driver.blocks_rocm)

    def _depth_reason(self, profile: DepthProfile, depth: int, among: list[str]) -> tuple[str, str]:
        ranking = profile.ranking_at(depth, among)
        (first, a), (second, b) = ranking[0], ranking[1]
        names = {e.id: self._label(e) for e in self.engines.installed() + self.one_off}
        measured = profile.depths
        if depth in measured or depth >= measured[-1] or depth <= measured[0]:
            where = f"measured fastest at {depth_label(profile.nearest_measured(depth))} depth"
        else:
            lo = max(d for d in measured if d < depth)
            hi = min(d for d in measured if d > depth)
            where = (f"fastest at {depth_label(depth)} depth between the measurements at {depth_label(lo)} "
                     f"and {depth_label(hi)}")
        reason = f"{where} for this model on this GPU ({a:.1f} vs {b:.1f} tokens/s decode for {names.get(second, second)})"
        crossings = profile.crossovers(among)
        if crossings:
            reason += "; " + "; ".join(f"crossover at about {depth_label(c.depth)} tokens: {names.get(c.before, c.before)} "
                                       f"below, {names.get(c.after, c.after)} from there" for c in crossings)
        return first, reason

    def _order_reason(self, backend: Backend, gpu: GpuTarget | None) -> str:
        order = " → ".join(Backend.parse(b).label for b in self.engines.catalog.backend_order)
        if backend is Backend.CPU:
            return T(QT_TRANSLATE_NOOP("Core", "runs on the processor; last in the order {order}"), order=order)
        if gpu is not None and gpu.gfx:
            return T(QT_TRANSLATE_NOOP("Core", "{backend} in the order {order} for {gfx}"), backend=backend.label,
                     order=order, gfx=gpu.gfx)
        return T(QT_TRANSLATE_NOOP("Core", "{backend} in the order {order} with no AMD GPU detected"),
                 backend=backend.label, order=order)

    @staticmethod
    def _label(engine: InstalledEngine) -> str:
        backend = Backend.parse(engine.backend)
        if engine.source == "local":
            return T(QT_TRANSLATE_NOOP("Core", "{backend} (your build: {folder})"), backend=backend.label,
                     folder=engine.server_path.parent.name)
        return f"{backend.label} {engine.tag}".strip()

    def _spec(self, engine: InstalledEngine, reason: str, probe: ProbeResult | None,
              kind: EngineKind = TEXT) -> EngineSpec:
        env, notices = self.engines.launch_env(engine, self.primary_target())
        for n in notices:
            log.info("engine %s: %s", engine.id, n)
        # The probe ran with exactly this environment, so its device names are the ones to map.
        devices = choose_devices(engine.backend, probe.devices if probe is not None else (),
                                 self.gpus.last_report, self.settings.devices, env, self.engines.os_name)
        env.update(devices.env)
        base = self.engines.environ
        # Only variables that differ from the app's environment travel with the spec.
        delta = {k: v for k, v in env.items() if base.get(k) != v}
        backend = Backend.parse(engine.backend)
        tuning = ("HIPBLASLT_TUNING_OVERRIDE_FILE" in env) if backend is Backend.ROCM else None
        return EngineSpec(engine.id, self._label(engine), backend, engine.server_path, delta, reason, tuning,
                          devices.devices, devices.reason, kind=kind)


# The reasons that say "on this GPU", as they read when the engine runs on the processor.
_ON_THIS_MACHINE = {
    "you chose it for this model on this GPU": QT_TRANSLATE_NOOP("Core", "you chose it for this model on this machine"),
    "measured fastest for this model on this GPU": QT_TRANSLATE_NOOP("Core",
                                                                     "measured fastest for this model on this machine"),
}


def _on_this_machine(reason: str) -> str:
    """``reason`` with "on this GPU" said as "on this machine" (still a translatable text where it was one)."""
    if isinstance(reason, Text):
        if reason.template in _ON_THIS_MACHINE:
            return T(_ON_THIS_MACHINE[reason.template], **reason.args)
        if "reason" in reason.args:  # "{reason} (not checked …)": the inner reason says it
            return T(reason.template, **{**reason.args, "reason": _on_this_machine(reason.args["reason"])})
    return reason.replace(" on this GPU", " on this machine")
