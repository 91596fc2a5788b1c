"""Vectors for chunks from an embedding model of the library, run on the engine pool.

The model is borrowed from the pool as the local API's ``/api/embed`` borrows it: the resolver's
plan for the model as an embedding engine, through :func:`run_along_plan` (the next engine of the
plan when one fails), each batch one request to the engine's ``/v1/embeddings``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.pool import EnginePool, Lease, run_along_plan
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings

USER = "documents"
BATCH = 32
"""Chunks per request: llama-server embeds a batch in one pass (its ``-ub`` bounds the tokens)."""


class Embedder(Protocol):
    """Turns texts into vectors (unit length), and names the model they come from."""

    key: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class PoolEmbedder:
    """An embedding model of the library, borrowed from the engine pool per batch.

    Args:
        pool: Where the engine is borrowed.
        plan: The resolver's embedding engines for the model, best first.
        settings: How the model is launched as an embedding engine.
        model: The GGUF file.
        timeout: Seconds one batch may take.
    """

    def __init__(self, pool: EnginePool, plan: Callable[[], Sequence[EngineSpec]],
                 settings: Callable[[EngineSpec], ServerSettings], model: Path, *, timeout: float = 300.0) -> None:
        self.pool = pool
        self._plan = plan
        self._settings = settings
        self.model = model
        self.timeout = timeout
        try:
            st = model.stat()
            self.key = f"{model.name}:{st.st_size}:{int(st.st_mtime)}"
        except OSError:
            self.key = model.name

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors for ``texts``, in order.

        Raises:
            ServerError: No engine runs the model, or the engine failed or answered badly.
            ProcessEnded: Its engine could not start, or died.
        """
        body = {"input": list(texts), "encoding_format": "float"}

        async def job(lease: Lease) -> list[list[float]]:
            resp = await lease.server.engine_http().post("/v1/embeddings", json=body, timeout=self.timeout)
            if resp.status_code != 200:
                raise ServerError(T(QT_TRANSLATE_NOOP("Core", "The embedding engine answered {status}."),
                                    status=resp.status_code), details=resp.text[:2000])
            return vectors_of(resp.json(), len(texts))

        ran = await run_along_plan(self.pool, list(self._plan()), self.model, self._settings, job, user=USER,
                                   activity="embedding")
        return ran.value


def vectors_of(answer: Any, count: int) -> list[list[float]]:
    """The unit vectors of an OpenAI ``/v1/embeddings`` answer, in input order.

    Raises:
        ServerError: The answer is not ``count`` vectors.
    """
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ServerError(QT_TRANSLATE_NOOP("Core", "The embedding engine's answer is not what was asked."))
    rows = sorted((d for d in data if isinstance(d, dict)), key=lambda d: int(d.get("index") or 0))
    return [unit([float(x) for x in r.get("embedding") or []]) for r in rows]


def unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero): cosine is then a dot product."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else vector
