// Profile counters of the CUDA emulator (docs/EMULATOR.md, "Profiles"): what Nsight Compute
// would count for a launch, from the emulated threads' own accesses.
//
// The profile build of a program (rewriter profile variant) notes every global / shared access,
// atomic and branch condition in device code: each thread appends to its own log, inline
// (sc_prof.hpp; no locks: a block's fibers run on one worker), and counts its executed
// operations in its own array, summed once per block. Fibers do not run in lock step, so a warp-level
// request is rebuilt when a block reaches a barrier or ends: the k-th execution of site S by each
// lane of a warp is one request (CUDA's warp-instruction instance under structured control flow).
// A request's lanes are then coalesced as the GPU does: distinct 32-byte sectors for global
// memory, bank wavefronts (32 banks of 4 bytes) for shared memory, same-address lanes for atomics,
// lanes on either side for branches.
#include "sc_internal.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace sc {

namespace {

constexpr int kGlobal = 1, kShared = 2, kLocal = 4;

struct Lane {
  unsigned lane;
  const ProfEntry* e;
};

// The lanes of one request (a view: no allocation per request).
struct Lanes {
  const Lane* p;
  size_t n;
  const Lane* begin() const { return p; }
  const Lane* end() const { return p + n; }
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  const Lane& operator[](size_t i) const { return p[i]; }
};

unsigned long long distinct(std::vector<unsigned long long>& v) {
  std::sort(v.begin(), v.end());
  return (unsigned long long)(std::unique(v.begin(), v.end()) - v.begin());
}

// Distinct values of a[0..m): when they come sorted (lanes walking up through memory, the
// common case) one pass; otherwise a sort of at most a few dozen values.
unsigned long long distinct_small(unsigned long long* a, size_t m) {
  bool sorted = true;
  for (size_t i = 1; i < m && sorted; ++i) sorted = a[i] >= a[i - 1];
  if (!sorted) std::sort(a, a + m);
  unsigned long long d = m ? 1 : 0;
  for (size_t i = 1; i < m; ++i) d += a[i] != a[i - 1];
  return d;
}

// Distinct 32-byte sectors the lanes' byte ranges touch.
unsigned long long sectors(Lanes lanes) {
  unsigned long long buf[64];
  size_t m = 0;
  bool small = true;
  for (const Lane& l : lanes) small = small && l.e->size <= 32;
  if (small && lanes.size() <= 32) {
    for (const Lane& l : lanes) {
      uintptr_t a = l.e->addr, n = l.e->size ? l.e->size : 1;
      buf[m++] = a >> 5;
      if (((a + n - 1) >> 5) != (a >> 5)) buf[m++] = (a + n - 1) >> 5;
    }
    return distinct_small(buf, m);
  }
  std::vector<unsigned long long> v;
  for (const Lane& l : lanes) {
    uintptr_t a = l.e->addr, n = l.e->size ? l.e->size : 1;
    for (uintptr_t x = a >> 5; x <= (a + n - 1) >> 5; ++x) v.push_back(x);
  }
  return distinct(v);
}

// Sectors of a block's L1 data cache (32 KB: a share of the 128-256 KB an SM's L1 and shared
// memory split between its resident blocks). Global loads go through L1; a sector a load
// request touches that the block loaded before and that was not evicted since is served there,
// not by L2. Lanes of a warp walking down the rows of a matrix touch one sector each per request
// but reuse it for the next columns: coalescing alone counts every request's sectors as L2
// traffic, which is what L1 hides on the GPU. Stores write through to L2 (not counted here).
constexpr size_t kProfL1Sectors = 1024;

// Of the distinct sectors a[0..m) (sorted, duplicates adjacent) of one load request, how many
// miss the block's L1; they become resident. Direct-mapped with a skewed index: consecutive
// sectors never share a slot (as in a plain direct-mapped cache), while rows 32 KB apart (a
// power-of-two pitch) land in different slots instead of all evicting each other.
unsigned long long l1_misses(Worker* w, const unsigned long long* a, size_t m) {
  unsigned long long* tags = w->prof_l1.data();
  unsigned long long miss = 0;
  for (size_t i = 0; i < m; ++i) {
    if (i && a[i] == a[i - 1]) continue;
    unsigned long long sector = a[i], tag = sector + 1;
    size_t slot = (size_t)((sector + (sector >> 10) + (sector >> 20)) & (kProfL1Sectors - 1));
    miss += tags[slot] != tag;
    tags[slot] = tag;
  }
  return miss;
}

// Sectors of a request's lanes, sorted (for l1_misses on the general path).
std::vector<unsigned long long> sorted_sectors(Lanes lanes) {
  std::vector<unsigned long long> v;
  for (const Lane& l : lanes) {
    uintptr_t a = l.e->addr, n = l.e->size ? l.e->size : 1;
    for (uintptr_t x = a >> 5; x <= (a + n - 1) >> 5; ++x) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Most distinct words one bank must deliver, for the words w[0..m) of one phase.
unsigned long long bank_ways(unsigned long long* w, size_t m) {
  unsigned long long first[32];
  unsigned seen = 0;  // bit b: first[b] holds bank b's word
  bool conflict = false;
  for (size_t i = 0; i < m && !conflict; ++i) {
    unsigned b = (unsigned)(w[i] & 31);
    if (!(seen >> b & 1u)) { seen |= 1u << b; first[b] = w[i]; }
    else conflict = first[b] != w[i];
  }
  if (!conflict) return 1;  // one word per bank (or the same word: a broadcast)
  std::sort(w, w + m);
  size_t u = (size_t)(std::unique(w, w + m) - w);
  unsigned count[32] = {};
  unsigned long long ways = 1;
  for (size_t i = 0; i < u; ++i) ways = std::max<unsigned long long>(ways, ++count[w[i] & 31]);
  return ways;
}

// Shared-memory wavefronts: a request is split into phases of 128 bytes' worth of lanes (32
// lanes of 4 bytes, 16 of 8, 8 of 16); in each phase the wavefronts are the most distinct 4-byte
// words any one bank must deliver (lanes reading the same word share it: a broadcast).
void wavefronts(Lanes lanes, unsigned long long& wave, unsigned long long& ideal) {
  unsigned size = std::max<unsigned>(4, lanes.empty() ? 4 : lanes[0].e->size);
  unsigned per_phase = std::max<unsigned>(1, 128 / std::min<unsigned>(size, 128));
  unsigned phases = (32 + per_phase - 1) / per_phase;
  unsigned long long buf[256];  // the words of one phase; a vector only for huge accesses
  std::vector<unsigned long long> big;
  for (unsigned phase = 0; phase < phases; ++phase) {
    size_t m = 0, need = 0;
    for (const Lane& l : lanes)
      if (l.lane / per_phase == phase) need += (size_t)((l.e->size ? l.e->size : 1) / 4 + 2);
    if (!need) continue;
    unsigned long long* words = buf;
    if (need > 256) {
      big.resize(need);
      words = big.data();
    }
    for (const Lane& l : lanes) {
      if (l.lane / per_phase != phase) continue;
      uintptr_t a = l.e->addr, n = l.e->size ? l.e->size : 1;
      for (uintptr_t x = a >> 2; x <= (a + n - 1) >> 2; ++x) words[m++] = x;
    }
    wave += bank_ways(words, m);
    ideal += 1;
  }
}

// Most lanes of one request on one address.
unsigned long long contention(Lanes lanes) {
  unsigned long long a[32];
  size_t m = std::min<size_t>(32, lanes.size());
  for (size_t i = 0; i < m; ++i) a[i] = lanes[i].e->addr;
  std::sort(a, a + m);
  unsigned long long best = 0, run = 0;
  for (size_t i = 0; i < m; ++i) {
    run = (i && a[i] == a[i - 1]) ? run + 1 : 1;
    best = std::max(best, run);
  }
  return best;
}

ProfSite& site_of(ProfStats& st, int site, int kind) {
  if (site < 0) site = 0;
  if ((size_t)site >= st.sites.size()) st.sites.resize((size_t)site + 1);
  ProfSite& s = st.sites[(size_t)site];
  s.kind = kind;
  return s;
}

// One warp-level request of one space: every lane executed the same instance of one site.
void account(Worker* w, int site, int kind, int space, Lanes lanes) {
  ProfStats& st = w->prof;
  ProfSite& s = site_of(st, site, kind);
  s.space |= space;
  s.requests += 1;
  s.lanes += lanes.size();
  unsigned long long bytes = 0;
  for (const Lane& l : lanes) bytes += l.e->size;
  s.bytes += bytes;
  if (kind == kProfBranch) {
    unsigned long long taken = 0;
    for (const Lane& l : lanes) taken += l.e->addr != 0;
    st.br_req += 1;
    st.br_lanes += lanes.size();
    bool div = taken && taken < lanes.size();
    st.br_div += div;
    s.units += div;
    return;
  }
  if (space == kLocal) {
    st.local_acc += lanes.size();
    return;
  }
  bool load = kind == kProfLoad || kind == kProfRmw, store = kind == kProfStore || kind == kProfRmw;
  if (kind == kProfAtomic) {
    unsigned long long c = contention(lanes);
    s.worst = std::max(s.worst, c);
    s.units += c;
    if (space == kGlobal) {
      st.gatom_req += 1; st.gatom_lanes += lanes.size(); st.gatom_serial += c;
      st.gatom_worst = std::max(st.gatom_worst, c);
    } else {
      st.satom_req += 1; st.satom_lanes += lanes.size(); st.satom_serial += c;
      st.satom_worst = std::max(st.satom_worst, c);
    }
    return;
  }
  if (space == kGlobal) {
    unsigned long long sec = sectors(lanes);
    s.units += sec;
    s.ideal += (bytes + 31) / 32;
    if (load) {
      st.gld_req += 1; st.gld_sect += sec; st.gld_bytes += bytes;
      std::vector<unsigned long long> v = sorted_sectors(lanes);
      st.gld_l1_miss += l1_misses(w, v.data(), v.size());
    }
    if (store) { st.gst_req += 1; st.gst_sect += sec; st.gst_bytes += bytes; }
  } else {
    unsigned long long wave = 0, ideal = 0;
    wavefronts(lanes, wave, ideal);
    s.units += wave;
    s.ideal += ideal;
    s.worst = std::max(s.worst, wave);
    if (load) { st.sld_req += 1; st.sld_wave += wave; st.sld_ideal += ideal; }
    if (store) { st.sst_req += 1; st.sst_wave += wave; st.sst_ideal += ideal; }
  }
}

// Where the block's shared arena and the worker's fiber stacks are (space_of without the
// worker's vectors on every lane).
struct Spaces {
  uintptr_t sm_lo, sm_hi, st_lo, st_hi;
  int of(uintptr_t a) const {
    if (a >= sm_lo && a < sm_hi) return kShared;
    if (a >= st_lo && a < st_hi) return kLocal;
    return kGlobal;
  }
};

Spaces spaces_of(Worker* w) {
  uintptr_t sm = reinterpret_cast<uintptr_t>(w->smem), st = reinterpret_cast<uintptr_t>(w->stacks);
  return Spaces{sm, sm + w->arena_store.size(), st, st + w->stack_cap * kStackSize};
}

// Splits one request by memory space (a generic pointer may mix them) and accounts each part.
void request(Worker* w, const Spaces& sp, int site, int kind, Lanes lanes) {
  if (lanes.empty()) return;
  if (kind == kProfBranch) { account(w, site, kind, 0, lanes); return; }
  // One space for all lanes when the lowest and highest address are in it and (global) no
  // shared arena or stack region lies between them: two lookups instead of one per lane.
  uintptr_t lo = lanes[0].e->addr, hi = lo;
  for (const Lane& l : lanes) {
    lo = std::min(lo, l.e->addr);
    hi = std::max(hi, l.e->addr);
  }
  int first = sp.of(lo);
  bool mixed = sp.of(hi) != first ||
               (first == kGlobal && ((sp.sm_lo <= hi && sp.sm_hi > lo) || (sp.st_lo <= hi && sp.st_hi > lo)));
  if (mixed) {
    mixed = false;
    for (const Lane& l : lanes) mixed = mixed || sp.of(l.e->addr) != first;
  }
  if (!mixed) { account(w, site, kind, first, lanes); return; }
  std::vector<Lane> part;
  for (int space : {kGlobal, kShared, kLocal}) {
    part.clear();
    for (const Lane& l : lanes) if (sp.of(l.e->addr) == space) part.push_back(l);
    if (!part.empty()) account(w, site, kind, space, Lanes{part.data(), part.size()});
  }
}

// A warp-level branch: m lanes, `taken` of them true (what account does for a branch).
void branch(Worker* w, int site, size_t m, unsigned long long taken) {
  ProfStats& st = w->prof;
  ProfSite& s = site_of(st, site, kProfBranch);
  s.requests += 1;
  s.lanes += m;
  bool div = taken && taken < m;
  st.br_req += 1;
  st.br_lanes += m;
  st.br_div += div;
  s.units += div;
}

// The common memory request, without building lanes: every lane accesses the same size (at most
// 4 bytes within one word for shared memory, at most 32 for global), all in one space. Counts
// exactly what account would; false (nothing counted) when the request is not that case.
bool uniform(Worker* w, const Spaces& sp, int site, int kind, const ProfEntry* col, const unsigned* who,
             size_t m) {
  unsigned size = col[who[0]].size;
  uintptr_t lo = col[who[0]].addr, hi = lo;
  bool same_size = true;
  for (size_t j = 1; j < m; ++j) {
    const ProfEntry& e = col[who[j]];
    same_size = same_size && e.size == size;
    lo = std::min(lo, e.addr);
    hi = std::max(hi, e.addr);
  }
  if (!same_size || !size) return false;
  int space = sp.of(lo);
  if (sp.of(hi) != space || space == kLocal) return false;
  if (space == kGlobal && ((sp.sm_lo <= hi && sp.sm_hi > lo) || (sp.st_lo <= hi && sp.st_hi > lo)))
    return false;
  unsigned long long units[64];
  size_t k = 0;
  if (space == kGlobal) {
    if (size > 32) return false;
    for (size_t j = 0; j < m; ++j) {
      uintptr_t a = col[who[j]].addr;
      units[k++] = a >> 5;
      if (((a + size - 1) >> 5) != (a >> 5)) units[k++] = (a + size - 1) >> 5;
    }
  } else {
    if (size > 4) return false;
    for (size_t j = 0; j < m; ++j) {
      uintptr_t a = col[who[j]].addr;
      if (((a + size - 1) >> 2) != (a >> 2)) return false;
      units[k++] = a >> 2;
    }
  }
  ProfStats& st = w->prof;
  ProfSite& s = site_of(st, site, kind);
  s.space |= space;
  s.requests += 1;
  s.lanes += m;
  unsigned long long bytes = (unsigned long long)m * size;
  s.bytes += bytes;
  bool load = kind == kProfLoad || kind == kProfRmw, store = kind == kProfStore || kind == kProfRmw;
  if (space == kGlobal) {
    unsigned long long sec = distinct_small(units, k);  // sorts units
    s.units += sec;
    s.ideal += (bytes + 31) / 32;
    if (load) {
      st.gld_req += 1; st.gld_sect += sec; st.gld_bytes += bytes;
      st.gld_l1_miss += l1_misses(w, units, k);
    }
    if (store) { st.gst_req += 1; st.gst_sect += sec; st.gst_bytes += bytes; }
  } else {
    unsigned long long wave = bank_ways(units, k);  // one phase: 32 lanes of <= 4 bytes
    s.units += wave;
    s.ideal += 1;
    s.worst = std::max(s.worst, wave);
    if (load) { st.sld_req += 1; st.sld_wave += wave; st.sld_ideal += 1; }
    if (store) { st.sst_req += 1; st.sst_wave += wave; st.sst_ideal += 1; }
  }
  return true;
}

// One warp's logs. They are interleaved (sc_prof.hpp): lane l's i-th entry is at
// log[i * 32 + l], so the i-th entries of a warp's lanes are 32 adjacent entries.
// While every lane logged the same site at position i, the i-th entries are one request (the
// k-th execution of that site by every lane); from the first difference (divergence, or lanes
// that logged less) on, entries are grouped by (site, k-th execution).
void flush_warp(Worker* w, const Spaces& sp, size_t base, size_t n) {
  ProfThread* th = w->prof_threads.data() + base;
  const ProfEntry* log = w->prof_buf[base / 32].data();
  unsigned who[32];
  size_t len[32];
  size_t m = 0, minlen = 0, maxlen = 0;
  for (size_t l = 0; l < n; ++l) {
    size_t k = (size_t)(th[l].pos - th[l].begin) / 32;
    if (!k) continue;
    minlen = m ? std::min(minlen, k) : k;
    maxlen = std::max(maxlen, k);
    len[m] = k;
    who[m++] = (unsigned)l;
  }
  if (!m) return;
  Lane lanes[32];
  for (size_t j = 0; j < m; ++j) lanes[j].lane = who[j];
  size_t i = 0;
  for (; i < minlen; ++i) {
    const ProfEntry* col = log + i * 32;
    const ProfEntry& e0 = col[who[0]];
    bool same = true;
    if (e0.kind == kProfBranch) {  // the most common entry: only the outcomes matter
      unsigned long long taken = 0;
      for (size_t j = 0; j < m; ++j) {
        same = same && col[who[j]].site == e0.site;
        taken += col[who[j]].addr != 0;
      }
      if (!same) break;
      branch(w, e0.site, m, taken);
      continue;
    }
    for (size_t j = 1; j < m; ++j) same = same && col[who[j]].site == e0.site;
    if (!same) break;
    if (e0.kind != kProfAtomic && uniform(w, sp, e0.site, e0.kind, col, who, m)) continue;
    for (size_t j = 0; j < m; ++j) lanes[j].e = col + who[j];
    request(w, sp, e0.site, e0.kind, Lanes{lanes, m});
  }
  if (i == maxlen) return;
  std::unordered_map<int, unsigned> prefix;  // the prefix is the same in every lane
  for (size_t x = 0; x < i; ++x) ++prefix[log[x * 32 + who[0]].site];
  std::unordered_map<unsigned long long, std::vector<Lane>> groups;
  std::unordered_map<int, unsigned> count;
  for (size_t j = 0; j < m; ++j) {
    count = prefix;
    for (size_t x = i; x < len[j]; ++x) {
      const ProfEntry* e = log + x * 32 + who[j];
      unsigned k = count[e->site]++;
      groups[((unsigned long long)(unsigned)e->site << 32) | k].push_back({who[j], e});
    }
  }
  for (auto& kv : groups)
    request(w, sp, kv.second[0].e->site, kv.second[0].e->kind, Lanes{kv.second.data(), kv.second.size()});
}

}  // namespace

void ProfStats::add(const ProfStats& o) {
#define SC_PROF_ADD(n) n += o.n;
  SC_PROF_SUMS(SC_PROF_ADD)
#undef SC_PROF_ADD
  for (int i = 0; i < kProfOps; ++i) ops[i] += o.ops[i];
  gatom_worst = std::max(gatom_worst, o.gatom_worst);
  satom_worst = std::max(satom_worst, o.satom_worst);
  if (sites.size() < o.sites.size()) sites.resize(o.sites.size());
  for (size_t i = 0; i < o.sites.size(); ++i) {
    const ProfSite& s = o.sites[i];
    if (s.kind < 0) continue;
    ProfSite& d = sites[i];
    d.kind = s.kind;
    d.space |= s.space;
    d.requests += s.requests; d.units += s.units; d.ideal += s.ideal; d.lanes += s.lanes;
    d.bytes += s.bytes;
    d.worst = std::max(d.worst, s.worst);
  }
}

int prof_enable() {
  G().prof_on = true;
  return 1;
}

void prof_kernel(const char* name) { G().prof_name = name ? name : ""; }

ProfThread* prof_ctx() {
  Worker* w = tls_worker;
  if (w && w->in_fiber) {
    Fiber* f = cur();
    if (f->linear < w->prof_threads.size()) return &w->prof_threads[f->linear];
  }
  // Host code (a __host__ __device__ function on the host): counted into a sink nobody reads.
  static thread_local ProfThread sink{nullptr, nullptr, nullptr, {}};
  return &sink;
}

// Points warp k's 32 lanes (threads 32k ...) into its interleaved log, keeping their entries.
void rebase_warp(Worker* w, size_t k) {
  std::vector<ProfEntry>& buf = w->prof_buf[k];
  size_t cap = buf.size() / 32;
  for (size_t l = 0; l < 32 && 32 * k + l < w->prof_threads.size(); ++l) {
    ProfThread& t = w->prof_threads[32 * k + l];
    size_t used = t.begin ? (size_t)(t.pos - t.begin) / 32 : 0;
    t.begin = cap ? buf.data() + l : nullptr;
    t.pos = t.begin ? t.begin + used * 32 : nullptr;
    t.end = t.begin ? t.begin + cap * 32 : nullptr;
  }
}

void prof_grow(ProfThread* t, uintptr_t addr, unsigned size, int site, int kind) {
  Worker* w = tls_worker;
  if (!w || w->prof_threads.empty() || t < w->prof_threads.data() ||
      t >= w->prof_threads.data() + w->prof_threads.size())
    return;  // the host sink
  size_t k = (size_t)(t - w->prof_threads.data()) / 32;
  std::vector<ProfEntry>& buf = w->prof_buf[k];
  buf.resize(std::max<size_t>(32 * 64, 2 * buf.size()));  // entries keep their places
  rebase_warp(w, k);
  prof_note(t, addr, size, site, kind);
}

void prof_block_start(Worker* w, size_t nthreads) {
  if (!G().prof_on) return;
  size_t nw = (nthreads + 31) / 32;
  if (w->prof_threads.size() < nw * 32) w->prof_threads.resize(nw * 32);
  if (w->prof_buf.size() < nw) w->prof_buf.resize(nw);
  for (ProfThread& t : w->prof_threads) {
    t.begin = t.pos = t.end = nullptr;
    std::fill_n(t.ops, kProfOps, 0ull);
  }
  for (size_t k = 0; k < nw; ++k) rebase_warp(w, k);
  w->prof_l1.assign(kProfL1Sectors, 0ull);  // a block starts with a cold L1
  w->prof_any = true;  // logs are appended inline: flush at every barrier
}

void prof_flush(Worker* w) {
  if (!w->prof_any) return;
  size_t n = std::min(w->nthreads, w->prof_threads.size());
  Spaces sp = spaces_of(w);
  for (size_t base = 0; base < n; base += 32) flush_warp(w, sp, base, std::min<size_t>(32, n - base));
  for (size_t i = 0; i < n; ++i) w->prof_threads[i].pos = w->prof_threads[i].begin;
}

void prof_block_end(Worker* w) {
  if (!G().prof_on) return;
  prof_flush(w);
  size_t n = std::min(w->nthreads, w->prof_threads.size());
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < kProfOps; ++k) w->prof.ops[k] += w->prof_threads[i].ops[k];
  w->prof.barriers += w->epoch;
  w->prof.blocks += 1;
  w->prof_any = false;
}

void prof_launch_start() {
  Global& g = G();
  if (!g.prof_on) return;
  for (Worker* w : g.workers) w->prof = ProfStats();
}

namespace {
void kv(std::string& s, const char* key, unsigned long long v) {
  s += "\"";
  s += key;
  s += "\":";
  s += std::to_string(v);
  s += ",";
}
std::string escaped(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') out += '\\';
    if ((unsigned char)c >= 0x20) out += c;
  }
  return out;
}
}  // namespace

