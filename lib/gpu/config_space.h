// config_space.h - the 4 KiB PCIe configuration space of one modelled GPU function: a type 0
// header, BARs with sizing semantics, and the profile's capabilities, every register with the
// access type the PCI and PCIe specifications give it. It answers configuration requests at
// byte granularity (Read/Write) or as configuration TLPs carry them (one DW and its First DW
// Byte Enables), and tells the rest of the model what software programmed: BAR addresses,
// decode and bus-master enables, MSI/MSI-X, MPS/MRRS. Writing Initiate FLR resets the space
// to its power-on state and calls the owner's reset callback.
//
// Not thread-safe: the owner serializes requests (as a PCIe function sees them, in order).
#ifndef DXPU_LIB_GPU_CONFIG_SPACE_H_
#define DXPU_LIB_GPU_CONFIG_SPACE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/device_profile.h"
#include "gpu/register_file.h"
#include "pcie/function.h"

namespace dxpu::gpu {

// Why an access was refused. A refused read returns all-ones; a refused write changes nothing.
enum class ConfigStatus : uint8_t {
  kOk,
  kOutOfRange,      // offset (or DW index * 4) at or past 4096
  kBadSize,         // size other than 1, 2 or 4
  kCrossesDw,       // the bytes span two DWs: no single configuration TLP can carry that
  kBadByteEnables,  // byte enables wider than 4 bits
};

std::string_view ToString(ConfigStatus status);

struct ConfigRead {
  uint32_t value = 0xffffffff;
  ConfigStatus status = ConfigStatus::kOk;

  bool ok() const { return status == ConfigStatus::kOk; }
};

// A BAR as software programmed it (what pcie::Function::Bars() reports).
using BarState = pcie::Bar;

// Where a memory request lands: which BAR, and the offset in it.
struct BarHit {
  uint8_t bar = 0;
  uint64_t offset = 0;

  bool operator==(const BarHit&) const = default;
};

struct MsiState {
  bool present = false;
  bool enabled = false;
  uint64_t address = 0;
  uint16_t data = 0;
  uint8_t vectors_capable = 0;
  uint8_t vectors_enabled = 0;  // 1 << Multiple Message Enable, at most vectors_capable
  bool per_vector_masking = false;
  uint32_t mask = 0;     // Mask Bits (0 without per-vector masking)
  uint32_t pending = 0;  // Pending Bits
};

struct MsixState {
  bool present = false;
  bool enabled = false;
  bool function_masked = false;
  uint16_t table_size = 0;  // vectors
  uint8_t table_bar = 0;
  uint32_t table_offset = 0;
  uint8_t pba_bar = 0;
  uint32_t pba_offset = 0;
};

enum class PowerState : uint8_t { kD0 = 0, kD1 = 1, kD2 = 2, kD3hot = 3 };

class ConfigSpace {
 public:
  static constexpr uint32_t kSize = RegisterFile::kSize;
  using ResetCallback = std::function<void()>;

  // Nullopt, with *error set, when the profile fails ValidateProfile.
  static std::optional<ConfigSpace> Create(const DeviceProfile& profile,
                                           std::string* error = nullptr);

  ConfigSpace(const ConfigSpace&) = delete;
  ConfigSpace& operator=(const ConfigSpace&) = delete;
  ConfigSpace(ConfigSpace&&) = default;
  ConfigSpace& operator=(ConfigSpace&&) = default;
  ~ConfigSpace() = default;

  // --- Configuration requests (from the bus) ---
  //
  // Values are little-endian, as a CPU reads a register: byte k of the access (offset + k) is
  // bits 8k+7..8k. `size` is 1, 2 or 4 bytes, not crossing a DW boundary.
  ConfigRead Read(uint32_t offset, uint32_t size) const;
  ConfigStatus Write(uint32_t offset, uint32_t size, uint32_t value);
  // As a CfgRd0/CfgWr0 TLP carries it: DW `dw_index` (0..1023, i.e. the TLP's cfg_reg / 4)
  // and the First DW Byte Enables, bit k enabling byte k (the TLP payload's byte k). A read
  // returns the whole DW (configuration reads have no side effects, so the byte enables of a
  // read do not change the answer); a write with byte enables 0000b changes nothing.
  ConfigRead ReadDw(uint32_t dw_index) const;
  ConfigStatus WriteDw(uint32_t dw_index, uint32_t value, uint8_t byte_enables);

