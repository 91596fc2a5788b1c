"""Shape rules of the code itself: short functions, and one way for core to announce changes.

Both read the source with :mod:`ast` (as the project's before-stop hook counts lines), so they
fail on the commit that breaks the rule, naming the place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import strata_gui

PACKAGE = Path(strata_gui.__file__).parent
CORE = PACKAGE / "core"
MAX_LINES = 80

# Functions other engineers are rewriting now (issue 42 part 2, issue 41's scheduler); the
# integrator removes each entry when its rewrite lands. Nothing else may grow past the limit.
LONG_FUNCTION_EXCEPTIONS: set[tuple[str, str]] = set()

# Names of the second ways to listen that issue 42 removed from core: listeners subscribe to a
# ``core.events.Listeners`` attribute (``service.events.subscribe(fn)``), which returns the unsubscribe.
OWN_LISTENER_METHODS = {"add_listener", "remove_listener", "subscribe", "unsubscribe"}
OWN_LISTENER_EXCEPTIONS: set[str] = set()


def _sources(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function with its dotted name (``Class.method``, ``outer.inner``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield name, child
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix + child.name + ".")
        else:
            yield from _functions(child, prefix)


def _long_functions() -> dict[tuple[str, str], int]:
    found = {}
    for rel, tree in _sources(PACKAGE):
        for name, fn in _functions(tree):
            lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if lines > MAX_LINES:
                found[(rel, name)] = lines
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    long = _long_functions()
    new = {f"{rel} {name}: {lines} lines": lines for (rel, name), lines in long.items()
           if (rel, name) not in LONG_FUNCTION_EXCEPTIONS}
    assert not new, f"split these into named steps (at most {MAX_LINES} lines each): {sorted(new)}"


def test_every_long_function_exception_is_still_needed() -> None:
    # Once a rewrite lands (the function is gone, renamed or short), its exception must go too,
    # or it would excuse whatever grows there next.
    stale = LONG_FUNCTION_EXCEPTIONS - set(_long_functions())
    assert not stale, f"remove these from LONG_FUNCTION_EXCEPTIONS: {sorted(stale)}"


def _own_listener_code(rel: str, tree: ast.Module) -> Iterator[str]:
    """Places in one core module that keep listeners some other way than ``Listeners``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and rel not in OWN_LISTENER_EXCEPTIONS:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in OWN_LISTENER_METHODS:
                    yield f"{rel}:{item.lineno} def {node.name}.{item.name}"
        elif isinstance(node, ast.ImportFrom) and node.module == "strata_gui.core.base.events":
            # The bare ``emit(list, ...)`` is how a hand-kept list of callbacks is called.
            if any(alias.name == "emit" for alias in node.names):
                yield f"{rel}:{node.lineno} imports core.events.emit (keep a Listeners instead)"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if ("listener" in name.lower() or "subscriber" in name.lower()) and isinstance(node.value, ast.List):
                    yield f"{rel}:{node.lineno} {name} = [...]"


def test_core_announces_changes_only_through_listeners() -> None:
    found = [place for rel, tree in _sources(CORE) if rel != "core/base/events.py"
             for place in _own_listener_code(rel, tree)]
    assert not found, ("announce changes through a core.events.Listeners attribute "
                       f"(service.events.subscribe(fn) returns the unsubscribe): {found}")


def test_the_listener_check_finds_the_old_ways() -> None:
    old = ast.parse(
        "from strata_gui.core.base.events import emit\n"
        "class Store:\n"
        "    def __init__(self):\n"
        "        self._listeners: list = []\n"
        "    def add_listener(self, fn):\n"
        "        self._listeners.append(fn)\n")
    found = sorted(place.split(" ", 1)[0] for place in _own_listener_code("core/example.py", old))
    assert found == ["core/example.py:1", "core/example.py:4", "core/example.py:5"]


def test_the_chat_service_parts_stay_at_most_400_lines() -> None:
    """Issue 42 split the chat service (once 1,275 lines) into parts with explicit interfaces; a
    part that grows past 400 lines is split again rather than becoming the next big file."""
    long = {path.name: n for path in sorted((CORE / "chat").glob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"split these chat modules (at most 400 lines each): {long}"
