"""SQLite storage for request throughput history, benchmark results and per-model engine choices.

Lives in the same database file as the conversations (WAL mode), in its own tables with their
own schema version, so history survives restarts and either component migrates on its own.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.bench.stats import median, percentile
from strata_gui.core.platform.storage import open_database, storage_error
from strata_gui.core.runtime.depth import DepthPoint, DepthProfile

SCHEMA_VERSION = 6

# What the database holds, and what a failed write was doing, in the storage errors' sentences.
_STATISTICS = QT_TRANSLATE_NOOP("Core", "statistics and engine choices")
_SAVING = QT_TRANSLATE_NOOP("Core", "save the statistics")

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE IF NOT EXISTS metrics_requests (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        model TEXT NOT NULL,
        engine TEXT NOT NULL,
        backend TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT 'chat',
        prompt_tokens INTEGER,
        cached_tokens INTEGER,
        output_tokens INTEGER,
        prefill_tps REAL,
        decode_tps REAL,
        ttft_s REAL
    );
    CREATE INDEX IF NOT EXISTS metrics_requests_at ON metrics_requests(at);
    CREATE TABLE IF NOT EXISTS bench_results (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        model TEXT NOT NULL,
        engine TEXT NOT NULL,
        backend TEXT NOT NULL,
        gpu TEXT NOT NULL,
        prefill_tokens INTEGER NOT NULL,
        gen_tokens INTEGER NOT NULL,
        reps INTEGER NOT NULL,
        prefill_tps_json TEXT NOT NULL,
        decode_tps_json TEXT NOT NULL,
        error TEXT,
        tuning_active INTEGER
    );
    CREATE INDEX IF NOT EXISTS bench_results_key ON bench_results(model, gpu, engine);
    CREATE TABLE IF NOT EXISTS model_engine_choice (
        model TEXT PRIMARY KEY,
        engine TEXT NOT NULL,
        source TEXT NOT NULL,
        at REAL NOT NULL
    );
    """,
    # Engine choices keyed by the model's identity and the GPU, not the file name (two models with
    # the same name, or one model on two GPUs, no longer share a choice). Name-keyed choices cannot
    # be mapped to an identity, so they are left behind in the old table.
    2: """
    ALTER TABLE bench_results ADD COLUMN model_key TEXT NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS bench_results_identity ON bench_results(model_key, gpu, engine);
    CREATE TABLE IF NOT EXISTS engine_choice (
        model_key TEXT NOT NULL,
        gpu TEXT NOT NULL,
        model_name TEXT NOT NULL,
        engine TEXT NOT NULL,
        source TEXT NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (model_key, gpu)
    );
    """,
    # The benchmark measures at a context depth too (0: an empty context, as before this column).
    3: """
    ALTER TABLE bench_results ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
    """,
    # Image generation: seconds per step and per image, per engine (the Images page and the
    # image benchmark write here; dashboards read it next to the text requests).
    4: """
    CREATE TABLE IF NOT EXISTS image_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        model TEXT NOT NULL,
        engine TEXT NOT NULL,
        backend TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT 'images',
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        steps INTEGER NOT NULL,
        images INTEGER NOT NULL,
        seconds_per_step REAL,
        seconds_per_image REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS image_runs_key ON image_runs(model, engine, at);
    """,
    # Each reply's decode speed as a share of the hardware's memory-bandwidth limit (0.71: 71 %),
    # for the dashboard's chart over time; NULL where no limit was known (earlier rows, remote
    # engines, the local API).
    5: """
    ALTER TABLE metrics_requests ADD COLUMN limit_share REAL;
    """,
    # Each reply's prefill speed as a share of the device's peak arithmetic for the model's weights
    # (0.18: 18 %), beside the decode share; NULL where no ceiling was known or the prompt was short.
    6: """
    ALTER TABLE metrics_requests ADD COLUMN prefill_share REAL;
    """,
}


