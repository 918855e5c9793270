// bridge_box.cc - the GPU box's bridge (bridge_box.h).
#include "bridge-fw/bridge_box.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <random>
#include <stdexcept>
#include <utility>

#include "bridge-fw/golden_datapath.h"
#include "core/dxfp_frame.h"
#include "core/tlp_build.h"
#include "gpu/pci_regs.h"
#include "virtio/gpu/scanout_png.h"
#include "virtio/gpu/virtio_gpu_device.h"
#include "virtio/virtio_blk_device.h"
#include "virtio/virtio_pci_function.h"

namespace dxpu::bridge {
namespace {

constexpr uint64_t kBox32Limit = 0x1'0000'0000ULL;

// Each host session's ordering queue (the bound a device's output waits on).
constexpr size_t kHostQueueTlps = 1024;
constexpr size_t kHostQueuePayload = size_t{1} << 20;

// A stateless CLOSE at most this often.
constexpr uint64_t kCloseReplyGapNs = 100'000;

constexpr uint16_t kDevCtlOffset = 8;  // in the PCI Express capability
constexpr uint32_t kDevCtlInitiateFlr = 0x8000;

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

std::optional<uint64_t> BoxAddressSpace::Place(uint64_t size, bool is_64bit) {
  uint64_t& next = is_64bit ? next64 : next32;
  const uint64_t at = AlignUp(next, size);
  if (!is_64bit && at + size > kBox32Limit) return std::nullopt;
  next = at + size;
  return at;
}

namespace {

uint32_t PayloadDw(const dxpu_tlp& t) {
  const uint8_t* p = t.payload;
  if (p == nullptr) return 0;
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

std::string DescribeTlp(const dxpu_tlp& t) {
  std::array<char, 160> buf{};
  dxpu_tlp_format(&t, buf.data(), buf.size());
  return buf.data();
}

}  // namespace

std::string_view ManageResultName(ManageResult r) {
  switch (r) {
    case ManageResult::kOk:
      return "ok";
    case ManageResult::kNoSuchDevice:
      return "no-such-device";
    case ManageResult::kDeviceBusy:
      return "device-busy";
    case ManageResult::kNotAssigned:
      return "not-assigned";
    case ManageResult::kTableFull:
      return "table-full";
    case ManageResult::kOverlap:
      return "overlap";
    case ManageResult::kBadArgument:
      return "bad-argument";
    case ManageResult::kQuarantined:
      return "quarantined";
    case ManageResult::kNoDisplay:
      return "no-display";
  }
  return "?";
}

// ------------------------------------------------------------------ construction

std::unique_ptr<BridgeBox> BridgeBox::Create(const BridgeBoxConfig& config, std::string* error) {
  std::string why;
  if (config.node_id == 0) why = "node_id must be non-zero";
  if (why.empty() && config.devices.empty()) why = "a bridge needs at least one device";
  if (why.empty() && (config.max_hosts == 0 || config.max_hosts >= kNoHost))
    why = "max_hosts must be 1..65534";
  GoldenDatapathConfig dc;
  dc.devices = static_cast<uint16_t>(std::min<size_t>(config.devices.size(), 4096));
  dc.host_slots = config.max_hosts;
  dc.box_tags = config.box_tags;
  dc.max_pending_per_host = config.max_pending_per_host;
  dc.completion_timeout_ns = config.completion_timeout_ns;
  dc.tag_quarantine_ns = config.tag_quarantine_ns;
  std::unique_ptr<Datapath> datapath;
  const DatapathFactory make = config.plane.datapath ? config.plane.datapath : MakeGoldenDatapath;
  if (why.empty()) datapath = make(dc, &why);
  if (!datapath) {
    if (error != nullptr) *error = why;
    return nullptr;
  }
  std::unique_ptr<BridgeBox> box(new BridgeBox(config, std::move(datapath)));
  if (const char* bad = dxfp_session_config_check(&box->session_template_)) {
    if (error != nullptr) *error = std::string("session: ") + bad;
    return nullptr;
  }
  BoxAddressSpace space;
  for (const BoxDeviceConfig& d : config.devices) {
    for (const Device& other : box->devices_) {
      if (other.box_bdf == d.box_bdf) {
        if (error != nullptr) *error = fmt::format("two devices at box BDF {:04x}", d.box_bdf);
        return nullptr;
      }
    }
    if (!box->AddDevice(d, space, error)) return nullptr;
  }
  return box;
}

BridgeBox::BridgeBox(const BridgeBoxConfig& config, std::unique_ptr<Datapath> datapath)
    : config_(config),
      datapath_(std::move(datapath)),
      hosts_(config.max_hosts),
      switch_(config.devices.size(), config.box_links),
      refusal_log_(config.refusal_log_interval_ns, config.refusal_log_burst) {
  if (config.session) {
    session_template_ = *config.session;
  } else {
    dxfp_session_config_defaults(&session_template_);
  }
  session_template_.role = DXFP_ROLE_RESPONDER;
  session_template_.node_id = config.node_id;
  std::random_device rd;
  epoch_ = config.epoch;
  while (epoch_ == 0) epoch_ = rd();
  session_template_.epoch = epoch_;
  if (config.identity) {
    auth_ = std::make_unique<HostAuthenticator>(*config.identity);
    session_template_.auth.ops = &crypto::SodiumCryptoOps();
    config_.identity.reset();  // the secret key lives in auth_ only
  }
  if (config.plane.framing) {
    // What the framing hardware carries: its replay window, and frames no larger than its own.
    const fabric::FramingLimits& lim = config.plane.framing.limits;
    session_template_.replay_window = lim.replay_window;
    session_template_.max_frame = std::min(session_template_.max_frame, lim.max_frame);
  }
}

BridgeBox::~BridgeBox() = default;

std::unique_ptr<pcie::Function> MakeFunction(const BoxDeviceConfig& entry,
                                             const FunctionContext& context, std::string* error) {
  switch (entry.kind) {
    case DeviceKind::kGpu: {
      gpu::GpuOptions options;
      options.requester_id = entry.box_bdf;
      options.memory_bytes = entry.memory_bytes;
      options.completion_timeout_ns = context.device_dma_timeout_ns;
      options.activity = context.gpu_activity;
      return gpu::GpuDevice::Create(entry.profile, options, error);
    }
    case DeviceKind::kVirtioBlk: {
      virtio::VirtioBlkOptions blk;
      blk.path = entry.blk.backing;
      blk.size_bytes = entry.blk.size_bytes;
      blk.num_queues = entry.blk.queues;
      std::unique_ptr<virtio::VirtioBlkDevice> disk = virtio::VirtioBlkDevice::Create(blk, error);
      if (!disk) return nullptr;
      virtio::VirtioPciOptions options;
      options.requester_id = entry.box_bdf;
      options.completion_timeout_ns = context.device_dma_timeout_ns;
      options.release_policy = entry.blk.release == DiskReleasePolicy::kKeep
                                   ? virtio::ReleasePolicy::kKeep
                                   : virtio::ReleasePolicy::kZero;
      return virtio::VirtioPciFunction::Create(std::move(disk), options, error);
    }
    case DeviceKind::kVirtioGpu: {
      virtio::gpu::VirtioGpuOptions display;
      display.display_width = entry.display.width;
      display.display_height = entry.display.height;
      virtio::VirtioPciOptions options;
      options.requester_id = entry.box_bdf;
      options.completion_timeout_ns = context.device_dma_timeout_ns;
      return virtio::VirtioPciFunction::Create(
          std::make_unique<virtio::gpu::VirtioGpuDevice>(display), options, error);
    }
  }
  if (error != nullptr) *error = "unknown device kind";
  return nullptr;
}

bool BridgeBox::AddDevice(const BoxDeviceConfig& dc, BoxAddressSpace& space, std::string* error) {
  FunctionContext context;
  context.device_dma_timeout_ns = config_.device_dma_timeout_ns;
  if (config_.gpu_activity) {
    context.gpu_activity = [sink = config_.gpu_activity, index = devices_.size()](
                               const gpu::CommandActivity& a) { sink(index, a); };
  }
  std::string why;
  Device dev;
  dev.function = MakeFunction(dc, context, &why);
  if (!dev.function) {
    if (error != nullptr)
      *error = fmt::format("device {:04x} ({}): {}", dc.box_bdf, dc.profile.name, why);
    return false;
  }
  dev.identity = dev.function->identity();
  dev.box_bdf = dc.box_bdf;
  dev.box_bars = dev.function->Bars();
  for (pcie::Bar& b : dev.box_bars) {
    const std::optional<uint64_t> at = space.Place(b.size, b.is_64bit);
    if (!at) {
      if (error != nullptr)
        *error = fmt::format("device {:04x}: no room below 4 GiB for its 32-bit BAR{}", dc.box_bdf,
                             b.index);
      return false;
    }
    b.address = *at;
  }
  const pcie::ConfigLayout layout = dev.function->layout();
  dev.pcie_cap = layout.pcie_cap;
  dev.rebar_begin = layout.rebar_begin;
  dev.rebar_end = layout.rebar_end;
  dev.bars = VirtualBars(dev.box_bars);
  ProgramBoxBars(dev);
  const auto index = static_cast<DeviceIndex>(devices_.size());
  devices_.push_back(std::move(dev));
  datapath_->SetDevice(index, DeviceEntry{dc.box_bdf, 0, kNoHost});
  return true;
}

void BridgeBox::ProgramBoxBars(Device& dev) {
  for (const pcie::Bar& b : dev.box_bars) {
    const auto reg = static_cast<uint16_t>(gpu::pci::kBar0 + 4 * b.index);
    dev.function->ConfigWriteDw(reg, static_cast<uint32_t>(b.address), 0xf);
    if (b.is_64bit)
      dev.function->ConfigWriteDw(reg + 4, static_cast<uint32_t>(b.address >> 32), 0xf);
  }
}

ManageResult BridgeBox::Screenshot(DeviceIndex d, DisplayImage* out) {
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  Device& dev = devices_[d];
  auto* function = dynamic_cast<virtio::VirtioPciFunction*>(dev.function.get());
  const auto* display =
      function == nullptr ? nullptr
                          : dynamic_cast<const virtio::gpu::VirtioGpuDevice*>(&function->device());
  if (display == nullptr) return ManageResult::kNoDisplay;
  const virtio::gpu::Scanout& scanout = display->scanout();
  // The image changes with a flush, a SET_SCANOUT (another resource, or none), a mode and the
  // cursor; the key covers each, so a PNG is rendered once per image however many pieces are
  // asked for.
  const DisplayKey key{scanout.flushes,  scanout.resource_id, scanout.width,
                       scanout.height,   scanout.enabled,     scanout.cursor.visible,
                       scanout.cursor.x, scanout.cursor.y,    scanout.cursor.resource_id};
  if (!dev.screenshot.png || key != dev.screenshot_key) {
    dev.screenshot.png = std::make_shared<const std::vector<uint8_t>>(
        virtio::gpu::RenderScanoutPng(scanout, /*draw_cursor=*/true));
    dev.screenshot.frame++;
    dev.screenshot_key = key;
  }
  *out = dev.screenshot;
  return ManageResult::kOk;
}

gpu::GpuDevice& BridgeBox::device(DeviceIndex d) {
  gpu::GpuDevice* gpu = gpu::AsGpu(*devices_.at(d).function);
  if (gpu == nullptr) throw std::logic_error(fmt::format("device {} is not a GPU", d));
  return *gpu;
}

// ------------------------------------------------------------------ frames and sessions

void BridgeBox::ReceiveFrame(uint64_t now, const Peer& from, std::span<const uint8_t> frame,
                             const Transmit& tx) {
  now_ = now;
  counters_.frames_in++;
  if (auth_ && frame.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(frame.data()))
    return ReceiveSealed(now, from, frame);
  dxfp_frame f{};
  const dxfp_err err = dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f);
  if (err == DXFP_ERR_BAD_VERSION && f.hdr.type == DXFP_HELLO) {
    std::array<uint8_t, 64> buf{};
    const size_t n =
        dxfp_write_close(buf.data(), buf.size(), &f.hdr, epoch_, DXFP_CLOSE_UNSUPPORTED_VERSION);
    const std::array<std::span<const uint8_t>, 1> piece{std::span<const uint8_t>(buf.data(), n)};
    if (n != 0) tx(from, piece);
    counters_.hellos_refused++;
    return;
  }
  if (err != DXFP_OK) {
    counters_.frames_bad++;
    return;
  }
  if (f.hdr.type == DXFP_HELLO)
    return auth_ ? OnAuthHello(now, from, f, frame, tx) : OnHello(now, from, f, tx);
  auto it = by_session_.find(f.hdr.dst_session);
  if (it != by_session_.end() && !hosts_[it->second].down) {
    hosts_[it->second].endpoint->ReceiveFrame(now, f, frame);
    return;
  }
  counters_.frames_no_session++;
  if (f.hdr.type == DXFP_DATA && now - last_close_reply_ >= kCloseReplyGapNs) {
    // No session: tell the sender at once rather than let it time out.
    std::array<uint8_t, 64> buf{};
    const size_t n =
        dxfp_write_close(buf.data(), buf.size(), &f.hdr, epoch_, DXFP_CLOSE_UNKNOWN_SESSION);
    const std::array<std::span<const uint8_t>, 1> piece{std::span<const uint8_t>(buf.data(), n)};
    if (n != 0) tx(from, piece);
    last_close_reply_ = now;
  }
}

void BridgeBox::OnHello(uint64_t now, const Peer& from, const dxfp_frame& f, const Transmit& tx) {
  dxfp_hello hello{};
  if (!dxfp_hello_identity(&f, &hello) || hello.node_id == 0) {
    counters_.hellos_refused++;
    return;
  }
  if (auto slot = LiveSlot(hello.node_id)) {
    Host& h = hosts_[*slot];
    if (f.hdr.src_session == h.peer_session && f.hdr.src_epoch == h.peer_epoch) {
      h.endpoint->ReceiveFrame(now, f);  // a repeated HELLO: WELCOME again
      return;
    }
    // The host restarted or reconnected: its old session ends; its devices stay its own.
    spdlog::info("host {:#x}: new session from {} replaces session {:#x}", hello.node_id,
                 from.address.ToString(), h.endpoint->session_id());
    h.endpoint->Close(now, DXFP_CLOSE_SHUTDOWN);
    h.endpoint->Flush(now, [&](link::FramePieces p) { tx(h.peer, p); });
    EndSession(*slot);
  }
  OpenSession(now, from, f, hello.node_id, tx);
}

void BridgeBox::ReceiveSealed(uint64_t now, const Peer& from, std::span<const uint8_t> frame) {
  dxfp_header h{};
  if (!dxfp_header_peek(frame.data(), frame.size(), &h)) {
    counters_.frames_bad++;
    return;
  }
  auto it = by_session_.find(h.dst_session);
  if (it == by_session_.end() || hosts_[it->second].down) {
    // No CLOSE in reply: a plaintext CLOSE means nothing to an authenticated host.
    counters_.frames_no_session++;
    return;
  }
  Host& host = hosts_[it->second];
  // Only the host's key opens it: where it came from is where the host now is (roaming).
  if (host.endpoint->Receive(now, frame) == DXFP_RX_OK && !(from == host.peer)) host.peer = from;
}

std::optional<HostSlot> BridgeBox::SlotOfPeer(uint32_t peer_session, uint32_t peer_epoch) const {
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const Host& h = hosts_[i];
    if (h.endpoint && !h.down && h.peer_session == peer_session && h.peer_epoch == peer_epoch)
      return static_cast<HostSlot>(i);
  }
  return std::nullopt;
}

void BridgeBox::OnAuthHello(uint64_t now, const Peer& from, const dxfp_frame& f,
                            std::span<const uint8_t> raw, const Transmit& tx) {
  // The same HELLO again (its WELCOME was lost): the session it opened sends that WELCOME again.
  if (auto slot = SlotOfPeer(f.hdr.src_session, f.hdr.src_epoch);
      slot && std::ranges::equal(hosts_[*slot].hello, raw)) {
    hosts_[*slot].endpoint->ReceiveFrame(now, f);
    return;
  }
  auto opened = auth_->Open(now, fmt::format("{}/{}", from.link, from.address.ToString()), raw);
  if (const CookieReply* cookie = std::get_if<CookieReply>(&opened)) {
    // Under load: no handshake for a source that has not shown it receives at its address.
    counters_.hellos_refused++;
    const std::array<std::span<const uint8_t>, 1> piece{cookie->frame};
    tx(from, piece);
    uint64_t suppressed = 0;
    if (refusal_log_.Allow(uint64_t{0xa0} + static_cast<uint64_t>(HelloRefusal::kCookie), now,
                           &suppressed))
      spdlog::warn("under load: HELLO from {} answered with a cookie ({} more suppressed)",
                   from.address.ToString(), suppressed);
    return;
  }
  if (const HelloRefusal* why = std::get_if<HelloRefusal>(&opened)) {
    counters_.hellos_refused++;
    uint64_t suppressed = 0;
    if (refusal_log_.Allow(uint64_t{0xa0} + static_cast<uint64_t>(*why), now, &suppressed))
      spdlog::warn("HELLO from {} refused: {} ({} more suppressed)", from.address.ToString(),
                   HelloRefusalName(*why), suppressed);
    return;
  }
  OpenedHello& hello = std::get<OpenedHello>(opened);
  // A newer handshake of the same host replaces one it has not finished.
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (hosts_[i].endpoint && hosts_[i].pending && hosts_[i].node == hello.node)
      EndSession(static_cast<HostSlot>(i));
  }
  OpenSession(now, from, hello.frame, hello.node, tx, &hello.hs);
  dxfp_noise_wipe(&hello.hs);
  if (auto slot = SlotOfPeer(f.hdr.src_session, f.hdr.src_epoch))
    hosts_[*slot].hello.assign(raw.begin(), raw.end());
}

