"""Completes a folder of win_amd64 wheels with the Windows-only dependencies pip skipped.

``pip download --platform win_amd64`` evaluates environment markers for the machine it runs on
(Linux), so requirements such as PyInstaller's ``pefile; sys_platform == "win32"`` are never
fetched. This reads every wheel's metadata, evaluates the markers as Windows would, and
downloads what is missing (a wheel when one exists, else the sdist: pefile ships no wheels).

Usage: python wine_wheels.py WHEEL_DIR PINS_FILE
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

WINDOWS = {
    **default_environment(),
    "os_name": "nt", "sys_platform": "win32", "platform_system": "Windows",
    "platform_machine": "AMD64", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "python_version": "3.11", "python_full_version": "3.11.9",
}


def have(folder: Path) -> set[str]:
    names = set()
    for f in folder.iterdir():
        if f.suffix == ".whl" or f.name.endswith(".tar.gz"):
            names.add(canonicalize_name(f.name.split("-")[0]))
    return names


def windows_requirements(folder: Path) -> set[str]:
    wanted = set()
    for whl in folder.glob("*.whl"):
        with zipfile.ZipFile(whl) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            message = Parser().parsestr(z.read(meta).decode("utf-8"))
        for line in message.get_all("Requires-Dist") or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({**WINDOWS, "extra": ""}):
                wanted.add(canonicalize_name(req.name))
    return wanted


def pip(*args: str) -> bool:
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, check=False)
    return done.returncode == 0


def main() -> int:
    folder, pins = Path(sys.argv[1]), sys.argv[2]
    for _ in range(10):
        missing = sorted(windows_requirements(folder) - have(folder))
        if not missing:
            return 0
        for name in missing:
            print(f"   windows-only dependency: {name}")
            if not pip("--platform", "win_amd64", "--python-version", "3.11", "--implementation", "cp",
                       "--only-binary=:all:", "-c", pins, "-d", str(folder), name) and not pip(
                           "--no-binary", ":all:", "--no-deps", "-c", pins, "-d", str(folder), name):
                print(f"error: cannot download {name} for Windows", file=sys.stderr)
                return 1
    print("error: the Windows dependency closure did not settle", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
