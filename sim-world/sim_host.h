// sim_host.h - a HostProxy run in the deterministic simulator (sim_port.h): a virtual clock,
// sim::Network paths for the links, and optionally bridge boxes on the far side, each behind its
// own DxFP session and fabric path. Waiting runs the world: deliver what is due, let the boxes
// and the proxy act, and when nothing moves jump to the next thing that will happen.
#ifndef DXPU_SIM_WORLD_SIM_HOST_H_
#define DXPU_SIM_WORLD_SIM_HOST_H_

#include <memory>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "gpu/gpu_device.h"
#include "host/host_driver.h"
#include "sim/clock.h"
#include "sim/network.h"

namespace dxpu::host {

class SimHost final : public HostDriver {
 public:
  SimHost(const HostProxyOptions& options, uint64_t seed);
  ~SimHost() override;

  HostProxy& proxy() { return proxy_; }
  sim::Network& network() { return *net_; }

  // A GPU model on a modelled PCIe link (path config both ways), created with `gpu`; returns
  // its device.
  std::optional<DeviceId> AddDirectDevice(const gpu::DeviceProfile& profile, uint16_t host_bdf,
                                          const sim::PathConfig& link, std::string* error,
                                          const gpu::GpuOptions& gpu = {});
  // A bridge box on the far side of `fabric` (both ways), and the host's session to it: a path
  // of its own, so several boxes may be added (the proxy routes peer TLPs between them).
  std::optional<PathId> AddBox(std::unique_ptr<bridge::BridgeBox> box,
                               const dxfp_session_config& session, const sim::PathConfig& fabric,
                               std::string* error);
  size_t box_count() const { return boxes_.size(); }
  // Box i in the order added; null past the last.
  bridge::BridgeBox* box(size_t i = 0) { return i < boxes_.size() ? boxes_[i].box.get() : nullptr; }

  void Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) override;
  bool WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                 uint64_t deadline) override;
  uint64_t Now() const override { return now_; }

 private:
  // A box, its session's path on the proxy, and the two ends of its fabric path.
  struct Box {
    std::unique_ptr<bridge::BridgeBox> box;
    PathId path = 0;
    sim::PortId host_end = 0;
    sim::PortId box_end = 0;
  };

  bool Step();
  void BoxTransmit(const Box& box, link::FramePieces frame);
  // The box whose session is `path` (every frame the proxy transmits is for one).
  const Box& BoxOf(PathId path) const;

  sim::Scheduler sched_;
  std::unique_ptr<sim::Network> net_;
  HostProxy proxy_;
  std::vector<Box> boxes_;
  uint64_t now_ = 1'000'000;
  bool moved_ = false;
  std::vector<uint8_t> tlp_buf_;
};

}  // namespace dxpu::host

#endif  // DXPU_SIM_WORLD_SIM_HOST_H_
