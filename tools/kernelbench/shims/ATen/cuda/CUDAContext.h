// CPU-path shim for <ATen/cuda/CUDAContext.h>: see CUDAContextLight.h.
#pragma once
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAStream.h>
