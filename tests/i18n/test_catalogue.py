"""The Simplified Chinese catalogue is complete, current, compiled, and keeps every placeholder."""

from __future__ import annotations

import subprocess
from pathlib import Path

from PySide6.QtCore import QTranslator

from strata_gui.core.base import errors
from tests.i18n.conftest import ROOT, ZH_QM, ZH_TS, placeholders, qt_tool, read_ts, ui_sources

FIX = "Run scripts/update-translations.sh, translate what it marks unfinished, and commit the .ts and .qm."


def test_every_zh_cn_message_is_translated() -> None:
    messages = read_ts(ZH_TS)
    assert len(messages) > 300
    bad = [f"  [{m.context}] {m.source!r} ({m.state or 'empty'})" for m in messages
           if m.state in ("unfinished", "vanished", "obsolete") or not all(t.strip() for t in m.translations)]
    assert not bad, f"{len(bad)} untranslated string(s) in {ZH_TS.name}:\n" + "\n".join(bad) + "\n" + FIX


def test_translations_keep_the_placeholders_of_their_source() -> None:
    bad = []
    for m in read_ts(ZH_TS):
        for t in m.translations:
            if t and placeholders(t) != placeholders(m.source):
                bad.append(f"  [{m.context}] {m.source!r}\n      -> {t!r}: "
                           f"{placeholders(m.source)} vs {placeholders(t)}")
    assert not bad, "placeholders differ between source and translation:\n" + "\n".join(bad)


def test_translations_are_chinese() -> None:
    """A translation identical to its English source is only fine for names and units (GPU, Top-p)."""
    copied = [m for m in read_ts(ZH_TS) if m.translations[0] == m.source]
    allowed = {"GPU", "CPU", "CPU %", "PCI", "GitHub API", "Top-p", "Top-k", "Min-p", "tokens/s", "hf_…",
               "OpenAI API", "Ollama API", "Anthropic API"}
    assert {m.source for m in copied} <= allowed, [m.source for m in copied if m.source not in allowed]


def test_catalogue_holds_every_string_in_the_code(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.ts"
    res = subprocess.run([qt_tool("pyside6-lupdate"), *ui_sources(), "-ts", str(fresh), "-target-language",
                          "zh_CN", "-no-obsolete", "-locations", "none"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    in_code = {(m.context, m.source) for m in read_ts(fresh)}
    committed = {(m.context, m.source) for m in read_ts(ZH_TS) if m.state not in ("vanished", "obsolete")}
    assert len(in_code) > 300
    missing = sorted(in_code - committed)
    assert not missing, (f"{ZH_TS.name} is stale: {len(missing)} UI string(s) are not in it:\n"
                         + "\n".join(f"  [{c}] {s!r}" for c, s in missing) + "\n" + FIX)


def test_compiled_catalogue_matches_its_source(tmp_path: Path) -> None:
    rebuilt = tmp_path / "rebuilt.qm"
    res = subprocess.run([qt_tool("pyside6-lrelease"), str(ZH_TS), "-qm", str(rebuilt)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert ZH_QM.read_bytes() == rebuilt.read_bytes(), f"{ZH_QM.name} is older than {ZH_TS.name}. " + FIX


def test_compiled_catalogue_translates_every_message() -> None:
    translator = QTranslator()
    assert translator.load(str(ZH_QM))
    wrong = []
    for m in read_ts(ZH_TS):
        n = 2 if len(m.translations) > 1 or "%n" in m.source else -1
        got = translator.translate(m.context, m.source, None, n)
        if got != m.translations[0]:  # %n is filled in by tr(), not by the translator
            wrong.append(f"  [{m.context}] {m.source!r}: {got!r} != {m.translations[0]!r}")
    assert not wrong, "\n".join(wrong)


def test_every_error_title_has_a_translation() -> None:
    """Error dialogs show the title of the core's error class: each one is in the catalogue."""
    translator = QTranslator()
    assert translator.load(str(ZH_QM))

    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    titles = {c.title for c in subclasses(errors.StrataError) if c.__module__ == errors.__name__}
    assert len(titles) > 10
    untranslated = sorted(t for t in titles if not translator.translate("ErrorDialog", t))
    assert not untranslated, (f"error titles missing from strata_gui/ui/dialogs.py _TITLES: {untranslated}. "
                              + FIX)


def test_english_counts_read_as_english(qapp) -> None:
    """Every counted string reads "1 model" and "3 models" in English, never "1 model(s)"."""
    from PySide6.QtCore import QCoreApplication

    from strata_gui.ui.i18n import install_language

    assert install_language(qapp, "en") == "en"
    counted = [m for m in read_ts(ROOT / "resources/translations/strata_en.ts")]
    assert len(counted) >= 10
    for m in counted:
        for n in (1, 3):
            shown = QCoreApplication.translate(m.context, m.source, None, n)
            assert "(s)" not in shown, (m.source, n, shown)
    assert QCoreApplication.translate("ModelsPage", "%n model(s)", None, 1) == "1 model"
    assert QCoreApplication.translate("ModelsPage", "%n model(s)", None, 3) == "3 models"
