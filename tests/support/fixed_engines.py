"""A fixed engine list for tests that exercise the dashboards or the local API without a resolver.

It answers what :class:`strata_gui.core.bench.service.EngineSource` asks: the engines (real engine
builds from tests/support/engines.py), the GPU name results are saved under, and the model's real
identity (:func:`model_identity`, so choices are keyed exactly as in the app).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from strata_gui.core.models.identity import model_identity
from strata_gui.core.runtime.engine import EngineSpec


@dataclass
class FixedEngines:
    specs: list[EngineSpec] = field(default_factory=list)
    gpu: str = "CPU"

    def installed_specs(self) -> list[EngineSpec]:
        return list(self.specs)

    def gpu_key(self) -> str:
        return self.gpu

    def model_key(self, model: Path) -> str | None:
        try:
            return model_identity(model)
        except OSError:
            return None
