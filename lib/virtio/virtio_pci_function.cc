// virtio_pci_function.cc - the modern virtio PCI transport: request decoding against the
// configuration space and BARs, the common configuration's semantics (feature negotiation,
// device status, queue setup), ISR, notifications, device actions, resets.
#include "virtio/virtio_pci_function.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "core/tlp_build.h"
#include "gpu/pci_regs.h"
#include "pcie/byte_enables.h"
#include "virtio/little_endian.h"
#include "virtio/virtio_pci_profile.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio {
namespace {

// The bytes `mask` selects of `value` merged into `old`, for a field of `bytes` bytes at
// byte `shift` of the DW.
uint64_t Merge(uint64_t old, uint32_t value, uint32_t mask, int shift_bytes, int field_bytes) {
  uint64_t result = old;
  for (int k = 0; k < field_bytes; ++k) {
    const int lane = shift_bytes + k;
    if (lane < 0 || lane > 3 || ((mask >> (8 * lane)) & 0xffu) == 0) continue;
    const uint64_t byte = (value >> (8 * lane)) & 0xffu;
    result = (result & ~(uint64_t{0xff} << (8 * k))) | (byte << (8 * k));
  }
  return result;
}
// Whether `mask` touches any byte of [field, field + bytes) in the DW at `dw`.
bool Touches(uint32_t dw, uint32_t mask, uint32_t field, uint32_t bytes) {
  for (uint32_t b = field; b < field + bytes; ++b) {
    if (b / 4 == dw / 4 && ((mask >> (8 * (b % 4))) & 0xffu) != 0) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<VirtioPciFunction> VirtioPciFunction::Create(std::unique_ptr<VirtioDevice> device,
                                                             const VirtioPciOptions& options,
                                                             std::string* error) {
  const auto fail = [&](std::string why) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (!device) return fail("no device");
  const uint16_t n = device->num_queues();
  if (n == 0 || n > kMaxQueues - 1) return fail("queues must be 1..1023");
  for (uint16_t q = 0; q < n; ++q) {
    const uint16_t max = device->queue_max_size(q);
    if (max == 0 || max > kMaxQueueSize || !std::has_single_bit(max)) {
      return fail("queue " + std::to_string(q) + ": maximum size is not a power of two");
    }
  }
  if (options.max_outstanding_reads < 1 || options.max_outstanding_reads > 256) {
    return fail("max_outstanding_reads must be 1..256");
  }
  if (options.read_completion_boundary != 64 && options.read_completion_boundary != 128) {
    return fail("read_completion_boundary must be 64 or 128");
  }
  if (options.completion_timeout_ns == 0) return fail("completion_timeout_ns must be > 0");
  std::string config_error;
  std::optional<dxpu::gpu::ConfigSpace> config = dxpu::gpu::ConfigSpace::Create(
      VirtioProfile(*device, static_cast<uint16_t>(n + 1)), &config_error);
  if (!config) return fail("profile: " + config_error);
  return std::unique_ptr<VirtioPciFunction>(
      new VirtioPciFunction(std::move(device), options, std::move(*config), kPciCfgCapOffset));
}

VirtioPciFunction::VirtioPciFunction(std::unique_ptr<VirtioDevice> device,
                                     const VirtioPciOptions& options, dxpu::gpu::ConfigSpace config,
                                     uint16_t pci_cfg_cap)
    : options_(options),
      device_(std::move(device)),
      config_(std::move(config)),
      pci_cfg_cap_(pci_cfg_cap),
      dma_(dxpu::gpu::DmaOptions{.requester_id = options.requester_id,
                                 .max_outstanding_reads = options.max_outstanding_reads,
                                 .completion_timeout_ns = options.completion_timeout_ns}),
      msix_(config_.msix().table_size) {
  config_.set_reset_callback([this] {
    ResetDevice();
    msix_.Reset();
    pci_cfg_ = {};
  });
  ResetDevice();
  counters_.device_resets = 0;
}

uint64_t VirtioPciFunction::offered_features() const {
  return device_->device_features() | FeatureBit(kFeatureVersion1) |
         FeatureBit(kFeatureAccessPlatform) | FeatureBit(kFeatureRingIndirectDesc);
}

const SplitVirtqueue* VirtioPciFunction::queue(uint16_t index) const {
  return index < queues_.size() ? queues_[index].get() : nullptr;
}

// ---- TLPs in ----

void VirtioPciFunction::Receive(const dxpu_tlp& tlp, uint64_t now) {
  if (dxpu_tlp_validate(&tlp) != DXPU_TLP_OK) {
    now_ = std::max(now_, now);
    ++counters_.tlps_in;
    ++counters_.malformed;
    return;
  }
  ReceiveValidated(tlp, now);
}

void VirtioPciFunction::ReceiveValidated(const dxpu_tlp& tlp, uint64_t now) {
  now_ = std::max(now_, now);
  ++counters_.tlps_in;
  switch (tlp.kind) {
    case DXPU_TLP_CFGRD0:
    case DXPU_TLP_CFGWR0:
      return OnConfigRequest(tlp);
    case DXPU_TLP_MRD:
      return OnMemoryRead(tlp);
    case DXPU_TLP_MWR:
      return OnMemoryWrite(tlp);
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      return OnCompletion(tlp);
    default:
      ++counters_.unsupported;
      if (dxpu_tlp_kind_class(tlp.kind) == DXPU_TLP_CLASS_NON_POSTED) {
        Complete(tlp, DXPU_TLP_CPL_UR, nullptr);
      }
      return;
  }
}

void VirtioPciFunction::Complete(const dxpu_tlp& request, uint8_t status,
                                 const std::vector<uint8_t>* data) {
  if (data != nullptr) {
    dxpu_tlp_cpld_split split{};
    if (dxpu_tlp_cpld_split_init(&split, &request, options_.requester_id,
                                 options_.read_completion_boundary,
                                 config_.max_payload_size()) == DXPU_TLP_OK) {
      dxpu_tlp c{};
      while (dxpu_tlp_cpld_split_next(&split, data->data(), &c)) {
        out_.push_back(dxpu::gpu::OwnedTlp::Copy(c));
      }
      return;
    }
    status = DXPU_TLP_CPL_CA;
  }
  dxpu::gpu::OwnedTlp t;
  dxpu_tlp_completion_for(&request, options_.requester_id, status, &t.header);
  if (status == DXPU_TLP_CPL_UR) ++counters_.ur_sent;
  out_.push_back(std::move(t));
}

void VirtioPciFunction::OnConfigRequest(const dxpu_tlp& tlp) {
  const auto reg = static_cast<uint16_t>(tlp.cfg_reg & 0xffcu);
  if (tlp.kind == DXPU_TLP_CFGRD0) {
    uint32_t value = IsPciCfgData(reg) ? PciCfgDataRead() : ConfigReadDw(reg);
    std::vector<uint8_t> data(4);
    StoreLe(data, 0, value, 4);
    dxpu::gpu::OwnedTlp t;
    dxpu_tlp_completion_for(&tlp, options_.requester_id, DXPU_TLP_CPL_SC, &t.header);
    t.payload = std::move(data);
    out_.push_back(std::move(t));
    return;
  }
  if ((tlp.flags & DXPU_TLP_F_EP) != 0) {
    ++counters_.malformed;
    return Complete(tlp, DXPU_TLP_CPL_UR, nullptr);
  }
  ConfigWriteDw(reg, LoadLe32(std::span<const uint8_t>(tlp.payload, 4), 0), tlp.first_be);
  Complete(tlp, DXPU_TLP_CPL_SC, nullptr);
}

void VirtioPciFunction::OnMemoryRead(const dxpu_tlp& tlp) {
  const uint64_t length = uint64_t{tlp.length_dw} * 4;
  const std::optional<dxpu::gpu::BarHit> hit = config_.DecodeMemory(tlp.addr, length);
  if (!hit) return Complete(tlp, DXPU_TLP_CPL_UR, nullptr);
  std::vector<uint8_t> data(length);
  for (uint32_t i = 0; i < tlp.length_dw; ++i) {
    StoreLe(data, size_t{i} * 4,
            ReadBarDw(hit->bar, hit->offset + uint64_t{i} * 4,
                      pcie::ByteLaneMask(pcie::DwByteEnables(tlp, i))),
            4);
  }
  Complete(tlp, DXPU_TLP_CPL_SC, &data);
}

void VirtioPciFunction::OnMemoryWrite(const dxpu_tlp& tlp) {
  if ((tlp.flags & DXPU_TLP_F_EP) != 0) {
    ++counters_.malformed;
    return;
  }
  const std::optional<dxpu::gpu::BarHit> hit =
      config_.DecodeMemory(tlp.addr, uint64_t{tlp.length_dw} * 4);
  if (!hit) {
    ++counters_.dropped_writes;
    return;
  }
  for (uint32_t i = 0; i < tlp.length_dw; ++i) {
    WriteBarDw(
        hit->bar, hit->offset + uint64_t{i} * 4,
        LoadLe32(std::span<const uint8_t>(tlp.payload, size_t{tlp.length_dw} * 4), size_t{i} * 4),
        pcie::ByteLaneMask(pcie::DwByteEnables(tlp, i)));
  }
}

void VirtioPciFunction::OnCompletion(const dxpu_tlp& tlp) {
  switch (dma_.OnCompletion(tlp)) {
    case dxpu::gpu::DmaCompletion::Kind::kUnexpected:
      ++counters_.unexpected_completions;
      break;
    case dxpu::gpu::DmaCompletion::Kind::kMalformed:
      ++counters_.malformed;
      break;
    case dxpu::gpu::DmaCompletion::Kind::kData:
    case dxpu::gpu::DmaCompletion::Kind::kFailed:
      break;
  }
}

// ---- BARs ----

uint32_t VirtioPciFunction::ReadBarDw(uint8_t bar, uint64_t offset, uint32_t mask) {
  if (bar == kMsixBar) {
    if (offset < msix_.table_bytes()) return msix_.ReadTable(static_cast<uint32_t>(offset));
    if (offset >= kMsixPbaOffset && offset - kMsixPbaOffset < msix_.pba_bytes()) {
      return msix_.ReadPba(static_cast<uint32_t>(offset - kMsixPbaOffset));
    }
    return 0;
  }
  if (bar != kStructuresBar || mask == 0) return 0;
  const auto region = static_cast<uint32_t>(offset / kRegionSize) * kRegionSize;
  const auto at = static_cast<uint32_t>(offset - region);
  switch (region) {
    case kCommonOffset:
      return ReadCommonDw(at);
    case kIsrOffset: {
      if (at != 0 || (mask & 0xffu) == 0) return 0;
      const uint8_t isr = isr_;
      isr_ = 0;  // 4.1.4.5: reading the ISR status clears it
      return isr;
    }
    case kDeviceCfgOffset:
      return ReadDeviceCfgDw(at, mask);
    default:
      return 0;  // the notification region reads 0
  }
}

void VirtioPciFunction::WriteBarDw(uint8_t bar, uint64_t offset, uint32_t value, uint32_t mask) {
  if (mask == 0) return;
  if (bar == kMsixBar) {
    if (offset < msix_.table_bytes()) {
      msix_.WriteTable(static_cast<uint32_t>(offset), value, mask);
    }
    return;  // the PBA is read-only
  }
  if (bar != kStructuresBar) return;
  const auto region = static_cast<uint32_t>(offset / kRegionSize) * kRegionSize;
  const auto at = static_cast<uint32_t>(offset - region);
  switch (region) {
    case kCommonOffset:
      return WriteCommonDw(at, value, mask);
    case kDeviceCfgOffset:
      return WriteDeviceCfgDw(at, value, mask);
    case kNotifyOffset:
      return Notify(at);
    default:
      return;  // ISR is read-only
  }
}

uint32_t VirtioPciFunction::ReadCommonDw(uint32_t at) const {
  const QueueRegs* q = queue_select_ < queue_regs_.size() ? &queue_regs_[queue_select_] : nullptr;
  const uint64_t features = offered_features();
  switch (at) {
    case kDeviceFeatureSelect:
      return device_feature_select_;
    case kDeviceFeature:
      return device_feature_select_ < 2
                 ? static_cast<uint32_t>(features >> (32 * device_feature_select_))
                 : 0;
    case kDriverFeatureSelect:
      return driver_feature_select_;
    case kDriverFeature:
      return driver_feature_select_ < 2
                 ? static_cast<uint32_t>(driver_features_ >> (32 * driver_feature_select_))
                 : 0;
    case kConfigMsixVector:  // and num_queues
      return config_msix_vector_ | (uint32_t{device_->num_queues()} << 16);
    case kDeviceStatus:  // status, config_generation, queue_select
      return status_ | (uint32_t{config_generation_} << 8) | (uint32_t{queue_select_} << 16);
    case kQueueSize:  // and queue_msix_vector; an absent queue reads size 0
      return q == nullptr ? 0xffff0000u : q->size | (uint32_t{q->msix_vector} << 16);
    case kQueueEnable:  // and queue_notify_off: queue i notifies at i * multiplier
      return q == nullptr ? 0 : uint32_t{q->enabled} | (uint32_t{queue_select_} << 16);
    case kQueueDesc:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->desc);
    case kQueueDesc + 4:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->desc >> 32);
    case kQueueDriver:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->driver);
    case kQueueDriver + 4:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->driver >> 32);
    case kQueueDevice:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->device);
    case kQueueDevice + 4:
      return q == nullptr ? 0 : static_cast<uint32_t>(q->device >> 32);
    default:
      return 0;  // queue_notify_data, queue_reset (features not offered), past the end
  }
}

