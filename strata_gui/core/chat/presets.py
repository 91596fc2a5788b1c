"""Presets: a system prompt, sampling, thinking and tools saved under a name.

All presets live in ``presets.json`` in the config folder. One preset is shared as a file of its
own (``{"kind": "strata-preset", "version": 1, "name": ..., "system_prompt": ..., "sampling": {...},
"thinking": {...}, "tools": [...]}``) that :meth:`PresetStore.import_file` reads back, here or on
another machine. Choosing a preset for a conversation copies its settings into that conversation
(later edits change the conversation only); ``tools`` names the tool servers that are switched on
with it (None: the servers stay as they are).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import ChatError, StorageError
from strata_gui.core.base.state_file import UnusableStateFile, load_record, parse_state, write_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.client import SamplingParams

from .records import ThinkingSettings
from .store import ConversationStore

PRESETS_FILE = "presets.json"
PRESET_KIND = "strata-preset"
VERSION = 1
MAX_PRESET_BYTES = 1024 * 1024
MAX_NAME = 80
_HINT_FILE = QT_TRANSLATE_NOOP("Core", "Choose a preset file that Strata exported (.json).")


@dataclass(frozen=True)
class Preset:
    """Settings saved under a name.

    Attributes:
        name: What the picker shows (unique; 1 to 80 characters).
        system_prompt: The system prompt.
        sampling: Temperature, top-p and the rest (None fields: the engine's default).
        thinking: Thinking on/off, effort and budget (None fields: the model's default).
        tools: The tool servers switched on with it; None leaves them as they are.
    """

    name: str
    system_prompt: str = ""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    thinking: ThinkingSettings = field(default_factory=ThinkingSettings)
    tools: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": PRESET_KIND, "version": VERSION, "name": self.name, "system_prompt": self.system_prompt,
                "sampling": self.sampling.to_json(), "thinking": self.thinking.to_json(),
                "tools": list(self.tools) if self.tools is not None else None}

    @classmethod
    def from_json(cls, data: Any) -> Preset:
        """Read a preset; a damaged field reads as its default.

        Raises:
            ChatError: It is not a preset (no usable name).
        """
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ChatError(QT_TRANSLATE_NOOP("Core", "This is not a Strata preset (it has no name)."), hint=_HINT_FILE)
        prompt, tools = data.get("system_prompt"), data.get("tools")
        return cls(check_name(name), prompt if isinstance(prompt, str) else "",
                   SamplingParams.from_json(data.get("sampling")), ThinkingSettings.from_json(data.get("thinking")),
                   tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None)


def check_name(name: str) -> str:
    """``name`` trimmed.

    Raises:
        ChatError: It is empty or longer than 80 characters.
    """
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "A preset needs a name of 1 to {n} characters."), n=MAX_NAME))
    return name


class PresetStore:
    """The saved presets.

    Args:
        path: ``presets.json`` in the config folder.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def presets(self) -> list[Preset]:
        """Every preset, by name. A damaged file is kept aside (see :func:`load_record`)."""
        loaded = load_record(self.path, dict, QT_TRANSLATE_NOOP("Core", "the list of presets"))
        if loaded.unreadable:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The presets file {path} cannot be read."), path=self.path),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the file's permissions."))
        items = loaded.data.get("presets") if isinstance(loaded.data, dict) else None
        found: dict[str, Preset] = {}
        for item in items if isinstance(items, list) else []:
            try:
                preset = Preset.from_json(item)
            except ChatError:
                continue  # one damaged entry does not hide the others
            found[preset.name] = preset
        return sorted(found.values(), key=lambda p: p.name.casefold())

    def get(self, name: str) -> Preset | None:
        return next((p for p in self.presets() if p.name == name), None)

    def require(self, name: str) -> Preset:
        """The preset called ``name``.

        Raises:
            ChatError: There is none.
        """
        preset = self.get(name)
        if preset is None:
            names = ", ".join(p.name for p in self.presets()) or "—"
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "There is no preset called “{name}”."), name=name),
                            hint=T(QT_TRANSLATE_NOOP("Core", "Saved presets: {names}."), names=names))
        return preset

    def save(self, preset: Preset) -> Preset:
        """Add ``preset``, or replace the one of the same name."""
        kept = [p for p in self.presets() if p.name != preset.name] + [preset]
        self._write(kept)
        return preset

    def delete(self, name: str) -> None:
        self._write([p for p in self.presets() if p.name != name])

    def _write(self, presets: list[Preset]) -> None:
        data = {"version": VERSION, "presets": [p.to_json() for p in sorted(presets, key=lambda p: p.name.casefold())]}
        try:
            write_state(self.path, data)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the presets: {reason}"),
                                 reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the config folder is writable.")) from exc

    # -- sharing -------------------------------------------------------------------------------------
    def export_file(self, name: str, path: Path) -> Path:
        """Write the preset ``name`` to ``path`` as a file of its own."""
        preset = self.require(name)
        try:
            path.write_text(json.dumps(preset.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not write {path}: {reason}"), path=path,
                                 reason=exc.strerror or exc)) from exc
        return path

    def import_file(self, path: Path) -> Preset:
        """Read a preset file and save it (replacing a preset of the same name).

        Raises:
            ChatError: The file cannot be read, is too big, or is not a preset (nothing is saved).
        """
        try:
            if path.stat().st_size > MAX_PRESET_BYTES:
                raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{file} is too big for a preset."), file=path.name),
                                hint=_HINT_FILE)
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {file}: {reason}"), file=path,
                              reason=getattr(exc, "strerror", None) or exc), hint=_HINT_FILE) from exc
        try:
            data = parse_state(text, dict)
        except UnusableStateFile as exc:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{file} is not a preset: {reason}"), file=path.name,
                              reason=exc.reason), hint=_HINT_FILE) from exc
        if data.get("kind") != PRESET_KIND:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{file} is not a Strata preset."), file=path.name),
                            hint=_HINT_FILE)
        return self.save(Preset.from_json(data))


def apply_preset(store: ConversationStore, conversation_id: int, preset: Preset) -> None:
    """Give the conversation the preset's system prompt, sampling and thinking."""
    store.update_settings(conversation_id, system_prompt=preset.system_prompt, sampling=preset.sampling,
                          thinking=preset.thinking)


def matching_preset(presets: list[Preset], system_prompt: str, sampling: SamplingParams,
                    thinking: ThinkingSettings) -> Preset | None:
    """The preset whose settings a conversation has now (the picker shows it), if any."""
    return next((p for p in presets if (p.system_prompt, p.sampling, p.thinking) == (system_prompt, sampling, thinking)),
                None)
