"""What the local API serves, and what it asks of the engines' owner: lend me an engine for this model.

The HTTP layer (:mod:`strata_gui.core.serve.server`) knows nothing about processes: for each request
it names a model (the ``model`` field), borrows a running engine for it from a :class:`ModelRouter`
for exactly as long as the request lasts, and talks to that engine over loopback HTTP. Who starts,
shares, unloads and evicts engines is the router's business: the engine pool, seen through
:class:`~strata_gui.core.serve.library_router.LibraryRouter`.

Keep-alive follows Ollama's meaning, in seconds: how long the engine stays loaded after the last
borrow ends. ``None`` is the router's default, ``0`` unloads it as soon as nobody uses it,
:data:`KEEP_FOREVER` never unloads it for idleness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from strata_gui.core.runtime import kinds
from strata_gui.core.runtime.kinds import EMBEDDING, IMAGE, RERANKER, SPEECH, TEXT

# Engine kinds: what a model is loaded as (the names of the descriptors in core/runtime/kinds.py).
KIND_TEXT = TEXT.name
KIND_EMBEDDING = EMBEDDING.name
KIND_IMAGE = IMAGE.name
KIND_RERANK = RERANKER.name
KIND_SPEECH = SPEECH.name

# What an engine speaks natively (Upstream.apis, from its kind's descriptor): the HTTP layer passes a
# request through when its engine speaks the request's API, translates where it knows how, and
# refuses it otherwise.
API_OPENAI = kinds.OPENAI_CHAT        # POST /v1/chat/completions, /v1/completions (SSE streams)
API_ANTHROPIC = kinds.ANTHROPIC       # POST /v1/messages, /v1/messages/count_tokens
API_RESPONSES = kinds.RESPONSES       # POST /v1/responses (OpenAI Responses)
API_EMBEDDINGS = kinds.EMBEDDINGS     # POST /v1/embeddings
API_RERANK = kinds.RERANK             # POST /v1/rerank
API_IMAGES = kinds.OPENAI_IMAGES      # POST /v1/images/generations (OpenAI images API)
API_SDCPP = kinds.SDCPP               # stable-diffusion.cpp's job API (POST /sdcpp/v1/img_gen, GET /sdcpp/v1/jobs/{id})

# What the pinned engines speak, checked against their route tables (the report of issue 25):
# llama-server for chat, llama-server started with --embedding, sd-server.
LLAMA_TEXT_APIS = TEXT.apis
LLAMA_EMBEDDING_APIS = EMBEDDING.apis
LLAMA_RERANK_APIS = RERANKER.apis
SD_SERVER_APIS = IMAGE.apis

KEEP_FOREVER = math.inf
LATEST = ":latest"  # the tag Ollama's clients give a model name that has none


@dataclass(frozen=True)
class ServedModel:
    """One model the local API offers.

    Attributes:
        id: What clients type in ``model``: ``acme/Model-GGUF:Q4_K_M``, the repo alone when the
            library holds one quant of it, or the file name without ``.gguf``
            (:func:`strata_gui.core.serve.catalog.assign_ids`).
        kind: The engine kind it loads as (:data:`KIND_TEXT`, :data:`KIND_EMBEDDING`, :data:`KIND_IMAGE`).
        path: The file to load (shard 1 of a split set).
        size_bytes: Bytes on disk (every shard).
        modified: When the file last changed, epoch seconds.
        details: What ``/api/tags`` and ``/api/show`` report, every key optional:
            ``format`` ("gguf"), ``family``, ``families``, ``parameter_size`` ("7.2B"),
            ``quantization_level`` ("Q4_K_M"), ``parameter_count`` (int), ``context_length`` (int),
            ``capabilities`` (Ollama's words: "completion", "tools", "thinking", "vision", "embedding").
    """

    id: str
    kind: str
    path: Path
    size_bytes: int
    modified: float
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Upstream:
    """An engine lent for one request.

    Attributes:
        base_url: ``http://127.0.0.1:PORT``, no trailing slash.
        api_key: The engine's own key, sent as ``Authorization: Bearer`` ("" = none). A client's key
            is never forwarded.
        model: The model the engine holds.
        apis: What it speaks natively (``API_*``).
        engine: The engine's name as the dashboard shows it ("ROCm", "Vulkan", "CPU").
        backend: The engine's backend id ("rocm", "vulkan", "cpu"), for the dashboard.
    """

    base_url: str
    api_key: str
    model: ServedModel
    apis: frozenset[str]
    engine: str = ""
    backend: str = ""


@dataclass(frozen=True)
class LoadedModel:
    """A model held by a running engine (``/api/ps``, the Network page).

    Attributes:
        model: The model.
        memory_bytes: What it holds (weights + context), as well as the owner knows.
        busy: Requests using it now.
        idle_s: Seconds since its last request ended (0 while busy).
        expires_in_s: Seconds until it is unloaded for idleness (None: never).
        engine: The engine's name ("ROCm", "Vulkan", "CPU").
        gpu_memory_bytes: The part of ``memory_bytes`` in GPU memory (Ollama's ``size_vram``).
        context_length: The context the engine was loaded with (None: not known; the trained one
            applies).
    """

    model: ServedModel
    memory_bytes: int
    busy: int
    idle_s: float
    expires_in_s: float | None
    engine: str
    gpu_memory_bytes: int = 0
    context_length: int | None = None


class ModelRouter(Protocol):
    """The engines' owner, as the local API sees it."""

    def models(self) -> Sequence[ServedModel]:
        """Every model a client may name, without loading anything (cheap: called per request)."""

    async def refresh(self) -> None:
        """Bring :meth:`models` up to date (a library scan, a model header read). The server awaits
        it when it starts and before it answers a model listing (``/v1/models``, ``/api/tags``,
        ``/api/show``); a router that is always current returns at once."""

    def borrow(self, model_id: str, *, kind: str | None = None,
               keep_alive: float | None = None) -> AbstractAsyncContextManager[Upstream]:
        """A running engine holding ``model_id``, lent until the ``async with`` block ends.

        Loads the model on demand (the block's entry waits for it). While lent, the engine is not
        unloaded or evicted.

        Args:
            model_id: A :attr:`ServedModel.id`; "" never reaches a router (the HTTP layer picks the
                only model or answers 400).
            kind: The kind the request needs (an embeddings request: :data:`KIND_EMBEDDING`);
                None accepts the model's own kind.
            keep_alive: Seconds to keep it loaded after this borrow ends (see the module doc).

        Raises:
            UnknownModelError: No such model (of that kind). The API answers 404.
            ServerBusyError: It cannot be loaded now; retry after ``retry_after``. The API answers 503.
            StrataError: Loading failed (the API answers 502 with the message).
        """

    def loaded(self) -> Sequence[LoadedModel]:
        """The models running engines hold now."""

    async def unload(self, model_id: str) -> None:
        """Unload ``model_id`` as soon as nobody uses it (Ollama's ``keep_alive: 0`` on an empty
        prompt). Unknown or not loaded: nothing happens."""