  // --- The device side ---
  //
  // Sets or clears bits whatever their access type, as the device's hardware does: Status
  // error bits, Device Status, AER status, MSI Pending Bits, Transactions Pending.
  void SetHardwareBits(uint16_t offset, uint8_t size, uint32_t bits);
  void ClearHardwareBits(uint16_t offset, uint8_t size, uint32_t bits);

  // Called after a Function Level Reset has put the configuration space back to its
  // power-on state (the model resets its engines there). It may read or write this space. It
  // moves with the ConfigSpace: capture the owner, not the ConfigSpace's current address.
  void set_reset_callback(ResetCallback callback) { reset_callback_ = std::move(callback); }

  // A Function Level Reset, as writing Initiate FLR does: every register returns to its
  // power-on value (sticky bits included: this model keeps none), then the callback runs.
  void FunctionLevelReset();

  // --- What software programmed ---
  const DeviceProfile& profile() const { return profile_; }
  bool memory_enabled() const;      // Command: Memory Space Enable
  bool bus_master_enabled() const;  // Command: Bus Master Enable
  bool intx_disabled() const;       // Command: Interrupt Disable
  PowerState power_state() const;

  // The implemented BAR with this index (not the upper half of a 64-bit BAR).
  std::optional<BarState> bar(uint8_t index) const;
  std::vector<BarState> bars() const;
  // The BAR that claims the `length` bytes at `address`, if the function decodes memory
  // (Memory Space Enable, in D0) and they lie inside one BAR.
  std::optional<BarHit> DecodeMemory(uint64_t address, uint64_t length) const;

  MsiState msi() const;
  MsixState msix() const;
  // Bus address of the MSI-X table: its BAR's address plus the table offset.
  std::optional<uint64_t> msix_table_address() const;

  // Device Control's Max_Payload_Size and Max_Read_Request_Size in bytes. Programming an
  // MPS above Max_Payload_Size Supported is undefined in PCIe; the model then uses the
  // supported maximum. The reserved MRRS encodings (110b, 111b) act as 4096 bytes.
  uint32_t max_payload_size() const;
  uint32_t max_read_request_size() const;

  // Where the capability sits, if the profile has it.
  std::optional<uint16_t> capability_offset(CapabilityId id) const;

  // The registers with their access types (for dumps and checks).
  const RegisterFile& registers() const { return live_; }
  std::span<const uint8_t, kSize> bytes() const { return live_.bytes(); }

 private:
  explicit ConfigSpace(DeviceProfile profile);

  uint16_t Read16(uint16_t offset) const { return static_cast<uint16_t>(live_.Read(offset, 2)); }
  uint32_t Read32(uint16_t offset) const { return live_.Read(offset, 4); }

  // Writes the enabled bytes of one DW, then applies the registers' side effects.
  void WriteBytes(uint32_t dw_offset, uint32_t value, uint8_t byte_enables);
  void AfterPowerControlWrite(PowerState before);
  void AfterResizableBarWrite();
  void AfterPowerBudgetWrite();

  DeviceProfile profile_;
  RegisterFile power_on_;
  RegisterFile live_;
  std::optional<uint16_t> pm_;
  std::optional<uint16_t> exp_;
  std::optional<uint16_t> msi_;
  std::optional<uint16_t> msix_;
  std::optional<uint16_t> rebar_;
  std::optional<uint16_t> power_budget_;
  ResetCallback reset_callback_;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_CONFIG_SPACE_H_