uint32_t BridgeBox::NewSessionId() {
  // Random, so that a session ID names a session without being guessable (docs/protocol.md).
  std::random_device rd;
  uint32_t id = 0;
  while (id == 0 || by_session_.contains(id)) id = rd();
  return id;
}

void BridgeBox::ConfirmSession(HostSlot slot) {
  Host& h = hosts_[slot];
  if (!h.pending) return;
  h.pending = false;
  if (auto old = LiveSlot(h.node); old && *old != slot) {
    // The host reconnected: its old session ends (the next flush sends its CLOSE and frees it);
    // its devices stay its own and move to the new session.
    spdlog::info("host {:#x}: session {:#x} replaces session {:#x}", h.node,
                 h.endpoint->session_id(), hosts_[*old].endpoint->session_id());
    hosts_[*old].endpoint->Close(now_, DXFP_CLOSE_SHUTDOWN);
  }
  by_node_[h.node] = slot;
  BindOwnedDevices(slot);
}

void BridgeBox::OpenSession(uint64_t now, const Peer& from, const dxfp_frame& hello, uint64_t node,
                            const Transmit& tx, dxfp_noise* hs) {
  auto free_slot = std::find_if(hosts_.begin(), hosts_.end(),
                                [](const Host& h) { return h.endpoint == nullptr; });
  if (free_slot == hosts_.end()) {
    counters_.hellos_refused++;
    uint64_t suppressed = 0;
    if (refusal_log_.Allow(~uint64_t{0}, now, &suppressed))
      spdlog::warn("host {:#x} from {}: refused, all {} host slots in use ({} more suppressed)",
                   node, from.address.ToString(), hosts_.size(), suppressed);
    return;
  }
  const auto slot = static_cast<HostSlot>(free_slot - hosts_.begin());
  dxfp_session_config cfg = session_template_;
  std::random_device rd;
  cfg.session_id = NewSessionId();
  cfg.epoch = 0;
  while (cfg.epoch == 0) cfg.epoch = rd();  // per session: a CLOSE cannot guess it
  cfg.initial_seq = static_cast<uint32_t>(rd());
  if (from.link < config_.link_max_frame.size())
    cfg.max_frame = std::min(cfg.max_frame, config_.link_max_frame[from.link]);
  if (config_.plane.framing) cfg.max_frame &= ~3u;  // the port's frames are whole dwords

  fabric::EndpointCallbacks cb;
  cb.deliver = [this, slot](const dxpu_tlp& t) { OnHostTlp(slot, t); };
  cb.established = [this, slot] {
    ConfirmSession(slot);
    const Host& h = hosts_[slot];
    if (config_.plane.framing && !h.endpoint->framed())
      spdlog::warn("host {:#x}: session {:#x} framed by lib/core, not the data plane: {}", h.node,
                   h.endpoint->session_id(), h.endpoint->framing_error());
  };
  cb.link_down = [this, slot](dxfp_down_reason reason, std::span<const dxpu_tlp>) {
    Host& h = hosts_[slot];
    h.down = true;
    spdlog::info("host {:#x}: session {:#x} down ({})", h.node, h.endpoint->session_id(),
                 dxfp_down_reason_name(reason));
  };
  fabric::EndpointOptions options;
  options.auto_release = false;  // a request waiting for a box tag keeps its credit
  options.queue.max_tlps_per_class = kHostQueueTlps;
  options.queue.max_payload_bytes_per_class = kHostQueuePayload;
  options.framing = config_.plane.framing;
  std::string error;
  auto ep = fabric::Endpoint::Create(cfg, std::move(cb), options, &error);
  if (!ep) {
    spdlog::error("host {:#x}: cannot create a session: {}", node, error);
    counters_.hellos_refused++;
    return;
  }
  const dxfp_rx_result r = hs != nullptr ? ep->AcceptAuth(now, hello, hs) : ep->Accept(now, hello);
  if (r != DXFP_RX_OK) {
    counters_.hellos_refused++;
    if (r == DXFP_RX_BAD_VERSION) {
      std::array<uint8_t, 64> buf{};
      const size_t n = dxfp_write_close(buf.data(), buf.size(), &hello.hdr, epoch_,
                                        DXFP_CLOSE_UNSUPPORTED_VERSION);
      const std::array<std::span<const uint8_t>, 1> piece{std::span<const uint8_t>(buf.data(), n)};
      if (n != 0) tx(from, piece);
    }
    return;
  }
  Host& h = hosts_[slot];
  h.endpoint = std::move(ep);
  h.peer = from;
  h.node = node;
  h.peer_session = hello.hdr.src_session;
  h.peer_epoch = hello.hdr.src_epoch;
  h.down = false;
  h.pending = hs != nullptr;
  h.deferred.clear();
  h.hello.clear();
  by_session_[cfg.session_id] = slot;
  counters_.sessions_opened++;
  spdlog::info("host {:#x}: session {:#x} from {} (slot {}{})", node, cfg.session_id,
               from.address.ToString(), slot, hs != nullptr ? ", authenticated" : "");
  if (hs == nullptr) {
    by_node_[node] = slot;
    BindOwnedDevices(slot);
  }
}

