// rtl_datapath.cc - see rtl_datapath.h; the register map is docs/rtl.md's.
#include "rtl-sim/datapath/rtl_datapath.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "Vrtl_datapath_w256.h"
#include "Vrtl_datapath_w64.h"
#include "rtl-sim/datapath/datapath_regs.h"
#include "rtl-sim/datapath/verilated_model.h"
#include "rtl-sim/datapath/verilated_ports.h"

namespace dxpu::bridge {
namespace {

namespace regs = rtl::regs;
using regs::Op;

bool Wraps(uint64_t base, uint64_t size) { return base + size < base; }

bool Overlap(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  return a < b + b_size && b < a + a_size;
}

// A beat of the TLP stream.
struct Beat {
  std::vector<uint32_t> data;
  uint32_t keep = 0;
};

template <typename Model, unsigned kWidth>
class RtlDatapathImpl final : public RtlDatapath {
 public:
  static constexpr size_t kBeatBytes = kWidth / 8;

  explicit RtlDatapathImpl(const GoldenDatapathConfig& config)
      : config_(config), sim_("datapath", "rtl_datapath") {
    Model& m = sim_.m();
    m.rst = 1;
    m.now = 0;
    m.s_tlp_valid = 0;
    m.s_tlp_sop = 0;
    m.s_tlp_eop = 0;
    m.s_tlp_len = 0;
    m.s_tlp_keep = 0;
    m.s_tlp_from_device = 0;
    m.s_tlp_port = 0;
    rtl::SetBits(m.s_tlp_hdr, std::span<const uint32_t>{});
    rtl::SetBits(m.s_tlp_data, std::span<const uint32_t>{});
    m.m_tlp_ready = 1;
    m.reg_wr_en = 0;
    m.reg_wr_addr = 0;
    m.reg_wr_data = 0;
    m.reg_rd_addr = 0;
    for (int i = 0; i < 4; ++i) Tick();
    m.rst = 0;
    Tick();
  }
  RtlDatapathImpl(const RtlDatapathImpl&) = delete;
  RtlDatapathImpl& operator=(const RtlDatapathImpl&) = delete;
  RtlDatapathImpl(RtlDatapathImpl&&) = delete;
  RtlDatapathImpl& operator=(RtlDatapathImpl&&) = delete;
  ~RtlDatapathImpl() override = default;

  // Checks the model and programs the configuration; empty, or why not.
  std::string Start() {
    if (ReadReg(regs::kId) != regs::kIdValue) return "the RTL model's ID register is wrong";
    const uint64_t p = ReadReg(regs::kParams);
    params_ = {static_cast<uint16_t>(p), static_cast<uint16_t>(p >> 16),
               static_cast<uint16_t>(p >> 32), static_cast<uint16_t>(p >> 48)};
    if (config_.devices > params_.devices)
      return "devices: the RTL model holds " + std::to_string(params_.devices);
    if (config_.host_slots > params_.hosts)
      return "host_slots: the RTL model holds " + std::to_string(params_.hosts);
    if (config_.box_tags > params_.tags)
      return "box_tags: the RTL model holds " + std::to_string(params_.tags);
    if (config_.dma_windows_per_device > params_.dma_windows)
      return "dma_windows_per_device: the RTL model holds " + std::to_string(params_.dma_windows);
    WriteReg(regs::kBridgeRid, config_.bridge_rid);
    WriteReg(regs::kDevices, config_.devices);
    WriteReg(regs::kHostSlots, config_.host_slots);
    WriteReg(regs::kBoxTags, config_.box_tags);
    WriteReg(regs::kMaxPerHost, config_.max_pending_per_host);
    WriteReg(regs::kCplTimeout, config_.completion_timeout_ns);
    WriteReg(regs::kQuarantine, config_.tag_quarantine_ns);
    RunCommand(regs::Command(Op::kInit, 0, 0), {});
    return {};
  }

  // ---- control plane ----

  bool SetDevice(DeviceIndex d, const DeviceEntry& entry) override {
    if (d >= config_.devices || (entry.owner != kNoHost && entry.owner >= config_.host_slots))
      return false;
    WriteReg(regs::Entry(d), uint64_t{entry.box_rid} | uint64_t{entry.host_rid} << 16 |
                                 uint64_t{entry.owner} << 32);
    Settle({});
    return true;
  }

