// cooperative_groups: thread_block and tiled_partition<N> (N a power of two <= 32) on top of
// the emulator's barrier and warp collectives. Grid groups are rejected by the rewriter.
#pragma once

namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { sc::syncthreads(0, 1, 0); }
  unsigned thread_rank() const { return sc::cur()->linear; }
  unsigned size() const { dim3 b = blockDim; return b.x * b.y * b.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx); }
  dim3 thread_index() const { return dim3(threadIdx); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }

namespace detail {
inline unsigned lane() { return sc::cur()->linear & 31u; }
}

template <unsigned N>
class thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");

 public:
  unsigned mask() const {
    unsigned base = (detail::lane() / N) * N;
    return N == 32 ? 0xffffffffu : (((1u << N) - 1u) << base);
  }
  void sync() const { sc::warp_op(sc::kSyncWarp, mask(), 0, 0, 32, 0); }
  unsigned thread_rank() const { return detail::lane() % N; }
  unsigned size() const { return N; }
  unsigned num_threads() const { return N; }
  unsigned meta_group_rank() const { return sc::cur()->linear / N; }
  unsigned meta_group_size() const {
    dim3 b = blockDim;
    return (b.x * b.y * b.z + N - 1) / N;
  }
  template <class T> T shfl(T v, int src) const { return sc::shfl(sc::kShflIdx, mask(), v, src, N, 0); }
  template <class T> T shfl_up(T v, unsigned d) const { return sc::shfl(sc::kShflUp, mask(), v, (int)d, N, 0); }
  template <class T> T shfl_down(T v, unsigned d) const { return sc::shfl(sc::kShflDown, mask(), v, (int)d, N, 0); }
  template <class T> T shfl_xor(T v, unsigned m) const { return sc::shfl(sc::kShflXor, mask(), v, (int)m, N, 0); }
  int any(int p) const { return (int)sc::warp_op(sc::kAny, mask(), p ? 1 : 0, 0, 32, 0); }
  int all(int p) const { return (int)sc::warp_op(sc::kAll, mask(), p ? 1 : 0, 0, 32, 0); }
  unsigned ballot(int p) const {
    unsigned b = (unsigned)sc::warp_op(sc::kBallot, mask(), p ? 1 : 0, 0, 32, 0);
    unsigned base = (detail::lane() / N) * N;
    return N == 32 ? b : (b >> base) & ((1u << N) - 1u);
  }
};

template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }

template <class G> inline void sync(const G& g) { g.sync(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };

// cg::reduce over a tile (a butterfly, like the CUDA implementation).
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& g, T v, Op op) {
  for (unsigned o = N / 2; o > 0; o /= 2) v = op(v, g.shfl_xor(v, o));
  return v;
}

}  // namespace cooperative_groups
