"""Ask an engine what it can do: ``llama-server --version`` and ``--list-devices``.

Both run with the exact environment the engine will be launched with. :func:`judge` is pure
(tested on captured outputs); :func:`probe_engine` runs the binary on a worker thread via
``subprocess.run`` (works under asyncio and qasync loops alike).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base import texts
from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

_DEVICE_RE = re.compile(r"^\s+(?P<name>[A-Za-z]+\d+): (?P<desc>.*) \((?P<total>\d+) MiB, (?P<free>\d+) MiB free\)\s*$")
_VERSION_RE = re.compile(r"^version:\s*(.+)$", re.MULTILINE)
# Windows NTSTATUS codes a process gets when the loader gives up.
_WINDOWS_LOADER = {
    0xC0000135: QT_TRANSLATE_NOOP("Core", "a required DLL was not found (STATUS_DLL_NOT_FOUND)"),
    0xC000007B: QT_TRANSLATE_NOOP("Core", "a DLL is for the wrong architecture or damaged "
                                          "(STATUS_INVALID_IMAGE_FORMAT)"),
    0xC0000139: QT_TRANSLATE_NOOP("Core", "a DLL lacks a function this build needs (STATUS_ENTRYPOINT_NOT_FOUND)"),
}
BACKEND_DEVICE_PREFIX = {"rocm": "ROCm", "vulkan": "Vulkan"}


@dataclass(frozen=True)
class Device:
    """A device line of ``--list-devices``: ``ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24000 MiB free)``."""

    name: str
    description: str
    total_mib: int
    free_mib: int

    @property
    def kind(self) -> str:
        return self.name.rstrip("0123456789")


@dataclass(frozen=True)
class ProcessRun:
    """What one run of a binary produced."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # could not start at all (OSError text) or timed out


ProcessRunner = Callable[[Sequence[str], Mapping[str, str], float], ProcessRun]


def run_process(cmd: Sequence[str], env: Mapping[str, str], timeout: float) -> ProcessRun:
    """Run ``cmd`` to completion with a timeout, capturing output (blocking)."""
    try:
        done = subprocess.run(list(cmd), env=dict(env), capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return ProcessRun(None, error=T(QT_TRANSLATE_NOOP("Core", "did not answer within {seconds:.0f} s"), seconds=timeout))
    except OSError as exc:
        return ProcessRun(None, error=exc.strerror or str(exc))
    return ProcessRun(done.returncode, done.stdout.decode("utf-8", "replace"),
                      done.stderr.decode("utf-8", "replace"))


def parse_list_devices(text: str) -> list[Device]:
    """Device lines of ``--list-devices`` output (``(none)`` gives an empty list)."""
    out = []
    for line in text.splitlines():
        m = _DEVICE_RE.match(line)
        if m:
            out.append(Device(m["name"], m["desc"], int(m["total"]), int(m["free"])))
    return out


def parse_version(text: str) -> str | None:
    m = _VERSION_RE.search(text)
    return m.group(1).strip() if m else None


@dataclass(frozen=True)
class ProbeResult:
    """Verdict on one engine here.

    Attributes:
        verdict: "works", "no_device" (starts but sees no device of its backend) or "failed".
        message: One sentence for people.
        version: What ``--version`` printed, when it ran.
        devices: All devices the engine listed.
        details: Captured output for bug reports.
    """

    verdict: str
    message: str
    version: str | None = None
    devices: tuple[Device, ...] = field(default=())
    details: str = ""

    @property
    def usable(self) -> bool:
        return self.verdict == "works"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "verdict": self.verdict, "message": self.message, "version": self.version,
            "devices": [{"name": d.name, "description": d.description, "total_mib": d.total_mib,
                         "free_mib": d.free_mib} for d in self.devices]}
        if isinstance(self.message, texts.Text):  # read back, the sentence is still translated
            data["message_text"] = texts.to_json(self.message)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProbeResult:
        """Read what :meth:`to_json` wrote (raises KeyError/TypeError/ValueError on a damaged record)."""
        devices = tuple(Device(str(d["name"]), str(d["description"]), int(d["total_mib"]), int(d["free_mib"]))
                        for d in data.get("devices", []))
        verdict = str(data["verdict"])
        if verdict not in ("works", "no_device", "failed"):
            raise ValueError(f"unknown verdict {verdict!r}")
        version = data.get("version")
        message = str(data["message"])
        if "message_text" in data:
            try:
                text = texts.from_json(data["message_text"])
            except (KeyError, TypeError, ValueError, IndexError):
                text = message
            message = text if text == message else message  # the English as saved, whatever the record says
        return cls(verdict, message, str(version) if version is not None else None, devices)


_ON_PROCESSOR = QT_TRANSLATE_NOOP("Core", "runs on the processor")


def _wont_start(reason: str) -> str:
    return T(QT_TRANSLATE_NOOP("Core", "won't start: {reason}"), reason=reason)


def _missing(server: Path) -> str:
    return _wont_start(T(QT_TRANSLATE_NOOP("Core", "{server} is missing"), server=server))


