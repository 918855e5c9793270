// device_kinds.h - the kinds of PCIe function a GPU box holds, and the settings each kind takes
// from the bridge configuration (docs/bridge-config.md, "devices"). Plain values: the
// configuration reader fills them, MakeFunction (bridge_box.h) builds a function from them.
#ifndef DXPU_BRIDGE_FW_DEVICE_KINDS_H_
#define DXPU_BRIDGE_FW_DEVICE_KINDS_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dxpu::bridge {

enum class DeviceKind : uint8_t {
  kGpu,        // the GPU model (lib/gpu), by profile
  kVirtioBlk,  // a virtio block device backed by a file on the box (docs/virtio.md)
  kVirtioGpu,  // a virtio GPU, 2D, whose scanout the bridge keeps (docs/virtio-gpu.md)
};

// "gpu", "virtio-blk", "virtio-gpu": the configuration's `kind` values.
constexpr std::string_view DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kGpu:
      return "gpu";
    case DeviceKind::kVirtioBlk:
      return "virtio-blk";
    case DeviceKind::kVirtioGpu:
      return "virtio-gpu";
  }
  return "?";
}

constexpr std::optional<DeviceKind> ParseDeviceKind(std::string_view name) {
  for (DeviceKind k : {DeviceKind::kGpu, DeviceKind::kVirtioBlk, DeviceKind::kVirtioGpu})
    if (DeviceKindName(k) == name) return k;
  return std::nullopt;
}

// What a released disk keeps for the next tenant: the operator's policy.
enum class DiskReleasePolicy : uint8_t { kKeep, kZero };

struct VirtioBlkSettings {
  std::string backing;      // the backing file's path (created sparse when absent)
  uint64_t size_bytes = 0;  // its size: a whole number of 512-byte sectors
  uint16_t queues = 2;      // request queues (VIRTIO_BLK_F_MQ)
  DiskReleasePolicy release = DiskReleasePolicy::kZero;

  bool operator==(const VirtioBlkSettings&) const = default;
};

struct VirtioGpuSettings {
  uint32_t width = 1024;  // the one scanout's preferred mode
  uint32_t height = 768;

  bool operator==(const VirtioGpuSettings&) const = default;
};

// A display's size as the configuration and `dxpu bench virtio` write it: "WIDTHxHEIGHT", two
// decimal numbers and the x between them, nothing else, each 16..4095 (what EDID can say).
inline std::optional<VirtioGpuSettings> ParseDisplaySize(std::string_view text) {
  constexpr unsigned kMinSide = 16;
  constexpr unsigned kMaxSide = 4095;
  unsigned w = 0;
  unsigned h = 0;
  const char* const end = text.data() + text.size();
  const auto [after_w, w_err] = std::from_chars(text.data(), end, w);
  const bool parsed = w_err == std::errc() && after_w != end && *after_w == 'x' &&
                      after_w + 1 != end && std::from_chars(after_w + 1, end, h).ptr == end;
  if (!parsed || w < kMinSide || h < kMinSide || w > kMaxSide || h > kMaxSide) return std::nullopt;
  return VirtioGpuSettings{w, h};
}

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_DEVICE_KINDS_H_
