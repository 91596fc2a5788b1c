"""A model's identity: the same key for the same model wherever its file lies or however it is named.

A file in the Hugging Face cache layout (``models--org--name/snapshots/<rev>/<file>``) is keyed by
its repository and file name (``hf:org/name/file.gguf``): a new revision of the same quant keeps its
engine choice. Any other file is keyed by a content fingerprint (size + SHA-256 of its first and
last MiB), so renaming or moving it keeps the key and a different model with the same name does not
share it. Split models are keyed by their first shard.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from strata_gui.core.platform.files import open_regular

_EDGE = 1 << 20


def model_identity(path: Path) -> str:
    """The identity key of the model file at ``path`` (reads at most 2 MiB of it).

    Raises:
        OSError: the file cannot be read (hub-cache files need no read).
    """
    parts = path.parts
    for i, part in enumerate(parts):
        if part.startswith("models--") and i + 3 < len(parts) and parts[i + 1] == "snapshots":
            repo = part.removeprefix("models--").replace("--", "/", 1)
            return f"hf:{repo}/{'/'.join(parts[i + 3:])}"
    digest = hashlib.sha256()
    with open_regular(path) as fh:  # a FIFO would block the open forever
        size = os.fstat(fh.fileno()).st_size
        digest.update(fh.read(_EDGE))
        if size > 2 * _EDGE:
            fh.seek(size - _EDGE)
            digest.update(fh.read(_EDGE))
    return f"file:{size}:{digest.hexdigest()[:24]}"
