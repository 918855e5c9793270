// bridge_daemon.h - dxpu-bridge in real time: the BridgeBox over the configured links
// (UDP, AF_UNIX for QEMU, raw Ethernet), the management socket, the Prometheus endpoint,
// on one epoll loop and the monotonic clock. SIGINT or SIGTERM shut it down gracefully:
// every host is sent CLOSE, then the sockets close.
#ifndef DXPU_BRIDGE_FW_BRIDGE_DAEMON_H_
#define DXPU_BRIDGE_FW_BRIDGE_DAEMON_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "bridge-fw/bridge_config.h"
#include "bridge-fw/firmware/firmware_service.h"
#include "bridge-fw/management.h"
#include "bridge-fw/management_socket.h"
#include "bridge-fw/management_worker.h"
#include "link/event_loop.h"
#include "link/link.h"
#include "link/unique_fd.h"
#include "metrics/metrics_server.h"
#include "metrics/prometheus_writer.h"

namespace dxpu::bridge {

// What the daemon's translation of the configuration produces for the box.
BridgeBoxConfig ToBoxConfig(const BridgeConfig& config);

// What a program embedding the daemon (the demo: a bridge in the same process) adds.
struct DaemonEmbedding {
  // Links the caller made (an in-memory link), served after the configured ones.
  std::vector<std::unique_ptr<link::Link>> links;
  // SIGINT/SIGTERM stop the daemon; an embedding program keeps its signals (it calls Stop()).
  bool handle_signals = true;
  // The data plane (`dxpu-bridge --datapath`); default: the C++ golden model.
  DataPlane plane;
  // Crash tests only: the process exits (status 137, nothing cleaned up) once its N-th ASSIGN
  // or RELEASE took effect, before answering it. 0: never.
  uint32_t crash_after_ownership_change = 0;
  // The flash the bridge was booted from (dxpu-bridge --flash --slot, given by dxpu-boot):
  // firmware updates over the management socket, and a trial boot marked good once the bridge
  // has served for `health_delay_ms`. None: FW_* requests are answered FW_UNAVAILABLE.
  std::unique_ptr<firmware::FirmwareService> firmware;
  uint32_t health_delay_ms = 3000;
  // Busy polling: while frames arrived within this long, the loop spins on its links instead
  // of sleeping in epoll_wait (a core's worth of CPU for a lower round trip). 0: never spins.
  uint64_t busy_poll_ns = 0;
};

class BridgeDaemon {
 public:
  // Opens every socket; null, with *error saying which and why, when one cannot be opened.
  static std::unique_ptr<BridgeDaemon> Create(const BridgeConfig& config, std::string* error,
                                              DaemonEmbedding embedding = {});

  BridgeDaemon(const BridgeDaemon&) = delete;
  BridgeDaemon& operator=(const BridgeDaemon&) = delete;
  BridgeDaemon(BridgeDaemon&&) = delete;
  BridgeDaemon& operator=(BridgeDaemon&&) = delete;
  ~BridgeDaemon();

  // Runs until SIGINT or SIGTERM (or Stop()), or FW_REBOOT was answered; then closes every
  // session. Returns the exit status: 0 after a clean shutdown, firmware::kRebootExitStatus
  // after FW_REBOOT.
  int Run();
  // From any thread: Run() closes every session and returns.
  void Stop() { loop_->Stop(); }

  // The Prometheus text exposition of every counter (what GET /metrics returns).
  std::string Metrics() const;

 private:
  BridgeDaemon() = default;
  // Receives what the link holds (at most kFramesPerWake frames) and runs the box; false when
  // it held nothing. Spinning, only while Link::MayHaveFrame says so (no system call on an
  // empty in-memory link, which stays disarmed).
  bool OnLinkReadable(uint32_t index, bool spinning = false);
  // EventLoop::SetBusyPoll's poll.
  bool BusyPoll(bool before_sleep);
  // Sends a frame on the link the peer is on; a refusal is counted (the link logs why).
  void Transmit(const Peer& to, link::FramePieces frame);
  void RunBox();
  void ArmTimer();
  void OnSignal();
  void MaybeCrashForTest(std::span<const uint8_t> request);
  void ArmHealthCheck();
  void WriteManagementMetrics(metrics::PrometheusWriter& w) const;
  // The management socket's datagram: the answer to send now (empty: none, or later).
  std::vector<uint8_t> OnManagementRequest(std::span<const uint8_t> request,
                                           const ManagementPeer& from);
  void OnHealthCheck();

  BridgeConfig config_;
  uint32_t embedding_crash_after_ = 0;  // DaemonEmbedding::crash_after_ownership_change
  uint32_t ownership_changes_ = 0;
  std::unique_ptr<link::EventLoop> loop_;
  std::unique_ptr<BridgeBox> box_;
  std::vector<std::unique_ptr<link::Link>> links_;
  ManagementSocket management_;
  ManagementCounters management_counters_;
  // Signed, fenced state-changing requests (docs/protocol.md 15.8); checked on the loop before
  // any request is handled or handed to the firmware worker.
  std::unique_ptr<ManagementAuthenticator> auth_;
  util::RateLimitedLog auth_log_{1'000'000'000, 5};
  std::unique_ptr<metrics::MetricsServer> metrics_;
  // The firmware service runs on this worker, off the data path (docs/firmware.md, "Off the
  // data path"); what the health check needs of it, read before it moved there.
  std::unique_ptr<FirmwareWorker> firmware_;
  bool firmware_on_trial_ = false;
  firmware::Slot firmware_slot_ = firmware::Slot::kA;
  firmware::FirmwareVersion firmware_version_;
  uint32_t health_delay_ms_ = 0;
  link::UniqueFd signals_;
  link::EventLoop::TimerId timer_ = 0;
  uint64_t timer_deadline_ = UINT64_MAX;
  std::vector<uint8_t> rx_;
  bool spinning_ = false;  // busy polling: the links are told (Link::StartSpinning)
  uint64_t send_errors_ = 0;
  uint64_t started_ns_ = 0;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_BRIDGE_DAEMON_H_
