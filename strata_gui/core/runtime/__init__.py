"""Running engines: the managed-process type and its outcome, the llama-server supervisor, the OpenAI-compatible client."""

from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.depth import depth_label
from strata_gui.core.runtime.engine import Backend, EngineSpec, backend_label
from strata_gui.core.runtime.supervisor import ServerState

__all__ = [
    "Backend",
    "EngineSpec",
    "SamplingParams",
    "ServerState",
    "backend_label",
    "depth_label",
]
