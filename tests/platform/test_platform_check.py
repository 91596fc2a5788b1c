"""`strata platform-check`: the OS layers run for real (here Linux; Wine runs the Windows build).

scripts/windows-under-wine.sh runs the same command in the frozen Windows build under Wine and
checks its JSON (DPAPI, the job object, the Windows GPU probe).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from strata_gui.core.config.paths import AppPaths
from strata_gui.core.diagnostics.platform_check import AWKWARD_NAME, check_job, check_secrets, run_checks

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_reports_every_linux_check_passing(_user_dirs_in_tmp: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "strata_gui", "platform-check", "--json"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["platform"] == sys.platform and report["ok"] is True
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) == {"paths", "secrets", "job", "autostart", "single-app"}  # the GPU probe is Windows-only
    assert checks["single-app"]["detail"] == {"mechanism": "flock", "holder_took_it": True,
                                             "refused_while_held": True, "taken_after_holder_killed": True}
    assert checks["autostart"]["detail"]["enabled_read_back"] and checks["autostart"]["detail"]["removed"]
    assert checks["paths"]["detail"]["data_dir"].startswith(str(_user_dirs_in_tmp))
    assert AWKWARD_NAME in checks["paths"]["detail"]["awkward_file"]
    assert checks["job"]["detail"]["mechanism"] == "parent-death signal"
    assert checks["job"]["detail"]["armed_by"] == ("setpriv" if shutil.which("setpriv") else "preexec_fn")
    assert checks["job"]["detail"]["child_alive_before_kill"] is True
    assert checks["job"]["detail"]["child_alive_after_kill"] is False
    # Without the guard the same child outlives its app: the guard is what kills it.
    assert checks["job"]["detail"]["control_child_without_guard_survived"] is True


def test_the_engine_child_dies_when_its_app_is_killed(tmp_path: Path) -> None:
    result = check_job(tmp_path)
    assert result.ok, result.detail
    for name in ("engine-guarded.pid", "engine-control.pid"):  # neither is left running
        child = int((tmp_path / name).read_text())
        assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_the_key_store_round_trips_in_a_folder_with_spaces_and_non_ascii_letters(tmp_path: Path) -> None:
    result = check_secrets(tmp_path)
    assert result.ok and result.detail["round_trip"] and result.detail["deleted"]
    # Off Windows the file permission is the protection: no encryption is claimed.
    assert result.detail["protector"] == "PlainProtector"
    assert (tmp_path / AWKWARD_NAME / "secrets.json").is_file()


def test_the_text_report_names_each_check(tmp_path: Path) -> None:
    report = run_checks(AppPaths.from_environment({"STRATA_HOME": str(tmp_path / "home")}))
    text = report.report()
    assert report.ok
    for name in ("paths", "secrets", "job"):
        assert f"ok   {name}:" in text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_without_setpriv_the_engine_still_dies_with_its_app(tmp_path: Path) -> None:
    """Where util-linux's setpriv is missing (PATH without it), engines are armed by a preexec_fn and
    still die with a killed app."""
    code = ("import json, sys; from pathlib import Path; from strata_gui.core.diagnostics.platform_check import check_job; "
            "r = check_job(Path(sys.argv[1])); print(json.dumps({'ok': r.ok, **r.detail}))")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PATH": str(tmp_path / "no-tools-here")}, cwd=ROOT, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    detail = json.loads(res.stdout)
    assert detail["armed_by"] == "preexec_fn"
    assert detail["ok"] and detail["child_alive_after_kill"] is False
    assert detail["control_child_without_guard_survived"] is True
