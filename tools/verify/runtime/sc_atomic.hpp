// CUDA atomics with real atomic semantics: blocks run concurrently on worker threads, so
// every atomic is a hardware atomic (GCC __atomic builtins; CAS loops for floating point).
#pragma once

namespace sc {
template <class T>
inline T atomic_fetch_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

template <class T, class Bits, class F>
inline T atomic_cas_loop(T* p, F f) {
  Bits* bp = reinterpret_cast<Bits*>(p);
  Bits old = __atomic_load_n(bp, __ATOMIC_SEQ_CST);
  for (;;) {
    T oldv;
    memcpy(&oldv, &old, sizeof(T));
    T newv = f(oldv);
    Bits nb;
    memcpy(&nb, &newv, sizeof(T));
    if (__atomic_compare_exchange_n(bp, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return oldv;
  }
}
}  // namespace sc

#define SC_INT_ATOMICS(T)                                                                    \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }    \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }        \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicMin(T* p, T v) {                                                          \
    return sc::atomic_cas_loop<T, T>(p, [v](T o) { return v < o ? v : o; });               \
  }                                                                                        \
  inline T atomicMax(T* p, T v) {                                                          \
    return sc::atomic_cas_loop<T, T>(p, [v](T o) { return v > o ? v : o; });               \
  }                                                                                        \
  inline T atomicCAS(T* p, T cmp, T v) {                                                   \
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    return cmp;                                                                            \
  }
SC_INT_ATOMICS(int)
SC_INT_ATOMICS(unsigned int)
SC_INT_ATOMICS(unsigned long long)
SC_INT_ATOMICS(long long)
#undef SC_INT_ATOMICS

inline unsigned short atomicCAS(unsigned short* p, unsigned short cmp, unsigned short v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
inline float atomicAdd(float* p, float v) {
  return sc::atomic_cas_loop<float, unsigned>(p, [v](float o) { return o + v; });
}
inline double atomicAdd(double* p, double v) {
  return sc::atomic_cas_loop<double, unsigned long long>(p, [v](double o) { return o + v; });
}
inline float atomicSub(float* p, float v) {
  return sc::atomic_cas_loop<float, unsigned>(p, [v](float o) { return o - v; });
}
inline float atomicExch(float* p, float v) {
  unsigned nb;
  memcpy(&nb, &v, 4);
  unsigned ob = __atomic_exchange_n(reinterpret_cast<unsigned*>(p), nb, __ATOMIC_SEQ_CST);
  float o;
  memcpy(&o, &ob, 4);
  return o;
}
inline float atomicMax(float* p, float v) {
  return sc::atomic_cas_loop<float, unsigned>(p, [v](float o) { return fmaxf(o, v); });
}
inline float atomicMin(float* p, float v) {
  return sc::atomic_cas_loop<float, unsigned>(p, [v](float o) { return fminf(o, v); });
}
inline unsigned atomicInc(unsigned* p, unsigned lim) {
  return sc::atomic_cas_loop<unsigned, unsigned>(p, [lim](unsigned o) { return o >= lim ? 0u : o + 1; });
}
inline unsigned atomicDec(unsigned* p, unsigned lim) {
  return sc::atomic_cas_loop<unsigned, unsigned>(
      p, [lim](unsigned o) { return (o == 0 || o > lim) ? lim : o - 1; });
}
// Scoped variants behave like the device-wide ones here.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicCAS_block atomicCAS
#define atomicExch_block atomicExch
