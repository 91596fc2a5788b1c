"""The `strata` command: the GUI with no arguments, headless sub-commands otherwise.

Headless commands never import Qt; the GUI module is loaded only when it is needed.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, NoReturn

from strata_gui import __version__
from strata_gui.core.base import StrataError, describe, shown
from strata_gui.core.config import Services, build_services
from strata_gui.core.platform import close_logging, configure_logging, redact

if TYPE_CHECKING:
    from strata_gui.core.platform import InstanceLock, WarmSlot

log = logging.getLogger(__name__)

# What a shell reports for a command killed by SIGPIPE (128 + 13): `strata ... | head` stops early.
EXIT_BROKEN_PIPE = 141

# Each module adds one sub-command (see strata_gui/commands/__init__.py). Modules are imported
# only when their command is used (or for --help), so the GUI and light commands start fast.
COMMAND_MODULES = {
    "system": "strata_gui.commands.system",
    "gpu": "strata_gui.commands.gpu",
    "engines": "strata_gui.commands.engines",
    "models": "strata_gui.commands.models",
    "chat": "strata_gui.commands.chat",
    "chats": "strata_gui.commands.chats",
    "docs": "strata_gui.commands.docs",
    "image": "strata_gui.commands.image",
    "transcribe": "strata_gui.commands.transcribe",
    "bench": "strata_gui.commands.bench",
    "remote": "strata_gui.commands.remote",
    "mcp": "strata_gui.commands.mcp",
    "serve": "strata_gui.commands.serve",
    "rpc": "strata_gui.commands.rpc",
    "platform-check": "strata_gui.commands.platform_check",
}


def _requested_command(args: Sequence[str]) -> str | None:
    """The sub-command named in ``args``: "" for none (the GUI), None when unsure (load all)."""
    for a in args:
        if a == "--":
            break
        if a in ("-h", "--help"):
            return None
        if not a.startswith("-"):
            return a if a in COMMAND_MODULES else None
    return ""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; ``only`` limits which command modules are imported."""
    parser = argparse.ArgumentParser(
        prog="strata",
        description="Run local language models on AMD GPUs. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"Strata {__version__}")
    parser.add_argument("--self-test", action="store_true",
                        help="open the main window, visit every page, exit 0 (smoke test)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    # For bench/startup.py: print the wall-clock time the window was first shown, then quit.
    parser.add_argument("--exit-when-shown", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_path in COMMAND_MODULES.items():
        if only is None or only == name:
            importlib.import_module(module_path).register(sub)
    return parser


# `strata chat` options that change only the request, never how the engine is launched: with
# nothing else given, the chat's remembered engine may be launched before the core is imported.
_REQUEST_ONLY_OPTIONS = {"--system": True, "--preset": True, "--max-tokens": True, "--temperature": True, "--seed": True,
                         "--json": False, "--think": True, "--json-schema": True, "-v": False, "--verbose": False}


def _chat_model(args: Sequence[str]) -> str | None:
    """The model of a plain `strata chat` (``--model``; "" for the last model used), or None when
    an option may change the engine's launch (a warm start could not be used)."""
    model = ""
    i = 0
    rest = list(args)
    while i < len(rest):
        a = rest[i]
        name, eq, value = a.partition("=")
        if name in ("--model", "-m"):
            if eq:
                model = value
            elif i + 1 < len(rest):
                model, i = rest[i + 1], i + 1
        elif name in _REQUEST_ONLY_OPTIONS:
            i += 1 if _REQUEST_ONLY_OPTIONS[name] and not eq else 0
        elif a == "--":
            break
        elif a.startswith("-"):
            return None
        i += 1
    return model


def _early_engine(args: Sequence[str], command: str | None) -> WarmSlot:
    """Launch the chat's remembered engine now, while Python imports the core (see
    :mod:`strata_gui.core.platform.warm`): for the app (with the model chosen last and the
    setting on) and a plain `strata chat` of that model. An empty slot otherwise."""
    from strata_gui.core.platform import WarmSlot, prelaunch

    if command == "":
        if "--self-test" in args or "--exit-when-shown" in args:
            return WarmSlot()
        base = build_services()
        if not (base.settings.warm_start and base.settings.first_run_done and base.settings.last_model):
            return WarmSlot()
        return prelaunch(base.paths.warm_start_file, base.settings.last_model)
    if command == "chat":
        index = list(args).index("chat")
        model = _chat_model(list(args)[index + 1:]) if all(a in ("-v", "--verbose") for a in args[:index]) else None
        if model is None:
            return WarmSlot()
        base = build_services()
        if not base.settings.warm_start:
            return WarmSlot()
        return prelaunch(base.paths.warm_start_file, model or base.settings.last_model)
    return WarmSlot()


def _run_gui(argv: Sequence[str], self_test: bool, exit_when_shown: bool = False,
             warm: WarmSlot | None = None, instance: InstanceLock | None = None) -> int:
    # No cyclic garbage collection while the window and the chat page come up: the ~90 passes over
    # the objects of ~350 freshly imported modules cost ~12 ms and find next to nothing to free.
    # run_gui turns it back on as soon as the chat page is painted.
    gc.disable()
    # importlib keeps Qt out of the import graph of headless commands.
    app_module = importlib.import_module("strata_gui.app")
    try:
        return int(app_module.run_gui(list(argv), self_test=self_test, exit_when_shown=exit_when_shown, warm=warm,
                                      instance=instance))
    finally:
        if warm is not None:
            warm.close()  # never claimed (the app stopped before loading the model)
        if instance is not None:
            instance.release()


def _environ(args: argparse.Namespace) -> dict[str, str]:
    """The process environment plus replay options given on the command line (``--sysfs-root``)."""
    from strata_gui.core.gpu import ENV_SNAPSHOT, ENV_SYSFS_ROOT

    env = dict(os.environ)
    for attr, var in (("sysfs_root", ENV_SYSFS_ROOT), ("snapshot", ENV_SNAPSHOT)):
        value = getattr(args, attr, None)
        if value is not None:
            env.pop(ENV_SYSFS_ROOT, None)
            env.pop(ENV_SNAPSHOT, None)
            env[var] = str(value)
    return env


async def _run_command(args: argparse.Namespace, services: Services) -> int:
    # Every command gets the same core the GUI gets: one composition, so one set of decisions.
    from strata_gui.core.app_services import build_app_services

    app = build_app_services(services, keep_conversations=getattr(args, "keep_conversations", True))
    for notice in app.storage_notices:  # a damaged or locked database: the command still runs
        print(f"note: {notice}", file=sys.stderr)
    try:
        result = args.func(args, app)
        if isinstance(result, Coroutine):
            result = await result
        return int(result or 0)
    finally:
        await app.aclose()


def run_command(argv: Sequence[str], warm: WarmSlot | None = None) -> int:
    """Run one headless command (``["engines", "list"]``) through the composed core.

    Args:
        argv: The command and its options.
        warm: An engine launched early for it (see :func:`_early_engine`).

    Raises:
        StrataError: the command failed with an explained condition (``main`` prints it).
    """
    args_list = list(argv)
    args = build_parser(_requested_command(args_list)).parse_args(args_list)
    if args.command is None:
        if warm is not None:
            warm.close()
        raise StrataError("No command given.", hint="See `strata --help`.")
    services = build_services(_environ(args), warm=warm)
    if services.settings_notice:
        print(f"note: {services.settings_notice}", file=sys.stderr)
    # Imported here: the GUI path loads asyncio after its first paint (~20 ms with ssl and socket).
    import asyncio

    return asyncio.run(_run_command(args, services))


def _utf8_when_redirected() -> None:
    """Write UTF-8 to files and pipes on Windows.

    There Python encodes redirected output in the ANSI code page (cp1252), so a model name or
    user folder with letters outside it made `strata ... --json > file` crash with
    UnicodeEncodeError (found running the Windows build under Wine). Consoles are left alone:
    Python writes to them in UTF-16 already.
    """
    if sys.platform != "win32":
        return
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not stream.isatty():
            reconfigure(encoding="utf-8", errors="replace")


# GUI runs that are not the user's app: they neither take the one-app lock nor show the running app.
_NOT_THE_APP = frozenset({"--self-test", "--exit-when-shown", "-h", "--help", "--version"})


def _claim_app(args: Sequence[str]) -> tuple[InstanceLock | None, int | None]:
    """For the GUI: this process's one-app lock, or the exit code of a second launch that showed
    (or could not reach) the running app's window. Checked before anything loads: a second launch
    never launches an engine (see :mod:`strata_gui.core.platform.instance`)."""
    if _NOT_THE_APP.intersection(args):
        return None, None
    from strata_gui.core.config import AppPaths
    from strata_gui.core.platform import claim_or_ask, unanswered_text

    paths = AppPaths.from_environment()
    claim = claim_or_ask(paths.instance_lock_file, paths.instance_address_file)
    if claim.shown_by is not None:
        print(f"Strata is already running (process {claim.shown_by}); its window is in front now.")
        return None, 0
    if claim.unanswered:
        message, hint = unanswered_text(claim.holder)
        print(f"error: {message}\nhint: {hint}", file=sys.stderr)
        _show_unanswered(message, hint)
        return None, 1
    return claim.lock, None


def _show_unanswered(message: str, hint: str) -> None:
    """The same in a message box: a launch from the Start menu or a desktop icon has no console.
    Skipped where no screen can show it (Qt's offscreen platform, as in tests)."""
    if os.environ.get("QT_QPA_PLATFORM", "") in ("offscreen", "minimal"):
        return
    try:
        importlib.import_module("strata_gui.app").show_message_box(message, hint)
    except Exception:  # no display at all: stderr said it
        log.debug("could not show the already-running message", exc_info=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `strata` console script."""
    _utf8_when_redirected()
    args_list = list(sys.argv[1:] if argv is None else argv)
    requested = _requested_command(args_list)
    instance: InstanceLock | None = None
    if requested == "":
        instance, exit_code = _claim_app(args_list)
        if exit_code is not None:
            return exit_code
    warm = _early_engine(args_list, requested)  # loads while the rest of Strata is imported
    try:
        parser = build_parser(requested)
        args = parser.parse_args(args_list)
    except BaseException:  # --help, --version, a usage error: nobody will claim it
        warm.close()
        raise
    if args.command is None:
        return _run_gui(args_list, self_test=args.self_test, exit_when_shown=args.exit_when_shown, warm=warm,
                        instance=instance)
    configure_logging(build_services(_environ(args)).paths.log_file, verbose=args.verbose, to_stderr=True)
    try:
        code = run_command(args_list, warm)
        # Flush here, not at interpreter exit, so a reader that went away is handled below.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except StrataError as exc:
        # A server's error may quote the request, key included: never print a known key.
        # A tool server's or a remote engine's words may be in it: shown, so a terminal does not act on them.
        print(f"error: {shown(redact(exc.message))}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {shown(redact(exc.hint))}", file=sys.stderr)
        # An expected condition (no model given, a missing file): one line, its details if any, no
        # traceback (issue 48: a usage error wrote one into the log). Bugs are InternalError, below.
        log.info("command failed: %s%s", exc, f" ({exc.details})" if exc.details else "")
        return 1
    except Exception as exc:  # the edge: a message and a hint, never a raw traceback
        err = describe(exc)
        print(f"error: {shown(redact(err.message))}", file=sys.stderr)
        if err.hint:
            print(f"hint: {shown(redact(err.hint))}", file=sys.stderr)
        log.error("command failed: %s", err.message, exc_info=exc)  # the traceback goes to the log file
        return 1
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return 130
    finally:
        warm.close()  # not claimed (the command failed before its engine start)
        close_logging()


def _reader_went_away() -> int:
    """stdout's reader closed the pipe (``strata ... | head -1``): stop quietly, like cat or ls.

    Python's own recipe (docs: "Note on SIGPIPE"): point stdout at devnull so the interpreter's
    final flush of what is still buffered does not raise again and print a traceback.
    """
    log.debug("stdout closed by its reader; stopping")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout has no file descriptor (replaced in tests, or None)
        pass
    return EXIT_BROKEN_PIPE


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once a command is done, skipping the interpreter's teardown.

    By then every engine is stopped, the databases and the log are closed and the output is
    flushed here; what is left is Python unloading ~400 modules one by one (~60 ms of a one-shot
    `strata chat`, measured by bench/coldstart.py). When a thread that is not a daemon still runs,
    the usual exit waits for it, as Python would.
    """
    import threading

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that went away, a closed stream
            pass
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    os._exit(code)


def console_main() -> NoReturn:
    """Entry point of the `strata` console script and `python -m strata_gui`."""
    exit_now(main())


def gui_main() -> NoReturn:
    """Entry point of the windowed app (no console on Windows: stdout/stderr may be None).

    It ends as the console entry does, without the interpreter's teardown: unloading the modules
    after the window closed destroyed Qt's objects in an order it does not expect, and about one
    close in four (after stopping a reply) ended in a segmentation fault, exit code 139, where
    everything had been saved and the app meant to exit 0.
    """
    import os

    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    exit_now(main(sys.argv[1:]))


if __name__ == "__main__":
    console_main()
