"""Stage 2, coverage diagnosis: frozen bins and archives, SCov, entropy, SRMis, gaps, feasibility."""
