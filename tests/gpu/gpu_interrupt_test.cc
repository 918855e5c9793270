// MSI-X: messages from the table entry (address, data, Requester ID, 1 DW) when enabled and
// unmasked; a masked vector's pending bit and its message on unmask; the function mask; no
// interrupt without MSI-X enabled; INTR_ENABLE edges; the INTERRUPT command.
#include <gtest/gtest.h>

#include "gpu/gpu_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

uint32_t VectorControl(uint16_t v) { return kMsixTable + 16u * v + 12; }

class GpuInterrupts : public ::testing::Test {
 protected:
  void SetUp() override {
    rig_.Start();
    rig_.host().on_device_tlp = [this](const dxpu_tlp& t) {
      rig_.checker().OnDeviceTlp(t);
      if (t.kind == DXPU_TLP_MWR) writes_.push_back(t.addr);
      if (t.kind == DXPU_TLP_MWR && t.addr == rig_.host().options().msix_address) {
        EXPECT_EQ(t.length_dw, 1);
        EXPECT_EQ(t.first_be, 0xf);
        EXPECT_EQ(t.requester_id, rig_.device().options().requester_id);
      }
    };
  }
  std::vector<uint32_t> Vectors() {
    std::vector<uint32_t> v;
    for (const MsixMessage& m : rig_.host().msix_messages()) v.push_back(m.data);
    return v;
  }
  uint16_t MsixControlOffset() {
    return static_cast<uint16_t>(*rig_.device().config().capability_offset(CapabilityId::kMsix) +
                                 pci::kMsixFlags);
  }
  void Release(uint32_t flags) {
    rig_.Submit(
        PushbufferBuilder().Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = flags}));
    ASSERT_TRUE(rig_.Run());
  }

  GpuRig rig_;
  std::vector<uint64_t> writes_;
};

TEST_F(GpuInterrupts, SemaphoreInterruptAfterTheRelease) {
  rig_.SetReg(regs::kIntrEnable, regs::kIntrSemaphore);
  Release(kSemaphoreInterrupt);
  EXPECT_EQ(Vectors(), std::vector<uint32_t>{0});
  ASSERT_GE(writes_.size(), 2u);
  EXPECT_EQ(writes_[writes_.size() - 2], kSemaphoreArea);
  EXPECT_EQ(writes_.back(), rig_.host().options().msix_address) << "the message comes after";
  EXPECT_EQ(rig_.device().counters().interrupts_sent, 1u);
  // Status still set: another release sends nothing until the host clears it.
  Release(kSemaphoreInterrupt);
  EXPECT_EQ(Vectors().size(), 1u);
  rig_.SetReg(regs::kIntrStatus, regs::kIntrSemaphore);
  Release(kSemaphoreInterrupt);
  EXPECT_EQ(Vectors(), (std::vector<uint32_t>{0, 0}));
  // A release without the flag sets nothing.
  rig_.SetReg(regs::kIntrStatus, regs::kIntrSemaphore);
  Release(0);
  EXPECT_EQ(rig_.Reg(regs::kIntrStatus), 0u);
  EXPECT_EQ(Vectors().size(), 2u);
}

TEST_F(GpuInterrupts, EnablingAnAlreadySetBitSends) {
  Release(kSemaphoreInterrupt);
  EXPECT_TRUE(Vectors().empty()) << "INTR_ENABLE is 0";
  EXPECT_EQ(rig_.Reg(regs::kIntrStatus), regs::kIntrSemaphore);
  rig_.SetReg(regs::kIntrEnable, regs::kIntrSemaphore);
  rig_.host().Pump();
  EXPECT_EQ(Vectors(), std::vector<uint32_t>{0});
}

TEST_F(GpuInterrupts, InterruptCommandSendsItsVector) {
  rig_.Submit(PushbufferBuilder().Interrupt(5).Interrupt(15));
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(Vectors(), (std::vector<uint32_t>{5, 15}));
  EXPECT_EQ(rig_.Reg(regs::kIntrStatus), regs::kIntrSemaphore);
}

TEST_F(GpuInterrupts, MaskedVectorIsPendingUntilUnmasked) {
  rig_.SetReg(VectorControl(7), 1);  // mask vector 7
  rig_.Submit(PushbufferBuilder().Interrupt(7).Interrupt(2));
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(Vectors(), std::vector<uint32_t>{2});
  EXPECT_EQ(rig_.Reg(kMsixPba), 1u << 7);
  // Signalled again while pending: still one pending bit, one message later.
  rig_.Submit(PushbufferBuilder().Interrupt(7));
  ASSERT_TRUE(rig_.Run());
  rig_.SetReg(VectorControl(7), 0);  // unmask
  rig_.host().Pump();
  EXPECT_EQ(Vectors(), (std::vector<uint32_t>{2, 7}));
  EXPECT_EQ(rig_.Reg(kMsixPba), 0u);
  EXPECT_EQ(rig_.device().counters().interrupts_sent, 2u);
}

