// capability.cc - the table of capability IDs, versions and names.
#include "gpu/capability.h"

#include <array>

#include "gpu/pci_regs.h"

namespace dxpu::gpu {
namespace {

struct CapabilityInfo {
  CapabilityId id;
  bool extended;
  uint16_t pci_id;
  uint8_t version;
  std::string_view name;
};

constexpr std::array<CapabilityInfo, 14> kCapabilities{{
    {CapabilityId::kPowerManagement, false, pci::kCapIdPm, 0, "Power Management"},
    {CapabilityId::kMsi, false, pci::kCapIdMsi, 0, "MSI"},
    {CapabilityId::kPciExpress, false, pci::kCapIdExp, 0, "PCI Express"},
    {CapabilityId::kMsix, false, pci::kCapIdMsix, 0, "MSI-X"},
    {CapabilityId::kAer, true, pci::kExtCapIdErr, 2, "Advanced Error Reporting"},
    {CapabilityId::kVirtualChannel, true, pci::kExtCapIdVc, 1, "Virtual Channel"},
    {CapabilityId::kSerialNumber, true, pci::kExtCapIdDsn, 1, "Device Serial Number"},
    {CapabilityId::kPowerBudgeting, true, pci::kExtCapIdPwr, 1, "Power Budgeting"},
    {CapabilityId::kResizableBar, true, pci::kExtCapIdRebar, 1, "Resizable BAR"},
    {CapabilityId::kLtr, true, pci::kExtCapIdLtr, 1, "Latency Tolerance Reporting"},
    {CapabilityId::kSecondaryPcie, true, pci::kExtCapIdSecpci, 1, "Secondary PCI Express"},
    {CapabilityId::kL1PmSubstates, true, pci::kExtCapIdL1ss, 1, "L1 PM Substates"},
    {CapabilityId::kPhysicalLayer16, true, pci::kExtCapIdPl16gt, 1, "Physical Layer 16.0 GT/s"},
    {CapabilityId::kVendorSpecific, false, pci::kCapIdVndr, 0, "Vendor Specific"},
}};

constexpr std::array<CapabilityId, kCapabilities.size()> MakeIdList() {
  std::array<CapabilityId, kCapabilities.size()> ids{};
  for (size_t i = 0; i < kCapabilities.size(); ++i) ids[i] = kCapabilities[i].id;
  return ids;
}

constexpr std::array<CapabilityId, kCapabilities.size()> kIds = MakeIdList();

const CapabilityInfo& Info(CapabilityId id) {
  // The table is in enum order (checked below), so the enum value is the index.
  return kCapabilities[static_cast<size_t>(id)];
}

constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < kCapabilities.size(); ++i) {
    if (static_cast<size_t>(kCapabilities[i].id) != i) return false;
  }
  return true;
}
static_assert(TableInEnumOrder(), "kCapabilities must list CapabilityId in declaration order");

}  // namespace

std::span<const CapabilityId> AllCapabilities() { return kIds; }

bool IsExtended(CapabilityId id) { return Info(id).extended; }

uint16_t PciCapabilityId(CapabilityId id) { return Info(id).pci_id; }

uint8_t ExtendedCapabilityVersion(CapabilityId id) { return Info(id).version; }

std::string_view CapabilityName(CapabilityId id) { return Info(id).name; }

std::optional<CapabilityId> FindCapability(bool extended, uint16_t pci_id) {
  for (const CapabilityInfo& info : kCapabilities) {
    if (info.extended == extended && info.pci_id == pci_id) return info.id;
  }
  return std::nullopt;
}

}  // namespace dxpu::gpu
