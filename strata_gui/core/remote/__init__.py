"""Remote OpenAI-compatible engines (vLLM, SGLang, another llama-server or Strata)."""

from strata_gui.core.remote.service import RemoteEndpoint, RemoteService, describe

__all__ = [
    "RemoteEndpoint",
    "RemoteService",
    "describe",
]
