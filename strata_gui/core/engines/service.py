"""EngineService: plan, install, probe, choose and manage llama.cpp engines (the core facade).

The UI and the CLI talk only to this class. It owns no globals: the HTTP client, catalog,
folders, settings, disk-space function and process runner are all handed in.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import (
    EngineCatalogError,
    EngineError,
    EngineInstallError,
    InsufficientSpaceError,
    StrataError,
    UnsafeArchiveError,
)
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback, format_bytes, no_progress
from strata_gui.core.base.state_file import load_cache
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.engines.catalog import EngineCatalog, load_catalog, tag_number
from strata_gui.core.engines.drivers import DriverVerdict, check_driver
from strata_gui.core.engines.launch import current_os, launch_environment
from strata_gui.core.engines.plan import Candidate, EnginePlan, plan_engines, ranked_releases
from strata_gui.core.engines.probe import (
    ProbeResult,
    ProcessRunner,
    probe_engine,
    probe_image_engine,
    run_process,
)
from strata_gui.core.engines.records import (
    MANIFEST_NAME,
    GpuTarget,
    InstalledEngine,
    Release,
    ReleaseListing,
    TuningRef,
    read_manifest,
)
from strata_gui.core.engines.releases import ReleaseClient
from strata_gui.core.engines.updates import LEDGER_FILE, UpdateLedger, group_of
from strata_gui.core.gpu.model import GpuReport
from strata_gui.core.net.download import free_bytes
from strata_gui.core.runtime.kinds import TEXT, EngineKind

if TYPE_CHECKING:
    from strata_gui.core.engines.tuning import TuningCheck

log = logging.getLogger(__name__)


def _check_asset_name(name: str) -> None:
    """Refuse a release asset name that is not one plain file name: it becomes a path in the
    downloads folder, and a release server (or a mirror of one) chooses it."""
    if (not name or name in (".", "..") or name.startswith(".") or any(c in name for c in "/\\:\x00")
            or any(ord(c) < 32 for c in name)):
        raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "The release offers an asset with an unsafe name "
                                                             "({name}); it was not downloaded."), name=repr(name[:200])),
                                 hint=QT_TRANSLATE_NOOP("Core", "The release server may be malicious or "
                                                                "misconfigured. Report it to its publisher."))


def _suffix() -> str:
    """A short random name part for staging and trash folders (uuid would cost ~5 ms of start-up)."""
    return os.urandom(4).hex()


PROBE_FILE = "strata-probe.json"
SPACE_MARGIN = 64 << 20


def backend_from_libraries(folder: Path) -> str | None:
    """The backend a build's shared libraries name (ggml-hip, rocBLAS, ggml-vulkan), or None."""
    try:
        names = " ".join(p.name.lower() for p in folder.iterdir())
    except OSError:
        return None
    if "ggml-hip" in names or "rocblas" in names or "amdhip" in names:
        return "rocm"
    if "ggml-vulkan" in names:
        return "vulkan"
    if "ggml-cpu" in names and "ggml-cuda" not in names:
        return "cpu"
    return None


def _prepend_path(env: dict[str, str], folder: Path, os_name: str) -> None:
    var, sep = ("LD_LIBRARY_PATH", ":") if os_name == "linux" else ("PATH", ";")
    env[var] = str(folder) + (sep + env[var] if env.get(var) else "")


@dataclass(frozen=True)
class Attempt:
    """What happened to one plan candidate during :meth:`EngineService.setup`."""

    candidate: Candidate
    engine: InstalledEngine | None
    probe: ProbeResult | None
    error: StrataError | None = None

    @property
    def summary(self) -> str:
        if self.error is not None:
            return T(QT_TRANSLATE_NOOP("Core", "{backend}: failed: {error}"), backend=self.candidate.backend,
                     error=self.error.message)
        if self.probe is not None and self.engine is not None:
            if self.probe.usable:
                return T(QT_TRANSLATE_NOOP("Core", "{engine}: usable: {verdict}"), engine=self.engine.id,
                         verdict=self.probe.message)
            return T(QT_TRANSLATE_NOOP("Core", "{engine}: unusable here: {verdict}"), engine=self.engine.id,
                     verdict=self.probe.message)
        return T(QT_TRANSLATE_NOOP("Core", "{backend}: skipped"), backend=self.candidate.backend)


