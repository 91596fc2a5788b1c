"""Other names for library models (Ollama's ``/api/copy``): a small persisted map, name → file.

A copy in Ollama is a second name for the same weights (its blobs are shared), so here it is a
name, never a second file: ``model_aliases.json`` in the config folder maps each name to the file
it stands for. A name whose file is gone (deleted, its folder removed from Settings) is dropped the
next time the library is listed.

The map is kept in memory: the local API asks it on the event loop at every ``/api/copy`` and
``/api/delete``; the file is read again only by :meth:`ModelAliases.prune`, which the router runs
off the loop each time it lists the library.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

from strata_gui.core.base.errors import ModelError, StorageError
from strata_gui.core.base.state_file import UnusableStateFile, read_state, write_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

log = logging.getLogger(__name__)

# What a name may be: Ollama's "namespace/model:tag" characters, no path tricks, not too long.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/:]{0,199}")


def check_alias(name: str) -> str:
    """``name`` when it can be a model's other name.

    Raises:
        ModelError: Empty, too long, or with characters a model name cannot have.
    """
    if not _NAME.fullmatch(name) or ".." in name or "//" in name:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "'{name}' cannot be a model name."), name=name[:80]),
                         hint=QT_TRANSLATE_NOOP("Core", "Use letters, digits and . _ - / : (at most 200)."))
    return name


class ModelAliases:
    """The user's other names for library models, kept in ``path`` (JSON ``{"name": "/file.gguf"}``).

    Args:
        path: The file (created on the first :meth:`add`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._names: dict[str, Path] | None = None  # None: not read yet
        self._lock = threading.Lock()  # prune runs on a worker thread, add/remove on the loop

    def names(self) -> dict[str, Path]:
        """Every name and its file (read from the file the first time; a damaged file reads as none, and is logged)."""
        with self._lock:
            if self._names is None:
                self._names = self._read()
            return dict(self._names)

    def _read(self) -> dict[str, Path]:
        try:
            data = read_state(self.path, dict)
        except (UnusableStateFile, OSError) as exc:
            log.warning("model aliases unreadable (%s): %s", self.path, exc)
            return {}
        if data is None:
            return {}
        return {k: Path(v) for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and _NAME.fullmatch(k)}

    def add(self, name: str, target: Path) -> None:
        """Name ``target`` also ``name`` (an existing name is pointed at ``target``).

        Raises:
            ModelError: Not a valid name.
            StorageError: The map could not be saved (nothing changed).
        """
        names = self.names()
        names[check_alias(name)] = target
        self._save(names)

    def remove(self, name: str) -> bool:
        """Forget ``name``; whether it was there.

        Raises:
            StorageError: The map could not be saved.
        """
        names = self.names()
        if names.pop(name, None) is None:
            return False
        self._save(names)
        return True

    def prune(self) -> dict[str, Path]:
        """The names whose file still exists, read again from the file (the others are forgotten,
        saved when any was). Reads the disk: call it off the event loop."""
        names = self._read()
        kept = {k: v for k, v in names.items() if v.exists()}
        with self._lock:
            self._names = kept
        if len(kept) != len(names):
            try:
                self._save(kept)
            except StorageError as exc:
                log.warning("could not drop stale model aliases: %s", exc)
        return kept

    def _save(self, names: dict[str, Path]) -> None:
        try:
            write_state(self.path, {k: str(v) for k, v in sorted(names.items())})
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the model names: {reason}"),
                                 reason=str(exc.strerror or exc))) from exc
        with self._lock:
            self._names = dict(names)
