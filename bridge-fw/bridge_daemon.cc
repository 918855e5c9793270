// bridge_daemon.cc - dxpu-bridge in real time (bridge_daemon.h).
#include "bridge-fw/bridge_daemon.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "bridge-fw/firmware/boot_protocol.h"
#include "core/dxpu_mgmt.h"
#include "crypto/fabric_keys.h"
#include "fabric/link_driver.h"
#include "link/packet_link.h"
#include "link/udp_link.h"
#include "link/unix_dgram_link.h"
#include "metrics/prometheus_writer.h"

namespace dxpu::bridge {
namespace {

// Frames read from one link before the box runs (so that one busy link cannot starve the
// loop's other work).
constexpr int kFramesPerWake = 64;

std::unique_ptr<link::Link> OpenLink(const LinkConfig& c, std::string* error) {
  switch (c.type) {
    case LinkType::kUdp: {
      link::UdpLink::Options o;
      if (c.mtu) o.mtu = *c.mtu;
      std::string ip;
      const link::IpEndpoint& ep = c.listen.ip();
      // The numeric address without the port, as UdpLink::Open takes it.
      const std::string s = c.listen.ToString();
      ip = ep.family == AF_INET6 ? s.substr(1, s.rfind(']') - 1) : s.substr(0, s.rfind(':'));
      auto r = link::UdpLink::Open(ip, ep.port, o);
      if (!r.ok()) *error = fmt::format("udp {}: {}", s, r.error.message());
      return std::move(r.link);
    }
    case LinkType::kUnix: {
      link::UnixDgramLink::Options o;
      o.local_path = c.path;
      o.remote_path = c.peer;
      if (c.mac) o.mac = *c.mac;
      if (c.mtu) o.mtu = *c.mtu;
      auto r = link::UnixDgramLink::Open(o);
      if (!r.ok()) *error = fmt::format("unix {}: {}", c.path, r.error.message());
      return std::move(r.link);
    }
    case LinkType::kPacket: {
      link::PacketLink::Options o;
      o.interface = c.interface;
      o.mac = c.mac;
      if (c.mtu) o.mtu = static_cast<size_t>(*c.mtu);
      auto r = link::PacketLink::Open(o);
      if (!r.ok()) *error = fmt::format("packet {}: {}", c.interface, r.error.message());
      return std::move(r.link);
    }
  }
  *error = "unknown link type";
  return nullptr;
}

// The configuration's identity, with the bridge's secret key read from its file.
bool LoadIdentity(const BridgeConfig& config, BridgeBoxConfig* box, std::string* error) {
  if (!config.identity) {
    spdlog::warn(
        "no identity configured: host sessions are not authenticated, and anyone on the "
        "fabric may connect as any host (docs/security.md)");
    return true;
  }
  const IdentityConfig& c = *config.identity;
  crypto::KeyResult<crypto::KeyPair> keys = crypto::ReadFabricSecretKeyFile(c.key_path);
  if (!keys.ok()) {
    *error = "identity.key: " + keys.error().message;
    return false;
  }
  BoxIdentity id;
  id.keys = keys.value();
  for (const IdentityHost& h : c.hosts) id.hosts.push_back(HostKey{h.public_key, h.node_id});
  id.hellos_per_second = c.hellos_per_second;
  id.hello_burst = c.hello_burst;
  id.handshakes_per_second = c.handshakes_per_second;
  box->identity = std::move(id);
  spdlog::info("identity: public key {}, {} hosts may connect", crypto::KeyHex(keys.value().pub),
               c.hosts.size());
  return true;
}

}  // namespace

BridgeBoxConfig ToBoxConfig(const BridgeConfig& config) {
  BridgeBoxConfig b;
  b.node_id = config.node_id;
  for (const DeviceConfig& d : config.devices)
    b.devices.push_back(
        BoxDeviceConfig{d.profile, d.box_bdf, d.memory_bytes, d.kind, d.blk, d.display});
  b.max_hosts = config.limits.max_hosts;
  b.box_tags = config.limits.box_tags;
  b.max_pending_per_host = config.limits.max_pending_per_host;
  b.completion_timeout_ns = config.limits.completion_timeout_ns;
  // The GPUs' DMA reads wait at least as long as a host's requests to them do.
  b.device_dma_timeout_ns = std::max(b.device_dma_timeout_ns, b.completion_timeout_ns);
  b.tag_quarantine_ns = config.limits.tag_quarantine_ns;
  dxfp_session_config s;
  dxfp_session_config_defaults(&s);
  s.link_down_ns = config.limits.link_down_ns;
  b.session = s;
  return b;
}

std::unique_ptr<BridgeDaemon> BridgeDaemon::Create(const BridgeConfig& config, std::string* error,
                                                   DaemonEmbedding embedding) {
  // SIGINT and SIGTERM arrive as a readable descriptor, handled on the loop like the rest. They
  // are blocked before anything can start a thread (the RTL data path's simulator does), so
  // that every thread inherits the mask and none takes the default action.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  if (embedding.handle_signals) pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  std::unique_ptr<BridgeDaemon> d(new BridgeDaemon());
  d->config_ = config;
  d->started_ns_ = fabric::MonotonicNanos();
  auto loop = link::EventLoop::Create();
  if (!loop.ok()) {
    *error = "event loop: " + loop.error.message();
    return nullptr;
  }
  d->loop_ = std::move(loop.link);

  BridgeBoxConfig box_config = ToBoxConfig(config);
  box_config.plane = embedding.plane;
  if (!LoadIdentity(config, &box_config, error)) return nullptr;
  d->embedding_crash_after_ = embedding.crash_after_ownership_change;
  d->health_delay_ms_ = embedding.health_delay_ms;
  size_t max_frame = 0;
  for (const LinkConfig& lc : config.links) {
    std::unique_ptr<link::Link> l = OpenLink(lc, error);
    if (!l) return nullptr;
    box_config.link_max_frame.push_back(static_cast<uint32_t>(l->max_frame()));
    max_frame = std::max(max_frame, l->max_frame());
    d->links_.push_back(std::move(l));
  }
  for (std::unique_ptr<link::Link>& l : embedding.links) {
    box_config.link_max_frame.push_back(static_cast<uint32_t>(l->max_frame()));
    max_frame = std::max(max_frame, l->max_frame());
    d->links_.push_back(std::move(l));
  }
  d->rx_.resize(std::max<size_t>(max_frame, DXFP_MAX_FRAME));
  d->box_ = BridgeBox::Create(box_config, error);
  if (!d->box_) return nullptr;

  if (std::error_code ec = ManagementSocket::Open(config.management.address, &d->management_)) {
    *error = fmt::format("management {}: {}", config.management.address.ToString(), ec.message());
    return nullptr;
  }
  if (config.metrics) {
    std::string why;
    d->metrics_ = metrics::MetricsServer::Create(
        *d->loop_, config.metrics->listen, [raw = d.get()] { return raw->Metrics(); }, &why);
    if (!d->metrics_) {
      *error = fmt::format("metrics {}: {}", config.metrics->listen.ToString(), why);
      return nullptr;
    }
  }

  if (embedding.handle_signals) {
    d->signals_ = link::UniqueFd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!d->signals_.valid()) {
      *error = "signalfd failed";
      return nullptr;
    }
  }

