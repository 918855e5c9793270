// stats.h - where a runtime's host threads spent their time: per kind of call, how many, the
// host time (the port's clock, Port::Now) from entry to return, summed over threads, and
// bytes where bytes move. Stats is a snapshot; StatsRecorder keeps the counts (lock-free).
#ifndef DXPU_LIB_DXGPU_STATS_H_
#define DXPU_LIB_DXGPU_STATS_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace dxpu::dxgpu {

struct OpStats {
  uint64_t calls = 0;
  uint64_t ns = 0;     // host time inside these calls, all threads summed
  uint64_t bytes = 0;  // copies only

  bool operator==(const OpStats&) const = default;
};

struct Stats {
  OpStats launch;  // kernel launches and event records (enqueueing, incl. waits for a ring slot)
  OpStats copy_async;         // MemcpyAsync calls (enqueueing), their bytes
  OpStats sync;               // SynchronizeStream/Event/Device: blocking waits
  OpStats h2d;                // MemcpyHtoD (synchronous: the whole copy), bytes
  OpStats d2h;                // MemcpyDtoH
  OpStats d2d;                // MemcpyDtoD
  uint64_t submissions = 0;   // pushbuffers submitted to devices
  uint64_t staged_bytes = 0;  // bytes of pageable host memory staged through pinned buffers
  uint64_t elapsed_ns = 0;    // port time since the runtime opened or the last Reset

  bool operator==(const Stats&) const = default;
};

// "launch 12 calls 0.110 ms | sync 3 calls 4.2 ms | h2d 2 calls 1.5 ms 4194304 B | ..."
std::string FormatStats(const Stats& stats);

class StatsRecorder {
 public:
  enum class Kind : uint8_t { kLaunch, kCopyAsync, kSync, kH2D, kD2H, kD2D, kCount };

  void Add(Kind kind, uint64_t ns, uint64_t bytes = 0);
  void AddSubmission() { submissions_.fetch_add(1, std::memory_order_relaxed); }
  void AddStaged(uint64_t bytes) { staged_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  Stats Snapshot(uint64_t now) const;
  void Reset(uint64_t now);

 private:
  struct Counters {
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> ns{0};
    std::atomic<uint64_t> bytes{0};
  };
  Counters counters_[static_cast<size_t>(Kind::kCount)];
  std::atomic<uint64_t> submissions_{0};
  std::atomic<uint64_t> staged_bytes_{0};
  std::atomic<uint64_t> since_{0};
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_STATS_H_
