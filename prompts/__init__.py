"""Prompt templates (one .md file per prompt, filled with string.Template)."""
