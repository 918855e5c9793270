// The configuration space of every built-in profile, read as a host reads it: the header
// identifies a type 0 endpoint, and walking the capability lists from the bytes alone finds
// exactly the profile's capabilities, with the right IDs and versions, without loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "capability_walker.h"
#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

class CapabilityListTest : public ::testing::TestWithParam<std::string_view> {};

INSTANTIATE_TEST_SUITE_P(Profiles, CapabilityListTest, ::testing::ValuesIn(ProfileNames()),
                         ParamName);

TEST_P(CapabilityListTest, HeaderIsAType0EndpointWithTheProfilesIds) {
  const DeviceProfile p = Profile(GetParam());
  const ConfigSpace config = MakeConfigSpace(GetParam());
  const std::vector<uint8_t> c = Dump(config);
  EXPECT_EQ(Get16(c, pci::kVendorId), p.vendor_id);
  EXPECT_EQ(Get16(c, pci::kDeviceId), p.device_id);
  EXPECT_EQ(Get16(c, pci::kCommand), 0);  // nothing enabled at power-on
  EXPECT_EQ(Get16(c, pci::kStatus), pci::kStatusCapList);
  EXPECT_EQ(c[pci::kRevisionId], p.revision_id);
  EXPECT_EQ(Get32(c, pci::kRevisionId) >> 8, p.class_code);
  EXPECT_EQ(Get32(c, pci::kRevisionId) >> 8, 0x030200u);  // 3D controller
  EXPECT_EQ(c[pci::kHeaderType], 0x00);                   // type 0, single function
  EXPECT_EQ(c[pci::kBist], 0x00);
  EXPECT_EQ(c[pci::kLatencyTimer], 0x00);
  EXPECT_EQ(Get16(c, pci::kSubsystemVendorId), p.subsystem_vendor_id);
  EXPECT_EQ(Get16(c, pci::kSubsystemId), p.subsystem_id);
  EXPECT_EQ(Get32(c, pci::kCardbusCis), 0u);
  EXPECT_EQ(Get32(c, pci::kRomAddress), 0u);  // no expansion ROM
  EXPECT_EQ(c[pci::kCapabilityList] & 3, 0);
  EXPECT_GE(c[pci::kCapabilityList], 0x40);
  EXPECT_EQ(c[pci::kInterruptPin], 0x01);  // INTA#
  EXPECT_EQ(c[pci::kMinGnt], 0x00);
  EXPECT_EQ(c[pci::kMaxLat], 0x00);
  for (uint32_t o = 0x35; o < 0x3c; ++o) EXPECT_EQ(c[o], 0) << "reserved byte " << o;
}

TEST_P(CapabilityListTest, WalkFindsExactlyTheProfilesCapabilities) {
  const DeviceProfile p = Profile(GetParam());
  const std::vector<uint8_t> c = Dump(MakeConfigSpace(GetParam()));
  const CapabilityWalk walk = WalkCapabilities(c);
  ASSERT_EQ(walk.error, "");

  std::vector<FoundCapability> standard;
  std::vector<FoundCapability> extended;
  for (const CapabilityPlacement& cap : p.capabilities) {
    if (IsExtended(cap.id)) {
      extended.push_back({cap.offset, PciCapabilityId(cap.id), ExtendedCapabilityVersion(cap.id)});
    } else {
      standard.push_back({cap.offset, PciCapabilityId(cap.id), 0});
    }
  }
  EXPECT_EQ(walk.standard, standard);
  EXPECT_EQ(walk.extended, extended);

  // Every ID the walk finds is one the model knows, and each appears once.
  for (const FoundCapability& f : walk.standard) {
    EXPECT_TRUE(FindCapability(false, f.id).has_value()) << "ID " << f.id;
  }
  for (const FoundCapability& f : walk.extended) {
    EXPECT_TRUE(FindCapability(true, f.id).has_value()) << "ID " << f.id;
  }
  // The four capabilities every profile has, with the spec's IDs.
  auto has_std = [&](uint16_t id) {
    return std::count_if(walk.standard.begin(), walk.standard.end(),
                         [&](const FoundCapability& f) { return f.id == id; }) == 1;
  };
  EXPECT_TRUE(has_std(0x01));  // Power Management
  EXPECT_TRUE(has_std(0x10));  // PCI Express
  EXPECT_TRUE(has_std(0x05) || has_std(0x11));
  ASSERT_FALSE(walk.extended.empty());
  EXPECT_EQ(walk.extended.front().offset, 0x100);
}