void BridgeBox::BindOwnedDevices(HostSlot slot) {
  const uint64_t node = hosts_[slot].node;
  LiftQuarantine(node);
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& dev = devices_[i];
    if (dev.owner_node != node) continue;
    const auto d = static_cast<DeviceIndex>(i);
    datapath_->SetDevice(d, DeviceEntry{dev.box_bdf, dev.host_bdf, slot});
    for (const DmaWindow& w : dev.grants) datapath_->AddDmaWindow(d, w);
    UpdateBarWindows(d);
  }
}

void BridgeBox::EndSession(HostSlot slot) {
  Host& h = hosts_[slot];
  if (!h.endpoint) return;
  // Its requests waiting for a tag still hold credit in a session that is gone: forget them.
  h.deferred.clear();
  datapath_->ReleaseHost(slot);
  by_session_.erase(h.endpoint->session_id());
  auto it = by_node_.find(h.node);
  if (it != by_node_.end() && it->second == slot) by_node_.erase(it);
  h.endpoint.reset();
  h.down = false;
  h.pending = false;
  counters_.sessions_closed++;
  QuarantineOwnedDevices(h.node);
}

void BridgeBox::QuarantineOwnedDevices(uint64_t node) {
  if (node == 0 || LiveSlot(node)) return;
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& dev = devices_[i];
    if (dev.owner_node != node || dev.quarantined) continue;
    dev.quarantined = true;
    counters_.quarantined++;
    spdlog::warn(
        "device {} ({:04x}): quarantined: host {:#x}'s session ended without RELEASE; "
        "it goes to no other host until released (reset and scrubbed)",
        i, dev.box_bdf, node);
  }
}

