// box_world.h - a GPU box and the hosts that borrow its devices, joined by in-memory links
// (lib/link MemoryLink) or by the deterministic simulator's network (lib/sim), on a virtual
// clock. Tests drive it with RunUntil and the synchronous helpers below.
#ifndef DXPU_TESTS_BRIDGE_BOX_WORLD_H_
#define DXPU_TESTS_BRIDGE_BOX_WORLD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "link/memory_link.h"
#include "sim/clock.h"
#include "sim/network.h"
#include "test_host.h"

namespace dxpu::test {

enum class Transport { kMemoryLink, kSimulator };

// A box of one GPU (the "dxgpu" profile, 64 MiB, at box BDF 01:00.0), node 0xb0c5, with this
// identity (none: plaintext sessions).
bridge::BridgeBoxConfig OneGpuBoxConfig(std::optional<bridge::BoxIdentity> identity = {});

class BoxWorld {
 public:
  // path: the simulator's network between every host and the box (kSimulator only).
  BoxWorld(const bridge::BridgeBoxConfig& config, Transport transport, uint64_t seed = 1,
           const sim::PathConfig& path = {});

  bridge::BridgeBox& box() { return *box_; }
  // The box's data plane frames its hosts' sessions itself (DXPU_TEST_DATAPATH=rtl: the port).
  bool plane_frames() const { return plane_frames_; }
  TestHost& host(size_t i) { return *hosts_[i]; }
  uint64_t now() const { return now_; }

  // A host with this node ID, connected and established (false if it did not establish).
  // base: the session's parameters (e.g. its authentication); null: the defaults.
  TestHost& AddHost(uint64_t node, const dxfp_session_config* base = nullptr);
  // Sees every frame a host sends to the box (before it arrives), with the host's index.
  std::function<void(size_t host, std::span<const uint8_t> frame)> host_tap;
  bool Connect(TestHost& h);

  // Moves frames and time until done() or the virtual time limit; true when done() held.
  bool RunUntil(const std::function<bool()>& done, uint64_t limit_ns = 2'000'000'000);
  // Advances virtual time by ns, moving frames meanwhile.
  void RunFor(uint64_t ns);

  // Issue and wait (nullopt: could not issue, or no answer within the limit).
  std::optional<HostRequest> Wait(TestHost& h, std::optional<uint32_t> id);
  std::optional<uint32_t> CfgRead(TestHost& h, uint16_t bdf, uint16_t reg);
  bool CfgWrite(TestHost& h, uint16_t bdf, uint16_t reg, uint32_t value, uint8_t be = 0xf);
  std::optional<std::vector<uint8_t>> MemRead(TestHost& h, uint64_t addr, uint32_t len);
  std::optional<uint32_t> MemRead32(TestHost& h, uint64_t addr);

 private:
  // One step: deliver what is on the wire, run the box and the hosts. True if anything moved.
  bool Step();
  void BoxTransmit(const bridge::Peer& to, link::FramePieces frame);
  uint64_t NextWake() const;

  Transport transport_;
  std::unique_ptr<bridge::BridgeBox> box_;
  std::vector<std::unique_ptr<TestHost>> hosts_;
  uint64_t now_ = 1'000'000;
  // kMemoryLink: per host, the box's end and the host's end.
  std::vector<std::unique_ptr<link::MemoryLink>> box_links_, host_links_;
  // kSimulator: host i is port i + 1 and talks to the box on port 1000 + i.
  sim::Scheduler sched_;
  std::unique_ptr<sim::Network> net_;
  sim::PathConfig path_;
  bool moved_ = false;
  bool plane_frames_ = false;
  std::vector<uint8_t> rx_;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_BOX_WORLD_H_