TEST_P(CapabilityListTest, CapabilitiesStayInTheirSpaceAndDoNotOverlap) {
  const DeviceProfile p = Profile(GetParam());
  const std::vector<uint8_t> c = Dump(MakeConfigSpace(GetParam()));
  std::vector<int> owner(ConfigSpace::kSize, -1);
  for (size_t i = 0; i < p.capabilities.size(); ++i) {
    const CapabilityPlacement& cap = p.capabilities[i];
    const uint32_t end = uint32_t{cap.offset} + CapabilitySize(cap.id, p);
    if (IsExtended(cap.id)) {
      EXPECT_GE(cap.offset, 0x100);
      EXPECT_LE(end, 0x1000u);
    } else {
      EXPECT_GE(cap.offset, 0x40);
      EXPECT_LE(end, 0x100u);
    }
    for (uint32_t o = cap.offset; o < end; ++o) {
      EXPECT_EQ(owner[o], -1) << CapabilityName(cap.id) << " overlaps at " << o;
      owner[o] = static_cast<int>(i);
    }
  }
  // Bytes no capability owns read 0 from 0x40 on.
  for (uint32_t o = pci::kHeaderSize; o < ConfigSpace::kSize; ++o) {
    if (owner[o] == -1) {
      EXPECT_EQ(c[o], 0) << "unowned byte " << o;
    }
  }
}

TEST_P(CapabilityListTest, PciExpressCapabilityDescribesAnEndpointAndItsLink) {
  const DeviceProfile p = Profile(GetParam());
  const ConfigSpace config = MakeConfigSpace(GetParam());
  const std::vector<uint8_t> c = Dump(config);
  const uint16_t exp = *config.capability_offset(CapabilityId::kPciExpress);
  EXPECT_EQ(Get16(c, exp + pci::kExpFlags) & 0xf, 2);         // version 2
  EXPECT_EQ((Get16(c, exp + pci::kExpFlags) >> 4) & 0xf, 0);  // PCI Express Endpoint
  EXPECT_EQ(Get16(c, exp + pci::kExpFlags) & 0x0100, 0);      // no slot
  const uint32_t devcap = Get32(c, exp + pci::kExpDevCap);
  EXPECT_EQ(128u << (devcap & pci::kExpDevCapPayload), p.max_payload_supported);
  EXPECT_NE(devcap & pci::kExpDevCapFlr, 0u);
  EXPECT_NE(devcap & pci::kExpDevCapRber, 0u);
  const uint32_t lnkcap = Get32(c, exp + pci::kExpLnkCap);
  EXPECT_EQ(lnkcap & 0xf, static_cast<uint32_t>(p.link.speed));
  EXPECT_EQ((lnkcap >> 4) & 0x3f, p.link.width);
  const uint16_t lnksta = Get16(c, exp + pci::kExpLnkSta);
  EXPECT_EQ(lnksta & 0xf, static_cast<uint32_t>(p.link.speed));
  EXPECT_EQ((lnksta >> 4) & 0x3f, p.link.width);
  // Supported Link Speeds Vector: every speed up to the maximum.
  const uint32_t lnkcap2 = Get32(c, exp + pci::kExpLnkCap2);
  EXPECT_EQ(lnkcap2 & 0xfe, ((1u << static_cast<uint32_t>(p.link.speed)) - 1) << 1);
  const bool has_ltr = config.capability_offset(CapabilityId::kLtr).has_value();
  EXPECT_EQ((Get32(c, exp + pci::kExpDevCap2) & pci::kExpDevCap2Ltr) != 0, has_ltr);
  // Slot and Root registers are not an Endpoint's.
  for (uint32_t o = pci::kExpSltCap; o < pci::kExpDevCap2; ++o) EXPECT_EQ(c[exp + o], 0);
  // Power-on Device Control: MPS 128, MRRS 512, FLR reads 0.
  EXPECT_EQ(config.max_payload_size(), 128u);
  EXPECT_EQ(config.max_read_request_size(), 512u);
  EXPECT_EQ(Get16(c, exp + pci::kExpDevCtl) & pci::kExpDevCtlBcrFlr, 0);
}

TEST_P(CapabilityListTest, MsiAndMsixCapabilitiesMatchTheProfile) {
  const DeviceProfile p = Profile(GetParam());
  const ConfigSpace config = MakeConfigSpace(GetParam());
  if (std::optional<uint16_t> msi = config.capability_offset(CapabilityId::kMsi)) {
    const uint16_t flags = Read16(config, *msi + pci::kMsiFlags);
    EXPECT_NE(flags & pci::kMsiFlags64Bit, 0);
    EXPECT_EQ(1u << ((flags & pci::kMsiFlagsQmask) >> 1), p.msi.vectors);
    EXPECT_EQ((flags & pci::kMsiFlagsMaskBit) != 0, p.msi.per_vector_masking);
    EXPECT_EQ(flags & pci::kMsiFlagsEnable, 0);
  }
  const std::optional<uint16_t> msix = config.capability_offset(CapabilityId::kMsix);
  ASSERT_TRUE(msix.has_value());
  const uint16_t flags = Read16(config, *msix + pci::kMsixFlags);
  EXPECT_EQ((flags & pci::kMsixFlagsQsize) + 1u, p.msix.vectors);
  EXPECT_EQ(Read32(config, *msix + pci::kMsixTable), p.msix.table_offset | p.msix.table_bar);
  EXPECT_EQ(Read32(config, *msix + pci::kMsixPba), p.msix.pba_offset | p.msix.pba_bar);
  const MsixState state = config.msix();
  EXPECT_TRUE(state.present);
  EXPECT_FALSE(state.enabled);
  EXPECT_EQ(state.table_size, p.msix.vectors);
  EXPECT_EQ(state.table_bar, p.msix.table_bar);
  EXPECT_EQ(state.table_offset, p.msix.table_offset);
  EXPECT_EQ(state.pba_bar, p.msix.pba_bar);
  EXPECT_EQ(state.pba_offset, p.msix.pba_offset);
}

