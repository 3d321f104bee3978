// A light CPU build's <torch/extension.h> (on the include path only for light builds,
// sc_kb_boxed.hpp): torch's tensor API without torch/all.h's modules and without pybind11,
// whose inline code costs every translation unit seconds of g++ time. A text that needs more
// (pybind11, torch::nn, autograd) fails to build light and is built again in full.
#pragma once
#include <torch/types.h>
