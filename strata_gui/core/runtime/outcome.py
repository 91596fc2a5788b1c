"""Why an engine process ended: typed data first, words for the user last.

:func:`classify_exit` turns an exit code and the log tail into an :class:`Outcome` (pure data:
kind, phase, exit code, log tail and the facts the sentence needs). :func:`describe_outcome` is
the one place that turns an outcome into a sentence, so the CLI and the UI phrase every ending
the same way and the wording can be translated at the edge.
"""

from __future__ import annotations

import enum
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T


class OutcomeKind(enum.Enum):
    STOPPED = "stopped"  # we asked it to stop
    BAD_MODEL = "bad_model"
    OUT_OF_MEMORY = "out_of_memory"
    MISSING_LIBRARY = "missing_library"
    PORT_TAKEN = "port_taken"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    CRASHED = "crashed"


class Phase(enum.Enum):
    """Where a managed process was in its life when it ended."""

    STARTING = "starting"  # being launched: if it ended here, it never ran
    LOADING = "loading"  # running, not ready yet (llama-server loading the model)
    RUNNING = "running"  # was ready and serving
    STOPPING = "stopping"  # Strata asked it to stop

    @property
    def before_ready(self) -> bool:
        return self in (Phase.STARTING, Phase.LOADING)


# Windows NTSTATUS codes as Python sees them (signed 32-bit).
_WINDOWS_CODES = {
    -1073741819: "access violation",
    -1073741515: "a required DLL was not found",
    -1073741795: "illegal instruction",
    -1073740791: "stack buffer overrun",
    -1073741571: "stack overflow",
}

# "main: server is listening on http://127.0.0.1:8080" (older llama-server), "llama_server: listening
# on http://127.0.0.1:8080" (newer), "listening on: 127.0.0.1:8080" (sd-server).
_LISTEN_RE = re.compile(r"\blistening on:? (?:https?://)?[^\s:/]+:(\d+)")
_OFFLOAD_RE = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_MISSING_LIB_RE = re.compile(
    r"error while loading shared libraries: ([^:]+)|cannot open shared object file|Library not loaded"
)
_BAD_MODEL_RE = re.compile(
    r"error loading model|failed to load model|invalid magic|gguf_init_from_file|tensor data is not within"
    r"|unknown model architecture|failed to read"
    # stable-diffusion.cpp's sd-server: the file is not a model it knows, or lacks tensors.
    r"|new_sd_ctx_t failed|get sd version from file failed|load tensors from model loader failed",
    re.IGNORECASE,
)
_OOM_RE = re.compile(
    r"out of memory|OutOfDeviceMemory|OutOfHostMemory|failed to allocate|unable to allocate"
    r"|cudaMalloc failed|hipMalloc failed|std::bad_alloc",
    re.IGNORECASE,
)
_PORT_RE = re.compile(r"couldn't bind HTTP server socket|address already in use", re.IGNORECASE)


@dataclass(frozen=True)
class Outcome:
    """How a managed process run ended (data only; :func:`describe_outcome` words it).

    Attributes:
        kind: The class of ending (drives fallback decisions).
        phase: Where the process was when it ended (:attr:`Phase.STARTING`: it never ran).
        exit_code: The process exit code (negative: killed by that signal), None if it never ran.
        log_tail: The last lines it printed (for "Details…").
        subject: Who ended, as the user names it ("ROCm engine", "RPC server").
        path: The file at fault, when one is (the missing binary or model).
        reason: A specific fact for the sentence (the missing library, the OS error text).
        waited: Seconds waited for readiness (:attr:`OutcomeKind.TIMEOUT`).
    """

    kind: OutcomeKind
    phase: Phase
    exit_code: int | None = None
    log_tail: tuple[str, ...] = field(default=(), repr=False)
    subject: str = "The engine"
    path: str = ""
    reason: str = ""
    waited: float | None = None

    def __str__(self) -> str:
        return describe_outcome(self)

    @property
    def during_load(self) -> bool:
        """It ended before it was ready."""
        return self.phase.before_ready

    @property
    def engine_fault(self) -> bool:
        """True when another engine could do better (not the model's or the user's fault)."""
        return self.kind in (OutcomeKind.CRASHED, OutcomeKind.MISSING_LIBRARY, OutcomeKind.OUT_OF_MEMORY,
                             OutcomeKind.TIMEOUT, OutcomeKind.NOT_FOUND)

    def details(self) -> str:
        return "\n".join(self.log_tail)


