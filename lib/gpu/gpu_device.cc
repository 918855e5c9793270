// gpu_device.cc - the GPU model's PCIe function: request decoding (configuration, BAR0
// registers and MSI-X table, the memory window), completions, and the send queue that the
// engines fill and Poll drains.
#include "gpu/gpu_device.h"

#include <algorithm>
#include <utility>

#include "core/tlp_build.h"
#include "gpu/capability.h"
#include "gpu/pci_regs.h"
#include "pcie/byte_enables.h"

namespace dxpu::gpu {
namespace {

uint32_t Le32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

void PutLe32(uint8_t* p, uint32_t v) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

bool HasCapability(const DeviceProfile& profile, CapabilityId id) {
  return FindCapabilityOffset(profile, id).has_value();
}

}  // namespace

std::unique_ptr<GpuDevice> GpuDevice::Create(const DeviceProfile& profile,
                                             const GpuOptions& options, std::string* error) {
  const auto fail = [&](std::string why) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (options.max_outstanding_reads < 1 || options.max_outstanding_reads > 256) {
    return fail("max_outstanding_reads must be 1..256");
  }
  if (options.read_completion_boundary != 64 && options.read_completion_boundary != 128) {
    return fail("read_completion_boundary must be 64 or 128");
  }
  if (options.completion_timeout_ns == 0) return fail("completion_timeout_ns must be > 0");
  if (options.pushbuffer_prefetch > Channel::kMaxPushbufferPrefetch) {
    return fail("pushbuffer_prefetch must be 0..64");
  }
  // ValidateProfile lets a function without a compute engine have no roofline; a GPU needs it.
  if (!(profile.roofline.peak_fp32_flops > 0) || !(profile.roofline.memory_bandwidth_bytes > 0)) {
    return fail("the compute engine needs the profile's roofline (peak FLOP/s, bandwidth)");
  }
  const uint64_t memory_bytes =
      options.memory_bytes != 0 ? options.memory_bytes : profile.roofline.memory_bytes;
  if (memory_bytes == 0) return fail("no device memory: memory_bytes and the profile's are 0");

  std::string config_error;
  std::optional<ConfigSpace> config = ConfigSpace::Create(profile, &config_error);
  if (!config) return fail("profile: " + config_error);
  const BarSpec* bar0 = FindBar(profile, 0);
  if (bar0 == nullptr || bar0->size < 4096) return fail("the registers need a BAR0 of >= 4 KiB");
  if (HasCapability(profile, CapabilityId::kMsix)) {
    const MsixSpec& m = profile.msix;
    const uint64_t pba_bytes = (uint64_t{m.vectors} + 63) / 64 * 8;
    if (m.table_bar != 0 || m.pba_bar != 0 ||
        uint64_t{m.table_offset} + uint64_t{m.vectors} * MsixTable::kEntryBytes > bar0->size ||
        m.pba_offset + pba_bytes > bar0->size) {
      return fail("the MSI-X table and PBA must lie in BAR0");
    }
  }
  std::optional<uint8_t> memory_bar;
  uint64_t memory_bar_size = 0;
  for (const BarSpec& b : profile.bars) {
    if (b.index != 0 && b.is_64bit && b.prefetchable && b.size > memory_bar_size) {
      memory_bar = b.index;
      memory_bar_size = b.size;
    }
  }
  return std::unique_ptr<GpuDevice>(
      new GpuDevice(options, std::move(*config), memory_bytes, memory_bar));
}

GpuDevice::GpuDevice(const GpuOptions& options, ConfigSpace config, uint64_t memory_bytes,
                     std::optional<uint8_t> memory_bar)
    : options_(options),
      config_(std::move(config)),
      memory_(memory_bytes),
      memory_bar_(memory_bar),
      dma_(DmaOptions{.requester_id = options.requester_id,
                      .max_outstanding_reads = options.max_outstanding_reads,
                      .completion_timeout_ns = options.completion_timeout_ns}),
      msix_(config_.msix().table_size),
      channel_(
          memory_, dma_, config_, counters_, [this](uint16_t v) { Signal(v); },
          options.pushbuffer_prefetch, options.activity) {
  config_.set_reset_callback([this] { ResetEngines(); });
}

// --- Requests from the bus ---

void GpuDevice::Receive(const dxpu_tlp& tlp, uint64_t now) {
  if (dxpu_tlp_validate(&tlp) != DXPU_TLP_OK) {
    now_ = std::max(now_, now);
    ++counters_.tlps_in;
    ++counters_.malformed;
    return;
  }
  ReceiveValidated(tlp, now);
}

bool GpuDevice::ReceiveSplitCompletion(const dxpu_tlp& cpld, uint32_t pieces, uint64_t now) {
  if (!dma_.TakesAsData(cpld)) return false;
  now_ = std::max(now_, now);
  counters_.tlps_in += pieces;
  OnCompletion(cpld);
  return true;
}

void GpuDevice::ReceiveValidated(const dxpu_tlp& tlp, uint64_t now) {
  now_ = std::max(now_, now);
  ++counters_.tlps_in;
  switch (tlp.kind) {
    case DXPU_TLP_CFGRD0:
    case DXPU_TLP_CFGWR0:
      OnConfigRequest(tlp);
      return;
    case DXPU_TLP_MRD:
      OnMemoryRead(tlp, now_);
      return;
    case DXPU_TLP_MWR:
      OnMemoryWrite(tlp);
      return;
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      OnCompletion(tlp);
      return;
    default:
      Unsupported(tlp);
      return;
  }
}

void GpuDevice::Unsupported(const dxpu_tlp& request) {
  ++counters_.unsupported;
  if (dxpu_tlp_kind_class(request.kind) == DXPU_TLP_CLASS_NON_POSTED) {
    CompleteWithoutData(request, DXPU_TLP_CPL_UR);
  }
}

void GpuDevice::OnConfigRequest(const dxpu_tlp& tlp) {
  const uint32_t dw = tlp.cfg_reg / 4u;
  if (tlp.kind == DXPU_TLP_CFGRD0) {
    ++counters_.cfg_reads;
    OwnedTlp t;
    t.header = Completion(tlp, DXPU_TLP_CPL_SC);  // CplD, 1 DW, Byte Count 4
    t.payload.resize(4);
    PutLe32(t.payload.data(), config_.ReadDw(dw).value);
    out_.push_back(std::move(t));
    return;
  }
  ++counters_.cfg_writes;
  if ((tlp.flags & DXPU_TLP_F_EP) != 0) {  // poisoned: not applied
    ++counters_.malformed;
    CompleteWithoutData(tlp, DXPU_TLP_CPL_UR);
    return;
  }
  // An FLR runs inside WriteDw (ResetEngines); its completion still goes out after.
  config_.WriteDw(dw, Le32(tlp.payload), tlp.first_be);
  CompleteWithoutData(tlp, DXPU_TLP_CPL_SC);
}

void GpuDevice::OnMemoryRead(const dxpu_tlp& tlp, uint64_t now) {
  const uint64_t length = uint64_t{tlp.length_dw} * 4;
  const std::optional<BarHit> hit = config_.DecodeMemory(tlp.addr, length);
  if (!hit) {
    CompleteWithoutData(tlp, DXPU_TLP_CPL_UR);
    return;
  }
  std::vector<uint8_t> data(length, 0);
  if (hit->bar == 0) {
    for (uint32_t i = 0; i < tlp.length_dw; ++i) {
      PutLe32(&data[size_t{i} * 4], ReadBar0(hit->offset + uint64_t{i} * 4, now));
    }
  } else if (hit->bar == memory_bar_) {
    if (!memory_.Read(hit->offset, data)) {  // past the end of device memory
      CompleteWithoutData(tlp, DXPU_TLP_CPL_UR);
      return;
    }
  } else {
    counters_.unmapped_mmio += tlp.length_dw;  // a BAR with nothing behind it: zeros
  }
  ++counters_.mmio_reads;
  CompleteWithData(tlp, data);
}

void GpuDevice::OnMemoryWrite(const dxpu_tlp& tlp) {
  if ((tlp.flags & DXPU_TLP_F_EP) != 0) {  // poisoned data is not written
    ++counters_.malformed;
    return;
  }
  const std::optional<BarHit> hit = config_.DecodeMemory(tlp.addr, uint64_t{tlp.length_dw} * 4);
  if (!hit) {
    ++counters_.dropped_writes;
    return;
  }
  if (hit->bar == 0) {
    ++counters_.mmio_writes;
    for (uint32_t i = 0; i < tlp.length_dw; ++i) {
      WriteBar0(hit->offset + uint64_t{i} * 4, Le32(tlp.payload + size_t{i} * 4),
                pcie::ByteLaneMask(pcie::DwByteEnables(tlp, i)));
    }
  } else if (hit->bar == memory_bar_) {
    if (!memory_.Contains(hit->offset, uint64_t{tlp.length_dw} * 4)) {
      ++counters_.dropped_writes;
      return;
    }
    ++counters_.mmio_writes;
    WriteMemoryWindow(tlp, hit->offset);
  } else {
    ++counters_.mmio_writes;
    counters_.unmapped_mmio += tlp.length_dw;
  }
}

void GpuDevice::WriteMemoryWindow(const dxpu_tlp& tlp, uint64_t offset) {
  // Whole DWs in the middle in one write; the first and last DW byte by byte as enabled.
  const auto write_dw = [&](uint32_t i) {
    const uint8_t be = pcie::DwByteEnables(tlp, i);
    for (uint32_t k = 0; k < 4; ++k) {
      if ((be >> k) & 1u) {
        const size_t at = size_t{i} * 4 + k;
        memory_.Write(offset + at, std::span<const uint8_t>(tlp.payload + at, 1));
      }
    }
  };
  write_dw(0);
  if (tlp.length_dw > 2) {
    const size_t middle = (size_t{tlp.length_dw} - 2) * 4;
    memory_.Write(offset + 4, std::span<const uint8_t>(tlp.payload + 4, middle));
  }
  if (tlp.length_dw > 1) write_dw(tlp.length_dw - 1u);
}

void GpuDevice::OnCompletion(const dxpu_tlp& tlp) {
  const DmaCompletion c = dma_.OnCompletion(tlp);
  switch (c.kind) {
    case DmaCompletion::Kind::kUnexpected:
      ++counters_.unexpected_completions;
      return;
    case DmaCompletion::Kind::kMalformed:
      ++counters_.malformed;
      return;
    case DmaCompletion::Kind::kData:
      counters_.dma_read_bytes += c.data.size();
      break;
    case DmaCompletion::Kind::kFailed:
      break;
  }
  channel_.OnReadCompletion(c);
}

// --- BAR0 ---

std::optional<uint32_t> GpuDevice::ReadDeviceRegister(uint64_t offset, uint64_t now) const {
  const auto counter = [&](uint64_t GpuCounters::*field, bool high) {
    const uint64_t v = counters_.*field - counters_at_reset_.*field;
    return static_cast<uint32_t>(high ? v >> 32 : v);
  };
  const bool high = (offset & 4u) != 0;
  switch (offset) {
    case regs::kId:
      return regs::kIdValue;
    case regs::kVersion:
      return regs::kVersionValue;
    case regs::kMemSizeLo:
      return static_cast<uint32_t>(memory_.size());
    case regs::kMemSizeHi:
      return static_cast<uint32_t>(memory_.size() >> 32);
    case regs::kCounterKernels:
    case regs::kCounterKernels + 4:
      return counter(&GpuCounters::kernels, high);
    case regs::kCounterCopies:
    case regs::kCounterCopies + 4:
      return counter(&GpuCounters::copies, high);
    case regs::kCounterSemaphores:
    case regs::kCounterSemaphores + 4:
      return counter(&GpuCounters::semaphores, high);
    case regs::kCounterBytesRead:
    case regs::kCounterBytesRead + 4:
      return counter(&GpuCounters::dma_read_bytes, high);
    case regs::kCounterBytesWritten:
    case regs::kCounterBytesWritten + 4:
      return counter(&GpuCounters::dma_write_bytes, high);
    case regs::kPtimerLo:
      return static_cast<uint32_t>(now);
    case regs::kPtimerHi:
      return static_cast<uint32_t>(now >> 32);
    default:
      return std::nullopt;
  }
}

uint32_t GpuDevice::ReadBar0(uint64_t offset, uint64_t now) {
  const MsixState m = config_.msix();
  if (m.present && offset >= m.table_offset && offset - m.table_offset < msix_.table_bytes()) {
    return msix_.ReadTable(static_cast<uint32_t>(offset - m.table_offset));
  }
  if (m.present && offset >= m.pba_offset && offset - m.pba_offset < msix_.pba_bytes()) {
    return msix_.ReadPba(static_cast<uint32_t>(offset - m.pba_offset));
  }
  if (offset <= UINT32_MAX) {
    if (const std::optional<uint32_t> v = channel_.ReadRegister(static_cast<uint32_t>(offset))) {
      return *v;
    }
  }
  if (const std::optional<uint32_t> v = ReadDeviceRegister(offset, now)) return *v;
  ++counters_.unmapped_mmio;
  return 0;
}

void GpuDevice::WriteBar0(uint64_t offset, uint32_t value, uint32_t byte_mask) {
  if (byte_mask == 0) return;
  const MsixState m = config_.msix();
  if (m.present && offset >= m.table_offset && offset - m.table_offset < msix_.table_bytes()) {
    msix_.WriteTable(static_cast<uint32_t>(offset - m.table_offset), value, byte_mask);
    return;  // an unmasked vector with its bit pending is sent by the next Poll
  }
  if (m.present && offset >= m.pba_offset && offset - m.pba_offset < msix_.pba_bytes()) {
    return;  // the PBA is read-only
  }
  if (offset <= UINT32_MAX &&
      channel_.WriteRegister(static_cast<uint32_t>(offset), value, byte_mask)) {
    return;
  }
  if (ReadDeviceRegister(offset, 0)) return;  // read-only
  ++counters_.unmapped_mmio;
}

// --- Completions ---

dxpu_tlp GpuDevice::Completion(const dxpu_tlp& request, uint8_t status) const {
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&request, options_.requester_id, status, &c);
  return c;
}

