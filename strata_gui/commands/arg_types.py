"""argparse types that refuse out-of-range numbers at the command line, with the range in the
message (``--port 70000`` used to reach the socket call and raise OverflowError)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from strata_gui.core.config import MAX_CONTEXT, MAX_PORT, RANGES


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number between ``low`` and ``high`` (inclusive)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: use {low} to {high}")
        return value

    parse.__name__ = "number"  # argparse names the type in its message: "invalid number value"
    return parse


PORT = int_in(0, MAX_PORT)  # 0 = any free port
CONTEXT = int_in(0, MAX_CONTEXT)
PARALLEL = int_in(*RANGES["parallel_slots"])
THREADS = int_in(*RANGES["threads"])
BATCH = int_in(1, 1 << 20)
DRAFT = int_in(0, 4096)
