"""Strata as a local API: an OpenAI-compatible endpoint in front of the loaded model."""
