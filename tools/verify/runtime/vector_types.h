// Emulator stand-in for <vector_types.h> (float4, int2, dim3 ...): everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