void GpuDevice::CompleteWithData(const dxpu_tlp& request, const std::vector<uint8_t>& data) {
  dxpu_tlp_cpld_split split{};
  if (dxpu_tlp_cpld_split_init(&split, &request, options_.requester_id,
                               options_.read_completion_boundary,
                               config_.max_payload_size()) != DXPU_TLP_OK) {
    CompleteWithoutData(request, DXPU_TLP_CPL_CA);  // not reached for a validated request
    return;
  }
  dxpu_tlp c{};
  while (dxpu_tlp_cpld_split_next(&split, data.data(), &c)) out_.push_back(OwnedTlp::Copy(c));
}

void GpuDevice::CompleteWithoutData(const dxpu_tlp& request, uint8_t status) {
  OwnedTlp t;
  t.header = Completion(request, status);
  if (status == DXPU_TLP_CPL_UR) ++counters_.ur_sent;
  out_.push_back(std::move(t));
}

// --- Engines and the send queue ---

void GpuDevice::Signal(uint16_t vector) {
  msix_.Signal(vector, config_.msix());
  msix_.Deliver(config_.msix(), config_.bus_master_enabled(), options_.requester_id, out_);
}

void GpuDevice::Step(uint64_t now) {
  std::vector<uint64_t> timed_out;
  counters_.completion_timeouts += dma_.ExpireReads(now, &timed_out);
  for (const uint64_t job : timed_out) channel_.OnReadTimeout(job);
  channel_.Step(now, out_);
  msix_.Deliver(config_.msix(), config_.bus_master_enabled(), options_.requester_id, out_);
}

