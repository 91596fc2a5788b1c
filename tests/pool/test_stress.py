"""The scheduler under a seeded random workload with real engines (the short form of
``bench/pool_stress.py``): 30 clients, three models in memory for two, engines killed and starts
that hang. It must start no engine beyond demand, keep one copy of each model, serve every request
or fail it with a reason, lose no lease and leave no engine running."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.runtime.conftest import cpu_spec
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.pool_stress import StressConfig, run_stress

pytestmark = [pytest.mark.engine, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_thirty_clients_three_models_memory_for_two_with_crashes_and_hung_loads(
        test_engines: TestEngines, test_model: Path, tmp_path: Path) -> None:
    models = [test_model] + [gguf_model.write_model(tmp_path / f"strata-stress-{i}-F16.gguf",
                                                    gguf_model.ModelSpec(seed=40 + i, name=f"Stress {i}"))
                             for i in range(2)]
    cfg = StressConfig(seed=20261206, clients=30, ops_per_client=2, kill_every_s=4.0, hang_rate=0.1)
    report = asyncio.run(run_stress(cpu_spec(test_engines), models, tmp_path, cfg))
    print(report.summary())
    assert report.problems() == []
    # The workload really did what it says: every operation, swaps, kills and hung loads.
    assert set(report.ops) == {"chat", "stream", "stop", "embed", "switch"} and sum(report.ops.values()) == 60
    assert report.starts > 3 and report.hangs >= 1 and report.kills >= 1
    assert report.granted >= 30  # most requests were served despite the chaos
