// commands.cc - GPFIFO entries and pushbuffer commands: decoding, checking, building.
#include "gpu/commands.h"

#include <bit>

namespace dxpu::gpu {
namespace {

uint32_t Le32(std::span<const uint8_t> b, size_t at) {
  return b[at] | (uint32_t{b[at + 1]} << 8) | (uint32_t{b[at + 2]} << 16) |
         (uint32_t{b[at + 3]} << 24);
}

void PutLe32(uint8_t* p, uint32_t v) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

// Reads the arguments of a decoded header in order.
class Args {
 public:
  explicit Args(std::span<const uint32_t> args) : args_(args) {}
  uint32_t U32() { return args_[next_++]; }
  uint64_t U64() {
    const uint64_t lo = U32();
    return lo | (uint64_t{U32()} << 32);
  }
  float F32() { return std::bit_cast<float>(U32()); }

 private:
  std::span<const uint32_t> args_;
  size_t next_ = 0;
};

Command Decode(Opcode op, std::span<const uint32_t> words) {
  Args a(words);
  switch (op) {
    case Opcode::kNop:
      return NopCommand{.arguments = static_cast<uint16_t>(words.size())};
    case Opcode::kCopy: {
      CopyCommand c;
      c.flags = a.U32();
      c.size = a.U64();
      c.src = a.U64();
      c.dst = a.U64();
      return c;
    }
    case Opcode::kSemaphoreRelease: {
      SemaphoreCommand c;
      c.address = a.U64();
      c.payload = a.U64();
      c.flags = a.U32();
      return c;
    }
    case Opcode::kInterrupt:
      return InterruptCommand{.vector = a.U32()};
    case Opcode::kMemset32: {
      Memset32Command c;
      c.dst = a.U64();
      c.count = a.U32();
      c.value = a.U32();
      return c;
    }
    case Opcode::kAxpy: {
      AxpyCommand c;
      c.n = a.U32();
      c.a = a.F32();
      c.x = a.U64();
      c.y = a.U64();
      return c;
    }
    case Opcode::kGemm: {
      GemmCommand c;
      c.m = a.U32();
      c.n = a.U32();
      c.k = a.U32();
      c.alpha = a.F32();
      c.beta = a.F32();
      c.a = a.U64();
      c.b = a.U64();
      c.c = a.U64();
      c.flags = a.U32();
      return c;
    }
    case Opcode::kReduceSum: {
      ReduceSumCommand c;
      c.n = a.U32();
      c.x = a.U64();
      c.out = a.U64();
      return c;
    }
    case Opcode::kTimed:
      return TimedCommand{.ns = a.U64()};
  }
  return NopCommand{};
}

}  // namespace

std::string_view ToString(ChannelError error) {
  switch (error) {
    case ChannelError::kNone:
      return "none";
    case ChannelError::kBadOpcode:
      return "BAD_OPCODE";
    case ChannelError::kBadLength:
      return "BAD_LENGTH";
    case ChannelError::kBadAddress:
      return "BAD_ADDRESS";
    case ChannelError::kDmaUr:
      return "DMA_UR";
    case ChannelError::kDmaTimeout:
      return "DMA_TIMEOUT";
    case ChannelError::kBadRing:
      return "BAD_RING";
    case ChannelError::kKernelTooBig:
      return "KERNEL_TOO_BIG";
    case ChannelError::kBadAlignment:
      return "BAD_ALIGNMENT";
    case ChannelError::kBadVector:
      return "BAD_VECTOR";
    case ChannelError::kBadFlags:
      return "BAD_FLAGS";
  }
  return "unknown";
}

GpfifoEntry DecodeGpfifoEntry(std::span<const uint8_t, kGpfifoEntryBytes> bytes) {
  return GpfifoEntry{.pushbuffer = Le32(bytes, 0) | (uint64_t{Le32(bytes, 4)} << 32),
                     .length = Le32(bytes, 8),
                     .flags = Le32(bytes, 12)};
}

std::array<uint8_t, kGpfifoEntryBytes> EncodeGpfifoEntry(const GpfifoEntry& entry) {
  std::array<uint8_t, kGpfifoEntryBytes> b{};
  PutLe32(b.data(), static_cast<uint32_t>(entry.pushbuffer));
  PutLe32(&b[4], static_cast<uint32_t>(entry.pushbuffer >> 32));
  PutLe32(&b[8], entry.length);
  PutLe32(&b[12], entry.flags);
  return b;
}

ChannelError CheckGpfifoEntry(const GpfifoEntry& entry) {
  if (entry.pushbuffer % 4 != 0) return ChannelError::kBadAlignment;
  if (entry.length < 4 || entry.length > kMaxPushbufferBytes || entry.length % 4 != 0) {
    return ChannelError::kBadLength;
  }
  if (entry.length - 1 > UINT64_MAX - entry.pushbuffer) return ChannelError::kBadAddress;
  return ChannelError::kNone;
}

std::optional<uint16_t> ArgumentCount(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kNop:
      return std::nullopt;  // any
    case Opcode::kCopy:
      return 7;
    case Opcode::kSemaphoreRelease:
      return 5;
    case Opcode::kInterrupt:
      return 1;
    case Opcode::kMemset32:
      return 4;
    case Opcode::kAxpy:
      return 6;
    case Opcode::kGemm:
      return 12;
    case Opcode::kReduceSum:
      return 5;
    case Opcode::kTimed:
      return 2;
  }
  return std::nullopt;
}

