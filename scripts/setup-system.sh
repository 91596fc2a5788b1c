#!/usr/bin/env bash
# System packages the app and its tests need on Debian/Ubuntu (run as root, or it prints the command).
#   build: cmake, build-essential (CPU test engine)   display: xvfb + Qt's xcb libraries
#   vulkan: mesa-vulkan-drivers (llvmpipe software Vulkan for the Vulkan test engine)
#   packaging: nsis (makensis), desktop-file-utils    fonts: CJK for the Chinese UI
#   windows under wine: wine64 + wine32 (the NSIS installer is a 32-bit program), mingw-w64 (a stub
#   DLL for the prefix, a Windows llama-server.exe), xdotool + imagemagick (find and shoot the window)
#   speech: pulseaudio + pulseaudio-utils (a virtual microphone: a null sink the tests play into, which
#   Qt's multimedia lists as a microphone)
#   documents: sqlite3-doc (SQLite's public-domain C API reference: the real 160-page document the
#   retrieval-quality test and bench/documents.py ask 20 questions of)
set -euo pipefail
PKGS=(cmake build-essential xvfb xauth mesa-vulkan-drivers nsis desktop-file-utils
      libegl1 libgl1 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0
      libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxcb-image0 libxcb-render-util0
      libxcb-xkb1 libxcb-shape0 libxcb-randr0 libxcb-xinerama0 fonts-noto-cjk
      wine wine64 wine32:i386 gcc-mingw-w64-x86-64-win32 g++-mingw-w64-x86-64-posix xdotool imagemagick
      pulseaudio pulseaudio-utils sqlite3-doc)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "Please install the equivalents of: ${missing[*]}" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing system packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "[setup] apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [[ " ${missing[*]} " == *":i386 "* ]] && ! dpkg --print-foreign-architectures | grep -qx i386; then
  dpkg --add-architecture i386
fi
# A mirror being synced makes one index fail (exit 100) while every package can still be
# installed from the others: warn and go on; only a failed install stops the check.
if ! apt-get update -qq; then
  echo "[setup] warning: apt-get update failed for some index (mirror sync?); installing from what it has" >&2
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "[setup] apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi
