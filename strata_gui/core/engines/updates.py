"""What engine updates decided: the build in use per kind and family, the last good one, builds on
trial or refused, builds marked bad for a model, and the history of every trial, promotion and
rollback.

Kept as one small JSON file in the engines folder (it travels with the engines). The resolver
reads it so a promotion or rollback changes which build runs; ``gc`` reads it so the last good
build is never deleted. The trial itself (probe, load, benchmark, format check) runs in
:mod:`strata_gui.core.bench.updates`, which needs the engine pool.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base import texts
from strata_gui.core.base.errors import EngineError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.state_file import load_record
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.engines.records import InstalledEngine

log = logging.getLogger(__name__)

LEDGER_FILE = "strata-updates.json"
HISTORY_LIMIT = 300
MAX_EPOCH = 32_503_680_000  # 3000-01-01: a history time past it (or NaN) cannot be shown as a date

# What a history entry records (``UpdateEntry.action``).
TRIAL_PASSED = "trial passed"  # --trial-only: it would have been promoted
PROMOTED = "promoted"
REFUSED = "refused"
ROLLED_BACK = "rolled back"
AUTO_ROLLED_BACK = "rolled back automatically"
NOT_FINISHED = "not finished"  # the trial was stopped (signal, Cancel) or its process ended during it


def _saved_texts(values: dict[str, str]) -> dict[str, Any]:
    """The :class:`~strata_gui.core.base.texts.Text` values of ``values`` with their templates (the JSON
    keeps the English too), so a sentence read back after a restart is still translated."""
    return {k: texts.to_json(v) for k, v in values.items() if isinstance(v, texts.Text)}


def _read_text(english: str, saved: Any) -> str:
    """``english`` as the :class:`~strata_gui.core.base.texts.Text` ``saved`` holds when that still reads
    the same (a record edited by hand or damaged keeps its English)."""
    if saved is None:
        return english
    try:
        text = texts.from_json(saved)
    except (KeyError, TypeError, ValueError, IndexError):
        return english
    return text if text == english else english


def engine_group(kind: str, source: str, backend: str, family: str | None) -> str:
    """The key builds replace each other under: kind, source, backend and ROCm family."""
    return f"{kind}:{source}:{backend}:{family or ''}"


def group_of(engine: InstalledEngine) -> str:
    """:func:`engine_group` of an installed engine."""
    return engine_group(engine.kind.name, engine.source, engine.backend, engine.family)


@dataclass(frozen=True)
class UpdateEntry:
    """One line of the update history.

    Attributes:
        at: Epoch seconds.
        action: :data:`PROMOTED`, :data:`REFUSED`, :data:`TRIAL_PASSED`, :data:`ROLLED_BACK`,
            :data:`AUTO_ROLLED_BACK` or :data:`NOT_FINISHED`.
        group: The kind and family (:func:`engine_group`).
        engine: The build the entry is about (the candidate; the build restored by a rollback).
        previous: The build it was compared with, or the one a rollback replaced.
        message: The sentence a user reads.
        figures: Measured numbers (``prefill_tps``, ``decode_tps``, ``previous_prefill_tps`` ...).
        model: The model the trial used, or whose load failed ("" when none).
    """

    at: float
    action: str
    group: str
    engine: str
    previous: str
    message: str
    figures: dict[str, float] = field(default_factory=dict)
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"at": self.at, "action": self.action, "group": self.group, "engine": self.engine,
                "previous": self.previous, "message": self.message, "figures": dict(self.figures),
                "model": self.model}
        if isinstance(self.message, texts.Text):  # read back, the sentence is still translated
            data["message_text"] = texts.to_json(self.message)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UpdateEntry:
        figures = data.get("figures") or {}
        message = _read_text(str(data.get("message", "")), data.get("message_text"))
        at = data.get("at", 0.0)
        if not isinstance(at, int | float) or not 0 <= at < MAX_EPOCH:  # shown as a date: must be one
            at = 0.0
        return cls(float(at), str(data.get("action", "")), str(data.get("group", "")),
                   str(data.get("engine", "")), str(data.get("previous", "")), message,
                   {str(k): float(v) for k, v in dict(figures).items() if isinstance(v, int | float)},
                   str(data.get("model", "")))


@dataclass
class _State:
    active: dict[str, str] = field(default_factory=dict)  # group -> build in use
    last_good: dict[str, str] = field(default_factory=dict)  # group -> build kept for rollback
    on_trial: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # build -> why
    bad: list[dict[str, str]] = field(default_factory=list)  # {engine, model_key, gpu, reason}
    history: list[UpdateEntry] = field(default_factory=list)
    # build on trial -> the process trying it and what it replaces (:func:`_trial_owner`)
    trials: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": 1, "active": self.active, "last_good": self.last_good, "on_trial": self.on_trial,
            "refused": self.refused, "bad": self.bad, "history": [h.to_json() for h in self.history],
            "trials": self.trials}
        refused_texts = _saved_texts(self.refused)
        if refused_texts:
            data["refused_text"] = refused_texts
        bad_texts = {str(i): texts.to_json(b["reason"]) for i, b in enumerate(self.bad)
                     if isinstance(b.get("reason"), texts.Text)}
        if bad_texts:
            data["bad_text"] = bad_texts
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _State:
        def strmap(value: Any) -> dict[str, str]:
            return {str(k): str(v) for k, v in dict(value or {}).items()}

        saved = data.get("refused_text")
        refused_texts: dict[str, Any] = saved if isinstance(saved, dict) else {}
        refused = {k: _read_text(v, refused_texts.get(k)) for k, v in strmap(data.get("refused")).items()}
        saved = data.get("bad_text")
        bad_texts: dict[str, Any] = saved if isinstance(saved, dict) else {}
        bad = [strmap(b) for b in data.get("bad") or [] if isinstance(b, dict)]
        for i, mark in enumerate(bad):  # the index counts the marks as written (all dicts)
            if "reason" in mark:
                mark["reason"] = _read_text(mark["reason"], bad_texts.get(str(i)))
        trials = data.get("trials")
        return cls(strmap(data.get("active")), strmap(data.get("last_good")),
                   [str(x) for x in data.get("on_trial") or []], refused, bad,
                   [UpdateEntry.from_json(h) for h in data.get("history") or [] if isinstance(h, dict)],
                   {str(k): v for k, v in trials.items() if isinstance(v, dict)} if isinstance(trials, dict) else {})

    def unfinished(self, engine_id: str) -> UpdateEntry | None:
        """The entry saying ``engine_id``'s trial did not finish, when that is the last word on it."""
        for entry in reversed(self.history):
            if entry.engine == engine_id:
                return entry if entry.action == NOT_FINISHED else None
        return None