void prof_launch_end(int nworkers) {
  Global& g = G();
  if (!g.prof_on) return;
  ProfStats t;
  size_t static_bytes = 0;
  for (int i = 0; i < nworkers && i < (int)g.workers.size(); ++i) {
    t.add(g.workers[i]->prof);
    static_bytes = std::max(static_bytes, g.workers[i]->static_hw);
  }
  std::string s = "{\"kernel\":\"" + escaped(g.prof_name) + "\",";
  g.prof_name.clear();
  s += "\"grid\":[" + std::to_string(g.grid.x) + "," + std::to_string(g.grid.y) + "," +
       std::to_string(g.grid.z) + "],\"block\":[" + std::to_string(g.block.x) + "," +
       std::to_string(g.block.y) + "," + std::to_string(g.block.z) + "],";
  unsigned long long bt = (unsigned long long)g.block.x * g.block.y * g.block.z;
  unsigned long long nb = (unsigned long long)g.grid.x * g.grid.y * g.grid.z;
  kv(s, "blocks", nb);
  kv(s, "threads", nb * bt);
  kv(s, "warps", nb * ((bt + 31) / 32));
  kv(s, "blocks_run", t.blocks);
  kv(s, "shared_static_bytes", static_bytes);
  kv(s, "shared_dynamic_bytes", g.dyn);
  kv(s, "global_load_requests", t.gld_req);
  kv(s, "global_load_sectors", t.gld_sect);
  kv(s, "global_load_bytes", t.gld_bytes);
  kv(s, "global_load_l1_miss_sectors", t.gld_l1_miss);
  kv(s, "global_store_requests", t.gst_req);
  kv(s, "global_store_sectors", t.gst_sect);
  kv(s, "global_store_bytes", t.gst_bytes);
  kv(s, "shared_load_requests", t.sld_req);
  kv(s, "shared_load_wavefronts", t.sld_wave);
  kv(s, "shared_load_bank_conflicts", t.sld_wave - t.sld_ideal);
  kv(s, "shared_store_requests", t.sst_req);
  kv(s, "shared_store_wavefronts", t.sst_wave);
  kv(s, "shared_store_bank_conflicts", t.sst_wave - t.sst_ideal);
  kv(s, "global_atomic_requests", t.gatom_req);
  kv(s, "global_atomic_lanes", t.gatom_lanes);
  kv(s, "global_atomic_serialized", t.gatom_serial);
  kv(s, "global_atomic_max_contention", t.gatom_worst);
  kv(s, "shared_atomic_requests", t.satom_req);
  kv(s, "shared_atomic_lanes", t.satom_lanes);
  kv(s, "shared_atomic_serialized", t.satom_serial);
  kv(s, "shared_atomic_max_contention", t.satom_worst);
  kv(s, "local_accesses", t.local_acc);
  kv(s, "barriers", t.barriers);
  kv(s, "warp_syncs", t.warp_syncs);
  kv(s, "warp_collectives", t.warp_collectives);
  kv(s, "branch_requests", t.br_req);
  kv(s, "branch_lanes", t.br_lanes);
  kv(s, "divergent_branches", t.br_div);
  static const char* const cls[kProfOpClasses] = {"fp32", "fp64", "fp16", "bf16", "int"};
  static const char* const kinds[kProfOpKinds] = {"add", "mul", "fma", "div", "special", "logic"};
  for (int c = 0; c < kProfOpClasses; ++c)
    for (int k = 0; k < kProfOpKinds; ++k) {
      bool meaningful = c == kOpInt ? k != kOpSpecial : k != kOpLogic;
      if (!meaningful) continue;
      std::string key = std::string("ops_") + cls[c] + "_" + kinds[k];
      kv(s, key.c_str(), t.ops[c * kProfOpKinds + k]);
    }
  s += "\"sites\":[";
  bool first = true;
  for (size_t i = 0; i < t.sites.size(); ++i) {
    const ProfSite& x = t.sites[i];
    if (x.kind < 0) continue;
    if (!first) s += ",";
    first = false;
    s += "{";
    kv(s, "site", i);
    kv(s, "kind", (unsigned long long)x.kind);
    kv(s, "space", (unsigned long long)x.space);
    kv(s, "requests", x.requests);
    kv(s, "lanes", x.lanes);
    kv(s, "bytes", x.bytes);
    kv(s, "units", x.units);
    kv(s, "ideal", x.ideal);
    s += "\"worst\":" + std::to_string(x.worst) + "}";
  }
  s += "]}";
  std::lock_guard<std::mutex> lock(g.mu);
  g.prof_launches.push_back(std::move(s));
}

const char* prof_json() {
  static std::string out;
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  out.clear();
  if (!g.prof_on) return "";
  out = "[";
  for (size_t i = 0; i < g.prof_launches.size(); ++i) {
    if (i) out += ",";
    out += g.prof_launches[i];
  }
  out += "]";
  return out.c_str();
}

}  // namespace sc
