"""Package surfaces whose modules load on first use (PEP 562).

A core package's ``__init__`` re-exports its public names so the UI and the CLI import them from
one place. Importing them all eagerly made ``import strata_gui.core.models.library`` (one small
module the chat needs) load the hub client, the download manager and the GPU probes too: start-up
imported ~250 modules before the chat page could show. With :func:`lazy_exports` a package's
``__init__`` stays the public surface (same names, same ``from pkg import Name``) but each
module runs only when one of its names is first read.

Usage in a package ``__init__`` (the ``TYPE_CHECKING`` imports give type checkers the names; a
test checks they match the map)::

    if TYPE_CHECKING:
        from strata_gui.core.rpc.service import RpcPool

    __all__ = ["RpcPool"]
    __getattr__, __dir__ = lazy_exports(__name__, {"service": ["RpcPool"]})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, modules: Mapping[str, list[str]]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package that exports names from its modules lazily.

    Args:
        package: The package's ``__name__``.
        modules: Each submodule (relative name) and the names the package exports from it.

    Returns:
        ``(__getattr__, __dir__)`` to assign at the package's module level.
    """
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # later reads are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
