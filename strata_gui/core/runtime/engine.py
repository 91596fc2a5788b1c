"""What the runtime needs to know about an engine: where its server is and how to launch it.

:class:`EngineSpec` is produced by exactly one place, the engine resolver
(:mod:`strata_gui.core.engines.resolver`); the runtime only launches what it is given.
:class:`Backend` is the one type for "which kind of build", with the label users read.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from strata_gui.core.runtime.kinds import TEXT, EngineKind, kind_named


class Backend(enum.StrEnum):
    """The kind of llama.cpp build (a ``str``: compares equal to "rocm", "vulkan", ...)."""

    ROCM = "rocm"
    VULKAN = "vulkan"
    CPU = "cpu"
    REMOTE = "remote"

    @property
    def label(self) -> str:
        """What users read: "ROCm", "Vulkan", "CPU", "Remote"."""
        return _LABELS[self]

    @classmethod
    def parse(cls, value: str) -> Backend:
        """The backend named ``value`` (case-insensitive); CPU for anything unknown."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            return cls.CPU


_LABELS = {Backend.ROCM: "ROCm", Backend.VULKAN: "Vulkan", Backend.CPU: "CPU", Backend.REMOTE: "Remote"}


def backend_label(value: str) -> str:
    """The label of a backend given as text (unknown text is returned as is)."""
    try:
        return Backend(value).label
    except ValueError:
        return value


@dataclass(frozen=True)
class EngineSpec:
    """One launchable llama-server build, as the resolver decided it.

    Attributes:
        id: Stable identifier (the installed engine's id).
        label: What the user reads ("ROCm b1136", "Vulkan b7612").
        backend: Which kind of build it is.
        server_path: The ``llama-server`` executable.
        env: Variables set on top of the app's environment when launching it.
        reason: Why it is in the plan at this place (shown to users: "measured fastest for this model").
        tuning_active: ROCm only: a validated hipBLASLt table is passed (None: not applicable).
        devices: The engine's own device names it runs on (``ROCm0``); empty: the engine's default.
        device_reason: Why those devices (and which GPUs are left out).
        kind: What it runs as (:mod:`strata_gui.core.runtime.kinds`): its command line, readiness
            and job APIs.
    """

    id: str
    label: str
    backend: Backend
    server_path: Path
    env: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    tuning_active: bool | None = None
    devices: tuple[str, ...] = ()
    device_reason: str = ""
    kind: EngineKind = TEXT

    def __post_init__(self) -> None:
        if not isinstance(self.backend, Backend):  # accept "rocm" etc. from callers and JSON
            object.__setattr__(self, "backend", Backend(self.backend))
        if not isinstance(self.kind, EngineKind):  # a stored kind name
            object.__setattr__(self, "kind", kind_named(self.kind))
