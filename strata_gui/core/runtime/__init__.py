"""Running engines: the managed-process type and its outcome, the llama-server supervisor, the OpenAI-compatible client."""

from typing import TYPE_CHECKING

from strata_gui.core.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.runtime.client import (
        ChatReply,
        RequestOptions,
        ResponseFormat,
        SamplingParams,
        StreamPiece,
        ToolCall,
    )
    from strata_gui.core.runtime.depth import depth_label
    from strata_gui.core.runtime.engine import Backend, EngineSpec, backend_label
    from strata_gui.core.runtime.structured import JsonCheck, check_json, load_schema
    from strata_gui.core.runtime.supervisor import ServerState

__all__ = [
    "Backend",
    "ChatReply",
    "EngineSpec",
    "JsonCheck",
    "RequestOptions",
    "ResponseFormat",
    "SamplingParams",
    "ServerState",
    "StreamPiece",
    "ToolCall",
    "backend_label",
    "check_json",
    "depth_label",
    "load_schema",
]

# Each module loads when one of its names is first read (see strata_gui.core.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "client": ["ChatReply", "RequestOptions", "ResponseFormat", "SamplingParams", "StreamPiece", "ToolCall"],
    "depth": ["depth_label"],
    "engine": ["Backend", "EngineSpec", "backend_label"],
    "structured": ["JsonCheck", "check_json", "load_schema"],
    "supervisor": ["ServerState"],
})
