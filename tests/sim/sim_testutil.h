// sim_testutil.h - helpers for the simulator tests: numbered frames and a receiver that
// records what arrived, when, and where.
#ifndef DXPU_TESTS_SIM_SIM_TESTUTIL_H_
#define DXPU_TESTS_SIM_SIM_TESTUTIL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "sim/clock.h"
#include "sim/network.h"

namespace dxpu::sim {

// Port numbers the tests attach their receivers at.
inline constexpr PortId kA = 1;
inline constexpr PortId kB = 2;
inline constexpr PortId kC = 3;

// One delivery as a receiver saw it.
struct Arrival {
  Nanos time = 0;
  PortId port = 0;
  std::vector<uint8_t> bytes;

  bool operator==(const Arrival&) const = default;
};

// A frame of `size` bytes (at least 4) starting with the big-endian number n; the rest is
// a fixed pattern.
inline std::vector<uint8_t> NumberedFrame(uint32_t n, size_t size = 64) {
  std::vector<uint8_t> f(size < 4 ? 4 : size);
  for (size_t i = 4; i < f.size(); ++i) f[i] = static_cast<uint8_t>(i * 7);
  f[0] = static_cast<uint8_t>(n >> 24);
  f[1] = static_cast<uint8_t>(n >> 16);
  f[2] = static_cast<uint8_t>(n >> 8);
  f[3] = static_cast<uint8_t>(n);
  return f;
}

inline uint32_t FrameNumber(std::span<const uint8_t> f) {
  return (uint32_t{f[0]} << 24) | (uint32_t{f[1]} << 16) | (uint32_t{f[2]} << 8) | f[3];
}

// Attaches to ports and appends every delivery to `arrivals`.
class Recorder {
 public:
  Recorder(Network& net, std::initializer_list<PortId> ports) {
    for (const PortId p : ports) {
      net.Attach(p, [this, &net, p](std::span<const uint8_t> f) {
        arrivals.push_back({net.scheduler().Now(), p, {f.begin(), f.end()}});
      });
    }
  }

  std::vector<uint32_t> Numbers() const {
    std::vector<uint32_t> v;
    for (const Arrival& a : arrivals) v.push_back(FrameNumber(a.bytes));
    return v;
  }

  std::vector<Arrival> arrivals;
};

}  // namespace dxpu::sim

#endif  // DXPU_TESTS_SIM_SIM_TESTUTIL_H_
