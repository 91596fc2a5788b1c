"""Strata as this machine's model server: OpenAI, Ollama and Anthropic endpoints in front of every
library model, loaded on demand by the engine pool."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.serve.activity import ActivityEntry
    from strata_gui.core.serve.autostart import serve_command
    from strata_gui.core.serve.handover import BackgroundServer, HandedOver, take_over
    from strata_gui.core.serve.library_router import LibraryRouter
    from strata_gui.core.serve.records import ApiRequest, ServerLimits
    from strata_gui.core.serve.router import LoadedModel, ModelRouter, ServedModel, Upstream
    from strata_gui.core.serve.server import ApiServer
    from strata_gui.core.serve.service import ServeService

__all__ = [
    "ActivityEntry",
    "ApiRequest",
    "ApiServer",
    "BackgroundServer",
    "HandedOver",
    "LibraryRouter",
    "LoadedModel",
    "ModelRouter",
    "ServeService",
    "ServedModel",
    "ServerLimits",
    "Upstream",
    "serve_command",
    "take_over",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "activity": ["ActivityEntry"],
    "autostart": ["serve_command"],
    "handover": ["BackgroundServer", "HandedOver", "take_over"],
    "library_router": ["LibraryRouter"],
    "router": ["LoadedModel", "ModelRouter", "ServedModel", "Upstream"],
    "server": ["ApiServer"],
    "service": ["ServeService"],
    "records": ["ApiRequest", "ServerLimits"],
})
