"""Synthetic text-only binding data: seven construction types, a strict validator, diversity
controls, an offline template backend and an OpenAI-compatible LLM backend, splits and triplets.
"""
