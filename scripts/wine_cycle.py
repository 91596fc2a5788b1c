"""The Windows installer and app under Wine + Xvfb, checked as a user would see them.

Run by scripts/windows-under-wine.sh (which exports WINEPREFIX and friends). Steps, each checked:
install (silent, into a folder whose name has spaces and non-ASCII letters) -> the installed
strata-cli.exe (--version, platform-check, gpu --capture, --self-test) -> Strata.exe started,
its main window found and screenshotted -> upgrade in place -> uninstall keeping data ->
install again -> uninstall /PURGE. Exits non-zero on the first failed check.

Environment: SETUP_EXE, STRATA_VERSION, WINE_USER_DIR (the prefix's user profile folder),
SHOTS (screenshot folder).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETUP = Path(os.environ["SETUP_EXE"])
VERSION = os.environ["STRATA_VERSION"]
USER_DIR = Path(os.environ["WINE_USER_DIR"])
SHOTS = Path(os.environ["SHOTS"])
USER = USER_DIR.name
LOCAL = USER_DIR / "AppData" / "Local"
INSTALL_NAME = "Strata Zoë 用户"  # spaces + letters outside ASCII and the ANSI code page
INSTALL_DIR = LOCAL / "Programs" / INSTALL_NAME
INSTALL_DIR_WIN = rf"C:\users\{USER}\AppData\Local\Programs\{INSTALL_NAME}"
DATA_DIR = LOCAL / "Strata" / "strata"
START_MENU_LNK = USER_DIR / "AppData" / "Roaming" / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Strata.lnk"
DESKTOP_LNK = USER_DIR / "Desktop" / "Strata.lnk"
APP_KEY = r"HKCU\Software\Strata"
UNINST_KEY = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Strata"
EXPECTED_PAGES = 9  # Chat, Images, Models, Engines, GPU, Dashboard, Network, Settings, About

scratch = Path(tempfile.mkdtemp(prefix="strata-wine-"))
timings: dict[str, float] = {}
summary: dict[str, object] = {"version": VERSION, "install_dir": INSTALL_DIR_WIN}


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def check(ok: bool, message: str) -> None:
    if not ok:
        fail(message)
    print(f"   ok: {message}", flush=True)


def winpath(path: Path) -> str:
    return "Z:" + str(path).replace("/", "\\")


def wait_wine() -> None:
    """Until every process of the prefix has exited (NSIS uninstallers re-spawn from %TEMP%)."""
    subprocess.run(["wineserver", "-w"], check=True, timeout=600)


def wrun(args: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> tuple[int, str, str]:
    """Run a Windows console program with its std streams redirected to Windows files.

    Wine 8.0 hands a process its Unix stdin/stdout/stderr as handles CPython cannot open
    ("init_sys_streams: Invalid handle"); cmd.exe's redirections give it real Windows files.
    Non-ASCII arguments travel in environment variables (the .bat file is read in the OEM
    code page), named %STRATA_ARG_n%.
    """
    extra = {f"STRATA_ARG_{i}": a for i, a in enumerate(args)}
    line = " ".join(f'"%STRATA_ARG_{i}%"' for i in range(len(args)))
    out, err, bat = scratch / "out.txt", scratch / "err.txt", scratch / "run.bat"
    bat.write_text(f'@echo off\r\n{line} > "{winpath(out)}" 2> "{winpath(err)}" < NUL\r\n'
                   "exit /b %ERRORLEVEL%\r\n", encoding="ascii")
    done = subprocess.run(["wine", "cmd", "/c", winpath(bat)], env={**os.environ, **extra, **(env or {})},
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)

    def read(p: Path) -> str:
        return p.read_bytes().decode("utf-8", errors="replace").replace("\r", "") if p.exists() else ""

    return done.returncode, read(out), read(err)


def reg_values(key: str) -> dict[str, str] | None:
    """The string/dword values of ``key`` (None when it does not exist), via ``reg export``.

    ``reg query`` prints in the console code page and loses non-ASCII letters; the exported
    .reg file is UTF-16.
    """
    out = scratch / "key.reg"
    out.unlink(missing_ok=True)
    done = subprocess.run(["wine", "reg", "export", key, winpath(out), "/y"], capture_output=True,
                          stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0 or not out.exists():
        return None
    values: dict[str, str] = {}
    for line in out.read_bytes().decode("utf-16").splitlines():
        if line.startswith('"') and "=" in line:
            name, _, raw = line.partition("=")
            if raw.startswith('"'):
                raw = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            values[name.strip('"')] = raw
    return values


def reg_value(key: str, name: str) -> str | None:
    return (reg_values(key) or {}).get(name)


def reg_exists(key: str) -> bool:
    return reg_values(key) is not None


def timed(name: str):  # type: ignore[no-untyped-def]
    class _T:
        def __enter__(self) -> None:
            self.t0 = time.monotonic()
            print(f"-- {name}", flush=True)

        def __exit__(self, *exc: object) -> None:
            timings[name] = round(time.monotonic() - self.t0, 1)

    return _T()


def run_setup() -> None:
    # NSIS wants /D= last and unquoted, spaces and all; wine would quote an argument with spaces,
    # so cmd.exe runs the command line as written (the folder travels in an environment variable).
    bat = scratch / "setup.bat"
    bat.write_text('@echo off\r\n"%STRATA_SETUP%" /S /D=%STRATA_DIR%\r\n', encoding="ascii")
    subprocess.run(["wine", "cmd", "/c", winpath(bat)], stdin=subprocess.DEVNULL, capture_output=True,
                   env={**os.environ, "STRATA_SETUP": winpath(SETUP), "STRATA_DIR": INSTALL_DIR_WIN},
                   check=False, timeout=600)
    wait_wine()


def run_uninstall(*flags: str) -> None:
    subprocess.run(["wine", str(INSTALL_DIR / "uninstall.exe"), "/S", *flags], stdin=subprocess.DEVNULL,
                   capture_output=True, check=False, timeout=600)
    wait_wine()


def check_installed(stage: str) -> None:
    for name in ("Strata.exe", "strata-cli.exe", "uninstall.exe", "_internal"):
        check((INSTALL_DIR / name).exists(), f"{stage}: {INSTALL_DIR_WIN}\\{name} exists")
    check(reg_value(APP_KEY, "Version") == VERSION, f"{stage}: {APP_KEY} Version = {VERSION}")
    check(reg_value(APP_KEY, "InstallDir") == INSTALL_DIR_WIN, f"{stage}: {APP_KEY} InstallDir is the chosen folder")
    check(reg_value(UNINST_KEY, "DisplayVersion") == VERSION, f"{stage}: Uninstall key DisplayVersion = {VERSION}")
    check(INSTALL_DIR_WIN in (reg_value(UNINST_KEY, "UninstallString") or ""),
          f"{stage}: Uninstall key UninstallString points into the install folder")
    check(START_MENU_LNK.is_file(), f"{stage}: Start Menu shortcut")
    check(DESKTOP_LNK.is_file(), f"{stage}: Desktop shortcut")


def check_removed(stage: str) -> None:
    check(not (INSTALL_DIR / "Strata.exe").exists() and not (INSTALL_DIR / "_internal").exists(),
          f"{stage}: program files removed")
    check(not reg_exists(APP_KEY) and not reg_exists(UNINST_KEY), f"{stage}: HKCU keys removed")
    check(not START_MENU_LNK.exists() and not DESKTOP_LNK.exists(), f"{stage}: shortcuts removed")


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> tuple[int, str, str]:
    return wrun([INSTALL_DIR_WIN + r"\strata-cli.exe", *args], env=env, timeout=timeout)


def run_cli_checks() -> None:
    rc, out, err = cli("--version")
    check(rc == 0 and out.strip() == f"Strata {VERSION}", f"strata-cli.exe --version prints 'Strata {VERSION}'")

    rc, out, err = cli("platform-check", "--json")
    try:
        report = json.loads(out)
    except ValueError:
        fail(f"platform-check printed no JSON (exit {rc}):\n{out}\n{err}")
    (SHOTS / "platform-check.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    summary["platform_check"] = report
    checks = {c["name"]: c for c in report["checks"]}
    for c in report["checks"]:
        print(f"   {c['name']}: {json.dumps(c['detail'], ensure_ascii=False)[:300]}", flush=True)
    check(report["platform"] == "win32" and report["frozen"], "platform-check ran in the frozen Windows build")
    check(checks["paths"]["ok"], "paths with spaces and non-ASCII letters round-trip")
    check(checks["secrets"]["ok"] and checks["secrets"]["detail"]["protector"] == "DpapiProtector"
          and not checks["secrets"]["detail"]["plaintext_on_disk"], "DPAPI key store round trip, no plaintext on disk")
    check(checks["job"]["ok"] and checks["job"]["detail"]["mechanism"] == "job object",
          "engine child killed with the app by the job object")
    check(checks["gpu"]["ok"], "GPU probe: every source answered or said n/a, none crashed")
    check(checks["single-app"]["ok"] and checks["single-app"]["detail"]["mechanism"] == "msvcrt.locking",
          "the one-app lock: refused while another process holds it, free once that process is killed")
    check(checks["autostart"]["ok"] and "HKEY_CURRENT_USER" in checks["autostart"]["detail"]["where"]
          and checks["autostart"]["detail"]["command"][0].endswith("Strata.exe"),
          "the model server's Run value (the windowed Strata.exe serve) written, read back and removed")
    check(rc == 0, "platform-check exit code 0")

    capture = scratch / "gpu-capture.json"
    rc, out, err = cli("gpu", "--capture", winpath(capture))
    check(rc == 0 and capture.is_file(), "strata-cli.exe gpu --capture wrote a snapshot")
    snapshot = json.loads(capture.read_text(encoding="utf-8"))
    shutil.copy(capture, SHOTS / "gpu-capture.json")
    check(snapshot.get("platform") == "windows", "the snapshot is a Windows one")
    rc, out, err = cli("gpu", "--snapshot", winpath(capture), "--json")
    check(rc == 0, "the Windows snapshot replays (gpu --snapshot --json)")

    t0 = time.monotonic()
    rc, out, err = cli("--self-test", timeout=600)
    summary["self_test"] = out.strip().splitlines()[-1:] if out.strip() else []
    check(rc == 0 and f"self-test passed: {EXPECTED_PAGES} pages" in out,
          f"strata-cli.exe --self-test visits {EXPECTED_PAGES} pages ({time.monotonic() - t0:.0f}s)")


def run_chat_check() -> None:
    """One chat reply streamed by the Windows build through a Windows llama-server.exe."""
    engine, model = os.environ.get("STRATA_WIN_ENGINE"), os.environ.get("STRATA_WIN_MODEL")
    if not engine or not model:
        print("   skipped: no Windows llama-server.exe (STRATA_WIN_ENGINE)", flush=True)
        return
    t0 = time.monotonic()
    rc, out, err = cli("chat", "--engine", winpath(Path(engine)), "--model", winpath(Path(model)),
                       "--max-tokens", "8", "--seed", "1", "--no-fallback", "Say hello", timeout=600)
    summary["chat"] = {"reply": out.strip(), "stderr_tail": err.strip().splitlines()[-3:]}
    print(f"   reply: {out.strip()[:120]!r}", flush=True)
    for line in err.strip().splitlines()[-3:]:
        print(f"   {line[:200]}", flush=True)
    check(rc == 0 and out.strip() != "", f"strata-cli.exe chat streamed a reply from llama-server.exe "
          f"({time.monotonic() - t0:.0f}s)")
    check("your build" in err and "CPU" in err, "the reply came from the Windows CPU engine folder given")


def run_gui_check() -> None:
    report = scratch / "ui-report.json"
    env = {**os.environ, "STRATA_UI_REPORT": winpath(report), "STRATA_UI_REPORT_CLOSE": "1"}
    app = subprocess.Popen(["wine", str(INSTALL_DIR / "Strata.exe")], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not report.exists() and time.monotonic() < deadline and app.poll() is None:
            time.sleep(0.5)
        check(report.exists(), "Strata.exe started and reported its main window")
        time.sleep(1.0)  # the report is written after the window's own grab: let X catch up
        found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Strata$"],
                               capture_output=True, text=True, check=False).stdout.split()
        check(bool(found), "xdotool finds a visible X window titled 'Strata'")
        SHOTS.mkdir(parents=True, exist_ok=True)
        subprocess.run(["import", "-window", "root", str(SHOTS / "main-window-wine.png")], check=True)
        subprocess.run(["import", "-window", found[0], str(SHOTS / "main-window-wine-x11.png")], check=False)
        shutil.copy(report.with_name(report.name + ".png"), SHOTS / "main-window-qt-grab.png")
        ui = json.loads(report.read_text(encoding="utf-8"))
        summary["ui"] = ui
        print(f"   ui: {json.dumps(ui, ensure_ascii=False)}", flush=True)
        check(ui["title"] == "Strata" and ui["visible"], "the main window is titled Strata and visible")
        check(len(ui["pages"]) == EXPECTED_PAGES, f"the sidebar lists {EXPECTED_PAGES} pages")
        check(ui["cover"] == "FirstRunGuide" and ui["cover_visible"], "the first-run guide covers the pages")
        check(ui["black_fraction"] < 0.2 and ui["distinct_colours"] > 8,
              "the window is drawn (not black, not blank)")
        # The app closes its window 3 s after the report, as a user would: it must exit cleanly.
        try:
            rc = app.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, f"Strata.exe exited by itself with 0 after its window closed (got {rc})")
    finally:
        if app.poll() is None:
            app.kill()  # the Unix side of the Wine process
            app.wait(timeout=30)
        wait_wine()


def clean_start() -> None:
    """No Strata in the prefix: a previous run may have stopped half-way."""
    if (INSTALL_DIR / "uninstall.exe").exists():
        run_uninstall("/PURGE")
    shutil.rmtree(INSTALL_DIR, ignore_errors=True)
    shutil.rmtree(LOCAL / "Strata", ignore_errors=True)
    for key in (APP_KEY, UNINST_KEY):
        subprocess.run(["wine", "reg", "delete", key, "/f"], capture_output=True, check=False)
    for lnk in (START_MENU_LNK, DESKTOP_LNK):
        lnk.unlink(missing_ok=True)


def start_xvfb() -> subprocess.Popen[bytes]:
    for display in range(90, 110):
        if Path(f"/tmp/.X11-unix/X{display}").exists() or Path(f"/tmp/.X{display}-lock").exists():
            continue
        proc = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(50):
            if Path(f"/tmp/.X11-unix/X{display}").exists():
                os.environ["DISPLAY"] = f":{display}"
                return proc
            time.sleep(0.1)
        proc.kill()
        proc.wait()
    fail("could not start Xvfb")
    raise AssertionError


def main() -> int:
    SHOTS.mkdir(parents=True, exist_ok=True)
    xvfb = start_xvfb()
    try:
        with timed("clean start"):
            clean_start()
        with timed("install"):
            run_setup()
            check_installed("install")
        with timed("installed CLI"):
            run_cli_checks()
        with timed("chat through llama-server.exe"):
            run_chat_check()
        with timed("Strata.exe window"):
            run_gui_check()
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        (DATA_DIR / "user-data-marker.txt").write_text("the user's own data", encoding="utf-8")
        stale = INSTALL_DIR / "_internal" / "stale-from-previous-version.dll"
        stale.write_bytes(b"MZ")
        with timed("upgrade"):
            run_setup()
            check_installed("upgrade")
            check(not stale.exists(), "upgrade: a file of the previous version is gone")
            check((DATA_DIR / "user-data-marker.txt").exists(), "upgrade: user data kept")
        with timed("uninstall (keep data)"):
            run_uninstall()
            check_removed("uninstall")
            check((DATA_DIR / "user-data-marker.txt").exists(), "uninstall: user data kept by default")
        with timed("install + uninstall /PURGE"):
            run_setup()
            check_installed("reinstall")
            run_uninstall("/PURGE")
            check_removed("uninstall /PURGE")
            check(not DATA_DIR.exists(), "uninstall /PURGE: user data removed")
    finally:
        xvfb.kill()
        xvfb.wait()
        shutil.rmtree(scratch, ignore_errors=True)
        summary["timings_s"] = timings
        (SHOTS / "cycle.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
        print("   times: " + ", ".join(f"{k} {v}s" for k, v in timings.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
