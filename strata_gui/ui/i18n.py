"""UI language: picks English or Simplified Chinese and installs the Qt translators for it.

Strata's own strings come from ``resources/translations/strata_<lang>.qm`` (built from the
``.ts`` sources by ``scripts/update-translations.sh``); Qt's standard buttons and dialogs
(OK/Cancel, file dialogs, context menus) come from Qt's ``qtbase_<lang>.qm`` shipped with
PySide6. English is the source language; its small catalogue ``strata_en.qm`` holds only the
plural forms of counted strings.

Strings made by the Qt-free core are translated through :func:`core_text` where they are texts.

The language switches live: a widget that shows translated text registers how it sets that text
with :func:`keep_translated`, and installing another language runs every such setter again, so the
open window reads in the new language without being rebuilt (what the user typed, the open
conversation and running work stay as they are).
"""

from __future__ import annotations

import functools
import inspect
import logging
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QLibraryInfo, QLocale, QObject, QTranslator

from strata_gui.core.config import resources_dir

if TYPE_CHECKING:
    from PySide6.QtWidgets import QComboBox, QLabel

    from strata_gui.core.base import StrataError
    from strata_gui.ui.widgets import PageHeader

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
        # Setters of translated texts, run again after each switch, in the order they were
        # registered (a page's own texts before those of the bubbles it adds later).
        # A bound method is held weakly, so a widget Python owns is not kept alive by this list.
        self._setters: dict[int, Callable[[], Callable[[], object] | None]] = {}
        self._next_key = 0

    def keep(self, owner: QObject, set_texts: Callable[[], object]) -> None:
        """Run ``set_texts`` again after each language switch while ``owner`` lives."""
        key = self._next_key
        self._next_key += 1
        if inspect.ismethod(set_texts):
            self._setters[key] = weakref.WeakMethod(set_texts)
        else:
            self._setters[key] = lambda: set_texts
        owner.destroyed.connect(lambda *_: self._setters.pop(key, None))

    def retranslate(self) -> None:
        """Set every registered text again, in the language now installed."""
        for held in list(self._setters.values()):  # a setter may add widgets that register
            set_texts = held()
            if set_texts is not None:
                set_texts()

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
    again switches language live: the previous translators are removed and every text registered
    with :func:`keep_translated` is set again in the new language.
    """
    translators = translators_of(app)
    language = translators.install(app, resolve_language(setting))
    translators.retranslate()
    return language


def keep_translated(owner: QObject, set_texts: Callable[[], object], *, now: bool = True) -> None:
    """Call ``set_texts`` now (unless ``now`` is False) and again after every language switch while
    ``owner`` lives.

    ``set_texts`` sets the owner's translated texts (``self.tr(...)``, :func:`core_text`) from its
    current state; it must not change that state, so a switch loses nothing.
    """
    if now:
        set_texts()
    app = QCoreApplication.instance()
    if app is not None:
        translators_of(app).keep(owner, set_texts)


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


TextT = TypeVar("TextT")


class LiveTexts:
    """The translated texts of one page or panel, each set again after a language switch.

    A text is bound as the setter that shows it and a function that gives it, so the line that
    built a widget also says how its text follows the language::

        self.texts = LiveTexts(self)
        self.texts.set(self.save_button.setText, lambda: self.tr("Save"))
        form.addRow(self.texts.label(lambda: self.tr("Theme")), self.theme)

    The owner keeps this object (it is held weakly by the language switch).
    """

    def __init__(self, owner: QObject) -> None:
        self._bound: list[tuple[Callable[[Any], object], Callable[[], Any]]] = []
        keep_translated(owner, self._apply)

    def set(self, setter: Callable[[TextT], object], text: Callable[[], TextT]) -> None:
        """Show ``text()`` through ``setter`` now and after every language switch (a text, or
        what the setter takes: a table's header labels, say)."""
        setter(text())
        self._bound.append((setter, text))

    def call(self, set_texts: Callable[[], object]) -> None:
        """Run ``set_texts`` now and after every language switch (texts set together, such as a
        header's title and subtitle)."""
        self.set(lambda _: set_texts(), lambda: "")

    def item(self, combo: QComboBox, text: Callable[[], str], data: object = None) -> None:
        """Add an item to ``combo`` whose text follows the language (its data stays)."""
        combo.addItem("", data)
        self.set(functools.partial(combo.setItemText, combo.count() - 1), text)

    def header(self, title: Callable[[], str], subtitle: Callable[[], str] = str) -> PageHeader:
        """A page's header whose title and subtitle follow the language."""
        from strata_gui.ui.widgets import PageHeader

        header = PageHeader("")
        self.call(lambda: header.set_texts(title(), subtitle()))
        return header

    def label(self, text: Callable[[], str]) -> QLabel:
        """A label showing ``text()`` (a form row's label, say), kept in the installed language."""
        from PySide6.QtWidgets import QLabel

        label = QLabel()
        self.set(label.setText, text)
        return label

    def _apply(self) -> None:
        for setter, text in list(self._bound):
            try:
                setter(text())
            except RuntimeError:  # its widget was deleted since (a row rebuilt): nothing to show
                self._bound.remove((setter, text))