void VirtioPciFunction::WriteCommonDw(uint32_t at, uint32_t value, uint32_t mask) {
  const bool negotiating = (status_ & kStatusFeaturesOk) == 0;
  const auto field = [&](uint32_t offset, int bytes, uint64_t old) {
    return Merge(old, value, mask, static_cast<int>(offset) - static_cast<int>(at), bytes);
  };
  const auto touched = [&](uint32_t offset, uint32_t bytes) {
    return Touches(at, mask, offset, bytes);
  };
  if (touched(kDeviceFeatureSelect, 4)) {
    device_feature_select_ =
        static_cast<uint32_t>(field(kDeviceFeatureSelect, 4, device_feature_select_));
  }
  if (touched(kDriverFeatureSelect, 4)) {
    driver_feature_select_ =
        static_cast<uint32_t>(field(kDriverFeatureSelect, 4, driver_feature_select_));
  }
  if (touched(kDriverFeature, 4) && negotiating && driver_feature_select_ < 2) {
    const int shift = 32 * static_cast<int>(driver_feature_select_);
    const uint64_t word = field(kDriverFeature, 4, (driver_features_ >> shift) & 0xffffffffu);
    driver_features_ = (driver_features_ & ~(uint64_t{0xffffffff} << shift)) | (word << shift);
  }
  if (touched(kConfigMsixVector, 2)) {
    const auto v = static_cast<uint16_t>(field(kConfigMsixVector, 2, config_msix_vector_));
    // 4.1.5.1.2: a vector the function does not have reads back NO_VECTOR.
    config_msix_vector_ = v < msix_.vectors() ? v : kNoVector;
  }
  if (touched(kQueueSelect, 2)) {
    queue_select_ = static_cast<uint16_t>(field(kQueueSelect, 2, queue_select_));
  }
  // Written last among its DW's fields: status after a queue_select in the same write.
  if (touched(kDeviceStatus, 1))
    WriteStatus(static_cast<uint8_t>(field(kDeviceStatus, 1, status_)));

  if (queue_select_ >= queue_regs_.size()) return;  // an absent queue: writes ignored
  QueueRegs& q = queue_regs_[queue_select_];
  if (q.enabled) {
    // 4.1.4.3.2: the driver does not change an enabled queue; queue_msix_vector aside.
    if (touched(kQueueMsixVector, 2)) {
      const auto v = static_cast<uint16_t>(field(kQueueMsixVector, 2, q.msix_vector));
      q.msix_vector = v < msix_.vectors() ? v : kNoVector;
    }
    return;
  }
  if (touched(kQueueSize, 2)) q.size = static_cast<uint16_t>(field(kQueueSize, 2, q.size));
  if (touched(kQueueMsixVector, 2)) {
    const auto v = static_cast<uint16_t>(field(kQueueMsixVector, 2, q.msix_vector));
    q.msix_vector = v < msix_.vectors() ? v : kNoVector;
  }
  for (auto [offset, reg] : {std::pair{kQueueDesc, &q.desc}, std::pair{kQueueDriver, &q.driver},
                             std::pair{kQueueDevice, &q.device}}) {
    if (touched(offset, 8)) *reg = field(offset, 8, *reg);
  }
  if (touched(kQueueEnable, 2) && (field(kQueueEnable, 2, 0) & 1u) != 0) {
    EnableQueue(queue_select_);
  }
}

