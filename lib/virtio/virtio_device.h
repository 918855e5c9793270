// virtio_device.h - a virtio device type (block, GPU, ...) behind the virtio-over-PCI transport
// (virtio_pci_function.h), as OASIS virtio v1.2 section 5 defines each: what it offers, its
// configuration structure, and what it does with the requests its driver puts in its queues.
//
// The split between the two: the transport owns everything PCI and everything virtqueue. It
// reads the driver's rings and descriptor chains by DMA, checks them (ranges, loops, lengths),
// gathers a chain's driver-readable bytes into a Request, and writes a Completion's bytes into
// the chain's device-writable buffers, then the used ring, then the interrupt. A device type
// never sees a descriptor or a guest address of a chain, and never touches guest memory
// itself: when it needs guest memory outside a chain (virtio-gpu's resource backing), it asks
// for a read (DeviceAction::GuestRead) and the transport answers with OnGuestRead, after DMA.
//
// Sans-IO and pull-based, like the rest of the box: the transport hands requests in (Submit),
// then asks what the device wants done (Poll) until it answers nothing; time is the caller's.
// Not thread-safe. Every input is untrusted: a malformed request is answered with the device
// type's error status (VIRTIO_BLK_S_IOERR/UNSUPP, VIRTIO_GPU_RESP_ERR_*), counted; a driver
// that breaks the device type's rules so that it cannot go on gets NeedsReset.
#ifndef DXPU_LIB_VIRTIO_VIRTIO_DEVICE_H_
#define DXPU_LIB_VIRTIO_VIRTIO_DEVICE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dxpu::virtio {

// One descriptor chain the transport fetched from a queue's available ring.
struct Request {
  uint16_t queue = 0;
  uint16_t head = 0;              // the chain's head index: identifies the request
  std::vector<uint8_t> readable;  // the driver-readable buffers' bytes, gathered in order
  uint32_t writable_bytes = 0;    // total length of the device-writable buffers
};

// A request finished: `written` goes into the chain's device-writable buffers in order (at
// most writable_bytes; the transport truncates and counts a device that writes more), and
// the used ring entry's len is written.size().
struct Completion {
  uint16_t queue = 0;
  uint16_t head = 0;
  std::vector<uint8_t> written;
};

// A read of guest memory outside any chain, answered by OnGuestRead(tag, ...). At most
// kMaxGuestRead bytes; the transport splits it into memory reads.
struct GuestRead {
  uint64_t tag = 0;  // the device's number, echoed back
  uint64_t address = 0;
  uint32_t length = 0;
};
inline constexpr uint32_t kMaxGuestRead = 1u << 20;

// The device's configuration structure changed (capacity, display info): the transport sets
// ISR bit 1, raises config_generation and sends the configuration vector's interrupt.
struct ConfigChanged {};

// The driver broke a rule the device cannot recover from: the transport sets
// DEVICE_NEEDS_RESET (status bit 64) and sends the configuration interrupt; the device waits
// for a reset.
struct NeedsReset {
  std::string why;  // for the log and status
};

using DeviceAction = std::variant<Completion, GuestRead, ConfigChanged, NeedsReset>;

// What a release does to a device's contents (bridge configuration, per device).
enum class ReleasePolicy : uint8_t {
  kKeep,  // a disk keeps its data for the next tenant (the operator's choice)
  kZero,  // everything the tenant could have written is zeroed
};

class VirtioDevice {
 public:
  using CounterVisitor = std::function<void(std::string_view name, uint64_t value)>;

  VirtioDevice() = default;
  VirtioDevice(const VirtioDevice&) = delete;
  VirtioDevice& operator=(const VirtioDevice&) = delete;
  virtual ~VirtioDevice() = default;

  // ---- what it is ----
  virtual uint16_t device_id() const = 0;     // virtio device ID: 2 block, 16 GPU
  virtual std::string_view kind() const = 0;  // "virtio-blk", "virtio-gpu": status lines
  // The device-type feature bits it offers (the transport adds VERSION_1, ACCESS_PLATFORM and
  // the ring features it implements).
  virtual uint64_t device_features() const = 0;
  virtual uint16_t num_queues() const = 0;
  virtual uint16_t queue_max_size(uint16_t queue) const = 0;  // a power of two, <= 32768

  // ---- its configuration structure (device-specific configuration, section 4.1.4.6) ----
  virtual uint32_t config_size() const = 0;
  // size 1, 2 or 4 within [0, config_size()); little-endian as the spec lays it out.
  virtual uint32_t ReadConfig(uint32_t offset, uint32_t size) const = 0;
  virtual void WriteConfig(uint32_t offset, uint32_t size, uint32_t value) = 0;

  // ---- lifecycle ----
  // The driver set FEATURES_OK with these features (already a subset of what was offered).
  virtual void SetDriverFeatures(uint64_t features) = 0;
  // DRIVER_OK: requests may come.
  virtual void Start() = 0;
  // A device reset (status written 0, FLR, hot reset): every request in flight is dropped
  // unanswered, every read in flight forgotten (a late OnGuestRead is ignored), state back to
  // power-on (a disk's contents stay).
  virtual void Reset() = 0;
  // The box takes it back (after Reset): what a tenant left is handled by `policy`; returns
  // the bytes zeroed.
  virtual uint64_t Release(ReleasePolicy policy) = 0;

  // ---- requests ----
  virtual void Submit(Request request, uint64_t now) = 0;
  // What the device wants done now, one action at a time; nullopt: nothing now.
  virtual std::optional<DeviceAction> Poll(uint64_t now) = 0;
  // The answer to a GuestRead: its bytes, or ok == false (a UR/CA, a timeout) with no data.
  virtual void OnGuestRead(uint64_t tag, std::span<const uint8_t> data, bool ok, uint64_t now) = 0;
  // When Poll next has something to do because time passed; UINT64_MAX: never.
  virtual uint64_t NextDeadline() const { return UINT64_MAX; }

  // ---- status ----
  // The bytes of memory a release can scrub, for pcie::Identity::memory_bytes.
  virtual uint64_t memory_bytes() const { return 0; }
  virtual void VisitCounters(const CounterVisitor& visit) const = 0;
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_DEVICE_H_
