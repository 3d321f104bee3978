"""Compile service: nvcc and NVRTC, ptxas stats, occupancy, PTX mix (issue 4).

Public entry points: :func:`compile_program` (service), :func:`compiler_feature_values` and
:func:`compiler_features` (features), :func:`theoretical_occupancy` (occupancy).
"""

from structcover.tools.compiler.features import (
                                                 FEATURE_NAMES,
                                                 compiler_feature_values,
                                                 compiler_features,
)
from structcover.tools.compiler.occupancy import theoretical_occupancy
from structcover.tools.compiler.service import CompileResult, compile_program

__all__ = ["FEATURE_NAMES", "CompileResult", "compile_program", "compiler_feature_values",
           "compiler_features", "theoretical_occupancy"]
