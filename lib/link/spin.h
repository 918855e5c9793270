// spin.h - what a busy-polling thread does between two looks at what it waits for: a pause
// instruction and, every so often, sched_yield, so that on a machine with more runnable threads
// than cores the thread it waits for gets to run (with a core to spare the yield returns at
// once).
#ifndef DXPU_LIB_LINK_SPIN_H_
#define DXPU_LIB_LINK_SPIN_H_

#include <sched.h>

#include <cstdint>

namespace dxpu::link {

class Spinner {
 public:
  void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if (++spins_ % kSpinsPerYield == 0) sched_yield();
  }

 private:
  static constexpr uint32_t kSpinsPerYield = 32;
  uint32_t spins_ = 0;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_SPIN_H_
