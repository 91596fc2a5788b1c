"""Engines die with Strata on Linux: the parent-death signal every engine process is started with.

The child asks the kernel for SIGKILL when its parent dies (``PR_SET_DEATHSIG``). The signal fires
when the *thread* that forked the child exits, so engines must be started from a long-lived
thread (the event loop's, or the main thread before it runs). Kept apart from
:mod:`strata_gui.core.runtime.process_guard` (the Windows job object) so the warm start
(:mod:`strata_gui.core.platform.warm`) can arm it before the core is imported.

Where util-linux's ``setpriv`` exists (every mainstream distribution), the engine is started as
``setpriv --pdeathsig KILL -- <engine>``: setpriv arms the signal and executes the engine, which
keeps it (it survives ``execve``). Python then starts the child with ``vfork`` (~0.2 ms); a
``preexec_fn`` makes it ``fork`` the whole app instead, copying its page tables (~8 ms for a
150 MB process, on every engine start: the model server's first request waits for it). Without
setpriv, the ``preexec_fn``.
"""

from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Callable, Sequence

PR_SET_DEATHSIG = 1


def linux_preexec(parent_pid: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` arming the parent-death signal, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import os
    import signal

    libc = ctypes.CDLL(None, use_errno=True)

    def arm() -> None:
        libc.prctl(PR_SET_DEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        # The parent may have died between fork and prctl: then nobody will signal us.
        if os.getppid() != parent_pid:
            os._exit(1)

    return arm


@functools.lru_cache(maxsize=1)
def _setpriv() -> str | None:
    found = shutil.which("setpriv")
    return found if found and sys.platform.startswith("linux") else None


def guarded_launch(argv: Sequence[str], parent_pid: int) -> tuple[list[str], Callable[[], None] | None]:
    """What to pass to ``Popen`` (the command line and its ``preexec_fn``) so that ``argv`` dies with
    this process on Linux: ``setpriv --pdeathsig KILL -- argv`` and no ``preexec_fn`` where setpriv
    exists, else ``argv`` and :func:`linux_preexec`. Elsewhere ``argv`` unchanged and None.

    With setpriv the child checks nothing between its start and the arming: an app that dies in
    that millisecond leaves the engine behind (the ``preexec_fn`` catches it; a crash there is the
    price of not copying the app for every engine).
    """
    setpriv = _setpriv()
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL", "--", *argv], None
    return list(argv), linux_preexec(parent_pid)


def armed_by() -> str:
    """How :func:`guarded_launch` arms the signal here: "setpriv", "preexec_fn", or "" (not Linux)."""
    if not sys.platform.startswith("linux"):
        return ""
    return "setpriv" if _setpriv() is not None else "preexec_fn"