void GpuDevice::Account(const OwnedTlp& t, const dxpu_tlp& view, uint64_t now) {
  ++counters_.tlps_out;
  switch (t.origin) {
    case TlpOrigin::kCompletion:
      break;
    case TlpOrigin::kDmaRead:
      ++counters_.dma_read_requests;
      dma_.OnSent(view, now);
      break;
    case TlpOrigin::kDmaWrite:
      ++counters_.dma_write_requests;
      counters_.dma_write_bytes +=
          dxpu_tlp_read_byte_count(view.length_dw, view.first_be, view.last_be);
      break;
    case TlpOrigin::kInterrupt:
      ++counters_.interrupts_sent;
      break;
  }
}

size_t GpuDevice::Poll(uint64_t now, const Emit& emit) {
  now_ = std::max(now_, now);
  Step(now_);
  size_t taken = 0;
  while (true) {
    if (out_.empty()) {
      Step(now_);
      if (out_.empty()) break;
    }
    const OwnedTlp& t = out_.front();
    const dxpu_tlp view = t.View();
    if (!emit(view)) break;
    Account(t, view, now_);
    out_.pop_front();
    ++taken;
  }
  return taken;
}

uint64_t GpuDevice::NextDeadline() const {
  return std::min(dma_.NextDeadline(), channel_.NextDeadline());
}