  BridgeDaemon* self = d.get();
  if (embedding.firmware) {
    d->firmware_on_trial_ = embedding.firmware->running_on_trial();
    d->firmware_slot_ = embedding.firmware->running();
    d->firmware_version_ = embedding.firmware->running_version();
    d->firmware_ = std::make_unique<FirmwareWorker>(
        std::move(embedding.firmware),
        [self](const ManagementPeer& to, std::span<const uint8_t> reply) {
          self->management_.SendTo(to, reply);
        },
        // FW_REBOOT answered: shut down like SIGTERM, and exit for the boot loader.
        [self] { self->Stop(); });
  }
  for (uint32_t i = 0; i < d->links_.size(); ++i)
    d->loop_->AddFd(d->links_[i]->fd(), [self, i] { self->OnLinkReadable(i); });
  d->auth_ = std::make_unique<ManagementAuthenticator>(config.management.trusted_keys,
                                                       config.management.insecure_unsigned);
  if (config.management.insecure_unsigned) {
    spdlog::warn(
        "management: insecure_unsigned: unsigned requests that change state are "
        "accepted from whoever reaches {}",
        config.management.address.ToString());
  } else if (config.management.trusted_keys.empty()) {
    spdlog::warn(
        "management: no trusted key: every request that changes state (ASSIGN, "
        "RELEASE, DMA_GRANT, FW_*) will be refused; name the manager's public key in "
        "management.trusted_keys");
  }
  d->loop_->AddFd(d->management_.fd(), [self] {
    self->management_.Serve([self](std::span<const uint8_t> request, const ManagementPeer& from) {
      return self->OnManagementRequest(request, from);
    });
    self->RunBox();  // a release may have answered requests with UR
  });
  if (d->signals_.valid()) d->loop_->AddFd(d->signals_.get(), [self] { self->OnSignal(); });
  if (embedding.busy_poll_ns != 0) {
    d->loop_->SetBusyPoll([self](bool before_sleep) { return self->BusyPoll(before_sleep); },
                          std::chrono::nanoseconds(embedding.busy_poll_ns));
  }
  return d;
}

