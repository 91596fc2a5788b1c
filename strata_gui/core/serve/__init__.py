"""Strata as a local API: an OpenAI-compatible endpoint in front of the loaded model."""

from typing import TYPE_CHECKING

from strata_gui.core.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.serve.proxy import ApiRequest
    from strata_gui.core.serve.service import ServeService

__all__ = [
    "ApiRequest",
    "ServeService",
]

# Each module loads when one of its names is first read (see strata_gui.core.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "proxy": ["ApiRequest"],
    "service": ["ServeService"],
})
