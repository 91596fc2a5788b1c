"""hipBLASLt tuning tables: check one is valid for this engine and GPU before it is used.

A table is valid for exactly one (gfx target, hipBLASLt revision) pair. The library ignores a
mismatched table silently and prefill falls back to untuned kernels, so Strata checks first
(line-1 revision, gfx target, header key columns, every row) and says plainly what is wrong.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import TuningTableError

KEY_COLUMNS = ("transA", "transB", "batch_count", "m", "n", "k", "a_type", "b_type", "c_type",
               "compute_type", "solution_index")
_INT_COLUMNS = ("batch_count", "m", "n", "k", "solution_index")
_UNTUNED = "prefill will use untuned kernels"
MAX_TABLE_BYTES = 64 << 20


@dataclass(frozen=True)
class TuningCheck:
    """Outcome of checking a table.

    Attributes:
        ok: True when the table may be handed to hipBLASLt.
        reason: Why it is accepted or rejected, for people.
        revision: The revision on line 1, if readable.
        rows: Number of GEMM rows.
        failed: Which check failed: ``"read"``, ``"revision"`` (line 1, or the engine's revision),
            ``"gfx"``, ``"header"`` or ``"row"``; "" when it passed.
    """

    ok: bool
    reason: str
    revision: str | None = None
    rows: int = 0
    failed: str = ""


def check_tuning_table(path: Path, *, table_gfx: str, gpu_gfx: str | None,
                       engine_revision: str | None) -> TuningCheck:
    """Check ``path`` against the GPU and the engine's hipBLASLt revision. Never raises."""
    try:
        if path.stat().st_size > MAX_TABLE_BYTES:
            return TuningCheck(False, f"{path.name} is too large to be a tuning table: {_UNTUNED}", failed="read")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return TuningCheck(False, f"tuning table {path.name} could not be read ({exc}): {_UNTUNED}", failed="read")
    first, _, rest = text.partition("\n")
    first = first.strip()
    if not first.startswith("Git Version:"):
        return TuningCheck(False, f"{path.name} has no 'Git Version:' line 1, so hipBLASLt would ignore it: {_UNTUNED}", failed="revision")
    revision = first.split(":", 1)[1].strip()
    if not revision:
        return TuningCheck(False, f"{path.name} names no hipBLASLt revision on line 1: {_UNTUNED}", failed="revision")
    if engine_revision is None:
        return TuningCheck(False, f"this engine's hipBLASLt revision is unknown, so the table for {revision} "
                                  f"cannot be trusted: {_UNTUNED}", revision, failed="revision")
    if revision.lower() != engine_revision.lower():
        return TuningCheck(False, f"table is for hipBLASLt {revision}, this engine ships {engine_revision}: "
                                  f"{_UNTUNED}", revision, failed="revision")
    if gpu_gfx is None:
        return TuningCheck(False, f"the GPU's gfx target is unknown, the table is for {table_gfx}: {_UNTUNED}",
                           revision, failed="gfx")
    if gpu_gfx.lower() != table_gfx.lower():
        return TuningCheck(False, f"table is for {table_gfx}, this GPU is {gpu_gfx}: {_UNTUNED}", revision, failed="gfx")
    reader = csv.reader(io.StringIO(rest))
    header: list[str] | None = None
    rows = 0
    for lineno, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if header is None:
            header = [c.strip() for c in row]
            missing = [k for k in KEY_COLUMNS if k not in header]
            if missing:
                return TuningCheck(False, f"{path.name} header lacks key columns {', '.join(missing)}: {_UNTUNED}",
                                   revision, failed="header")
            continue
        if len(row) != len(header):
            return TuningCheck(False, f"{path.name} line {lineno} has {len(row)} fields, the header {len(header)}: "
                                      f"{_UNTUNED}", revision, rows, failed="row")
        values = dict(zip(header, (c.strip() for c in row), strict=True))
        bad = [c for c in _INT_COLUMNS if not values[c].lstrip("-").isdigit()]
        if values["transA"] not in ("N", "T", "C") or values["transB"] not in ("N", "T", "C"):
            bad.append("transA/transB")
        if bad:
            return TuningCheck(False, f"{path.name} line {lineno} does not parse ({', '.join(bad)}): {_UNTUNED}",
                               revision, rows, failed="row")
        rows += 1
    if header is None or rows == 0:
        return TuningCheck(False, f"{path.name} holds no tuning rows: {_UNTUNED}", revision, failed="row")
    return TuningCheck(True, f"tuned kernels for {table_gfx} with hipBLASLt {revision} ({rows} shapes)", revision, rows)


def validate_tuning_table(path: Path, *, table_gfx: str, gpu_gfx: str | None,
                          engine_revision: str | None) -> TuningCheck:
    """Like :func:`check_tuning_table` but raises :class:`TuningTableError` when rejected."""
    result = check_tuning_table(path, table_gfx=table_gfx, gpu_gfx=gpu_gfx, engine_revision=engine_revision)
    if not result.ok:
        raise TuningTableError(result.reason[:1].upper() + result.reason[1:] + ".",
                               hint="Get the table made for this engine's hipBLASLt revision and your GPU.")
    return result
