"""Where candidate examples come from: an offline grammar or an LLM server."""