uint32_t VirtioPciFunction::ReadDeviceCfgDw(uint32_t at, uint32_t mask) const {
  const uint32_t size = device_->config_size();
  uint32_t value = 0;
  // Whole DW, or its halves, or bytes, as the driver's access width chose.
  auto read = [&](uint32_t lane, uint32_t bytes) {
    if (at + lane + bytes > size) return;
    value |= device_->ReadConfig(at + lane, bytes) << (8 * lane);
  };
  if (mask == 0xffffffffu) {
    if (at + 4 <= size) return device_->ReadConfig(at, 4);
  }
  if (mask == 0xffffu || mask == 0xffff0000u) {
    read(mask == 0xffffu ? 0 : 2, 2);
    return value;
  }
  for (uint32_t k = 0; k < 4; ++k) {
    if (((mask >> (8 * k)) & 0xffu) != 0) read(k, 1);
  }
  return value;
}

void VirtioPciFunction::WriteDeviceCfgDw(uint32_t at, uint32_t value, uint32_t mask) {
  const uint32_t size = device_->config_size();
  auto write = [&](uint32_t lane, uint32_t bytes) {
    if (at + lane + bytes > size) return;
    const uint32_t v = bytes == 4 ? value : (value >> (8 * lane)) & ((1u << (8 * bytes)) - 1);
    device_->WriteConfig(at + lane, bytes, v);
  };
  if (mask == 0xffffffffu) return write(0, 4);
  if (mask == 0xffffu) return write(0, 2);
  if (mask == 0xffff0000u) return write(2, 2);
  for (uint32_t k = 0; k < 4; ++k) {
    if (((mask >> (8 * k)) & 0xffu) != 0) write(k, 1);
  }
}

