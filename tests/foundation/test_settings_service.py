"""SettingsService is the only writer of settings: it validates, saves atomically and tells who cares."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import strata_gui
from strata_gui.core.base.errors import SettingsError
from strata_gui.core.config.settings import Settings, SettingsChange, SettingsService, SettingsStore
from tests.conftest import ListenerErrors

FIELDS = frozenset(f.name for f in dataclasses.fields(Settings))
LIST_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"})


def _service(path: Path, **values: object) -> SettingsService:
    return SettingsService(SettingsStore(path), Settings(**values))  # type: ignore[arg-type]


def _on_disk(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_update_saves_and_reports_only_the_keys_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    svc = _service(path, theme="dark")
    seen: list[SettingsChange] = []
    svc.events.subscribe(seen.append)

    changed = svc.update(theme="dark", context_size=8192, model_dirs=["/models"])

    assert changed == {"context_size", "model_dirs"}
    assert [c.keys for c in seen] == [{"context_size", "model_dirs"}] and seen[0].persisted
    assert seen[0].settings is svc.current and svc.current.context_size == 8192
    saved = _on_disk(path)
    assert (saved["theme"], saved["context_size"], saved["model_dirs"]) == ("dark", 8192, ["/models"])
    assert SettingsService.load(SettingsStore(path)).current == svc.current  # a restart sees the same

    assert svc.update(context_size=8192) == frozenset()
    assert len(seen) == 1  # nothing changed, nobody is told


def test_a_caller_keeping_its_list_cannot_change_the_settings_behind_the_service(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    svc = _service(path)
    dirs = ["/models"]
    svc.update(model_dirs=dirs)
    dirs.append("/elsewhere")
    assert svc.current.model_dirs == ["/models"]
    assert svc.update(theme="light") == {"theme"}
    assert _on_disk(path)["model_dirs"] == ["/models"]


def test_invalid_value_changes_nothing_in_memory_or_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    svc = _service(path)
    svc.update(theme="dark")
    before, seen = path.read_bytes(), []  # type: ignore[var-annotated]
    svc.events.subscribe(seen.append)

    with pytest.raises(SettingsError, match="must start with http"):
        svc.update(theme="light", github_api_url="api.github.com")
    with pytest.raises(SettingsError, match="Unknown setting: colour"):
        svc.update(colour="red")

    assert svc.current.theme == "dark" and svc.current.github_api_url == Settings().github_api_url
    assert path.read_bytes() == before and seen == []


def test_unwritable_folder_is_a_settings_error_with_a_hint_and_memory_is_unchanged(tmp_path: Path) -> None:
    blocker = tmp_path / "config"
    blocker.write_text("a file where the config folder should be")  # no folder can be made here
    svc = _service(blocker / "settings.json", context_size=2048)
    seen: list[SettingsChange] = []
    svc.events.subscribe(seen.append)

    with pytest.raises(SettingsError, match="Could not save settings") as info:
        svc.update(context_size=4096)

    assert "writable" in (info.value.hint or "")
    assert svc.current.context_size == 2048 and seen == []
    assert svc.update(context_size=2048) == frozenset()  # still the old value, still nothing to save


def test_override_is_for_this_session_only(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    svc = _service(path)
    svc.update(context_size=2048)
    seen: list[SettingsChange] = []
    svc.events.subscribe(seen.append)

    assert svc.override(context_size=512, auto_fallback=False) == {"context_size", "auto_fallback"}
    assert svc.current.context_size == 512 and not svc.current.auto_fallback
    assert not seen[0].persisted
    assert _on_disk(path)["context_size"] == 2048

    svc.update(theme="dark")  # a later save of another key keeps the file's values for the overridden ones
    saved = _on_disk(path)
    assert (saved["theme"], saved["context_size"], saved["auto_fallback"]) == ("dark", 2048, True)
    assert svc.current.context_size == 512  # and the session keeps its override
    with pytest.raises(SettingsError):
        svc.override(context_size=-1)
    assert svc.current.context_size == 512


def test_unsubscribe_stops_the_calls_and_a_failing_listener_does_not_stop_others(
        tmp_path: Path, _listener_errors: ListenerErrors) -> None:
    svc = _service(tmp_path / "settings.json")
    first: list[frozenset[str]] = []
    second: list[frozenset[str]] = []

    def broken(_change: SettingsChange) -> None:
        raise RuntimeError("listener bug")

    svc.events.subscribe(broken)
    stop = svc.events.subscribe(lambda c: first.append(c.keys))
    svc.events.subscribe(lambda c: second.append(c.keys))
    svc.update(theme="dark")
    stop()
    stop()  # twice is harmless
    svc.update(theme="light")
    assert first == [{"theme"}]
    assert second == [{"theme"}, {"theme"}]
    assert len(_listener_errors.records) == 2  # the broken listener was reported each time
    _listener_errors.records.clear()  # ... on purpose here


# -- nobody else writes settings ------------------------------------------------------------------


def _is_settings_expr(node: ast.expr, aliases: set[str]) -> bool:
    """``settings``, ``x.settings``, ``x._settings``, ``x.settings_service.current`` or a known alias."""
    if isinstance(node, ast.Name):
        return node.id in aliases or node.id == "settings"
    if isinstance(node, ast.Attribute):
        if node.attr in ("settings", "_settings"):
            return True
        return node.attr == "current" and isinstance(node.value, ast.Attribute) and \
            node.value.attr in ("settings_service", "_settings_service")
    return False


def _aliases(tree: ast.AST) -> set[str]:
    """Names that hold the live Settings: ``s = services.settings`` or a parameter ``s: Settings``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_settings_expr(node.value, set()):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.arg) and isinstance(node.annotation, ast.Name) and node.annotation.id == "Settings":
            names.add(node.arg)
    return names


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        found: list[ast.expr] = []
        for t in node.targets:
            found.extend(t.elts if isinstance(t, ast.Tuple | ast.List) else [t])
        return found
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


