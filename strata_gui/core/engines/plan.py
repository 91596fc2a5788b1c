"""Which engine builds to try for these GPUs on this OS, in order, and why.

:func:`plan_engines` is a pure function of the catalog, the GPUs, the OS and the release
listings, so a plan can be made offline from saved release JSON and attached to a bug report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text, joined
from strata_gui.core.engines.catalog import AssetRule, EngineCatalog, Source, tag_number
from strata_gui.core.engines.records import GpuTarget, Release, ReleaseAsset
from strata_gui.core.runtime.kinds import TEXT, EngineKind


@dataclass(frozen=True)
class Candidate:
    """One build the plan considered.

    Attributes:
        backend: "rocm", "vulkan" or "cpu".
        included: True when it will be tried; False when it is listed only to say why not.
        reason: Why it is in or out, for people.
        source_id, repo, tag, asset: Where it comes from (None when no build exists).
        gfx_targets: Targets the build contains (ROCm only).
        family: ROCm family, if any.
        gpu: Label of the GPU it serves (ROCm only).
        kind: What the build runs, from its source (:mod:`strata_gui.core.runtime.kinds`).
    """

    backend: str
    included: bool
    reason: str
    source_id: str | None = None
    repo: str | None = None
    tag: str | None = None
    asset: ReleaseAsset | None = None
    gfx_targets: tuple[str, ...] = ()
    family: str | None = None
    gpu: str | None = None
    required: tuple[str, ...] = ()
    unpacked_ratio: float = 3.0
    kind: EngineKind = TEXT

    @property
    def engine_id(self) -> str:
        """Folder name the installed build will get."""
        scope = self.family or (self.gfx_targets[0] if len(self.gfx_targets) == 1 else "all")
        if self.backend != "rocm":
            scope = "all"
        return f"{self.source_id or 'none'}-{self.backend}-{scope}-{self.tag or 'none'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "included": self.included,
            "reason": self.reason,
            "source": self.source_id,
            "repo": self.repo,
            "tag": self.tag,
            "asset": self.asset.name if self.asset else None,
            "size": self.asset.size if self.asset else None,
            "digest": self.asset.digest if self.asset else None,
            "gfx_targets": list(self.gfx_targets),
            "family": self.family,
            "gpu": self.gpu,
            "engine_id": self.engine_id if self.asset else None,
            "kind": self.kind.name,
        }


@dataclass(frozen=True)
class EnginePlan:
    """The ordered candidates (included ones first, in the order to try) and general notes."""

    os: str
    gpus: tuple[GpuTarget, ...]
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def included(self) -> list[Candidate]:
        return [c for c in self.candidates if c.included]

    def to_json(self) -> dict[str, Any]:
        return {
            "os": self.os,
            "gpus": [{"name": g.name, "pci_device_id": g.pci_device_id, "gfx": g.gfx} for g in self.gpus],
            "candidates": [c.to_json() for c in self.candidates],
            "notes": list(self.notes),
        }

    def report(self) -> str:
        lines = [f"Engine plan for {self.os}: " + (", ".join(g.label() for g in self.gpus) or "no GPU")]
        n = 0
        for c in self.candidates:
            if c.included:
                n += 1
                head = f"  {n}. {c.backend.upper():6} {c.asset.name if c.asset else ''}"
            else:
                head = f"  -  {c.backend.upper():6} (not used)"
            lines.append(head.rstrip())
            lines.append(f"       {c.reason}")
        lines.extend(f"  note: {n_}" for n_ in self.notes)
        return "\n".join(lines)


def _with_build(why: Text, source: Source, release: Release) -> Text:
    """``why``, then the build it chose ("...: ggml-org/llama.cpp b7601")."""
    return joined([why, f"{source.repo} {release.tag}"], sep=": ")


def release_number(release: Release) -> int | None:
    """The build number the release gives itself: its title's ("b7651"; a release moved to another
    tag keeps its title), else its tag's; None when neither is a build number."""
    named = tag_number(release.name) if release.name else None
    return named if named is not None else tag_number(release.tag)


def release_version(release: Release) -> str:
    """The build as the release names it: its title when that is a build number, else its tag."""
    return release.name.strip() if release.name and tag_number(release.name) is not None else release.tag


def release_rank(release: Release) -> tuple[int, str]:
    """Sort key of releases, higher is newer: the release's own build number
    (:func:`release_number`), then its publish date, which alone orders releases without one."""
    number = release_number(release)
    return (-1 if number is None else number, release.published_at)


def ranked_releases(releases: Iterable[Release]) -> list[Release]:
    """The releases newest first by :func:`release_rank` (drafts left out)."""
    return sorted((r for r in releases if not r.draft), key=release_rank, reverse=True)


def _find_asset(
    catalog: EngineCatalog, source: Source, releases: Sequence[Release], os_name: str, *, backend: str,
    gfx: str | None = None,
) -> tuple[Release, ReleaseAsset, AssetRule, tuple[str, ...], str | None] | None:
    """Newest acceptable asset of ``source`` for this OS/backend (and gfx target for ROCm)."""
    rules = [r for r in source.rules if r.os == os_name and r.backend == backend]
    if not rules:
        return None
    for rel in ranked_releases(releases):
        if rel.prerelease or not source.accepts_tag(rel.tag):
            continue
        for asset in rel.assets:
            for rule in rules:
                m = rule.match(asset.name, catalog)
                if m is None:
                    continue
                if backend == "rocm" and gfx not in m.targets:
                    continue
                return rel, asset, rule, m.targets, m.family
    return None


