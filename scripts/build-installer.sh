#!/usr/bin/env bash
# Compiles the Windows installer (installer/strata.nsi) with makensis around the PyInstaller
# bundle in dist/Strata/ (run scripts/build-bundle.sh first) and prints its size.
#
# On Linux the payload is the Linux bundle: that proves the script compiles and packs the
# bundle layout; the Windows CI workflow builds the real one from the Windows bundle.
#
#   PAYLOAD=dir   bundle folder to pack (default dist/Strata)
#   OUTFILE=path  installer to write (default dist/strata-<version>-setup.exe)
#   COMPRESSOR=zlib   quick build (~4x faster, ~1.6x larger) for checks; default lzma
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

case "$(uname -s)" in
  MINGW* | MSYS* | CYGWIN*) windows=1 ;;
  *) windows=0 ;;
esac

makensis="$(command -v makensis || true)"
if [ -z "$makensis" ] && [ "$windows" = 1 ]; then
  for candidate in "/c/Program Files (x86)/NSIS/makensis.exe" "/c/Program Files/NSIS/makensis.exe"; do
    if [ -x "$candidate" ]; then
      makensis="$candidate"
      break
    fi
  done
fi
if [ -z "$makensis" ]; then
  echo "error: makensis not found" >&2
  echo "hint: Debian/Ubuntu: apt-get install nsis; Windows: choco install nsis" >&2
  exit 1
fi

version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' strata_gui/__init__.py)"
if [ -z "$version" ]; then
  echo "error: cannot read __version__ from strata_gui/__init__.py" >&2
  exit 1
fi
# Windows version resources take four numbers: 1.2.3rc1 -> 1.2.3.0
read -r -a nums <<<"$(grep -oE '[0-9]+' <<<"${version%%+*}" | head -n 3 | tr '\n' ' ')"
while [ "${#nums[@]}" -lt 4 ]; do nums+=(0); done
version_quad="${nums[0]}.${nums[1]}.${nums[2]}.${nums[3]}"

payload="${PAYLOAD:-dist/Strata}"
outfile="${OUTFILE:-dist/strata-$version-setup.exe}"
if [ ! -d "$payload/_internal" ]; then
  echo "error: no bundle in $payload" >&2
  echo "hint: run scripts/build-bundle.sh first" >&2
  exit 1
fi
mkdir -p "$(dirname "$outfile")"

native() {  # makensis on Windows wants Windows paths
  if [ "$windows" = 1 ]; then cygpath -w "$1"; else echo "$1"; fi
}

if [ "$windows" = 0 ] && [ ! -f "$payload/Strata.exe" ]; then
  echo "note: packing the Linux bundle: this proves installer/strata.nsi, not a Windows payload"
fi
t0=$SECONDS
echo "== makensis: installer/strata.nsi -> $outfile (Strata $version)"
# -WX: a warning (missing file, unused string, unsafe name) fails the build.
"$makensis" -WX -V2 -INPUTCHARSET UTF8 \
  "-DVERSION=$version" "-DVERSION_QUAD=$version_quad" "-DCOMPRESSOR=${COMPRESSOR:-lzma}" \
  "-DPAYLOAD=$(native "$(cd "$payload" && pwd)")" \
  "-DOUTFILE=$(native "$(cd "$(dirname "$outfile")" && pwd)/$(basename "$outfile")")" \
  "$(native "$root/installer/strata.nsi")"
t_nsis=$((SECONDS - t0))

payload_kb="$(du -sk "$payload" | cut -f1)"
echo "== installer: $outfile  $(($(wc -c <"$outfile") / 1024 / 1024)) MB (payload $((payload_kb / 1024)) MB on disk)"
echo "== times: makensis ${t_nsis}s"
