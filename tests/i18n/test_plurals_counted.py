"""Every counted UI string passes its count to ``tr`` (issue 48: "1 model(s)").

English plurals come from the "(s)" convention: ``tr("%n model(s)", "", n)`` is collected by
``pyside6-lupdate -pluralonly`` and filled by scripts/english-plurals.py, so it reads "1 model"
and "3 models". A "(s)" string translated without its count never gets those forms.
"""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "strata_gui" / "ui"


def _uncounted(tree: ast.AST, rel: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tr"):
            continue
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and "(s)" in first.value \
                and len(node.args) < 3:
            found.append(f"{rel}:{node.lineno}: {first.value!r}")
    return found


def test_every_counted_string_gives_tr_its_count() -> None:
    bad = []
    for path in sorted(UI.rglob("*.py")):
        bad += _uncounted(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(UI)))
    assert not bad, "pass the count: tr(\"%n thing(s)\", \"\", n):\n" + "\n".join(bad)


def test_the_check_finds_an_uncounted_string() -> None:
    code = 'self.tr("Added {0}: {1} model(s).").format(name, n)\nself.tr("%n model(s)", "", n)\n'
    assert _uncounted(ast.parse(code), "x.py") == ["x.py:1: 'Added {0}: {1} model(s).'"]
