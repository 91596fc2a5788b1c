"""Plain records the engines package passes around: GPUs, releases, installed engines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import EngineInstallError
from strata_gui.core.base.state_file import UnusableStateFile, read_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.kinds import TEXT, EngineKind, kind_named

MANIFEST_NAME = "strata-engine.json"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class GpuTarget:
    """The little the engine planner needs to know about a GPU.

    Attributes:
        name: Marketing name ("AMD Radeon RX 7900 XTX"), for messages.
        pci_device_id: PCI device id (0x744C), or None when unknown.
        gfx: gfx target ("gfx1100"), or None when the device is not in any table.
    """

    name: str
    pci_device_id: int | None = None
    gfx: str | None = None

    def label(self) -> str:
        if self.gfx:
            return self.gfx
        if self.pci_device_id is not None:
            return f"unknown device 0x{self.pci_device_id:04x}"
        return self.name or "unknown GPU"


@dataclass(frozen=True)
class ReleaseAsset:
    """One downloadable file of a release."""

    name: str
    size: int
    download_url: str
    digest: str | None = None  # "sha256:<hex>" or None for pre-2025 uploads

    @property
    def sha256(self) -> str | None:
        if self.digest and self.digest.startswith("sha256:"):
            return self.digest.split(":", 1)[1].lower()
        return None


@dataclass(frozen=True)
class Release:
    """One GitHub release of a source repository."""

    repo: str
    tag: str
    published_at: str
    prerelease: bool
    assets: tuple[ReleaseAsset, ...]
    draft: bool = False
    name: str = ""  # the release's title: "b7601" (kept when a release is moved to another tag)


@dataclass(frozen=True)
class ReleaseListing:
    """The releases of a repository, and whether they came from the on-disk cache."""

    repo: str
    releases: tuple[Release, ...]
    cached: bool = False
    fetched_at: float = 0.0
    notice: str | None = None


@dataclass(frozen=True)
class TuningRef:
    """A hipBLASLt tuning table installed with an engine, and the pair it is valid for."""

    path: str
    gfx: str
    revision: str


@dataclass(frozen=True)
class InstalledEngine:
    """An engine folder on disk, as its install manifest describes it.

    Attributes:
        id: Folder name and stable identifier ("lemonade-rocm-gfx110X-b1001").
        backend: "rocm", "vulkan" or "cpu".
        folder: The engine's folder.
        server_path: The llama-server binary inside it.
        tag: Release tag, or "local" for a user's own build.
        gfx_targets: gfx targets the build was made for (empty for Vulkan/CPU).
        family: ROCm family name, if any.
        source: Catalog source id, or "local".
        asset: Release asset name it came from ("" for local builds).
        sha256: SHA-256 of that asset ("" when unknown).
        os: OS the build is for.
        env: Extra environment the catalog asks for this build's family on this OS.
        hipblaslt_revision: hipBLASLt git revision the build ships, when known.
        tuning: The tuning table fetched with it, if any.
        installed_at: Epoch seconds.
        verified: Whether the download was checked against a digest or pin.
        kind: What its builds run (:mod:`strata_gui.core.runtime.kinds`), stored by name; manifests
            written before kinds existed are the chat's.
    """

    id: str
    backend: str
    folder: Path
    server_path: Path
    tag: str
    gfx_targets: tuple[str, ...] = ()
    family: str | None = None
    source: str = "local"
    asset: str = ""
    sha256: str = ""
    os: str = ""
    env: dict[str, str] = field(default_factory=dict)
    hipblaslt_revision: str | None = None
    tuning: TuningRef | None = None
    installed_at: float = 0.0
    verified: bool = False
    kind: EngineKind = TEXT

    @property
    def library_dir(self) -> Path:
        return self.server_path.parent

    @property
    def unverified(self) -> bool:
        """Downloaded from a release whose asset had no published digest (nor a pin in the
        catalog): nothing vouches that the bytes are the publisher's. A user's own build is not
        a download and is never called unverified."""
        return not self.verified and self.source != "local" and bool(self.asset)

    def unverified_notice(self) -> str:
        """The warning both faces show for an :attr:`unverified` engine ("" when verified)."""
        if not self.unverified:
            return ""
        return (f"{self.asset} had no published checksum, so this engine could not be verified "
                "against its publisher's build.")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["version"] = MANIFEST_VERSION
        data["folder"] = str(self.folder)
        data["server_path"] = str(self.server_path.relative_to(self.folder)) if self.server_path.is_relative_to(
            self.folder) else str(self.server_path)
        data["gfx_targets"] = list(self.gfx_targets)
        data["kind"] = self.kind.name
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], folder: Path) -> InstalledEngine:
        try:
            tuning_raw = data.get("tuning")
            tuning = TuningRef(**tuning_raw) if isinstance(tuning_raw, dict) else None
            server = Path(str(data["server_path"]))
            return cls(
                id=str(data["id"]),
                backend=str(data["backend"]),
                folder=folder,
                server_path=server if server.is_absolute() else folder / server,
                tag=str(data["tag"]),
                gfx_targets=tuple(str(x) for x in data.get("gfx_targets", [])),
                family=data.get("family"),
                source=str(data.get("source", "local")),
                asset=str(data.get("asset", "")),
                sha256=str(data.get("sha256", "")),
                os=str(data.get("os", "")),
                env={str(k): str(v) for k, v in dict(data.get("env", {})).items()},
                hipblaslt_revision=data.get("hipblaslt_revision"),
                tuning=tuning,
                installed_at=float(data.get("installed_at", 0.0)),
                verified=bool(data.get("verified", False)),
                kind=kind_named(str(data.get("kind") or "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "The install manifest in {folder} is damaged "
                                                                 "({reason})."), folder=folder, reason=exc),
                                     hint=QT_TRANSLATE_NOOP("Core", "Remove this engine and install it again.")) from exc

    def write_manifest(self, folder: Path | None = None) -> None:
        target = (folder or self.folder) / MANIFEST_NAME
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(target)


def read_manifest(folder: Path) -> InstalledEngine:
    """Read ``strata-engine.json`` in an engine folder."""
    try:
        data = read_state(folder / MANIFEST_NAME, dict)
    except (OSError, UnusableStateFile) as exc:
        reason = exc.reason if isinstance(exc, UnusableStateFile) else exc.strerror or exc
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{folder} has no readable install manifest ({reason})."),
                                   folder=folder, reason=reason),
                                 hint=QT_TRANSLATE_NOOP("Core", "Remove this folder and install the engine "
                                                                "again.")) from exc
    if data is None:
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{folder} has no readable install manifest ({reason})."),
                                   folder=folder, reason="missing"),
                                 hint=QT_TRANSLATE_NOOP("Core", "Remove this folder and install the engine "
                                                                "again."))
    if not isinstance(data, dict):
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "The install manifest in {folder} is damaged."),
                                   folder=folder),
                                 hint=QT_TRANSLATE_NOOP("Core", "Remove this engine and install it again."))
    return InstalledEngine.from_json(data, folder)
