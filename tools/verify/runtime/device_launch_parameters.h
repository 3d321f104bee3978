// Emulator stand-in for <device_launch_parameters.h>: everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