  bool SetBarWindow(DeviceIndex d, size_t bar, const BarWindow& window) override {
    if (d >= config_.devices || bar >= kMaxBars) return false;
    if (window.size != 0 &&
        (Wraps(window.host_base, window.size) || Wraps(window.device_base, window.size)))
      return false;
    const HostSlot owner = Owner(d);
    if (window.size != 0 && owner != kNoHost) {
      // Another BAR of the host's devices in the way (the hardware leaves this to firmware).
      for (DeviceIndex o = 0; o < config_.devices; ++o) {
        if (Owner(o) != owner) continue;
        for (size_t b = 0; b < kMaxBars; ++b) {
          const uint64_t size = ReadReg(regs::Bar(o, b, regs::kSize));
          if (size == 0 || (o == d && b == bar)) continue;
          if (Overlap(window.host_base, window.size, ReadReg(regs::Bar(o, b, regs::kBase)), size))
            return false;
        }
      }
    }
    WriteReg(regs::Bar(d, bar, regs::kSize), 0);
    WriteReg(regs::Bar(d, bar, regs::kBase), window.host_base);
    WriteReg(regs::Bar(d, bar, regs::kLand), window.device_base);
    WriteReg(regs::Bar(d, bar, regs::kSize), window.size);
    return true;
  }

  bool AddDmaWindow(DeviceIndex d, const DmaWindow& window) override {
    if (d >= config_.devices || window.size == 0 || Wraps(window.device_base, window.size) ||
        Wraps(window.host_base, window.size))
      return false;
    size_t used = 0, free_slot = params_.dma_windows;
    for (size_t w = 0; w < params_.dma_windows; ++w) {
      const uint64_t size = ReadReg(regs::Dma(d, w, regs::kSize));
      if (size == 0) {
        free_slot = std::min(free_slot, w);
        continue;
      }
      ++used;
      if (Overlap(window.device_base, window.size, ReadReg(regs::Dma(d, w, regs::kBase)), size))
        return false;
    }
    if (used >= config_.dma_windows_per_device || free_slot == params_.dma_windows) return false;
    WriteReg(regs::Dma(d, free_slot, regs::kBase), window.device_base);
    WriteReg(regs::Dma(d, free_slot, regs::kLand), window.host_base);
    WriteReg(regs::Dma(d, free_slot, regs::kSize), window.size);
    return true;
  }

  void ClearDmaWindows(DeviceIndex d) override {
    if (d < config_.devices) RunCommand(regs::Command(Op::kClearDma, d, 0), {});
  }

  size_t ReleaseDevice(DeviceIndex d, uint64_t now, std::span<Decision> out) override {
    if (d >= config_.devices) return 0;
    sim_.m().now = now;
    return RunCommand(regs::Command(Op::kReleaseDevice, d, Limit(out)), out);
  }

  void ReleaseHost(HostSlot host) override {
    if (host < config_.host_slots) RunCommand(regs::Command(Op::kReleaseHost, host, 0), {});
  }

  // ---- data plane ----

  Decision FromHost(HostSlot host, const dxpu_tlp& tlp, uint64_t now) override {
    return Stream(false, host, tlp, now);
  }

  Decision FromDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) override {
    return Stream(true, d, tlp, now);
  }

  size_t Expire(uint64_t now, std::span<Decision> out) override {
    sim_.m().now = now;
    return RunCommand(regs::Command(Op::kExpire, 0, Limit(out)), out);
  }

  uint64_t NextDeadline() const override { return ReadReg(regs::kNextDeadline); }

  DatapathCounters counters() const override {
    DatapathCounters c;
    c.to_device = ReadReg(regs::kCounters + regs::kToDevice);
    c.to_host = ReadReg(regs::kCounters + regs::kToHost);
    c.peer = ReadReg(regs::kCounters + regs::kPeer);
    c.retries = ReadReg(regs::kCounters + regs::kRetries);
    c.ur_sent = ReadReg(regs::kCounters + regs::kUrSent);
    c.dropped = ReadReg(regs::kCounters + regs::kDropped);
    c.pending = ReadReg(regs::kCounters + regs::kPending);
    c.tags_free = ReadReg(regs::kCounters + regs::kTagsFree);
    for (size_t r = 0; r < c.refused.size(); ++r)
      c.refused[r] = ReadReg(static_cast<uint16_t>(regs::kCounters + regs::kRefused + r));
    return c;
  }

