// raw_link_load.h - the raw-link baseline: full datagrams sent from one link and received
// at another in the same thread, a burst and then a drain, with no protocol at all. DxFP
// session goodput is compared with it (bench/link_bench.cc, `dxpu bench fabric`).
#ifndef DXPU_LIB_FABRIC_RAW_LINK_LOAD_H_
#define DXPU_LIB_FABRIC_RAW_LINK_LOAD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <vector>

#include "link/link.h"
#include "link/link_address.h"

namespace dxpu::fabric {

// The DATA frame DxFP would send for a stream of memory writes of tlp_payload_bytes each
// (4DW header, no digest), as many TLP records as fit in max_frame. The raw load sends
// datagrams of exactly frame_bytes, so that it moves the bytes a session would.
struct RawFramePlan {
  size_t tlp_payload_bytes = 0;
  size_t tlps_per_frame = 0;  // 0: not even one TLP fits
  size_t frame_bytes = 0;

  uint64_t payload_bytes_per_frame() const {
    return static_cast<uint64_t>(tlps_per_frame) * tlp_payload_bytes;
  }
};

RawFramePlan PlanRawFrames(size_t max_frame, size_t tlp_payload_bytes);

// Totals of a raw load. Rates are per second of `seconds`.
struct RawLinkLoadResult {
  uint64_t frames = 0;         // frames received
  uint64_t bytes = 0;          // frame bytes received
  uint64_t payload_bytes = 0;  // TLP payload bytes those frames stand for
  uint64_t sent = 0;           // frames offered to the sending link
  uint64_t lost = 0;           // offered and not received (refused for room, or dropped)
  double seconds = 0;
  std::error_code error;  // the first hard error; the load stopped there

  double frames_per_second() const {
    return seconds > 0 ? static_cast<double>(frames) / seconds : 0;
  }
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
  double payload_bytes_per_second() const {
    return seconds > 0 ? static_cast<double>(payload_bytes) / seconds : 0;
  }
};

// One raw load between two links (tx sends to `to`, which rx receives). Burst() adds to a
// running total; the caller times it (a benchmark loop, or RunRawLinkLoad).
class RawLinkLoad {
 public:
  // plan.frame_bytes must not exceed either link's max_frame().
  RawLinkLoad(link::Link& tx, link::LinkAddress to, link::Link& rx, const RawFramePlan& plan);

  // Sends up to `frames` frames (fewer if the link has no room), then receives until rx
  // would block. Frames that arrive late are counted by a later burst or by Finish().
  void Burst(size_t frames, RawLinkLoadResult* total);

  // Receives stragglers for up to `wait`, then sets total->lost.
  void Finish(std::chrono::milliseconds wait, RawLinkLoadResult* total);

 private:
  void ReceiveAvailable(RawLinkLoadResult* total);

  link::Link& tx_;
  link::LinkAddress to_;
  link::Link& rx_;
  RawFramePlan plan_;
  std::vector<uint8_t> frame_;
  std::vector<uint8_t> rx_buf_;
};

struct RawLinkLoadOptions {
  size_t tlp_payload_bytes = 256;
  size_t burst_frames = 16;
  std::chrono::nanoseconds duration = std::chrono::seconds(1);  // run at least this long...
  uint64_t max_frames = 0;  // ...or until this many frames were sent (0: no limit)
};

// Bursts for options.duration (or max_frames), then Finish(): the whole measurement.
RawLinkLoadResult RunRawLinkLoad(link::Link& tx, const link::LinkAddress& to, link::Link& rx,
                                 const RawLinkLoadOptions& options);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_RAW_LINK_LOAD_H_
