"""Engine updates you can trust: a new build is tried on this machine before the chat uses it.

:class:`EngineUpdater` is the one implementation the Engines page and ``strata engines update``
share:

- :meth:`~EngineUpdater.check` says what is new per source and kind (from the cached listing when
  offline), on the stable channel (the catalog's pinned / minimum tags) or the latest one;
- :meth:`~EngineUpdater.update` installs each new build beside the current one and tries it: the
  probe, a load of the user's most recent model (else the smallest in the library), the benchmark
  at depth 0 with the settings of the current build's stored result, and a format check (a short
  streamed reply through the model's template with thinking and tool-call parsing on). It is
  promoted only when all pass and it is not slower than the current build beyond the tolerance
  setting; otherwise the current build stays and the reason is recorded;
- :meth:`~EngineUpdater.rollback` puts the last good build back; a promoted build that fails to
  load a model its predecessor loaded is rolled back automatically and marked bad for that model
  and GPU.

A trial holds the engine pool's turn (:meth:`EnginePool.turn`): it starts once no reply is
streaming, and the chat waits (and is told why) until it is done. Every decision is a line of the
history in :class:`~strata_gui.core.engines.updates.UpdateLedger`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import EngineError, StrataError
from strata_gui.core.base.progress import Progress, ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.bench.store import BenchResult, MetricsStore
from strata_gui.core.bench.update_survey import (
    OFFERED,
    SKIPPED,
    UpdateCandidate,
    UpdateSurvey,
    refused_reason,
)
from strata_gui.core.bench.workload import BenchConfig, Benchmark
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.engines.catalog import tag_number
from strata_gui.core.engines.plan import Candidate, EnginePlan, release_rank, release_version
from strata_gui.core.engines.records import InstalledEngine, Release, ReleaseListing
from strata_gui.core.engines.resolver import EngineResolver
from strata_gui.core.engines.service import EngineService
from strata_gui.core.engines.updates import (
    AUTO_ROLLED_BACK,
    NOT_FINISHED,
    PROMOTED,
    REFUSED,
    ROLLED_BACK,
    TRIAL_PASSED,
    UpdateEntry,
    engine_group,
    group_of,
)
from strata_gui.core.pool import EnginePool, EngineStateChanged, PoolEvent
from strata_gui.core.runtime.client import ChatClient, RequestOptions
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import INSTALLABLE, EngineKind
from strata_gui.core.runtime.launch import ServerSettings, ServerState

log = logging.getLogger(__name__)

TRIAL_USER = "engine update"
# How a face that stops a trial names the signal (``task.cancel(msg=...)``): "SIGTERM", "Ctrl+C".
_SIGNAL_NAME = re.compile(r"SIG[A-Z]+|Ctrl\+C")
# Used when the current build has no stored result for the trial's model (it is measured first).
DEFAULT_TRIAL_BENCH = BenchConfig(prefill_tokens=512, gen_tokens=128, reps=5)
_FORMAT_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def release_notes_url(repo: str, tag: str) -> str:
    """The release's page on GitHub (its notes)."""
    return f"https://github.com/{repo}/releases/tag/{tag}"


@dataclass(frozen=True)
class UpdateOffer:
    """A newer build of an installed kind and family.

    Attributes:
        kind: The engine kind's name ("text", "image").
        group: Kind, source, backend and family (see :func:`engine_group`).
        current: The build in use now.
        candidate: What would be installed (its ``engine_id``, ``tag``, asset).
        published_at: The release's date (ISO 8601, as GitHub gives it).
        notes_url: The release notes.
        channel: "stable" or "latest".
        cached: The listing came from the cache (offline, or GitHub unreachable).
        held: Why it will not be tried ("pinned ...", "refused before ..."); "" when it will.
    """

    kind: str
    group: str
    current: InstalledEngine
    candidate: Candidate
    published_at: str
    notes_url: str
    channel: str
    cached: bool = False
    held: str = ""

    @property
    def tag(self) -> str:
        return self.candidate.tag or ""

    def message(self) -> str:
        """One quiet line: what is new, when, where to read about it."""
        date = self.published_at[:10] or "undated"
        text = (f"{self.candidate.backend} {self.tag} ({date}) is available; you use {self.current.tag}. "
                f"Release notes: {self.notes_url}")
        if self.cached:
            text += " (from the saved release list)"
        if self.held:
            text += f" Not tried: {self.held}."
        return text

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "group": self.group, "current": self.current.id, "current_tag": self.current.tag,
                "engine": self.candidate.engine_id, "tag": self.tag, "published_at": self.published_at,
                "notes_url": self.notes_url, "channel": self.channel, "cached": self.cached,
                "held": self.held or None, "message": self.message()}


