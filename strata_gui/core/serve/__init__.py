"""Strata as a local API: OpenAI, Ollama and Anthropic endpoints in front of the engines."""

from typing import TYPE_CHECKING

from strata_gui.core.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.serve.chat_router import ChatRouter
    from strata_gui.core.serve.records import ApiRequest, ServerLimits
    from strata_gui.core.serve.router import LoadedModel, ModelRouter, ServedModel, Upstream
    from strata_gui.core.serve.server import ApiServer
    from strata_gui.core.serve.service import ServeService

__all__ = [
    "ApiRequest",
    "ApiServer",
    "ChatRouter",
    "LoadedModel",
    "ModelRouter",
    "ServeService",
    "ServedModel",
    "ServerLimits",
    "Upstream",
]

# Each module loads when one of its names is first read (see strata_gui.core.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "chat_router": ["ChatRouter"],
    "router": ["LoadedModel", "ModelRouter", "ServedModel", "Upstream"],
    "server": ["ApiServer"],
    "service": ["ServeService"],
    "records": ["ApiRequest", "ServerLimits"],
})