  RtlDatapathParams params() const override { return params_; }
  uint64_t cycles() const override { return sim_.cycles(); }
  uint64_t payload_mismatches() const override { return payload_mismatches_; }
  uint64_t bad_headers() const override { return bad_headers_; }

  bool Trace(const std::string& path) override { return sim_.Trace(path); }

 private:
  static uint32_t Limit(std::span<Decision> out) {
    return static_cast<uint32_t>(std::min<size_t>(out.size(), UINT32_MAX));
  }

  void Tick() { sim_.Tick(); }

  void WriteReg(uint16_t addr, uint64_t value) {
    Model& m = sim_.m();
    m.reg_wr_en = 1;
    m.reg_wr_addr = addr;
    m.reg_wr_data = value;
    Tick();
    m.reg_wr_en = 0;
  }

  // Register reads are combinational: no clock.
  uint64_t ReadReg(uint16_t addr) const {
    sim_.m().reg_rd_addr = addr;
    sim_.m().eval();
    return sim_.m().reg_rd_data;
  }

  HostSlot Owner(DeviceIndex d) const {
    return static_cast<HostSlot>(ReadReg(regs::Entry(d)) >> 32);
  }

  // Clocks until no command runs and the output is empty; the completions a command emits go
  // to `out` (more than it holds would be an RTL fault: they are counted as bad). Returns how
  // many.
  size_t Settle(std::span<Decision> out) {
    Model& m = sim_.m();
    size_t n = 0;
    for (int guard = 0; guard < 1 << 20; ++guard) {
      m.eval();
      if (!m.busy && !m.m_tlp_valid) return n;
      if (m.m_tlp_valid && m.m_tlp_ready) {
        const std::array<uint8_t, 16> h = rtl::HeaderBytes(rtl::GetBits(m.m_tlp_hdr, 4));
        Decision d;
        if (!Decode(m, h.data(), {}, &d) || n >= out.size())
          ++bad_headers_;
        else
          out[n++] = d;
      }
      Tick();
    }
    spdlog::error("rtl datapath: a command never finished");
    ++bad_headers_;
    return n;
  }

  size_t RunCommand(uint64_t command, std::span<Decision> out) {
    WriteReg(regs::kCommand, command);
    return Settle(out);
  }

  // The decision on an output's first beat; `rest` is the record after the header (payload
  // and digest) that went in, for a TLP passed through.
  bool Decode(const Model& m, const uint8_t* hdr, std::span<const uint8_t> rest,
              Decision* d) const {
    d->route = static_cast<Route>(m.m_tlp_route);
    d->refusal = static_cast<Refusal>(m.m_tlp_refusal);
    d->port = d->route == Route::kDrop ? 0 : m.m_tlp_port;
    d->tlp = {};
    if (d->route == Route::kDrop || d->route == Route::kRetry) return true;
    const size_t len = m.m_tlp_len;
    const bool answer = d->refusal != Refusal::kNone;
    const size_t hdr_len = answer ? len : len - rest.size();
    if (len > scratch_.size() || hdr_len > 16 || (answer && len != 12)) return false;
    std::memcpy(scratch_.data(), hdr, hdr_len);
    if (!answer) std::copy(rest.begin(), rest.end(), scratch_.begin() + static_cast<long>(hdr_len));
    return dxpu_tlp_decode(scratch_.data(), len, &d->tlp) == DXPU_TLP_OK;
  }