@dataclass(frozen=True)
class TrialOutcome:
    """What one trial decided.

    Attributes:
        offer: The update tried.
        verdict: "promoted", "refused", "kept" (not tried: no model, or no usable current build)
            or "passed" (``--trial-only``: it would have been promoted).
        message: The sentence a user reads.
        figures: Measured numbers, the best repetition of each build (``prefill_tps``, ``decode_tps``,
            ``current_prefill_tps``, ``current_decode_tps``), and ``prefill_slower_pct``,
            ``decode_slower_pct`` (negative: faster).
        model: The model it was tried with ("" when none).
    """

    offer: UpdateOffer
    verdict: str
    message: str
    figures: dict[str, float] = field(default_factory=dict)
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"current": self.offer.current.id, "engine": self.offer.candidate.engine_id, "tag": self.offer.tag,
                "verdict": self.verdict, "message": self.message, "figures": dict(self.figures),
                "model": self.model}


class _Refused(Exception):
    """A trial step failed: the build is refused for ``reason``."""

    def __init__(self, reason: str, figures: dict[str, float] | None = None, *, blames_build: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.figures = figures or {}
        self.blames_build = blames_build  # False: the trial could not be made; the build may be tried again


def _unstopped(error: str | None) -> str:
    """A benchmark's error inside a sentence, without its full stop (a
    :class:`~strata_gui.core.base.texts.Text` without one stays a Text, so it is still translated)."""
    error = error or ""
    return error.rstrip(".") if error.endswith(".") else error


def _group_builds(kind: str, group: str, plans: list[tuple[Release, EnginePlan]]) -> list[tuple[Release, Candidate]]:
    """Each release's build for ``group`` (best release first, as ``plans`` come): the one the plan
    includes, else one this machine ruled out (its reason says why)."""
    out = []
    for release, plan in plans:
        cand = next((c for c in plan.candidates  # included ones come first
                     if c.asset is not None and c.tag and c.source_id
                     and engine_group(kind, c.source_id, c.backend, c.family) == group), None)
        if cand is not None:
            out.append((release, cand))
    return out


def _rank_in_use(have: InstalledEngine, listing: ReleaseListing | None) -> tuple[int, str]:
    """The build in use as :func:`~strata_gui.core.engines.plan.release_rank` ranks releases: its
    release's rank when the listing still has it, else its tag's number, else when it was installed."""
    release = next((r for r in listing.releases if r.tag == have.tag), None) if listing else None
    if release is not None:
        return release_rank(release)
    number = tag_number(have.tag)
    if number is not None:
        return (number, "")
    return (-1, datetime.fromtimestamp(have.installed_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _pick_model(last: str, library: Sequence[Path]) -> Path | None:
    """The most recent model when it is still there, else the smallest of the library."""
    if last and Path(last).is_file():
        return Path(last)
    sizes = []
    for p in library:
        try:
            sizes.append((p.stat().st_size, str(p), p))
        except OSError:
            continue
    return min(sizes)[2] if sizes else None


ModelLister = Callable[[], Awaitable[Sequence[Path]]]
"""The library's usable chat models (the trial loads the smallest when no model was used yet)."""


class EngineUpdater:
    """Checks, tries, promotes and rolls back engine builds (the Engines page and the CLI).

    Args:
        engines: Installs, probes, removes builds; its ledger keeps the decisions.
        resolver: The GPU, model identities, and how a build launches here.
        pool: Where the trial borrows engines (it holds the pool's turn).
        http: Loopback client for the engines' API.
        store: Stored benchmark results (the current build's figures) and request history.
        settings_service: Tolerance, channel, the pin and the most recent model.
        launch_settings: A model's load options (the chat's), as the benchmark uses them.
        models: The library's usable chat models.
    """

    def __init__(self, engines: EngineService, resolver: EngineResolver, pool: EnginePool,
                 http: httpx.AsyncClient, store: MetricsStore, settings_service: SettingsService, *,
                 launch_settings: Callable[[Path], ServerSettings] | None = None,
                 models: ModelLister | None = None, clock: Callable[[], float] = time.time) -> None:
        self.engines = engines
        self.resolver = resolver
        self.pool = pool
        self._http = http
        self.store = store
        self.settings_service = settings_service
        self._launch_settings = launch_settings
        self._models = models
        self._clock = clock
        self.ledger = engines.ledger
        self._benchmark = Benchmark(http, pool, store, launch_settings=launch_settings)
        self._benchmark.USER = TRIAL_USER  # the trial's loads happen during its turn of the pool

    def watch(self) -> Callable[[], None]:
        """Follow the pool's loads for the automatic rollback (:meth:`on_pool_event`); returns the
        unsubscribe."""
        return self.pool.events.subscribe(self.on_pool_event)

    # -- what is new -------------------------------------------------------------------------------
    def current_builds(self, kind: EngineKind | None = None) -> dict[str, InstalledEngine]:
        """The build in use per group: the one an update promoted or restored, else the newest."""
        on_trial = set(self.ledger.on_trial())
        builds = [e for e in self.engines.installed()  # newest first
                  if e.source != "local" and e.id not in on_trial and (kind is None or e.kind.name == kind.name)]
        ids = {e.id for e in builds}
        out: dict[str, InstalledEngine] = {}
        for e in builds:
            group = group_of(e)
            active = self.ledger.active(group)
            if active in ids:
                if e.id == active:
                    out[group] = e
            elif group not in out and self.ledger.refused(e.id) is None and not self.ledger.unfinished(e.id):
                out[group] = e
        return out

    async def survey(self, *, channel: str | None = None) -> UpdateSurvey:
        """What is new for every installed kind and family, and every release looked at (nothing is
        installed).

        Releases are ranked by what each says it is (:func:`~strata_gui.core.engines.plan.release_rank`),
        and the best one not refused is offered. Works offline from the cached release listing (the
        offers then say so).
        """
        channel = channel or self.settings.update_channel
        await self._detect_gpus()
        gpus = self.resolver.gpu_targets()
        found = UpdateSurvey(unfinished=self.ledger.unfinished())
        for kind in INSTALLABLE:
            current = self.current_builds(kind)
            if not current:
                continue
            listings = await self.engines.fetch_releases(kind)
            releases = {repo: listing.releases for repo, listing in listings.items()}
            plans = await self.engines.release_plans(gpus, releases, kind, latest=channel == "latest")
            for group, have in current.items():
                builds = _group_builds(kind.name, group, plans)
                if builds:
                    self._survey_group(found, builds, have, listings, channel)
        return found

    async def check(self, *, channel: str | None = None) -> list[UpdateOffer]:
        """The offers of :meth:`survey`: per build in use, the best newer release not refused."""
        return (await self.survey(channel=channel)).offers

    def _survey_group(self, found: UpdateSurvey, builds: list[tuple[Release, Candidate]], have: InstalledEngine,
                      listings: dict[str, ReleaseListing], channel: str) -> None:
        """Walk one group's releases best first: skip the refused ones (``--retry`` keeps them),
        offer the first other one newer than ``have``; say why for each."""
        kind, group = have.kind.name, group_of(have)
        repo = builds[0][1].repo or self.engines.catalog.source(builds[0][1].source_id or "").repo
        listing = listings.get(repo)
        in_use = _rank_in_use(have, listing)
        for release, cand in builds:
            seen = functools.partial(UpdateCandidate, kind, group, have, cand, release_version(release),
                                     release.published_at)
            if release_rank(release) <= in_use:  # nothing newer is offered: say why
                found.candidates.append(seen(SKIPPED, QT_TRANSLATE_NOOP("Core", "the build in use")
                                             if cand.engine_id == have.id else
                                             T(QT_TRANSLATE_NOOP("Core", "not newer than {current}, the build in "
                                                                         "use"), current=have.tag)))
                return
            if not cand.included:  # this machine's probe or driver rules it out
                found.candidates.append(seen(SKIPPED, cand.reason))
                continue
            offer = UpdateOffer(kind, group, have, cand, release.published_at,
                                release_notes_url(repo, cand.tag or ""), channel, bool(listing and listing.cached))
            refused = self.ledger.refused(cand.engine_id)
            if refused is not None:
                found.candidates.append(seen(SKIPPED, refused_reason(self.ledger.refusal(cand.engine_id), refused),
                                             refused=True))
                found.retries.append(dataclasses.replace(offer, held=T(QT_TRANSLATE_NOOP(
                    "Core", "it was refused before ({reason})"), reason=refused)))
                continue
            held = ""
            if have.id == self.settings.pinned_engine:
                held = T(QT_TRANSLATE_NOOP("Core", "{engine} is pinned; a pinned build is never replaced"),
                         engine=have.id)
            found.offers.append(dataclasses.replace(offer, held=held))
            found.candidates.append(seen(OFFERED, held))
            return

    @property
    def settings(self) -> Settings:
        return self.settings_service.current

    # -- trying -------------------------------------------------------------------------------------
    async def update(self, *, trial_only: bool = False, channel: str | None = None, retry_refused: bool = False,
                     on_progress: ProgressCallback = no_progress, survey: UpdateSurvey | None = None
                     ) -> list[TrialOutcome]:
        """Try every offered update (``survey``, else :meth:`survey`); promote those that pass
        unless ``trial_only``.

        ``retry_refused`` first tries again the refused builds ranked above each offer, best first;
        the offer is still tried when they are refused again. A pinned build is never replaced.
        """
        found = survey or await self.survey(channel=channel)
        out = []
        for group in found.groups():
            queue = [o for o in found.retries if o.group == group] if retry_refused else []
            queue += [o for o in found.offers if o.group == group]
            for offer in queue:
                if offer.current.id == self.settings.pinned_engine:
                    break
                outcome = await self.trial(offer, promote=not trial_only, on_progress=on_progress)
                out.append(outcome)
                if outcome.verdict != "refused":
                    break
        return out

    async def trial(self, offer: UpdateOffer, *, promote: bool = True,
                    on_progress: ProgressCallback = no_progress) -> TrialOutcome:
        """Install ``offer``'s build beside the current one, try it here, and promote or refuse it.

        Raises:
            EngineError: The current build is pinned.
            StrataError: The build could not be installed (nothing is recorded: try again later).
        """
        current, cand = offer.current, offer.candidate
        if current.id == self.settings.pinned_engine:
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "{engine} is pinned; a pinned build is never replaced."),
                                engine=current.id),
                              hint=QT_TRANSLATE_NOOP("Core", "Unpin it (strata engines pin) to let updates replace "
                                                             "it."))
        await self._detect_gpus()
        gpu = self.resolver.primary_target()
        # Before the install: the resolver never picks it meanwhile.
        self.ledger.begin_trial(cand.engine_id, group=offer.group, tag=offer.tag, previous=current.id,
                                previous_tag=current.tag)
        installed: InstalledEngine | None = None
        try:
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Installing {tag} beside {current}"),
                                            tag=cand.tag, current=current.tag)))
            installed = next((e for e in self.engines.installed() if e.id == cand.engine_id), None) \
                or await self.engines.install(cand, on_progress, gpu)
            outcome = await self._try(offer, installed, promote, on_progress)
        except (asyncio.CancelledError, KeyboardInterrupt) as stop:
            self._not_finished(offer, stop)
            if installed is not None:
                self._discard(installed.id)
            raise
        except BaseException:
            self.ledger.end_trial(cand.engine_id)
            if installed is not None:
                self._discard(installed.id)
            raise
        if outcome.verdict != "promoted":
            self._discard(installed.id)
        return outcome

    async def _try(self, offer: UpdateOffer, new: InstalledEngine, promote: bool,
                   on_progress: ProgressCallback) -> TrialOutcome:
        current = offer.current
        gpu = self.resolver.primary_target()
        model: Path | None = None
        figures: dict[str, float] = {}
        try:
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Checking {tag} on this machine"), tag=new.tag)))
            probe = await self.engines.probe(new, gpu)
            if not probe.usable:
                raise _Refused(T(QT_TRANSLATE_NOOP("Core", "{tag} does not run on {where}: {reason}"),
                                 tag=new.tag, where=self._where(), reason=probe.message))
            if new.kind.kv_cache:
                model = await self._trial_model()
                if model is None:
                    not_tried = T(QT_TRANSLATE_NOOP("Core", "{tag} was not tried: there is no chat model in your "
                                                            "library to try it with; kept {current}"),
                                  tag=new.tag, current=current.tag)
                    return self._kept(offer, not_tried)
                figures = await self._measure(offer, new, model, on_progress)
        except _Refused as refusal:
            kept = T(QT_TRANSLATE_NOOP("Core", "{reason}; kept {current}"), reason=refusal.reason, current=current.tag)
            if not refusal.blames_build:
                return self._kept(offer, kept)
            entry = UpdateEntry(self._now(), REFUSED, offer.group, new.id, current.id, kept,
                                {**figures, **refusal.figures}, model.name if model else "")
            self.ledger.record(entry, refuse=True)
            return TrialOutcome(offer, "refused", entry.message, entry.figures, entry.model)
        summary = self._figures_text(figures)
        if not promote:
            if summary:
                passed = T(QT_TRANSLATE_NOOP("Core", "{tag} passed its trial on {where} {figures}; not promoted (trial "
                                                     "only), kept {current}"),
                           tag=new.tag, where=self._where(), figures=summary, current=current.tag)
            else:
                passed = T(QT_TRANSLATE_NOOP("Core", "{tag} passed its trial on {where}; not promoted (trial only), "
                                                     "kept {current}"),
                           tag=new.tag, where=self._where(), current=current.tag)
            entry = UpdateEntry(self._now(), TRIAL_PASSED, offer.group, new.id, current.id, passed, figures,
                                model.name if model else "")
            self.ledger.record(entry)
            return TrialOutcome(offer, "passed", entry.message, figures, entry.model)
        if summary:
            replaced = T(QT_TRANSLATE_NOOP("Core", "{tag} replaced {current} on {where} {figures}; {current} is "
                                                   "kept to roll back to"),
                         tag=new.tag, current=current.tag, where=self._where(), figures=summary)
        else:
            replaced = T(QT_TRANSLATE_NOOP("Core", "{tag} replaced {current} on {where}; {current} is kept to roll "
                                                   "back to"),
                         tag=new.tag, current=current.tag, where=self._where())
        entry = UpdateEntry(self._now(), PROMOTED, offer.group, new.id, current.id, replaced, figures,
                            model.name if model else "")
        self.ledger.record(entry, promote=(new.id, current.id))
        return TrialOutcome(offer, "promoted", entry.message, figures, entry.model)

    async def _measure(self, offer: UpdateOffer, new: InstalledEngine, model: Path,
                       on_progress: ProgressCallback) -> dict[str, float]:
        """Load, benchmark and format-check ``new`` against the current build, in the pool's turn."""
        current = offer.current
        gpu_key = self.resolver.gpu_key()
        key = self.resolver.model_key(model) or ""
        new_spec = self.resolver.spec_for(new, T(QT_TRANSLATE_NOOP("Core", "on trial as an update of {current}"),
                                                 current=current.tag))
        old_spec = self.resolver.spec_for(current, QT_TRANSLATE_NOOP("Core", "the build in use"))
        tolerance = self.settings.update_tolerance_pct
        reason = T(QT_TRANSLATE_NOOP("Core", "Strata is trying the engine update {tag} on this machine (a few minutes "
                                             "at most); the chat continues once it is done."), tag=new.tag)
        async with self.pool.turn(TRIAL_USER, reason, on_progress=on_progress):
            baseline = self._stored_result(current.id, key, gpu_key)
            config = (BenchConfig(prefill_tokens=baseline.prefill_tokens, gen_tokens=baseline.gen_tokens,
                                  reps=baseline.reps, depth=0) if baseline is not None else DEFAULT_TRIAL_BENCH)
            if baseline is None:
                # No figures of the current build for this model: measure it first (a real result, kept).
                on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Measuring {tag} with {model}"),
                                                tag=current.tag, model=model.name)))
                baseline = (await self._benchmark.run(model, [old_spec], gpu=gpu_key, config=config,
                                                      on_progress=on_progress, model_key=key))[0]
                if not baseline.ok:
                    raise _Refused(T(QT_TRANSLATE_NOOP("Core", "{current} (the build in use) could not be measured "
                                                               "with {model} ({error}), so {tag} cannot be compared"),
                                     current=current.tag, model=model.name, error=_unstopped(baseline.error),
                                     tag=new.tag), blames_build=False)
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Loading {model} on {tag}"),
                                            model=model.name, tag=new.tag)))
            trial = (await self._benchmark.run(model, [new_spec], gpu=gpu_key, config=config, on_progress=on_progress,
                                               model_key=key, save=False))[0]
            if not trial.ok:
                raise _Refused(T(QT_TRANSLATE_NOOP("Core", "{tag} failed with {model} on {where}: {error}"),
                                 tag=new.tag, model=model.name, where=self._where(), error=_unstopped(trial.error)))
            figures = self._compare(trial, baseline)
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Checking {tag}'s replies with {model}'s "
                                                                      "template"), tag=new.tag, model=model.name)))
            problem = await self._format_check(new_spec, model)
            if problem is not None and await self._format_check(old_spec, model) is None:
                raise _Refused(T(QT_TRANSLATE_NOOP("Core", "{tag} broke {model}'s replies: {problem}"),
                                 tag=new.tag, model=model.name, problem=problem), figures)
        for what in ("prefill", "decode"):
            slower = figures[f"{what}_slower_pct"]
            if slower > tolerance:
                template = (QT_TRANSLATE_NOOP("Core", "{tag} prefilled {slower:.0f} % slower than {current} on {where} "
                                                      "with {model} ({new:.1f} vs {old:.1f} tokens/s; the tolerance is "
                                                      "{tolerance} %)") if what == "prefill" else
                            QT_TRANSLATE_NOOP("Core", "{tag} decoded {slower:.0f} % slower than {current} on {where} "
                                                      "with {model} ({new:.1f} vs {old:.1f} tokens/s; the tolerance is "
                                                      "{tolerance} %)"))
                raise _Refused(T(template, tag=new.tag, slower=slower, current=current.tag, where=self._where(),
                                 model=model.name, new=figures[what + "_tps"], old=figures["current_" + what + "_tps"],
                                 tolerance=tolerance), figures)
        self.store.save_bench(trial)
        choice = self.store.choice(key, gpu_key) if key else None
        if choice is not None and choice.source == "measured" and choice.engine == current.id:
            self.store.set_choice(key, gpu_key, new.id, "measured", model.name)
        return figures

    @staticmethod
    def _compare(trial: BenchResult, baseline: BenchResult) -> dict[str, float]:
        # The best repetition of each: other work on the machine only ever slows a repetition down,
        # so the best is the build's own speed, and the comparison does not follow the machine's load.
        figures = {"prefill_tps": max(trial.prefill_tps, default=0.0), "decode_tps": max(trial.decode_tps, default=0.0),
                   "current_prefill_tps": max(baseline.prefill_tps, default=0.0),
                   "current_decode_tps": max(baseline.decode_tps, default=0.0)}
        for what in ("prefill", "decode"):
            old = figures[f"current_{what}_tps"]
            figures[f"{what}_slower_pct"] = (old - figures[f"{what}_tps"]) / old * 100.0 if old > 0 else 0.0
        return figures

    @staticmethod
    def _figures_text(figures: dict[str, float]) -> str:
        if not figures:
            return ""
        return T(QT_TRANSLATE_NOOP("Core", "(best repetitions: prefill {prefill:.1f} vs {current_prefill:.1f} "
                                           "tokens/s, decode {decode:.1f} vs {current_decode:.1f})"),
                 prefill=figures["prefill_tps"], current_prefill=figures["current_prefill_tps"],
                 decode=figures["decode_tps"], current_decode=figures["current_decode_tps"])

    def _stored_result(self, engine_id: str, key: str, gpu: str) -> BenchResult | None:
        if not key:
            return None
        results = [r for r in self.store.bench_results(model_key=key, gpu=gpu)
                   if r.engine == engine_id and r.depth == 0 and r.ok]
        return max(results, key=lambda r: r.at) if results else None

    async def _format_check(self, spec: EngineSpec, model: Path) -> str | None:
        """A short streamed reply through the model's template with thinking and tool-call
        parsing on: None when it streams to its end, else what went wrong."""
        base = self._launch_settings(model) if self._launch_settings else ServerSettings()
        settings = dataclasses.replace(base, port=0, parallel=1, jinja=True, metrics=False)
        options = RequestOptions(reasoning_format="deepseek", tools=(_FORMAT_TOOL,), tool_choice="auto",
                                 max_tokens=16)
        lease = None
        try:
            lease = await self.pool.acquire(spec, model, settings, user=TRIAL_USER, exclusive=True)
            client = ChatClient(self._http, lease.base_url, lease.api_key or None)
            reply = await client.stream([{"role": "user", "content": "What time is it in Paris?"}], options=options)
            if not (reply.text or reply.thinking or reply.tool_calls):
                return QT_TRANSLATE_NOOP("Core", "the reply was empty")
            lease.succeeded()
            return None
        except StrataError as exc:
            # Engines answer with multi-line parser traces: their first and last lines say it.
            lines = [line.strip() for line in exc.message.splitlines() if line.strip()]
            return lines[0].rstrip(": ") + (f" … {lines[-1]}" if len(lines) > 1 else "") if lines else \
                QT_TRANSLATE_NOOP("Core", "no reply")
        finally:
            if lease is not None:
                lease.release()
                await self.pool.unload(lease.engine, "the engine update trial is done", wait=False)

    async def _trial_model(self) -> Path | None:
        library = list(await self._models()) if self._models is not None else []
        return await run_blocking(lambda: _pick_model(self.settings.last_model, library), name="strata-trial-model")

    def _not_finished(self, offer: UpdateOffer, stop: BaseException) -> None:
        """The trial was stopped (a signal, Ctrl+C, Cancel, the app closing): recorded as not
        finished, not as a fault of the build; the build in use stays, the next update tries it again."""
        how = "Ctrl+C" if isinstance(stop, KeyboardInterrupt) else str(stop.args[0]) if stop.args else ""
        if not _SIGNAL_NAME.fullmatch(how):  # a library's own cancel message is no reason for people
            how = ""
        why = (T(QT_TRANSLATE_NOOP("Core", "Strata was stopped ({how}) during it"), how=how) if how
               else QT_TRANSLATE_NOOP("Core", "it was cancelled"))
        message = T(QT_TRANSLATE_NOOP("Core", "The trial of {tag} did not finish: {why}; kept {current}"),
                    tag=offer.tag, why=why, current=offer.current.tag)
        try:
            self.ledger.record(UpdateEntry(self._now(), NOT_FINISHED, offer.group, offer.candidate.engine_id,
                                           offer.current.id, message))
        except StrataError as exc:  # a read-only folder: the stop goes on; the next read settles the trial
            log.warning("%s", exc.message)

    def _kept(self, offer: UpdateOffer, message: str) -> TrialOutcome:
        self.ledger.end_trial(offer.candidate.engine_id)
        return TrialOutcome(offer, "kept", message)

    def _discard(self, engine_id: str) -> None:
        try:
            self.engines.remove(engine_id)
        except StrataError as exc:  # left on disk, but refused or on trial: never used
            log.warning("could not remove the tried build %s: %s", engine_id, exc.message)

    async def _detect_gpus(self) -> None:
        # Trials and their sentences name the GPU: the same one whichever face asked first.
        if self.resolver.gpus.last_report is None:
            await self.resolver.gpus.detect_async()

    def _where(self) -> str:
        """The GPU's name for sentences ("your AMD Radeon RX 7900 XTX")."""
        target = self.resolver.primary_target()
        if target is not None and target.name:
            return T(QT_TRANSLATE_NOOP("Core", "your {gpu}"), gpu=target.name)
        return QT_TRANSLATE_NOOP("Core", "this machine")

    def _now(self) -> float:
        return self._clock()

    # -- rolling back --------------------------------------------------------------------------------
    def rollback(self, engine_id: str | None = None) -> UpdateEntry:
        """Put the last good build back in use for ``engine_id``'s kind and family (None: the
        latest promotion's).

        Raises:
            EngineError: Nothing to roll back to.
        """
        installed = {e.id: e for e in self.engines.installed()}
        group: str | None = None
        if engine_id is not None:
            if engine_id not in installed:
                raise EngineError(T(QT_TRANSLATE_NOOP("Core", "No engine '{engine}' is installed."), engine=engine_id),
                                  hint=QT_TRANSLATE_NOOP("Core", "See `strata engines list`."))
            group = group_of(installed[engine_id])
        else:
            promoted = [h for h in self.ledger.history() if h.action == PROMOTED]
            group = promoted[-1].group if promoted else None
        good = self.ledger.last_good(group) if group else None
        active = self.ledger.active(group) if group else None
        if group is None or good is None or good not in installed:
            raise EngineError(QT_TRANSLATE_NOOP("Core", "There is no earlier build to roll back to."),
                              hint=QT_TRANSLATE_NOOP("Core", "Strata keeps the last good build of each kind after an "
                                                             "update promotes a new one."))
        old, new = installed[good], installed.get(active or "")
        if new:
            message = T(QT_TRANSLATE_NOOP("Core", "Rolled back to {old} from {new} on {where}"),
                        old=old.tag, new=new.tag, where=self._where())
        else:
            message = T(QT_TRANSLATE_NOOP("Core", "Rolled back to {old} on {where}"), old=old.tag, where=self._where())
        return self.ledger.record(UpdateEntry(self._now(), ROLLED_BACK, group, good, active or "", message),
                                  restore=good)

    def on_pool_event(self, event: PoolEvent) -> None:
        """A promoted build that fails to load a model its predecessor loaded is rolled back."""
        if not isinstance(event, EngineStateChanged) or event.state is not ServerState.FAILED:
            return
        entry = event.engine
        if entry.loaded_at is not None or entry.holders.get(TRIAL_USER):
            return
        engine_id = entry.spec.id
        engine = next((e for e in self.engines.installed() if e.id == engine_id), None)
        if engine is None:
            return
        group = group_of(engine)
        good = self.ledger.last_good(group)
        if self.ledger.active(group) != engine_id or good is None:
            return
        # Even an outcome that reads like a bad model counts: the previous build loaded this very file.
        model = entry.model
        key = self.resolver.model_key(model)
        gpu_key = self.resolver.gpu_key()
        if not self._loaded_before(good, model, key, gpu_key):
            return
        old = next((e for e in self.engines.installed() if e.id == good), None)
        old_tag = old.tag if old is not None else good
        message = T(QT_TRANSLATE_NOOP("Core", "{new} could not load {model}, which {old} loaded; rolled back to {old} "
                                              "and marked {new} bad for this model on {where}"),
                    new=engine.tag, model=model.name, old=old_tag, where=self._where())
        log.warning("%s", message)
        self.ledger.record(UpdateEntry(self._now(), AUTO_ROLLED_BACK, group, good, engine_id, message,
                                       model=model.name), restore=good, bad=(key, gpu_key))

    def _loaded_before(self, engine_id: str, model: Path, key: str | None, gpu: str) -> bool:
        """Whether ``engine_id`` ran ``model`` here: a benchmark result or a served request says so."""
        if key and any(r.engine == engine_id and r.ok for r in self.store.bench_results(model_key=key, gpu=gpu)):
            return True
        return bool(self.store.requests(model=model.name, engine=engine_id, limit=1))
