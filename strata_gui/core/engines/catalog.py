"""The engine catalog: which llama.cpp builds exist, for which GPUs, and how to recognise them.

The catalog is data (``kernels/catalog.json``, described in ``kernels/catalog.schema.md``):
supporting a new GPU family or a renamed release asset is an edit there, not here. It is
validated on load; any problem raises :class:`EngineCatalogError` naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import EngineCatalogError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.kinds import INSTALLABLE, TEXT, EngineKind

SCHEMA_VERSION = 1
BACKENDS = ("rocm", "vulkan", "cpu")
OSES = ("windows", "linux")
_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def tag_number(tag: str) -> int | None:
    """The build number of a tag: llama.cpp's ``b<N>`` (``"b6000"`` → 6000) or stable-diffusion.cpp's
    ``master-<commit count>-<hash>`` (``"master-929-3f8527a"`` → 929), else None."""
    m = re.fullmatch(r"b(\d+)|master-(\d+)-[0-9a-f]+", tag.strip())
    return int(m.group(1) or m.group(2)) if m else None


@dataclass(frozen=True)
class Family:
    """A ROCm build family (``gfx110X``) and the gfx targets its builds contain."""

    name: str
    targets: tuple[str, ...]
    env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def env_for(self, os_name: str) -> dict[str, str]:
        return dict(self.env.get(os_name, {}))


@dataclass(frozen=True)
class AssetMatch:
    """What a matching asset name tells: its tag, the gfx targets and family it was built for."""

    tag: str
    targets: tuple[str, ...]
    family: str | None


@dataclass(frozen=True)
class AssetRule:
    """How one kind of release asset is named, and what must be inside it."""

    os: str
    backend: str
    pattern: re.Pattern[str]
    targets: tuple[str, ...]
    required: tuple[str, ...]
    unpacked_ratio: float

    def match(self, name: str, catalog: EngineCatalog) -> AssetMatch | None:
        """Match an asset name; None when it is not this kind of asset (or names an unknown family)."""
        m = self.pattern.match(name)
        if not m:
            return None
        groups = m.groupdict()
        tag = groups.get("tag") or ""
        if self.backend != "rocm":
            return AssetMatch(tag, (), None)
        if groups.get("family"):
            fam = catalog.families.get(groups["family"])
            if fam is None:
                return None
            return AssetMatch(tag, fam.targets, fam.name)
        if groups.get("target"):
            target = groups["target"]
            return AssetMatch(tag, (target,), catalog.family_of(target))
        return AssetMatch(tag, self.targets, None)


@dataclass(frozen=True)
class Source:
    """A GitHub repository publishing engine builds of one kind (``kind``: llama.cpp's builds run
    the chat, stable-diffusion.cpp's hold ``sd-server``); the catalog stores the kind's name."""

    id: str
    repo: str
    title: str
    rules: tuple[AssetRule, ...]
    min_tag: str | None = None
    pinned_tag: str | None = None
    pinned_sha256: Mapping[str, str] = field(default_factory=dict)
    hipblaslt_revisions: Mapping[str, str] = field(default_factory=dict)
    kind: EngineKind = TEXT

    def accepts_tag(self, tag: str) -> bool:
        """Whether a release tag is allowed by the pin / minimum."""
        if self.pinned_tag:
            return tag == self.pinned_tag
        if self.min_tag:
            n, floor = tag_number(tag), tag_number(self.min_tag)
            if n is None or floor is None:
                return n is not None or floor is None
            return n >= floor
        return True


@dataclass(frozen=True)
class TuningEntry:
    """One hipBLASLt tuning table: valid for exactly one (gfx target, hipBLASLt revision)."""

    gfx: str
    revision: str
    url: str
    sha256: str


def driver_version_key(text: str) -> tuple[int, ...]:
    """``"32.0.21013.1000"`` → ``(32, 0, 21013, 1000)`` (digits only, so "AMD driver 32.0..." works too)."""
    return tuple(int(p) for p in re.findall(r"\d+", text)[:4])


@dataclass(frozen=True)
class DriverRule:
    """A driver known to break ROCm builds (``known_bad``) or the oldest one they need (``minimum``).

    Attributes:
        kind: "known_bad" or "minimum".
        os: "windows" or "linux".
        families: ROCm families it concerns (empty: all).
        release: The driver release as users know it ("AMD Software: Adrenalin Edition 26.5.1 and later").
        reason: Why ROCm is skipped, in one sentence.
        links: Where it is reported.
        version_from, version_to: Inclusive driver version range (known_bad), or the minimum (minimum).
        date_from, date_to: Inclusive driver date range, ``YYYY-MM-DD`` (known_bad): AMD's Windows driver
            version has no formula to its release name, but the release name is year.month.
    """

    kind: str
    os: str
    families: tuple[str, ...]
    release: str
    reason: str
    links: tuple[str, ...] = ()
    version_from: str | None = None
    version_to: str | None = None
    date_from: str | None = None
    date_to: str | None = None

    def concerns(self, os_name: str, family: str | None) -> bool:
        return self.os == os_name and (not self.families or family in self.families)

    def matches(self, version: str | None, date: str | None) -> bool:
        """Whether a driver of ``version`` / ``date`` is this known-bad one (or below this minimum)."""
        v = driver_version_key(version) if version else None
        if self.kind == "minimum":
            return v is not None and self.version_from is not None and v < driver_version_key(self.version_from)
        tests: list[bool] = []
        if self.version_from or self.version_to:
            if v is None:
                return False
            tests.append((self.version_from is None or v >= driver_version_key(self.version_from))
                         and (self.version_to is None or v <= driver_version_key(self.version_to)))
        if self.date_from or self.date_to:
            if not date:
                return False
            tests.append((self.date_from is None or date >= self.date_from)
                         and (self.date_to is None or date <= self.date_to))
        return bool(tests) and all(tests)


@dataclass(frozen=True)
class EngineCatalog:
    """The validated catalog."""

    schema_version: int
    families: Mapping[str, Family]
    sources: tuple[Source, ...]
    backend_order: tuple[str, ...]
    tuning_tables: tuple[TuningEntry, ...]
    origin: str = "<memory>"
    drivers: tuple[DriverRule, ...] = ()

    def driver_problem(self, os_name: str, family: str | None, version: str | None,
                       date: str | None) -> DriverRule | None:
        """The first rule saying this driver cannot run ROCm builds of ``family`` (None: no known problem)."""
        for rule in self.drivers:
            if rule.concerns(os_name, family) and rule.matches(version, date):
                return rule
        return None

    def family_of(self, gfx: str) -> str | None:
        """The ROCm family holding a gfx target (``"gfx1103"`` → ``"gfx110X"``), else None."""
        gfx = gfx.strip().lower()
        for fam in self.families.values():
            if gfx in fam.targets:
                return fam.name
        return None

    def family(self, name: str) -> Family | None:
        return self.families.get(name)

    def source(self, source_id: str) -> Source:
        for s in self.sources:
            if s.id == source_id:
                return s
        raise EngineCatalogError(T(QT_TRANSLATE_NOOP("Core", "The engine catalog has no source '{source}'."),
                                   source=source_id))

    def tuning_for(self, gfx: str, revision: str) -> TuningEntry | None:
        for t in self.tuning_tables:
            if t.gfx == gfx and t.revision == revision:
                return t
        return None


def default_catalog_path() -> Path:
    from strata_gui.core.config.resources import kernels_dir

    return kernels_dir() / "catalog.json"


def load_catalog(path: Path | None = None) -> EngineCatalog:
    """Read and validate a catalog file (default: the one shipped in ``kernels/``)."""
    p = path or default_catalog_path()
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EngineCatalogError(
            T(QT_TRANSLATE_NOOP("Core", "The engine catalog {path} could not be read: {reason}"), path=str(p),
              reason=str(exc.strerror or exc)),
            hint=QT_TRANSLATE_NOOP("Core", "Reinstall Strata; the catalog ships with it."),
        ) from exc
    except ValueError as exc:
        raise EngineCatalogError(T(QT_TRANSLATE_NOOP("Core", "The engine catalog {path} is not valid JSON: {error}"),
                                   path=str(p), error=str(exc)),
                                 hint=QT_TRANSLATE_NOOP("Core", "Reinstall Strata or fix the file.")) from exc
    return parse_catalog(raw, origin=str(p))


class _Reader:
    """Small typed accessors that name the offending field in the error."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, where: str, what: str) -> EngineCatalogError:
        return EngineCatalogError(T(QT_TRANSLATE_NOOP("Core", "Engine catalog {origin}: {where}: {problem}"),
                                    origin=self.origin, where=where, problem=what),
                                  hint=QT_TRANSLATE_NOOP("Core", "The catalog is data shipped with Strata; fix or "
                                                                 "reinstall it."))

    def obj(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, "must be an object")
        return v

    def lst(self, v: Any, where: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(where, "must be a list")
        return v

    def string(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(where, "must be a non-empty string")
        return v

    def opt_string(self, v: Any, where: str) -> str | None:
        return None if v is None else self.string(v, where)

    def strings(self, v: Any, where: str) -> tuple[str, ...]:
        return tuple(self.string(x, f"{where}[{i}]") for i, x in enumerate(self.lst(v, where)))

    def str_map(self, v: Any, where: str) -> dict[str, str]:
        return {self.string(k, where): self.string(x, f"{where}.{k}") for k, x in self.obj(v, where).items()}


def parse_catalog(raw: Any, origin: str = "<memory>") -> EngineCatalog:
    """Validate parsed JSON into an :class:`EngineCatalog`."""
    r = _Reader(origin)
    top = r.obj(raw, "top level")
    version = top.get("schema_version")
    if version != SCHEMA_VERSION:
        raise r.fail("schema_version", f"is {version!r}; this Strata reads version {SCHEMA_VERSION}")
    families = _parse_families(r, r.obj(top.get("families"), "families"))
    order = r.strings(top.get("backend_order", list(BACKENDS)), "backend_order")
    if sorted(order) != sorted(BACKENDS):
        raise r.fail("backend_order", f"must list exactly {', '.join(BACKENDS)}")
    sources = [_parse_source(r, s_raw, f"sources[{i}]") for i, s_raw in enumerate(r.lst(top.get("sources"), "sources"))]
    ids = [s.id for s in sources]
    if len(set(ids)) != len(ids):
        raise r.fail("sources", "source ids must be unique")
    tuning = [_parse_tuning_entry(r, t_raw, f"tuning_tables[{i}]")
              for i, t_raw in enumerate(r.lst(top.get("tuning_tables", []), "tuning_tables"))]
    drivers = _parse_drivers(r, r.obj(top.get("drivers", {}), "drivers"), families)
    return EngineCatalog(SCHEMA_VERSION, families, tuple(sources), order, tuple(tuning), origin, drivers)


def _parse_families(r: _Reader, raw: dict[str, Any]) -> dict[str, Family]:
    """The GPU families: each gfx target in exactly one, with its environment per OS."""
    families: dict[str, Family] = {}
    seen_targets: dict[str, str] = {}
    for name, fam_raw in raw.items():
        where = f"families.{name}"
        f = r.obj(fam_raw, where)
        targets = r.strings(f.get("targets"), f"{where}.targets")
        if not targets:
            raise r.fail(f"{where}.targets", "must list at least one gfx target")
        for t in targets:
            if not _GFX_RE.match(t):
                raise r.fail(f"{where}.targets", f"'{t}' is not a gfx target like gfx1100")
            if t in seen_targets:
                raise r.fail(f"{where}.targets", f"{t} is already in family {seen_targets[t]}")
            seen_targets[t] = name
        env_raw = r.obj(f.get("env", {}), f"{where}.env")
        env: dict[str, dict[str, str]] = {}
        for os_name, vars_raw in env_raw.items():
            if os_name not in OSES:
                raise r.fail(f"{where}.env", f"unknown OS '{os_name}' (expected one of {', '.join(OSES)})")
            env[os_name] = r.str_map(vars_raw, f"{where}.env.{os_name}")
        families[name] = Family(name, targets, env)
    return families


def _parse_source(r: _Reader, s_raw: Any, where: str) -> Source:
    """One release source: its repository, asset rules, pins and engine kind."""
    s = r.obj(s_raw, where)
    sid = r.string(s.get("id"), f"{where}.id")
    repo = r.string(s.get("repo"), f"{where}.repo")
    if repo.count("/") != 1:
        raise r.fail(f"{where}.repo", f"'{repo}' must be owner/name")
    rules = [_parse_asset_rule(r, a_raw, f"{where}.assets[{j}]")
             for j, a_raw in enumerate(r.lst(s.get("assets"), f"{where}.assets"))]
    pins = r.str_map(s.get("pinned_sha256", {}), f"{where}.pinned_sha256")
    for asset_name, sha in pins.items():
        if not _SHA_RE.match(sha):
            raise r.fail(f"{where}.pinned_sha256.{asset_name}", "must be 64 lowercase hex digits")
    min_tag = r.opt_string(s.get("min_tag"), f"{where}.min_tag")
    pinned_tag = r.opt_string(s.get("pinned_tag"), f"{where}.pinned_tag")
    revisions = r.str_map(s.get("hipblaslt_revisions", {}), f"{where}.hipblaslt_revisions")
    kind_name = r.string(s.get("kind", TEXT.name), f"{where}.kind")
    installable = {k.name: k for k in INSTALLABLE}
    if kind_name not in installable:
        raise r.fail(f"{where}.kind", f"unknown kind '{kind_name}' ({' or '.join(installable)})")
    kind = installable[kind_name]
    return Source(sid, repo, str(s.get("title") or repo), tuple(rules), min_tag, pinned_tag, pins, revisions, kind)


def _parse_asset_rule(r: _Reader, a_raw: Any, aw: str) -> AssetRule:
    """Which release assets are an engine for an OS and backend, and what they must hold."""
    a = r.obj(a_raw, aw)
    os_name = r.string(a.get("os"), f"{aw}.os")
    backend = r.string(a.get("backend"), f"{aw}.backend")
    if os_name not in OSES:
        raise r.fail(f"{aw}.os", f"unknown OS '{os_name}'")
    if backend not in BACKENDS:
        raise r.fail(f"{aw}.backend", f"unknown backend '{backend}'")
    try:
        pattern = re.compile(r.string(a.get("pattern"), f"{aw}.pattern"))
    except re.error as exc:
        raise r.fail(f"{aw}.pattern", f"is not a valid regular expression: {exc}") from exc
    if "tag" not in pattern.groupindex:
        raise r.fail(f"{aw}.pattern", "needs a (?P<tag>...) group")
    targets = r.strings(a.get("targets", []), f"{aw}.targets")
    if backend == "rocm" and not targets and not (
        {"family", "target"} & set(pattern.groupindex)
    ):
        raise r.fail(aw, "a ROCm asset needs 'targets' or a (?P<family>)/(?P<target>) group")
    required = r.strings(a.get("required"), f"{aw}.required")
    if not required:
        raise r.fail(f"{aw}.required", "must name at least the server binary")
    ratio = a.get("unpacked_ratio", 3.0)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio < 1:
        raise r.fail(f"{aw}.unpacked_ratio", "must be a number >= 1")
    return AssetRule(os_name, backend, pattern, targets, required, float(ratio))


def _parse_tuning_entry(r: _Reader, t_raw: Any, where: str) -> TuningEntry:
    """One tuning table: its gfx target, hipBLASLt revision, address and checksum."""
    entry = r.obj(t_raw, where)
    gfx = r.string(entry.get("gfx"), f"{where}.gfx")
    if not _GFX_RE.match(gfx):
        raise r.fail(f"{where}.gfx", f"'{gfx}' is not a gfx target")
    sha = r.string(entry.get("sha256"), f"{where}.sha256")
    if not _SHA_RE.match(sha):
        raise r.fail(f"{where}.sha256", "must be 64 lowercase hex digits")
    return TuningEntry(gfx, r.string(entry.get("hipblaslt_revision"), f"{where}.hipblaslt_revision"),
                       r.string(entry.get("url"), f"{where}.url"), sha)


_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DRIVER_VERSION_RE = re.compile(r"^\d+(\.\d+){1,3}$")


def _parse_drivers(r: _Reader, raw: dict[str, Any], families: Mapping[str, Family]) -> tuple[DriverRule, ...]:
    rules: list[DriverRule] = []
    for kind in ("known_bad", "minimum"):
        for i, e_raw in enumerate(r.lst(raw.get(kind, []), f"drivers.{kind}")):
            where = f"drivers.{kind}[{i}]"
            e = r.obj(e_raw, where)
            os_name = r.string(e.get("os"), f"{where}.os")
            if os_name not in OSES:
                raise r.fail(f"{where}.os", f"unknown OS '{os_name}' (expected one of {', '.join(OSES)})")
            fams = r.strings(e.get("families", []), f"{where}.families")
            for fam in fams:
                if fam not in families:
                    raise r.fail(f"{where}.families", f"'{fam}' is not a family in `families`")
            versions = r.obj(e.get("versions", {}), f"{where}.versions")
            dates = r.obj(e.get("dates", {}), f"{where}.dates")
            for key, value in versions.items():
                if key not in ("from", "to") or not isinstance(value, str) or not _DRIVER_VERSION_RE.match(value):
                    raise r.fail(f"{where}.versions.{key}", "expected from/to with a version like 32.0.21013.1000")
            for key, value in dates.items():
                if key not in ("from", "to") or not isinstance(value, str) or not _DATE_RE.match(value):
                    raise r.fail(f"{where}.dates.{key}", "expected from/to with a date like 2026-05-01")
            if kind == "known_bad" and not versions and not dates:
                raise r.fail(where, "needs a versions or dates range")
            if kind == "minimum" and (set(versions) != {"from"} or dates):
                raise r.fail(f"{where}.versions", "a minimum gives exactly versions.from")
            links = r.strings(e.get("links", []), f"{where}.links")
            for link in links:
                if not link.startswith("https://"):
                    raise r.fail(f"{where}.links", f"'{link}' must be an https:// address")
            rules.append(DriverRule(kind, os_name, fams, r.string(e.get("release"), f"{where}.release"),
                                    r.string(e.get("reason"), f"{where}.reason"), links,
                                    versions.get("from"), versions.get("to"), dates.get("from"), dates.get("to")))
    return tuple(rules)
