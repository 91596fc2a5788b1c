"""What Strata can tell about this machine: the system report and the platform checks."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.diagnostics.platform_check import (
        AWKWARD_NAME,
        CHILD_DEATH_TIMEOUT,
        SECRET,
        CheckResult,
        PlatformReport,
        check_autostart,
        check_gpu,
        check_job,
        check_paths,
        check_secrets,
        check_single_app,
        hold_child,
        hold_lock,
        run_checks,
        self_command,
    )
    from strata_gui.core.diagnostics.system import (
        SystemInfo,
        collect_system_info,
        complete_host,
    )

__all__ = [
    "AWKWARD_NAME",
    "CHILD_DEATH_TIMEOUT",
    "SECRET",
    "CheckResult",
    "PlatformReport",
    "SystemInfo",
    "check_autostart",
    "check_gpu",
    "check_job",
    "check_paths",
    "check_secrets",
    "check_single_app",
    "collect_system_info",
    "complete_host",
    "hold_child",
    "hold_lock",
    "run_checks",
    "self_command",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "platform_check": ["AWKWARD_NAME", "CHILD_DEATH_TIMEOUT", "SECRET", "CheckResult", "PlatformReport", "check_autostart", "check_gpu", "check_job", "check_paths", "check_secrets", "check_single_app", "hold_child", "hold_lock", "run_checks", "self_command"],
    "system": ["SystemInfo", "collect_system_info", "complete_host"],
})
