// config_space.cc - configuration requests against the register file, the side effects of
// the registers that have them (PMCSR, Resizable BAR, Power Budgeting, Initiate FLR), and the
// decoded state the model reads.
#include "gpu/config_space.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "gpu/bar_registers.h"
#include "gpu/capability_builders.h"
#include "gpu/pci_regs.h"
#include "gpu/power_on_image.h"

namespace dxpu::gpu {
namespace {

constexpr uint32_t kAllOnes = 0xffffffff;
constexpr uint32_t kMaxRebarCode = 27;  // 128 TiB, the largest size the capability register lists

uint16_t At(uint16_t base, uint32_t reg) { return static_cast<uint16_t>(base + reg); }

// Whether an enabled byte of the DW at dw_offset falls in [reg, reg + size).
bool Touches(uint32_t dw_offset, uint8_t byte_enables, uint32_t reg, uint32_t size) {
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t o = dw_offset + k;
    if (((byte_enables >> k) & 1u) != 0 && o >= reg && o < reg + size) return true;
  }
  return false;
}

ConfigStatus CheckAccess(uint32_t offset, uint32_t size) {
  if (offset >= ConfigSpace::kSize) return ConfigStatus::kOutOfRange;
  if (size != 1 && size != 2 && size != 4) return ConfigStatus::kBadSize;
  if ((offset & 3u) + size > 4) return ConfigStatus::kCrossesDw;
  return ConfigStatus::kOk;
}

}  // namespace

std::string_view ToString(ConfigStatus status) {
  switch (status) {
    case ConfigStatus::kOk:
      return "ok";
    case ConfigStatus::kOutOfRange:
      return "offset past the 4 KiB configuration space";
    case ConfigStatus::kBadSize:
      return "size is not 1, 2 or 4 bytes";
    case ConfigStatus::kCrossesDw:
      return "access crosses a DW boundary";
    case ConfigStatus::kBadByteEnables:
      return "byte enables wider than 4 bits";
  }
  return "unknown";
}

std::optional<ConfigSpace> ConfigSpace::Create(const DeviceProfile& profile, std::string* error) {
  if (std::optional<std::string> e = ValidateProfile(profile)) {
    if (error != nullptr) *error = std::move(*e);
    return std::nullopt;
  }
  return ConfigSpace(profile);
}

ConfigSpace::ConfigSpace(DeviceProfile profile)
    : profile_(std::move(profile)),
      power_on_(BuildPowerOnImage(profile_)),
      live_(power_on_),
      pm_(FindCapabilityOffset(profile_, CapabilityId::kPowerManagement)),
      exp_(FindCapabilityOffset(profile_, CapabilityId::kPciExpress)),
      msi_(FindCapabilityOffset(profile_, CapabilityId::kMsi)),
      msix_(FindCapabilityOffset(profile_, CapabilityId::kMsix)),
      rebar_(FindCapabilityOffset(profile_, CapabilityId::kResizableBar)),
      power_budget_(FindCapabilityOffset(profile_, CapabilityId::kPowerBudgeting)) {}

ConfigRead ConfigSpace::Read(uint32_t offset, uint32_t size) const {
  const ConfigStatus status = CheckAccess(offset, size);
  if (status != ConfigStatus::kOk) return {kAllOnes, status};
  return {live_.Read(offset, size), ConfigStatus::kOk};
}

ConfigStatus ConfigSpace::Write(uint32_t offset, uint32_t size, uint32_t value) {
  const ConfigStatus status = CheckAccess(offset, size);
  if (status != ConfigStatus::kOk) return status;
  const uint32_t shift = offset & 3u;
  const uint32_t bytes = size == 4 ? kAllOnes : (uint32_t{1} << (8 * size)) - 1;
  WriteBytes(offset & ~3u, (value & bytes) << (8 * shift),
             static_cast<uint8_t>(((1u << size) - 1) << shift));
  return ConfigStatus::kOk;
}

ConfigRead ConfigSpace::ReadDw(uint32_t dw_index) const {
  if (dw_index >= kSize / 4) return {kAllOnes, ConfigStatus::kOutOfRange};
  return {live_.Read(dw_index * 4, 4), ConfigStatus::kOk};
}

ConfigStatus ConfigSpace::WriteDw(uint32_t dw_index, uint32_t value, uint8_t byte_enables) {
  if (dw_index >= kSize / 4) return ConfigStatus::kOutOfRange;
  if (byte_enables > 0xf) return ConfigStatus::kBadByteEnables;
  WriteBytes(dw_index * 4, value, byte_enables);
  return ConfigStatus::kOk;
}

