"""Throughput history, the backend shoot-out benchmark, and the measured engine choice."""
