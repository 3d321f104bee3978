"""Data in and out: rollout readers, KernelBench files, the sample corpus, atomic writes."""
