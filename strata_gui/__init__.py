"""Strata: local language models on AMD GPUs, with ROCm, Vulkan and CPU llama.cpp engines."""

import sys

# httpx imports its command-line client on import whenever click, rich and pygments happen to be
# installed: ~100 ms of start-up (a third of the time to a usable window) for a CLI Strata never
# runs. A None entry makes that optional import fail at once, as it does where they are missing.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

__version__ = "0.1.0"
APP_NAME = "Strata"
APP_ID = "strata"
ORG_NAME = "Strata"
