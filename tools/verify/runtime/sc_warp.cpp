// Warp collectives of the CUDA emulator runtime: __shfl*_sync, __ballot_sync, votes,
// __match_*_sync, __syncwarp and __activemask as rendezvous over 32-lane warps with CUDA's mask
// rules (docs/EMULATOR.md). A lane that arrives first parks its fiber; the last lane of the mask
// completes the group and makes every member runnable again. Fibers and scheduling: sc_emu.cpp.
#include "sc_internal.hpp"

#include <string>

namespace sc {

const char* op_name(int kind) {
  static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync",
                                "__syncwarp", "__match_any_sync", "__match_all_sync", "__activemask"};
  return kind >= 0 && kind < 11 ? names[kind] : "warp collective";
}

std::string hex(unsigned v) {
  char b[16];
  snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

void complete_group(Worker* w, Warp& wp, WarpGroup& g, unsigned warp_index) {
  unsigned need = g.need;
  ++wp.epoch;
  ++(g.kind == kSyncWarp ? w->prof.warp_syncs : w->prof.warp_collectives);  // profile counters
  unsigned long long res[32];
  if (g.kind <= kShflXor) {
    unsigned c = ((32u - (unsigned)g.width) << 8) | (g.kind == kShflUp ? 0u : 0x1fu);
    unsigned segmask = (c >> 8) & 0x1fu, cval = c & 0x1fu;
    for (int l = 0; l < 32; ++l) {
      if (!((need >> l) & 1u)) continue;
      int b = g.args[l] & 0x1f;
      int max_lane = (int)((l & segmask) | (cval & ~segmask));
      int min_lane = (int)(l & segmask);
      int j = l;
      bool ok = true;
      switch (g.kind) {
        case kShflIdx: j = min_lane | (b & ~(int)segmask); ok = j <= max_lane; break;
        case kShflUp: j = l - b; ok = j >= max_lane; break;
        case kShflDown: j = l + b; ok = j <= max_lane; break;
        default: j = l ^ b; ok = j <= max_lane; break;
      }
      if (!ok || j < 0 || j > 31) j = l;
      // Reading a lane outside the mask (or past a partial warp) is undefined on a GPU:
      // hand back a poison pattern (NaN / -1) so a kernel that uses it cannot pass.
      res[l] = ((need >> j) & 1u) ? g.vals[j] : ~0ull;
    }
  } else {
    unsigned bits = 0;
    for (int l = 0; l < 32; ++l)
      if (((need >> l) & 1u) && g.vals[l]) bits |= 1u << l;
    for (int l = 0; l < 32; ++l) {
      if (!((need >> l) & 1u)) continue;
      switch (g.kind) {
        case kBallot: res[l] = bits; break;
        case kAny: res[l] = bits != 0; break;
        case kAll: res[l] = bits == need; break;
        case kSyncWarp: res[l] = 0; break;
        case kMatchAny: {
          unsigned m = 0;
          for (int k = 0; k < 32; ++k)
            if (((need >> k) & 1u) && g.vals[k] == g.vals[l]) m |= 1u << k;
          res[l] = m;
          break;
        }
        default: {  // match_all
          bool same = true;
          for (int k = 0; k < 32; ++k)
            if (((need >> k) & 1u) && g.vals[k] != g.vals[l]) same = false;
          res[l] = same ? need : 0;
        }
      }
    }
  }
  for (int l = 0; l < 32; ++l) {
    if (!((need >> l) & 1u)) continue;
    Fiber& f = w->fibers[warp_index * 32 + l];
    f.result = res[l];
    f.state = kRunnable;
  }
  g.active = false;
  wp.active &= ~(1u << (unsigned)(&g - wp.groups));
  wp.pending &= ~need;
}

// A lane exited: a collective that still waits for it can never complete (a deadlock).
void warp_lane_exited(Fiber* f) {
  Worker* w = worker_of(f);
  unsigned lane = f->linear & 31u;
  Warp& wp = w->warps[f->linear >> 5];
  wp.exited |= 1u << lane;
  if ((wp.pending >> lane) & 1u) for (unsigned m = wp.active; m; m &= m - 1) {
    WarpGroup& g = wp.groups[__builtin_ctz(m)];
    if (((g.need >> lane) & 1u) && !((g.arrived >> lane) & 1u)) {
      fail_in_fiber(f, kDeadlock,
                    std::string(op_name(g.kind)) + " at line " + std::to_string(g.line) + " with mask " +
                        hex(g.mask) + " waits for lane " + std::to_string(lane) + " of warp " +
                        std::to_string(f->linear >> 5) + " in block " + fmt3(w->bid) +
                        ", which exited without joining it");
    }
  }
}

// End of a pass: complete every __activemask() whose warp has no runnable lane left.
bool settle_activemasks(Worker* w) {
  bool any = false;
  for (size_t wi = 0; wi < w->warps.size(); ++wi) {
    Warp& wp = w->warps[wi];
    for (unsigned m = wp.active; m; m &= m - 1) {
      unsigned slot = __builtin_ctz(m);
      WarpGroup& g = wp.groups[slot];
      if (g.kind != kActiveMask) continue;
      bool runnable = false;
      for (unsigned l = 0; l < 32 && !runnable; ++l)
        if (((wp.exist >> l) & 1u) && w->fibers[wi * 32 + l].state == kRunnable) runnable = true;
      if (runnable) continue;
      for (unsigned l = 0; l < 32; ++l) {
        if (!((g.arrived >> l) & 1u)) continue;
        Fiber& f = w->fibers[wi * 32 + l];
        f.result = g.arrived;
        f.state = kRunnable;
        --w->pending_active;
      }
      g.active = false;
      wp.active &= ~(1u << slot);
      any = true;
    }
  }
  return any;
}

unsigned long long warp_op(int kind, unsigned mask, unsigned long long value, int arg, int width, int line) {
  Fiber* f = cur();
  Worker* w = worker_of(f);
  if (w->serial) serial_violation(f, op_name(kind));
  unsigned lane = f->linear & 31u, wi = f->linear >> 5;
  Warp& wp = w->warps[wi];
  if (!((mask >> lane) & 1u)) {
    fail_in_fiber(f, kCrash, std::string(op_name(kind)) + " at line " + std::to_string(line) + " in " + where(f) +
                                 ": the calling lane " + std::to_string(lane) + " is not in its mask " + hex(mask));
  }
  if (width < 1 || width > 32 || (width & (width - 1))) {
    fail_in_fiber(f, kCrash, std::string(op_name(kind)) + " at line " + std::to_string(line) +
                                 ": width " + std::to_string(width) + " is not a power of two <= 32");
  }
  unsigned need = mask & wp.exist;
  if (need & wp.exited) {
    fail_in_fiber(f, kDeadlock, std::string(op_name(kind)) + " at line " + std::to_string(line) + " in " + where(f) +
                                    ": mask " + hex(mask) + " names exited lanes " + hex(need & wp.exited));
  }
  WarpGroup* grp = nullptr;
  for (unsigned m = wp.active; m; m &= m - 1) {
    WarpGroup& g = wp.groups[__builtin_ctz(m)];
    if ((g.need >> lane) & 1u) {
      if (g.mask != mask)
        fail_in_fiber(f, kCrash, std::string(op_name(kind)) + " at line " + std::to_string(line) + " in " +
                                     where(f) + ": mask " + hex(mask) + " differs from mask " + hex(g.mask) +
                                     " of lanes already waiting (line " + std::to_string(g.line) + ")");
      grp = &g;
      break;
    }
    if (g.need & need)
      fail_in_fiber(f, kCrash, std::string(op_name(kind)) + " at line " + std::to_string(line) + " in " +
                                   where(f) + ": mask " + hex(mask) + " overlaps mask " + hex(g.mask) +
                                   " of a pending collective (line " + std::to_string(g.line) + ")");
  }
  if (!grp) {
    unsigned slot = __builtin_ctz(~wp.active);  // at most 32 disjoint groups: always one free
    grp = &wp.groups[slot];
    wp.active |= 1u << slot;
    grp->active = true;
    wp.pending |= need;
    grp->kind = kind;
    grp->mask = mask;
    grp->need = need;
    grp->arrived = 0;
    grp->width = width;
    grp->line = line;
  } else if (grp->kind != kind || grp->width != width) {
    fail_in_fiber(f, kCrash, std::string(op_name(kind)) + " at line " + std::to_string(line) + " in " + where(f) +
                                 " meets " + op_name(grp->kind) + " at line " + std::to_string(grp->line) +
                                 " of other lanes in mask " + hex(mask));
  }
  grp->vals[lane] = value;
  grp->args[lane] = arg;
  grp->arrived |= 1u << lane;
  if (grp->arrived == grp->need) {
    complete_group(w, wp, *grp, wi);
  } else {
    f->state = kAtWarp;
    f->wait_line = line;
    f->wait_what = op_name(kind);
    switch_out(f);
  }
  return f->result;
}

// __activemask(): the lanes of the warp that reach this call together. A lane waits here
// until no lane of its warp can run any more in the current pass (the others have exited or
// wait elsewhere); the mask is then the set of lanes waiting here, as on a GPU where lanes that
// took another branch are inactive.
unsigned activemask() {
  Fiber* f = cur();
  Worker* w = worker_of(f);
  unsigned lane = f->linear & 31u;
  Warp& wp = w->warps[f->linear >> 5];
  if (w->serial) return wp.exist & ~wp.exited;
  WarpGroup* grp = nullptr;
  for (unsigned m = wp.active; m; m &= m - 1) {
    WarpGroup& g = wp.groups[__builtin_ctz(m)];
    if (g.kind == kActiveMask) { grp = &g; break; }
  }
  if (!grp) {
    unsigned slot = __builtin_ctz(~wp.active);
    grp = &wp.groups[slot];
    wp.active |= 1u << slot;
    grp->active = true;
    grp->kind = kActiveMask;
    grp->mask = grp->need = grp->arrived = 0;  // names no lane: exits and other masks ignore it
    grp->width = 32;
    grp->line = 0;
  }
  grp->arrived |= 1u << lane;
  ++w->pending_active;
  f->state = kAtWarp;
  f->wait_line = 0;
  f->wait_what = "__activemask";
  switch_out(f);
  return (unsigned)f->result;
}

}  // namespace sc