BridgeDaemon::~BridgeDaemon() = default;

std::vector<uint8_t> BridgeDaemon::OnManagementRequest(std::span<const uint8_t> request,
                                                       const ManagementPeer& from) {
  const uint64_t now = fabric::MonotonicNanos();
  if (std::optional<std::vector<uint8_t>> refused =
          CheckAuthentication(*auth_, request, now, &management_counters_, &auth_log_))
    return std::move(*refused);
  // Firmware work (flash erases and writes, an image read back and hashed) goes to the
  // worker, answered from there: the loop goes on forwarding frames meanwhile.
  if (firmware_ && IsFirmwareDatagram(request)) {
    firmware_->Submit(request, from);
    return {};
  }
  std::vector<uint8_t> reply = HandleManagement(*box_, request, now, &management_counters_);
  MaybeCrashForTest(request);
  return reply;
}

void BridgeDaemon::MaybeCrashForTest(std::span<const uint8_t> request) {
  const uint32_t crash_after = embedding_crash_after_;
  if (crash_after == 0 || request.size() <= DXPU_MGMT_OFF_TYPE) return;
  const uint8_t type = request[DXPU_MGMT_OFF_TYPE];
  if (type != DXPU_MGMT_ASSIGN && type != DXPU_MGMT_RELEASE) return;
  if (++ownership_changes_ != crash_after) return;
  spdlog::warn("crash test: exiting after ownership change {} ({}), before answering it",
               ownership_changes_, dxpu_mgmt_type_name(type));
  spdlog::default_logger()->flush();
  _exit(137);
}

void BridgeDaemon::ArmHealthCheck() {
  if (!firmware_ || !firmware_on_trial_) return;
  spdlog::info("firmware: slot {} ({}) is on trial: health check in {} ms",
               firmware::SlotName(firmware_slot_), firmware_version_.ToString(), health_delay_ms_);
  loop_->AddTimer(link::EventLoop::Clock::now() + std::chrono::milliseconds(health_delay_ms_),
                  [this] { OnHealthCheck(); });
}

// The health check: the bridge came up (every link, the management socket and the metrics
// endpoint open, every device of the configuration on the box) and has served for the delay
// without dying. A bridge that crashes or cannot start never gets here, and its trial runs
// out of tries (docs/firmware.md).
void BridgeDaemon::OnHealthCheck() {
  if (box_->device_count() != config_.devices.size()) {
    spdlog::error("firmware: health check failed: {} of {} devices", box_->device_count(),
                  config_.devices.size());
    return;
  }
  firmware_->Post([](firmware::FirmwareService& service) {
    if (firmware::FirmwareResult<firmware::Ok> r = service.MarkRunningGood(); !r.ok())
      spdlog::error("firmware: cannot mark slot {} good: {}: {}",
                    firmware::SlotName(service.running()), r.error().name, r.error().message);
  });
}

bool BridgeDaemon::OnLinkReadable(uint32_t index, bool spinning) {
  link::Link& l = *links_[index];
  const auto tx = [this](const Peer& to, link::FramePieces f) { Transmit(to, f); };
  const link::Link::FrameUse use = [&](std::span<const uint8_t> frame,
                                       const link::LinkAddress& address) {
    // The time of this frame's arrival, not of the wake: opening a session for an earlier
    // frame may have taken a while.
    box_->ReceiveFrame(fabric::MonotonicNanos(), Peer{index, address}, frame, tx);
  };
  int frames = 0;
  while (frames < kFramesPerWake && (!spinning || l.MayHaveFrame()) &&
         l.ReceiveInPlace(rx_, use).ok())
    ++frames;
  if (frames != 0 || !spinning) RunBox();
  return frames != 0;
}

