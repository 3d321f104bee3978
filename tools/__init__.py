"""Deterministic, typed analysis tools: no LLM calls, no printing."""
