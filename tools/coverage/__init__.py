"""Stage 2, coverage diagnosis: frozen bins, archives, SCov, entropy, SRMis, gaps, feasibility."""
