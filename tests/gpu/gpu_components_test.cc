// The GPU model's parts on their own: sparse memory (against a flat reference), the command
// format (encode/decode, argument counts, GPFIFO entries), the DMA engine's tag and
// completion matching, the MSI-X table registers, and GpuDevice::Create's checks.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/commands.h"
#include "gpu/dma_engine.h"
#include "gpu/gpu_device.h"
#include "gpu/kernels.h"
#include "gpu/msix_table.h"
#include "gpu/sparse_memory.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

TEST(SparseMemory, MatchesAFlatMemory) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const uint64_t size = 5 * SparseMemory::kPageSize + 123;
  SparseMemory memory(size);
  std::vector<uint8_t> flat(size, 0);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t a = rng() % size;
    const uint64_t n = rng() % std::min<uint64_t>(size - a + 1, 3 * SparseMemory::kPageSize);
    switch (rng() % 4) {
      case 0: {
        const std::vector<uint8_t> bytes = RandomBytes(rng, n);
        ASSERT_TRUE(memory.Write(a, bytes));
        std::copy(bytes.begin(), bytes.end(), flat.begin() + static_cast<ptrdiff_t>(a));
        break;
      }
      case 1:
        ASSERT_TRUE(memory.Zero(a, n));
        std::fill_n(flat.begin() + static_cast<ptrdiff_t>(a), n, 0);
        break;
      case 2: {
        const uint64_t b = rng() % (size - n + 1);
        ASSERT_TRUE(memory.Copy(b, a, n));
        std::memmove(&flat[b], &flat[a], n);
        break;
      }
      default: {
        std::vector<uint8_t> out(n);
        ASSERT_TRUE(memory.Read(a, out));
        ASSERT_TRUE(std::equal(out.begin(), out.end(), flat.begin() + static_cast<ptrdiff_t>(a)))
            << "read " << a << "+" << n;
      }
    }
  }
  std::vector<uint8_t> all(size);
  ASSERT_TRUE(memory.Read(0, all));
  EXPECT_EQ(all, flat);
}

TEST(SparseMemory, RangesAndResidency) {
  SparseMemory memory(uint64_t{80} << 30);
  std::vector<uint8_t> out(8, 0xff);
  EXPECT_TRUE(memory.Read((uint64_t{80} << 30) - 8, out));
  EXPECT_EQ(out, std::vector<uint8_t>(8, 0));
  EXPECT_FALSE(memory.Read((uint64_t{80} << 30) - 7, out));
  EXPECT_FALSE(memory.Read(UINT64_MAX - 3, out));
  EXPECT_FALSE(memory.Write(uint64_t{80} << 30, out));
  EXPECT_EQ(memory.resident_bytes(), 0u);
  const uint8_t one = 1;
  EXPECT_TRUE(memory.Write(uint64_t{70} << 30, {&one, 1}));
  EXPECT_EQ(memory.resident_bytes(), SparseMemory::kPageSize);
  EXPECT_TRUE(memory.Zero(0, uint64_t{80} << 30));
  EXPECT_EQ(memory.resident_bytes(), 0u) << "whole pages zeroed are freed";
}