def describe_outcome(outcome: Outcome, *, activity: str = "running") -> str:
    """The one sentence a user reads about how a process ended (a :class:`Text`: the GUI shows it
    in the user's language, the CLI in English).

    Args:
        outcome: The ending.
        activity: What the process was doing once ready, for endings in :attr:`Phase.RUNNING`
            ("running"; the chat says "answering" when a reply was streaming). One of
            :data:`ACTIVITIES` is translated too.
    """
    name = outcome.subject
    kind = outcome.kind
    if kind is OutcomeKind.STOPPED:
        return T(QT_TRANSLATE_NOOP("Core", "{name} stopped."), name=name)
    if kind is OutcomeKind.NOT_FOUND:
        if outcome.reason:
            return T(QT_TRANSLATE_NOOP("Core", "{name} could not be started: {reason}."), name=name,
                     reason=outcome.reason)
        return T(QT_TRANSLATE_NOOP("Core", "{name} is not installed ({path} is missing)."), name=name,
                 path=outcome.path)
    if kind is OutcomeKind.BAD_MODEL:
        if outcome.exit_code is None and outcome.path:
            if outcome.reason:
                return T(QT_TRANSLATE_NOOP("Core", "The model file {path} cannot be used: {reason}"),
                         path=outcome.path, reason=outcome.reason)
            return T(QT_TRANSLATE_NOOP("Core", "The model file {path} does not exist."), path=outcome.path)
        return T(QT_TRANSLATE_NOOP("Core", "{name} could not load the model file: it is damaged or not a "
                                           "supported GGUF model."), name=name)
    if kind is OutcomeKind.MISSING_LIBRARY:
        if outcome.reason:
            return T(QT_TRANSLATE_NOOP("Core", "{name} could not start: a library it needs was not found "
                                               "({library} is missing)."), name=name, library=outcome.reason)
        return T(QT_TRANSLATE_NOOP("Core", "{name} could not start: a library it needs was not found."),
                 name=name)
    if kind is OutcomeKind.PORT_TAKEN:
        return T(QT_TRANSLATE_NOOP("Core", "{name} could not listen: the network port is already in use by "
                                           "another program."), name=name)
    if kind is OutcomeKind.TIMEOUT:
        return T(QT_TRANSLATE_NOOP("Core", "{name} did not become ready within {seconds} s."), name=name,
                 seconds=f"{outcome.waited or 0:.0f}")
    loading = outcome.phase.before_ready
    if kind is OutcomeKind.OUT_OF_MEMORY:
        if loading:
            return T(QT_TRANSLATE_NOOP("Core", "{name} ran out of memory while loading the model."), name=name)
        return T(QT_TRANSLATE_NOOP("Core", "{name} ran out of memory while {activity}."), name=name,
                 activity=activity)
    code = describe_exit_code(outcome.exit_code) if outcome.exit_code is not None else T(
        QT_TRANSLATE_NOOP("Core", "no exit code"))
    if loading:
        return T(QT_TRANSLATE_NOOP("Core", "{name} crashed while loading ({code})."), name=name, code=code)
    return T(QT_TRANSLATE_NOOP("Core", "{name} crashed while {activity} ({code})."), name=name,
             activity=activity, code=code)


# What a process was doing when it ended (describe_outcome's ``activity``), for the catalogue.
ACTIVITIES = (QT_TRANSLATE_NOOP("Core", "running"), QT_TRANSLATE_NOOP("Core", "answering"),
              QT_TRANSLATE_NOOP("Core", "making the image"))