void VirtioPciFunction::Notify(uint32_t at) {
  const uint32_t index = at / kNotifyOffMultiplier;
  if (index >= queues_.size() || !queues_[index] || (status_ & kStatusDriverOk) == 0 ||
      (status_ & kStatusNeedsReset) != 0) {
    ++counters_.bad_notifies;
    return;
  }
  ++counters_.notifies;
  queues_[index]->Kick();
}

// ---- Device status, queues ----

void VirtioPciFunction::WriteStatus(uint8_t value) {
  if (value == 0) {
    ++counters_.device_resets;
    return ResetDevice();
  }
  const uint8_t before = status_;
  // DEVICE_NEEDS_RESET is the device's; the driver cannot set or clear it.
  uint8_t next = static_cast<uint8_t>((value & ~kStatusNeedsReset) | (before & kStatusNeedsReset));
  if ((next & kStatusFeaturesOk) != 0 && (before & kStatusFeaturesOk) == 0) {
    const uint64_t required = FeatureBit(kFeatureVersion1) | FeatureBit(kFeatureAccessPlatform);
    // 3.1.1: the device refuses by leaving FEATURES_OK clear. Without VERSION_1 the driver
    // speaks legacy, which this transport has not; without ACCESS_PLATFORM it would bypass
    // the host's DMA API, which the host side (dxpu.ko) needs for every DMA.
    if ((driver_features_ & ~offered_features()) != 0 ||
        (driver_features_ & required) != required) {
      ++counters_.features_refused;
      next = static_cast<uint8_t>(next & ~kStatusFeaturesOk);
    } else {
      device_->SetDriverFeatures(driver_features_);
    }
  }
  if ((next & kStatusDriverOk) != 0 && (before & kStatusDriverOk) == 0) {
    if ((next & kStatusFeaturesOk) == 0) {
      next = static_cast<uint8_t>(next & ~kStatusDriverOk);  // DRIVER_OK before FEATURES_OK
    } else {
      device_->Start();
    }
  }
  status_ = next;
}

