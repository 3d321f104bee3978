// Profile counters: what the profile build of a program calls (tools/verify/profile_rewrite.py;
// counter definitions in docs/EMULATOR.md, "Profiles"). Plain builds never call any of it.
//
// Every wrapper returns exactly what it was given or computes exactly the expression it replaces
// (same operands, same order, same types), so results do not change.
//
// * Accesses, atomics and branch conditions append one ProfEntry to the calling thread's log,
//   inline: the log is reached through prof_ctx(), a `const` function (one CUDA thread's
//   function invocation always runs on one fiber, so its result never changes within one: the
//   compiler calls it once per function and keeps the pointer in a register). Warp requests
//   are rebuilt from the logs at barriers and block ends (sc_prof.cpp).
// * Executed operations: arithmetic operators of device code become op_* calls whose class is
//   the C++ type of the result (float, double, __half, __nv_bfloat16, integers and pointers), as
//   the compiler decides it by the usual arithmetic conversions; each one adds 1 to the thread's
//   counter of that (class, kind). A product written directly as an operand of + or - (or the
//   right side of += / -=) is one fused multiply-add when the product and the sum have the same
//   class (what nvcc's default contraction emits: FFMA, DFMA, HFMA2, IMAD).
#pragma once

#include <type_traits>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ProfEntry's packed store assumes little-endian");

struct __half;
struct __half2;
struct __nv_bfloat16;
struct __nv_bfloat162;

namespace sc {

enum ProfKind { kProfLoad = 0, kProfStore = 1, kProfRmw = 2, kProfAtomic = 3, kProfBranch = 4 };

// One thread's execution of a wrapped access or branch.
struct ProfEntry {
  uintptr_t addr;       // the address (a branch: its outcome, 0 or 1)
  int site;             // the rewriter's static site number
  unsigned short size;  // bytes accessed
  unsigned char kind;   // ProfKind
  unsigned char pad;
};

// Operation classes x kinds: counter index class * kProfOpKinds + kind.
enum ProfOpClass { kOpFp32 = 0, kOpFp64, kOpFp16, kOpBf16, kOpInt, kProfOpClasses };
enum ProfOpKind { kOpAdd = 0, kOpMul, kOpFma, kOpDiv, kOpSpecial, kOpLogic, kProfOpKinds };
constexpr int kProfOps = kProfOpClasses * kProfOpKinds;

// One CUDA thread's profile state while its block runs. A warp's 32 lanes share one log,
// interleaved: lane l's i-th entry is at log[32 * i + l], so the flush reads a warp request's
// entries from 32 adjacent ones (sc_prof.cpp).
struct ProfThread {
  ProfEntry* pos;    // next free entry of this lane (steps of 32)
  ProfEntry* end;    // end of this lane's storage (pos == end: prof_grow)
  ProfEntry* begin;
  unsigned long long ops[kProfOps];
};

// prof_ctx(): the calling thread's ProfThread; on the host (a __host__ __device__ function
// called by host code) a per-host-thread sink that is never reported. prof_grow: the log is
// full (or this is the host sink): grow it and append, or drop the entry. (Declared in
// sc_emu.hpp.)

inline void prof_note(ProfThread* t, uintptr_t addr, unsigned size, int site, int kind) {
  ProfEntry* p = t->pos;
  if (__builtin_expect(p != t->end, 1)) {
    // site, size and kind are constants at every call: one 8-byte store of a constant.
    unsigned long long meta = (unsigned long long)(unsigned)site |
                              (unsigned long long)(size < 65535u ? size : 65535u) << 32 |
                              (unsigned long long)(unsigned char)kind << 48;
    p->addr = addr;
    __builtin_memcpy(&p->site, &meta, sizeof meta);
    t->pos = p + 32;
  } else {
    prof_grow(t, addr, size, site, kind);
  }
}

template <class T>
inline T&& prof_mem(T&& ref, int site, int kind) {
  if constexpr (!std::is_array<std::remove_reference_t<T>>::value)
    prof_note(prof_ctx(), reinterpret_cast<uintptr_t>(__builtin_addressof(ref)), (unsigned)sizeof(ref),
              site, kind);
  return static_cast<T&&>(ref);
}
template <class P>
inline P prof_atom(P p, int site) {
  prof_note(prof_ctx(), reinterpret_cast<uintptr_t>(p), (unsigned)sizeof(*p), site, kProfAtomic);
  return p;
}
template <class C>
inline bool prof_br(const C& c, int site) {
  bool b = static_cast<bool>(c);
  prof_note(prof_ctx(), (uintptr_t)b, 0, site, kProfBranch);
  return b;
}

// ---------------------------------------------------------------- executed operations

template <class T>
constexpr int op_class() {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_same<U, float>::value) return kOpFp32;
  else if constexpr (std::is_same<U, double>::value || std::is_same<U, long double>::value) return kOpFp64;
  else if constexpr (std::is_same<U, __half>::value || std::is_same<U, __half2>::value) return kOpFp16;
  else if constexpr (std::is_same<U, __nv_bfloat16>::value || std::is_same<U, __nv_bfloat162>::value)
    return kOpBf16;
  else if constexpr (std::is_integral<U>::value || std::is_enum<U>::value || std::is_pointer<U>::value)
    return kOpInt;
  else return -1;  // a class type: its operator's own body (if it is device code) is counted
}

// Adds 1 to the counter of kind K for an operation whose result has type R.
template <int K, class R>
inline void op_tick() {
  constexpr int c = op_class<R>();
  if constexpr (c >= 0) prof_ctx()->ops[c * kProfOpKinds + K] += 1;
}