void ConfigSpace::WriteBytes(uint32_t dw_offset, uint32_t value, uint8_t byte_enables) {
  const PowerState before = power_state();
  for (uint32_t k = 0; k < 4; ++k) {
    if (((byte_enables >> k) & 1u) != 0) {
      live_.WriteByte(dw_offset + k, static_cast<uint8_t>(value >> (8 * k)));
    }
  }
  if (pm_ && Touches(dw_offset, byte_enables, At(*pm_, pci::kPmCtrl), 1)) {
    AfterPowerControlWrite(before);
  }
  if (rebar_ && Touches(dw_offset, byte_enables, *rebar_,
                        CapabilitySize(CapabilityId::kResizableBar, profile_))) {
    AfterResizableBarWrite();
  }
  if (power_budget_ && Touches(dw_offset, byte_enables, At(*power_budget_, pci::kPwrDsr), 1)) {
    AfterPowerBudgetWrite();
  }
  // Last: a reset makes every other effect moot.
  if (exp_ && (Read16(At(*exp_, pci::kExpDevCtl)) & pci::kExpDevCtlBcrFlr) != 0) {
    FunctionLevelReset();
  }
}

void ConfigSpace::AfterPowerControlWrite(PowerState before) {
  // D1 and D2 are not supported: a write asking for one completes, but the state stays.
  const PowerState now = power_state();
  if (now == PowerState::kD1 || now == PowerState::kD2) {
    const uint16_t pmcsr = At(*pm_, pci::kPmCtrl);
    live_.ClearBits(pmcsr, 1, pci::kPmCtrlStateMask);
    live_.SetBits(pmcsr, 1, static_cast<uint32_t>(before));
  }
}

void ConfigSpace::AfterResizableBarWrite() {
  uint32_t n = 0;
  for (const BarSpec& bar : profile_.bars) {
    if (bar.resizable_sizes == 0) continue;
    const uint16_t ctrl = At(*rebar_, pci::kRebarCtrl + 8 * n);
    ++n;
    const uint32_t code = (Read32(ctrl) & pci::kRebarCtrlBarSize) >> pci::kRebarCtrlBarShift;
    const uint64_t current = BarSize(live_, bar);
    if (code <= kMaxRebarCode && ((bar.resizable_sizes >> code) & 1u) != 0) {
      const uint64_t size = (uint64_t{1} << 20) << code;
      if (size != current) ResizeBar(live_, bar, size);
    } else {
      // A size the capability does not offer: keep the current one.
      live_.ClearBits(ctrl, 4, pci::kRebarCtrlBarSize);
      live_.SetBits(ctrl, 4, build::RebarSizeCode(current) << pci::kRebarCtrlBarShift);
    }
  }
}

void ConfigSpace::AfterPowerBudgetWrite() {
  const uint32_t select = live_.Read(At(*power_budget_, pci::kPwrDsr), 1);
  const uint32_t data = select < profile_.power_budget.size()
                            ? EncodePowerBudgetEntry(profile_.power_budget[select])
                            : 0u;
  const uint16_t reg = At(*power_budget_, pci::kPwrData);
  live_.ClearBits(reg, 4, kAllOnes);
  live_.SetBits(reg, 4, data);
}

void ConfigSpace::SetHardwareBits(uint16_t offset, uint8_t size, uint32_t bits) {
  live_.SetBits(offset, size, bits);
}

void ConfigSpace::ClearHardwareBits(uint16_t offset, uint8_t size, uint32_t bits) {
  live_.ClearBits(offset, size, bits);
}

void ConfigSpace::FunctionLevelReset() {
  live_ = power_on_;
  if (reset_callback_) reset_callback_();
}

bool ConfigSpace::memory_enabled() const {
  return (Read16(pci::kCommand) & pci::kCommandMemory) != 0;
}

bool ConfigSpace::bus_master_enabled() const {
  return (Read16(pci::kCommand) & pci::kCommandMaster) != 0;
}

bool ConfigSpace::intx_disabled() const {
  return (Read16(pci::kCommand) & pci::kCommandIntxDisable) != 0;
}

PowerState ConfigSpace::power_state() const {
  if (!pm_) return PowerState::kD0;
  return static_cast<PowerState>(Read16(At(*pm_, pci::kPmCtrl)) & pci::kPmCtrlStateMask);
}

