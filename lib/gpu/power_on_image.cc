// power_on_image.cc - the header, then each capability of the profile linked into its list.
#include "gpu/power_on_image.h"

#include <vector>

#include "gpu/capability_builders.h"
#include "gpu/pci_regs.h"

namespace dxpu::gpu {
namespace {

void BuildBody(RegisterFile& regs, const DeviceProfile& p, const CapabilityPlacement& c) {
  const uint16_t base = c.offset;
  switch (c.id) {
    case CapabilityId::kVendorSpecific:
      return build::VendorSpecific(regs, c);
    case CapabilityId::kPowerManagement:
      return build::PowerManagement(regs, p, base);
    case CapabilityId::kMsi:
      return build::Msi(regs, p, base);
    case CapabilityId::kPciExpress:
      return build::PciExpress(regs, p, base);
    case CapabilityId::kMsix:
      return build::Msix(regs, p, base);
    case CapabilityId::kAer:
      return build::Aer(regs, p, base);
    case CapabilityId::kVirtualChannel:
      return build::VirtualChannel(regs, p, base);
    case CapabilityId::kSerialNumber:
      return build::SerialNumber(regs, p, base);
    case CapabilityId::kPowerBudgeting:
      return build::PowerBudgeting(regs, p, base);
    case CapabilityId::kResizableBar:
      return build::ResizableBar(regs, p, base);
    case CapabilityId::kLtr:
      return build::Ltr(regs, p, base);
    case CapabilityId::kSecondaryPcie:
      return build::SecondaryPcie(regs, p, base);
    case CapabilityId::kL1PmSubstates:
      return build::L1PmSubstates(regs, p, base);
    case CapabilityId::kPhysicalLayer16:
      return build::PhysicalLayer16(regs, p, base);
  }
}

}  // namespace

RegisterFile BuildPowerOnImage(const DeviceProfile& profile) {
  RegisterFile regs;
  std::vector<CapabilityPlacement> standard;
  std::vector<CapabilityPlacement> extended;
  for (const CapabilityPlacement& c : profile.capabilities) {
    (IsExtended(c.id) ? extended : standard).push_back(c);
  }

  build::Header(regs, profile,
                standard.empty() ? uint8_t{0} : static_cast<uint8_t>(standard.front().offset));

  for (size_t i = 0; i < standard.size(); ++i) {
    const CapabilityPlacement& c = standard[i];
    const uint16_t next = i + 1 < standard.size() ? standard[i + 1].offset : 0;
    regs.Define(
        {.offset = c.offset, .size = 2, .value = PciCapabilityId(c.id) | (uint32_t{next} << 8)});
    BuildBody(regs, profile, c);
  }
  for (size_t i = 0; i < extended.size(); ++i) {
    const CapabilityPlacement& c = extended[i];
    const uint16_t next = i + 1 < extended.size() ? extended[i + 1].offset : 0;
    regs.Define(
        {.offset = c.offset,
         .size = 4,
         .value = pci::ExtCapHeader(PciCapabilityId(c.id), ExtendedCapabilityVersion(c.id), next)});
    BuildBody(regs, profile, c);
  }
  return regs;
}

}  // namespace dxpu::gpu
