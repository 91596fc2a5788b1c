"""Headless CLI commands (no Qt). Each module exposes ``register(subparsers)``.

``register`` adds one sub-command whose parser has ``func=run`` set by ``set_defaults``;
``run(args, services) -> int`` is called with the built :class:`~strata_gui.core.services.Services`
and returns the exit code. Errors derived from StrataError are printed by cli.py with their hint.
"""