// A fused multiply-add when product and sum share a counted class, else a mul and an add.
template <class P, class S>
inline void op_tick_fma() {
  constexpr int cp = op_class<P>(), cs = op_class<S>();
  if constexpr (cp == cs && cp >= 0) {
    op_tick<kOpFma, S>();
  } else {
    op_tick<kOpMul, P>();
    op_tick<kOpAdd, S>();
  }
}

// A tag carrying a type (the left side of a compound assignment, written SC_PT((x)): never
// evaluated).
template <class T>
struct OpType {};
#define SC_PT(x) (::sc::OpType<decltype(x)>*)nullptr

#define SC_PROF_BINOP(name, op, kind)                                                  \
  template <class A, class B>                                                          \
  constexpr decltype(auto) name(A&& a, B&& b) {                                        \
    if (!__builtin_is_constant_evaluated())                                            \
      op_tick<kind, decltype(static_cast<A&&>(a) op static_cast<B&&>(b))>();           \
    return static_cast<A&&>(a) op static_cast<B&&>(b);                                 \
  }
SC_PROF_BINOP(op_add, +, kOpAdd)
SC_PROF_BINOP(op_sub, -, kOpAdd)
SC_PROF_BINOP(op_mul, *, kOpMul)
SC_PROF_BINOP(op_div, /, kOpDiv)
SC_PROF_BINOP(op_mod, %, kOpDiv)
SC_PROF_BINOP(op_shl, <<, kOpLogic)
SC_PROF_BINOP(op_shr, >>, kOpLogic)
SC_PROF_BINOP(op_and, &, kOpLogic)
SC_PROF_BINOP(op_or, |, kOpLogic)
SC_PROF_BINOP(op_xor, ^, kOpLogic)
#undef SC_PROF_BINOP

// x*y+z, x*y-z, x+y*z, x-y*z: the same expression, counted as one fused op where nvcc fuses.
#define SC_PROF_FMA(name, expr, ptype)                                                 \
  template <class X, class Y, class Z>                                                 \
  constexpr decltype(auto) name(X&& x, Y&& y, Z&& z) {                                 \
    if (!__builtin_is_constant_evaluated()) op_tick_fma<ptype, decltype(expr)>();      \
    return expr;                                                                       \
  }
#define SC_X static_cast<X&&>(x)
#define SC_Y static_cast<Y&&>(y)
#define SC_Z static_cast<Z&&>(z)
SC_PROF_FMA(op_mad, SC_X * SC_Y + SC_Z, decltype(SC_X * SC_Y))
SC_PROF_FMA(op_msb, SC_X * SC_Y - SC_Z, decltype(SC_X * SC_Y))
SC_PROF_FMA(op_amd, SC_X + SC_Y * SC_Z, decltype(SC_Y * SC_Z))
SC_PROF_FMA(op_smd, SC_X - SC_Y * SC_Z, decltype(SC_Y * SC_Z))
#undef SC_X
#undef SC_Y
#undef SC_Z
#undef SC_PROF_FMA

// Compound assignment `x op= y` -> `x op= op_ca_add(SC_PT((x)), y)` (add, mul, div, logic):
// counts the operation `x op y` would be and returns y itself (the assignment stays as written,
// for the race check). Named functions, not a template argument: the rewriter parses the text
// again and `<` in an expression is ambiguous to it.
#define SC_PROF_CA(name, op, kind)                                                     \
  template <class L, class Y>                                                          \
  constexpr Y name(OpType<L>*, Y&& y) {                                                \
    if (!__builtin_is_constant_evaluated())                                            \
      op_tick<kind, decltype(std::declval<L>() op static_cast<Y&&>(y))>();             \
    return static_cast<Y&&>(y);                                                        \
  }
SC_PROF_CA(op_ca_add, +, kOpAdd)
SC_PROF_CA(op_ca_mul, *, kOpMul)
SC_PROF_CA(op_ca_div, /, kOpDiv)
SC_PROF_CA(op_ca_logic, |, kOpLogic)
#undef SC_PROF_CA
// `x += a * b` (or -=) -> `x += op_cfma(SC_PT((x)), a, b)`: returns the product a * b.
template <class L, class A, class B>
constexpr decltype(auto) op_cfma(OpType<L>*, A&& a, B&& b) {
  if (!__builtin_is_constant_evaluated())
    op_tick_fma<decltype(static_cast<A&&>(a) * static_cast<B&&>(b)),
                decltype(std::declval<L>() + static_cast<A&&>(a) * static_cast<B&&>(b))>();
  return static_cast<A&&>(a) * static_cast<B&&>(b);
}
// `++x`, `x--`, ...: -> `(op_inc(SC_PT((x))), ++x)`.
template <class L>
inline void op_inc(OpType<L>*) {
  op_tick<kOpAdd, std::remove_reference_t<L>>();
}
// A math-library call (fma, special function, add/mul/div intrinsic): `op_call_fma(fmaf(a, b,
// c))` returns the call's value, counted by the value's type.
#define SC_PROF_CALL(name, kind)                                                       \
  template <class R>                                                                   \
  constexpr R name(R&& r) {                                                            \
    if (!__builtin_is_constant_evaluated()) op_tick<kind, R>();                        \
    return static_cast<R&&>(r);                                                        \
  }
SC_PROF_CALL(op_call_add, kOpAdd)
SC_PROF_CALL(op_call_mul, kOpMul)
SC_PROF_CALL(op_call_fma, kOpFma)
SC_PROF_CALL(op_call_div, kOpDiv)
SC_PROF_CALL(op_call_special, kOpSpecial)
#undef SC_PROF_CALL

}  // namespace sc
