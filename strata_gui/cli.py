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

from strata_gui import __version__
from strata_gui.core.errors import StrataError, describe
from strata_gui.core.logging_setup import close_logging, configure_logging, redact
from strata_gui.core.services import Services, build_services

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
    "image": "strata_gui.commands.image",
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


def _run_gui(argv: Sequence[str], self_test: bool, exit_when_shown: bool = False) -> int:
    # No cyclic garbage collection while the window and the chat page come up: the ~90 passes over
    # the objects of ~350 freshly imported modules cost ~12 ms and find next to nothing to free.
    # run_gui turns it back on as soon as the chat page is painted.
    gc.disable()
    # importlib keeps Qt out of the import graph of headless commands.
    app_module = importlib.import_module("strata_gui.app")
    return int(app_module.run_gui(list(argv), self_test=self_test, exit_when_shown=exit_when_shown))


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


def run_command(argv: Sequence[str]) -> int:
    """Run one headless command (``["engines", "list"]``) through the composed core.

    Raises:
        StrataError: the command failed with an explained condition (``main`` prints it).
    """
    args_list = list(argv)
    args = build_parser(_requested_command(args_list)).parse_args(args_list)
    if args.command is None:
        raise StrataError("No command given.", hint="See `strata --help`.")
    services = build_services(_environ(args))
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `strata` console script."""
    _utf8_when_redirected()
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_requested_command(args_list))
    args = parser.parse_args(args_list)
    if args.command is None:
        return _run_gui(args_list, self_test=args.self_test, exit_when_shown=args.exit_when_shown)
    configure_logging(build_services(_environ(args)).paths.log_file, verbose=args.verbose, to_stderr=True)
    try:
        code = run_command(args_list)
        # Flush here, not at interpreter exit, so a reader that went away is handled below.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except StrataError as exc:
        # A server's error may quote the request, key included: never print a known key.
        print(f"error: {redact(exc.message)}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {redact(exc.hint)}", file=sys.stderr)
        log.info("command failed: %s", exc, exc_info=exc.details is None)
        return 1
    except Exception as exc:  # the edge: a message and a hint, never a raw traceback
        err = describe(exc)
        print(f"error: {redact(err.message)}", file=sys.stderr)
        if err.hint:
            print(f"hint: {redact(err.hint)}", file=sys.stderr)
        log.error("command failed: %s", err.message, exc_info=exc)  # the traceback goes to the log file
        return 1
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return 130
    finally:
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


def gui_main() -> int:
    """Entry point of the windowed app (no console on Windows: stdout/stderr may be None)."""
    import os

    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
