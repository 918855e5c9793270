// datapath_regs.h - the register map of rtl/dxpu_datapath.sv (docs/rtl.md): 64-bit words
// addressed by a 16-bit word address. The firmware side (rtl_datapath.cc) and the testbenches
// program the hardware through these.
#ifndef DXPU_RTL_SIM_DATAPATH_DATAPATH_REGS_H_
#define DXPU_RTL_SIM_DATAPATH_DATAPATH_REGS_H_

#include <cstddef>
#include <cstdint>

namespace dxpu::rtl::regs {

inline constexpr uint16_t kId = 0x0000;      // RO "DXDP" and the map's version
inline constexpr uint16_t kParams = 0x0001;  // RO devices, hosts, tags, DMA windows (16 bits each)
inline constexpr uint16_t kBridgeRid = 0x0002;   // the bridge's requester/completer ID
inline constexpr uint16_t kDevices = 0x0003;     // devices configured
inline constexpr uint16_t kHostSlots = 0x0004;   // host slots configured
inline constexpr uint16_t kBoxTags = 0x0005;     // box tags in use (taken at INIT)
inline constexpr uint16_t kMaxPerHost = 0x0006;  // requests one host may have pending
inline constexpr uint16_t kCplTimeout = 0x0007;  // completion timeout, ns
inline constexpr uint16_t kQuarantine = 0x0008;  // a timed-out tag's rest, ns
inline constexpr uint16_t kCommand = 0x0010;  // W: op | arg << 16 | limit << 32; R: busy, overrun
inline constexpr uint16_t kNextDeadline = 0x0011;  // RO; all ones: none
inline constexpr uint16_t kNow = 0x0012;           // RO the latest time seen
inline constexpr uint16_t kCounters = 0x0100;      // RO, CounterWord order
inline constexpr uint64_t kIdValue = 0x4458'4450'0000'0001;

enum CounterWord : uint16_t {
  kToDevice = 0,
  kToHost,
  kPeer,
  kRetries,
  kUrSent,
  kDropped,
  kPending,
  kTagsFree,
  kRefused  // one word per refusal reason from here
};

enum class Op : uint64_t {
  kInit = 1,           // tables cleared, box_tags tags free, counters zero
  kExpire = 2,         // quarantine ends, then up to `limit` timed-out requests answered UR
  kReleaseDevice = 3,  // arg: device; its pending requests answered UR (up to limit), owner gone
  kReleaseHost = 4,    // arg: host; its pending requests forgotten, its devices to the pool
  kClearDma = 5        // arg: device; its DMA windows unmapped
};

inline constexpr uint64_t Command(Op op, uint16_t arg, uint32_t limit) {
  return static_cast<uint64_t>(op) | uint64_t{arg} << 16 | uint64_t{limit} << 32;
}

// Device d's entry: box RID [15:0], host RID [31:16], owner [47:32]. Writing it is SetDevice.
inline constexpr uint16_t Entry(size_t d) { return static_cast<uint16_t>(0x1000 + d * 0x100); }
// A window's fields: its own base, where it lands, its size.
inline constexpr unsigned kBase = 0, kLand = 1, kSize = 2;
inline constexpr uint16_t Bar(size_t d, size_t bar, unsigned field) {
  return static_cast<uint16_t>(Entry(d) + 0x10 + bar * 4 + field);
}
inline constexpr uint16_t Dma(size_t d, size_t window, unsigned field) {
  return static_cast<uint16_t>(Entry(d) + 0x40 + window * 4 + field);
}

}  // namespace dxpu::rtl::regs

#endif  // DXPU_RTL_SIM_DATAPATH_DATAPATH_REGS_H_