def plan_engines(
    catalog: EngineCatalog,
    gpus: Sequence[GpuTarget],
    os_name: str,
    releases: Mapping[str, Sequence[Release]],
    kind: EngineKind = TEXT,
) -> EnginePlan:
    """Order the builds to try: ROCm for each GPU's family, then Vulkan, then CPU.

    Args:
        catalog: The engine catalog.
        gpus: AMD GPUs found (or given with ``--gfx``); may be empty.
        os_name: "windows" or "linux".
        releases: Release lists keyed by repository ("owner/name").
        kind: Plans the builds of this kind (only the catalog's sources of that kind are looked at).
    """
    catalog = replace(catalog, sources=tuple(s for s in catalog.sources if s.kind == kind))
    candidates: list[Candidate] = []
    notes: list[str] = []
    seen_assets: set[str] = set()
    fallback = "Vulkan" if gpus else "CPU"
    for gpu in gpus:
        candidates.extend(_rocm_candidates(catalog, gpu, os_name, releases, kind, seen_assets, fallback))
    for backend in ("vulkan", "cpu"):
        candidates.append(_portable_candidate(catalog, backend, bool(gpus), os_name, releases, kind))
    if not any(releases.get(s.repo) for s in catalog.sources):
        notes.append(QT_TRANSLATE_NOOP("Core", "No release listings available: connect once, or pass "
                                               "--releases-json files."))
    order = {b: i for i, b in enumerate(catalog.backend_order)}
    included = sorted((c for c in candidates if c.included), key=lambda c: order[c.backend])
    excluded = [c for c in candidates if not c.included]
    return EnginePlan(os_name, tuple(gpus), tuple(included + excluded), tuple(notes))


def _rocm_candidates(catalog: EngineCatalog, gpu: GpuTarget, os_name: str,
                     releases: Mapping[str, Sequence[Release]], kind: EngineKind, seen_assets: set[str],
                     fallback: str) -> list[Candidate]:
    """The ROCm builds for one GPU (an asset already planned for another GPU is not repeated), or
    one excluded candidate that says why there is none."""
    label = gpu.label()
    if not gpu.gfx:
        return [Candidate(
            "rocm", False,
            T(QT_TRANSLATE_NOOP("Core", "{gpu}: not in table → {fallback}; ROCm will be probed if you install it"),
              gpu=label, fallback=fallback),
            gpu=label)]
    gfx = gpu.gfx.lower()
    family = catalog.family_of(gfx)
    found = False
    candidates: list[Candidate] = []
    for src in catalog.sources:
        hit = _find_asset(catalog, src, releases.get(src.repo, ()), os_name, backend="rocm", gfx=gfx)
        if hit is None:
            continue
        rel, asset, rule, targets, fam = hit
        found = True
        if asset.name in seen_assets:
            continue
        seen_assets.add(asset.name)
        if fam:
            why = T(QT_TRANSLATE_NOOP("Core", "{gfx} → family {family}"), gfx=gfx, family=fam)
        elif family:
            why = T(QT_TRANSLATE_NOOP("Core", "{gfx} (family {family}) is among this build's targets"), gfx=gfx,
                    family=family)
        else:
            why = T(QT_TRANSLATE_NOOP("Core", "{gfx} is among this build's targets"), gfx=gfx)
        candidates.append(Candidate(
            "rocm", True, _with_build(why, src, rel), src.id, src.repo, rel.tag, asset,
            targets, fam or family, label, rule.required, rule.unpacked_ratio, kind))
    if not found:
        has_any = any(r.os == os_name and r.backend == "rocm" for s in catalog.sources for r in s.rules)
        if family and has_any:
            why = T(QT_TRANSLATE_NOOP("Core", "{gfx} (family {family}): no ROCm build for {os} in the current "
                                              "releases → {fallback}"),
                    gfx=gfx, family=family, os=os_name, fallback=fallback)
        else:
            why = T(QT_TRANSLATE_NOOP("Core", "{gfx}: no ROCm build for this target → {fallback}"), gfx=gfx,
                    fallback=fallback)
        candidates.append(Candidate("rocm", False, why, family=family, gpu=label))
    return candidates


def _portable_candidate(catalog: EngineCatalog, backend: str, any_gpu: bool, os_name: str,
                        releases: Mapping[str, Sequence[Release]], kind: EngineKind) -> Candidate:
    """The newest Vulkan or CPU build of the first source that has one, or why there is none."""
    if backend == "vulkan" and not any_gpu:
        return Candidate("vulkan", False, QT_TRANSLATE_NOOP("Core", "no GPU found → CPU"))
    chosen = None
    for src in catalog.sources:
        hit = _find_asset(catalog, src, releases.get(src.repo, ()), os_name, backend=backend)
        if hit is not None:
            chosen = (src, hit)
            break
    if chosen is None:
        return Candidate(backend, False, T(QT_TRANSLATE_NOOP("Core", "no {backend} build for {os} in the current "
                                                                     "releases"), backend=backend, os=os_name))
    src, (rel, asset, rule, _targets, _fam) = chosen
    why = T(QT_TRANSLATE_NOOP("Core", "works on any GPU with a Vulkan driver") if backend == "vulkan"
            else QT_TRANSLATE_NOOP("Core", "last resort: runs on the processor (several times slower)"))
    return Candidate(backend, True, _with_build(why, src, rel), src.id, src.repo,
                     rel.tag, asset, (), None, None, rule.required, rule.unpacked_ratio, kind)
