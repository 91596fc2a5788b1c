"""Remote OpenAI-compatible engines (vLLM, SGLang, another llama-server or Strata)."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.remote.service import RemoteEndpoint, RemoteService, describe

__all__ = [
    "RemoteEndpoint",
    "RemoteService",
    "describe",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "service": ["RemoteEndpoint", "RemoteService", "describe"],
})