bool BridgeDaemon::BusyPoll(bool before_sleep) {
  if (!before_sleep && !spinning_) {
    for (const std::unique_ptr<link::Link>& l : links_) l->StartSpinning();
  }
  spinning_ = !before_sleep;
  bool work = false;
  // Before sleeping, each link is read until it is empty, which arms it again.
  for (uint32_t i = 0; i < links_.size(); ++i) work |= OnLinkReadable(i, !before_sleep);
  return work;
}

void BridgeDaemon::Transmit(const Peer& to, link::FramePieces frame) {
  if (to.link < links_.size() && links_[to.link]->SendPieces(to.address, frame)) send_errors_++;
}

void BridgeDaemon::RunBox() {
  box_->Run(fabric::MonotonicNanos(),
            [this](const Peer& to, link::FramePieces f) { Transmit(to, f); });
  ArmTimer();
}

void BridgeDaemon::ArmTimer() {
  const uint64_t next = box_->NextDeadline();
  if (next == timer_deadline_) return;
  if (timer_ != 0) loop_->CancelTimer(timer_);
  timer_ = 0;
  timer_deadline_ = next;
  if (next == UINT64_MAX) return;
  const auto when = link::EventLoop::Clock::time_point(std::chrono::nanoseconds(next));
  timer_ = loop_->AddTimer(when, [this] {
    timer_ = 0;
    timer_deadline_ = UINT64_MAX;
    RunBox();
  });
}

void BridgeDaemon::OnSignal() {
  signalfd_siginfo info{};
  if (read(signals_.get(), &info, sizeof(info)) != sizeof(info)) return;
  spdlog::info("signal {}: shutting down", info.ssi_signo);
  loop_->Stop();
}

int BridgeDaemon::Run() {
  spdlog::info("dxpu-bridge: node {:#x}, {} devices, {} links, management on {}{}", config_.node_id,
               box_->device_count(), links_.size(), management_.local_address().ToString(),
               metrics_ ? ", metrics on " + metrics_->local_address().ToString() : "");
  ArmTimer();
  ArmHealthCheck();
  if (std::error_code ec = loop_->Run()) {
    spdlog::error("event loop: {}", ec.message());
    return 1;
  }
  // Graceful: every host hears CLOSE now rather than finding out by timeout.
  const uint64_t now = fabric::MonotonicNanos();
  box_->Shutdown(now);
  RunBox();
  spdlog::info("dxpu-bridge: {} sessions closed, bye", box_->counters().sessions_closed);
  const bool reboot = firmware_ && firmware_->reboot_requested();
  firmware_.reset();  // the request in hand finished, the thread joined
  if (reboot) {
    spdlog::info("dxpu-bridge: rebooting (exit status {} to the boot loader)",
                 firmware::kRebootExitStatus);
    return firmware::kRebootExitStatus;
  }
  return 0;
}

