// builtin_profiles.cc - the device profiles FindProfile knows: the generic "dxgpu", and two
// shaped after real data-center GPUs as lspci shows them.
//
// "a100-40g" and "h100-80g" copy NVIDIA's vendor, device and subsystem IDs so that tools
// (lspci, monitoring) show familiar names, and their BAR layouts and capability offsets so
// that enumeration and address-space assignment see what the real GPUs make the host do.
// A real driver would bind to them, so tests (and anything run in a VM with a vendor driver
// installed) use "dxgpu", which no driver claims.
#include <array>
#include <cstdio>
#include <string>

#include "gpu/device_profile.h"

namespace dxpu::gpu {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// Resizable BAR size bits: 1 MiB << k for k in [lo, hi].
constexpr uint32_t RebarSizes(uint64_t lo, uint64_t hi) {
  uint32_t bits = 0;
  for (uint64_t size = kMiB, k = 0; size <= hi; size <<= 1, ++k) {
    if (size >= lo) bits |= uint32_t{1} << k;
  }
  return bits;
}

using Cap = CapabilityId;
using Entry = PowerBudgetEntry;

DeviceProfile Dxgpu() {
  DeviceProfile p;
  p.name = "dxgpu";
  p.description = "DxPU generic GPU model: 16 MiB registers, 256 MiB aperture, 16 MSI-X vectors";
  // Vendor 0x4450 ("DP" in ASCII) is not in the PCI ID database and is not known to belong
  // to any company, which is why no driver binds to the model. PCI-SIG reserves no vendor ID
  // for testing, so nothing guarantees it stays unassigned: a deployment that shows this
  // device to systems it does not control must use a vendor ID assigned to its maker.
  p.vendor_id = 0x4450;
  p.device_id = 0x0001;
  p.subsystem_vendor_id = 0x4450;
  p.subsystem_id = 0x0001;
  p.class_code = 0x030200;  // display controller, 3D controller
  p.revision_id = 0x01;
  p.bars = {
      // BAR0: registers (doorbells, engines), MSI-X table and PBA at the top.
      {.index = 0, .size = 16 * kMiB, .is_64bit = false, .prefetchable = false},
      // BAR2/3: the device-memory aperture, resizable up to all of device memory.
      {.index = 2,
       .size = 256 * kMiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(64 * kMiB, 1 * kGiB)},
  };
  p.msi = {.vectors = 16, .per_vector_masking = true};
  p.msix = {.vectors = 16,
            .table_bar = 0,
            .table_offset = 0x00ff0000,
            .pba_bar = 0,
            .pba_offset = 0x00ff1000};
  p.max_payload_supported = 256;
  p.link = {.speed = LinkSpeed::k16GT, .width = 16};
  p.serial_number = 0x4450000000000001;
  p.power_budget = {
      {.state = Entry::PmState::kD0, .type = Entry::Type::kMaximum, .watts = 300},
      {.state = Entry::PmState::kD0, .type = Entry::Type::kSustained, .watts = 250},
      {.state = Entry::PmState::kD3, .type = Entry::Type::kIdle, .watts = 10},
  };
  p.capabilities = {
      {Cap::kPowerManagement, 0x40},
      {Cap::kMsi, 0x48},
      {Cap::kPciExpress, 0x60},
      {Cap::kMsix, 0xa0},
      {Cap::kAer, 0x100},
      {Cap::kLtr, 0x148},
      {Cap::kL1PmSubstates, 0x150},
      {Cap::kSecondaryPcie, 0x160},
      {Cap::kPhysicalLayer16, 0x190},
      {Cap::kResizableBar, 0x1c0},
      {Cap::kPowerBudgeting, 0x1d0},
      {Cap::kSerialNumber, 0x1e0},
  };
  p.roofline = {.peak_fp32_flops = 10e12,
                .memory_bandwidth_bytes = 500e9,
                .launch_overhead_ns = 5000,
                .memory_bytes = 1 * kGiB};
  return p;
}

// After the A100 SXM4 40GB (10de:20b0, subsystem 10de:134f): BAR0 16 MiB 32-bit registers,
// BAR1 64 GiB and BAR3 32 MiB 64-bit prefetchable, Gen4 x16. Its standard capabilities sit
// where lspci shows them (PM 0x60, MSI 0x68 - which the real firmware turns into a Null
// capability -, PCIe 0x78, MSI-X 0xc8) and its extended ones keep the real list's jumps
// (0x100, 0x250, 0x258, 0x128, 0x420, ...). Vendor-specific, SR-IOV, ARI, Lane Margining and
// Data Link Feature capabilities are not modelled.
DeviceProfile A100() {
  DeviceProfile p;
  p.name = "a100-40g";
  p.description = "shaped after NVIDIA A100 SXM4 40GB: BAR0 16 MiB, BAR1 64 GiB, BAR3 32 MiB";
  p.vendor_id = 0x10de;
  p.device_id = 0x20b0;
  p.subsystem_vendor_id = 0x10de;
  p.subsystem_id = 0x134f;
  p.class_code = 0x030200;
  p.revision_id = 0xa1;
  p.bars = {
      {.index = 0,
       .size = 16 * kMiB,
       .is_64bit = false,
       .prefetchable = false,
       .resizable_sizes = RebarSizes(16 * kMiB, 16 * kMiB)},
      {.index = 1,
       .size = 64 * kGiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(64 * kMiB, 64 * kGiB)},
      {.index = 3,
       .size = 32 * kMiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(32 * kMiB, 32 * kMiB)},
  };
  p.msi = {.vectors = 1, .per_vector_masking = false};
  p.msix = {.vectors = 6,
            .table_bar = 0,
            .table_offset = 0x00b90000,
            .pba_bar = 0,
            .pba_offset = 0x00ba0000};
  p.max_payload_supported = 256;
  p.link = {.speed = LinkSpeed::k16GT, .width = 16};
  p.power_budget = {{.state = Entry::PmState::kD0, .type = Entry::Type::kMaximum, .watts = 400}};
  p.capabilities = {
      {Cap::kPowerManagement, 0x60},
      {Cap::kMsi, 0x68},
      {Cap::kPciExpress, 0x78},
      {Cap::kMsix, 0xc8},
      {Cap::kVirtualChannel, 0x100},
      {Cap::kLtr, 0x250},
      {Cap::kL1PmSubstates, 0x258},
      {Cap::kPowerBudgeting, 0x128},
      {Cap::kAer, 0x420},
      {Cap::kSecondaryPcie, 0x900},
      {Cap::kResizableBar, 0xbb0},
      {Cap::kPhysicalLayer16, 0xc1c},
  };
  p.roofline = {.peak_fp32_flops = 19.5e12,
                .memory_bandwidth_bytes = 1555e9,
                .launch_overhead_ns = 4000,
                .memory_bytes = 40 * kGiB};
  return p;
}

// After the H100 PCIe 80GB (10de:2331, subsystem 10de:1626): three 64-bit prefetchable BARs,
// BAR0 16 MiB, BAR2 128 GiB, BAR4 32 MiB, Gen5 x16. Standard capabilities where lspci shows
// Hopper's (PM 0x40, MSI 0x48 with 16 maskable vectors, PCIe 0x60, MSI-X 0xb0 with 9
// vectors); extended ones at Hopper's offsets (LTR 0x12c, Resizable BAR 0x134, AER 0x1b8,
// Power Budgeting 0x2b8, Serial Number 0x2f0), with Secondary PCI Express filling 0x100..0x12b
// (exactly its size at x16). Vendor-specific, Physical Layer 16/32 GT/s and Lane Margining
// capabilities are not modelled.
DeviceProfile H100() {
  DeviceProfile p;
  p.name = "h100-80g";
  p.description = "shaped after NVIDIA H100 PCIe 80GB: BAR0 16 MiB, BAR2 128 GiB, BAR4 32 MiB";
  p.vendor_id = 0x10de;
  p.device_id = 0x2331;
  p.subsystem_vendor_id = 0x10de;
  p.subsystem_id = 0x1626;
  p.class_code = 0x030200;
  p.revision_id = 0xa1;
  p.bars = {
      {.index = 0,
       .size = 16 * kMiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(16 * kMiB, 16 * kMiB)},
      {.index = 2,
       .size = 128 * kGiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(64 * kMiB, 128 * kGiB)},
      {.index = 4,
       .size = 32 * kMiB,
       .is_64bit = true,
       .prefetchable = true,
       .resizable_sizes = RebarSizes(32 * kMiB, 32 * kMiB)},
  };
  p.msi = {.vectors = 16, .per_vector_masking = true};
  p.msix = {.vectors = 9,
            .table_bar = 0,
            .table_offset = 0x00b90000,
            .pba_bar = 0,
            .pba_offset = 0x00ba0000};
  p.max_payload_supported = 256;
  p.link = {.speed = LinkSpeed::k32GT, .width = 16};
  p.serial_number = 0x0000000000000001;
  p.power_budget = {
      {.state = Entry::PmState::kD0, .type = Entry::Type::kMaximum, .watts = 350},
      {.state = Entry::PmState::kD0, .type = Entry::Type::kSustained, .watts = 300},
  };
  p.capabilities = {
      {Cap::kPowerManagement, 0x40}, {Cap::kMsi, 0x48},
      {Cap::kPciExpress, 0x60},      {Cap::kMsix, 0xb0},
      {Cap::kSecondaryPcie, 0x100},  {Cap::kLtr, 0x12c},
      {Cap::kResizableBar, 0x134},   {Cap::kAer, 0x1b8},
      {Cap::kPowerBudgeting, 0x2b8}, {Cap::kSerialNumber, 0x2f0},
  };
  p.roofline = {.peak_fp32_flops = 51.2e12,
                .memory_bandwidth_bytes = 2.0e12,
                .launch_overhead_ns = 3000,
                .memory_bytes = 80 * kGiB};
  return p;
}

}  // namespace

std::optional<DeviceProfile> FindProfile(std::string_view name) {
  if (name == "dxgpu") return Dxgpu();
  if (name == "a100-40g") return A100();
  if (name == "h100-80g") return H100();
  return std::nullopt;
}

std::vector<std::string_view> ProfileNames() { return {"dxgpu", "a100-40g", "h100-80g"}; }

std::string ProfileNameForIds(uint16_t vendor_id, uint16_t device_id) {
  for (std::string_view name : ProfileNames()) {
    std::optional<DeviceProfile> p = FindProfile(name);
    if (p && p->vendor_id == vendor_id && p->device_id == device_id) return std::string(name);
  }
  std::array<char, 10> ids{};
  std::snprintf(ids.data(), ids.size(), "%04x:%04x", unsigned{vendor_id}, unsigned{device_id});
  return ids.data();
}

}  // namespace dxpu::gpu
