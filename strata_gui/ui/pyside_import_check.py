"""A cheaper answer to the question PySide6 asks of every module imported after it.

PySide6 (PYSIDE-2029) records, for each module imported once it is loaded, whether the module's
source mentions "PySide6", so that its opt-in ``from __feature__ import snake_case`` switches apply
per module. It finds out with ``inspect.getsource``, which decodes and splits the whole file and
keeps every line in ``linecache``: ~0.08 ms a module, ~20 ms of the ~250 modules Strata imports
between its first paint and a usable window (cProfile of start-up). Reading the file's bytes
answers the same question in a quarter of the time and keeps nothing in memory. Strata uses no
``__feature__`` switch; the answer stays exactly what PySide6 would compute, so one would still work.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

_MARK = "_strata_bytes_check"


def uses_pyside_by_bytes(original: Callable[[ModuleType], bool]) -> Callable[[ModuleType], bool]:
    """PySide6's check, answered from the file's bytes for plain ``.py`` modules.

    Args:
        original: PySide6's own check, still used for modules without a ``.py`` file (built-in,
            extension, or bundled modules), where it returns quickly.
    """

    def mod_uses_pyside(module: ModuleType) -> bool:
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py"):
            try:
                with open(file, "rb") as source:
                    return b"PySide6" in source.read()
            except OSError:
                pass
        return bool(original(module))

    setattr(mod_uses_pyside, _MARK, original)
    return mod_uses_pyside


def install() -> bool:
    """Use :func:`uses_pyside_by_bytes` for the modules imported from now on.

    Returns:
        True if it is in place; False if this PySide6 has no such check (nothing is changed).
    """
    feature = sys.modules.get("shibokensupport.feature")
    original = getattr(feature, "_mod_uses_pyside", None)
    if feature is None or not callable(original):
        return False
    if not hasattr(original, _MARK):
        feature._mod_uses_pyside = uses_pyside_by_bytes(original)  # type: ignore[attr-defined]
    return True