std::string BridgeDaemon::Metrics() const {
  metrics::PrometheusWriter w;
  const double uptime = static_cast<double>(fabric::MonotonicNanos() - started_ns_) / 1e9;
  w.Gauge("dxpu_bridge_uptime_seconds", "Seconds since dxpu-bridge started.", {}, uptime);
  const std::string node = fmt::format("{:#x}", config_.node_id);
  w.Gauge("dxpu_bridge_info", "The bridge's identity.", {{"node", node}}, 1);

  const BoxCounters& c = box_->counters();
  const auto counter = [&w](const char* name, const char* help, uint64_t v) {
    w.Counter(name, help, {}, v);
  };
  counter("dxpu_bridge_frames_received_total", "DxFP frames received on all links.", c.frames_in);
  counter("dxpu_bridge_frames_bad_total", "Frames that did not parse, dropped.", c.frames_bad);
  counter("dxpu_bridge_frames_no_session_total", "Frames for no session here.",
          c.frames_no_session);
  counter("dxpu_bridge_sessions_opened_total", "Host sessions opened.", c.sessions_opened);
  counter("dxpu_bridge_sessions_closed_total", "Host sessions ended.", c.sessions_closed);
  counter("dxpu_bridge_hellos_refused_total",
          "HELLOs refused (no slot, bad version, or the authentication's reasons).",
          c.hellos_refused);
  const auto refusals = box_->hello_refusals();
  for (size_t r = 0; r < refusals.size(); ++r) {
    w.Counter("dxpu_bridge_hellos_unauthenticated_total",
              "HELLOs the host authentication refused, by reason (docs/protocol.md 4.12).",
              {{"reason", HelloRefusalName(static_cast<HelloRefusal>(r))}}, refusals[r]);
  }
  counter("dxpu_bridge_hello_sources_forgotten_total",
          "Sources the HELLO limit forgot before they were idle: a flood from more sources than "
          "it remembers.",
          box_->hello_sources_forgotten());
  counter("dxpu_bridge_tlps_from_hosts_total", "TLPs delivered by host sessions.",
          c.tlps_from_hosts);
  counter("dxpu_bridge_tlps_to_hosts_total", "TLPs queued to host sessions.", c.tlps_to_hosts);
  counter("dxpu_bridge_tlps_from_devices_total", "TLPs the devices sent.", c.tlps_from_devices);
  counter("dxpu_bridge_tlps_to_devices_total", "TLPs put onto the box's PCIe.", c.tlps_to_devices);
  counter("dxpu_bridge_tlps_peer_total", "TLPs from one of the box's devices to another.",
          c.tlps_peer);
  counter("dxpu_bridge_writes_combined_total",
          "Device writes to a host joined onto the one before (fewer, larger TLPs).",
          c.writes_combined);
  counter("dxpu_bridge_completions_split_total",
          "Pieces of host completions larger than a device's Max Payload Size.",
          c.completions_split);
  counter("dxpu_bridge_writes_split_total",
          "Pieces of writes larger than a device's Max Payload Size (a peer's, through the host).",
          c.writes_split);
  counter("dxpu_bridge_config_emulated_total", "Configuration accesses the bridge answered.",
          c.config_emulated);
  counter("dxpu_bridge_deferred_total", "Host requests that waited for a box tag.", c.deferred);
  counter("dxpu_bridge_host_queue_full_total", "TLPs dropped: a host's queue was full.",
          c.host_queue_full);
  counter("dxpu_bridge_releases_total", "Devices released (reset and scrubbed).", c.releases);
  counter("dxpu_bridge_scrubbed_bytes_total", "Device memory zeroed on release.", c.scrubbed_bytes);
  counter("dxpu_bridge_quarantined_total",
          "Devices quarantined: their owner's session ended without RELEASE.", c.quarantined);
  counter("dxpu_bridge_refusal_logs_suppressed_total", "Refusal log lines rate-limited away.",
          c.refusal_logs_suppressed);
  counter("dxpu_bridge_link_send_errors_total", "Frames a link refused to send.", send_errors_);

  const DatapathCounters d = box_->datapath_counters();
  counter("dxpu_bridge_datapath_ur_sent_total", "UR completions the data plane generated.",
          d.ur_sent);
  counter("dxpu_bridge_datapath_dropped_total", "TLPs the data plane dropped.", d.dropped);
  counter("dxpu_bridge_datapath_retries_total", "Requests told to wait for a tag.", d.retries);
  w.Gauge("dxpu_bridge_datapath_pending", "Host requests waiting for a device.", {},
          static_cast<double>(d.pending));
  w.Gauge("dxpu_bridge_datapath_tags_free", "Box tags free.", {}, static_cast<double>(d.tags_free));
  for (size_t i = 1; i < d.refused.size(); ++i) {
    const std::string_view reason = RefusalName(static_cast<Refusal>(i));
    w.Counter("dxpu_bridge_refused_total", "TLPs refused, by reason.", {{"reason", reason}},
              d.refused[i]);
  }

  for (const DeviceStatus& dev : box_->Devices()) {
    const std::string index = std::to_string(dev.index);
    const std::string bdf = fmt::format("{:02x}:{:02x}.{}", dev.box_bdf >> 8,
                                        (dev.box_bdf >> 3) & 0x1f, dev.box_bdf & 7);
    w.Gauge("dxpu_bridge_device_assigned", "1 while a host holds the device.",
            {{"device", index}, {"box_bdf", bdf}, {"profile", dev.profile}},
            dev.owner_node != 0 ? 1 : 0);
    w.Gauge("dxpu_bridge_device_quarantined",
            "1 while the device is quarantined: its owner's session was lost without RELEASE.",
            {{"device", index}}, dev.state == DeviceState::kQuarantined ? 1 : 0);
    w.Gauge("dxpu_bridge_device_owner_connected", "1 while the owner has a live session.",
            {{"device", index}}, dev.owner_connected ? 1 : 0);
    w.Counter("dxpu_bridge_device_resets_total", "FLRs on release.", {{"device", index}},
              dev.resets);
    w.Gauge("dxpu_bridge_device_dma_windows", "DMA windows granted.", {{"device", index}},
            static_cast<double>(dev.dma_windows));
  }

  const std::vector<HostStatus> hosts = box_->Hosts();
  w.Gauge("dxpu_bridge_hosts", "Host sessions.", {}, static_cast<double>(hosts.size()));
  for (const HostStatus& h : hosts) {
    const std::string host = fmt::format("{:#x}", h.node);
    std::array<uint64_t, DXFP_SESSION_COUNTER_COUNT> values{};
    static_assert(sizeof(values) == sizeof(h.session), "every session counter is a u64");
    std::memcpy(values.data(), &h.session, sizeof(values));
    for (size_t i = 0; i < values.size(); ++i) {
      std::string name = std::string("dxpu_bridge_session_") + dxfp_session_counter_name(i);
      std::replace(name.begin(), name.end(), '-', '_');
      w.Counter(name, "A host session's counter (docs/protocol.md, 4.10).", {{"node", host}},
                values[i]);
    }
  }

  for (size_t i = 0; i < links_.size(); ++i) {
    const link::LinkCounters lc = links_[i]->counters();
    const std::string index = std::to_string(i);
    const std::string_view type = LinkTypeName(config_.links[i].type);
    w.Counter("dxpu_bridge_link_frames_sent_total", "Frames sent, per link.",
              {{"link", index}, {"type", type}}, lc.frames_sent);
    w.Counter("dxpu_bridge_link_frames_received_total", "Frames received, per link.",
              {{"link", index}, {"type", type}}, lc.frames_received);
    w.Counter("dxpu_bridge_link_dropped_total", "Datagrams a link dropped.",
              {{"link", index}, {"type", type}}, lc.dropped);
  }

  WriteManagementMetrics(w);
  return w.Finish();
}