TEST(Commands, EncodeDecodeRoundTrip) {
  const CopyCommand copy{.flags = 3,
                         .size = 0x1'2345'6789,
                         .src = 0xaabb'ccdd'eeff'0011,
                         .dst = 0x1122'3344'5566'7788};
  const SemaphoreCommand sem{
      .address = 0xfeed'0000'1000, .payload = 0xdead'beef'cafe'f00d, .flags = 7};
  const GemmCommand gemm{.m = 1,
                         .n = 2,
                         .k = 3,
                         .alpha = 1.5f,
                         .beta = -0.25f,
                         .a = 0x100,
                         .b = 0x1'0000'0200,
                         .c = 0x300,
                         .flags = kGemmTransposeA | kGemmTransposeB};
  const PushbufferBuilder pb = PushbufferBuilder()
                                   .Nop(3)
                                   .Copy(copy)
                                   .Semaphore(sem)
                                   .Interrupt(9)
                                   .Memset32({.dst = 8, .count = 10, .value = 0xabcdef01})
                                   .Axpy({.n = 5, .a = -2.5f, .x = 16, .y = 32})
                                   .Gemm(gemm)
                                   .ReduceSum({.n = 77, .x = 64, .out = 128})
                                   .Timed(0x0000'000d'f847'5800);  // 60 s: both DWs used
  const std::vector<Command> expected = {
      NopCommand{.arguments = 3},
      copy,
      sem,
      InterruptCommand{.vector = 9},
      Memset32Command{.dst = 8, .count = 10, .value = 0xabcdef01},
      AxpyCommand{.n = 5, .a = -2.5f, .x = 16, .y = 32},
      gemm,
      ReduceSumCommand{.n = 77, .x = 64, .out = 128},
      TimedCommand{.ns = 60'000'000'000}};
  std::span<const uint32_t> words(pb.words());
  for (const Command& want : expected) {
    const DecodedCommand d = DecodeCommand(words);
    ASSERT_EQ(d.error, ChannelError::kNone);
    ASSERT_TRUE(d.command.has_value());
    EXPECT_EQ(*d.command, want);
    words = words.subspan(d.dwords);
  }
  EXPECT_TRUE(words.empty());
  // The byte image is little-endian: COPY's header DW is 01 00 00 07... reversed.
  const std::vector<uint8_t> bytes = PushbufferBuilder().Copy(copy).bytes();
  EXPECT_EQ(bytes[0], 7);
  EXPECT_EQ(bytes[3], 0x01);
  EXPECT_EQ(bytes[8], 0x89) << "size lo, low byte";
}

// TIMED (0x14): header 0x14000002, then ns lo, hi.
TEST(Commands, Timed) {
  const PushbufferBuilder pb = PushbufferBuilder().Timed(0x0123'4567'89ab'cdef);
  EXPECT_EQ(pb.words(), (std::vector<uint32_t>{0x14000002, 0x89abcdef, 0x01234567}));
  const DecodedCommand d = DecodeCommand(pb.words());
  ASSERT_EQ(d.error, ChannelError::kNone);
  EXPECT_EQ(d.dwords, 3u);
  EXPECT_EQ(*d.command, Command(TimedCommand{.ns = 0x0123'4567'89ab'cdef}));
  // Truncated: the hi DW is past the end of the pushbuffer.
  EXPECT_EQ(DecodeCommand(std::span<const uint32_t>(pb.words()).first(2)).error,
            ChannelError::kBadLength);
  EXPECT_EQ(DecodeCommand(std::vector<uint32_t>{0x14000002}).error, ChannelError::kBadLength);
  // A count other than 2.
  EXPECT_EQ(DecodeCommand(std::vector<uint32_t>{0x14000001, 5}).error, ChannelError::kBadLength);
  EXPECT_EQ(DecodeCommand(std::vector<uint32_t>{0x14000003, 5, 0, 0}).error,
            ChannelError::kBadLength);
  // Header bits 23:16 are ignored, as for every command.
  const DecodedCommand ignored = DecodeCommand(std::vector<uint32_t>{0x14ab0002, 7, 0});
  ASSERT_EQ(ignored.error, ChannelError::kNone);
  EXPECT_EQ(*ignored.command, Command(TimedCommand{.ns = 7}));
}

TEST(Commands, ArgumentCountsAndErrors) {
  const std::pair<Opcode, uint16_t> counts[] = {
      {Opcode::kCopy, 7},      {Opcode::kSemaphoreRelease, 5},
      {Opcode::kInterrupt, 1}, {Opcode::kMemset32, 4},
      {Opcode::kAxpy, 6},      {Opcode::kGemm, 12},
      {Opcode::kReduceSum, 5}, {Opcode::kTimed, 2}};
  for (const auto& [op, n] : counts) {
    EXPECT_EQ(ArgumentCount(static_cast<uint8_t>(op)), n);
    std::vector<uint32_t> words(n + 2, 0);
    words[0] = CommandHeader(op, n);
    EXPECT_EQ(DecodeCommand(words).error, ChannelError::kNone);
    EXPECT_EQ(DecodeCommand(words).dwords, n + 1u);
    words[0] = CommandHeader(op, n + 1);
    EXPECT_EQ(DecodeCommand(words).error, ChannelError::kBadLength);
    words[0] = CommandHeader(op, n - 1);
    EXPECT_EQ(DecodeCommand(words).error, ChannelError::kBadLength);
    words[0] = CommandHeader(op, n);
    EXPECT_EQ(DecodeCommand(std::span<const uint32_t>(words).first(n)).error,
              ChannelError::kBadLength)
        << "arguments past the end";
  }
  for (uint32_t op = 0; op < 256; ++op) {
    const bool known = op <= 3 || (op >= 0x10 && op <= 0x14);
    const std::vector<uint32_t> words = {op << 24};
    const DecodedCommand d = DecodeCommand(words);
    if (known) {
      EXPECT_NE(d.error, ChannelError::kBadOpcode) << op;
    } else {
      EXPECT_EQ(d.error, ChannelError::kBadOpcode) << op;
    }
  }
  // NOP takes any count, within the pushbuffer; the bits 23:16 are ignored.
  EXPECT_EQ(DecodeCommand(std::vector<uint32_t>{0x00ff0002, 1, 2}).dwords, 3u);
  EXPECT_EQ(DecodeCommand(std::vector<uint32_t>{}).error, ChannelError::kBadLength);
}

TEST(Commands, GpfifoEntries) {
  const GpfifoEntry e{.pushbuffer = 0x0123'4567'89ab'cdec, .length = 4096, .flags = 0x55};
  const auto bytes = EncodeGpfifoEntry(e);
  EXPECT_EQ(bytes[0], 0xec);
  EXPECT_EQ(bytes[7], 0x01);
  EXPECT_EQ(bytes[9], 0x10);
  EXPECT_EQ(DecodeGpfifoEntry(bytes), e);
  EXPECT_EQ(CheckGpfifoEntry(e), ChannelError::kNone) << "flags are reserved, ignored";
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = 2, .length = 4, .flags = 0}),
            ChannelError::kBadAlignment);
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = 0, .length = 0, .flags = 0}), ChannelError::kBadLength);
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = 0, .length = 1u << 20, .flags = 0}),
            ChannelError::kNone);
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = 0, .length = (1u << 20) + 4, .flags = 0}),
            ChannelError::kBadLength);
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = UINT64_MAX - 3, .length = 4, .flags = 0}),
            ChannelError::kNone);
  EXPECT_EQ(CheckGpfifoEntry({.pushbuffer = UINT64_MAX - 3, .length = 8, .flags = 0}),
            ChannelError::kBadAddress);
}

