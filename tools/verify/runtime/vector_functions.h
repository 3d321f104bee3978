// Emulator stand-in for <vector_functions.h> (make_float4 ...): everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
