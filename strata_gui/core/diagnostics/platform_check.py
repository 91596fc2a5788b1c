"""Checks of the OS-specific layers, run for real on the machine at hand (``strata platform-check``).

Each check exercises the code the app itself uses, not a re-implementation:

* ``paths``: Strata's folders, and a file written and read back under a folder whose name has
  spaces and non-ASCII letters (user names such as "Zoë Chen" or "用户" end up in every path).
* ``secrets``: the API key store round trip through the OS protector (DPAPI on Windows), in
  such a folder; on Windows the stored file must not contain the secret in the clear.
* ``job``: an "app" process starts an "engine" child the way the runtime does (Windows job
  object / Linux parent-death signal), the app is killed hard, and the child must die with it.
* ``autostart``: "start the model server when I sign in" turned on, read back and turned off
  again through the app's own code (Windows: the ``Run`` value under HKEY_CURRENT_USER; Linux: an
  XDG autostart entry, here in a scratch folder), leaving nothing behind.
* ``gpu`` (Windows only): each raw source of the Windows GPU probe (registry, DXGI, WMI, HIP,
  PDH) and the detection built from them; a source that returns nothing is "n/a", never a crash.

scripts/windows-under-wine.sh runs it in the Windows build under Wine and checks the JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore, default_protector
from strata_gui.core.runtime.process_guard import WindowsJob, armed_by, guarded_launch

# Spaces and letters outside ASCII and the Windows ANSI code page, as in real user names.
AWKWARD_NAME = "Strata check Zoë 用户"
SECRET = "sk-platform-check-Zoë-用户-0123456789"
CHILD_DEATH_TIMEOUT = 15.0


@dataclass
class CheckResult:
    """One check: passed or not, and what it saw."""

    name: str
    ok: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlatformReport:
    """All checks of one run."""

    platform: str
    frozen: bool
    checks: list[CheckResult]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> str:
        return json.dumps({"platform": self.platform, "frozen": self.frozen, "ok": self.ok,
                           "checks": [asdict(c) for c in self.checks]}, indent=2, ensure_ascii=False)

    def report(self) -> str:
        lines = [f"platform: {self.platform}{' (frozen)' if self.frozen else ''}"]
        for c in self.checks:
            lines.append(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: "
                         + ", ".join(f"{k}={v}" for k, v in c.detail.items()))
        return "\n".join(lines)


def self_command() -> list[str]:
    """The command line that runs this program's CLI again (frozen or from source)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "strata_gui"]


def _guarded(name: str, fn: Callable[[], CheckResult]) -> CheckResult:
    # A check that raises is a failed check with its traceback, never a crashed command.
    try:
        return fn()
    except Exception as exc:  # reported, not hidden
        return CheckResult(name, False, {"error": f"{type(exc).__name__}: {exc}",
                                         "traceback": traceback.format_exc(limit=5)})


def check_paths(paths: AppPaths, scratch: Path) -> CheckResult:
    folder = scratch / AWKWARD_NAME
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{AWKWARD_NAME}.txt"
    target.write_text(AWKWARD_NAME, encoding="utf-8")
    listed = [p.name for p in folder.iterdir()]
    ok = target.read_text(encoding="utf-8") == AWKWARD_NAME and target.name in listed
    return CheckResult("paths", ok, {
        "config_dir": str(paths.config_dir), "data_dir": str(paths.data_dir),
        "awkward_file": str(target), "round_trip": ok,
    })


def check_secrets(scratch: Path) -> CheckResult:
    protector = default_protector()
    path = scratch / AWKWARD_NAME / "secrets.json"
    store = FileSecretStore(path, protector)
    store.set("check", SECRET)
    raw = path.read_bytes()
    back = FileSecretStore(path, default_protector()).get("check")  # a new store reads it back
    store.delete("check")
    gone = store.get("check") is None
    plain_on_disk = SECRET.encode("utf-8") in raw or SECRET.encode("utf-8") in _b64_values(raw)
    encrypted = type(protector).__name__ != "PlainProtector"
    ok = back == SECRET and gone and (not encrypted or not plain_on_disk)
    return CheckResult("secrets", ok, {
        "protector": type(protector).__name__, "round_trip": back == SECRET, "deleted": gone,
        "plaintext_on_disk": plain_on_disk, "stored_bytes": len(raw),
    })


