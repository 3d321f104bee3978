// Emulator stand-in for <cuda_bf16.h>: everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