def settings_writes(source: str, filename: str = "<src>") -> list[str]:
    """Places in ``source`` that change a Settings field without the settings service."""
    tree = ast.parse(source, filename)
    aliases = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        for target in _targets(node):
            if isinstance(target, ast.Attribute) and target.attr in FIELDS and \
                    _is_settings_expr(target.value, aliases):
                found.append(f"{filename}:{target.lineno}: assigns settings.{target.attr}")
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in ("setattr", "delattr") and node.args and \
                _is_settings_expr(node.args[0], aliases):
            found.append(f"{filename}:{node.lineno}: {fn.id}(settings, ...)")
        elif isinstance(fn, ast.Attribute) and fn.attr in LIST_MUTATORS and isinstance(fn.value, ast.Attribute) \
                and fn.value.attr in FIELDS and _is_settings_expr(fn.value.value, aliases):
            found.append(f"{filename}:{node.lineno}: settings.{fn.value.attr}.{fn.attr}(...)")
    return found


def test_the_scan_finds_each_way_of_writing_a_setting_and_nothing_else() -> None:
    bad = """
def f(self, services, base, s2: Settings):
    self.settings.pinned_engine = "x"
    services.settings.serve_port, other = 1, 2
    base.settings_service.current.theme = "dark"
    self._settings.context_size += 1
    setattr(base.settings, "offline", True)
    s = services.settings
    s.last_model = "m"
    s2.rpc_enabled = True
    settings.model_dirs.append("/m")
"""
    assert sorted(int(line.split(":")[1]) for line in settings_writes(bad)) == [3, 4, 5, 6, 7, 9, 10, 11]
    fine = """
def f(self, sup, settings):
    self.settings_panel = None                # not a settings field
    self.settings = settings                  # holding the object is fine
    sup.settings.api_key = "k"                # a field Settings does not have
    page.theme = QComboBox()                  # a widget, not the settings
    x = settings.rpc_workers + ["a"]          # reading
    settings_service.update(theme="dark")     # the one writer
    workers = list(settings.rpc_workers); workers.append("a")
"""
    assert settings_writes(fine) == []


def test_no_module_outside_core_settings_writes_a_setting() -> None:
    root = Path(strata_gui.__file__).parent
    owner = root / "core" / "config" / "settings.py"
    found = []
    for path in sorted(root.rglob("*.py")):
        if path != owner:
            found += settings_writes(path.read_text(encoding="utf-8"), str(path.relative_to(root.parent)))
    assert found == [], "change settings through SettingsService.update/override:\n" + "\n".join(found)