_HINTS = {
    OutcomeKind.BAD_MODEL: QT_TRANSLATE_NOOP("Core", "Check the model file, or download it again."),
    OutcomeKind.OUT_OF_MEMORY: QT_TRANSLATE_NOOP(
        "Core", "Try a smaller context size, fewer GPU layers or a smaller quantization."),
    OutcomeKind.MISSING_LIBRARY: QT_TRANSLATE_NOOP("Core", "Reinstall this engine, or choose another one."),
    OutcomeKind.PORT_TAKEN: QT_TRANSLATE_NOOP("Core", "Close the program using that port, or let Strata pick a "
                                                      "free port."),
    OutcomeKind.NOT_FOUND: QT_TRANSLATE_NOOP("Core", "Reinstall this engine, or choose another one."),
    OutcomeKind.TIMEOUT: QT_TRANSLATE_NOOP("Core", "The model may be too large for this machine; try a smaller "
                                                   "one or another engine."),
    OutcomeKind.CRASHED: QT_TRANSLATE_NOOP("Core", "Try another engine (Vulkan or CPU); the log has details."),
}


def outcome_hint(outcome: Outcome) -> str | None:
    """What the user can do about this ending, if anything."""
    return _HINTS.get(outcome.kind)


class ProcessEnded(ServerError):
    """A managed process ended (or could not start) when it should have been running.

    Attributes:
        outcome: How it ended; the message is :func:`describe_outcome` of it.
    """

    def __init__(self, outcome: Outcome, *, message: str | None = None, hint: str | None = None) -> None:
        super().__init__(message or describe_outcome(outcome), hint=hint or outcome_hint(outcome),
                         details=outcome.details() or None)
        self.outcome = outcome


def describe_exit_code(code: int) -> str:
    """``exit code 1``, ``killed by SIGSEGV`` or the Windows status name with its number."""
    if code < 0 and -code < 128 and code > -1000:
        try:
            return f"exit code {code}, killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"exit code {code}"
    if code in _WINDOWS_CODES:
        return f"exit code {code}, {_WINDOWS_CODES[code]}"
    return f"exit code {code}"


def listening_port(line: str) -> int | None:
    m = _LISTEN_RE.search(line)
    return int(m.group(1)) if m else None


def load_detail(line: str) -> str | None:
    """A short progress text for a log line worth showing while the model loads."""
    if "loading model" in line:
        return T(QT_TRANSLATE_NOOP("Core", "Loading model…"))
    m = _OFFLOAD_RE.search(line)
    if m:
        return T(QT_TRANSLATE_NOOP("Core", "Offloaded {done}/{total} layers to the GPU"), done=m.group(1),
                 total=m.group(2))
    if "model loaded" in line:
        return T(QT_TRANSLATE_NOOP("Core", "Model loaded, warming up…"))
    if "found" in line and "ROCm devices" in line:
        return line.strip()
    return None


def classify_exit(exit_code: int | None, lines: Sequence[str], *, phase: Phase, subject: str = "The engine") -> Outcome:
    """Turn an exit code and the log tail of a process that ended on its own into an :class:`Outcome`."""
    text = "\n".join(lines)
    tail = tuple(lines)

    def outcome(kind: OutcomeKind, reason: str = "") -> Outcome:
        return Outcome(kind, phase, exit_code, tail, subject, reason=reason)

    m = _MISSING_LIB_RE.search(text)
    if m or exit_code in (127, -1073741515):
        lib = m.group(1).strip() if m and m.group(1) else ""
        return outcome(OutcomeKind.MISSING_LIBRARY, lib)
    if _PORT_RE.search(text):
        return outcome(OutcomeKind.PORT_TAKEN)
    if _OOM_RE.search(text):
        return outcome(OutcomeKind.OUT_OF_MEMORY)
    if _BAD_MODEL_RE.search(text) and exit_code is not None and exit_code > 0:
        return outcome(OutcomeKind.BAD_MODEL)
    return outcome(OutcomeKind.CRASHED)
