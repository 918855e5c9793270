// lossy_channel.h - frames in flight one way between two DxFP ends in a testbench: loss_pct of
// them lost, as many corrupted (one bit flipped: the receiver's CRC check drops it) and as many
// duplicated; each arrives 1.5 us plus up to jitter_ns later (jitter larger than the time
// between frames reorders them). Seeded: the same seed, the same faults.
#ifndef DXPU_RTL_SIM_TB_LOSSY_CHANNEL_H_
#define DXPU_RTL_SIM_TB_LOSSY_CHANNEL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <vector>

namespace dxpu::rtl {

class LossyChannel {
 public:
  using Bytes = std::vector<uint8_t>;
  static constexpr uint64_t kNoArrival = UINT64_MAX;

  LossyChannel(uint64_t seed, unsigned loss_pct, uint64_t jitter_ns)
      : rng_(seed), loss_pct_(loss_pct), jitter_ns_(jitter_ns) {}

  void Send(std::span<const uint8_t> frame, uint64_t now) {
    ++sent;
    if (cut || Pct() < loss_pct_) {
      ++dropped;
      return;
    }
    Bytes g(frame.begin(), frame.end());
    if (Pct() < loss_pct_ && !g.empty()) {
      ++corrupted;
      g[rng_() % g.size()] ^= static_cast<uint8_t>(1u << (rng_() % 8));
    }
    Put(std::move(g), now);
    if (Pct() < loss_pct_) {
      ++duplicated;
      Put(Bytes(frame.begin(), frame.end()), now);
    }
  }
  // The next frame due at `now`, if any.
  bool Take(uint64_t now, Bytes* f) {
    auto it = q_.begin();
    if (it == q_.end() || it->first > now) return false;
    *f = std::move(it->second);
    q_.erase(it);
    return true;
  }
  uint64_t NextArrival() const { return q_.empty() ? kNoArrival : q_.begin()->first; }
  bool empty() const { return q_.empty(); }

  bool cut = false;  // every frame sent is lost
  uint64_t sent = 0, dropped = 0, corrupted = 0, duplicated = 0;

 private:
  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }
  void Put(Bytes f, uint64_t now) {
    // In order when there is no jitter: after every frame already queued.
    const uint64_t at = now + 1'500 + (jitter_ns_ == 0 ? 0 : rng_() % jitter_ns_);
    q_.emplace(jitter_ns_ == 0 && !q_.empty() ? std::max(at, q_.rbegin()->first) : at,
               std::move(f));
  }

  std::mt19937_64 rng_;
  unsigned loss_pct_;
  uint64_t jitter_ns_;
  std::multimap<uint64_t, Bytes> q_;
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_TB_LOSSY_CHANNEL_H_
