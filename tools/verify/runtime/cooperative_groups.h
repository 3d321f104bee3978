// Emulator stand-in for <cooperative_groups.h>: everything lives in sc_emu.hpp.
#pragma once
#include "sc_emu.hpp"
