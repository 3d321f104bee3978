"""Stage 3, curation: coverage-gated sampling, constrained prompts, contrast pairs."""
