#!/usr/bin/env bash
# Creates .venv and installs Strata into it (editable) with the given extra ("" or "dev").
# Re-installs only when pyproject.toml changed (stamp keyed by its hash).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
spec="."
[ -n "$extra" ] && spec=".[$extra]"
stamp=".venv/.strata-installed-$(sha256sum pyproject.toml | cut -c1-16)-${extra:-base}"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  .venv/bin/python -c "import strata_gui" # fail loudly if the install did not work
  touch "$stamp"
fi