void BridgeBox::LiftQuarantine(uint64_t node) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& dev = devices_[i];
    if (dev.owner_node != node || !dev.quarantined) continue;
    dev.quarantined = false;
    spdlog::info("device {} ({:04x}): out of quarantine: its owner {:#x} is back", i, dev.box_bdf,
                 node);
  }
}

std::optional<HostSlot> BridgeBox::LiveSlot(uint64_t node) const {
  if (node == 0) return std::nullopt;
  auto it = by_node_.find(node);
  if (it == by_node_.end() || hosts_[it->second].down) return std::nullopt;
  return it->second;
}

void BridgeBox::FlushHosts(uint64_t now, const Transmit& tx) {
  for (size_t i = 0; i < hosts_.size(); ++i) {
    Host& h = hosts_[i];
    if (!h.endpoint) continue;
    h.endpoint->Flush(now, [&](link::FramePieces p) { tx(h.peer, p); });
    if (h.down) EndSession(static_cast<HostSlot>(i));
  }
}

// ------------------------------------------------------------------ host TLPs

void BridgeBox::OnHostTlp(HostSlot slot, const dxpu_tlp& tlp) {
  counters_.tlps_from_hosts++;
  Host& h = hosts_[slot];
  if (h.deferred.empty() && ProcessHostTlp(slot, tlp, now_)) {
    h.endpoint->Release(dxpu_tlp_kind_class(tlp.kind), dxpu_tlp_payload_len(&tlp));
    return;
  }
  // Waits, in order, for a box tag; its receive credit stays taken (back-pressure).
  Deferred d;
  d.tlp = tlp;
  const uint32_t len = dxpu_tlp_payload_len(&tlp);
  if (len != 0) d.payload.assign(tlp.payload, tlp.payload + len);
  d.tlp.payload = nullptr;
  h.deferred.push_back(std::move(d));
  counters_.deferred++;
}

