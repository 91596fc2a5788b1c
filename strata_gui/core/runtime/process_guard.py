"""Keep engine processes from outliving Strata, even when Strata itself is killed.

Linux: the child asks the kernel for SIGKILL when its parent dies (``PR_SET_DEATHSIG``).
The signal fires when the *thread* that forked the child exits, so engines must be started
from a long-lived thread (the event loop's), never from an executor thread.

Windows: the child is put in a job object created with ``KILL_ON_JOB_CLOSE``; the job handle
lives as long as the app's process, and the OS kills every process of the job when it closes.
"""

from __future__ import annotations

import logging
import subprocess
import sys

from strata_gui.core.platform.child_guard import PR_SET_DEATHSIG, armed_by, guarded_launch, linux_preexec

log = logging.getLogger(__name__)

__all__ = ["PR_SET_DEATHSIG", "WindowsJob", "armed_by", "guarded_launch", "linux_preexec"]

class WindowsJob:
    """A job object that kills its processes when Strata exits (thin ctypes layer).

    Windows only; not exercised on the Linux test machine.
    """

    def __init__(self) -> None:
        self._handle: int | None = None

    def assign(self, proc: subprocess.Popen[str]) -> None:
        """Put ``proc`` into the job (created on first use). Failures are logged, not raised."""
        if sys.platform != "win32":
            return
        try:
            self._assign_win32(proc)
        except OSError:
            log.warning("could not put the engine into a job object", exc_info=True)

    if sys.platform == "win32":  # pragma: no cover - Windows only

        def _assign_win32(self, proc: subprocess.Popen[str]) -> None:
            import ctypes
            from ctypes import wintypes

            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)

            class IoCounters(ctypes.Structure):
                _fields_ = [(n, ctypes.c_ulonglong) for n in (
                    "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
                    "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]

            class BasicLimits(ctypes.Structure):
                _fields_ = [
                    ("PerProcessUserTimeLimit", ctypes.c_int64),
                    ("PerJobUserTimeLimit", ctypes.c_int64),
                    ("LimitFlags", wintypes.DWORD),
                    ("MinimumWorkingSetSize", ctypes.c_size_t),
                    ("MaximumWorkingSetSize", ctypes.c_size_t),
                    ("ActiveProcessLimit", wintypes.DWORD),
                    ("Affinity", ctypes.c_size_t),
                    ("PriorityClass", wintypes.DWORD),
                    ("SchedulingClass", wintypes.DWORD),
                ]

            class ExtendedLimits(ctypes.Structure):
                _fields_ = [
                    ("BasicLimitInformation", BasicLimits),
                    ("IoInfo", IoCounters),
                    ("ProcessMemoryLimit", ctypes.c_size_t),
                    ("JobMemoryLimit", ctypes.c_size_t),
                    ("PeakProcessMemoryUsed", ctypes.c_size_t),
                    ("PeakJobMemoryUsed", ctypes.c_size_t),
                ]

            job_object_extended_limit_information = 9
            job_object_limit_kill_on_job_close = 0x2000
            if self._handle is None:
                kernel32.CreateJobObjectW.restype = wintypes.HANDLE
                handle = kernel32.CreateJobObjectW(None, None)
                if not handle:
                    raise ctypes.WinError(ctypes.get_last_error())
                info = ExtendedLimits()
                info.BasicLimitInformation.LimitFlags = job_object_limit_kill_on_job_close
                ok = kernel32.SetInformationJobObject(
                    handle, job_object_extended_limit_information, ctypes.byref(info), ctypes.sizeof(info))
                if not ok:
                    raise ctypes.WinError(ctypes.get_last_error())
                self._handle = int(handle)
            proc_handle = int(proc._handle)  # type: ignore[attr-defined]
            if not kernel32.AssignProcessToJobObject(wintypes.HANDLE(self._handle), wintypes.HANDLE(proc_handle)):
                raise ctypes.WinError(ctypes.get_last_error())

    else:

        def _assign_win32(self, proc: subprocess.Popen[str]) -> None:
            return None