def _trial_owner(group: str, tag: str, previous: str, previous_tag: str) -> dict[str, Any]:
    """Who is trying a build: this process (its id and start time, so a reused id is not taken
    for it) and what the build would replace (for the sentence if the process ends mid-trial)."""
    return {"pid": os.getpid(), "started": _started(os.getpid()), "group": group, "tag": tag,
            "previous": previous, "previous_tag": previous_tag}


def _started(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds); None when there is no such process."""
    import psutil  # loaded only where a trial is running or recorded (~8 ms)

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _owner_alive(owner: dict[str, Any] | None) -> bool:
    """Whether the process that began a trial still runs (a record without one: it does not)."""
    if not owner:
        return False
    pid, started = owner.get("pid"), owner.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return False
    if not isinstance(started, int | float):  # its start time could not be read: only this process can tell
        return pid == os.getpid()
    import psutil

    try:
        process = psutil.Process(pid)
        return abs(process.create_time() - started) < 1.0 and process.status() != psutil.STATUS_ZOMBIE
    except psutil.AccessDenied:  # another user's process: it exists, and may be trying the build
        return True
    except psutil.Error:  # gone (or a zombie)
        return False


def _ended_mid_trial(engine_id: str, owner: dict[str, Any]) -> str:
    """The sentence for a trial whose process ended during it (``owner``: what
    :func:`_trial_owner` recorded; empty for a record written before owners were)."""
    pid, tag, previous = owner.get("pid"), str(owner.get("tag") or engine_id), str(owner.get("previous_tag") or "")
    if isinstance(pid, int) and previous:
        return T(QT_TRANSLATE_NOOP("Core", "The trial of {tag} did not finish: the Strata process that ran it ({pid}) "
                                           "ended during it; {previous} stays in use"),
                 tag=tag, pid=pid, previous=previous)
    return T(QT_TRANSLATE_NOOP("Core", "The trial of {tag} did not finish: the Strata process that ran it ended "
                                       "during it; the build in use stays"), tag=tag)


class UpdateLedger:
    """The engine update records (one JSON file), read fresh on each question.

    Args:
        path: The ledger file (``strata-updates.json`` in the engines folder).
        clock: Wall clock (epoch seconds).
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._cache: tuple[tuple[int, int], dict[str, Any]] | None = None
        self._settle_unsaved = False  # a settled trial could not be saved (told once, not at every read)
        # Each new history entry (promotion, refusal, rollback): pages refresh, the chat tells.
        self.events: Listeners[UpdateEntry] = Listeners()

    # -- storage -----------------------------------------------------------------------------------
    def _read(self) -> _State:
        # The resolver asks per engine per plan: parse the file again only when it changed.
        try:
            st = self.path.stat()
        except OSError:
            return _State()
        stamp = (st.st_mtime_ns, st.st_size)
        if self._cache is None or self._cache[0] != stamp:
            # A damaged ledger is kept aside and named (log, command line); the next write starts anew.
            loaded = load_record(self.path, dict, QT_TRANSLATE_NOOP("Core", "the engine update ledger"), self._clock)
            self._cache = (stamp, loaded.data if loaded.data is not None else {})  # said once, not per question
        try:
            return _State.from_json(self._cache[1])
        except (ValueError, TypeError) as exc:
            log.warning("ignoring the unusable engine update ledger %s: %s", self.path, exc)
            return _State()

    def _write(self, state: _State) -> None:
        state.history = state.history[-HISTORY_LIMIT:]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(state.to_json(), indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
            self._cache = None
        except OSError as exc:
            raise EngineError(T(QT_TRANSLATE_NOOP("Core", "Could not save the engine update records: {reason}"),
                                reason=exc.strerror or exc),
                              hint=T(QT_TRANSLATE_NOOP("Core", "Check that {folder} is writable."),
                                     folder=self.path.parent)) from exc

    def _current(self) -> _State:
        """The records, with trials whose process is gone settled first (:meth:`_settle`)."""
        state = self._read()
        return self._settle(state) if state.on_trial else state

    def _settle(self, state: _State) -> _State:
        """Record as not finished each trial whose process ended (killed, the machine went down):
        the build in use stays, and the build is tried again by the next update, not left "on trial"
        until then."""
        stale = [e for e in state.on_trial if not _owner_alive(state.trials.get(e))]
        for engine_id in stale:
            state.on_trial.remove(engine_id)
            owner = state.trials.pop(engine_id, None) or {}
            entry = UpdateEntry(self._clock(), NOT_FINISHED, str(owner.get("group", "")), engine_id,
                                str(owner.get("previous", "")), _ended_mid_trial(engine_id, owner))
            state.history.append(entry)
            log.warning("engine update: %s", entry.message)
        if stale:
            try:
                self._write(state)
            except EngineError as exc:  # a read-only folder: still read right, settled again next time
                log.log(logging.DEBUG if self._settle_unsaved else logging.WARNING, "%s", exc.message)
                self._settle_unsaved = True
        return state

    # -- questions ----------------------------------------------------------------------------------
    def active(self, group: str) -> str | None:
        """The build promoted (or restored) for ``group``; None: no update decided it yet."""
        return self._current().active.get(group)

    def last_good(self, group: str) -> str | None:
        """The build kept to roll back to, if any."""
        return self._current().last_good.get(group)

    def on_trial(self) -> list[str]:
        return list(self._current().on_trial)

    def refused(self, engine_id: str) -> str | None:
        """Why ``engine_id`` was refused as an update (None: it was not)."""
        return self._current().refused.get(engine_id)

    def refusal(self, engine_id: str) -> UpdateEntry | None:
        """The history entry that refused ``engine_id`` (None: not refused, or its entry is no longer
        kept)."""
        state = self._current()
        if engine_id not in state.refused:
            return None
        return next((h for h in reversed(state.history) if h.engine == engine_id and h.action == REFUSED), None)

    def unfinished(self, engine_id: str | None = None) -> list[UpdateEntry]:
        """Trials that did not finish and are not tried again since or now (of ``engine_id`` only,
        when given), oldest first: what the next ``engines list`` and ``update`` tell."""
        state = self._current()
        seen = set(state.on_trial)  # tried again right now
        found = []
        for entry in reversed(state.history):  # the last word on each build
            if entry.engine not in seen and engine_id in (None, entry.engine):
                seen.add(entry.engine)
                if entry.action == NOT_FINISHED:
                    found.append(entry)
        return found[::-1]

    def history(self) -> list[UpdateEntry]:
        """Every trial, promotion and rollback, oldest first."""
        return list(self._current().history)

    def is_bad(self, engine_id: str, model_key: str | None, gpu: str) -> str | None:
        """Why ``engine_id`` is marked bad for this model on this GPU (None: it is not)."""
        for mark in self._current().bad:
            if mark.get("engine") == engine_id and mark.get("model_key") == model_key and mark.get("gpu") == gpu:
                return mark.get("reason", "")
        return None

    def role(self, engine: InstalledEngine) -> str | None:
        """"last good" (kept to roll back to), "updated" (in use since an update), else None."""
        state = self._current()
        group = group_of(engine)
        if state.last_good.get(group) == engine.id:
            return "last good"
        if state.active.get(group) == engine.id and group in state.last_good:
            return "updated"
        return None

    def can_roll_back(self, engine: InstalledEngine) -> bool:
        """Whether ``engine``'s kind and family has a last good build to go back to."""
        return group_of(engine) in self._current().last_good

    def keep(self) -> set[str]:
        """Builds ``gc`` must keep: in use, last good, on trial."""
        state = self._current()
        return set(state.active.values()) | set(state.last_good.values()) | set(state.on_trial)

    def held_back(self, engine: InstalledEngine, installed: Collection[str], *, model_key: str | None,
                  gpu: str, pinned: str) -> str | None:
        """Why the resolver must not use ``engine`` (None: it may).

        A build on trial, a refused one, one marked bad for this model and GPU, and the other
        builds of a kind whose update decided the build in use (a pin still wins).
        """
        state = self._current()
        if engine.id in state.on_trial:
            return QT_TRANSLATE_NOOP("Core", "on trial as an engine update; used once it is promoted")
        if engine.id in state.refused:
            return T(QT_TRANSLATE_NOOP("Core", "refused as an update: {reason}"), reason=state.refused[engine.id])
        if state.unfinished(engine.id) is not None:
            return QT_TRANSLATE_NOOP("Core", "its trial as an engine update did not finish; the next update tries it "
                                             "again")
        if model_key is not None:
            for mark in state.bad:
                if mark.get("engine") == engine.id and mark.get("model_key") == model_key and mark.get("gpu") == gpu:
                    return T(QT_TRANSLATE_NOOP("Core", "marked bad for this model on this GPU: {reason}"),
                             reason=mark.get("reason", ""))
        if engine.id == pinned:
            return None
        group = group_of(engine)
        active = state.active.get(group)
        if active and active != engine.id and active in installed:
            if state.last_good.get(group) == engine.id:
                return T(QT_TRANSLATE_NOOP("Core", "kept as the last good build; {active} is in use (roll back to "
                                                   "use this one)"), active=active)
            return T(QT_TRANSLATE_NOOP("Core", "{active} replaced it"), active=active)
        return None

    # -- decisions ----------------------------------------------------------------------------------
    def begin_trial(self, engine_id: str, *, group: str = "", tag: str = "", previous: str = "",
                    previous_tag: str = "") -> None:
        """``engine_id`` is on trial in this process (if the process ends before the trial does, the
        next read records it as not finished); ``previous`` is the build it would replace."""
        state = self._current()
        if engine_id not in state.on_trial:
            state.on_trial.append(engine_id)
        state.trials[engine_id] = _trial_owner(group, tag or engine_id, previous, previous_tag)
        state.refused.pop(engine_id, None)
        self._write(state)

    def end_trial(self, engine_id: str) -> None:
        state = self._current()
        if engine_id in state.on_trial:
            state.on_trial.remove(engine_id)
            state.trials.pop(engine_id, None)
            self._write(state)

    def record(self, entry: UpdateEntry, *, promote: tuple[str, str] | None = None, refuse: bool = False,
               restore: str | None = None, bad: tuple[str | None, str] | None = None) -> UpdateEntry:
        """Add ``entry`` to the history and apply its decision in the same write.

        Args:
            promote: (new, previous): ``new`` is used for the entry's group, ``previous`` kept.
            refuse: ``entry.engine`` is refused (never used, not tried again unless asked).
            restore: The build a rollback puts back in use (the replaced one is no longer kept).
            bad: (model key, GPU): ``entry.previous`` is marked bad for that model and GPU.
        """
        state = self._current()
        if entry.engine in state.on_trial:
            state.on_trial.remove(entry.engine)
        state.trials.pop(entry.engine, None)
        if promote is not None:
            new, previous = promote
            state.active[entry.group] = new
            state.last_good[entry.group] = previous
            state.refused.pop(new, None)
        if refuse:
            state.refused[entry.engine] = entry.message
        if restore is not None:
            state.active[entry.group] = restore
            state.last_good.pop(entry.group, None)
        if bad is not None:
            model_key, gpu = bad
            state.bad.append({"engine": entry.previous, "model_key": model_key or "", "gpu": gpu,
                              "reason": entry.message})
        state.history.append(entry)
        self._write(state)
        log.info("engine update: %s: %s %s", entry.action, entry.message,
                 " ".join(f"{k}={v:.1f}" for k, v in sorted(entry.figures.items())))
        self.events.emit(entry)
        return entry

    def forget(self, engine_id: str) -> None:
        """An engine was removed: drop what names it (its history stays)."""
        state = self._current()
        changed = False
        for table in (state.active, state.last_good):
            for group in [g for g, e in table.items() if e == engine_id]:
                del table[group]
                changed = True
        if engine_id in state.on_trial:
            state.on_trial.remove(engine_id)
            state.trials.pop(engine_id, None)
            changed = True
        # A refusal stays: the same tag is not tried again by the next update.
        if changed:
            self._write(state)
