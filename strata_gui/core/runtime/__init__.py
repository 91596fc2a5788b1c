"""Running engines: the managed-process type and its outcome, the llama-server supervisor, the OpenAI-compatible client."""
