"""STRUCT-COVER: structure-coverage-aware training data for RLVR on CUDA kernels."""

__version__ = "0.1.0"
