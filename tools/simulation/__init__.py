"""Simulated rounds: a collapsing policy and an analytical GPU model (rewards labeled simulated)."""
