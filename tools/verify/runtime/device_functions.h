// Emulator stand-in for <device_functions.h>: everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
