// split_virtqueue.h - one split virtqueue (OASIS virtio v1.2 section 2.7) as the device sees
// it: it reads the driver's available ring and descriptor chains by DMA, checks them, gathers
// each chain's driver-readable bytes into a Request, and answers a Completion by writing the
// chain's device-writable buffers, then the used element, then used->idx (posted writes keep
// that order on the bus: data before the index), then asks for the queue's interrupt unless
// the driver set VIRTQ_AVAIL_F_NO_INTERRUPT (read after the used->idx write, so that a driver
// re-enabling interrupts either sees the new index or is interrupted).
//
// Fetching: a kick reads avail->flags/idx, then the new ring entries, then the descriptor
// table, resolves every new chain (indirect tables read as they are met), and starts its
// buffers' reads; then it reads avail->idx again, and stops only when it has not moved (the
// notification race: a chain made available after the read that a kick did not follow).
//
// Bounded, against a driver that programs nonsense: a chain longer than the queue (a loop), a
// head or next index out of range, an indirect table inside an indirect table, a readable
// buffer after a writable one, more than `max_request_bytes` either way, a head made
// available twice, avail->idx more than the queue size ahead, and any DMA read that fails
// (the host refuses memory it did not map) all stop the queue and call needs_reset; nothing
// is retried, and nothing outside the ring and what the descriptors name is read or written.
// Requests in flight are at most the queue size, and their gathered bytes at most
// `max_bytes_in_flight`: beyond those the queue waits for completions.
#ifndef DXPU_LIB_VIRTIO_SPLIT_VIRTQUEUE_H_
#define DXPU_LIB_VIRTIO_SPLIT_VIRTQUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "gpu/owned_tlp.h"
#include "virtio/guest_dma.h"
#include "virtio/virtio_device.h"

namespace dxpu::virtio {

struct VirtqueueLayout {
  uint16_t index = 0;
  uint16_t size = 0;  // a power of two, 1..32768
  uint64_t desc = 0;
  uint64_t driver = 0;    // the available ring
  uint64_t device = 0;    // the used ring
  bool indirect = false;  // VIRTIO_F_RING_INDIRECT_DESC negotiated
};

struct VirtqueueLimits {
  uint32_t max_request_bytes = 4u << 20;     // readable, and writable, bytes of one chain
  uint64_t max_bytes_in_flight = 16u << 20;  // gathered readable bytes held per queue
  uint32_t max_indirect_entries = 1024;
};

struct VirtqueueCounters {
  uint64_t requests = 0;             // chains handed to the device
  uint64_t completions = 0;          // used elements written
  uint64_t truncated = 0;            // completions longer than the chain's writable buffers
  uint64_t unknown_completions = 0;  // for a head not in flight: dropped
  uint64_t interrupts = 0;           // asked for
  uint64_t suppressed = 0;           // not asked for: VIRTQ_AVAIL_F_NO_INTERRUPT
  uint64_t dma_errors = 0;           // reads of ring, table or buffer that failed
};

class SplitVirtqueue {
 public:
  struct Hooks {
    std::function<void(Request)> submit;
    std::function<void(std::string why)> needs_reset;
    std::function<void()> interrupt;
    std::function<uint32_t()> max_read_request;
    std::function<uint32_t()> max_payload;
  };

  // The layout must have been checked (ValidateLayout).
  SplitVirtqueue(const VirtqueueLayout& layout, const VirtqueueLimits& limits, GuestDma& dma,
                 Hooks hooks);
  SplitVirtqueue(const SplitVirtqueue&) = delete;
  SplitVirtqueue& operator=(const SplitVirtqueue&) = delete;

  // Empty when the driver's queue configuration can be used; otherwise what is wrong.
  static std::string ValidateLayout(const VirtqueueLayout& layout);

  // The driver notified the queue.
  void Kick();
  // Writes the completion's bytes and the used element into `out`.
  void Complete(const Completion& completion, dxpu::gpu::TlpQueue& out);
  // After a fatal error: no more fetching, completions dropped.
  void Stop() { stopped_ = true; }

  bool stopped() const { return stopped_; }
  size_t in_flight() const { return in_flight_.size(); }
  const VirtqueueCounters& counters() const { return counters_; }
  const VirtqueueLayout& layout() const { return layout_; }

 private:
  struct Segment {
    uint64_t address = 0;
    uint32_t length = 0;
  };
  struct Chain {
    std::vector<Segment> readable;
    std::vector<Segment> writable;
    uint64_t readable_bytes = 0;
    uint64_t writable_bytes = 0;
  };
  struct Descriptor {
    uint64_t address = 0;
    uint32_t length = 0;
    uint16_t flags = 0;
    uint16_t next = 0;
  };
  // A chain whose buffers are being read.
  struct Gather {
    uint16_t head = 0;
    std::vector<uint8_t> bytes;
    size_t reads_left = 0;
    uint32_t writable_bytes = 0;
  };

  void Fail(std::string why);
  void ReadAvail();
  void OnAvail(std::vector<uint8_t> data);
  void OnRing(std::vector<uint8_t> ring);
  void OnTable(std::vector<uint16_t> heads, std::vector<uint8_t> table);
  // Walks the chain at `head` in `table` (entries of 16 bytes, `entries` of them); false with
  // the queue failed when it breaks a rule.
  bool Walk(std::span<const uint8_t> table, uint32_t entries, uint16_t first, bool indirect,
            Chain& chain);
  void StartChain(uint16_t head, std::span<const uint8_t> table);
  void StartGather(uint16_t head, Chain chain);
  void OnGathered(uint16_t head);
  void CheckInterrupt();
  static Descriptor DescriptorAt(std::span<const uint8_t> table, uint32_t index);

  VirtqueueLayout layout_;
  VirtqueueLimits limits_;
  GuestDma& dma_;
  Hooks hooks_;
  bool stopped_ = false;
  bool fetching_ = false;
  bool kicked_while_fetching_ = false;
  bool waiting_for_room_ = false;
  uint16_t last_avail_ = 0;
  uint16_t used_idx_ = 0;
  std::map<uint16_t, Chain> in_flight_;  // by head: its writable buffers for the completion
  std::map<uint16_t, Gather> gathering_;
  std::deque<std::pair<uint16_t, Chain>> parked_;  // resolved, waiting for byte budget
  uint64_t bytes_in_flight_ = 0;
  bool flags_read_in_flight_ = false;
  bool interrupt_check_needed_ = false;
  VirtqueueCounters counters_;
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_SPLIT_VIRTQUEUE_H_