  // One TLP through the data path: its beats in, its decision out.
  Decision Stream(bool from_device, uint16_t port, const dxpu_tlp& tlp, uint64_t now) {
    size_t len = 0;
    if (dxpu_tlp_encode(&tlp, record_.data(), record_.size(), &len) != DXPU_TLP_OK) {
      // Not a TLP lib/core would have delivered: nothing to stream.
      ++bad_headers_;
      return {Route::kDrop, 0, Refusal::kMalformed, {}};
    }
    const size_t hdr_len = dxpu_tlp_header_len(&tlp);
    const std::span<const uint8_t> rest(record_.data() + hdr_len, len - hdr_len);
    // Payload beats as the header: byte 0 of a beat in its top bits (byte j in bits
    // DATA_WIDTH-1-8j : DATA_WIDTH-8-8j); keep bit i enables bits 32i+31:32i.
    const size_t nbeats = std::max<size_t>(1, (rest.size() + kBeatBytes - 1) / kBeatBytes);
    beats_.resize(nbeats);
    for (size_t b = 0; b < nbeats; ++b) {
      const size_t off = b * kBeatBytes;
      const size_t n = off < rest.size() ? std::min(kBeatBytes, rest.size() - off) : 0;
      beats_[b].data = rtl::BeatWords(rest.data() + off, n, kWidth);
      beats_[b].keep = rtl::BeatKeep(n, kWidth);
    }
    const std::vector<uint32_t> hdr_words = rtl::HeaderWords({record_.data(), hdr_len});

    Model& m = sim_.m();
    m.now = now;
    m.s_tlp_from_device = from_device;
    m.s_tlp_port = port;
    m.s_tlp_len = static_cast<uint32_t>(len);
    rtl::SetBits(m.s_tlp_hdr, hdr_words);
    m.m_tlp_ready = 1;
    Decision decision{Route::kDrop, 0, Refusal::kMalformed, {}};
    size_t in = 0, out = 0;
    bool answer = false;
    for (int guard = 0; out < nbeats && guard < 1 << 20; ++guard) {
      const bool offer = in < nbeats;
      m.s_tlp_valid = offer;
      if (offer) {
        rtl::SetBits(m.s_tlp_data, beats_[in].data);
        m.s_tlp_keep = beats_[in].keep;
        m.s_tlp_sop = in == 0;
        m.s_tlp_eop = in + 1 == nbeats;
      }
      m.eval();
      const bool took = offer && m.s_tlp_ready;
      if (m.m_tlp_valid) {
        if (out == 0) {
          const std::array<uint8_t, 16> h = rtl::HeaderBytes(rtl::GetBits(m.m_tlp_hdr, 4));
          if (!Decode(m, h.data(), rest, &decision)) ++bad_headers_;
          answer = decision.refusal != Refusal::kNone || decision.route == Route::kDrop;
        }
        // A passed TLP's payload comes out as it went in; a refused one's is dropped.
        const std::vector<uint32_t> data = rtl::GetBits(m.m_tlp_data, kWidth / 32);
        const uint32_t keep = static_cast<uint32_t>(m.m_tlp_keep);
        if (answer ? keep != 0 : (keep != beats_[out].keep || data != beats_[out].data))
          ++payload_mismatches_;
        ++out;
      }
      Tick();
      if (took) ++in;
    }
    m.s_tlp_valid = 0;
    if (out < nbeats) {
      spdlog::error("rtl datapath: a TLP never came out");
      ++bad_headers_;
    }
    if (decision.route != Route::kDrop && decision.route != Route::kRetry && !answer)
      decision.tlp.payload = tlp.payload;  // as the golden model: the input's payload
    return decision;
  }

  GoldenDatapathConfig config_;
  RtlDatapathParams params_;
  mutable rtl::VerilatedModel<Model> sim_;  // register reads evaluate it
  uint64_t payload_mismatches_ = 0;
  uint64_t bad_headers_ = 0;
  std::array<uint8_t, DXPU_TLP_MAX_SIZE> record_{};
  mutable std::array<uint8_t, DXPU_TLP_MAX_SIZE> scratch_{};
  std::vector<Beat> beats_;
};

template <typename Impl>
std::unique_ptr<RtlDatapath> Make(const GoldenDatapathConfig& config, std::string* error) {
  auto dp = std::make_unique<Impl>(config);
  std::string why = dp->Start();
  if (!why.empty()) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  }
  return dp;
}

}  // namespace

std::unique_ptr<RtlDatapath> RtlDatapath::Create(const GoldenDatapathConfig& config,
                                                 unsigned data_width, std::string* error) {
  std::string why = CheckConfig(config);
  if (why.empty() && data_width != 64 && data_width != 256) why = "data_width must be 64 or 256";
  if (!why.empty()) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  }
  if (data_width == 64) return Make<RtlDatapathImpl<Vrtl_datapath_w64, 64>>(config, error);
  return Make<RtlDatapathImpl<Vrtl_datapath_w256, 256>>(config, error);
}

std::unique_ptr<Datapath> MakeRtlDatapath(const GoldenDatapathConfig& config, std::string* error) {
  return RtlDatapath::Create(config, 256, error);
}

}  // namespace dxpu::bridge
