// link_host.cc - a TestHost over a real link (link_host.h).
#include "link_host.h"

#include <poll.h>

#include <chrono>
#include <span>
#include <utility>
#include <vector>

#include "dxpu/tlp.h"
#include "fabric/link_driver.h"

namespace dxpu::test {

const dxfp_session_config& SlackSession() {
  static const dxfp_session_config c = [] {
    dxfp_session_config d;
    dxfp_session_config_defaults(&d);
    d.link_down_ns = 2'000'000'000;
    return d;
  }();
  return c;
}

LinkHost::LinkHost(uint64_t node, std::unique_ptr<link::Link> l, link::LinkAddress bridge,
                   uint32_t session_id)
    : host_(node, session_id, &SlackSession()), bridge_(std::move(bridge)), link_(std::move(l)) {}

std::optional<uint32_t> LinkHost::ConnectAndReadIds(uint16_t bdf, int timeout_ms) {
  host_.Connect(fabric::MonotonicNanos());
  if (!RunUntil([&] { return host_.established(); }, timeout_ms)) return std::nullopt;
  return ReadIds(bdf, timeout_ms);
}

std::optional<uint32_t> LinkHost::ReadIds(uint16_t bdf, int timeout_ms) {
  const auto id = host_.CfgRead(bdf, 0x00);
  if (!id || !RunUntil([&] { return host_.request(*id).done; }, timeout_ms)) return std::nullopt;
  const HostRequest& r = host_.request(*id);
  if (r.status != DXPU_TLP_CPL_SC) return std::nullopt;
  return r.data[0] | (r.data[1] << 8) | (r.data[2] << 16) | (uint32_t{r.data[3]} << 24);
}

bool LinkHost::RunUntil(const std::function<bool()>& done, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<uint8_t> rx(DXFP_MAX_FRAME);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    const uint64_t now = fabric::MonotonicNanos();
    host_.now_ns = now;
    host_.endpoint().Flush(now, [&](link::FramePieces f) { link_->SendPieces(bridge_, f); });
    pollfd p{link_->fd(), POLLIN, 0};
    poll(&p, 1, 1);
    for (;;) {
      const link::LinkResult r = link_->Receive(rx, nullptr);
      if (!r.ok()) break;
      host_.endpoint().Receive(fabric::MonotonicNanos(),
                               std::span<const uint8_t>(rx.data(), r.size));
    }
  }
  return true;
}

}  // namespace dxpu::test
