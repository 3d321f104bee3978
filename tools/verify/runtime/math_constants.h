// Emulator stand-in for <math_constants.h>: everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
