// sim_host.h - a HostProxy run in the deterministic simulator (sim_port.h): a virtual clock,
// sim::Network paths for the links, and optionally a bridge box on the far side. Waiting runs
// the world: deliver what is due, let the box and the proxy act, and when nothing moves jump to
// the next thing that will happen.
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
  // A bridge box on the far side of `fabric` (both ways), and the host's session to it.
  std::optional<PathId> AddBox(std::unique_ptr<bridge::BridgeBox> box,
                               const dxfp_session_config& session, const sim::PathConfig& fabric,
                               std::string* error);
  bridge::BridgeBox* box() { return box_.get(); }

  void Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) override;
  bool WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                 uint64_t deadline) override;
  uint64_t Now() const override { return now_; }

 private:
  bool Step();
  void BoxTransmit(link::FramePieces frame);

  sim::Scheduler sched_;
  std::unique_ptr<sim::Network> net_;
  HostProxy proxy_;
  std::unique_ptr<bridge::BridgeBox> box_;
  PathId box_path_ = 0;
  uint64_t now_ = 1'000'000;
  bool moved_ = false;
  std::vector<uint8_t> tlp_buf_;
};

}  // namespace dxpu::host

#endif  // DXPU_SIM_WORLD_SIM_HOST_H_
