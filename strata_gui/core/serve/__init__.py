"""Strata as a local API: an OpenAI-compatible endpoint in front of the loaded model."""

from strata_gui.core.serve.proxy import ApiRequest
from strata_gui.core.serve.service import ServeService

__all__ = [
    "ApiRequest",
    "ServeService",
]
