"""Agents (Diagnoser, Synthesizer, Verifier, Inspector): built in a later stage."""
