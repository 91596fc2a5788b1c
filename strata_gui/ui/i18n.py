"""UI language: picks English or Simplified Chinese and installs the Qt translators for it.

Strata's own strings come from ``resources/translations/strata_<lang>.qm`` (built from the
``.ts`` sources by ``scripts/update-translations.sh``); Qt's standard buttons and dialogs
(OK/Cancel, file dialogs, context menus) come from Qt's ``qtbase_<lang>.qm`` shipped with
PySide6. English is the source language; its small catalogue ``strata_en.qm`` holds only the
plural forms of counted strings.

Strings made by the Qt-free core are translated through :func:`core_text` where they are texts.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QLibraryInfo, QLocale, QTranslator

from strata_gui.core.config import resources_dir

if TYPE_CHECKING:
    from strata_gui.core.base import StrataError

log = logging.getLogger(__name__)

ENGLISH = "en"
CHINESE = "zh_CN"
#: Languages the UI ships, as stored in ``Settings.language`` (besides "system").
SHIPPED = (ENGLISH, CHINESE)


# Strings of Qt's own dialogs that Qt's catalogue lacks (its zh_CN file dialog said "Files of &type:");
# Strata's catalogue, installed after Qt's and so asked first, holds them under Qt's context.
QT_CATALOGUE_GAPS = (
    QT_TRANSLATE_NOOP("QFileDialog", "Files of &type:"),
    QT_TRANSLATE_NOOP("QFileDialog", "&Look in:"),
)


def translations_dir() -> Path:
    """Folder holding ``strata_<lang>.ts`` and the compiled ``.qm`` files."""
    return resources_dir() / "translations"


def qt_translations_dirs() -> list[Path]:
    """Where Qt's own catalogues (``qtbase_zh_CN.qm`` ...) may be: Qt's configured folder, then
    the PySide6 package's (the layout PyInstaller bundles keep)."""
    import PySide6

    return [Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)),
            Path(PySide6.__file__).parent / "Qt" / "translations"]


def resolve_language(setting: str, system: QLocale | None = None) -> str:
    """The language to show for a ``Settings.language`` value.

    "system" follows the OS locale: any Chinese locale gets Simplified Chinese (closer for
    zh_TW/zh_HK readers than English), everything else English. Unknown values fall back to
    the system choice too.
    """
    if setting in SHIPPED:
        return setting
    locale = system if system is not None else QLocale.system()
    if locale.language() == QLocale.Language.Chinese:
        return CHINESE
    for name in locale.uiLanguages():  # e.g. LANGUAGE=zh_CN:en with an English LC_ALL
        if name.lower().startswith("zh"):
            return CHINESE
        if name.lower().startswith("en"):
            break
    return ENGLISH


class Translators:
    """The translators installed on the application (kept here so they are not collected)."""

    def __init__(self) -> None:
        self.language = ENGLISH
        self.installed: list[QTranslator] = []

    def install(self, app: QCoreApplication, language: str) -> str:
        """Replace the installed translators with those for ``language``; returns the language used.

        Installing sends a LanguageChange event to every widget; widgets built afterwards come
        out in the new language. A missing catalogue is logged and English is used.
        """
        self.remove(app)
        self.language = ENGLISH
        if language == ENGLISH:
            # only the plural forms: "%n model(s)" reads "1 model", "3 models"
            plurals = QTranslator(app)
            if plurals.load(str(translations_dir() / "strata_en.qm")):
                app.installTranslator(plurals)
                self.installed.append(plurals)
            else:
                log.warning("no English plural catalogue in %s; counts read \"1 model(s)\"", translations_dir())
                plurals.deleteLater()
            return ENGLISH
        own = QTranslator(app)
        own_file = translations_dir() / f"strata_{language}.qm"
        if not own.load(str(own_file)):
            log.warning("no UI translation at %s; showing English", own_file)
            own.deleteLater()
            return self.install(app, ENGLISH)
        qt = QTranslator(app)
        if any(qt.load(f"qtbase_{language}", str(folder)) for folder in qt_translations_dirs()):
            app.installTranslator(qt)
            self.installed.append(qt)
        else:
            log.warning("Qt's own %s translation is missing; standard buttons stay English", language)
            qt.deleteLater()
        app.installTranslator(own)
        self.installed.append(own)
        self.language = language
        return language

    def remove(self, app: QCoreApplication) -> None:
        """Uninstall every translator this object installed (back to English)."""
        for t in self.installed:
            app.removeTranslator(t)
            t.deleteLater()
        self.installed.clear()
        self.language = ENGLISH


def install_language(app: QCoreApplication, setting: str) -> str:
    """Install the translators for a ``Settings.language`` value on ``app``; returns the language.

    Call it right after the QApplication exists and before any window is built. Calling it
    again switches language (the previous translators are removed).
    """
    translators = translators_of(app)
    return translators.install(app, resolve_language(setting))


def translators_of(app: QCoreApplication) -> Translators:
    """The :class:`Translators` attached to ``app`` (created on first use)."""
    found = getattr(app, "_strata_translators", None)
    if isinstance(found, Translators):
        return found
    translators = Translators()
    app._strata_translators = translators  # type: ignore[attr-defined]
    return translators


def error_text(error: StrataError) -> str:
    """An error's message and hint on separate lines, in the installed language (what
    :meth:`StrataError.user_text` gives in English)."""
    message, hint = core_text(error.message), core_text(error.hint or "")
    return f"{message}\n{hint}" if hint else message


def error_line(error: StrataError) -> str:
    """An error's message and hint on one line, in the installed language (for a notice bar)."""
    message, hint = core_text(error.message), core_text(error.hint or "")
    return f"{message} {hint}" if hint else message


def core_text(text: str) -> str:
    """A sentence from the core in the installed language.

    A :class:`~strata_gui.core.base.texts.Text` is looked up by its template and filled with its
    arguments (themselves translated when they are texts); a plain sentence is looked up whole;
    what the catalogue lacks stays English.
    """
    from strata_gui.core.base import CONTEXT, Text

    if isinstance(text, Text):
        template = QCoreApplication.translate(CONTEXT, text.template)
        args = {k: core_text(v) if isinstance(v, str) else v for k, v in text.args.items()}
        try:
            return template.format(**args)
        except (KeyError, IndexError, ValueError):  # a translation that lost a field: English is safer
            return str(text)
    return QCoreApplication.translate(CONTEXT, text) if text else text
