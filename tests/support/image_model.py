"""Writes a real but random-weight image model that stable-diffusion.cpp loads and runs.

The architecture is SDXS-512-DS, the smallest one the pinned stable-diffusion.cpp (sdist
``stable-diffusion-cpp-python==0.4.7``) accepts: a CLIP ViT-L/14 text encoder, the tiny UNet
without a middle block and with attention at two resolutions only, and TAESD as its VAE (for
SDXS, sd.cpp uses the TAE embedded under ``tae.*`` and needs no full VAE). The tensor names and
shapes in ``tests/data/images/sdxs-512-ds-tensors.json`` were read from the real ``sd-cli``: it
reports every tensor missing from a file and the expected shape of a wrong one, and the list was
grown until it loaded and generated an image (sd.cpp logs ``Version: SDXS (512-DS)``).

Why GGUF with Q4_0 linear weights and F16 convolutions: 187 M of the 440 M parameters are 3×3 or
1×1 convolution kernels, and GGUF's quantized types need rows of 32 values, so they stay F16; the
file is about 520 MB, more than the 400 MB hoped for. The only smaller file sd.cpp accepts is
safetensors with F8_E4M3 weights (442 MB), but sd.cpp widens F8 to F16 on a single thread at every
load (4–9 s here) where this GGUF loads in half a second: with a server started per test, load time
matters more than 80 MB in a cache. It makes a 64×64 image in one step in 2–3 s on two cores.

The file is cached under ``~/.cache/strata-dev`` keyed by :data:`MODEL_VERSION`, so tests do not
write it each time; change the version when the generator changes.

Usable as a script: ``python -m tests.support.image_model OUT.gguf``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

MODEL_VERSION = "sdxs512ds-q4-v1"
SHAPES = Path(__file__).resolve().parents[1] / "data" / "images" / "sdxs-512-ds-tensors.json"
CACHE = Path(os.environ.get("STRATA_DEV_CACHE", Path.home() / ".cache" / "strata-dev"))


def _q4_0(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    """Random Q4_0 blocks (an F16 scale, then 32 four-bit values) as GGUF stores them, as bytes."""
    blocks = shape[-1] // 32 * int(np.prod(shape[:-1]))
    raw = np.empty((blocks, 18), dtype=np.uint8)
    # Uniform 4-bit values (q - 8) have a standard deviation of about 4.6.
    raw[:, :2] = np.full(blocks, std / 4.6, dtype=np.float16).view(np.uint8).reshape(blocks, 2)
    raw[:, 2:] = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    return raw.reshape((*shape[:-1], shape[-1] // 32 * 18))


def tensor_shapes() -> dict[str, list[int]]:
    """Tensor name → ggml ``ne`` (innermost first), as sd.cpp expects them."""
    data: dict[str, list[int]] = json.loads(SHAPES.read_text())
    return data


def write_image_model(path: Path, *, seed: int = 7) -> Path:
    """Write the random-weight SDXS model as GGUF to ``path`` (atomically)."""
    import gguf

    rng = np.random.default_rng(seed)
    # One temporary name per process: parallel test workers may write the cached model at once.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(tmp), "sd")
    writer.add_name(f"Strata test image model ({MODEL_VERSION})")
    for name, ne in sorted(tensor_shapes().items()):
        shape = tuple(reversed(ne))  # numpy order: outermost first
        if len(ne) == 1:
            # Norm scales 1, biases 0: keeps activations finite through the random network.
            writer.add_tensor(name, np.full(shape, 1.0 if name.endswith(".weight") else 0.0, dtype=np.float32))
            continue
        std = 1.0 / float(np.sqrt(max(int(np.prod(ne[:-1])), 1)))  # scaled by fan-in
        if len(ne) == 2 and ne[0] % 32 == 0:
            writer.add_tensor(name, _q4_0(rng, shape, std), raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            count = int(np.prod(shape))
            writer.add_tensor(name, (rng.standard_normal(count, dtype=np.float32) * std)
                              .astype(np.float16).reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(path)
    return path


def cached_image_model() -> Path:
    """The test image model, written once per :data:`MODEL_VERSION` into the dev cache."""
    path = CACHE / "models" / f"strata-test-{MODEL_VERSION}.gguf"
    if not path.exists():
        write_image_model(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    write_image_model(args.out)
    print(args.out, args.out.stat().st_size)


if __name__ == "__main__":
    main()
