"""Engines die with Strata on Linux: the parent-death signal every engine process is started with.

The child asks the kernel for SIGKILL when its parent dies (``PR_SET_DEATHSIG``). The signal fires
when the *thread* that forked the child exits, so engines must be started from a long-lived
thread (the event loop's, or the main thread before it runs). Kept apart from
:mod:`strata_gui.core.runtime.process_guard` (the Windows job object) so the warm start
(:mod:`strata_gui.core.warm`) can arm it before the core is imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

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