void BridgeBox::RetryDeferred(uint64_t now) {
  for (size_t i = 0; i < hosts_.size(); ++i) {
    Host& h = hosts_[i];
    while (h.endpoint && !h.down && !h.deferred.empty()) {
      Deferred& d = h.deferred.front();
      d.tlp.payload = d.payload.empty() ? nullptr : d.payload.data();
      if (!ProcessHostTlp(static_cast<HostSlot>(i), d.tlp, now)) break;
      h.endpoint->Release(dxpu_tlp_kind_class(d.tlp.kind), dxpu_tlp_payload_len(&d.tlp));
      h.deferred.pop_front();
    }
  }
}

std::optional<DeviceIndex> BridgeBox::OwnedAt(HostSlot slot, uint16_t host_bdf) const {
  const uint64_t node = hosts_[slot].node;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].owner_node == node && devices_[i].host_bdf == host_bdf)
      return static_cast<DeviceIndex>(i);
  }
  return std::nullopt;
}

bool BridgeBox::ProcessHostTlp(HostSlot slot, const dxpu_tlp& tlp, uint64_t now) {
  std::optional<DeviceIndex> cfg_device;
  if (tlp.kind == DXPU_TLP_CFGRD0 || tlp.kind == DXPU_TLP_CFGWR0) {
    cfg_device = OwnedAt(slot, tlp.cfg_target);
    if (cfg_device && InterceptConfig(slot, tlp, *cfg_device, now)) return true;
  }
  const Decision dec = datapath_->FromHost(slot, tlp, now);
  if (dec.route == Route::kRetry) return false;
  Dispatch(dec, now, "host", slot, tlp);
  if (tlp.kind == DXPU_TLP_CFGWR0 && cfg_device && dec.route == Route::kDevice)
    AfterConfigWrite(tlp, *cfg_device);
  return true;
}

// The BAR registers are the bridge's own copy per host (virtual_bars.h); the Resizable BAR
// controls are the box's to set, so a host's write to them is completed and ignored.
bool BridgeBox::InterceptConfig(HostSlot slot, const dxpu_tlp& tlp, DeviceIndex d, uint64_t now) {
  Device& dev = devices_[d];
  const uint16_t reg = tlp.cfg_reg;
  const bool bar = VirtualBars::Covers(reg);
  const bool rebar = tlp.kind == DXPU_TLP_CFGWR0 && dev.rebar_end != 0 && reg >= dev.rebar_begin &&
                     reg < dev.rebar_end;
  if (!bar && !rebar) return false;
  counters_.config_emulated++;
  std::array<uint8_t, 4> data{};
  dxpu_tlp cpl{};
  dxpu_tlp_completion_for(&tlp, dev.host_bdf, DXPU_TLP_CPL_SC, &cpl);
  if (tlp.kind == DXPU_TLP_CFGRD0) {
    const uint32_t v = dev.bars.ReadDw(reg);
    for (size_t k = 0; k < 4; ++k) data[k] = static_cast<uint8_t>(v >> (8 * k));
    cpl.payload = data.data();
  } else if (bar) {
    dev.bars.WriteDw(reg, PayloadDw(tlp), tlp.first_be);
    UpdateBarWindows(d);
  }
  if (!SendToHost(slot, cpl, now)) counters_.host_queue_full++;
  return true;
}

void BridgeBox::AfterConfigWrite(const dxpu_tlp& tlp, DeviceIndex d) {
  Device& dev = devices_[d];
  const uint32_t value = PayloadDw(tlp);
  if (tlp.cfg_reg == gpu::pci::kCommand && (tlp.first_be & 0x3) != 0) {
    uint16_t cmd = dev.host_command;
    if (tlp.first_be & 0x1) cmd = static_cast<uint16_t>((cmd & 0xff00) | (value & 0xff));
    if (tlp.first_be & 0x2) cmd = static_cast<uint16_t>((cmd & 0x00ff) | (value & 0xff00));
    dev.host_command = cmd;
    UpdateBarWindows(d);
  }
  if (dev.pcie_cap != 0 && tlp.cfg_reg == dev.pcie_cap + kDevCtlOffset &&
      (tlp.first_be & 0x2) != 0 && (value & kDevCtlInitiateFlr) != 0) {
    // The host reset the function: its BARs and Command read power-on values again, and
    // the device's real BARs go back where the box placed them.
    dev.bars.Reset();
    dev.host_command = 0;
    ProgramBoxBars(dev);
    UpdateBarWindows(d);
  }
}

void BridgeBox::UpdateBarWindows(DeviceIndex d) {
  Device& dev = devices_[d];
  if (!LiveSlot(dev.owner_node)) return;
  const bool live = (dev.host_command & gpu::pci::kCommandMemory) != 0;
  for (const pcie::Bar& b : dev.box_bars) {
    const uint64_t host = dev.bars.HostAddress(b.index).value_or(0);
    BarWindow w;
    if (live && host != 0) w = BarWindow{host, b.address, b.size};
    if (datapath_->SetBarWindow(d, b.index, w)) continue;
    // The host placed this BAR where another of its devices had one: the host's latest
    // placement is its address map (it is re-placing them, after a reconnect, say); the other
    // device's window there is stale and goes, until the host places that device again.
    if (w.size != 0 && DropOverlappingWindows(d, w) && datapath_->SetBarWindow(d, b.index, w))
      continue;
    spdlog::warn("device {}: BAR{} window {:#x}+{:#x} refused", d, b.index, w.host_base, w.size);
  }
}

bool BridgeBox::DropOverlappingWindows(DeviceIndex d, const BarWindow& w) {
  const uint64_t node = devices_[d].owner_node;
  bool dropped = false;
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& other = devices_[i];
    if (i == d || other.owner_node != node) continue;
    for (const pcie::Bar& b : other.box_bars) {
      const uint64_t host = other.bars.HostAddress(b.index).value_or(0);
      if (host == 0 || host >= w.host_base + w.size || w.host_base >= host + b.size) continue;
      if (!datapath_->SetBarWindow(static_cast<DeviceIndex>(i), b.index, BarWindow{})) continue;
      spdlog::info(
          "device {}: BAR{} window at {:#x} dropped: the host placed device {}'s BAR "
          "there",
          i, b.index, host, d);
      dropped = true;
    }
  }
  return dropped;
}

// ------------------------------------------------------------------ routing

bool BridgeBox::SendToHost(HostSlot slot, const dxpu_tlp& tlp, uint64_t now) {
  if (slot >= hosts_.size()) return false;
  Host& h = hosts_[slot];
  if (!h.endpoint || h.down || !h.endpoint->Submit(tlp, now)) return false;
  counters_.tlps_to_hosts++;
  return true;
}

