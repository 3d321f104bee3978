// Hand-written fiber context switch for x86-64 (SysV) and aarch64 (AAPCS64).
//
// sc_switch_ctx(save, to) pushes the callee-saved registers on the current stack, stores the stack pointer in *save, loads `to` and pops the target's state.
// A fresh fiber's stack is prepared by sc_prepare_stack so that the first switch "returns"
// into sc_fiber_trampoline, which calls sc_fiber_entry (never returns). ucontext would also
// save the signal mask with a syscall per switch, which is what makes it ~10x slower. The FP
// control words (MXCSR / FPCR) are not switched: kernels never change rounding modes, and
// loading them costs more than the rest of the switch.
#pragma once
#include <stdint.h>
#include <string.h>

extern "C" {
void sc_switch_ctx(void** save_sp, void* to_sp);
void sc_fiber_trampoline(void);
}

#if defined(__x86_64__)
__asm__(R"(
  .text
  .p2align 4
  .globl sc_switch_ctx
  .hidden sc_switch_ctx
  .type sc_switch_ctx,@function
sc_switch_ctx:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size sc_switch_ctx, .-sc_switch_ctx

  .p2align 4
  .globl sc_fiber_trampoline
  .hidden sc_fiber_trampoline
  .type sc_fiber_trampoline,@function
sc_fiber_trampoline:
  call sc_fiber_entry
  ud2
  .size sc_fiber_trampoline, .-sc_fiber_trampoline
)");

// top: 16-byte aligned address below which the fiber's frames go.
static inline void* sc_prepare_stack(char* top) {
  // 6 callee-saved registers (zero), then the `ret` target; after `ret` the stack pointer
  // is 16-byte aligned, as at a call site, so the trampoline's `call` sets up a normal frame.
  uint64_t* sp = reinterpret_cast<uint64_t*>(top - 56);
  memset(sp, 0, 48);
  sp[6] = reinterpret_cast<uint64_t>(&sc_fiber_trampoline);
  return sp;
}

#elif defined(__aarch64__)
__asm__(R"(
  .text
  .p2align 4
  .globl sc_switch_ctx
  .hidden sc_switch_ctx
  .type sc_switch_ctx,%function
sc_switch_ctx:
  sub sp, sp, #160
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x9, sp
  str x9, [x0]
  mov sp, x1
  ldp d14, d15, [sp, #144]
  ldp d12, d13, [sp, #128]
  ldp d10, d11, [sp, #112]
  ldp d8, d9, [sp, #96]
  ldp x29, x30, [sp, #80]
  ldp x27, x28, [sp, #64]
  ldp x25, x26, [sp, #48]
  ldp x23, x24, [sp, #32]
  ldp x21, x22, [sp, #16]
  ldp x19, x20, [sp, #0]
  add sp, sp, #160
  ret
  .size sc_switch_ctx, .-sc_switch_ctx

  .p2align 4
  .globl sc_fiber_trampoline
  .hidden sc_fiber_trampoline
  .type sc_fiber_trampoline,%function
sc_fiber_trampoline:
  bl sc_fiber_entry
  brk #0
  .size sc_fiber_trampoline, .-sc_fiber_trampoline
)");

static inline void* sc_prepare_stack(char* top) {
  uint64_t* sp = reinterpret_cast<uint64_t*>(top - 160);
  memset(sp, 0, 160);
  sp[11] = reinterpret_cast<uint64_t>(&sc_fiber_trampoline);  // x30, the `ret` target
  return sp;
}
#else
#error "sc_emu: no context switch for this architecture (x86-64 and aarch64 only)"
#endif