def _b64_values(raw: bytes) -> bytes:
    import base64

    try:
        data = json.loads(raw.decode("utf-8"))
        return b"".join(base64.b64decode(v) for v in data.values())
    except (ValueError, AttributeError):
        return b""


def _pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill_app_and_watch_child(scratch: Path, guarded: bool) -> dict[str, Any]:
    """Start an "app" that starts an "engine", kill the app hard, report whether the engine lived."""
    pid_file = scratch / f"engine-{'guarded' if guarded else 'control'}.pid"
    flags = [] if guarded else ["--unguarded"]
    app = subprocess.Popen([*self_command(), "platform-check", "--hold-child", str(pid_file), *flags],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child: int | None = None
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline and app.poll() is None:
            time.sleep(0.1)
        if not pid_file.exists():
            return {"error": "the app process never started its engine child", "app_exit": app.poll()}
        child = int(pid_file.read_text(encoding="utf-8").strip())
        alive_before = _pid_alive(child)
        app.kill()  # TerminateProcess / SIGKILL: the app gets no chance to clean up
        app.wait(timeout=30)
        t0 = time.monotonic()
        # The control child is expected to live: a short look is enough there.
        while _pid_alive(child) and time.monotonic() - t0 < (CHILD_DEATH_TIMEOUT if guarded else 2.0):
            time.sleep(0.1)
        return {"child_alive_before_kill": alive_before, "child_alive_after_kill": _pid_alive(child),
                "seconds_to_die": round(time.monotonic() - t0, 2)}
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(timeout=30)
        if child is not None and _pid_alive(child):  # never leave it behind, whatever the verdict
            import psutil

            with contextlib.suppress(psutil.Error):
                psutil.Process(child).kill()
                psutil.Process(child).wait(timeout=30)


def check_job(scratch: Path) -> CheckResult:
    """The engine dies with the app, and only because of the guard (a control child survives)."""
    guarded = _kill_app_and_watch_child(scratch, guarded=True)
    control = _kill_app_and_watch_child(scratch, guarded=False)
    ok = (guarded.get("child_alive_before_kill") is True and guarded.get("child_alive_after_kill") is False
          and control.get("child_alive_after_kill") is True)
    return CheckResult("job", ok, {
        "mechanism": "job object" if sys.platform == "win32" else "parent-death signal",
        **({"armed_by": armed_by()} if armed_by() else {}),
        **guarded,
        "control_child_without_guard_survived": control.get("child_alive_after_kill"),
    })


def hold_child(pid_file: Path, guarded: bool = True) -> int:
    """The "app" side of :func:`check_job`: start an engine-like child the runtime's way, then wait.

    Starts it from this (main, long-lived) thread, as the runtime does, so the Linux parent-death
    signal stays armed; on Windows the child goes into a kill-on-close job object. Unguarded (the
    control) it gets neither.
    """
    job = WindowsJob()
    command = [*self_command(), "platform-check", "--sleep", "300"]
    argv, preexec = guarded_launch(command, os.getpid()) if guarded else (command, None)
    child = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=preexec)  # noqa: PLW1509 (prctl only, where setpriv is missing)
    if guarded:
        job.assign(child)
    tmp = pid_file.with_name(pid_file.name + ".tmp")
    tmp.write_text(str(child.pid), encoding="utf-8")
    os.replace(tmp, pid_file)
    time.sleep(300)
    return 0


