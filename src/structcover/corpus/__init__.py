"""The sample corpus shipped with the tool: one folder per task family (see tools/data/corpus.py)."""