// A CplD for one of the engine's reads.
dxpu_tlp Completion(const dxpu_tlp& mrd, uint16_t byte_count, uint8_t lower_addr,
                    uint16_t length_dw, const uint8_t* payload) {
  dxpu_tlp c{};
  c.kind = DXPU_TLP_CPLD;
  c.requester_id = mrd.requester_id;
  c.tag = mrd.tag;
  c.completer_id = 0;
  c.byte_count = byte_count;
  c.lower_addr = lower_addr;
  c.length_dw = length_dw;
  c.payload = payload;
  return c;
}

TEST(DmaEngine, TagsAndCompletionMatching) {
  DmaEngine dma({.requester_id = 0x0300, .max_outstanding_reads = 2, .completion_timeout_ns = 100});
  TlpQueue out;
  ASSERT_TRUE(dma.StartRead(1, 0x1002, 600, 512));  // 0x1002..0x125a: two reads
  EXPECT_TRUE(dma.IssueRead(out));
  EXPECT_TRUE(dma.IssueRead(out));
  EXPECT_FALSE(dma.IssueRead(out)) << "all pieces issued";
  ASSERT_EQ(out.size(), 2u);
  const dxpu_tlp r0 = out[0].View();
  const dxpu_tlp r1 = out[1].View();
  EXPECT_EQ(r0.addr, 0x1000u);
  EXPECT_EQ(r0.first_be, 0xc);
  EXPECT_EQ(r0.requester_id, 0x0300);
  EXPECT_NE(r0.tag, r1.tag);
  EXPECT_EQ(dma.reads_in_flight(), 2u);
  std::vector<uint8_t> data(1024, 0xab);
  // Wrong tag / wrong requester: unexpected.
  // TakesAsData says beforehand whether OnCompletion takes a completion as data.
  dxpu_tlp wrong = Completion(r0, 510, 2, 128, data.data());
  wrong.tag = 7;
  EXPECT_FALSE(dma.TakesAsData(wrong));
  EXPECT_EQ(dma.OnCompletion(wrong).kind, DmaCompletion::Kind::kUnexpected);
  wrong = Completion(r0, 510, 2, 128, data.data());
  wrong.requester_id = 0x0301;
  EXPECT_FALSE(dma.TakesAsData(wrong));
  EXPECT_EQ(dma.OnCompletion(wrong).kind, DmaCompletion::Kind::kUnexpected);
  // Byte Count or Lower Address not what the read expects: malformed, still in flight.
  EXPECT_FALSE(dma.TakesAsData(Completion(r0, 508, 2, 128, data.data())));
  EXPECT_EQ(dma.OnCompletion(Completion(r0, 508, 2, 128, data.data())).kind,
            DmaCompletion::Kind::kMalformed);
  EXPECT_FALSE(dma.TakesAsData(Completion(r0, 510, 6, 128, data.data())));
  EXPECT_EQ(dma.OnCompletion(Completion(r0, 510, 6, 128, data.data())).kind,
            DmaCompletion::Kind::kMalformed);
  dxpu_tlp failed = Completion(r0, 510, 2, 128, data.data());
  failed.cpl_status = DXPU_TLP_CPL_CA;
  EXPECT_FALSE(dma.TakesAsData(failed)) << "a failed read is no data";
  EXPECT_TRUE(dma.TakesAsData(Completion(r0, 510, 2, 16, data.data())));
  EXPECT_EQ(dma.reads_in_flight(), 2u) << "asking changes nothing";
  // Split in two at a 64-byte boundary: 62 bytes, then the rest.
  DmaCompletion c = dma.OnCompletion(Completion(r0, 510, 2, 16, data.data()));
  ASSERT_EQ(c.kind, DmaCompletion::Kind::kData);
  EXPECT_EQ(c.offset, 0u);
  EXPECT_EQ(c.data.size(), 62u);
  EXPECT_FALSE(c.read_done);
  c = dma.OnCompletion(Completion(r0, 448, 64, 112, data.data()));
  ASSERT_EQ(c.kind, DmaCompletion::Kind::kData);
  EXPECT_EQ(c.offset, 62u);
  EXPECT_EQ(c.data.size(), 448u);
  EXPECT_TRUE(c.read_done);
  EXPECT_FALSE(dma.ReadDone(1));
  // The second read fails: the read is over.
  dxpu_tlp ur{};
  ur.kind = DXPU_TLP_CPL;
  ur.requester_id = 0x0300;
  ur.tag = r1.tag;
  ur.cpl_status = DXPU_TLP_CPL_UR;
  ur.byte_count = 90;
  c = dma.OnCompletion(ur);
  EXPECT_EQ(c.kind, DmaCompletion::Kind::kFailed);
  EXPECT_EQ(c.job, 1u);
  EXPECT_TRUE(dma.ReadDone(1));
  EXPECT_EQ(dma.OnCompletion(ur).kind, DmaCompletion::Kind::kUnexpected) << "tag retired";
}

