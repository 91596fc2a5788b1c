"""What a model file's header says, kept across runs: a start reads no header it read before.

Every engine start needs three facts about its model: its identity (the key of its saved load
options; hashing reads up to 2 MiB), its shape (the memory check) and what its chat template
supports. Each is read from the GGUF header, and walking a header means skipping every string of
the vocabulary: ~6 ms for 32k tokens, ~30 ms for Qwen3's 151k, ~50 ms for Gemma's 262k on 2
cores, once per fact. Those reads came before the first token of every first message after a
start (the app's, ``strata chat``'s, the local API's).

The facts are kept in one small JSON file in the cache folder, under the file's resolved path,
size and modification time (a changed or replaced file is read again). The file is a cache: a
damaged, unreadable or unwritable one only means the headers are read, never a failed start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from strata_gui.core.base.state_file import load_cache

log = logging.getLogger(__name__)

FACTS_VERSION = 1  # bump when what a fact holds changes: older files are then ignored
MAX_MODELS = 256  # file versions kept (the least recently stored go first)

T = TypeVar("T")
_MISSING = object()


def file_key(model: Path) -> str:
    """The key of this version of ``model``: resolved path, size and modification time.

    Raises:
        OSError: the file cannot be looked at.
    """
    st = model.stat()
    return f"{model.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def to_json(value: Any) -> Any:
    """A fact as JSON: a dataclass as a dict of its fields (tuples become lists); None as None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return value


def dataclass_from_json(cls: type[T]) -> Callable[[Any], T | None]:
    """The reader of a fact stored with :func:`to_json` for dataclass ``cls``: None keeps None;
    lists become tuples (the facts' sequences are tuples). Raises ValueError for a stored value that
    does not have exactly ``cls``' fields (written by another version): it is read again."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    def read(raw: Any) -> T | None:
        if raw is None:
            return None
        if not isinstance(raw, dict) or set(raw) != names:
            raise ValueError(f"not a stored {cls.__name__}")
        return cls(**{k: _tuples(v) for k, v in raw.items()})

    return read


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


class ModelFacts:
    """Facts about model files, read once per file version and kept in ``path`` (JSON).

    Thread-safe: the facts are read on worker threads (:func:`run_blocking`).
    """

    def __init__(self, path: Path, *, limit: int = MAX_MODELS) -> None:
        self.path = path
        self._limit = limit
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] | None = None  # read on first use

    def get(self, model: Path, kind: str, read: Callable[[Path], T],
            decode: Callable[[Any], T] = lambda raw: raw) -> T:
        """``kind`` of ``model``: the stored fact, or ``read(model)`` (then stored).

        ``read`` raises what it raises (a damaged header: nothing is stored); ``decode`` turns the
        stored JSON back into the fact (its ValueError or TypeError means: read it again).

        Raises:
            OSError: ``model`` cannot be looked at.
        """
        key = file_key(model)
        with self._lock:
            raw = self._load().get(key, {}).get(kind, _MISSING)
        if raw is not _MISSING:
            try:
                return decode(raw)
            except (ValueError, TypeError):
                log.info("model facts: the stored %s of %s is outdated; reading it again", kind, model.name)
        value = read(model)
        with self._lock:
            entries = self._load()
            entry = entries.pop(key, {})  # re-inserted last: the most recently stored
            entry[kind] = to_json(value)
            entries[key] = entry
            while len(entries) > self._limit:
                entries.pop(next(iter(entries)))
            self._save(entries)
        return value

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, dict[str, Any]]:
        raw = load_cache(self.path, dict)  # damaged: headers are read again
        if raw is None or raw.get("version") != FACTS_VERSION or not isinstance(raw.get("models"), dict):
            return {}
        return {k: v for k, v in raw["models"].items() if isinstance(k, str) and isinstance(v, dict)}

    def _save(self, entries: dict[str, dict[str, Any]]) -> None:
        # Another Strata process may save at the same time: each writes its own temporary file,
        # and the last complete file wins (both hold facts that are true).
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"version": FACTS_VERSION, "models": entries}), encoding="utf-8")
            os.replace(tmp, self.path)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("model facts: could not save %s (%s); they are kept for this run", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
