"""A module's ``_private`` names are its own: no Strata module imports another's, and the chat's parts
read no other object's private attributes (they talk through public methods and protocols).

Read from the source (ast) of every ``strata_gui`` module, so a new violation fails here whoever adds
it. Dunder names (``__version__``, ``__file__``) are public by convention and allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import strata_gui

PACKAGE = Path(strata_gui.__file__).parent
SOURCE_ROOT = PACKAGE.parent
# Where no object's private attribute may be read but self's / cls's (the chat's parts, issue 42).
OWN_ATTRIBUTES_ONLY = ("strata_gui/core/chat/",)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    """``dotted`` names a Strata module or package."""
    base = SOURCE_ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``from ... import`` statement in ``module`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def by_line(found: Iterator[tuple[int, str]]) -> list[str]:
    return [f"line {line}: {text}" for line, text in sorted(found)]


def private_imports(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """``module``'s uses of another Strata module's private names: ``from X import _name``, and
    ``X._name`` where ``X`` was bound by an import of a Strata module."""
    return by_line(_private_imports(module, ast.parse(source), is_package))


def _private_imports(module: str, tree: ast.Module, is_package: bool) -> Iterator[tuple[int, str]]:
    modules: set[str] = set()  # local names bound to Strata modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = imported_from(node, module, is_package)
            if origin != "strata_gui" and not origin.startswith("strata_gui."):
                continue
            for alias in node.names:
                if is_private(alias.name) and origin != module:
                    yield node.lineno, f"from {origin} import {alias.name}"
                elif is_module(f"{origin}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "strata_gui" or alias.name.startswith("strata_gui."):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules:
                yield node.lineno, ast.unparse(node)


def others_private_attributes(source: str) -> list[str]:
    """Reads of a private attribute of anything but ``self``, ``cls`` or ``super()``."""
    return by_line(_others_private_attributes(ast.parse(source)))


def _others_private_attributes(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not is_private(node.attr):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        yield node.lineno, ast.unparse(node)


def sources() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(SOURCE_ROOT).as_posix(), path


def test_no_module_imports_another_modules_private_names() -> None:
    found = [f"{name} {use}" for name, path in sources()
             for use in private_imports(module_name(path), path.read_text(encoding="utf-8"),
                                        is_package=path.name == "__init__.py")]
    assert not found, "private names used outside their module:\n" + "\n".join(found)


def test_the_chat_reads_no_other_objects_private_attributes() -> None:
    checked = [(name, path) for name, path in sources() if name.startswith(OWN_ATTRIBUTES_ONLY)]
    assert len(checked) >= 10  # the chat's parts are all there (the check would pass on nothing)
    found = [f"{name} {use}" for name, path in checked for use in others_private_attributes(path.read_text("utf-8"))]
    assert not found, "private attributes read from another object:\n" + "\n".join(found)


def test_the_checks_catch_each_kind_of_use() -> None:
    """Each form the checks forbid is found, and each allowed one is left alone."""
    source = """
from strata_gui.core.chat.replies import _Buffer, ReplyBuffer, __doc__
from .service import _helper
from . import store
import strata_gui.core.base.events as events
import strata_gui.core.base.errors
from os import _exit
store._open()
events._name(1)
strata_gui.core.base.errors._tree
store.__file__
"""
    found = private_imports("strata_gui.core.chat.engine", source)
    assert found == [
        "line 2: from strata_gui.core.chat.replies import _Buffer",
        "line 3: from strata_gui.core.chat.service import _helper",
        "line 8: store._open",
        "line 9: events._name",
        "line 10: strata_gui.core.base.errors._tree",
    ]
    # A package's relative import reads from the package itself; a module may use its own names.
    assert private_imports("strata_gui.core.chat", "from .store import _x", is_package=True) == [
        "line 1: from strata_gui.core.chat.store import _x"]
    assert not private_imports("strata_gui.core.chat.store", "from strata_gui.core.chat.store import _x")
    attributes = """
class A:
    def f(self, other):
        self._a = other._b
        super()._c()
        return type(self)._d, self._e._f, cls._g
"""
    assert others_private_attributes(attributes) == [
        "line 4: other._b", "line 6: self._e._f", "line 6: type(self)._d"]