TEST(DmaEngine, TimeoutsAndTagReuseOrder) {
  DmaEngine dma({.requester_id = 1, .max_outstanding_reads = 3, .completion_timeout_ns = 100});
  TlpQueue out;
  ASSERT_TRUE(dma.StartRead(5, 0, 384, 128));  // three reads
  while (dma.IssueRead(out)) {
  }
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(dma.NextDeadline(), UINT64_MAX) << "not sent yet";
  dma.OnSent(out[0].View(), 10);
  dma.OnSent(out[1].View(), 20);
  EXPECT_EQ(dma.NextDeadline(), 110u);
  std::vector<uint64_t> jobs;
  EXPECT_EQ(dma.ExpireReads(109, &jobs), 0u);
  EXPECT_EQ(dma.ExpireReads(110, &jobs), 1u);
  EXPECT_EQ(jobs, std::vector<uint64_t>{5});
  // The expired read's tag is the only free one: the next read gets it.
  ASSERT_TRUE(dma.StartRead(6, 4096, 128, 128));
  TlpQueue more;
  ASSERT_TRUE(dma.IssueRead(more));
  EXPECT_EQ(more[0].View().tag, out[0].View().tag);
  dma.Reset();
  EXPECT_EQ(dma.reads_in_flight(), 0u);
  EXPECT_EQ(dma.NextDeadline(), UINT64_MAX);
}