TEST_P(CapabilityListTest, ExtendedCapabilityRegistersHoldTheirPowerOnValues) {
  const DeviceProfile p = Profile(GetParam());
  const ConfigSpace config = MakeConfigSpace(GetParam());
  if (std::optional<uint16_t> aer = config.capability_offset(CapabilityId::kAer)) {
    EXPECT_EQ(Read32(config, *aer + pci::kErrUncorStatus), 0u);
    EXPECT_EQ(Read32(config, *aer + pci::kErrUncorMask), pci::kErrUncIntn);
    // DLP, FCP, Receiver Overflow, Malformed TLP, Uncorrectable Internal: fatal by default.
    EXPECT_EQ(Read32(config, *aer + pci::kErrUncorSever), 0x00462010u);
    EXPECT_EQ(Read32(config, *aer + pci::kErrCorMask), 0x00006000u);
  }
  if (std::optional<uint16_t> dsn = config.capability_offset(CapabilityId::kSerialNumber)) {
    EXPECT_EQ(Read32(config, *dsn + pci::kDsnLow), static_cast<uint32_t>(p.serial_number));
    EXPECT_EQ(Read32(config, *dsn + pci::kDsnHigh), static_cast<uint32_t>(p.serial_number >> 32));
  }
  if (std::optional<uint16_t> pb = config.capability_offset(CapabilityId::kPowerBudgeting)) {
    EXPECT_EQ(Read32(config, *pb + pci::kPwrData), EncodePowerBudgetEntry(p.power_budget.at(0)));
  }
  if (std::optional<uint16_t> rebar = config.capability_offset(CapabilityId::kResizableBar)) {
    uint32_t n = 0;
    for (const BarSpec& bar : p.bars) {
      if (bar.resizable_sizes == 0) continue;
      const uint32_t cap = Read32(config, *rebar + pci::kRebarCap + 8 * n);
      const uint32_t ctrl = Read32(config, *rebar + pci::kRebarCtrl + 8 * n);
      EXPECT_EQ(cap >> 4, bar.resizable_sizes) << "BAR " << int{bar.index};
      EXPECT_EQ(ctrl & pci::kRebarCtrlBarIdx, bar.index);
      EXPECT_EQ((uint64_t{1} << 20) << ((ctrl & pci::kRebarCtrlBarSize) >> 8), bar.size);
      if (n == 0) {
        const auto count = std::count_if(p.bars.begin(), p.bars.end(),
                                         [](const BarSpec& b) { return b.resizable_sizes != 0; });
        EXPECT_EQ((ctrl & pci::kRebarCtrlNbarMask) >> 5, static_cast<uint32_t>(count));
      }
      ++n;
    }
  }
}

TEST(CapabilityWalker, RefusesLoopsAndPointersOutOfRange) {
  std::vector<uint8_t> c(4096, 0);
  c[0x06] = 0x10;  // Capabilities List
  c[0x34] = 0x40;
  c[0x40] = 0x01;
  c[0x41] = 0x48;
  c[0x48] = 0x05;
  c[0x49] = 0x40;  // back to the first
  EXPECT_NE(WalkCapabilities(c).error.find("loops"), std::string::npos);

  c[0x49] = 0x20;  // into the header
  EXPECT_NE(WalkCapabilities(c).error.find("outside"), std::string::npos);

  c[0x49] = 0x00;
  // Extended: 0x100 -> 0x180 -> 0x100.
  c[0x100] = 0x01;
  c[0x102] = 0x02 | (0x180 << 4 & 0xf0);
  c[0x103] = 0x180 >> 4;
  c[0x180] = 0x18;
  c[0x182] = 0x01;
  c[0x183] = 0x100 >> 4;
  const CapabilityWalk looped = WalkCapabilities(c);
  EXPECT_EQ(looped.standard.size(), 2u);
  EXPECT_NE(looped.error.find("loops"), std::string::npos) << looped.error;

  c[0x183] = 0x00;
  const CapabilityWalk ok = WalkCapabilities(c);
  EXPECT_EQ(ok.error, "");
  ASSERT_EQ(ok.extended.size(), 2u);
  EXPECT_EQ(ok.extended[1], (FoundCapability{0x180, 0x18, 1}));
}

}  // namespace
}  // namespace dxpu::gpu::test
