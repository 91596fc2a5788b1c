"""Remote OpenAI-compatible engines (vLLM, SGLang, another llama-server or Strata)."""
