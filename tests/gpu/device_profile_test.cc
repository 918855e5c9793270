// Device profiles: the built-in ones validate and carry the layouts they claim; broken ones are
// refused with a message naming what is wrong, and ConfigSpace::Create refuses them too.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(DeviceProfile, EveryBuiltInProfileValidatesAndBuilds) {
  const std::vector<std::string_view> names = ProfileNames();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names.front(), "dxgpu");
  for (std::string_view name : names) {
    const std::optional<DeviceProfile> p = FindProfile(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(p->name, name);
    EXPECT_FALSE(p->description.empty());
    EXPECT_EQ(ValidateProfile(*p), std::nullopt) << name;
    std::string error;
    EXPECT_TRUE(ConfigSpace::Create(*p, &error).has_value()) << error;
    EXPECT_GT(p->roofline.peak_fp32_flops, 0);
    EXPECT_GT(p->roofline.memory_bandwidth_bytes, 0);
    EXPECT_GT(p->roofline.launch_overhead_ns, 0u);
    EXPECT_GT(p->roofline.memory_bytes, 0u);
  }
  EXPECT_FALSE(FindProfile("no-such-gpu").has_value());
  EXPECT_FALSE(FindProfile("").has_value());
}

TEST(DeviceProfile, ANameFromTheIds) {
  EXPECT_EQ(ProfileNameForIds(0x4450, 0x0001), "dxgpu");
  EXPECT_EQ(ProfileNameForIds(0x10de, 0x20b0), "a100-40g");
  EXPECT_EQ(ProfileNameForIds(0x10de, 0x2331), "h100-80g");
  EXPECT_EQ(ProfileNameForIds(0x10de, 0x0001), "10de:0001");
  EXPECT_EQ(ProfileNameForIds(0xabcd, 0xef01), "abcd:ef01");
}

TEST(DeviceProfile, BuiltInLayouts) {
  const DeviceProfile dx = Profile("dxgpu");
  EXPECT_NE(dx.vendor_id, 0x10de);  // not a real vendor's ID: no vendor driver binds
  EXPECT_EQ(dx.class_code, 0x030200u);
  ASSERT_EQ(dx.bars.size(), 2u);
  EXPECT_EQ(dx.bars[0], (BarSpec{0, 16 * kMiB, false, false, 0}));
  EXPECT_EQ(dx.bars[1].index, 2);
  EXPECT_EQ(dx.bars[1].size, 256 * kMiB);
  EXPECT_TRUE(dx.bars[1].is_64bit);
  EXPECT_TRUE(dx.bars[1].prefetchable);
  EXPECT_EQ(dx.msix.vectors, 16);
  EXPECT_EQ(dx.msix.table_bar, 0);

  const DeviceProfile a100 = Profile("a100-40g");
  EXPECT_EQ(a100.vendor_id, 0x10de);
  EXPECT_EQ(a100.device_id, 0x20b0);
  ASSERT_EQ(a100.bars.size(), 3u);
  EXPECT_EQ(a100.bars[0].size, 16 * kMiB);
  EXPECT_FALSE(a100.bars[0].is_64bit);
  EXPECT_EQ(a100.bars[1].index, 1);
  EXPECT_EQ(a100.bars[1].size, 64 * kGiB);
  EXPECT_TRUE(a100.bars[1].is_64bit && a100.bars[1].prefetchable);
  EXPECT_EQ(a100.bars[2].index, 3);
  EXPECT_EQ(a100.bars[2].size, 32 * kMiB);
  EXPECT_EQ(a100.link, (LinkSpec{LinkSpeed::k16GT, 16}));

  const DeviceProfile h100 = Profile("h100-80g");
  EXPECT_EQ(h100.device_id, 0x2331);
  ASSERT_EQ(h100.bars.size(), 3u);
  EXPECT_EQ(h100.bars[1].index, 2);
  EXPECT_EQ(h100.bars[1].size, 128 * kGiB);
  EXPECT_EQ(h100.roofline.memory_bytes, 80 * kGiB);
}

struct Breakage {
  std::string what;
  std::function<void(DeviceProfile&)> mutate;
  std::string message;  // a substring of the error
};

void RemoveCapability(DeviceProfile& p, CapabilityId id) {
  std::erase_if(p.capabilities, [id](const CapabilityPlacement& c) { return c.id == id; });
}

void MoveCapability(DeviceProfile& p, CapabilityId id, uint16_t offset) {
  for (CapabilityPlacement& c : p.capabilities) {
    if (c.id == id) c.offset = offset;
  }
}

