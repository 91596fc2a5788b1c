"""The model a chat answers with, and what it is: how it loads, what its template and saved options
say, whether it sees images, and whether the engine parses its chat format."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from strata_gui.core.base import texts
from strata_gui.core.base.errors import ChatError, SettingsError, StrataError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.models.library import find_projector
from strata_gui.core.models.load_options import LoadOptions
from strata_gui.core.runtime.launch import ServerSettings

from .events import RemoteEngine, TemplateInfo

log = logging.getLogger(__name__)


def no_model() -> ChatError:
    """The error of a chat asked to answer before a model was chosen."""
    return ChatError(QT_TRANSLATE_NOOP("Core", "No model chosen."),
                     hint=QT_TRANSLATE_NOOP("Core", "Pick a GGUF model in the header first."))


class ChatModel:
    """The chat's model (or the remote endpoint that answers instead) and what it takes.

    Args:
        settings_service: User settings (the defaults to launch with; the last model is kept there).
        launch_settings: How to launch a model (its saved load options); without it, Settings'.
        model_options: A model's saved options (its reply limit, thinking, chat-format parsing);
            without it, the defaults.
        template: What the model's chat template supports (tools, past reasoning); None when unknown.

    Attributes:
        path: The GGUF the chat answers with (None: none chosen yet); at first the one last chosen.
        remote: When set, replies go there instead of a local engine.
        template: As given (read once per model).
    """

    def __init__(
        self,
        settings_service: SettingsService,
        *,
        launch_settings: Callable[[Path], ServerSettings] | None = None,
        model_options: Callable[[Path], LoadOptions] | None = None,
        template: Callable[[Path], Awaitable[TemplateInfo | None]] | None = None,
    ) -> None:
        self.settings_service = settings_service
        last = settings_service.current.last_model
        self.path: Path | None = Path(last) if last else None
        self.remote: RemoteEngine | None = None
        self.template = template
        self._launch_settings = launch_settings
        self._model_options = model_options
        self._templates: dict[Path, TemplateInfo | None] = {}
        self._unparsed: set[Path] = set()  # models answering one retry without chat-format parsing
        self._projector_key: tuple[Path, int] | None = None
        self._projector: Path | None = None

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: changes go through ``settings_service``)."""
        return self.settings_service.current

    def remember(self) -> None:
        """Save the model as the one to open next time (``Settings.last_model``)."""
        if self.path is None:
            return
        try:
            self.settings_service.update(last_model=str(self.path))
        except SettingsError:
            # Remembering is a convenience: a read-only config folder must not stop the chat.
            log.warning("could not remember the chosen model", exc_info=True)

    @property
    def projector(self) -> Path | None:
        """The chosen model's vision projector (``mmproj`` next to it), loaded with the model.

        The folder is listed again only when it changed (its modification time): a projector
        downloaded later is still found, and a message does not pay for listing a big folder.
        """
        if self.path is None:
            return None
        try:
            key = (self.path, self.path.parent.stat().st_mtime_ns)
        except OSError:
            return None
        if key != self._projector_key:
            self._projector_key, self._projector = key, find_projector(self.path)
        return self._projector

    @property
    def accepts_images(self) -> bool:
        """Whether a message may carry images: the local model has a projector, or replies go to
        a remote endpoint (which answers for itself whether its model sees images)."""
        return self.remote is not None or self.projector is not None

    def check_images_accepted(self) -> None:
        """Raise unless images can be sent (so a caller can refuse before loading anything).

        Raises:
            ChatError: The local model has no vision projector.
        """
        if not self.accepts_images:
            name = self.path.name if self.path is not None else QT_TRANSLATE_NOOP("Core", "This model")
            raise ChatError(texts.T(QT_TRANSLATE_NOOP("Core", "{model} cannot see images: no vision projector (mmproj) "
                                                        "was found next to it."), model=name),
                            hint=QT_TRANSLATE_NOOP("Core", "Download a vision model from the Models page (its "
                                                           "projector comes with it), or put its mmproj-*.gguf "
                                                           "file in the model's folder."))

    @property
    def context_size(self) -> int:
        """The context the model's next load will have: its load options', else Settings'."""
        if self._launch_settings is not None and self.path is not None:
            try:
                return self._launch_settings(self.path).ctx_size
            except OSError:  # the model file went away: the meter falls back to Settings
                pass
        return self.settings.context_size

    def launch_settings(self) -> ServerSettings:
        """What the next engine start uses for the current model: its load options (else Settings'),
        plus ``--mmproj`` when the model has a projector.

        Raises:
            OSError: the model file cannot be read (its load options are keyed by its identity).
        """
        if self._launch_settings is not None and self.path is not None:
            settings = self._launch_settings(self.path)
        else:
            settings = ServerSettings.from_settings(self.settings)
        projector = self.projector
        if projector is not None:
            settings = dataclasses.replace(settings, mmproj=str(projector))
        if self.path in self._unparsed:
            settings = dataclasses.replace(settings, chat_parsing=False)
        return settings

    def launch_settings_or_default(self) -> ServerSettings:
        """:meth:`launch_settings`, or the defaults when the model file cannot be read."""
        try:
            return self.launch_settings()
        except OSError:
            return ServerSettings()

    def model_options(self) -> LoadOptions:
        """The chat model's options (reply limit, thinking, chat-format parsing): saved, else defaults."""
        if self._model_options is not None and self.path is not None:
            try:
                return self._model_options(self.path)
            except OSError:  # the file went away: the launch reports it
                pass
        return LoadOptions()

    def reply_options(self) -> LoadOptions:
        """The model options a reply follows: the chat model's, or the defaults for a remote engine."""
        return self.model_options() if self.remote is None else LoadOptions()

    async def template_info(self) -> TemplateInfo | None:
        """What the chat model's template supports (None: unknown, or replies go to a remote engine).

        Read from the model's header off the loop once per model, then remembered."""
        model = self.path
        if self.template is None or model is None or self.remote is not None:
            return None
        if model not in self._templates:
            try:
                self._templates[model] = await self.template(model)
            except (OSError, StrataError):  # an unreadable header: nothing special is assumed
                log.warning("could not read the chat template of %s", model, exc_info=True)
                self._templates[model] = None
        return self._templates[model]

    @contextlib.contextmanager
    def without_format_parsing(self) -> Iterator[None]:
        """While this lasts, the model is loaded with the engine's chat-format parsing off
        (llama-server's ``--skip-chat-parsing``): one retry of a reply that broke its format. The
        model's saved options are left alone; the lasting switch is its load options' ``chat_parsing``.

        Raises:
            ChatError: Replies go to a remote engine (its chat format is the server's to change),
                or no model is chosen.
        """
        if self.remote is not None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "A remote engine's chat-format parsing cannot be changed "
                                                      "from here."),
                            hint=QT_TRANSLATE_NOOP("Core", "Change it on the server that runs the model."))
        model = self.path
        if model is None:
            raise no_model()
        self._unparsed.add(model)
        try:
            yield
        finally:
            self._unparsed.discard(model)

    def checked_launch_settings(self) -> ServerSettings:
        """:meth:`launch_settings`, with an unreadable model file as a clear error.

        Raises:
            ChatError: The model file cannot be read.
        """
        try:
            return self.launch_settings()
        except OSError as exc:
            raise ChatError(texts.T(QT_TRANSLATE_NOOP("Core", "Cannot read the model file: {reason}."),
                              reason=str(exc.strerror or exc)),
                            hint=QT_TRANSLATE_NOOP("Core", "Choose the model again in the header.")) from exc
