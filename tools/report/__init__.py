"""The self-contained HTML report of a round."""
