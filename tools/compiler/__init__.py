"""Compile service: nvcc and NVRTC, ptxas stats, occupancy, PTX mix (issue 4)."""
