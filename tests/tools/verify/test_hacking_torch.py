"""The torch-delegation text check on C++: tensor options and allocations are plumbing, torch
compute is delegation however it is spelled (alias, namespace alias, nested namespace, ADL,
tensor method)."""

from __future__ import annotations

import pytest

from structcover.tools.verify.hacking import run_cuda_checks

KERNEL = "__global__ void k(float* o) { o[threadIdx.x] = 1.0f; }\n"


def _delegation(body: str, *, prelude: str = "") -> tuple[bool, str]:
    src = (KERNEL + "#include <torch/extension.h>\n" + prelude +
           "torch::Tensor fwd(torch::Tensor a, torch::Tensor b) {\n  " + body +
           "\n  k<<<1, 32>>>(a.data_ptr<float>());\n  return a;\n}\n")
    result = {c.name: c for c in run_cuda_checks(src, embedded=True)}["no_library_delegation"]
    return result.ok, result.reason


@pytest.mark.parametrize("body", [
    "auto y = torch::empty({4}, torch::dtype(torch::kFloat32).device(torch::kCUDA, 0));",
    "auto y = torch::empty({4}, torch::TensorOptions().dtype(torch::kFloat32));",
    "auto y = torch::ones({4}, a.options());",
    "auto y = torch::full({4}, 0.0f, a.options().dtype(torch::kFloat));",
    "auto y = torch::zeros({a.size(0)}, a.options()); auto z = torch::zeros_like(a);",
    "auto y = torch::empty_strided({4}, {1}, a.options()); auto z = at::empty_like(a);",
    "auto o = torch::TensorOptions().device(torch::kCUDA).layout(torch::kStrided);",
    "auto y = at::empty({4}, at::device(at::kCUDA).dtype(at::ScalarType::Float));",
    "auto s = at::cuda::getCurrentCUDAStream(); const at::cuda::OptionalCUDAGuard g(a.device());",
    "auto acc = torch::PackedTensorAccessor32<float, 2, torch::RestrictPtrTraits>(a.packed_accessor32"
    "<float, 2, torch::RestrictPtrTraits>()); (void)acc;",
    "using acc_t = at::acc_type<float, true>; acc_t v = 0; (void)v;",
    "auto c = a.contiguous().view({-1}); auto d = b.reshape({2, -1}).to(torch::kFloat); (void)c; (void)d;",
    "int threads = std::min(256, (int)a.numel()); float scale = 1.0f / sqrtf((float)threads); (void)scale;",
    "float m = std::max(1.0f, 2.0f); int blocks = max(1, min(4, 8)); (void)m; (void)blocks;",
])
def test_options_and_allocations_are_not_compute(body):
    ok, reason = _delegation(body)
    assert ok, reason


@pytest.mark.parametrize(("body", "prelude", "says"), [
    ("auto y = torch::matmul(a, b);", "", "torch::matmul"),
    ("auto y = ::torch::matmul (a, b);", "", "torch::matmul"),
    ("auto y = torch :: mm(a, b);", "", "torch::mm"),
    # Aliases: a function pointer / reference, a using-declaration, decltype.
    ("auto f = torch::matmul; auto y = f(a, b);", "", "torch::matmul"),
    ("auto& f = at::mm; auto y = f(a, b);", "", "at::mm"),
    ("using torch::matmul; auto y = matmul(a, b);", "", "torch::matmul"),
    ("decltype(&at::bmm) f = nullptr; (void)f;", "", "at::bmm"),
    # Namespace aliases, at namespace scope or in the function.
    ("auto y = T::matmul(a, b);", "namespace T = torch;\n", "torch::matmul"),
    ("namespace N = at::native; auto y = N::mm(a, b);", "", "at::native::mm"),
    ("auto y = F::softmax(a, 1);", "namespace U = torch; namespace F = U::nn::functional;\n",
     "torch::nn::functional::softmax"),
    # Nested namespaces and classes.
    ("auto y = torch::nn::functional::softmax(a, 1);", "", "torch::nn::functional::softmax"),
    ("auto y = at::native::mm(a, b);", "", "at::native::mm"),
    ("auto y = torch::linalg::matmul(a, b);", "", "torch::linalg::matmul"),
    ("auto y = at::cuda::blas::gemm<float>('n', 'n', 1, 1, 1, 1.0f, nullptr, 1, nullptr, 1, 0.0f, "
     "nullptr, 1);", "", "at::cuda::blas"),
    ("torch::nn::Linear lin(4, 4); auto y = lin->forward(a);", "", "torch::nn::Linear"),
    ("auto y = at::mm_out(b, a, a);", "", "at::mm_out"),
    # Tensor methods that compute, on any receiver (an options-looking allocation included).
    ("auto y = a.mm(b);", "", ".mm("),
    ("auto y = torch::zeros_like(a).addmm_(a, b);", "", ".addmm_("),
    ("auto y = torch::empty({4}, torch::dtype(torch::kFloat)).copy_(a.softmax(0));", "",
     ".softmax("),
    ("auto y = (&a)->matmul(b);", "", ".matmul("),
    ("auto y = a.sum(1);", "", ".sum("),
    # Unqualified calls found by argument-dependent lookup (at::Tensor lives in at::).
    ("auto y = matmul(a, b);", "", "matmul("),
    ("auto y = softmax(a, 1);", "using namespace torch;\n", "softmax("),
])
def test_torch_compute_is_caught_however_spelled(body, prelude, says):
    ok, reason = _delegation(body, prelude=prelude)
    assert not ok, f"not caught: {body}"
    assert says in reason, reason


def test_own_function_with_an_op_name_is_not_delegation():
    # The candidate's own host function called `matmul` (as in public solutions).
    src = (KERNEL + "#include <torch/extension.h>\n"
           "torch::Tensor matmul(torch::Tensor a, torch::Tensor b) {\n"
           "  auto c = torch::empty({a.size(0), b.size(1)}, a.options());\n"
           "  k<<<1, 32>>>(c.data_ptr<float>());\n  return c;\n}\n"
           "torch::Tensor forward(torch::Tensor a, torch::Tensor b) { return matmul(a, b); }\n")
    result = {c.name: c for c in run_cuda_checks(src, embedded=True)}["no_library_delegation"]
    assert result.ok, result.reason


def test_device_struct_methods_named_like_ops_are_not_tensor_methods():
    src = ("struct Welford { float m, v; __device__ float mean() const { return m; } };\n"
           "__global__ void k(const float* x, float* o) { Welford w{x[0], 0.f}; o[0] = w.mean(); }\n"
           "#include <torch/extension.h>\n"
           "torch::Tensor fwd(torch::Tensor a) { auto o = torch::empty_like(a);\n"
           "  k<<<1, 32>>>(a.data_ptr<float>(), o.data_ptr<float>()); return o; }\n")
    result = {c.name: c for c in run_cuda_checks(src, embedded=True)}["no_library_delegation"]
    assert result.ok, result.reason