bool BridgeBox::HostHasRoom(HostSlot slot, const dxpu_tlp& tlp, uint32_t waiting_bytes) const {
  const Host& h = hosts_[slot];
  if (!h.endpoint) return true;  // nowhere to wait: the datapath decides (and drops)
  const fabric::TxQueue& q = h.endpoint->queue();
  // Payload bytes sit contiguous in a ring: a TLP that does not fit before the ring's end skips
  // it, fewer bytes than its own payload. Two pushes skip at most once, so the slack of one
  // largest payload makes room that is there by count truly there; without it a combined write
  // of a few KiB was refused by a nearly full ring and dropped (host_queue_full).
  const auto room = [&](dxpu_tlp_class cls, size_t tlps, size_t bytes) {
    return q.size(cls) + tlps <= kHostQueueTlps &&
           q.payload_bytes_used(cls) + bytes + (bytes != 0 ? DXPU_TLP_MAX_PAYLOAD : 0) <=
               kHostQueuePayload;
  };
  const dxpu_tlp_class cls = dxpu_tlp_kind_class(tlp.kind);
  const size_t len = dxpu_tlp_payload_len(&tlp);
  // A combined write waiting is posted, like any DMA write, and goes first: it needs room in
  // the posted queue whatever `tlp` is. Counted against `tlp`'s class instead, a completion or
  // read found room while the posted queue had none, and the write it sent first was dropped
  // (a GPU answering a peer's flush read while its own writes to peers waited).
  const size_t waiting = waiting_bytes != 0 ? 1 : 0;
  if (cls == DXPU_TLP_CLASS_POSTED) return room(cls, waiting + 1, waiting_bytes + len);
  return room(DXPU_TLP_CLASS_POSTED, waiting, waiting_bytes) && room(cls, 1, len);
}

uint32_t BridgeBox::WriteCap(HostSlot slot) const {
  const Host& h = hosts_[slot];
  if (!h.endpoint) return 0;
  // An MWr with a 64-bit address has a 4-DW header.
  return fabric::FramePayloadLimit(h.endpoint->session().max_frame, 16);
}

void BridgeBox::FlushCombined(uint64_t now) {
  if (!combiner_.pending()) return;
  const HostSlot slot = combiner_.slot();
  if (!SendToHost(slot, combiner_.Take(), now)) counters_.host_queue_full++;
}

void BridgeBox::Dispatch(const Decision& dec, uint64_t now, const char* from_what, uint32_t from_id,
                         const dxpu_tlp& original) {
  switch (dec.route) {
    case Route::kDevice:
      DeliverToDevice(dec.port, dec.tlp, now);
      break;
    case Route::kHost:
      if (!SendToHost(dec.port, dec.tlp, now)) counters_.host_queue_full++;
      break;
    case Route::kDrop:
    case Route::kRetry:
      break;
  }
  if (dec.refusal != Refusal::kNone) LogRefusal(now, dec.refusal, from_what, from_id, original);
}

// The devices take turns towards their hosts, as a PCIe switch's upstream port arbitrates
// round robin among its downstream ports: each turn a device sends what its host's queue has
// room for, up to one frame of the host's session (the write cap, so combined writes stay
// whole), and the next pump begins with the first device whose turn found no room at all. Polled in
// index order until one found the queue full, device 0 took all the room its host's queue freed and
// a second GPU of the same host writing at once waited until the first had finished.
bool BridgeBox::PumpDevices(uint64_t now) {
  bool progress = false;
  const size_t n = devices_.size();
  std::optional<size_t> waiting;    // the first device whose turn found no room at all
  std::optional<size_t> last_sent;  // the last device that sent
  bool again = true;
  while (again) {
    again = false;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (pump_next_ + k) % n;
      const DeviceTurn turn = PumpDevice(static_cast<DeviceIndex>(i), now);
      progress = progress || turn.sent;
      again = again || turn.more;
      if (turn.refused && !turn.sent && !waiting) waiting = i;
      if (turn.sent) last_sent = i;
    }
  }
  // The first device that found no room before it sent anything goes first next time; else
  // the turns go on after the last that sent.
  if (waiting) {
    pump_next_ = *waiting;
  } else if (last_sent) {
    pump_next_ = (*last_sent + 1) % n;
  }
  return progress;
}

BridgeBox::DeviceTurn BridgeBox::PumpDevice(DeviceIndex d, uint64_t now) {
  DeviceTurn turn;
  Device& dev = devices_[d];
  if (dev.stalled) return turn;
  const std::optional<HostSlot> owner = LiveSlot(dev.owner_node);
  const uint32_t write_cap = owner ? WriteCap(*owner) : 0;
  // One turn's share: a frame's payload, and at least one largest TLP.
  const uint64_t quantum = std::max<uint64_t>(write_cap, DXPU_TLP_MAX_PAYLOAD);
  uint64_t sent_bytes = 0;
  std::vector<Decision> to_device;  // answers to the device, delivered after its Poll
  dev.function->Poll(now, [&](const dxpu_tlp& t) {
    if (sent_bytes >= quantum) {
      turn.more = true;  // its turn is over, not its work: offered again next turn
      return false;
    }
    // Room for it beside the write being combined, which goes into the same queue.
    if (owner && !HostHasRoom(*owner, t, combiner_.pending_bytes())) {
      turn.refused = true;
      return false;
    }
    counters_.tlps_from_devices++;
    turn.sent = true;
    sent_bytes += kTlpTurnHeaderBytes + dxpu_tlp_payload_len(&t);
    const Decision dec = datapath_->FromDevice(d, t, now);
    if (dec.route == Route::kHost && dec.refusal == Refusal::kNone &&
        WriteCombiner::Joinable(dec.tlp)) {
      // A device's DMA goes to its owner only, so the owner's cap is the one.
      if (combiner_.Append(dec.port, dec.tlp, write_cap)) {
        counters_.writes_combined++;
        return true;
      }
      FlushCombined(now);
      combiner_.Start(dec.port, dec.tlp);
      return true;
    }
    FlushCombined(now);  // the device's order: what it wrote before goes first
    if (dec.route == Route::kDevice && dec.refusal == Refusal::kNone) {
      // Peer to peer: across the box's switch (which copies the payload).
      counters_.tlps_peer++;
      switch_.Send(d, dec.port, dec.tlp, now);
    } else if (dec.route == Route::kDevice) {
      // A refused DMA read's UR: it carries no payload, so the copy is whole.
      to_device.push_back(dec);
      LogRefusal(now, dec.refusal, "device", d, t);
    } else {
      Dispatch(dec, now, "device", d, t);
    }
    return true;
  });
  FlushCombined(now);
  for (const Decision& dec : to_device) {
    counters_.tlps_to_devices++;
    devices_[dec.port].function->Receive(dec.tlp, now);
  }
  return turn;
}

