// Poison for uninitialised locals of device code (included by sc_emu.hpp;
// the rewriter calls poison_local).
#pragma once
#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace sc {

// The run's poison word (the one fresh shared and device memory hold). `pure`: a poison store
// an honest program overwrites before reading is dead, and the call goes with it.
uint32_t poison_word() __attribute__((pure));
// An uninitialised local of device code (the rewriter adds the call after its declaration:
// tools/verify/uninit_rewrite.py) gets the poison, as a GPU register would hold garbage.
template <class T>
inline void poison_local(T& v) {
  using E = std::remove_cv_t<std::remove_all_extents_t<T>>;
  if constexpr (std::is_trivially_default_constructible<E>::value &&
                std::is_trivially_copyable<E>::value) {
    uint32_t w = poison_word();
    unsigned char* p = (unsigned char*)(__builtin_addressof(v));  // drops volatile too
    size_t i = 0;
    for (; i + 4 <= sizeof(T); i += 4) memcpy(p + i, &w, 4);
    for (; i < sizeof(T); ++i) p[i] = static_cast<unsigned char>(w >> (8 * (i % 4)));
  }
}

}  // namespace sc