TEST(MsixTable, Registers) {
  MsixTable t(3);
  EXPECT_EQ(t.table_bytes(), 48u);
  EXPECT_EQ(t.pba_bytes(), 8u);
  EXPECT_EQ(t.ReadTable(12), 1u) << "masked at power-on";
  t.WriteTable(0, 0xfee00003, 0xffffffff);
  EXPECT_EQ(t.ReadTable(0), 0xfee00000u);
  t.WriteTable(8, 0x12345678, 0x0000ff00);
  EXPECT_EQ(t.ReadTable(8), 0x00005600u) << "byte lanes";
  t.WriteTable(48, 1, 0xffffffff);  // outside
  EXPECT_EQ(t.ReadTable(48), 0u);
  const MsixState enabled{.present = true,
                          .enabled = true,
                          .function_masked = false,
                          .table_size = 3,
                          .table_bar = 0,
                          .table_offset = 0,
                          .pba_bar = 0,
                          .pba_offset = 0};
  t.Signal(0, enabled);
  t.Signal(2, enabled);
  t.Signal(3, enabled);  // no such vector
  EXPECT_EQ(t.ReadPba(0), 0b101u);
  TlpQueue out;
  EXPECT_EQ(t.Deliver(enabled, true, 0x100, out), 0u) << "both masked";
  t.WriteTable(12, 0, 0xffffffff);
  EXPECT_EQ(t.Deliver(enabled, false, 0x100, out), 0u) << "no Bus Master";
  EXPECT_EQ(t.Deliver(enabled, true, 0x100, out), 1u);
  EXPECT_EQ(t.ReadPba(0), 0b100u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].header.addr, 0xfee00000u);
  EXPECT_EQ(out[0].payload, (std::vector<uint8_t>{0, 0x56, 0, 0}));
}

// A completion the device's DMA engine would not take as data is left to the caller, who
// delivers its pieces one by one so that the device counts each as it does.
TEST(GpuDevice, SplitCompletionItDoesNotWaitForIsLeftUntouched) {
  std::string error;
  auto dev = GpuDevice::Create(*FindProfile("dxgpu"), {.requester_id = 0x0100}, &error);
  ASSERT_NE(dev, nullptr) << error;
  std::vector<uint8_t> data(4096, 0x5a);
  dxpu_tlp mrd{};
  mrd.requester_id = 0x0100;
  mrd.tag = 3;
  const dxpu_tlp cpl = Completion(mrd, 4096, 0, 1024, data.data());
  ASSERT_EQ(dxpu_tlp_validate(&cpl), DXPU_TLP_OK);
  const GpuCounters before = dev->counters();
  EXPECT_FALSE(dev->ReceiveSplitCompletion(cpl, 16, 0));
  EXPECT_EQ(dev->counters().tlps_in, before.tlps_in);
  EXPECT_EQ(dev->counters().unexpected_completions, before.unexpected_completions);
  // The same TLP through Receive is counted, as unexpected.
  dev->Receive(cpl, 0);
  EXPECT_EQ(dev->counters().tlps_in, before.tlps_in + 1);
  EXPECT_EQ(dev->counters().unexpected_completions, before.unexpected_completions + 1);
}

