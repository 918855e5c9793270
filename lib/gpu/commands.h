// commands.h - the GPU model's command format (docs/dxgpu.md, "Command format"): GPFIFO
// entries, the commands of a pushbuffer (a header DW with the opcode in bits 31:24 and the
// number of argument DWs in bits 15:0, then the arguments, 64-bit values as lo, hi), their
// decoding with the errors a bad one raises, and a builder the host side writes them with.
#ifndef DXPU_LIB_GPU_COMMANDS_H_
#define DXPU_LIB_GPU_COMMANDS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "gpu/gpu_registers.h"

namespace dxpu::gpu {

enum class Opcode : uint8_t {
  kNop = 0x00,
  kCopy = 0x01,
  kSemaphoreRelease = 0x02,
  kInterrupt = 0x03,
  kMemset32 = 0x10,
  kAxpy = 0x11,
  kGemm = 0x12,
  kReduceSum = 0x13,
  kTimed = 0x14,
};

// --- GPFIFO ---

inline constexpr uint32_t kGpfifoEntryBytes = 16;
inline constexpr uint32_t kMaxGpfifoEntries = 65536;
inline constexpr uint32_t kMaxPushbufferBytes = 1u << 20;

// 16 bytes little-endian: u64 pushbuffer address, u32 length in bytes, u32 flags (reserved).
struct GpfifoEntry {
  uint64_t pushbuffer = 0;
  uint32_t length = 0;
  uint32_t flags = 0;

  bool operator==(const GpfifoEntry&) const = default;
};

GpfifoEntry DecodeGpfifoEntry(std::span<const uint8_t, kGpfifoEntryBytes> bytes);
std::array<uint8_t, kGpfifoEntryBytes> EncodeGpfifoEntry(const GpfifoEntry& entry);
// kNone, or why the channel refuses the entry: BAD_ALIGNMENT (address not 4-byte aligned),
// BAD_LENGTH (not a multiple of 4 in 4..1 MiB), BAD_ADDRESS (the range wraps).
ChannelError CheckGpfifoEntry(const GpfifoEntry& entry);

// --- Commands ---

struct NopCommand {
  uint16_t arguments = 0;

  bool operator==(const NopCommand&) const = default;
};

inline constexpr uint32_t kCopySrcHost = 1u << 0;
inline constexpr uint32_t kCopyDstHost = 1u << 1;
// With kCopyDstHost: after its writes the copy reads back the last DW it wrote and finishes
// only when that read completes. A read does not pass the posted writes before it on their
// path, so every write has then landed: what a copy into another device's memory window
// (peer to peer) needs before its completion may be signalled on another path.
inline constexpr uint32_t kCopyFlush = 1u << 2;
inline constexpr uint32_t kCopyFlagsMask = kCopySrcHost | kCopyDstHost | kCopyFlush;
inline constexpr uint64_t kMaxCopyBytes = uint64_t{4} << 30;

struct CopyCommand {
  uint32_t flags = 0;  // kCopySrcHost, kCopyDstHost (else device memory), kCopyFlush
  uint64_t size = 0;   // 1 .. 4 GiB
  uint64_t src = 0;
  uint64_t dst = 0;

  bool operator==(const CopyCommand&) const = default;
};

inline constexpr uint32_t kSemaphore64 = 1u << 0;         // 64-bit payload, else 32-bit
inline constexpr uint32_t kSemaphoreInterrupt = 1u << 1;  // also set INTR_STATUS bit 0
inline constexpr uint32_t kSemaphoreTimestamp = 1u << 2;  // payload u64, then PTIMER u64

struct SemaphoreCommand {
  uint64_t address = 0;  // host
  uint64_t payload = 0;
  uint32_t flags = 0;

  bool operator==(const SemaphoreCommand&) const = default;
};

struct InterruptCommand {
  uint32_t vector = 0;

  bool operator==(const InterruptCommand&) const = default;
};

struct Memset32Command {
  uint64_t dst = 0;  // device, 4-byte aligned
  uint32_t count = 0;
  uint32_t value = 0;

  bool operator==(const Memset32Command&) const = default;
};

struct AxpyCommand {
  uint32_t n = 0;
  float a = 0;
  uint64_t x = 0;
  uint64_t y = 0;

  bool operator==(const AxpyCommand&) const = default;
};

inline constexpr uint32_t kGemmTransposeA = 1u << 0;  // op(A) = A^T: A is stored k x m
inline constexpr uint32_t kGemmTransposeB = 1u << 1;  // op(B) = B^T: B is stored n x k
inline constexpr uint32_t kGemmFlagsMask = kGemmTransposeA | kGemmTransposeB;

struct GemmCommand {
  uint32_t m = 0;
  uint32_t n = 0;
  uint32_t k = 0;
  float alpha = 0;
  float beta = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
  uint32_t flags = 0;  // kGemmTransposeA, kGemmTransposeB

  bool operator==(const GemmCommand&) const = default;
};

struct ReduceSumCommand {
  uint32_t n = 0;
  uint64_t x = 0;
  uint64_t out = 0;

  bool operator==(const ReduceSumCommand&) const = default;
};

// A kernel that computes nothing and keeps the compute engine busy for exactly `ns` of the
// channel's time (trace replay: a kernel's measured duration), no launch overhead added.
struct TimedCommand {
  uint64_t ns = 0;

  bool operator==(const TimedCommand&) const = default;
};

using Command =
    std::variant<NopCommand, CopyCommand, SemaphoreCommand, InterruptCommand, Memset32Command,
                 AxpyCommand, GemmCommand, ReduceSumCommand, TimedCommand>;

// The argument DWs an opcode takes; nullopt for NOP (any count) and for an unknown opcode.
std::optional<uint16_t> ArgumentCount(uint8_t opcode);

struct DecodedCommand {
  std::optional<Command> command;  // set when error is kNone
  ChannelError error = ChannelError::kNone;
  uint32_t dwords = 0;  // header and arguments (when decoded)
};

// The command that starts at words[0]: BAD_OPCODE for an unknown opcode, BAD_LENGTH for an
// argument count the opcode does not take or that runs past the end of `words`.
DecodedCommand DecodeCommand(std::span<const uint32_t> words);

constexpr uint32_t CommandHeader(Opcode opcode, uint16_t arguments) {
  return (uint32_t{static_cast<uint8_t>(opcode)} << 24) | arguments;
}

// Writes a pushbuffer.
class PushbufferBuilder {
 public:
  PushbufferBuilder& Nop(uint16_t arguments = 0);
  PushbufferBuilder& Copy(const CopyCommand& c);
  PushbufferBuilder& Semaphore(const SemaphoreCommand& c);
  PushbufferBuilder& Interrupt(uint32_t vector);
  PushbufferBuilder& Memset32(const Memset32Command& c);
  PushbufferBuilder& Axpy(const AxpyCommand& c);
  PushbufferBuilder& Gemm(const GemmCommand& c);
  PushbufferBuilder& ReduceSum(const ReduceSumCommand& c);
  PushbufferBuilder& Timed(uint64_t ns);
  // Any DW (for malformed commands).
  PushbufferBuilder& Raw(uint32_t word);

  const std::vector<uint32_t>& words() const { return words_; }
  // Little-endian bytes, as the pushbuffer sits in host memory.
  std::vector<uint8_t> bytes() const;

 private:
  void Put64(uint64_t v);
  std::vector<uint32_t> words_;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_COMMANDS_H_
