// Untrusted input never crashes the model: seeded random TLPs (valid ones of every kind,
// many aimed at its BARs, and structs with random fields) into Receive, random pushbuffers
// into the channel. Everything is counted, and every TLP the device sends is valid.
#include <gtest/gtest.h>

#include <array>

#include "gpu/gpu_registers.h"
#include "gpu_host.h"
#include "tlp_testutil.h"

namespace dxpu::gpu::test {
namespace {

TEST(GpuFuzz, RandomTlpsIntoReceive) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  rig.Submit(PushbufferBuilder().Nop());  // so that the channel has a ring it may fetch from
  rig.Run();
  GpuDevice& device = rig.device();
  const std::array<uint64_t, 3> bases = {rig.host().bar_address(0), rig.host().bar_address(2),
                                         rig.host().bar_address(0) + 0xff0000};
  dxpu::test::RandomTlpGenerator generator(rng());
  std::vector<uint8_t> buffer(4096 + 64);
  size_t sent = 0;
  const uint64_t in_before = device.counters().tlps_in;
  size_t invalid_out = 0;
  uint64_t now = 1000;
  for (int i = 0; i < 30000; ++i) {
    dxpu_tlp t{};
    const uint32_t pick = rng() % 10;
    if (pick < 6) {
      t = generator.next();
      // Aim most memory requests at the BARs (registers, memory window, MSI-X table).
      if (dxpu_tlp_kind_is_mem(t.kind) && rng() % 4 != 0) {
        const uint64_t offset = (rng() % 0x10000) & ~uint64_t{3};
        t.addr = bases[rng() % bases.size()] + offset;
        const uint64_t room = (4096 - t.addr % 4096) / 4;
        if (t.length_dw > room) {
          t.length_dw = static_cast<uint16_t>(room);
          if (t.length_dw == 1) t.last_be = 0;
        }
      }
      // Completions aimed at the device's own tags.
      if (dxpu_tlp_kind_is_cpl(t.kind) && rng() % 2 == 0) {
        t.requester_id = device.options().requester_id;
        t.tag = static_cast<uint16_t>(rng() % 64);
      }
    } else {
      // Random fields: almost always malformed; the payload pointer always covers Length.
      const auto r8 = [&] { return static_cast<uint8_t>(rng()); };
      t.kind = static_cast<uint8_t>(rng() % (DXPU_TLP_KIND_COUNT + 1));
      t.tc = r8() % 9;
      t.attr = r8() % 9;
      t.flags = r8() % 0x21;
      t.length_dw = static_cast<uint16_t>(rng() % 1026);
      t.requester_id = static_cast<uint16_t>(rng());
      t.tag = static_cast<uint16_t>(rng() % 0x500);
      t.first_be = r8() % 17;
      t.last_be = r8() % 17;
      t.addr = rng() % 2 ? bases[rng() % bases.size()] + (rng() % 0x2000) : rng();
      t.cfg_reg = static_cast<uint16_t>(rng() % 0x1004);
      t.completer_id = static_cast<uint16_t>(rng());
      t.byte_count = static_cast<uint16_t>(rng() % 4100);
      t.cpl_status = r8() % 8;
      t.lower_addr = r8() % 130;
      if (t.length_dw > 1024) t.length_dw = 1024;
      t.payload = rng() % 8 != 0 ? buffer.data() : nullptr;
    }
    for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
    if (t.payload != nullptr && dxpu_tlp_payload_len(&t) <= buffer.size()) {
      t.payload = buffer.data();
    }
    rig.host().set_now(now);
    device.Receive(t, now);
    ++sent;
    if (rng() % 16 == 0) {
      device.Poll(now, [&](const dxpu_tlp& out) {
        if (dxpu_tlp_validate(&out) != DXPU_TLP_OK) ++invalid_out;
        return rng() % 8 != 0;  // back-pressure now and then
      });
    }
    now += rng() % 100000;
    if (rng() % 64 == 0 && device.NextDeadline() != UINT64_MAX) {
      now = std::max(now, device.NextDeadline());
    }
  }
  device.Poll(now, [&](const dxpu_tlp& out) {
    if (dxpu_tlp_validate(&out) != DXPU_TLP_OK) ++invalid_out;
    return true;
  });
  const GpuCounters& c = device.counters();
  EXPECT_EQ(invalid_out, 0u);
  EXPECT_EQ(c.tlps_in - in_before, sent);
  EXPECT_GT(c.malformed, 0u);
  EXPECT_GT(c.unexpected_completions, 0u);
  EXPECT_GT(c.ur_sent, 0u);
  EXPECT_GT(c.mmio_reads + c.mmio_writes, 0u);
  EXPECT_GT(c.cfg_reads + c.cfg_writes, 0u);
  EXPECT_GT(c.unsupported, 0u);
}

TEST(GpuFuzz, RandomPushbuffers) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  for (int round = 0; round < 300; ++round) {
    PushbufferBuilder pb;
    const int words = 1 + static_cast<int>(rng() % 40);
    for (int w = 0; w < words; ++w) {
      uint32_t word = static_cast<uint32_t>(rng());
      if (rng() % 3 == 0) {
        // A plausible header: a known opcode with its own count or a near one.
        static constexpr uint8_t kOps[] = {0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0x13};
        const uint8_t op = kOps[rng() % 8];
        const uint16_t count = ArgumentCount(op).value_or(rng() % 4);
        word = (uint32_t{op} << 24) | static_cast<uint16_t>(count + (rng() % 4 == 0 ? 1 : 0));
      } else if (rng() % 2 == 0) {
        word = static_cast<uint32_t>(rng() % 4096);  // small sizes, counts, addresses
      } else {
        word |= 0x80000000u;  // large: sizes and counts out of range, addresses far away
      }
      pb.Raw(word);
    }
    rig.Submit(pb);
    ASSERT_TRUE(rig.Run(rig.host().now() + 1'000'000'000));
    if (rig.Reg(regs::kStatus) & regs::kStatusError) {
      rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
    }
  }
  EXPECT_TRUE(rig.checker().violations().empty()) << rig.checker().violations()[0];
  EXPECT_EQ(rig.device().counters().gpfifo_entries, 300u);
}

}  // namespace
}  // namespace dxpu::gpu::test
