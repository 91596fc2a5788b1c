#!/usr/bin/env bash
# Builds the PyInstaller bundle (build.spec) into dist/Strata/, smoke-tests the frozen app and,
# on Linux, packs dist/strata-<version>-linux-<arch>.tar.gz.
#
# The smoke test runs the console executable with --version and --self-test (offscreen, in a
# throw-away STRATA_HOME); a non-zero exit or any stderr line outside the small allowlist
# below fails the build. Sizes and timings are printed at the end.
#
#   BUNDLE_PYTHON=...   interpreter with PyInstaller and the project installed
#                       (default: .venv's python, else python on PATH)
#   SKIP_TARBALL=1   do not write the tar.gz
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

case "$(uname -s)" in
  MINGW* | MSYS* | CYGWIN*) windows=1 ;;
  *) windows=0 ;;
esac

if [ -n "${BUNDLE_PYTHON:-}" ]; then
  py="$BUNDLE_PYTHON"
elif [ -x .venv/bin/python ]; then
  py=.venv/bin/python
elif [ -x .venv/Scripts/python.exe ]; then
  py=.venv/Scripts/python.exe
else
  py="$(command -v python || command -v python3 || echo python)"
fi

if ! "$py" -c "import PyInstaller" 2>/dev/null; then
  echo "error: PyInstaller is not installed for $py" >&2
  echo "hint: pip install -e '.[dev]'" >&2
  exit 1
fi

version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' strata_gui/__init__.py)"
if [ -z "$version" ]; then
  echo "error: cannot read __version__ from strata_gui/__init__.py" >&2
  exit 1
fi

bundle=dist/Strata
if [ "$windows" = 1 ]; then
  cli="$bundle/strata-cli.exe"
  gui="$bundle/Strata.exe"
else
  cli="$bundle/strata"
  gui="$bundle/Strata"
fi

# Harmless lines Qt prints on the offscreen platform (the same ones pyproject's qt_log_ignore lists).
allowed_stderr=(
  '^This plugin does not support propagateSizeHints\(\)$'
)

t0=$SECONDS
echo "== PyInstaller: build.spec -> $bundle (Strata $version)"
"$py" -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller build.spec
t_build=$((SECONDS - t0))

for exe in "$cli" "$gui"; do
  if [ ! -x "$exe" ]; then
    echo "error: $exe was not built" >&2
    exit 1
  fi
done
if [ "$windows" = 0 ]; then
  # The user-level desktop integration travels with the Linux bundle.
  install -m 755 scripts/install-desktop.sh "$bundle/install-desktop.sh"
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

native() {  # the frozen app on Windows wants Windows paths
  if [ "$windows" = 1 ]; then cygpath -w "$1"; else echo "$1"; fi
}

# Runs the frozen CLI with the given arguments; fails on a non-zero exit or stray stderr.
# $platform picks the Qt platform plugin; $wrapper (array) runs it, e.g. under xvfb-run.
platform=offscreen
wrapper=()
smoke() {
  local out="$scratch/out" err="$scratch/err" rc=0
  echo "== smoke ($platform): $cli $*"
  STRATA_HOME="$(native "$scratch/home")" QT_QPA_PLATFORM="$platform" \
    timeout 300 ${wrapper[@]+"${wrapper[@]}"} "$cli" "$@" >"$out" 2>"$err" || rc=$?
  local unexpected
  unexpected="$(tr -d '\r' <"$err" | grep -v -E "$(IFS='|'; echo "${allowed_stderr[*]}")" | grep -v '^[[:space:]]*$' || true)"
  if [ "$rc" != 0 ] || [ -n "$unexpected" ]; then
    echo "error: '$cli $*' exited with $rc" >&2
    echo "--- stdout" >&2
    cat "$out" >&2
    echo "--- stderr" >&2
    cat "$err" >&2
    if [ "$rc" = 0 ]; then
      echo "error: unexpected stderr output (see above); allowlist is in scripts/build-bundle.sh" >&2
    fi
    exit 1
  fi
  SMOKE_OUT="$(tr -d '\r' <"$out")"
}

t0=$SECONDS
smoke --version
if [ "$SMOKE_OUT" != "Strata $version" ]; then
  echo "error: --version printed '$SMOKE_OUT', expected 'Strata $version'" >&2
  exit 1
fi
smoke --self-test
if [ "$windows" = 0 ] && command -v xvfb-run >/dev/null 2>&1; then
  # The platform desktop users get: proves the bundled xcb plugin and its libraries load.
  platform=xcb
  wrapper=(xvfb-run -a)
  smoke --self-test
fi
t_smoke=$((SECONDS - t0))

bundle_kb="$(du -sk "$bundle" | cut -f1)"
echo "== bundle: $bundle  $((bundle_kb / 1024)) MB on disk"

t_tar=0
if [ "$windows" = 0 ] && [ -z "${SKIP_TARBALL:-}" ]; then
  t0=$SECONDS
  tarball="dist/strata-$version-linux-$(uname -m).tar.gz"
  tar -C dist --owner=0 --group=0 -cf - Strata | gzip -6 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
  t_tar=$((SECONDS - t0))
  echo "== tarball: $tarball  $(($(wc -c <"$tarball") / 1024 / 1024)) MB"
fi

echo "== times: pyinstaller ${t_build}s, smoke tests ${t_smoke}s, tarball ${t_tar}s"
