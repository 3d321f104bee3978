// The Python module of a CPU-built load_inline extension (included after the user's text; the
// build generates PYBIND11_MODULE from `functions` as torch's load_inline does, with every
// function wrapped by sc_kb::guard).
//
// The emulator records a race, an out-of-bounds access, a timeout or an unsupported construct
// as the status of the run; on a GPU such a kernel would return wrong data or fail later, so
// the wrapper turns a non-ok status after (or during) a call into a Python exception,
// `<module>.EmulatorFault` (a RuntimeError), whose message is "<status>: <detail>".
// `<module>._sc_status()` gives (status, detail, launches) of the last call;
// `<module>._sc_inject(on)` makes every call fail at entry (the fault-injection call);
// `<module>._sc_configure(workers, schedule, seed, timeout_s, strict_pointers)` sets the fiber
// schedule for later calls: 0 forward, 1 reverse, 2 random, -1 (the default) one after another
// per call.
#pragma once
#include <torch/extension.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

extern "C" {
void sc_kb_configure(int workers, int schedule, unsigned long long seed, double timeout_s,
                     int strict_pointers);
void sc_kb_begin(void);
int sc_kb_status(void);
const char* sc_detail(void);
long sc_launch_count(void);
void sc_kb_inject(int on);
int sc_kb_injecting(void);
}

namespace sc_kb {

struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline const char* status_name(int s) {
  switch (s) {
    case 0: return "ok";
    case 1: return "deadlock";
    case 2: return "crash";
    case 3: return "timeout";
    case 4: return "unsupported";
    case 5: return "race";
    default: return "crash";
  }
}

inline void check() {
  int s = sc_kb_status();
  if (s != 0) throw Fault(std::string(status_name(s)) + ": " + sc_detail());
}

template <class L, class R, class... A>
auto guard_impl(L fn, R (L::*)(A...) const) {
  return [fn = std::move(fn)](A... args) -> R {
    // The fault-injection call: fail as torch reports a failed kernel, a plain RuntimeError
    // with CUDA's words, so a candidate cannot tell the injected failure from a real one.
    if (sc_kb_injecting())
      throw std::runtime_error(
          "CUDA error: unspecified launch failure\nCUDA kernel errors might be asynchronously "
          "reported at some other API call, so the stacktrace below might be incorrect.");
    sc_kb_begin();
    try {
      if constexpr (std::is_void_v<R>) {
        fn(std::forward<A>(args)...);
        check();
      } else {
        R result = fn(std::forward<A>(args)...);
        check();
        return result;
      }
    } catch (const Fault&) {
      throw;
    } catch (...) {
      check();  // the emulator's verdict explains the failure better than the host code's error
      throw;
    }
  };
}

//: Wraps a callable with one call operator (torch::wrap_pybind_function's result).
template <class L>
auto guard(L fn) {
  return guard_impl(std::move(fn), &L::operator());
}

inline void define_controls(pybind11::module_& m) {
  pybind11::register_local_exception<Fault>(m, "EmulatorFault", PyExc_RuntimeError);
  m.def("_sc_configure", &sc_kb_configure, pybind11::arg("workers") = 0,
        pybind11::arg("schedule") = -1, pybind11::arg("seed") = 1,
        pybind11::arg("timeout_s") = 60.0, pybind11::arg("strict_pointers") = 1,
        "Emulator settings for later calls (schedule: 0 forward, 1 reverse, 2 random, -1 rotate "
        "per call).");
  m.def("_sc_status", [] {
    int s = sc_kb_status();
    return std::make_tuple(std::string(status_name(s)), std::string(sc_detail()),
                           sc_launch_count());
  }, "(status, detail, launches) of the last call.");
  m.def("_sc_inject", &sc_kb_inject, pybind11::arg("on"),
        "While on, every extension call fails at entry (the fault-injection call).");
}

}  // namespace sc_kb