def check_single_app(scratch: Path) -> CheckResult:
    """The one-app lock (core/platform/instance.py): refused while another process holds it, free again the
    moment that process is killed (the OS drops it: a crashed app never blocks the next launch)."""
    from strata_gui.core.platform.instance import InstanceLock

    lock_file, held = scratch / "app.lock", scratch / "lock-held"
    holder = subprocess.Popen([*self_command(), "platform-check", "--hold-lock", str(lock_file), str(held)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    detail: dict[str, Any] = {"mechanism": "msvcrt.locking" if sys.platform == "win32" else "flock"}
    try:
        deadline = time.monotonic() + 60
        while not held.exists() and holder.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        detail["holder_took_it"] = held.exists()
        mine = InstanceLock.try_acquire(lock_file)
        detail["refused_while_held"] = mine is None
        if mine is not None:
            mine.release()
    finally:
        holder.kill()
        holder.wait(30)
    taken = InstanceLock.try_acquire(lock_file)
    detail["taken_after_holder_killed"] = taken is not None
    if taken is not None:
        taken.release()
    ok = bool(detail["holder_took_it"] and detail["refused_while_held"] and detail["taken_after_holder_killed"])
    return CheckResult("single-app", ok, detail)


def hold_lock(lock_file: Path, held: Path) -> int:
    """The other side of :func:`check_single_app`: take the lock, say so, wait to be killed."""
    from strata_gui.core.platform.instance import InstanceLock

    lock = InstanceLock.try_acquire(lock_file)
    if lock is None:
        return 1
    held.write_text("held", encoding="utf-8")
    time.sleep(300)
    return 0


def check_gpu() -> CheckResult:
    from strata_gui.core.config.resources import kernels_dir
    from strata_gui.core.gpu import windows_probe
    from strata_gui.core.gpu.ids import load_gpu_table
    from strata_gui.core.gpu.windows import WindowsSnapshotDetector, make_windows_snapshot

    table = load_gpu_table(kernels_dir())
    sources: dict[str, Any] = {}

    def source(name: str, fn: Callable[[], Any], summary: Callable[[Any], Any]) -> Any:
        try:
            value = fn()
        except Exception as exc:  # one broken probe source must not stop the others
            sources[name] = f"error: {type(exc).__name__}: {exc}"
            return None
        sources[name] = summary(value) if value else "n/a"
        return value

    registry = source("registry", windows_probe.registry_dump,
                      lambda t: f"{len(t.splitlines())} lines")
    dxgi = source("dxgi", windows_probe.dxgi_adapters,
                  lambda a: [f"{d['Description']} ({d['VendorId']:04x}:{d['DeviceId']:04x})" for d in a])
    wmi = source("wmi", windows_probe.wmi_video_controllers,
                 lambda w: [c.get("Name") for c in (w if isinstance(w, list) else [w])])
    hip = source("hip", lambda: windows_probe.hip_runtime(table.windows_driver.hip_runtime_dlls),
                 lambda h: h.get("dll") or "n/a")
    pdh = source("pdh", windows_probe.pdh_sample, lambda t: f"{len(t.splitlines())} lines")
    snapshot = make_windows_snapshot(registry=registry or "", dxgi=dxgi or [], wmi=wmi or [],
                                     hip=hip or {"dll": None, "devices": [], "error": None},
                                     pdh=[pdh or ""], host={"cpu_name": "check", "cpu_threads": os.cpu_count(),
                                                             "ram_total": 0})
    report = WindowsSnapshotDetector(snapshot, table, "platform-check").detect()
    errors = [k for k, v in sources.items() if isinstance(v, str) and v.startswith("error")]
    return CheckResult("gpu", not errors, {
        "sources": sources,
        "gpus": [g.name for g in report.gpus],
        "notes": [str(n) for n in getattr(report, "notes", [])][:5],
    })


def check_autostart(scratch: Path) -> CheckResult:
    from strata_gui.core.serve.autostart import XdgAutostart, autostart_for, serve_command

    entry = autostart_for(os.environ) if sys.platform == "win32" else XdgAutostart(scratch / "xdg-config")
    if entry.enabled():  # the user turned it on: their entry is left as it is
        return CheckResult("autostart", True, {"where": entry.describe(), "skipped": "already on"})
    command = serve_command()
    entry.enable(command)
    on = entry.enabled()
    entry.disable()
    off = not entry.enabled()
    return CheckResult("autostart", on and off, {"where": entry.describe(), "command": command,
                                                 "enabled_read_back": on, "removed": off})


def run_checks(paths: AppPaths) -> PlatformReport:
    """Run every check that applies to this OS."""
    with tempfile.TemporaryDirectory(prefix="strata-check-") as tmp:
        scratch = Path(tmp)
        checks = [
            _guarded("paths", lambda: check_paths(paths, scratch)),
            _guarded("secrets", lambda: check_secrets(scratch)),
            _guarded("job", lambda: check_job(scratch)),
            _guarded("autostart", lambda: check_autostart(scratch)),
            _guarded("single-app", lambda: check_single_app(scratch)),
        ]
        if sys.platform == "win32":
            checks.append(_guarded("gpu", check_gpu))
        return PlatformReport(sys.platform, bool(getattr(sys, "frozen", False)), checks)