TEST(GpuDeviceCreate, RefusesBadOptionsAndProfiles) {
  const DeviceProfile p = *FindProfile("dxgpu");
  std::string error;
  EXPECT_EQ(GpuDevice::Create(p,
                              {.requester_id = 1,
                               .memory_bytes = 0,
                               .max_outstanding_reads = 0,
                               .completion_timeout_ns = 1,
                               .read_completion_boundary = 64},
                              &error),
            nullptr);
  EXPECT_NE(error.find("max_outstanding_reads"), std::string::npos);
  EXPECT_EQ(GpuDevice::Create(p,
                              {.requester_id = 1,
                               .memory_bytes = 0,
                               .max_outstanding_reads = 257,
                               .completion_timeout_ns = 1,
                               .read_completion_boundary = 64},
                              &error),
            nullptr);
  EXPECT_EQ(GpuDevice::Create(p,
                              {.requester_id = 1,
                               .memory_bytes = 0,
                               .max_outstanding_reads = 8,
                               .completion_timeout_ns = 1,
                               .read_completion_boundary = 32},
                              &error),
            nullptr);
  EXPECT_EQ(GpuDevice::Create(p,
                              {.requester_id = 1,
                               .memory_bytes = 0,
                               .max_outstanding_reads = 8,
                               .completion_timeout_ns = 0,
                               .read_completion_boundary = 64},
                              &error),
            nullptr);
  EXPECT_NE(GpuDevice::Create(p,
                              {.requester_id = 1,
                               .memory_bytes = 4096,
                               .max_outstanding_reads = 1,
                               .completion_timeout_ns = 1,
                               .read_completion_boundary = 128},
                              &error),
            nullptr);
  DeviceProfile msix_elsewhere = p;
  msix_elsewhere.msix.table_bar = 2;
  EXPECT_EQ(GpuDevice::Create(msix_elsewhere, {}, &error), nullptr);
  DeviceProfile broken = p;
  broken.bars.clear();
  EXPECT_EQ(GpuDevice::Create(broken, {}, &error), nullptr);
  EXPECT_FALSE(error.empty());
  for (std::string_view name : ProfileNames()) {
    std::unique_ptr<GpuDevice> d = GpuDevice::Create(*FindProfile(name), {}, &error);
    ASSERT_NE(d, nullptr) << name << ": " << error;
    EXPECT_EQ(d->memory_bytes(), FindProfile(name)->roofline.memory_bytes);
    EXPECT_EQ(d->resident_memory_bytes(), 0u);
    EXPECT_EQ(d->NextDeadline(), UINT64_MAX);
  }
}

TEST(Roofline, KernelCosts) {
  EXPECT_EQ(CostOf(Memset32Command{.dst = 0, .count = 10, .value = 0}),
            (KernelCost{.flops = 0, .bytes = 40}));
  EXPECT_EQ(CostOf(AxpyCommand{.n = 10, .a = 1, .x = 0, .y = 0}),
            (KernelCost{.flops = 20, .bytes = 120}));
  EXPECT_EQ(
      CostOf(GemmCommand{.m = 2, .n = 3, .k = 4, .alpha = 1, .beta = 0, .a = 0, .b = 0, .c = 0}),
      (KernelCost{.flops = 48, .bytes = 4 * (8 + 12 + 12)}));
  EXPECT_EQ(CostOf(ReduceSumCommand{.n = 10, .x = 0, .out = 0}),
            (KernelCost{.flops = 10, .bytes = 40}));
  const Roofline r{.peak_fp32_flops = 1e12,
                   .memory_bandwidth_bytes = 1e11,
                   .launch_overhead_ns = 100,
                   .memory_bytes = 0};
  EXPECT_EQ(KernelNs(r, {.flops = 1e6, .bytes = 1e4}), 100u + 1000u) << "compute-bound";
  EXPECT_EQ(KernelNs(r, {.flops = 1e3, .bytes = 1e6}), 100u + 10000u) << "memory-bound";
  EXPECT_EQ(KernelNs(r, {.flops = 0, .bytes = 1}), 101u) << "rounded up";
  EXPECT_EQ(KernelNs(TimedCommand{.ns = 123456}), 123456u) << "TIMED: no launch overhead";
  EXPECT_EQ(DeviceCopyNs(r, 50000), 1000u);
}

}  // namespace
}  // namespace dxpu::gpu::test