DecodedCommand DecodeCommand(std::span<const uint32_t> words) {
  DecodedCommand d;
  if (words.empty()) {
    d.error = ChannelError::kBadLength;
    return d;
  }
  const uint32_t header = words[0];
  const auto opcode = static_cast<uint8_t>(header >> 24);
  const auto arguments = static_cast<uint16_t>(header & 0xffffu);
  const bool known = opcode == static_cast<uint8_t>(Opcode::kNop) || ArgumentCount(opcode);
  if (!known) {
    d.error = ChannelError::kBadOpcode;
    return d;
  }
  const std::optional<uint16_t> expected = ArgumentCount(opcode);
  if ((expected && *expected != arguments) || arguments > words.size() - 1) {
    d.error = ChannelError::kBadLength;
    return d;
  }
  d.dwords = 1u + arguments;
  d.command = Decode(static_cast<Opcode>(opcode), words.subspan(1, arguments));
  return d;
}

void PushbufferBuilder::Put64(uint64_t v) {
  words_.push_back(static_cast<uint32_t>(v));
  words_.push_back(static_cast<uint32_t>(v >> 32));
}

PushbufferBuilder& PushbufferBuilder::Nop(uint16_t arguments) {
  words_.push_back(CommandHeader(Opcode::kNop, arguments));
  words_.insert(words_.end(), arguments, 0);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Copy(const CopyCommand& c) {
  words_.push_back(CommandHeader(Opcode::kCopy, 7));
  words_.push_back(c.flags);
  Put64(c.size);
  Put64(c.src);
  Put64(c.dst);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Semaphore(const SemaphoreCommand& c) {
  words_.push_back(CommandHeader(Opcode::kSemaphoreRelease, 5));
  Put64(c.address);
  Put64(c.payload);
  words_.push_back(c.flags);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Interrupt(uint32_t vector) {
  words_.push_back(CommandHeader(Opcode::kInterrupt, 1));
  words_.push_back(vector);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Memset32(const Memset32Command& c) {
  words_.push_back(CommandHeader(Opcode::kMemset32, 4));
  Put64(c.dst);
  words_.push_back(c.count);
  words_.push_back(c.value);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Axpy(const AxpyCommand& c) {
  words_.push_back(CommandHeader(Opcode::kAxpy, 6));
  words_.push_back(c.n);
  words_.push_back(std::bit_cast<uint32_t>(c.a));
  Put64(c.x);
  Put64(c.y);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Gemm(const GemmCommand& c) {
  words_.push_back(CommandHeader(Opcode::kGemm, 12));
  words_.push_back(c.m);
  words_.push_back(c.n);
  words_.push_back(c.k);
  words_.push_back(std::bit_cast<uint32_t>(c.alpha));
  words_.push_back(std::bit_cast<uint32_t>(c.beta));
  Put64(c.a);
  Put64(c.b);
  Put64(c.c);
  words_.push_back(c.flags);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::ReduceSum(const ReduceSumCommand& c) {
  words_.push_back(CommandHeader(Opcode::kReduceSum, 5));
  words_.push_back(c.n);
  Put64(c.x);
  Put64(c.out);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Timed(uint64_t ns) {
  words_.push_back(CommandHeader(Opcode::kTimed, 2));
  Put64(ns);
  return *this;
}

PushbufferBuilder& PushbufferBuilder::Raw(uint32_t word) {
  words_.push_back(word);
  return *this;
}

std::vector<uint8_t> PushbufferBuilder::bytes() const {
  std::vector<uint8_t> b(words_.size() * 4);
  for (size_t i = 0; i < words_.size(); ++i) PutLe32(&b[i * 4], words_[i]);
  return b;
}

}  // namespace dxpu::gpu