void GpuDevice::ResetEngines() {
  channel_.Reset();
  dma_.Reset();
  msix_.Reset();
  std::erase_if(out_, [](const OwnedTlp& t) { return t.origin != TlpOrigin::kCompletion; });
  counters_at_reset_ = counters_;
}

uint64_t GpuDevice::ScrubMemory() {
  memory_.Clear();
  ResetEngines();
  return memory_.size();
}

// --- pcie::Function ---

uint32_t GpuDevice::ConfigReadDw(uint16_t reg) const { return config_.ReadDw(reg / 4u).value; }

void GpuDevice::ConfigWriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) {
  config_.WriteDw(reg / 4u, value, byte_enables);
}

pcie::ConfigLayout GpuDevice::layout() const {
  pcie::ConfigLayout l;
  l.pcie_cap = config_.capability_offset(CapabilityId::kPciExpress).value_or(0);
  if (const std::optional<uint16_t> rebar =
          config_.capability_offset(CapabilityId::kResizableBar)) {
    l.rebar_begin = *rebar;
    l.rebar_end = static_cast<uint16_t>(
        *rebar + CapabilitySize(CapabilityId::kResizableBar, config_.profile()));
  }
  return l;
}

uint64_t GpuDevice::Reset(pcie::ResetKind kind) {
  switch (kind) {
    case pcie::ResetKind::kFunctionLevel:
    case pcie::ResetKind::kHot:
      config_.FunctionLevelReset();
      return 0;
    case pcie::ResetKind::kRelease:
      break;
  }
  // Through Device Control, as the owner's driver would start it, then the scrub.
  if (const std::optional<uint16_t> exp = config_.capability_offset(CapabilityId::kPciExpress)) {
    const auto devctl = static_cast<uint32_t>(*exp + pci::kExpDevCtl);
    const uint32_t value = config_.Read(devctl, 2).value;
    config_.Write(devctl, 2, value | pci::kExpDevCtlBcrFlr);
  }
  return ScrubMemory();
}

pcie::Identity GpuDevice::identity() const {
  const DeviceProfile& p = config_.profile();
  return pcie::Identity{.kind = "gpu",
                        .name = p.name,
                        .vendor_id = p.vendor_id,
                        .device_id = p.device_id,
                        .memory_bytes = memory_.size()};
}

void GpuDevice::VisitCounters(const CounterVisitor& visit) const {
  pcie::VisitFunctionCounters(counters_, visit);
}

GpuDevice* AsGpu(pcie::Function& function) { return dynamic_cast<GpuDevice*>(&function); }

const GpuDevice* AsGpu(const pcie::Function& function) {
  return dynamic_cast<const GpuDevice*>(&function);
}

bool GpuDevice::ReadMemory(uint64_t offset, std::span<uint8_t> out) const {
  return memory_.Read(offset, out);
}

bool GpuDevice::WriteMemory(uint64_t offset, std::span<const uint8_t> in) {
  return memory_.Write(offset, in);
}

}  // namespace dxpu::gpu