def _loader_message(run: ProcessRun) -> str:
    if run.error:
        return run.error
    code = run.returncode if run.returncode is not None else 0
    if code < 0 and (code & 0xFFFFFFFF) in _WINDOWS_LOADER:
        return _WINDOWS_LOADER[code & 0xFFFFFFFF]
    if code in _WINDOWS_LOADER:
        return _WINDOWS_LOADER[code]
    lines = [ln.strip() for ln in (run.stderr or run.stdout).splitlines() if ln.strip()]
    loader = [ln for ln in lines if "error while loading shared libraries" in ln or ".dll" in ln.lower()]
    if loader:
        return loader[-1]
    return lines[-1] if lines else T(QT_TRANSLATE_NOOP("Core", "exit code {code}"), code=code)


# Vulkan/D3D drivers that render on the processor: an engine that sees only these runs on the CPU.
_SOFTWARE = re.compile(r"llvmpipe|lavapipe|swiftshader|softpipe|microsoft basic render", re.IGNORECASE)


def is_software_device(device: Device) -> bool:
    """A device that is the processor under a GPU API (llvmpipe, lavapipe, SwiftShader)."""
    return bool(_SOFTWARE.search(device.description))


def judge(backend: str, version_run: ProcessRun, devices_run: ProcessRun | None) -> ProbeResult:
    """Turn the two runs into a verdict (pure)."""
    details = "\n".join(x for x in (version_run.stdout, version_run.stderr,
                                    devices_run.stdout if devices_run else "",
                                    devices_run.stderr if devices_run else "") if x)[-4000:]
    if version_run.error is not None or version_run.returncode != 0:
        return ProbeResult("failed", _wont_start(_loader_message(version_run)), details=details)
    version = parse_version(version_run.stdout + "\n" + version_run.stderr)
    if devices_run is None or devices_run.error is not None or devices_run.returncode != 0:
        why = _loader_message(devices_run) if devices_run else QT_TRANSLATE_NOOP("Core", "device list not run")
        return ProbeResult("failed", T(QT_TRANSLATE_NOOP("Core", "could not list devices: {reason}"), reason=why),
                           version, details=details)
    devices = tuple(parse_list_devices(devices_run.stdout))
    prefix = BACKEND_DEVICE_PREFIX.get(backend)
    if prefix is None:
        return ProbeResult("works", _ON_PROCESSOR, version, devices, details)
    mine = [d for d in devices if d.kind == prefix]
    if not mine:
        seen = ", ".join(d.name for d in devices) or QT_TRANSLATE_NOOP("Core", "none")
        return ProbeResult("no_device", T(QT_TRANSLATE_NOOP("Core", "sees no {kind} device (devices seen: {seen})"),
                                          kind=prefix, seen=seen), version, devices, details)
    names = ", ".join(f"{d.name} {d.description}" for d in mine)
    if all(is_software_device(d) for d in mine):  # "llvmpipe" means nothing to most people: said what it is
        return ProbeResult("works", T(QT_TRANSLATE_NOOP("Core", "sees {devices} — a software renderer on the CPU, "
                                                                "not your GPU"), devices=names),
                           version, devices, details)
    return ProbeResult("works", T(QT_TRANSLATE_NOOP("Core", "sees {devices}"), devices=names), version, devices,
                       details)


async def probe_engine(server: Path, backend: str, env: Mapping[str, str], *,
                       runner: ProcessRunner = run_process, timeout: float = 30.0) -> ProbeResult:
    """Run ``--version`` and ``--list-devices`` of ``server`` with ``env`` and judge the result."""

    def work() -> ProbeResult:
        if not server.exists():
            return ProbeResult("failed", _missing(server))
        version_run = runner([str(server), "--version"], env, timeout)
        if version_run.error is not None or version_run.returncode != 0:
            return judge(backend, version_run, None)
        return judge(backend, version_run, runner([str(server), "--list-devices"], env, timeout))

    return await run_blocking(work, name="strata-probe")


def judge_image(backend: str, version_run: ProcessRun) -> ProbeResult:
    """Verdict on an ``sd-server`` build from its ``--version`` run (pure).

    stable-diffusion.cpp has no device list, so a build that starts "works"; whether its GPU
    backend runs shows when a model loads, and the image service then falls back to the next one.
    """
    details = "\n".join(x for x in (version_run.stdout, version_run.stderr) if x)[-4000:]
    if version_run.error is not None or version_run.returncode != 0:
        return ProbeResult("failed", _wont_start(_loader_message(version_run)), details=details)
    text = (version_run.stdout + "\n" + version_run.stderr).strip()
    first = text.splitlines()[0].strip() if text else ""
    # A build probed with --help (whisper-server has no --version) prints its usage, not a version.
    version = first if first and not first.lower().startswith("usage") else None
    what = _ON_PROCESSOR if backend == "cpu" else QT_TRANSLATE_NOOP("Core", "starts (its GPU is checked when a "
                                                                              "model loads)")
    return ProbeResult("works", what, version, (), details)


async def probe_image_engine(server: Path, backend: str, env: Mapping[str, str], *,
                             runner: ProcessRunner = run_process, timeout: float = 30.0,
                             args: Sequence[str] = ("--version",)) -> ProbeResult:
    """Run a build that cannot list its devices (``sd-server --version``, ``whisper-server --help``:
    its kind's ``probe_args``) with ``env`` and judge it (:func:`judge_image`)."""

    def work() -> ProbeResult:
        if not server.exists():
            return ProbeResult("failed", _missing(server))
        return judge_image(backend, runner([str(server), *args], env, timeout))

    return await run_blocking(work, name="strata-probe")