// The management socket's counters: requests, refusals (those of its authentication by reason).
void BridgeDaemon::WriteManagementMetrics(metrics::PrometheusWriter& w) const {
  const auto counter = [&w](const char* name, const char* help, uint64_t v) {
    w.Counter(name, help, {}, v);
  };
  ManagementCounters m = management_counters_;
  if (firmware_) {
    const ManagementCounters f = firmware_->counters();
    m.requests += f.requests;
    m.refused += f.refused;
    m.dropped += f.dropped;
  }
  counter("dxpu_bridge_management_requests_total", "Management requests answered.", m.requests);
  counter("dxpu_bridge_management_refused_total", "Management requests refused.", m.refused);
  counter("dxpu_bridge_management_dropped_total", "Management datagrams not answered.", m.dropped);
  const AuthCounters& a = auth_->counters();
  const std::pair<const char*, uint64_t> auth_refusals[] = {{"unsigned", a.unsigned_requests},
                                                            {"unknown-key", a.unknown_key},
                                                            {"bad-signature", a.bad_signature},
                                                            {"stale-epoch", a.stale_epoch},
                                                            {"replayed", a.replayed}};
  for (const auto& [reason, n] : auth_refusals) {
    w.Counter("dxpu_bridge_management_auth_refused_total",
              "State-changing management requests refused by their authentication, by reason.",
              {{"reason", reason}}, n);
  }
  counter("dxpu_bridge_management_signed_total",
          "Signed management requests accepted (a trusted key, a fresh epoch and sequence).",
          a.accepted_signed);
  counter("dxpu_bridge_management_unsigned_accepted_total",
          "Unsigned state-changing requests accepted (management.insecure_unsigned).",
          a.accepted_unsigned);
}

}  // namespace dxpu::bridge
