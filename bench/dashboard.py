"""Cost of the live dashboard while a chat streams: event-loop stall, CPU time and decode rate.

Interleaved repetitions of the same streamed reply through Strata's chat path (ChatService +
ChatPage, offscreen Qt) with the Dashboard page hidden (baseline) and shown: 1 Hz refresh,
every reply recorded to SQLite and plotted, GPU telemetry sampled in the background from a
captured Strix Halo machine, the engine process sampled with psutil.

Usage: python bench/dashboard.py [--reps 5] [--tokens 512]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
from PySide6.QtWidgets import QApplication

from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.service import ChatService, MessageUpdated
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.gpu.history import GpuTelemetry
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.supervisor import ServerSupervisor
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.event_loop import new_event_loop
from strata_gui.ui.pages.chat_page import ChatPage
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.support.engines import bench_engine_and_model
from tests.support.fixed_engines import FixedEngines

_spec = importlib.util.spec_from_file_location("bench_stream", ROOT / "bench" / "stream.py")
assert _spec and _spec.loader
stream = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stream)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=512)
    args = ap.parse_args()
    engine_dir, model = bench_engine_and_model()
    app = QApplication([])
    loop = new_event_loop(app)
    workdir = tempfile.TemporaryDirectory()

    async def run() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            db = Path(workdir.name) / "bench.sqlite3"
            store = ConversationStore(db).open()
            metrics = MetricsStore(db)
            pool = EnginePool(lambda e, m, s: ServerSupervisor(e, m, s, http=http))
            service = ChatService(store, pool, http,
                                  SettingsService(SettingsStore(Path(workdir.name) / "settings.json"),
                                                  Settings(context_size=args.tokens + 512, last_model=str(model))))
            service.set_plan([stream.bench_spec(engine_dir)])
            dashboard = DashboardService(metrics, Benchmark(http, pool, metrics), http,
                                         resolver=FixedEngines([], "Strix Halo (replay)"))

            def record(event: object) -> None:
                if isinstance(event, MessageUpdated) and event.message.status == COMPLETE:
                    s = event.message.stats
                    dashboard.record(model=model.name, engine="cpu", backend="cpu", prompt_tokens=s.prompt_n,
                                     output_tokens=s.predicted_n, prefill_tps=s.prefill_tps,
                                     decode_tps=s.decode_tps, ttft_s=s.ttft_s)

            service.events.subscribe(record)
            gpu = build_gpu_service(kernels_dir(), sysfs_root=ROOT / "tests/data/gpu/linux/strix-halo")
            history = GpuTelemetry(gpu)
            bridge = AsyncBridge()
            recorder = stream.PaintRecorder()  # before any message widget exists (it wraps their paints)
            chat = ChatPage(service, bridge)
            chat.resize(1000, 700)
            chat.show()
            dash = DashboardPage(dashboard, bridge, telemetry=history,
                                 engine_pid=lambda: service.supervisor.pid if service.supervisor else None,
                                 engine_url=lambda: service.supervisor.base_url if service.supervisor else None,
                                 engine_headers=lambda: service.supervisor.auth_headers() if service.supervisor else {})
            dash.resize(1000, 700)
            sampling = SamplingParams(max_tokens=args.tokens, seed=7, temperature=1.0)
            off: list[tuple[float, float, float]] = []
            on: list[tuple[float, float, float]] = []
            try:
                await service.ensure_engine()
                await stream.strata_once(service, chat, sampling, recorder)  # warm-up
                for _ in range(args.reps):
                    for shown, rows in ((False, off), (True, on)):
                        if shown:
                            dash.show()
                            dash.on_shown()
                        else:
                            dash.hide()
                        await asyncio.sleep(1.2)  # let a dashboard tick happen either way
                        cpu0 = time.process_time()
                        _ttft, decode, stall, _n, _srv, _cpu = await stream.strata_once(service, chat, sampling, recorder)
                        rows.append((decode, stall, time.process_time() - cpu0))
            finally:
                dash.stop()
                await bridge.shutdown()
                await service.aclose()
                await pool.aclose()
                metrics.close()
                chat.deleteLater()
                dash.deleteLater()
        med = statistics.median
        print(f"reps {args.reps}, ~{args.tokens} tokens per reply, CPU engine, test model")
        print(f"{'dashboard':10} {'decode tok/s':>13} {'worst stall ms':>15} {'app CPU s/reply':>16}")
        for name, rows in (("hidden", off), ("shown", on)):
            print(f"{name:10} {med(r[0] for r in rows):13.1f} {max(r[1] for r in rows) * 1000:15.1f}"
                  f" {med(r[2] for r in rows):16.3f}")
        print(f"decode ratio shown/hidden: {med(r[0] for r in on) / med(r[0] for r in off):.3f}")
        print(f"app CPU ratio shown/hidden: {med(r[2] for r in on) / med(r[2] for r in off):.3f}")
        print(f"dashboard rows plotted: {len(dash.throughput_chart.values('Decode'))}")

    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
        workdir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
