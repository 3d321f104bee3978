// Profile counters of the CUDA emulator (docs/EMULATOR.md, "Profiles"): what Nsight Compute
// would count for a launch, from the emulated threads' own accesses.
//
// The profile build of a program (rewriter profile variant) calls prof_note for every global /
// shared access, atomic and branch condition in device code. Each thread appends to its own log
// (no locks: a block's fibers run on one worker). Fibers do not run in lock step, so a warp-level
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

int space_of(Worker* w, uintptr_t a) {
  uintptr_t sm = reinterpret_cast<uintptr_t>(w->smem);
  if (a >= sm && a < sm + w->arena_store.size()) return kShared;
  uintptr_t st = reinterpret_cast<uintptr_t>(w->stacks);
  if (a >= st && a < st + w->stack_cap * kStackSize) return kLocal;
  return kGlobal;
}

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
unsigned long long sectors(const std::vector<Lane>& lanes) {
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

// Most distinct words one bank must deliver, for the words w[0..m) of one phase.
unsigned long long bank_ways(unsigned long long* w, size_t m) {
  unsigned long long first[32];
  bool seen[32] = {};
  bool conflict = false;
  for (size_t i = 0; i < m && !conflict; ++i) {
    unsigned b = (unsigned)(w[i] & 31);
    if (!seen[b]) { seen[b] = true; first[b] = w[i]; }
    else if (first[b] != w[i]) conflict = true;
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
void wavefronts(const std::vector<Lane>& lanes, unsigned long long& wave, unsigned long long& ideal) {
  unsigned size = std::max<unsigned>(4, lanes.empty() ? 4 : lanes[0].e->size);
  unsigned per_phase = std::max<unsigned>(1, 128 / std::min<unsigned>(size, 128));
  unsigned phases = (32 + per_phase - 1) / per_phase;
  static thread_local std::vector<unsigned long long> words;  // reused: no allocation per request
  for (unsigned phase = 0; phase < phases; ++phase) {
    words.clear();
    for (const Lane& l : lanes) {
      if (l.lane / per_phase != phase) continue;
      uintptr_t a = l.e->addr, n = l.e->size ? l.e->size : 1;
      for (uintptr_t x = a >> 2; x <= (a + n - 1) >> 2; ++x) words.push_back(x);
    }
    if (words.empty()) continue;
    wave += bank_ways(words.data(), words.size());
    ideal += 1;
  }
}

// Most lanes of one request on one address.
unsigned long long contention(const std::vector<Lane>& lanes) {
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
void account(Worker* w, int site, int kind, int space, const std::vector<Lane>& lanes) {
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
    if (load) { st.gld_req += 1; st.gld_sect += sec; st.gld_bytes += bytes; }
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

// Splits one request by memory space (a generic pointer may mix them) and accounts each part.
void request(Worker* w, int site, int kind, std::vector<Lane>& lanes) {
  if (lanes.empty()) return;
  if (kind == kProfBranch) { account(w, site, kind, 0, lanes); return; }
  int first = space_of(w, lanes[0].e->addr);
  bool mixed = false;
  for (const Lane& l : lanes) mixed = mixed || space_of(w, l.e->addr) != first;
  if (!mixed) { account(w, site, kind, first, lanes); return; }
  static thread_local std::vector<Lane> part;
  for (int space : {kGlobal, kShared, kLocal}) {
    part.clear();
    for (const Lane& l : lanes) if (space_of(w, l.e->addr) == space) part.push_back(l);
    if (!part.empty()) account(w, site, kind, space, part);
  }
}

// One warp's logs: when every lane that logged anything logged the same sites in the same order
// (no divergence inside), the i-th entries form a request; else group by (site, k-th execution).
void flush_warp(Worker* w, size_t base, size_t n) {
  auto& logs = w->prof_log;
  size_t r = 0;
  while (r < n && logs[base + r].empty()) ++r;
  if (r == n) return;
  const auto& ref = logs[base + r];
  size_t len = ref.size();
  bool same = true;
  for (size_t l = r + 1; l < n && same; ++l) {
    const auto& lg = logs[base + l];
    if (lg.empty()) continue;
    if (lg.size() != len) { same = false; break; }
    for (size_t i = 0; i < len; ++i)
      if (lg[i].site != ref[i].site || lg[i].kind != ref[i].kind) { same = false; break; }
  }
  static thread_local std::vector<Lane> lanes;
  if (same) {
    for (size_t i = 0; i < len; ++i) {
      lanes.clear();
      int site = 0, kind = 0;
      for (size_t l = 0; l < n; ++l) {
        auto& lg = logs[base + l];
        if (lg.empty()) continue;
        lanes.push_back({(unsigned)l, &lg[i]});
        site = lg[i].site;
        kind = lg[i].kind;
      }
      request(w, site, kind, lanes);
    }
  } else {
    std::unordered_map<unsigned long long, std::vector<Lane>> groups;
    std::unordered_map<int, unsigned> count;
    for (size_t l = 0; l < n; ++l) {
      count.clear();
      for (const ProfEntry& e : logs[base + l]) {
        unsigned k = count[e.site]++;
        groups[((unsigned long long)(unsigned)e.site << 32) | k].push_back({(unsigned)l, &e});
      }
    }
    for (auto& kv : groups) request(w, kv.second[0].e->site, kv.second[0].e->kind, kv.second);
  }
  for (size_t l = 0; l < n; ++l) logs[base + l].clear();
}

}  // namespace

void ProfStats::add(const ProfStats& o) {
#define SC_PROF_ADD(n) n += o.n;
  SC_PROF_SUMS(SC_PROF_ADD)
#undef SC_PROF_ADD
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

void prof_note(const volatile void* p, unsigned size, int site, int kind) {
  Worker* w = tls_worker;
  if (!w || !w->in_fiber) return;  // host code (a __host__ __device__ function on the host)
  Fiber* f = cur();
  if (f->linear >= w->prof_log.size()) return;
  w->prof_log[f->linear].push_back(
      ProfEntry{reinterpret_cast<uintptr_t>(p), site, (unsigned short)std::min(size, 65535u),
                (unsigned char)kind});
  w->prof_any = true;
}

void prof_block_start(Worker* w, size_t nthreads) {
  if (!G().prof_on) return;
  if (w->prof_log.size() < nthreads) w->prof_log.resize(nthreads);
  for (auto& lg : w->prof_log) lg.clear();
  w->prof_any = false;
}

void prof_flush(Worker* w) {
  if (!w->prof_any) return;
  size_t n = std::min(w->nthreads, w->prof_log.size());
  for (size_t base = 0; base < n; base += 32) flush_warp(w, base, std::min<size_t>(32, n - base));
  w->prof_any = false;
}

void prof_block_end(Worker* w) {
  if (!G().prof_on) return;
  prof_flush(w);
  w->prof.barriers += w->epoch;
  w->prof.blocks += 1;
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
