"""One engine pool per machine: the app takes the place of the model server running in the background.

With "Start the model server when I sign in" on, a headless `strata serve` runs from sign-in with its
own engine pool. Opening the app beside it made two pools: a model the chat and an API client both
use was loaded twice, and the app could not serve on the port the background server held. Now:

* A headless `strata serve` holds ``<data>/serve.lock`` while it runs and answers ``hand-over`` on
  a loopback port written with a token to ``<data>/serve-instance.json`` (the one-app machinery of
  :mod:`strata_gui.core.platform.instance`). It agrees only when it serves the plain library (started with
  no ``--model``, ``--engine``, device or load options; the sign-in entry is such a server): it
  answers with its port and whether it listens on the network, stops listening (requests in flight
  get the usual grace), unloads its models and exits.
* The app, once its window is up, asks; when the background server agreed and has exited (its lock
  dropped), the app serves on the same port from its own pool, the chat's model included.
* When the app closes with its server still on, it starts the background server again, detached,
  with the same command, so other apps keep their API.

Between the background server closing its port and the app listening there is a gap (typically
well under a second) in which new connections are refused.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strata_gui.core.platform.instance import (
    HAND_OVER,
    ActivationServer,
    InstanceAddress,
    InstanceLock,
    request,
)

if TYPE_CHECKING:
    from strata_gui.core.config.paths import AppPaths
    from strata_gui.core.serve.service import ServeService

log = logging.getLogger(__name__)

#: How long the app waits for the background server to finish its requests and exit.
EXIT_WAIT_S = 30.0


@dataclass(frozen=True)
class HandedOver:
    """What the background server told the app that took its place."""

    port: int
    lan: bool
    relaunch: list[str] = field(default_factory=list)  # the command that starts it again

    def start_again(self) -> subprocess.Popen[bytes] | None:
        """Start the background server again, detached from the app (it outlives it); its process,
        or None when it could not be started."""
        if not self.relaunch:
            return None
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = (getattr(subprocess, "DETACHED_PROCESS", 0)
                                       | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
                                       | getattr(subprocess, "CREATE_NO_WINDOW", 0))
        else:
            kwargs["start_new_session"] = True  # not in the app's session: a closing terminal spares it
        try:
            process = subprocess.Popen(self.relaunch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, close_fds=True, **kwargs)
        except OSError:
            log.warning("could not start the background model server again: %s", self.relaunch, exc_info=True)
            return None
        log.info("the model server goes back to the background: %s", subprocess.list2cmdline(self.relaunch))
        return process


class BackgroundServer:
    """A headless `strata serve`'s side: holds the serve lock and answers ``hand-over``."""

    def __init__(self, paths: AppPaths, *, port: int, lan: bool, relaunch: Sequence[str],
                 plain: bool, on_hand_over: Callable[[], None]) -> None:
        self._paths = paths
        self._answer = {"port": port, "lan": lan, "relaunch": list(relaunch)}
        self._plain = plain
        self._on_hand_over = on_hand_over
        self._lock: InstanceLock | None = None
        self._server: ActivationServer | None = None
        self.handed_over = False

    async def start(self) -> bool:
        """Take the serve lock and listen; False (and nothing held) when another server holds it or
        no loopback port can be had: this server then simply cannot be taken over."""
        try:
            self._lock = InstanceLock.try_acquire(self._paths.serve_lock_file)
        except OSError:
            log.warning("cannot create %s; the app will not take this server over",
                        self._paths.serve_lock_file, exc_info=True)
            return False
        if self._lock is None:
            log.info("another model server holds %s; the app will not take this one over",
                     self._paths.serve_lock_file)
            return False
        self._server = ActivationServer(self._paths.serve_address_file, self._act, actions=(HAND_OVER,))
        try:
            await self._server.start()
        except OSError:
            log.warning("cannot listen for the app; it will not take this server over", exc_info=True)
            self._server = None
            self._lock.release()
            self._lock = None
            return False
        return True

    def _act(self, action: str) -> dict[str, Any]:
        if action != HAND_OVER:
            return {"ok": False, "why": "unknown action"}
        if not self._plain:
            return {"ok": False, "why": "this server was started with its own models or options"}
        if not self.handed_over:
            self.handed_over = True
            log.info("the Strata app takes this model server's place; stopping")
            asyncio.get_running_loop().call_soon(self._on_hand_over)
        return dict(self._answer)

    async def aclose(self) -> None:
        """Stop answering; the lock is released last (the app waits for it to know the port is free)."""
        server, self._server = self._server, None
        if server is not None:
            await server.aclose()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


async def take_over(paths: AppPaths, serve: ServeService, *, exit_wait_s: float = EXIT_WAIT_S) -> HandedOver | None:
    """Take the place of the headless model server, if one runs and agrees (see the module).

    Returns what it said (keep it: :meth:`HandedOver.start_again` at close), or None when no such
    server runs or it declined (it keeps running). When the app cannot serve on that port after all,
    the background server is started again at once and None is returned.
    """
    address = InstanceAddress.read(paths.serve_address_file)
    if address is None:
        return None
    probe = InstanceLock.try_acquire(paths.serve_lock_file)
    if probe is not None:  # an address file left by a server that ended without removing it
        probe.release()
        return None
    answer = await asyncio.to_thread(request, address, HAND_OVER)
    if not answer or not answer.get("ok"):
        log.info("the background model server stays: %s", (answer or {}).get("why", "no answer"))
        return None
    try:
        handed = HandedOver(port=int(answer["port"]), lan=bool(answer["lan"]),
                        relaunch=[str(a) for a in answer.get("relaunch") or []])
    except (KeyError, TypeError, ValueError):
        log.warning("the background model server answered %r", answer)
        return None
    deadline = time.monotonic() + exit_wait_s
    while True:  # its lock drops when the process has ended (port closed, models unloaded)
        lock = InstanceLock.try_acquire(paths.serve_lock_file)
        if lock is not None:
            lock.release()
            break
        if time.monotonic() > deadline:
            log.warning("the background model server (process %d) did not stop within %.0f s",
                        address.pid, exit_wait_s)
            return None
        await asyncio.sleep(0.02)
    try:
        await serve.start(lan=handed.lan, port=handed.port)
    except Exception:
        log.warning("could not serve on port %d in the app; starting the background server again",
                    handed.port, exc_info=True)
        handed.start_again()
        return None
    log.info("the app now serves on port %d in place of the background model server (process %d)",
             handed.port, address.pid)
    serve.taken_over = handed
    return handed