void VirtioPciFunction::EnableQueue(uint16_t index) {
  QueueRegs& q = queue_regs_[index];
  const VirtqueueLayout layout{
      .index = index,
      .size = q.size,
      .desc = q.desc,
      .driver = q.driver,
      .device = q.device,
      .indirect = (driver_features_ & FeatureBit(kFeatureRingIndirectDesc)) != 0};
  std::string why = SplitVirtqueue::ValidateLayout(layout);
  if (why.empty() && q.size > device_->queue_max_size(index)) {
    why = "queue " + std::to_string(index) + ": size above its maximum";
  }
  if (!why.empty()) return SetNeedsReset(why);
  q.enabled = true;
  queues_[index] = std::make_unique<SplitVirtqueue>(
      layout, options_.limits, dma_,
      SplitVirtqueue::Hooks{
          .submit = [this](Request r) { device_->Submit(std::move(r), now_); },
          .needs_reset = [this](std::string w) { SetNeedsReset(std::move(w)); },
          .interrupt = [this, index] { SignalQueue(index); },
          .max_read_request = [this] { return config_.max_read_request_size(); },
          .max_payload = [this] { return config_.max_payload_size(); },
      });
}

void VirtioPciFunction::SetNeedsReset(std::string why) {
  if ((status_ & kStatusNeedsReset) != 0) return;
  ++counters_.needs_reset;
  needs_reset_why_ = std::move(why);
  status_ |= kStatusNeedsReset;
  for (auto& q : queues_) {
    if (q) q->Stop();
  }
  SignalConfig();
}

