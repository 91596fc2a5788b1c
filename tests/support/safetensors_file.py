"""Real safetensors files for tests: the 8-byte header length, the JSON header, then the data.

Image repos keep their text encoders and VAE as safetensors; sd.cpp and Strata tell what a file
holds from the tensor names in its header, so tests write files with the names real checkpoints use.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

# Tensor names as real checkpoints spell them (the markers sd.cpp's version detection reads).
FLUX_DIFFUSION = ["model.diffusion_model.double_blocks.0.img_attn.qkv.weight",
                  "model.diffusion_model.single_blocks.0.linear1.weight"]
CLIP_L = ["text_model.embeddings.token_embedding.weight", "text_model.final_layer_norm.weight"]
T5XXL = ["encoder.block.0.layer.0.SelfAttention.q.weight", "shared.weight"]
VAE = ["decoder.conv_in.weight", "encoder.conv_in.weight"]
SD15_FULL = ["model.diffusion_model.input_blocks.0.0.weight", "cond_stage_model.transformer.text_model.x",
             "first_stage_model.decoder.conv_in.weight"]


def write_safetensors(path: Path, names: list[str], elements: int = 1) -> Path:
    """Write ``names`` as F16 tensors of ``elements`` values each (zeros); returns ``path``."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    width = 2 * elements
    for i, n in enumerate(names):
        header[n] = {"dtype": "F16", "shape": [elements], "data_offsets": [width * i, width * (i + 1)]}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(width * len(names)))
    return path
