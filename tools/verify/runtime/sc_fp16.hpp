// __half / half2 / __nv_bfloat16 basics: storage as 16-bit patterns, arithmetic in float
// with round-to-nearest-even back to 16 bits (exact for +,-,*,/ of halves).
#pragma once

namespace sc {
inline unsigned short f2h_bits(float f) {
  unsigned x;
  memcpy(&x, &f, 4);
  unsigned sign = (x >> 16) & 0x8000u;
  unsigned exp = (x >> 23) & 0xffu;
  unsigned man = x & 0x7fffffu;
  if (exp == 0xffu) return (unsigned short)(sign | 0x7c00u | (man ? 0x200u : 0u));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (unsigned short)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (unsigned short)sign;
    man |= 0x800000u;
    unsigned shift = (unsigned)(14 - e);
    unsigned h = man >> shift;
    unsigned rem = man & ((1u << shift) - 1u);
    unsigned half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return (unsigned short)(sign | h);
  }
  unsigned h = ((unsigned)e << 10) | (man >> 13);
  unsigned rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (unsigned short)(sign | h);
}
inline float h2f_bits(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned exp = (h >> 10) & 0x1fu;
  unsigned man = h & 0x3ffu;
  unsigned x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else {
      int e = -1;
      do { ++e; man <<= 1; } while (!(man & 0x400u));
      x = sign | ((unsigned)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}
inline unsigned short f2bf_bits(float f) {
  unsigned x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}
inline float bf2f_bits(unsigned short b) {
  unsigned x = (unsigned)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}
}  // namespace sc

struct __half_raw { unsigned short x; };
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(sc::f2h_bits(f)) {}
  __half(double f) : __x(sc::f2h_bits((float)f)) {}
  __half(int i) : __x(sc::f2h_bits((float)i)) {}
  __half(__half_raw r) : __x(r.x) {}
  operator float() const { return sc::h2f_bits(__x); }
  __half& operator+=(const __half& o) { *this = __half(float(*this) + float(o)); return *this; }
  __half& operator-=(const __half& o) { *this = __half(float(*this) - float(o)); return *this; }
  __half& operator*=(const __half& o) { *this = __half(float(*this) * float(o)); return *this; }
  __half& operator/=(const __half& o) { *this = __half(float(*this) / float(o)); return *this; }
};
typedef __half half;
inline __half operator+(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half operator-(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half operator*(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half operator/(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half operator-(__half a) { __half r = a; r.__x ^= 0x8000u; return r; }
inline bool operator==(__half a, __half b) { return float(a) == float(b); }
inline bool operator!=(__half a, __half b) { return float(a) != float(b); }
inline bool operator<(__half a, __half b) { return float(a) < float(b); }
inline bool operator>(__half a, __half b) { return float(a) > float(b); }
inline bool operator<=(__half a, __half b) { return float(a) <= float(b); }
inline bool operator>=(__half a, __half b) { return float(a) >= float(b); }

struct __attribute__((aligned(4))) __half2 {
  __half x, y;
  __half2() = default;
  __half2(__half a, __half b) : x(a), y(b) {}
};
typedef __half2 half2;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __half __int2half_rn(int i) { return __half((float)i); }
inline int __half2int_rn(__half h) { return (int)nearbyintf(float(h)); }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hneg(__half a) { return -a; }
inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf(float(a), float(b), float(c))); }
inline __half __habs(__half a) { __half r = a; r.__x &= 0x7fffu; return r; }
// Like CUDA: when one operand is NaN the other is returned.
inline __half __hmax(__half a, __half b) { return __half(fmaxf(float(a), float(b))); }
inline __half __hmin(__half a, __half b) { return __half(fminf(float(a), float(b))); }
inline __half __hmax_nan(__half a, __half b) { return (a.__x & 0x7fffu) > 0x7c00u ? a : ((b.__x & 0x7fffu) > 0x7c00u ? b : __hmax(a, b)); }
inline __half __hmin_nan(__half a, __half b) { return (a.__x & 0x7fffu) > 0x7c00u ? a : ((b.__x & 0x7fffu) > 0x7c00u ? b : __hmin(a, b)); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __ushort_as_half(unsigned short x) { __half h; h.__x = x; return h; }
inline __half __short_as_half(short x) { __half h; h.__x = (unsigned short)x; return h; }
inline __half __float2half_rz(float f) { return __half(f); }
inline __half __hadd_sat(__half a, __half b) { float r = float(a) + float(b); return __half(r < 0.f ? 0.f : (r > 1.f ? 1.f : r)); }
inline __half __hmul_sat(__half a, __half b) { float r = float(a) * float(b); return __half(r < 0.f ? 0.f : (r > 1.f ? 1.f : r)); }
inline bool __hgt(__half a, __half b) { return a > b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
inline __half hexp(__half a) { return __half(expf(float(a))); }
inline __half hsqrt(__half a) { return __half(sqrtf(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / sqrtf(float(a))); }
inline __half hlog(__half a) { return __half(logf(float(a))); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
inline __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
inline float2 __half22float2(__half2 h) { return make_float2(float(h.x), float(h.y)); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2(a.x + b.x, a.y + b.y); }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2(a.x - b.x, a.y - b.y); }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2(a.x * b.x, a.y * b.y); }
inline __half2 __h2div(__half2 a, __half2 b) { return __half2(a.x / b.x, a.y / b.y); }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }
inline __half2 __hmax2(__half2 a, __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
inline __half2 __hmin2(__half2 a, __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
inline __half2 __hmax2_nan(__half2 a, __half2 b) { return __half2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }
inline __half2 __hmin2_nan(__half2 a, __half2 b) { return __half2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }
inline __half2 __hneg2(__half2 a) { return __half2(-a.x, -a.y); }
inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
inline __half2 __hgt2(__half2 a, __half2 b) { return __half2(__half(a.x > b.x ? 1.f : 0.f), __half(a.y > b.y ? 1.f : 0.f)); }
inline __half2 __hge2(__half2 a, __half2 b) { return __half2(__half(a.x >= b.x ? 1.f : 0.f), __half(a.y >= b.y ? 1.f : 0.f)); }
inline __half2 __hlt2(__half2 a, __half2 b) { return __half2(__half(a.x < b.x ? 1.f : 0.f), __half(a.y < b.y ? 1.f : 0.f)); }
inline __half2 __hle2(__half2 a, __half2 b) { return __half2(__half(a.x <= b.x ? 1.f : 0.f), __half(a.y <= b.y ? 1.f : 0.f)); }
inline __half2 __heq2(__half2 a, __half2 b) { return __half2(__half(a.x == b.x ? 1.f : 0.f), __half(a.y == b.y ? 1.f : 0.f)); }
inline bool __hbgt2(__half2 a, __half2 b) { return a.x > b.x && a.y > b.y; }
inline bool __hbge2(__half2 a, __half2 b) { return a.x >= b.x && a.y >= b.y; }
inline bool __hblt2(__half2 a, __half2 b) { return a.x < b.x && a.y < b.y; }
inline bool __hble2(__half2 a, __half2 b) { return a.x <= b.x && a.y <= b.y; }
inline bool __hbeq2(__half2 a, __half2 b) { return a.x == b.x && a.y == b.y; }
inline __half2 h2sqrt(__half2 a) { return __half2(hsqrt(a.x), hsqrt(a.y)); }
inline __half2 h2exp(__half2 a) { return __half2(hexp(a.x), hexp(a.y)); }
inline __half2 __hadd2_sat(__half2 a, __half2 b) { return __half2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); }
inline __half2 __hmul2_sat(__half2 a, __half2 b) { return __half2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(sc::f2bf_bits(f)) {}
  __nv_bfloat16(double f) : __x(sc::f2bf_bits((float)f)) {}
  operator float() const { return sc::bf2f_bits(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16(float(a) + float(b)); }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16(float(a) * float(b)); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16(float(a) - float(b)); }