TEST_F(GpuInterrupts, FunctionMask) {
  rig_.host().ConfigWrite(MsixControlOffset(), 2, pci::kMsixFlagsEnable | pci::kMsixFlagsMaskAll);
  rig_.Submit(PushbufferBuilder().Interrupt(3).Interrupt(12));
  ASSERT_TRUE(rig_.Run());
  EXPECT_TRUE(Vectors().empty());
  EXPECT_EQ(rig_.Reg(kMsixPba), (1u << 3) | (1u << 12));
  rig_.host().ConfigWrite(MsixControlOffset(), 2, pci::kMsixFlagsEnable);
  rig_.host().Pump();
  EXPECT_EQ(Vectors(), (std::vector<uint32_t>{3, 12}));
  EXPECT_EQ(rig_.Reg(kMsixPba), 0u);
}

TEST_F(GpuInterrupts, NoInterruptWithoutMsixEnabled) {
  rig_.host().ConfigWrite(MsixControlOffset(), 2, 0);
  rig_.SetReg(regs::kIntrEnable, regs::kIntrSemaphore | regs::kIntrError);
  rig_.Submit(PushbufferBuilder().Interrupt(4));
  Release(kSemaphoreInterrupt);
  EXPECT_EQ(rig_.Reg(kMsixPba), 0u) << "not even pending";
  rig_.host().ConfigWrite(MsixControlOffset(), 2, pci::kMsixFlagsEnable);
  rig_.host().Pump();
  EXPECT_TRUE(Vectors().empty());
  EXPECT_EQ(rig_.device().counters().interrupts_sent, 0u);
}

TEST_F(GpuInterrupts, MessageUsesTheTableEntry) {
  const uint64_t address = 0x0000'00ab'cdef'0040;
  rig_.SetReg(kMsixTable + 16 * 9 + 0, static_cast<uint32_t>(address));
  rig_.SetReg(kMsixTable + 16 * 9 + 4, static_cast<uint32_t>(address >> 32));
  rig_.SetReg(kMsixTable + 16 * 9 + 8, 0x5a5a1234);
  std::vector<dxpu_tlp> seen;
  std::vector<uint32_t> data;
  rig_.host().on_device_tlp = [&](const dxpu_tlp& t) {
    if (t.kind == DXPU_TLP_MWR && t.addr == address) {
      seen.push_back(t);
      data.push_back(t.payload[0] | t.payload[1] << 8 | t.payload[2] << 16 |
                     uint32_t{t.payload[3]} << 24);
    }
  };
  rig_.Submit(PushbufferBuilder().Interrupt(9));
  ASSERT_TRUE(rig_.Run());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].length_dw, 1);
  EXPECT_EQ(seen[0].requester_id, 0x0100);
  EXPECT_EQ(data[0], 0x5a5a1234u);
}

TEST_F(GpuInterrupts, ErrorUsesVectorOneWhenItExists) {
  rig_.SetReg(regs::kIntrEnable, regs::kIntrError);
  rig_.Submit(PushbufferBuilder().Raw(0xee000000));
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(Vectors(), std::vector<uint32_t>{1});
}

TEST(GpuInterruptsSingleVector, ErrorUsesVectorZero) {
  // A profile with one MSI-X vector.
  DeviceProfile p = *FindProfile("dxgpu");
  p.msix.vectors = 1;
  std::string error;
  std::unique_ptr<GpuDevice> device = GpuDevice::Create(p, {}, &error);
  ASSERT_NE(device, nullptr) << error;
  TestHost host(*device);
  host.Enumerate();
  host.Mmio32Write(regs::kGpfifoBaseLo, 0);
  host.Mmio32Write(regs::kGpfifoBaseHi, 1);
  host.Mmio32Write(regs::kGpfifoEntries, 4);
  host.Mmio32Write(regs::kIntrEnable, regs::kIntrError);
  host.Mmio32Write(regs::kControl, regs::kControlEnable);
  const std::vector<uint8_t> pb = PushbufferBuilder().Raw(0xee000000).bytes();
  host.memory().Write(kPushbufferArea, pb);
  host.memory().Write(kRingAddress,
                      EncodeGpfifoEntry({.pushbuffer = kPushbufferArea, .length = 4, .flags = 0}));
  host.Mmio32Write(regs::kGpPut, 1);
  ASSERT_TRUE(host.RunUntilIdle());
  ASSERT_EQ(host.msix_messages().size(), 1u);
  EXPECT_EQ(host.msix_messages()[0].data, 0u);
}

}  // namespace
}  // namespace dxpu::gpu::test
