"""Strata: local language models on AMD GPUs, with ROCm, Vulkan and CPU llama.cpp engines."""

__version__ = "0.1.0"
APP_NAME = "Strata"
APP_ID = "strata"
ORG_NAME = "Strata"
