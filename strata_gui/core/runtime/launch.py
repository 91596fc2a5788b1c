"""How an engine is launched and what state it is in: the plain data every part of the app may
read (the chat's header, load options, the benchmark), apart from the processes themselves, which
only the engine pool starts (:mod:`strata_gui.core.runtime.supervisor`)."""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass

from strata_gui.core.config.settings import Settings


class ServerState(enum.Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    CRASHED = "crashed"  # exited on its own after it was ready
    FAILED = "failed"  # exited, or never became ready, before it was ready

    @property
    def is_terminal(self) -> bool:
        return self in (ServerState.STOPPED, ServerState.CRASHED, ServerState.FAILED)


@dataclass(frozen=True)
class ServerSettings:
    """How to launch the server (from :class:`Settings`, overridable per launch).

    ``port`` 0 picks a free loopback port; ``gpu_layers`` is "all", "auto" or a number;
    ``mmproj`` is the vision projector GGUF to load with the model (empty: text only).
    ``cache_type_k``/``cache_type_v`` are KV-cache types ("f16", "q8_0", "q4_0"); ``batch_size`` and
    ``ubatch_size`` 0 keep the engine's defaults; ``mmap`` False loads the model without mapping it.
    ``chat_parsing`` False starts llama-server with ``--skip-chat-parsing``: the model's text arrives
    as it is written (thinking tags and tool calls included), for a model whose output keeps failing
    its chat format; the engine has no per-request switch for it.
    """

    ctx_size: int = 4096
    gpu_layers: str = "all"
    flash_attention: str = "auto"
    threads: int = 0
    parallel: int = 1  # requests served at once; ``ctx_size`` is each one's (the cache holds both's product)
    jinja: bool = True
    metrics: bool = True
    api_key: str = ""
    host: str = "127.0.0.1"
    port: int = 0
    extra_args: tuple[str, ...] = ()
    mmproj: str = ""
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    batch_size: int = 0
    ubatch_size: int = 0
    mmap: bool = True
    draft_model: str = ""  # a GGUF for speculative decoding ("" = none)
    draft_max: int = 0  # most tokens drafted per step (0 = the engine's default)
    draft_min: int = 0
    chat_parsing: bool = True
    model_args: tuple[str, ...] = ()  # image engines: the model options (text encoder, VAE ...) in place of -m

    @classmethod
    def from_settings(cls, s: Settings) -> ServerSettings:
        return cls(ctx_size=s.context_size, gpu_layers=s.gpu_layers, flash_attention=s.flash_attention,
                   threads=s.threads, parallel=max(1, s.parallel_slots))


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the engine binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