// A completion larger than the device's Max Payload Size (a host completes a DMA read in one
// TLP over the fabric) is split here, on the box's PCIe, as the completer may split it: every
// piece but the last ends on an RCB boundary, none carries more than MPS. Only the address's
// low 7 bits (Lower Address) matter for that, so the piece boundaries come out as a completer
// that knew the whole address would draw them.
void BridgeBox::DeliverToDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) {
  pcie::Function& fn = *devices_[d].function;
  const uint32_t mps = fn.max_payload_size();
  const uint32_t carried = dxpu_tlp_payload_len(&tlp);
  if (tlp.kind == DXPU_TLP_MWR && carried > mps && DeliverSplitWrite(d, tlp, now)) return;
  if (tlp.kind != DXPU_TLP_CPLD || carried <= mps || dxpu_tlp_validate(&tlp) != DXPU_TLP_OK) {
    counters_.tlps_to_devices++;
    fn.Receive(tlp, now);  // a malformed one is the device's to count
    return;
  }
  // The bytes this completion carries, as a read of them would ask: from Lower Address.
  const uint32_t lead = tlp.lower_addr & 3U;
  const uint32_t bytes = std::min<uint32_t>(tlp.byte_count, carried - lead);
  const uint32_t last = (lead + bytes - 1) & 3U;
  const auto first_be = static_cast<uint8_t>((0xfU << lead) & 0xfU);
  const auto last_be = static_cast<uint8_t>(0xfU >> (3 - last));
  dxpu_tlp_cpl_split split{};
  if (dxpu_tlp_cpl_split_init(&split, tlp.lower_addr & ~3U, tlp.length_dw, first_be,
                              tlp.length_dw == 1 ? 0 : last_be, kBoxRcb, mps) != DXPU_TLP_OK) {
    counters_.tlps_to_devices++;
    fn.Receive(tlp, now);  // not a shape a completer sends: the device judges it
    return;
  }
  // The pieces, counted on a copy of the split: the device takes them in one step when they
  // are the data its read waits for (pcie::Function::ReceiveSplitCompletion), else one by one.
  dxpu_tlp_cpl_split count = split;
  dxpu_tlp_cpl_piece piece{};
  uint32_t pieces = 0;
  while (dxpu_tlp_cpl_split_next(&count, &piece)) ++pieces;
  counters_.tlps_to_devices += pieces;
  counters_.completions_split += pieces;
  if (fn.ReceiveSplitCompletion(tlp, pieces, now)) return;
  const uint32_t after = tlp.byte_count - bytes;  // what later completions carry
  while (dxpu_tlp_cpl_split_next(&split, &piece)) {
    dxpu_tlp t = tlp;
    t.length_dw = piece.length_dw;
    t.byte_count = static_cast<uint16_t>(piece.byte_count + after);
    t.lower_addr = piece.lower_addr;
    t.payload = tlp.payload + (size_t{piece.offset_dw} * 4);
    // Cut by the codec from a TLP that passed validation: the device need not check it again
    // (the debug builds the tests run do).
    assert(dxpu_tlp_validate(&t) == DXPU_TLP_OK);
    fn.ReceiveValidated(t, now);
  }
}

// A host's own writes come at the device's MPS, but a GPU in another box writes to this one
// through the host proxy as its bridge combined them: up to 4 KiB (docs/bridge.md, "Large
// writes"). On the box's PCIe a write must not be larger than the receiver's MPS, so it is cut
// here, as a switch with a smaller MPS downstream would: at MPS-aligned addresses, each piece
// with its part of the payload. Only writes of whole DWs, which is all the combiner makes.
bool BridgeBox::DeliverSplitWrite(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) {
  pcie::Function& fn = *devices_[d].function;
  const bool whole_dws =
      tlp.first_be == 0xf && (tlp.length_dw == 1 ? tlp.last_be == 0 : tlp.last_be == 0xf);
  if (!whole_dws || dxpu_tlp_validate(&tlp) != DXPU_TLP_OK) return false;
  dxpu_tlp_req_split split{};
  if (dxpu_tlp_req_split_init(&split, tlp.addr, uint64_t{tlp.length_dw} * 4,
                              fn.max_payload_size()) != DXPU_TLP_OK)
    return false;
  dxpu_tlp_req_piece piece{};
  while (dxpu_tlp_req_split_next(&split, &piece)) {
    dxpu_tlp t = tlp;
    t.addr = piece.addr;
    t.length_dw = piece.length_dw;
    t.first_be = piece.first_be;
    t.last_be = piece.last_be;
    t.payload = tlp.payload + piece.offset;
    counters_.tlps_to_devices++;
    counters_.writes_split++;
    fn.Receive(t, now);
  }
  return true;
}

bool BridgeBox::DeliverPeers(uint64_t now) {
  return switch_.Deliver(now, [&](DeviceIndex to, const dxpu_tlp& t) {
    counters_.tlps_to_devices++;
    devices_[to].function->Receive(t, now);
  }) != 0;
}

void BridgeBox::ExpireRequests(uint64_t now) {
  std::array<Decision, 32> out{};
  size_t n = 0;
  do {
    n = datapath_->Expire(now, out);
    // The request is gone; its UR completion says which one it was.
    for (size_t i = 0; i < n; ++i) Dispatch(out[i], now, "host", out[i].port, out[i].tlp);
  } while (n == out.size());
}

void BridgeBox::LogRefusal(uint64_t now, Refusal why, const char* from_what, uint32_t from_id,
                           const dxpu_tlp& tlp) {
  const uint64_t key = (uint64_t{static_cast<uint8_t>(why)} << 40) |
                       (uint64_t{static_cast<uint8_t>(from_what[0])} << 32) | from_id;
  uint64_t suppressed = 0;
  if (!refusal_log_.Allow(key, now, &suppressed)) {
    counters_.refusal_logs_suppressed++;
    return;
  }
  std::string who = fmt::format("{} {}", from_what, from_id);
  if (std::string_view(from_what) == "host" && from_id < hosts_.size())
    who = fmt::format("host {:#x}", hosts_[from_id].node);
  spdlog::warn("refused ({}) from {}: {}{}", RefusalName(why), who, DescribeTlp(tlp),
               suppressed != 0 ? fmt::format(" ({} like it suppressed)", suppressed) : "");
}

