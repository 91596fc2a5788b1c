#!/usr/bin/env bash
# Adds Strata to the desktop's application menu for the current user (no root needed): a
# .desktop entry plus the icon under $XDG_DATA_HOME (default ~/.local/share).
#
# Run it from the unpacked Linux bundle (it sits next to the Strata executable) or from a
# source checkout (it then points at .venv/bin/strata-gui or strata-gui on PATH).
#
#   install-desktop.sh [--prefix DIR] [--exec PATH]    install or refresh the entry
#   install-desktop.sh [--prefix DIR] --uninstall      remove it again
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${XDG_DATA_HOME:-$HOME/.local/share}"
exec_path=""
mode=install

usage() {
  sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --exec) exec_path="${2:?--exec needs a path}"; shift 2 ;;
    --exec=*) exec_path="${1#*=}"; shift ;;
    --uninstall) mode=uninstall; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

desktop_file="$prefix/applications/strata.desktop"
svg_icon="$prefix/icons/hicolor/scalable/apps/strata.svg"
png_icon="$prefix/icons/hicolor/256x256/apps/strata.png"

refresh_caches() {
  if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$prefix/applications" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -d "$prefix/icons/hicolor" ]; then
    gtk-update-icon-cache -q -t -f "$prefix/icons/hicolor" 2>/dev/null || true
  fi
}

if [ "$mode" = uninstall ]; then
  rm -f "$desktop_file" "$svg_icon" "$png_icon"
  refresh_caches
  echo "Removed the Strata menu entry from $prefix (your Strata data is untouched)."
  exit 0
fi

# Bundle layout: <bundle>/install-desktop.sh, <bundle>/Strata, <bundle>/_internal/resources/
# Checkout layout: <repo>/scripts/install-desktop.sh, <repo>/resources/
if [ -f "$here/_internal/resources/linux/strata.desktop.in" ]; then
  resources="$here/_internal/resources"
  default_exec="$here/Strata"
elif [ -f "$here/../resources/linux/strata.desktop.in" ]; then
  resources="$(cd "$here/../resources" && pwd)"
  if [ -x "$here/../.venv/bin/strata-gui" ]; then
    default_exec="$(cd "$here/../.venv/bin" && pwd)/strata-gui"
  else
    default_exec="$(command -v strata-gui || true)"
  fi
else
  echo "error: cannot find resources/linux/strata.desktop.in next to $here" >&2
  echo "hint: run the install-desktop.sh that ships inside the unpacked Strata folder" >&2
  exit 1
fi

exec_path="${exec_path:-$default_exec}"
if [ -z "$exec_path" ] || [ ! -x "$exec_path" ] || [ -d "$exec_path" ]; then
  echo "error: no Strata executable at '${exec_path:-?}'" >&2
  echo "hint: pass --exec /path/to/Strata" >&2
  exit 1
fi
exec_path="$(cd "$(dirname "$exec_path")" && pwd)/$(basename "$exec_path")"
if [[ "$exec_path" == *[[:cntrl:]]* ]]; then
  echo "error: the path '$exec_path' contains control characters; a menu entry cannot start it" >&2
  exit 1
fi

# Desktop Entry quoting: inside the quoted argument escape " ` $ \ (and double %), then the
# string-level escape doubles every backslash.
arg="${exec_path//\\/\\\\}"
arg="${arg//\"/\\\"}"
arg="${arg//\`/\\\`}"
arg="${arg//\$/\\\$}"
arg="${arg//%/%%}"
exec_value="\"$arg\""
exec_value="${exec_value//\\/\\\\}"
tryexec_value="${exec_path//\\/\\\\}"

mkdir -p "$(dirname "$desktop_file")" "$(dirname "$svg_icon")" "$(dirname "$png_icon")"
install -m 644 "$resources/strata.svg" "$svg_icon"
install -m 644 "$resources/strata.png" "$png_icon"

tmp="$desktop_file.tmp.$$"
while IFS= read -r line || [ -n "$line" ]; do
  line="${line//@EXEC@/"$exec_value"}"
  line="${line//@TRYEXEC@/"$tryexec_value"}"
  printf '%s\n' "$line"
done <"$resources/linux/strata.desktop.in" >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$desktop_file"

refresh_caches
echo "Installed the Strata menu entry: $desktop_file"
echo "It starts: $exec_path"
