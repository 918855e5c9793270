// raw_link_load.cc - the raw-link baseline: bursts of full datagrams, no protocol.
#include "fabric/raw_link_load.h"

#include <poll.h>

#include <algorithm>
#include <utility>

#include "core/tlp_codec.h"
#include "dxpu/dxfp.h"

namespace dxpu::fabric {

RawFramePlan PlanRawFrames(size_t max_frame, size_t tlp_payload_bytes) {
  RawFramePlan plan;
  plan.tlp_payload_bytes = tlp_payload_bytes;
  const size_t overhead = DXFP_HDR_SIZE + DXFP_CRC_SIZE;
  // A TLP record: record header, 4DW TLP header, payload padded to a DW.
  const size_t record = DXFP_REC_HDR_SIZE + DXPU_TLP_HDR4_SIZE + (tlp_payload_bytes + 3) / 4 * 4;
  if (max_frame < overhead + record) return plan;
  plan.tlps_per_frame = (max_frame - overhead) / record;
  plan.frame_bytes = overhead + plan.tlps_per_frame * record;
  return plan;
}

RawLinkLoad::RawLinkLoad(link::Link& tx, link::LinkAddress to, link::Link& rx,
                         const RawFramePlan& plan)
    : tx_(tx),
      to_(std::move(to)),
      rx_(rx),
      plan_(plan),
      frame_(plan.frame_bytes),
      rx_buf_(std::max(rx.max_frame(), plan.frame_bytes)) {
  for (size_t i = 0; i < frame_.size(); ++i) frame_[i] = static_cast<uint8_t>(i * 131 + 7);
}

void RawLinkLoad::ReceiveAvailable(RawLinkLoadResult* total) {
  while (true) {
    const link::LinkResult r = rx_.Receive(rx_buf_, nullptr);
    if (r.would_block) return;
    if (r.error) {
      if (!total->error) total->error = r.error;
      return;
    }
    ++total->frames;
    total->bytes += r.size;
    total->payload_bytes += plan_.payload_bytes_per_frame();
  }
}

void RawLinkLoad::Burst(size_t frames, RawLinkLoadResult* total) {
  for (size_t i = 0; i < frames; ++i) {
    ++total->sent;
    const std::error_code ec = tx_.Send(to_, frame_);
    if (!ec) continue;
    // No room: the frame is lost (counted by Finish); let the receiver catch up.
    if (ec == std::errc::no_buffer_space || ec == std::errc::operation_would_block) break;
    if (!total->error) total->error = ec;
    return;
  }
  ReceiveAvailable(total);
}

void RawLinkLoad::Finish(std::chrono::milliseconds wait, RawLinkLoadResult* total) {
  ReceiveAvailable(total);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (total->frames < total->sent && !total->error) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{rx_.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ReceiveAvailable(total);
  }
  total->lost = total->sent > total->frames ? total->sent - total->frames : 0;
}

RawLinkLoadResult RunRawLinkLoad(link::Link& tx, const link::LinkAddress& to, link::Link& rx,
                                 const RawLinkLoadOptions& options) {
  RawLinkLoadResult total;
  const RawFramePlan plan =
      PlanRawFrames(std::min(tx.max_frame(), rx.max_frame()), options.tlp_payload_bytes);
  if (plan.tlps_per_frame == 0 || options.burst_frames == 0) {
    total.error = std::make_error_code(std::errc::invalid_argument);
    return total;
  }
  RawLinkLoad load(tx, to, rx, plan);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  while (!total.error) {
    size_t burst = options.burst_frames;
    if (options.max_frames != 0) {
      if (total.sent >= options.max_frames) break;
      burst = static_cast<size_t>(std::min<uint64_t>(burst, options.max_frames - total.sent));
    } else if (Clock::now() - start >= options.duration) {
      break;
    }
    load.Burst(burst, &total);
  }
  // The clock stops with the last burst: stragglers still count, the wait for them does not.
  total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  load.Finish(std::chrono::milliseconds(20), &total);
  return total;
}

}  // namespace dxpu::fabric
