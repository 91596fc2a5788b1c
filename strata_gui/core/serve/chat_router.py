"""The chat's one engine as a :class:`ModelRouter`, for as long as there is no engine pool.

``strata serve --model M`` and the Network page serve the model chosen in the chat, on the same
engine the Chat page uses (started on the first request). Whatever model name a client sends is
answered by that model, as the local API always did: clients that insist on a name of their own
("gpt-4o", "local") keep working. Only the text kind is served.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from strata_gui.core.blocking import run_blocking
from strata_gui.core.chat.service import ChatService
from strata_gui.core.errors import UnknownModelError
from strata_gui.core.models.gguf_meta import quant_from_filename
from strata_gui.core.models.library import SOURCE_OPENED, describe_model
from strata_gui.core.runtime.supervisor import ServerState
from strata_gui.core.serve.catalog import details_of, file_id
from strata_gui.core.serve.router import KIND_TEXT, LLAMA_TEXT_APIS, LoadedModel, ServedModel, Upstream

_Key = tuple[Path, int, int]  # path, size, mtime_ns


class ChatRouter:
    """Lends the chat's engine (one model, the text kind) to the local API.

    Args:
        chat: The chat service whose model and engine are served.
        clock: Monotonic clock (idle time in :meth:`loaded`).
    """

    def __init__(self, chat: ChatService, clock: Callable[[], float] = time.monotonic) -> None:
        self._chat = chat
        self._clock = clock
        self._busy = 0
        self._last_used = clock()
        self._unload_when_idle = False
        self._details: dict[_Key, dict[str, Any]] = {}

    def _key(self) -> _Key | None:
        path = self._chat.model
        if path is None:
            return None
        try:
            st = path.stat()
        except OSError:
            return None
        return (path, st.st_size, st.st_mtime_ns)

    def models(self) -> Sequence[ServedModel]:
        key = self._key()
        if key is None:
            return []
        path, size, mtime_ns = key
        details = self._details.get(key)
        if details is None:  # not read yet (refresh() reads it): what the name tells
            quant = quant_from_filename(path.name)
            details = {"format": "gguf", "capabilities": ["completion"],
                       **({"quantization_level": quant} if quant else {})}
        return [ServedModel(id=file_id(path), kind=KIND_TEXT, path=path, size_bytes=size, modified=mtime_ns / 1e9,
                            details=details)]

    async def refresh(self) -> None:
        key = self._key()
        if key is None or key in self._details:
            return
        entry = await run_blocking(describe_model, key[0], SOURCE_OPENED, name="strata-serve-describe")
        self._details = {key: details_of(entry, KIND_TEXT)}

    @asynccontextmanager
    async def borrow(self, model_id: str, *, kind: str | None = None,
                     keep_alive: float | None = None) -> AsyncIterator[Upstream]:
        if kind not in (None, KIND_TEXT):
            raise UnknownModelError(f"No {kind} model is served here: only the chat's model, for text.",
                                    hint="Serve an embedding or image model from the engine pool.")
        if self._chat.model is None:
            raise UnknownModelError("No model chosen.", hint="Pick a GGUF model in the header first (or pass --model).")
        await self.refresh()
        client = await self._chat.ensure_engine()
        sup = self._chat.supervisor
        spec = self._chat.engine
        served = self.models()
        if sup is None or not served:
            raise UnknownModelError("No model chosen.", hint="Pick a GGUF model in the header first (or pass --model).")
        up = Upstream(base_url=client.base_url, api_key=sup.settings.api_key, model=served[0], apis=LLAMA_TEXT_APIS,
                      engine=spec.label if spec else "", backend=str(spec.backend) if spec else "")
        self._busy += 1
        if keep_alive == 0:
            self._unload_when_idle = True
        try:
            yield up
        finally:
            self._busy -= 1
            self._last_used = self._clock()
            if self._busy == 0 and self._unload_when_idle:
                self._unload_when_idle = False
                await self._chat.stop_engine()

    def loaded(self) -> Sequence[LoadedModel]:
        served = self.models()
        if self._chat.engine_state is not ServerState.READY or not served:
            return []
        spec = self._chat.engine
        idle = 0.0 if self._busy else max(0.0, self._clock() - self._last_used)
        # The file's size is what the weights take; the chat's engine has no idle unload (expires: never).
        return [LoadedModel(model=served[0], memory_bytes=served[0].size_bytes, busy=self._busy, idle_s=idle,
                            expires_in_s=None, engine=spec.label if spec else "")]

    async def unload(self, model_id: str) -> None:
        if self._busy:
            self._unload_when_idle = True
            return
        await self._chat.stop_engine()