void VirtioPciFunction::SignalConfig() {
  isr_ |= kIsrConfig;
  if (config_msix_vector_ != kNoVector) Signal(config_msix_vector_);
}

void VirtioPciFunction::SignalQueue(uint16_t index) {
  isr_ |= kIsrQueue;
  if (index < queue_regs_.size() && queue_regs_[index].msix_vector != kNoVector) {
    Signal(queue_regs_[index].msix_vector);
  }
}

void VirtioPciFunction::Signal(uint16_t vector) {
  msix_.Signal(vector, config_.msix());
  msix_.Deliver(config_.msix(), config_.bus_master_enabled(), options_.requester_id, out_);
}

void VirtioPciFunction::ResetDevice() {
  device_->Reset();
  dma_.Reset();
  queues_.clear();
  queues_.resize(device_->num_queues());
  queue_regs_.assign(device_->num_queues(), QueueRegs{});
  for (uint16_t i = 0; i < queue_regs_.size(); ++i) {
    queue_regs_[i].size = device_->queue_max_size(i);
  }
  device_feature_select_ = 0;
  driver_feature_select_ = 0;
  driver_features_ = 0;
  config_msix_vector_ = kNoVector;
  status_ = 0;
  queue_select_ = 0;
  isr_ = 0;
  needs_reset_why_.clear();
  // What the old driver's work queued (DMA, interrupts) goes; answers to requests stay.
  std::erase_if(out_, [](const dxpu::gpu::OwnedTlp& t) {
    return t.origin != dxpu::gpu::TlpOrigin::kCompletion;
  });
}

// ---- Running ----

