"""The engine pool's scheduler under a long seeded random workload with real engines.

The long form of ``tests/pool/test_stress.py`` (``tests/support/pool_stress.py``): 30 clients chat,
stream, stop mid-stream, embed, ask for ``keep_alive`` 0 and switch load options over three models
in a memory budget for two, for ``--minutes`` minutes, while engines are killed and some starts
hang. Prints what happened and exits 1 when the scheduler started an engine beyond demand, held
two copies of a model, left a request waiting past the limit, lost a lease or left an engine
running.

Usage: python bench/pool_stress.py [--minutes 10] [--seed N] [--clients 30] [--engine DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from strata_gui.core.runtime.engine import Backend, EngineSpec
from tests.support.pool_stress import StressConfig, run_stress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--engine", type=Path, help="folder with llama-server (default: the CPU test engine)")
    args = parser.parse_args()
    env = Path.home() / ".cache" / "strata-dev" / "engines.env"
    values = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
    os.environ.setdefault("STRATA_TEST_LLAMA_SRC", values["STRATA_TEST_LLAMA_SRC"])
    from tests.support import gguf_model

    engine = args.engine or Path(values["STRATA_TEST_CPU_ENGINE"])
    spec = EngineSpec("stress", "CPU", Backend.CPU, engine / "llama-server", {})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models = [gguf_model.write_model(folder / f"strata-stress-{i}-F16.gguf",
                                         gguf_model.ModelSpec(seed=40 + i, name=f"Stress {i}")) for i in range(3)]
        cfg = StressConfig(seed=args.seed, clients=args.clients, duration_s=args.minutes * 60)
        report = asyncio.run(run_stress(spec, models, folder, cfg))
    print(report.summary())
    sys.exit(1 if report.problems() else 0)


if __name__ == "__main__":
    main()
