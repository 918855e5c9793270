// gpu_registers.h - the GPU model's BAR0 register map (docs/dxgpu.md, "Register map"): offsets
// and bits of its 32-bit little-endian registers, and the channel error codes ERROR_CODE
// reports. Shared by the device (GpuDevice) and by whatever drives it (tests, the bridge).
#ifndef DXPU_LIB_GPU_GPU_REGISTERS_H_
#define DXPU_LIB_GPU_GPU_REGISTERS_H_

#include <cstdint>
#include <string_view>

namespace dxpu::gpu {

namespace regs {

inline constexpr uint32_t kId = 0x0000;                // RO
inline constexpr uint32_t kIdValue = 0x44584750;       // "DXGP"
inline constexpr uint32_t kVersion = 0x0004;           // RO
inline constexpr uint32_t kVersionValue = 0x00010000;  // 1.0
inline constexpr uint32_t kMemSizeLo = 0x0008;         // RO, device memory bytes
inline constexpr uint32_t kMemSizeHi = 0x000c;

inline constexpr uint32_t kGpfifoBaseLo = 0x0010;   // RW, bits 3:0 read 0 (16-byte aligned)
inline constexpr uint32_t kGpfifoBaseHi = 0x0014;   // RW
inline constexpr uint32_t kGpfifoEntries = 0x0018;  // RW; writing it resets GP_GET and GP_PUT
inline constexpr uint32_t kGpGet = 0x001c;          // RO
inline constexpr uint32_t kGpPut = 0x0020;          // RW: the doorbell

inline constexpr uint32_t kStatus = 0x0030;  // RO
inline constexpr uint32_t kStatusBusy = 1u << 0;
inline constexpr uint32_t kStatusError = 1u << 1;
inline constexpr uint32_t kStatusIdle = 1u << 2;  // idle and the ring empty
inline constexpr uint32_t kErrorCode = 0x0034;    // RO, a ChannelError
inline constexpr uint32_t kErrorInfo = 0x0038;    // RO, GPFIFO index of the failing entry

inline constexpr uint32_t kIntrStatus = 0x0040;      // RW1C
inline constexpr uint32_t kIntrEnable = 0x0044;      // RW
inline constexpr uint32_t kIntrSemaphore = 1u << 0;  // semaphore release / INTERRUPT command
inline constexpr uint32_t kIntrError = 1u << 1;
inline constexpr uint32_t kIntrMask = kIntrSemaphore | kIntrError;

inline constexpr uint32_t kControl = 0x0050;  // RW
inline constexpr uint32_t kControlEnable = 1u << 0;
inline constexpr uint32_t kControlRestart = 1u << 1;  // write 1: clear the error, resume

// 64-bit counters, LO then HI (RO). They count since power-on or the last FLR.
inline constexpr uint32_t kCounterKernels = 0x0060;
inline constexpr uint32_t kCounterCopies = 0x0068;
inline constexpr uint32_t kCounterSemaphores = 0x0070;
inline constexpr uint32_t kCounterBytesRead = 0x0078;     // bytes received by DMA reads
inline constexpr uint32_t kCounterBytesWritten = 0x0080;  // bytes sent by DMA writes

inline constexpr uint32_t kPtimerLo = 0x0100;  // RO, device time in ns
inline constexpr uint32_t kPtimerHi = 0x0104;

}  // namespace regs

// ERROR_CODE: why the channel stopped. kBadVector is this model's addition to the map.
enum class ChannelError : uint32_t {
  kNone = 0,
  kBadOpcode = 1,
  kBadLength = 2,
  kBadAddress = 3,  // device memory out of range (or a host range that wraps)
  kDmaUr = 4,       // a DMA read answered UR or CA
  kDmaTimeout = 5,
  kBadRing = 6,
  kKernelTooBig = 7,
  kBadAlignment = 8,
  kBadVector = 9,  // INTERRUPT naming a vector the MSI-X table does not have
  kBadFlags = 10,  // a COPY or GEMM with reserved flag bits set
};

std::string_view ToString(ChannelError error);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_GPU_REGISTERS_H_