void VirtioPciFunction::RunDevice(uint64_t now) {
  // A device that always has something is cut off each Step: Poll comes again.
  for (int actions = 0; actions < 4096; ++actions) {
    std::optional<DeviceAction> action = device_->Poll(now);
    if (!action) return;
    if (auto* c = std::get_if<Completion>(&*action)) {
      SplitVirtqueue* q = c->queue < queues_.size() ? queues_[c->queue].get() : nullptr;
      if (q == nullptr || q->stopped() || !config_.bus_master_enabled()) {
        ++counters_.dropped_completions;
        continue;
      }
      q->Complete(*c, out_);
    } else if (auto* r = std::get_if<GuestRead>(&*action)) {
      ++counters_.guest_reads;
      const uint64_t tag = r->tag;
      if (r->length > kMaxGuestRead || (status_ & kStatusNeedsReset) != 0 ||
          !config_.bus_master_enabled()) {
        ++counters_.guest_read_errors;
        device_->OnGuestRead(tag, {}, false, now);
        continue;
      }
      dma_.Read(r->address, r->length, config_.max_read_request_size(),
                [this, tag](bool ok, std::vector<uint8_t> data) {
                  if (!ok) ++counters_.guest_read_errors;
                  device_->OnGuestRead(tag, data, ok, now_);
                });
    } else if (std::holds_alternative<ConfigChanged>(*action)) {
      ++config_generation_;
      SignalConfig();
    } else if (auto* n = std::get_if<NeedsReset>(&*action)) {
      SetNeedsReset(n->why);
    }
  }
}

void VirtioPciFunction::Step(uint64_t now) {
  const size_t expired = dma_.Expire(now);
  counters_.completion_timeouts += expired;
  dma_.RunDeferred();
  RunDevice(now);
  if (config_.bus_master_enabled()) dma_.Issue(out_);
  msix_.Deliver(config_.msix(), config_.bus_master_enabled(), options_.requester_id, out_);
}

void VirtioPciFunction::Account(const dxpu::gpu::OwnedTlp& t, const dxpu_tlp& view, uint64_t now) {
  ++counters_.tlps_out;
  switch (t.origin) {
    case dxpu::gpu::TlpOrigin::kCompletion:
      break;
    case dxpu::gpu::TlpOrigin::kDmaRead:
      ++counters_.dma_read_requests;
      dma_.OnSent(view, now);
      break;
    case dxpu::gpu::TlpOrigin::kDmaWrite:
      ++counters_.dma_write_requests;
      break;
    case dxpu::gpu::TlpOrigin::kInterrupt:
      ++counters_.interrupts_sent;
      break;
  }
}

size_t VirtioPciFunction::Poll(uint64_t now, const Emit& emit) {
  now_ = std::max(now_, now);
  size_t taken = 0;
  while (true) {
    if (out_.empty()) {
      Step(now_);
      if (out_.empty()) break;
    }
    const dxpu::gpu::OwnedTlp& t = out_.front();
    const dxpu_tlp view = t.View();
    if (!emit(view)) break;
    Account(t, view, now_);
    out_.pop_front();
    ++taken;
  }
  return taken;
}

uint64_t VirtioPciFunction::NextDeadline() const {
  return std::min(dma_.NextDeadline(), device_->NextDeadline());
}

// ---- Configuration space ----

uint32_t VirtioPciFunction::PciCfgOverlay(uint16_t reg, uint32_t value) const {
  if (pci_cfg_cap_ == 0) return value;
  if (reg == pci_cfg_cap_ + 4) return (value & ~0xffu) | pci_cfg_.bar;
  if (reg == pci_cfg_cap_ + kCapOffset) return pci_cfg_.offset;
  if (reg == pci_cfg_cap_ + kCapLength) return pci_cfg_.length;
  if (reg == pci_cfg_cap_ + kCapPciCfgData) return pci_cfg_.data;
  return value;
}

uint32_t VirtioPciFunction::ConfigReadDw(uint16_t reg) const {
  reg = static_cast<uint16_t>(reg & 0xffcu);
  return PciCfgOverlay(reg, config_.ReadDw(reg / 4u).value);
}

