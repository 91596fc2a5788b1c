"""The kernel fetcher: engine catalog, release client, plan, install, probe, launch environment.

Public surface (what other parts of Strata use):

- :class:`EngineService` — the facade the UI and CLI talk to.
- :class:`InstalledEngine`, :class:`GpuTarget` — records.
- :func:`launch_environment` — the environment an engine is launched with.
- :func:`load_catalog` / :meth:`EngineCatalog.family_of` — catalog data.
"""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.engines.catalog import EngineCatalog, load_catalog, parse_catalog
    from strata_gui.core.engines.devices import (
        DeviceChoice,
        GpuPick,
        choose_devices,
        match_devices,
        pick_gpus,
    )
    from strata_gui.core.engines.drivers import DriverVerdict, check_driver
    from strata_gui.core.engines.launch import VK_DEVICES_OVERRIDE, launch_environment
    from strata_gui.core.engines.plan import Candidate, EnginePlan, plan_engines
    from strata_gui.core.engines.probe import ProbeResult, probe_engine
    from strata_gui.core.engines.records import GpuTarget, InstalledEngine, Release, ReleaseAsset
    from strata_gui.core.engines.releases import ReleaseClient, load_releases_file, parse_releases
    from strata_gui.core.engines.resolver import (
        DepthSwitch,
        EngineResolver,
        EngineVerdict,
        ProbeFinding,
        Resolution,
    )
    from strata_gui.core.engines.run_device import RunDevice
    from strata_gui.core.engines.service import EngineService, SetupOutcome, create_engine_service
    from strata_gui.core.engines.tuning import TuningCheck, check_tuning_table, validate_tuning_table
    from strata_gui.core.engines.updates import AUTO_ROLLED_BACK, UpdateEntry, UpdateLedger

__all__ = [
    "AUTO_ROLLED_BACK",
    "VK_DEVICES_OVERRIDE",
    "Candidate",
    "DepthSwitch",
    "DeviceChoice",
    "DriverVerdict",
    "EngineCatalog",
    "EnginePlan",
    "EngineResolver",
    "EngineService",
    "EngineVerdict",
    "GpuPick",
    "GpuTarget",
    "InstalledEngine",
    "ProbeFinding",
    "ProbeResult",
    "Release",
    "ReleaseAsset",
    "ReleaseClient",
    "Resolution",
    "RunDevice",
    "SetupOutcome",
    "TuningCheck",
    "UpdateEntry",
    "UpdateLedger",
    "check_driver",
    "check_tuning_table",
    "choose_devices",
    "create_engine_service",
    "launch_environment",
    "load_catalog",
    "load_releases_file",
    "match_devices",
    "parse_catalog",
    "parse_releases",
    "pick_gpus",
    "plan_engines",
    "probe_engine",
    "validate_tuning_table",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "catalog": ["EngineCatalog", "load_catalog", "parse_catalog"],
    "devices": ["DeviceChoice", "GpuPick", "choose_devices", "match_devices", "pick_gpus"],
    "drivers": ["DriverVerdict", "check_driver"],
    "launch": ["VK_DEVICES_OVERRIDE", "launch_environment"],
    "plan": ["Candidate", "EnginePlan", "plan_engines"],
    "probe": ["ProbeResult", "probe_engine"],
    "records": ["GpuTarget", "InstalledEngine", "Release", "ReleaseAsset"],
    "releases": ["ReleaseClient", "load_releases_file", "parse_releases"],
    "run_device": ["RunDevice"],
    "resolver": ["DepthSwitch", "EngineResolver", "EngineVerdict", "ProbeFinding", "Resolution"],
    "service": ["EngineService", "SetupOutcome", "create_engine_service"],
    "tuning": ["TuningCheck", "check_tuning_table", "validate_tuning_table"],
    "updates": ["AUTO_ROLLED_BACK", "UpdateEntry", "UpdateLedger"],
})
