"""Running engines: the managed-process type and its outcome, the llama-server supervisor, the OpenAI-compatible client."""

from typing import TYPE_CHECKING

from strata_gui.core.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.runtime.client import SamplingParams
    from strata_gui.core.runtime.depth import depth_label
    from strata_gui.core.runtime.engine import Backend, EngineSpec, backend_label
    from strata_gui.core.runtime.kinds import (
        EMBEDDING,
        IMAGE,
        INSTALLABLE,
        KINDS,
        TEXT,
        EngineKind,
        kind_named,
    )
    from strata_gui.core.runtime.launch import ServerSettings, ServerState

__all__ = [
    "EMBEDDING",
    "IMAGE",
    "INSTALLABLE",
    "KINDS",
    "TEXT",
    "Backend",
    "EngineKind",
    "EngineSpec",
    "SamplingParams",
    "ServerSettings",
    "ServerState",
    "backend_label",
    "depth_label",
    "kind_named",
]

# Each module loads when one of its names is first read (see strata_gui.core.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "client": ["SamplingParams"],
    "depth": ["depth_label"],
    "engine": ["Backend", "EngineSpec", "backend_label"],
    "launch": ["ServerSettings", "ServerState"],
    "kinds": ["EMBEDDING", "IMAGE", "INSTALLABLE", "KINDS", "TEXT", "EngineKind", "kind_named"],
})