void BridgeBox::Run(uint64_t now, const Transmit& tx) {
  now_ = now;
  ExpireRequests(now);
  RetryDeferred(now);
  // Devices and sessions in turn, so that output bounded by the sessions' queues keeps
  // moving; a few rounds at most, so that frames waiting to be received are not starved.
  for (int round = 0; round < 8; ++round) {
    bool progress = DeliverPeers(now);
    progress = PumpDevices(now) || progress;
    RetryDeferred(now);
    FlushHosts(now, tx);
    if (!progress) break;
  }
}

uint64_t BridgeBox::NextDeadline() const {
  uint64_t next = datapath_->NextDeadline();
  for (const Host& h : hosts_)
    if (h.endpoint) next = std::min(next, h.endpoint->NextDeadline());
  for (const Device& d : devices_) next = std::min(next, d.function->NextDeadline());
  return std::min(next, switch_.NextDeadline());
}

// ------------------------------------------------------------------ management

ManageResult BridgeBox::Assign(DeviceIndex d, uint64_t node, uint16_t host_bdf) {
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  if (node == 0) return ManageResult::kBadArgument;
  Device& dev = devices_[d];
  if (dev.owner_node == node) {
    return dev.host_bdf == host_bdf ? ManageResult::kOk : ManageResult::kBadArgument;
  }
  if (dev.quarantined) return ManageResult::kQuarantined;
  if (dev.owner_node != 0) return ManageResult::kDeviceBusy;
  for (const Device& other : devices_) {
    if (other.owner_node == node && other.host_bdf == host_bdf) return ManageResult::kBadArgument;
  }
  dev.owner_node = node;
  dev.host_bdf = host_bdf;
  dev.bars.Reset();
  dev.host_command = 0;
  dev.grants.clear();
  const std::optional<HostSlot> slot = LiveSlot(node);
  datapath_->SetDevice(d, DeviceEntry{dev.box_bdf, host_bdf, slot.value_or(kNoHost)});
  spdlog::info("device {} ({:04x}): assigned to host {:#x} at {:04x}", d, dev.box_bdf, node,
               host_bdf);
  return ManageResult::kOk;
}

ManageResult BridgeBox::Release(DeviceIndex d, uint64_t now) {
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  Device& dev = devices_[d];
  if (dev.owner_node == 0) return ManageResult::kOk;
  now_ = now;
  // The owner's requests still waiting on the device complete with UR.
  std::vector<Decision> urs(config_.box_tags);
  const size_t n = datapath_->ReleaseDevice(d, now, urs);
  for (size_t i = 0; i < n; ++i) Dispatch(urs[i], now, "release", d, urs[i].tlp);
  // Peer writes on their way in belong to the owner that is leaving.
  switch_.DropTo(d);
  // Function Level Reset, then a scrub of its memory.
  const uint64_t scrubbed = dev.function->Reset(pcie::ResetKind::kRelease);
  ProgramBoxBars(dev);
  dev.resets++;
  dev.scrubbed_bytes += scrubbed;
  counters_.releases++;
  counters_.scrubbed_bytes += scrubbed;
  spdlog::info("device {} ({:04x}): released by host {:#x}: reset, {} bytes scrubbed", d,
               dev.box_bdf, dev.owner_node, scrubbed);
  dev.owner_node = 0;
  dev.host_bdf = 0;
  dev.bars.Reset();
  dev.host_command = 0;
  dev.grants.clear();
  dev.quarantined = false;  // reset and scrubbed
  datapath_->SetDevice(d, DeviceEntry{dev.box_bdf, 0, kNoHost});
  return ManageResult::kOk;
}

ManageResult BridgeBox::GrantDma(DeviceIndex d, const DmaWindow& w) {
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  Device& dev = devices_[d];
  if (dev.owner_node == 0) return ManageResult::kNotAssigned;
  if (w.size == 0 || w.device_base + w.size < w.device_base || w.host_base + w.size < w.host_base)
    return ManageResult::kBadArgument;
  for (const DmaWindow& g : dev.grants) {
    // The same grant again (a controller retrying after a lost answer) is in force: OK.
    if (g.device_base == w.device_base && g.host_base == w.host_base && g.size == w.size)
      return ManageResult::kOk;
    if (w.device_base < g.device_base + g.size && g.device_base < w.device_base + w.size)
      return ManageResult::kOverlap;
  }
  if (dev.grants.size() >= kMaxDmaWindows) return ManageResult::kTableFull;
  if (LiveSlot(dev.owner_node) && !datapath_->AddDmaWindow(d, w)) return ManageResult::kTableFull;
  dev.grants.push_back(w);
  return ManageResult::kOk;
}

ManageResult BridgeBox::RevokeDma(DeviceIndex d) {
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  devices_[d].grants.clear();
  datapath_->ClearDmaWindows(d);
  return ManageResult::kOk;
}

ManageResult BridgeBox::DmaWindows(DeviceIndex d, std::vector<DmaWindow>* out) const {
  out->clear();
  if (d >= devices_.size()) return ManageResult::kNoSuchDevice;
  *out = devices_[d].grants;
  return ManageResult::kOk;
}

void BridgeBox::Shutdown(uint64_t now) {
  for (Host& h : hosts_) {
    if (h.endpoint && !h.down) h.endpoint->Close(now, DXFP_CLOSE_SHUTDOWN);
  }
}

// ------------------------------------------------------------------ inspection

std::vector<DeviceStatus> BridgeBox::Devices() const {
  std::vector<DeviceStatus> out;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& dev = devices_[i];
    DeviceStatus s;
    s.index = static_cast<DeviceIndex>(i);
    s.profile = dev.identity.name;
    s.vendor_id = dev.identity.vendor_id;
    s.device_id = dev.identity.device_id;
    s.memory_bytes = dev.identity.memory_bytes;
    s.box_bdf = dev.box_bdf;
    s.host_bdf = dev.host_bdf;
    s.state = dev.quarantined       ? DeviceState::kQuarantined
              : dev.owner_node != 0 ? DeviceState::kAssigned
                                    : DeviceState::kFree;
    s.owner_node = dev.owner_node;
    s.owner_connected = LiveSlot(dev.owner_node).has_value();
    s.dma_windows = dev.grants.size();
    s.resets = dev.resets;
    s.scrubbed_bytes = dev.scrubbed_bytes;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<HostStatus> BridgeBox::Hosts() const {
  std::vector<HostStatus> out;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const Host& h = hosts_[i];
    if (!h.endpoint) continue;
    HostStatus s;
    s.slot = static_cast<HostSlot>(i);
    s.node = h.node;
    s.peer = h.peer.address.ToString();
    s.state = h.endpoint->state();
    s.deferred = h.deferred.size();
    s.framed = h.endpoint->framed();
    s.authenticated = auth_ != nullptr;
    s.pending = h.pending;
    s.session = h.endpoint->counters();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dxpu::bridge
