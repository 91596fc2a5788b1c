"""Running engines: the managed-process type and its outcome, the engine servers and their kinds,
the OpenAI-compatible client and structured output."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.runtime.client import (
        ChatReply,
        RequestOptions,
        ResponseFormat,
        SamplingParams,
        StreamPiece,
        ToolCall,
        percent_text,
    )
    from strata_gui.core.runtime.depth import depth_label
    from strata_gui.core.runtime.engine import Backend, EngineSpec, backend_label
    from strata_gui.core.runtime.kinds import (
        EMBEDDING,
        IMAGE,
        INSTALLABLE,
        KINDS,
        RERANKER,
        SPEECH,
        TEXT,
        EngineKind,
        kind_named,
    )
    from strata_gui.core.runtime.launch import ServerSettings, ServerState
    from strata_gui.core.runtime.structured import JsonCheck, check_json, load_schema
    from strata_gui.core.runtime.tool_arguments import MAX_ARGUMENT_DEPTH, parse_tool_arguments

__all__ = [
    "EMBEDDING",
    "IMAGE",
    "INSTALLABLE",
    "KINDS",
    "MAX_ARGUMENT_DEPTH",
    "RERANKER",
    "SPEECH",
    "TEXT",
    "Backend",
    "ChatReply",
    "EngineKind",
    "EngineSpec",
    "JsonCheck",
    "RequestOptions",
    "ResponseFormat",
    "SamplingParams",
    "ServerSettings",
    "ServerState",
    "StreamPiece",
    "ToolCall",
    "backend_label",
    "check_json",
    "depth_label",
    "kind_named",
    "load_schema",
    "parse_tool_arguments",
    "percent_text",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "client": ["ChatReply", "RequestOptions", "ResponseFormat", "SamplingParams", "StreamPiece", "ToolCall",
               "percent_text"],
    "depth": ["depth_label"],
    "engine": ["Backend", "EngineSpec", "backend_label"],
    "kinds": ["EMBEDDING", "IMAGE", "INSTALLABLE", "KINDS", "RERANKER", "SPEECH", "TEXT", "EngineKind", "kind_named"],
    "launch": ["ServerSettings", "ServerState"],
    "structured": ["JsonCheck", "check_json", "load_schema"],
    "tool_arguments": ["MAX_ARGUMENT_DEPTH", "parse_tool_arguments"],
})
