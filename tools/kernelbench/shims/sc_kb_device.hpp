// Included first in every CPU build of a load_inline extension, right after torch's headers
// (precompiled) and before the user's text. The extension's tensors are CPU tensors, so the
// CUDA device names the user's host code tests or requests mean the CPU here:
//
//   x.is_cuda(), x.device().is_cuda()        -> is_cpu()   (TORCH_CHECK(x.is_cuda()) passes)
//   torch::kCUDA / at::kCUDA / c10::kCUDA    -> kCPU       (.device(torch::kCUDA), .to(kCUDA))
//   c10::DeviceType::CUDA, DispatchKey::CUDA -> CPU
//
// They are macros because torch's own declarations (parsed before this point, in the
// precompiled header) must keep their names; only the user's text after this header sees the
// mapping. A token named `is_cuda`, `kCUDA` or `CUDA` in the user's text is renamed
// consistently (a variable `bool is_cuda` becomes `is_cpu`), which keeps such code compiling.
// Tensor::cuda() in C++ is not mapped (the name is also the namespace at::cuda).
#pragma once
#include "sc_emu.hpp"

#define is_cuda is_cpu
#define kCUDA kCPU
#define CUDA CPU