@dataclass(frozen=True)
class SetupOutcome:
    """Result of installing and probing candidates until one works."""

    plan: EnginePlan
    attempts: tuple[Attempt, ...]
    chosen: InstalledEngine | None
    notices: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class EnginesChanged:
    """An engine was installed, removed or probed (``what``; ``engine`` its id)."""

    what: str
    engine: str


class EngineService:
    """Everything about engines, for the UI and the CLI.

    Args:
        catalog: The validated engine catalog.
        releases: Release listing client.
        http: HTTP client used for downloads (follows redirects).
        engines_dir: Where engines are installed, one folder each.
        downloads_dir: Where partial downloads wait to be resumed.
        settings_service: User settings (pinned engine, gfx override...); :meth:`pin` saves through it.
        environ: The environment engines start from.
        os_name: "windows"/"linux" (default: this machine).
        disk_free: Free bytes at a path (injected so a shortfall can be simulated).
        probe_runner: Runs a binary to completion (injected for tests of Windows behaviour).
        clock: Wall clock (epoch seconds).
        probe_timeout: Seconds ``--version``/``--list-devices`` may take.
        gpu_report: The last GPU detection (for the driver check; None: nothing detected).
    """

    def __init__(
        self,
        *,
        catalog: EngineCatalog,
        releases: ReleaseClient,
        http: httpx.AsyncClient,
        engines_dir: Path,
        downloads_dir: Path,
        settings_service: SettingsService,
        environ: Mapping[str, str],
        os_name: str | None = None,
        disk_free: Callable[[Path], int] = free_bytes,
        probe_runner: ProcessRunner = run_process,
        clock: Callable[[], float] = time.time,
        probe_timeout: float = 30.0,
        gpu_report: Callable[[], GpuReport | None] = lambda: None,
    ) -> None:
        self.catalog = catalog
        self.releases = releases
        self._http = http
        self.engines_dir = engines_dir
        self.downloads_dir = downloads_dir
        self.settings_service = settings_service
        self.environ = dict(environ)
        self.os_name = os_name or current_os()
        self._disk_free = disk_free
        self._runner = probe_runner
        self._clock = clock
        self._probe_timeout = probe_timeout
        self._probes: dict[str, ProbeResult] = {}
        self._gpu_report = gpu_report
        # Installs, removals and probe verdicts: the resolver re-decides, the pages refresh.
        self.events: Listeners[EnginesChanged] = Listeners()
        # Promotions and rollbacks change which build runs: the resolver hears them as engine changes.
        self.ledger = UpdateLedger(engines_dir / LEDGER_FILE, clock)
        self.ledger.events.subscribe(lambda e: self.events.emit(EnginesChanged(e.action, e.engine)))

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: :meth:`pin` changes them through the settings service)."""
        return self.settings_service.current

    # -- releases and plan -------------------------------------------------------------
    async def fetch_releases(self, kind: EngineKind = TEXT) -> dict[str, ReleaseListing]:
        """Listings of every catalog source of ``kind`` (cached ones flagged); sources that fail are
        left out when at least one answers, else the first error is raised."""
        out: dict[str, ReleaseListing] = {}
        errors: list[StrataError] = []
        for src in self.catalog.sources:
            if src.kind != kind:
                continue
            try:
                out[src.repo] = await self.releases.list_releases(src.repo)
            except StrataError as exc:
                errors.append(exc)
        if errors and not out:
            raise errors[0]
        return out

    async def plan(self, gpus: Sequence[GpuTarget],
                   releases: Mapping[str, Sequence[Release]] | None = None, kind: EngineKind = TEXT,
                   *, latest: bool = False) -> EnginePlan:
        """Plan for these GPUs; release listings are fetched unless given.

        ``kind``: whose builds to plan (the image kind plans stable-diffusion.cpp's ``sd-server``).
        ``latest``: the newest release of each source, past the catalog's pinned tag (the update
        "latest" channel; its minimum tag still holds).
        """
        notes: list[str] = []
        if releases is None:
            listings = await self.fetch_releases(kind)
            releases = {repo: listing.releases for repo, listing in listings.items()}
            notes = [lst.notice for lst in listings.values() if lst.notice]
        plan = self._planned(gpus, releases, kind, latest, self.driver_verdict(), {e.id: e for e in self.installed()})
        return replace(plan, notes=plan.notes + tuple(notes))

    async def release_plans(self, gpus: Sequence[GpuTarget], releases: Mapping[str, Sequence[Release]],
                            kind: EngineKind = TEXT, *, latest: bool = False) -> list[tuple[Release, EnginePlan]]:
        """One plan per release, as :meth:`plan` makes it from that release alone, each repository's
        releases newest first (:func:`~strata_gui.core.engines.plan.ranked_releases`): the builds an
        update can choose from when the newest is refused."""
        driver = self.driver_verdict()
        installed = {e.id: e for e in self.installed()}
        return [(release, self._planned(gpus, {repo: (release,)}, kind, latest, driver, installed))
                for repo, listing in releases.items() for release in ranked_releases(listing)]

    def _planned(self, gpus: Sequence[GpuTarget], releases: Mapping[str, Sequence[Release]], kind: EngineKind,
                 latest: bool, driver: DriverVerdict | None, installed: Mapping[str, InstalledEngine]) -> EnginePlan:
        """:func:`plan_engines` with the channel, the driver check and this machine's probes applied."""
        catalog = self.catalog
        if latest:
            catalog = replace(catalog, sources=tuple(replace(src, pinned_tag=None) for src in catalog.sources))
        plan = plan_engines(catalog, gpus, self.os_name, releases, kind)
        if driver is not None and driver.blocks_rocm:
            # A known-bad driver: ROCm is not installed, Vulkan is tried first instead.
            plan = replace(plan, candidates=tuple(
                replace(c, included=False, reason=driver.skip_reason()) if c.backend == "rocm" and c.included else c
                for c in plan.candidates))
            plan = replace(plan, candidates=tuple(sorted(plan.candidates, key=lambda c: not c.included)))
        return self._with_probes(plan, gpus[0] if gpus else None, installed)

    def _with_probes(self, plan: EnginePlan, gpu: GpuTarget | None,
                     installed: Mapping[str, InstalledEngine]) -> EnginePlan:
        """The plan with what this machine already showed: a build that was installed and failed its
        device check is listed as tried, not offered first again ("1. ROCm (recommended)" after ROCm
        was downloaded, rejected and replaced by Vulkan)."""
        changed = False
        candidates = []
        for cand in plan.candidates:
            engine = installed.get(cand.engine_id) if cand.included and cand.asset else None
            probe = self._read_probe(engine, gpu) if engine is not None else None
            if probe is not None and not probe.usable:
                candidates.append(replace(cand, included=False, reason=T(
                    QT_TRANSLATE_NOOP("Core", "Tried on this machine: {result}. Test it again on the Engines page "
                                              "after a driver update."), result=probe.message)))
                changed = True
            else:
                candidates.append(cand)
        if not changed:
            return plan
        return replace(plan, candidates=tuple(sorted(candidates, key=lambda c: not c.included)))

    def driver_verdict(self) -> DriverVerdict | None:
        """The driver check for the detected primary GPU (None: nothing to check)."""
        return check_driver(self._gpu_report(), self.catalog, ignore=self.settings.ignore_driver_check)

    def gpus_from_settings(self) -> list[GpuTarget]:
        """The GPU as the gfx override setting describes it (until a detector provides one)."""
        gfx = self.settings.gfx_override.strip().lower()
        return [GpuTarget(gfx, None, gfx)] if gfx else []

    # -- installed engines -------------------------------------------------------------
    def installed(self) -> list[InstalledEngine]:
        """Engines with a readable manifest, newest first."""
        out = []
        if self.engines_dir.is_dir():
            for d in sorted(self.engines_dir.iterdir()):
                if d.name.startswith(".") or not (d / MANIFEST_NAME).exists():
                    continue
                try:
                    out.append(read_manifest(d))
                except EngineInstallError as exc:
                    log.warning("skipping engine folder %s: %s", d, exc)
        return sorted(out, key=lambda e: e.installed_at, reverse=True)

    def get(self, engine_id: str) -> InstalledEngine:
        for e in self.installed():
            if e.id == engine_id:
                return e
        raise EngineError(T(QT_TRANSLATE_NOOP("Core", "No engine '{engine}' is installed."), engine=engine_id),
                          hint=QT_TRANSLATE_NOOP("Core", "See `strata engines list`."))

    def display_name(self, engine: InstalledEngine) -> str:
        """What people read for an installed build: where it came from ("llama.cpp official builds",
        "ROCm 7 builds per GPU family · gfx110X", "Your build in llama-b7612"), not its folder id."""
        if engine.source == "local":
            return f"Your build in {engine.server_path.parent.name}"
        try:
            title = self.catalog.source(engine.source).title
        except EngineCatalogError:  # a source the catalog dropped since
            title = engine.source
        return f"{title} · {engine.family}" if engine.family else title

    def last_probe(self, engine_id: str, gpu: GpuTarget | None = None) -> ProbeResult | None:
        """The engine's last probe verdict on this machine, also from an earlier run of Strata.

        A saved verdict counts only while it was made for the same GPU, launch environment and
        binary (a new driver variable, another GPU or a rebuilt engine means "not probed").
        """
        if engine_id in self._probes:
            return self._probes[engine_id]
        engine = next((e for e in self.installed() if e.id == engine_id), None)
        if engine is None:
            return None
        return self._read_probe(engine, gpu)

    def _probe_key(self, engine: InstalledEngine, gpu: GpuTarget | None) -> str:
        env, _notices = self.launch_env(engine, gpu)
        delta = sorted((k, v) for k, v in env.items() if self.environ.get(k) != v)
        try:
            st = engine.server_path.stat()
            binary = f"{st.st_size}:{int(st.st_mtime)}"
        except OSError:
            binary = "missing"
        # Only a ROCm build's verdict depends on the GPU target (HIP loads code objects per gfx).
        gfx = gpu.gfx if gpu is not None and gpu.gfx else (self.settings.gfx_override or "")
        raw = json.dumps([gfx if engine.backend == "rocm" else "", delta, binary, str(engine.server_path)])
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def _read_probe(self, engine: InstalledEngine, gpu: GpuTarget | None) -> ProbeResult | None:
        data = load_cache(engine.folder / PROBE_FILE, dict)  # a damaged record: probed again
        if data is None or data.get("key") != self._probe_key(engine, gpu):
            return None
        try:
            result = ProbeResult.from_json(data["result"])
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable probe record of %s: %s", engine.id, exc)
            return None
        self._probes[engine.id] = result
        return result

    def _save_probe(self, engine: InstalledEngine, gpu: GpuTarget | None, result: ProbeResult) -> None:
        if not (engine.folder / MANIFEST_NAME).exists():
            return  # a one-off engine: its verdict lives for this session only
        record = {"key": self._probe_key(engine, gpu), "at": self._clock(), "result": result.to_json()}
        target = engine.folder / PROBE_FILE
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
            os.replace(tmp, target)
        except OSError as exc:  # a verdict we cannot keep is re-probed next time: not an error
            log.warning("could not save the probe verdict of %s: %s", engine.id, exc)

    # -- install -----------------------------------------------------------------------
    def _check_space(self, cand: Candidate, already: int) -> None:
        assert cand.asset is not None
        need_dl = max(0, cand.asset.size - already)
        need_unpack = int(cand.asset.size * cand.unpacked_ratio)
        self.downloads_dir.mkdir(parents=True, exist_ok=True)
        self.engines_dir.mkdir(parents=True, exist_ok=True)
        same_fs = os.stat(self.downloads_dir).st_dev == os.stat(self.engines_dir).st_dev
        checks = ([(self.engines_dir, need_dl + need_unpack)] if same_fs
                  else [(self.downloads_dir, need_dl), (self.engines_dir, need_unpack)])
        for folder, need in checks:
            free = self._disk_free(folder)
            if free < need + SPACE_MARGIN:
                raise InsufficientSpaceError(
                    T(QT_TRANSLATE_NOOP("Core", "Not enough disk space for {asset}: it needs about {need}, plus {margin} "
                                                "that Strata keeps free so the disk does not fill up; {folder} has "
                                                "{free} free."),
                      asset=cand.asset.name, need=format_bytes(need), margin=format_bytes(SPACE_MARGIN),
                      folder=str(folder), free=format_bytes(free)),
                    hint=QT_TRANSLATE_NOOP("Core", "Free some space, or choose another engines folder in Settings."))

    @staticmethod
    def _server_name(os_name: str, kind: EngineKind = TEXT) -> str:
        return kind.executable(Path(), windows=os_name == "windows").name

    async def install(self, cand: Candidate, on_progress: ProgressCallback = no_progress,
                      gpu: GpuTarget | None = None) -> InstalledEngine:
        """Download, verify, unpack, check and move a candidate into place.

        A failure leaves nothing behind except a partial download kept for resuming after a
        network error. An engine already installed under the same id is replaced only once the
        new one is complete.
        """
        if cand.asset is None or cand.source_id is None or cand.tag is None:
            raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "There is no {backend} build to install: {reason}"),
                                       backend=cand.backend, reason=cand.reason))
        asset = cand.asset
        source = self.catalog.source(cand.source_id)
        _check_asset_name(asset.name)
        archive = self.downloads_dir / asset.name
        part = archive.with_name(archive.name + ".part")
        already = part.stat().st_size if part.exists() else 0
        self._check_space(cand, already)
        expected = asset.sha256 or source.pinned_sha256.get(asset.name)
        # Install-only modules (tarfile, zipfile, the fetcher) load here, not at start-up.
        from strata_gui.core.engines.archive import safe_extract
        from strata_gui.core.engines.download import download_file

        result = await download_file(self._http, asset.download_url, archive, expected_size=asset.size or None,
                                     expected_sha256=expected, on_progress=on_progress,
                                     message=T(QT_TRANSLATE_NOOP("Core", "Downloading {asset}"), asset=asset.name))
        staging = self.engines_dir / f".staging-{cand.engine_id}-{_suffix()}"
        final = self.engines_dir / cand.engine_id
        # Cancelling the await does not stop the unpacking thread: the clean-up waits for it, or a
        # Cancel pressed while unpacking left a half-written .staging folder behind.
        unpacked = threading.Event()
        unpacked.set()

        def unpack() -> None:
            try:
                safe_extract(archive, staging)
            finally:
                unpacked.set()

        try:
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Unpacking {asset}"), asset=asset.name)))
            unpacked.clear()
            await run_blocking(unpack, name="strata-extract")
            server = self._find_server(staging, self._server_name(self.os_name, cand.kind))
            self._check_required(server.parent, cand, asset.name)
            rel = server.relative_to(staging)
            revision = source.hipblaslt_revisions.get(cand.tag) if cand.backend == "rocm" else None
            family = self.catalog.family(cand.family) if cand.family else None
            engine = InstalledEngine(
                id=cand.engine_id, backend=cand.backend, folder=final, server_path=final / rel, tag=cand.tag,
                gfx_targets=cand.gfx_targets, family=cand.family, source=cand.source_id, asset=asset.name,
                sha256=result.sha256, os=self.os_name, env=family.env_for(self.os_name) if family else {},
                hipblaslt_revision=revision, tuning=None, installed_at=self._clock(), verified=result.verified,
                kind=cand.kind)
            if revision and gpu and gpu.gfx:
                engine = await self._fetch_tuning(engine, gpu.gfx, revision, staging, on_progress)
            engine.write_manifest(staging)
            self._swap_in(staging, final)
            log.info("installed %s from %s (%s, sha256 %s%s)", engine.id, asset.name, asset.download_url, result.sha256[:16],
                     "" if result.verified else ", no published digest to check it against")
            self.events.emit(EnginesChanged("installed", engine.id))
            return engine
        finally:
            def clean_up() -> None:
                unpacked.wait()
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
                archive.unlink(missing_ok=True)

            if unpacked.is_set() and not staging.exists():
                archive.unlink(missing_ok=True)
            else:
                await run_blocking(clean_up, name="strata-cleanup")

    async def _fetch_tuning(self, engine: InstalledEngine, gfx: str, revision: str, staging: Path,
                            on_progress: ProgressCallback) -> InstalledEngine:
        entry = self.catalog.tuning_for(gfx, revision)
        if entry is None:
            return engine
        rel = Path("tuning") / f"hipblaslt-{gfx}-{revision}.csv"
        dest = staging / rel
        from strata_gui.core.engines.download import download_file

        await download_file(self._http, self.releases.rewrite_url(entry.url), dest, expected_size=None,
                            expected_sha256=entry.sha256, on_progress=on_progress,
                            message="Downloading hipBLASLt tuning table")
        return replace(engine, tuning=TuningRef(str(rel), gfx, revision))

    def _find_server(self, root: Path, name: str) -> Path:
        found = sorted((p for p in root.rglob(name) if p.is_file()), key=lambda p: len(p.parts))
        if not found:
            raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "The archive holds no {name}; it is not an engine "
                                                                 "build."), name=name),
                                     hint=QT_TRANSLATE_NOOP("Core", "The release may have changed its layout; "
                                                                    "update Strata's catalog."))
        return found[0]

    def _check_required(self, folder: Path, cand: Candidate, asset_name: str) -> None:
        missing = [pat for pat in cand.required if not any(folder.glob(pat))]
        if missing:
            raise EngineInstallError(
                T(QT_TRANSLATE_NOOP("Core", "{asset} is missing {files}; the engine would not start, so it was not "
                                            "installed."), asset=asset_name, files=", ".join(missing)),
                hint=QT_TRANSLATE_NOOP("Core", "The published archive is incomplete. Try another engine (Vulkan) or "
                                               "a newer release."))

    def _swap_in(self, staging: Path, final: Path) -> None:
        trash = None
        if final.exists():
            trash = self.engines_dir / f".trash-{final.name}-{_suffix()}"
            os.replace(final, trash)
        try:
            os.replace(staging, final)
        except OSError:
            if trash is not None:
                os.replace(trash, final)
            raise
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)

    # -- probe, choose -----------------------------------------------------------------
    def launch_env(self, engine: InstalledEngine, gpu: GpuTarget | None) -> tuple[dict[str, str], list[str]]:
        return launch_environment(engine, gpu, self.settings, self.environ, os_name=self.os_name)

    async def probe(self, engine: InstalledEngine, gpu: GpuTarget | None = None) -> ProbeResult:
        """Run the engine's ``--version``/``--list-devices`` with its launch environment."""
        env, _notices = self.launch_env(engine, gpu)
        # A build that can list its devices is judged by them; one that cannot, by starting at all.
        if engine.kind.lists_devices:
            result = await probe_engine(engine.server_path, engine.backend, env, runner=self._runner,
                                        timeout=self._probe_timeout)
        else:
            result = await probe_image_engine(engine.server_path, engine.backend, env, runner=self._runner,
                                              timeout=self._probe_timeout, args=engine.kind.probe_args)
        self._probes[engine.id] = result
        self._save_probe(engine, gpu, result)
        self.events.emit(EnginesChanged("probed", engine.id))
        return result

    async def setup(self, gpus: Sequence[GpuTarget], on_progress: ProgressCallback = no_progress,
                    releases: Mapping[str, Sequence[Release]] | None = None, kind: EngineKind = TEXT) -> SetupOutcome:
        """Install and probe the plan's candidates in order until one sees a usable device.

        ``kind``: whose builds to set up. A kind whose builds cannot list their devices (sd-server)
        is only known to work once a model loads; its setup therefore also installs the next usable
        build (Vulkan, else CPU) as the fallback the job switches to, and stops at a CPU build.
        """
        plan = await self.plan(gpus, releases, kind)
        have = {e.id: e for e in self.installed()}
        attempts: list[Attempt] = []
        chosen: InstalledEngine | None = None
        gpu = gpus[0] if gpus else None
        wanted = 1 if kind.lists_devices else 2
        log.info("%s engine set-up for %s: trying %s", kind.label, gpu.label() if gpu else "the processor",
                 ", ".join(c.engine_id for c in plan.included) or "nothing (no candidate)")
        for cand in plan.included:
            try:
                installed = have.get(cand.engine_id)
                if installed is None:
                    log.info("installing %s (%s)", cand.engine_id, cand.asset.name if cand.asset else "no asset")
                engine = installed or await self.install(cand, on_progress, gpu)
            except asyncio.CancelledError:
                log.info("engine set-up cancelled while installing %s", cand.engine_id)
                raise
            except StrataError as exc:
                log.warning("could not install %s: %s", cand.engine_id, exc.message)
                attempts.append(Attempt(cand, None, None, exc))
                continue
            result = await self.probe(engine, gpu)
            log.info("probe of %s: %s (%s)%s", engine.id, result.verdict, result.message,
                     "" if result.usable else "; trying the next engine")
            attempts.append(Attempt(cand, engine, result))
            if result.usable:
                chosen = chosen or engine
                wanted -= 1
                if wanted <= 0 or engine.backend == "cpu":
                    break
        log.info("%s engine set-up chose %s", kind.label, chosen.id if chosen else "nothing: no engine works here")
        # the plan as it reads now: a build this set-up rejected is listed as tried, not as "1. (recommended)"
        plan = self._with_probes(plan, gpu, {e.id: e for e in self.installed()})
        return SetupOutcome(plan, tuple(attempts), chosen, tuple(a.summary for a in attempts))

    # -- manage ------------------------------------------------------------------------
    def pin(self, engine_id: str | None) -> None:
        """Make ``engine_id`` the default (None: choose automatically) and save that choice.

        Raises:
            EngineError: ``engine_id`` is not installed, or is an image engine.
            SettingsError: the choice could not be saved (nothing changed).
        """
        if engine_id and not self.get(engine_id).kind.follows_choices:
            # The pin is the chat's engine; an image engine there would only hide the text engines.
            kind = self.get(engine_id).kind
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "{engine} is an {kind} engine; the pin chooses the chat "
                                                          "engine."), engine=engine_id, kind=kind.label),
                              hint=QT_TRANSLATE_NOOP("Core", "Image engines are tried ROCm → Vulkan → CPU (strata "
                                                             "engines resolve --images)."))
        self.settings_service.update(pinned_engine=engine_id or "")

    def remove(self, engine_id: str) -> None:
        """Delete an installed engine (a local build's own folder is never touched)."""
        engine = self.get(engine_id)
        folder = engine.folder
        if folder.parent.resolve() != self.engines_dir.resolve():
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "{folder} is not inside Strata's engines folder; not "
                                                          "removing it."), folder=str(folder)))
        trash = self.engines_dir / f".trash-{engine_id}-{_suffix()}"
        try:
            os.replace(folder, trash)
            shutil.rmtree(trash)
        except OSError as exc:
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "Could not remove {engine}: {reason}"), engine=engine_id,
                                reason=str(exc.strerror or exc)),
                              hint=QT_TRANSLATE_NOOP("Core", "Stop the engine if it is running, then try again.")) from exc
        self._probes.pop(engine_id, None)
        self.ledger.forget(engine_id)
        if self.settings.pinned_engine == engine_id:
            self.pin(None)
        self.events.emit(EnginesChanged("removed", engine_id))

    def garbage_collect(self) -> list[str]:
        """Remove older tags of each (kind, source, backend, family), keeping the build in use (the
        one an update promoted, else the newest), the last good one, one on trial and the pinned."""
        groups: dict[str, list[InstalledEngine]] = {}
        for e in self.installed():
            if e.source == "local":
                continue
            groups.setdefault(group_of(e), []).append(e)
        removed = []
        keep = self.ledger.keep() | {self.settings.pinned_engine}
        for group, engines in groups.items():
            engines.sort(key=lambda e: (tag_number(e.tag) or -1, e.installed_at), reverse=True)
            ids = {e.id for e in engines}
            active = self.ledger.active(group)
            # No update decided it: the newest build that is not a refused or unfinished update.
            usable = [e.id for e in engines if self.ledger.refused(e.id) is None and not self.ledger.unfinished(e.id)]
            in_use = active if active in ids else (usable or [engines[0].id])[0]
            for old in engines:
                if old.id != in_use and old.id not in keep:
                    self.remove(old.id)
                    removed.append(old.id)
        return removed

    def updates(self, plan: EnginePlan) -> list[tuple[InstalledEngine, Candidate]]:
        """Installed engines with a newer tag of the same kind in ``plan``."""
        out = []
        for e in self.installed():
            for c in plan.included:
                same_kind = (c.source_id, c.backend, c.family) == (e.source, e.backend, e.family)
                if same_kind and c.tag and (tag_number(c.tag) or -1) > (tag_number(e.tag) or -1):
                    out.append((e, c))
        return out

    async def add_local(self, folder: Path, backend: str | None = None, gpu: GpuTarget | None = None,
                        name: str | None = None, kind: EngineKind = TEXT) -> tuple[InstalledEngine, ProbeResult]:
        """Register a folder with a llama-server the user built (kept across runs), and probe it.

        ``backend`` None: told from the libraries next to the server (ggml-hip / ggml-vulkan), else
        from the devices its ``--list-devices`` shows.
        """
        engine = await self.local_engine(folder, backend, gpu, name, kind)
        engine.folder.mkdir(parents=True, exist_ok=True)
        engine.write_manifest()
        self._probes.pop(engine.id, None)
        result = await self.probe(engine, gpu)
        log.info("registered %s build %s from %s (%s): %s, %s", kind.label, engine.id, folder, engine.backend,
                 result.verdict, result.message)
        return engine, result

    async def local_engine(self, folder: Path, backend: str | None = None, gpu: GpuTarget | None = None,
                           name: str | None = None, kind: EngineKind = TEXT) -> InstalledEngine:
        """Describe the llama-server build in ``folder`` without registering it (one-off engines).

        ``kind``: whose build it is (the image kind: a stable-diffusion.cpp ``sd-server``).
        """
        server_name = self._server_name(self.os_name, kind)
        folder, server = self._locate_local(folder, server_name)
        if server is None:
            project = kind.project
            raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{folder} holds no {server}."), folder=folder,
                                       server=server_name),
                                     hint=T(QT_TRANSLATE_NOOP("Core", "Choose the folder your {project} build put "
                                                                      "{server} in (build/bin)."), project=project,
                                            server=server_name))
        if backend is None:
            # A build that cannot list its devices: its libraries tell, else it is a processor build.
            backend = (await self.detect_backend(server) if kind.lists_devices
                       else backend_from_libraries(server.parent) or "cpu")
        if backend not in ("rocm", "vulkan", "cpu"):
            raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "Unknown backend '{backend}': choose rocm, vulkan or "
                                                                 "cpu."), backend=backend))
        slug = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in (name or folder.name))
        engine_id = f"local-{kind.id_prefix}{backend}-{slug}"
        gfx = gpu.gfx if gpu and gpu.gfx else None
        return InstalledEngine(id=engine_id, backend=backend, folder=self.engines_dir / engine_id,
                               server_path=server, tag="local",
                               gfx_targets=(gfx,) if gfx and backend == "rocm" else (), source="local",
                               os=self.os_name, installed_at=self._clock(), kind=kind)

    async def detect_backend(self, server: Path) -> str:
        """"rocm", "vulkan" or "cpu" for a llama-server build, from its libraries or its device list."""
        guess = backend_from_libraries(server.parent)
        if guess is not None:
            return guess
        env = {**self.environ}
        _prepend_path(env, server.parent, self.os_name)
        result = await probe_engine(server, "cpu", env, runner=self._runner, timeout=self._probe_timeout)
        kinds = {d.kind for d in result.devices}
        if "ROCm" in kinds:
            return "rocm"
        if "Vulkan" in kinds:
            return "vulkan"
        return "cpu"

    @staticmethod
    def _locate_local(folder: Path, server_name: str) -> tuple[Path, Path | None]:
        folder = folder.expanduser().resolve()
        if (folder / server_name).is_file():
            return folder, folder / server_name
        hits = sorted(folder.rglob(server_name), key=lambda p: len(p.parts)) if folder.is_dir() else []
        return folder, (hits[0] if hits else None)

    def check_tuning(self, table: Path, engine: InstalledEngine, gpu_gfx: str | None,
                     table_gfx: str | None = None) -> TuningCheck:
        """Check a tuning table against an engine and GPU (``strata engines check-tuning``)."""
        from strata_gui.core.engines.tuning import check_tuning_table

        gfx = gpu_gfx or self.settings.gfx_override or None
        return check_tuning_table(table, table_gfx=table_gfx or gfx or "unknown", gpu_gfx=gfx,
                                  engine_revision=engine.hipblaslt_revision)


def create_engine_service(
    paths: AppPaths,
    settings_service: SettingsService,
    environ: Mapping[str, str],
    http: httpx.AsyncClient,
    *,
    catalog: EngineCatalog | None = None,
    gpu_report: Callable[[], GpuReport | None] = lambda: None,
) -> EngineService:
    """Wire an :class:`EngineService` from the app's folders and settings (composition roots use this).

    ``http`` must follow redirects (release downloads answer 302 to a CDN).
    """
    settings = settings_service.current
    engines_dir = Path(settings.engines_dir) if settings.engines_dir else paths.engines_dir
    releases = ReleaseClient(http, paths.cache_dir / "releases", api_base=settings.github_api_url,
                             download_base=settings.github_download_url, offline=settings.offline)
    return EngineService(catalog=catalog or load_catalog(), releases=releases, http=http, engines_dir=engines_dir,
                         downloads_dir=paths.downloads_dir, settings_service=settings_service,
                         environ=environ, gpu_report=gpu_report)