@dataclass(frozen=True)
class RequestRecord:
    """Throughput of one chat request (or one request from another app)."""

    at: float
    model: str
    engine: str
    backend: str = ""
    source: str = "chat"
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None
    ttft_s: float | None = None
    limit_share: float | None = None  # decode ÷ the memory-bandwidth limit (None: not known)
    prefill_share: float | None = None  # prefill ÷ the compute limit (None: not known, or a short prompt)
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Aggregates:
    """Median and p90 of the selected requests."""

    count: int
    prefill_median: float | None
    prefill_p90: float | None
    decode_median: float | None
    decode_p90: float | None
    ttft_median: float | None
    ttft_p90: float | None
    share_median: float | None = None  # of the requests whose memory limit was known
    prefill_share_median: float | None = None  # of the requests whose compute limit was known


@dataclass
class BenchResult:
    """One engine's benchmark on one model and GPU at one context depth.

    ``depth`` is how many tokens were already in the context when the prefill of
    ``prefill_tokens`` and the decode of ``gen_tokens`` were measured (0: an empty context).
    """

    model: str
    engine: str
    backend: str
    gpu: str
    prefill_tokens: int
    gen_tokens: int
    reps: int
    prefill_tps: list[float] = field(default_factory=list)
    decode_tps: list[float] = field(default_factory=list)
    error: str | None = None
    tuning_active: bool | None = None
    at: float = 0.0
    id: int | None = None
    model_key: str = ""
    depth: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.prefill_tps) and bool(self.decode_tps)

    @property
    def prefill_median(self) -> float | None:
        return median(self.prefill_tps)

    @property
    def decode_median(self) -> float | None:
        return median(self.decode_tps)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["prefill_median"] = self.prefill_median
        data["decode_median"] = self.decode_median
        return data


@dataclass(frozen=True)
class ImageRun:
    """One image batch as stored: who made it, its size and steps, and how long it took."""

    model: str
    engine: str
    backend: str
    width: int
    height: int
    steps: int
    images: int
    seconds_per_step: float | None
    seconds_per_image: float
    source: str = "images"
    at: float = 0.0
    id: int | None = None


@dataclass(frozen=True)
class EngineChoice:
    """The engine chosen for one model (by identity) on one GPU."""

    model: str  # the model's file name, for people
    engine: str
    source: str  # "measured" (from a benchmark) or "user"
    at: float
    model_key: str = ""
    gpu: str = ""


@dataclass(frozen=True)
class ChoicesChanged:
    """A model's engine choice or benchmark results changed (on ``gpu``)."""

    model_key: str
    gpu: str


