"""Headless CLI commands (no Qt). Each module exposes ``register(subparsers)``.

``register`` adds one sub-command whose parser has ``func=run`` set by ``set_defaults``;
``run(args, app) -> int`` (or a coroutine of it) is called with the core container that
:func:`strata_gui.core.app_services.build_app_services` built, the same one the GUI uses, and returns
the exit code. Commands only ask the core and print: no decision about engines, downloads or settings
is made here. Errors derived from StrataError are printed by cli.py with their hint.
"""