void VirtioPciFunction::PciCfgWrite(uint16_t reg, uint32_t value, uint8_t byte_enables) {
  const uint32_t mask = pcie::ByteLaneMask(byte_enables);
  if (reg == pci_cfg_cap_ + 4 && (mask & 0xffu) != 0) pci_cfg_.bar = static_cast<uint8_t>(value);
  if (reg == pci_cfg_cap_ + kCapOffset) {
    pci_cfg_.offset = (pci_cfg_.offset & ~mask) | (value & mask);
  }
  if (reg == pci_cfg_cap_ + kCapLength) {
    pci_cfg_.length = (pci_cfg_.length & ~mask) | (value & mask);
  }
  if (reg != pci_cfg_cap_ + kCapPciCfgData) return;
  pci_cfg_.data = (pci_cfg_.data & ~mask) | (value & mask);
  // 4.1.4.9: a write of pci_cfg_data writes `length` (1, 2 or 4) bytes at `offset` of `bar`,
  // the data's low bytes going to the offset; an access the window cannot express is ignored.
  const uint32_t len = pci_cfg_.length;
  const uint32_t lane = pci_cfg_.offset & 3u;
  if ((len != 1 && len != 2 && len != 4) || lane + len > 4) return;
  const uint32_t field = len == 4 ? 0xffffffffu : (1u << (8 * len)) - 1;
  WriteBarDw(pci_cfg_.bar, pci_cfg_.offset & ~3u, pci_cfg_.data << (8 * lane), field << (8 * lane));
}

uint32_t VirtioPciFunction::PciCfgDataRead() {
  const uint32_t len = pci_cfg_.length;
  const uint32_t lane = pci_cfg_.offset & 3u;
  if ((len == 1 || len == 2 || len == 4) && lane + len <= 4) {
    const uint32_t field = len == 4 ? 0xffffffffu : (1u << (8 * len)) - 1;
    pci_cfg_.data =
        (ReadBarDw(pci_cfg_.bar, pci_cfg_.offset & ~3u, field << (8 * lane)) >> (8 * lane)) & field;
  }
  return pci_cfg_.data;
}

void VirtioPciFunction::ConfigWriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) {
  reg = static_cast<uint16_t>(reg & 0xffcu);
  if (pci_cfg_cap_ != 0 && reg >= pci_cfg_cap_ + 4 && reg <= pci_cfg_cap_ + kCapPciCfgData) {
    return PciCfgWrite(reg, value, byte_enables);
  }
  config_.WriteDw(reg / 4u, value, byte_enables);  // an Initiate FLR runs ResetDevice
}

pcie::ConfigLayout VirtioPciFunction::layout() const {
  return pcie::ConfigLayout{
      .pcie_cap = config_.capability_offset(dxpu::gpu::CapabilityId::kPciExpress).value_or(0)};
}

uint64_t VirtioPciFunction::Reset(pcie::ResetKind kind) {
  config_.FunctionLevelReset();
  ++counters_.device_resets;
  if (kind != pcie::ResetKind::kRelease) return 0;
  return device_->Release(options_.release_policy);
}

pcie::Identity VirtioPciFunction::identity() const {
  const dxpu::gpu::DeviceProfile& p = config_.profile();
  return pcie::Identity{.kind = std::string(device_->kind()),
                        .name = p.name,
                        .vendor_id = p.vendor_id,
                        .device_id = p.device_id,
                        .memory_bytes = device_->memory_bytes()};
}

void VirtioPciFunction::VisitCounters(const CounterVisitor& visit) const {
  const VirtioPciCounters& c = counters_;
  pcie::VisitFunctionCounters(c, visit);
  visit("notifies", c.notifies);
  visit("bad_notifies", c.bad_notifies);
  visit("features_refused", c.features_refused);
  visit("needs_reset", c.needs_reset);
  visit("device_resets", c.device_resets);
  visit("guest_reads", c.guest_reads);
  visit("guest_read_errors", c.guest_read_errors);
  visit("dropped_completions", c.dropped_completions);
  // The queues' counters, summed: requests, completions, DMA errors.
  VirtqueueCounters sum;
  for (const auto& q : queues_) {
    if (!q) continue;
    const VirtqueueCounters& k = q->counters();
    sum.requests += k.requests;
    sum.completions += k.completions;
    sum.truncated += k.truncated;
    sum.unknown_completions += k.unknown_completions;
    sum.dma_errors += k.dma_errors;
    sum.suppressed += k.suppressed;
  }
  visit("requests", sum.requests);
  visit("completions", sum.completions);
  visit("truncated_completions", sum.truncated);
  visit("unknown_completions", sum.unknown_completions);
  visit("dma_errors", sum.dma_errors);
  visit("interrupts_suppressed", sum.suppressed);
  device_->VisitCounters(visit);
}

}  // namespace dxpu::virtio
