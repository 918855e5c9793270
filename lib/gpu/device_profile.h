// device_profile.h - what a modelled GPU looks like from the PCIe side: IDs, class code, BARs,
// interrupts, link, the capabilities and where each sits in configuration space, and the
// roofline figures the compute engine times kernels with. A plain value; ConfigSpace builds a
// function's power-on configuration space from one, and ValidateProfile says whether it can.
#ifndef DXPU_LIB_GPU_DEVICE_PROFILE_H_
#define DXPU_LIB_GPU_DEVICE_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/capability.h"

namespace dxpu::gpu {

// A memory BAR. I/O BARs are not modelled (no GPU of interest needs one).
struct BarSpec {
  uint8_t index = 0;  // 0..5; a 64-bit BAR also occupies index + 1 (its upper half)
  uint64_t size = 0;  // power-on size in bytes: a power of two, at least 128
  bool is_64bit = false;
  bool prefetchable = false;
  // Resizable BAR: the sizes the Resizable BAR capability offers for this BAR, bit k meaning
  // 1 MiB << k (k = 0..27, 1 MiB to 128 TiB, as in the capability register). 0: not
  // resizable. When non-zero it must include `size`.
  uint32_t resizable_sizes = 0;

  bool operator==(const BarSpec&) const = default;
};

// MSI, always with a 64-bit message address (every GPU of interest has one).
struct MsiSpec {
  uint8_t vectors = 1;  // Multiple Message Capable: 1, 2, 4, 8, 16 or 32
  bool per_vector_masking = false;

  bool operator==(const MsiSpec&) const = default;
};

// MSI-X: the table (16 bytes per vector) and the Pending Bit Array live in BARs.
struct MsixSpec {
  uint16_t vectors = 0;  // 1..2048
  uint8_t table_bar = 0;
  uint32_t table_offset = 0;  // 8-byte aligned
  uint8_t pba_bar = 0;
  uint32_t pba_offset = 0;  // 8-byte aligned

  bool operator==(const MsixSpec&) const = default;
};

// Link speed as the Link Capabilities register encodes it (Supported Link Speeds Vector bit).
enum class LinkSpeed : uint8_t {
  k2_5GT = 1,  // Gen1
  k5GT = 2,    // Gen2
  k8GT = 3,    // Gen3
  k16GT = 4,   // Gen4
  k32GT = 5,   // Gen5
};

struct LinkSpec {
  LinkSpeed speed = LinkSpeed::k16GT;  // maximum, and the one the modelled link trained at
  uint8_t width = 16;                  // lanes: 1, 2, 4, 8, 12, 16 or 32

  bool operator==(const LinkSpec&) const = default;
};

// One Power Budgeting entry: the power drawn in a PM state, of a kind, from a rail.
struct PowerBudgetEntry {
  enum class PmState : uint8_t { kD0 = 0, kD1 = 1, kD2 = 2, kD3 = 3 };
  enum class Type : uint8_t {
    kPmeAux = 0,
    kAuxiliary = 1,
    kIdle = 2,
    kSustained = 3,
    kSustainedEmergency = 4,
    kMaximumEmergency = 5,
    kMaximum = 7,
  };
  enum class Rail : uint8_t { k12V = 0, k3_3V = 1, k1_5V = 2, kThermal = 7 };

  PmState state = PmState::kD0;
  Type type = Type::kMaximum;
  Rail rail = Rail::k12V;
  uint16_t watts = 0;

  bool operator==(const PowerBudgetEntry&) const = default;
};

// The Power Budgeting Data register for an entry: Base Power with Data Scale 1.0x, watts up
// to 239 as themselves and above that the PCIe encodings F0h (<= 250 W), F1h (<= 275 W),
// F2h (<= 300 W) and F3h (more than 300 W).
uint32_t EncodePowerBudgetEntry(const PowerBudgetEntry& entry);

// Figures the compute engine's roofline model will use; carried, not used, by the config space.
struct Roofline {
  double peak_fp32_flops = 0;         // FLOP/s
  double memory_bandwidth_bytes = 0;  // bytes/s
  uint64_t launch_overhead_ns = 0;    // per kernel
  uint64_t memory_bytes = 0;          // device memory

  bool operator==(const Roofline&) const = default;
};

// A capability at an offset. DeviceProfile::capabilities lists the standard capabilities in
// list order, then the extended ones in list order; the list order need not be the order of
// the offsets (real GPUs' extended lists jump back and forth).
struct CapabilityPlacement {
  CapabilityId id;
  uint16_t offset;
  // kVendorSpecific only: the capability's bytes after its ID and next pointer, the length
  // byte first (it must say 2 + vendor_bytes.size()); read-only to software. Empty otherwise.
  std::vector<uint8_t> vendor_bytes = {};

  bool operator==(const CapabilityPlacement&) const = default;
};

struct DeviceProfile {
  std::string name;         // what FindProfile takes
  std::string description;  // one line, for listings

  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint16_t subsystem_vendor_id = 0;
  uint16_t subsystem_id = 0;
  uint32_t class_code = 0x030200;  // base class, subclass, prog-if: 3D controller
  uint8_t revision_id = 0;

  std::vector<BarSpec> bars;
  MsiSpec msi;                           // used when capabilities has kMsi
  MsixSpec msix;                         // used when capabilities has kMsix
  uint32_t max_payload_supported = 256;  // bytes: 128..4096, a power of two
  LinkSpec link;
  uint64_t serial_number = 0;                  // kSerialNumber's EUI-64
  std::vector<PowerBudgetEntry> power_budget;  // kPowerBudgeting's entries
  std::vector<CapabilityPlacement> capabilities;

  Roofline roofline;

  bool operator==(const DeviceProfile&) const = default;
};

// The BAR with this index, or nullptr (also for the upper half of a 64-bit BAR).
const BarSpec* FindBar(const DeviceProfile& profile, uint8_t index);

// Where a capability sits in this profile, if it has it.
std::optional<uint16_t> FindCapabilityOffset(const DeviceProfile& profile, CapabilityId id);

// How many bytes a capability occupies in this profile's configuration space (some depend on
// the profile: MSI masking, the link width, the number of resizable BARs).
uint16_t CapabilitySize(CapabilityId id, const DeviceProfile& profile);
// The same for one placement: a Vendor-Specific capability's size is its bytes'.
uint16_t CapabilitySize(const CapabilityPlacement& placement, const DeviceProfile& profile);

// nullopt for a profile ConfigSpace can build; otherwise what is wrong, naming the field.
std::optional<std::string> ValidateProfile(const DeviceProfile& profile);

// The built-in profiles ("dxgpu", "a100-40g", "h100-80g"); nullopt for an unknown name.
std::optional<DeviceProfile> FindProfile(std::string_view name);

// Their names, "dxgpu" first.
std::vector<std::string_view> ProfileNames();

// The name of the built-in profile with these PCI IDs (what a host that found a device calls
// it), or "vvvv:dddd" in hex when none has them.
std::string ProfileNameForIds(uint16_t vendor_id, uint16_t device_id);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_DEVICE_PROFILE_H_