std::optional<BarState> ConfigSpace::bar(uint8_t index) const {
  const BarSpec* spec = FindBar(profile_, index);
  if (spec == nullptr) return std::nullopt;
  return BarState{.index = spec->index,
                  .address = BarAddress(live_, *spec),
                  .size = BarSize(live_, *spec),
                  .is_64bit = spec->is_64bit,
                  .prefetchable = spec->prefetchable};
}

std::vector<BarState> ConfigSpace::bars() const {
  std::vector<BarState> out;
  for (uint8_t i = 0; i < pci::kNumBars; ++i) {
    if (std::optional<BarState> b = bar(i)) out.push_back(*b);
  }
  return out;
}

std::optional<BarHit> ConfigSpace::DecodeMemory(uint64_t address, uint64_t length) const {
  if (!memory_enabled() || power_state() != PowerState::kD0) return std::nullopt;
  length = std::max<uint64_t>(length, 1);
  for (const BarState& b : bars()) {
    if (address < b.address) continue;
    const uint64_t offset = address - b.address;
    if (offset < b.size && length <= b.size - offset) return BarHit{b.index, offset};
  }
  return std::nullopt;
}

MsiState ConfigSpace::msi() const {
  if (!msi_) return {};
  const uint16_t base = *msi_;
  const uint16_t flags = Read16(At(base, pci::kMsiFlags));
  const auto capable = static_cast<uint8_t>(1u << ((flags & pci::kMsiFlagsQmask) >> 1));
  const uint32_t requested = 1u << ((flags & pci::kMsiFlagsQsize) >> 4);
  const bool masking = (flags & pci::kMsiFlagsMaskBit) != 0;
  return MsiState{
      .present = true,
      .enabled = (flags & pci::kMsiFlagsEnable) != 0,
      .address = Read32(At(base, pci::kMsiAddressLo)) |
                 (uint64_t{Read32(At(base, pci::kMsiAddressHi))} << 32),
      .data = Read16(At(base, pci::kMsiData64)),
      .vectors_capable = capable,
      .vectors_enabled = static_cast<uint8_t>(std::min<uint32_t>(requested, capable)),
      .per_vector_masking = masking,
      .mask = masking ? Read32(At(base, pci::kMsiMask64)) : 0u,
      .pending = masking ? Read32(At(base, pci::kMsiPending64)) : 0u,
  };
}

MsixState ConfigSpace::msix() const {
  if (!msix_) return {};
  const uint16_t base = *msix_;
  const uint16_t flags = Read16(At(base, pci::kMsixFlags));
  const uint32_t table = Read32(At(base, pci::kMsixTable));
  const uint32_t pba = Read32(At(base, pci::kMsixPba));
  return MsixState{
      .present = true,
      .enabled = (flags & pci::kMsixFlagsEnable) != 0,
      .function_masked = (flags & pci::kMsixFlagsMaskAll) != 0,
      .table_size = static_cast<uint16_t>((flags & pci::kMsixFlagsQsize) + 1),
      .table_bar = static_cast<uint8_t>(table & pci::kMsixBirMask),
      .table_offset = table & ~pci::kMsixBirMask,
      .pba_bar = static_cast<uint8_t>(pba & pci::kMsixBirMask),
      .pba_offset = pba & ~pci::kMsixBirMask,
  };
}

std::optional<uint64_t> ConfigSpace::msix_table_address() const {
  const MsixState m = msix();
  if (!m.present) return std::nullopt;
  const std::optional<BarState> b = bar(m.table_bar);
  if (!b) return std::nullopt;
  return b->address + m.table_offset;
}

uint32_t ConfigSpace::max_payload_size() const {
  if (!exp_) return 128;
  const uint32_t code = (Read16(At(*exp_, pci::kExpDevCtl)) & pci::kExpDevCtlPayload) >> 5;
  const auto supported =
      static_cast<uint32_t>(std::countr_zero(profile_.max_payload_supported >> 7));
  return 128u << std::min(code, supported);
}

uint32_t ConfigSpace::max_read_request_size() const {
  if (!exp_) return 128;
  const uint32_t code = (Read16(At(*exp_, pci::kExpDevCtl)) & pci::kExpDevCtlReadrq) >> 12;
  return 128u << std::min<uint32_t>(code, 5);
}

std::optional<uint16_t> ConfigSpace::capability_offset(CapabilityId id) const {
  return FindCapabilityOffset(profile_, id);
}

}  // namespace dxpu::gpu