TEST(DeviceProfile, BrokenProfilesAreRefusedWithTheRightMessage) {
  using C = CapabilityId;
  const std::vector<Breakage> cases = {
      {"BAR size not a power of two", [](DeviceProfile& p) { p.bars[0].size = 3 * kMiB; },
       "BAR 0: size 0x300000 is not a power of two"},
      {"BAR too small", [](DeviceProfile& p) { p.bars[0].size = 64; },
       "below the 128-byte minimum"},
      {"BAR of size 0", [](DeviceProfile& p) { p.bars[0].size = 0; }, "is not a power of two"},
      {"64-bit BAR in slot 5",
       [](DeviceProfile& p) { p.bars.push_back({.index = 5, .size = kMiB, .is_64bit = true}); },
       "BAR 5: a 64-bit BAR takes two slots and BAR 5 is the last one"},
      {"BAR index 6", [](DeviceProfile& p) { p.bars.push_back({.index = 6, .size = kMiB}); },
       "index must be 0..5"},
      {"BAR in the upper half of a 64-bit BAR",
       [](DeviceProfile& p) { p.bars.push_back({.index = 3, .size = kMiB}); },
       "BAR 3: slot 3 is already taken"},
      {"4 GiB 32-bit BAR", [](DeviceProfile& p) { p.bars[0].size = 4 * kGiB; },
       "does not fit a 32-bit BAR"},
      {"resizable size list without the BAR's size",
       [](DeviceProfile& p) { p.bars[1].resizable_sizes = 1u << 10; },
       "is not one of its resizable sizes"},
      {"resizable BAR without the capability",
       [](DeviceProfile& p) { RemoveCapability(p, C::kResizableBar); },
       "resizable BARs need the Resizable BAR capability"},
      {"Resizable BAR capability without a resizable BAR",
       [](DeviceProfile& p) { p.bars[1].resizable_sizes = 0; }, "needs at least one BAR"},
      {"MSI-X table and PBA overlap",
       [](DeviceProfile& p) { p.msix.pba_offset = p.msix.table_offset + 0x80; }, "overlap"},
      {"MSI-X table in a BAR that does not exist", [](DeviceProfile& p) { p.msix.table_bar = 4; },
       "MSI-X table is in BAR 4, which does not exist"},
      {"MSI-X PBA in the upper half of a 64-bit BAR", [](DeviceProfile& p) { p.msix.pba_bar = 3; },
       "MSI-X PBA is in BAR 3, which does not exist"},
      {"MSI-X table past the end of its BAR",
       [](DeviceProfile& p) {
         p.msix.vectors = 2048;
         p.msix.table_offset = 0xffc000;
       },
       "MSI-X table (0xffc000..0x1004000) does not fit BAR 0 of 0x1000000 bytes"},
      {"MSI-X table past a resizable BAR's smallest size",
       [](DeviceProfile& p) {
         p.msix.table_bar = 2;
         p.msix.table_offset = 0x8000000;  // 128 MiB: inside 256 MiB, not inside 64 MiB
       },
       "does not fit BAR 2 of 0x4000000 bytes"},
      {"MSI-X offset not 8-byte aligned", [](DeviceProfile& p) { p.msix.table_offset = 0x1004; },
       "not 8-byte aligned"},
      {"MSI-X with no vectors", [](DeviceProfile& p) { p.msix.vectors = 0; },
       "MSI-X vectors must be 1..2048"},
      {"MSI-X vectors without the capability",
       [](DeviceProfile& p) { RemoveCapability(p, C::kMsix); },
       "MSI-X vectors are set but there is no MSI-X capability"},
      {"MSI with 3 vectors", [](DeviceProfile& p) { p.msi.vectors = 3; },
       "MSI vectors must be 1, 2, 4, 8, 16 or 32"},
      {"no MSI and no MSI-X",
       [](DeviceProfile& p) {
         RemoveCapability(p, C::kMsi);
         RemoveCapability(p, C::kMsix);
         p.msix.vectors = 0;
       },
       "needs MSI or MSI-X"},
      {"no PCI Express capability", [](DeviceProfile& p) { RemoveCapability(p, C::kPciExpress); },
       "needs the PCI Express capability"},
      {"no Power Management capability",
       [](DeviceProfile& p) { RemoveCapability(p, C::kPowerManagement); },
       "needs the Power Management capability"},
      {"overlapping capabilities", [](DeviceProfile& p) { MoveCapability(p, C::kMsi, 0x44); },
       "MSI at 0x44: overlaps Power Management at 0x40"},
      {"capability not DW-aligned", [](DeviceProfile& p) { MoveCapability(p, C::kMsix, 0xa2); },
       "MSI-X at 0xa2: offset is not DW-aligned"},
      {"standard capability in the header",
       [](DeviceProfile& p) { MoveCapability(p, C::kMsix, 0x3c); }, "must lie within 0x40..0xff"},
      {"standard capability past 0xff",
       [](DeviceProfile& p) { MoveCapability(p, C::kPciExpress, 0xf0); },
       "PCI Express at 0xf0: must lie within 0x40..0xff"},
      {"extended capability below 0x100",
       [](DeviceProfile& p) { MoveCapability(p, C::kLtr, 0xf8); }, "must lie within 0x100..0xfff"},
      {"extended capability past 0xfff",
       [](DeviceProfile& p) { MoveCapability(p, C::kSerialNumber, 0xffc); },
       "Device Serial Number at 0xffc: must lie within 0x100..0xfff"},
      {"first extended capability not at 0x100",
       [](DeviceProfile& p) { MoveCapability(p, C::kAer, 0x800); },
       "the first extended capability must be at 0x100"},
      {"capability listed twice",
       [](DeviceProfile& p) {
         p.capabilities.push_back({C::kLtr, 0x400});
       },
       "listed twice"},
      {"standard capability after the extended ones",
       [](DeviceProfile& p) {
         RemoveCapability(p, C::kMsix);
         p.capabilities.push_back({C::kMsix, 0xa0});
       },
       "standard capabilities come first"},
      {"L1 PM Substates without LTR", [](DeviceProfile& p) { RemoveCapability(p, C::kLtr); },
       "needs the Latency Tolerance Reporting capability"},
      {"Physical Layer 16 GT/s on an 8 GT/s link",
       [](DeviceProfile& p) { p.link.speed = LinkSpeed::k8GT; }, "16 GT/s or more"},
      {"Power Budgeting without entries", [](DeviceProfile& p) { p.power_budget.clear(); },
       "needs 1..256 power_budget entries"},
      {"link width x3", [](DeviceProfile& p) { p.link.width = 3; }, "link width must be"},
      {"link speed 0", [](DeviceProfile& p) { p.link.speed = static_cast<LinkSpeed>(0); },
       "link speed must be"},
      {"max payload 384", [](DeviceProfile& p) { p.max_payload_supported = 384; },
       "max_payload_supported must be 128..4096"},
      {"vendor 0xffff", [](DeviceProfile& p) { p.vendor_id = 0xffff; }, "reads as 'no device'"},
      {"device 0xffff", [](DeviceProfile& p) { p.device_id = 0xffff; }, "reads as 'no device'"},
      {"class code over 24 bits", [](DeviceProfile& p) { p.class_code = 0x1030200; },
       "wider than 24 bits"},
      {"no roofline", [](DeviceProfile& p) { p.roofline.peak_fp32_flops = 0; }, "roofline"},
      {"no device memory", [](DeviceProfile& p) { p.roofline.memory_bytes = 0; },
       "device memory size"},
  };
  for (const Breakage& b : cases) {
    DeviceProfile p = Profile("dxgpu");
    b.mutate(p);
    const std::optional<std::string> error = ValidateProfile(p);
    ASSERT_TRUE(error.has_value()) << b.what << ": accepted";
    EXPECT_NE(error->find("profile 'dxgpu': "), std::string::npos) << *error;
    EXPECT_NE(error->find(b.message), std::string::npos)
        << b.what << ": got \"" << *error << "\", want it to contain \"" << b.message << "\"";
    std::string create_error;
    EXPECT_FALSE(ConfigSpace::Create(p, &create_error).has_value()) << b.what;
    EXPECT_EQ(create_error, *error);
  }
}

