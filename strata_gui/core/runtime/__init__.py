"""Running llama-server: the engine spec, the process supervisor and the OpenAI-compatible client."""