class MetricsStore:
    """Thread-safe access to the metrics tables.

    Args:
        path: The SQLite database file (shared with the chat store).
        clock: Wall clock for timestamps.
        busy_timeout: Seconds a lock held by another program is waited for before
            :class:`~strata_gui.core.platform.storage.DatabaseLockedError`.

    Raises:
        DatabaseLockedError: Another program holds the file.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        # Engine choices and benchmark results decide the chat's engine: the resolver listens.
        self.events: Listeners[ChoicesChanged] = Listeners()


        def setup(db: sqlite3.Connection) -> None:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._db = db
            self._migrate()

        # A damaged file is moved aside and a fresh one started (``notice`` says where the old one
        # is); a locked one raises DatabaseLockedError after the busy timeout, with its own hint.
        self._db, self.notice = open_database(path, setup, what=_STATISTICS, clock=clock,
                                              check_same_thread=False, timeout=busy_timeout)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                with self._db:
                    yield self._db
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, _SAVING) from exc

    def _migrate(self) -> None:
        # Shared with the chat store: one row per component.
        self._db.execute("CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        row = self._db.execute("SELECT version FROM schema_version WHERE component='metrics'").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StorageError(QT_TRANSLATE_NOOP("Core", "The statistics were written by a newer Strata."),
                               hint=QT_TRANSLATE_NOOP("Core", "Update Strata, or move the database file aside."))
        for version in range(current + 1, SCHEMA_VERSION + 1):
            with self._db:
                self._db.executescript(_MIGRATIONS[version])
                self._db.execute("INSERT OR REPLACE INTO schema_version (component, version) VALUES ('metrics', ?)",
                                 (version,))

    # -- image runs ----------------------------------------------------------------------------------
    def record_image(self, rec: ImageRun) -> ImageRun:
        """Keep one finished image batch (seconds per step and per image on one engine)."""
        at = rec.at or self._clock()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO image_runs (at, model, engine, backend, source, width, height, steps, images,"
                " seconds_per_step, seconds_per_image) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (at, rec.model, rec.engine, rec.backend, rec.source, rec.width, rec.height, rec.steps, rec.images,
                 rec.seconds_per_step, rec.seconds_per_image))
        return ImageRun(**{**asdict(rec), "at": at, "id": cur.lastrowid})

    def image_runs(self, *, model: str | None = None, engine: str | None = None, since: float | None = None,
                   source: str | None = None, limit: int = 1000) -> list[ImageRun]:
        """Image batches, newest first."""
        where: list[str] = []
        args: list[object] = []
        for col, val in (("model", model), ("engine", engine), ("source", source)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        sql = ("SELECT id, at, model, engine, backend, source, width, height, steps, images, seconds_per_step,"
               " seconds_per_image FROM image_runs" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY at DESC LIMIT ?")
        with self._tx() as db:
            rows = db.execute(sql, (*args, limit)).fetchall()
        return [ImageRun(model=r[2], engine=r[3], backend=r[4], source=r[5], width=r[6], height=r[7], steps=r[8],
                         images=r[9], seconds_per_step=r[10], seconds_per_image=r[11], at=r[1], id=r[0])
                for r in rows]

    # -- request history ---------------------------------------------------------------------------
    def record_request(self, rec: RequestRecord) -> RequestRecord:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO metrics_requests (at, model, engine, backend, source, prompt_tokens, cached_tokens,"
                " output_tokens, prefill_tps, decode_tps, ttft_s, limit_share, prefill_share)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (rec.at or self._clock(), rec.model, rec.engine, rec.backend, rec.source, rec.prompt_tokens,
                 rec.cached_tokens, rec.output_tokens, rec.prefill_tps, rec.decode_tps, rec.ttft_s, rec.limit_share,
                 rec.prefill_share),
            )
        fields = asdict(rec)
        fields.update(id=cur.lastrowid, at=rec.at or self._clock())
        return RequestRecord(**fields)

    def requests(self, *, model: str | None = None, engine: str | None = None, since: float | None = None,
                 limit: int = 10_000) -> list[RequestRecord]:
        """Requests, oldest first, filtered by model/engine/time."""
        where: list[str] = []
        args: list[object] = []
        for column, value in (("model", model), ("engine", engine)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        sql = ("SELECT id, at, model, engine, backend, source, prompt_tokens, cached_tokens, output_tokens,"
               " prefill_tps, decode_tps, ttft_s, limit_share, prefill_share FROM metrics_requests")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*args, limit)).fetchall()
        out = [RequestRecord(id=r[0], at=r[1], model=r[2], engine=r[3], backend=r[4], source=r[5],
                             prompt_tokens=r[6], cached_tokens=r[7], output_tokens=r[8], prefill_tps=r[9],
                             decode_tps=r[10], ttft_s=r[11], limit_share=r[12], prefill_share=r[13]) for r in rows]
        out.reverse()
        return out

    def missing_prefill_shares(self, min_prompt: int) -> list[RequestRecord]:
        """Local replies recorded before prefill shares were kept (or without a ceiling then)."""
        return [r for r in self.requests(limit=100_000) if r.prefill_share is None and r.prefill_tps
                and (r.prompt_tokens or 0) >= min_prompt and r.backend != "remote"]

    def set_prefill_share(self, request_id: int, share: float) -> None:
        with self._tx() as db:
            db.execute("UPDATE metrics_requests SET prefill_share=? WHERE id=?", (share, request_id))

    def distinct(self, column: str) -> list[str]:
        if column not in ("model", "engine"):
            raise ValueError(column)
        with self._lock:
            return [r[0] for r in self._db.execute(f"SELECT DISTINCT {column} FROM metrics_requests ORDER BY 1")]

    @staticmethod
    def aggregate(records: list[RequestRecord]) -> Aggregates:
        pre = [r.prefill_tps for r in records if r.prefill_tps]
        dec = [r.decode_tps for r in records if r.decode_tps]
        ttft = [r.ttft_s for r in records if r.ttft_s is not None]
        shares = [r.limit_share for r in records if r.limit_share is not None]
        prefill_shares = [r.prefill_share for r in records if r.prefill_share is not None]
        return Aggregates(len(records), median(pre), percentile(pre, 90), median(dec), percentile(dec, 90),
                          median(ttft), percentile(ttft, 90), median(shares), median(prefill_shares))

    # -- benchmarks ---------------------------------------------------------------------------------
    def save_bench(self, res: BenchResult) -> BenchResult:
        res.at = res.at or self._clock()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO bench_results (at, model, engine, backend, gpu, prefill_tokens, gen_tokens, reps,"
                " prefill_tps_json, decode_tps_json, error, tuning_active, model_key, depth)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (res.at, res.model, res.engine, str(res.backend), res.gpu, res.prefill_tokens, res.gen_tokens,
                 res.reps, json.dumps(res.prefill_tps), json.dumps(res.decode_tps), res.error,
                 None if res.tuning_active is None else int(res.tuning_active), res.model_key, res.depth),
            )
        res.id = cur.lastrowid
        self.events.emit(ChoicesChanged(res.model_key, res.gpu))
        return res

    def bench_results(self, *, model: str | None = None, gpu: str | None = None,
                      latest_only: bool = True, model_key: str | None = None) -> list[BenchResult]:
        """Saved results, newest first; with ``latest_only`` one per (model, engine, gpu, depth)."""
        where: list[str] = []
        args: list[object] = []
        if model:
            where.append("model = ?")
            args.append(model)
        if model_key:
            where.append("model_key = ?")
            args.append(model_key)
        if gpu:
            where.append("gpu = ?")
            args.append(gpu)
        sql = ("SELECT id, at, model, engine, backend, gpu, prefill_tokens, gen_tokens, reps, prefill_tps_json,"
               " decode_tps_json, error, tuning_active, model_key, depth FROM bench_results")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at DESC, id DESC"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        out: list[BenchResult] = []
        seen: set[tuple[str, str, str, int]] = set()
        for r in rows:
            key = (r[2], r[3], r[5], r[14])
            if latest_only and key in seen:
                continue
            seen.add(key)
            out.append(BenchResult(id=r[0], at=r[1], model=r[2], engine=r[3], backend=r[4], gpu=r[5],
                                   prefill_tokens=r[6], gen_tokens=r[7], reps=r[8],
                                   prefill_tps=json.loads(r[9]), decode_tps=json.loads(r[10]), error=r[11],
                                   tuning_active=None if r[12] is None else bool(r[12]), model_key=r[13],
                                   depth=r[14]))
        return out

    def depth_profile(self, model_key: str, gpu: str) -> DepthProfile:
        """Decode speed per engine and depth for a model on a GPU, from its latest benchmark of each
        engine at each depth (engines measured at one depth only do not take part)."""
        return DepthProfile(DepthPoint(r.engine, r.depth, r.decode_median or 0.0, r.prefill_median or 0.0)
                            for r in self.bench_results(model_key=model_key, gpu=gpu) if r.ok)

    def start_prefill(self, model_key: str, gpu: str) -> dict[str, float]:
        """Prefill tokens/s per engine at depth 0 for a model on a GPU, from its latest benchmark."""
        out: dict[str, float] = {}
        for r in self.bench_results(model_key=model_key, gpu=gpu):  # newest first: the first one wins
            if r.ok and r.depth == 0 and r.prefill_median and r.engine not in out:
                out[r.engine] = r.prefill_median
        return out

    # -- per-model engine choice ----------------------------------------------------------------------
    def set_choice(self, model_key: str, gpu: str, engine: str, source: str, model_name: str = "") -> EngineChoice:
        choice = EngineChoice(model_name, engine, source, self._clock(), model_key, gpu)
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO engine_choice (model_key, gpu, model_name, engine, source, at)"
                       " VALUES (?,?,?,?,?,?)", (model_key, gpu, model_name, engine, source, choice.at))
        self.events.emit(ChoicesChanged(model_key, gpu))
        return choice

    def clear_choice(self, model_key: str, gpu: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM engine_choice WHERE model_key = ? AND gpu = ?", (model_key, gpu))
        self.events.emit(ChoicesChanged(model_key, gpu))

    def choice(self, model_key: str, gpu: str) -> EngineChoice | None:
        with self._lock:
            row = self._db.execute("SELECT model_name, engine, source, at, model_key, gpu FROM engine_choice"
                                   " WHERE model_key = ? AND gpu = ?", (model_key, gpu)).fetchone()
        return EngineChoice(*row) if row else None
