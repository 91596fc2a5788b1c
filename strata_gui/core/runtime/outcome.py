"""Why an engine process stopped, in words a user understands (pure functions over its log)."""

from __future__ import annotations

import enum
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field


class OutcomeKind(enum.Enum):
    STOPPED = "stopped"  # we asked it to stop
    BAD_MODEL = "bad_model"
    OUT_OF_MEMORY = "out_of_memory"
    MISSING_LIBRARY = "missing_library"
    PORT_TAKEN = "port_taken"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    CRASHED = "crashed"


# Windows NTSTATUS codes as Python sees them (signed 32-bit).
_WINDOWS_CODES = {
    -1073741819: "access violation",
    -1073741515: "a required DLL was not found",
    -1073741795: "illegal instruction",
    -1073740791: "stack buffer overrun",
    -1073741571: "stack overflow",
}

_LISTEN_RE = re.compile(r"server is listening on https?://[^\s:]+:(\d+)")
_OFFLOAD_RE = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_MISSING_LIB_RE = re.compile(
    r"error while loading shared libraries: ([^:]+)|cannot open shared object file|Library not loaded"
)
_BAD_MODEL_RE = re.compile(
    r"error loading model|failed to load model|invalid magic|gguf_init_from_file|tensor data is not within"
    r"|unknown model architecture|failed to read",
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
    """How an engine run ended.

    Attributes:
        kind: The class of ending (drives fallback decisions).
        message: One sentence for the user.
        exit_code: The process exit code (negative: killed by that signal), None if it never ran.
        during_load: It ended before the model was ready.
        log_tail: The last lines it printed (for "Details…").
    """

    kind: OutcomeKind
    message: str
    exit_code: int | None = None
    during_load: bool = False
    log_tail: tuple[str, ...] = field(default=(), repr=False)

    def __str__(self) -> str:
        return self.message

    @property
    def engine_fault(self) -> bool:
        """True when another engine could do better (not the model's or the user's fault)."""
        return self.kind in (OutcomeKind.CRASHED, OutcomeKind.MISSING_LIBRARY, OutcomeKind.OUT_OF_MEMORY,
                             OutcomeKind.TIMEOUT, OutcomeKind.NOT_FOUND)

    def details(self) -> str:
        return "\n".join(self.log_tail)


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
        return "Loading model…"
    m = _OFFLOAD_RE.search(line)
    if m:
        return f"Offloaded {m.group(1)}/{m.group(2)} layers to the GPU"
    if "model loaded" in line:
        return "Model loaded, warming up…"
    if "found" in line and "ROCm devices" in line:
        return line.strip()
    return None


def classify_exit(
    exit_code: int | None, lines: Sequence[str], *, during_load: bool, engine_label: str = "The",
) -> Outcome:
    """Turn an exit code and the log tail into an :class:`Outcome`."""
    text = "\n".join(lines)
    tail = tuple(lines)
    name = f"{engine_label} engine"
    m = _MISSING_LIB_RE.search(text)
    if m or exit_code in (127, -1073741515):
        lib = m.group(1).strip() if m and m.group(1) else None
        what = f" ({lib} is missing)" if lib else ""
        return Outcome(OutcomeKind.MISSING_LIBRARY,
                       f"{name} could not start: a library it needs was not found{what}.",
                       exit_code, during_load, tail)
    if _PORT_RE.search(text):
        return Outcome(OutcomeKind.PORT_TAKEN,
                       f"{name} could not listen: the network port is already in use by another program.",
                       exit_code, during_load, tail)
    if _OOM_RE.search(text):
        return Outcome(OutcomeKind.OUT_OF_MEMORY,
                       f"{name} ran out of memory while loading the model.",
                       exit_code, during_load, tail)
    if _BAD_MODEL_RE.search(text) and exit_code is not None and exit_code > 0:
        return Outcome(OutcomeKind.BAD_MODEL,
                       f"{name} could not load the model file: it is damaged or not a supported GGUF model.",
                       exit_code, during_load, tail)
    code = describe_exit_code(exit_code) if exit_code is not None else "no exit code"
    when = "while loading" if during_load else "while running"
    return Outcome(OutcomeKind.CRASHED, f"{name} crashed {when} ({code}).", exit_code, during_load, tail)
