"""Explanations over a campaign state folder: why a bin is empty or thin, why a program is
predicted fast or slow, and the read-only tools the Inspector chat agent calls."""