TEST(DeviceProfile, CapabilityNamesAndIds) {
  for (CapabilityId id : AllCapabilities()) {
    EXPECT_FALSE(CapabilityName(id).empty());
    EXPECT_EQ(FindCapability(IsExtended(id), PciCapabilityId(id)), id);
    EXPECT_EQ(ExtendedCapabilityVersion(id) != 0, IsExtended(id));
  }
  // The IDs the specifications assign.
  EXPECT_EQ(PciCapabilityId(CapabilityId::kPowerManagement), 0x01);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kMsi), 0x05);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kPciExpress), 0x10);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kMsix), 0x11);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kAer), 0x0001);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kVirtualChannel), 0x0002);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kSerialNumber), 0x0003);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kPowerBudgeting), 0x0004);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kResizableBar), 0x0015);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kLtr), 0x0018);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kSecondaryPcie), 0x0019);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kL1PmSubstates), 0x001e);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kPhysicalLayer16), 0x0026);
  EXPECT_EQ(ExtendedCapabilityVersion(CapabilityId::kAer), 2);
  EXPECT_EQ(PciCapabilityId(CapabilityId::kVendorSpecific), 0x09);
  EXPECT_FALSE(FindCapability(false, 0x0a).has_value());  // Debug port: not modelled
}

}  // namespace
}  // namespace dxpu::gpu::test
