// network.h - a simulated datagram network: numbered ports joined by directed paths, each
// with its own latency, jitter, bandwidth and sender-side queue, and its own loss,
// duplication, reordering, corruption and partition faults. Sans-IO: frames are handed to
// receive callbacks from events on a shared Scheduler; nothing here uses threads, sockets
// or real time, and every random choice comes from one seed.
#ifndef DXPU_LIB_SIM_NETWORK_H_
#define DXPU_LIB_SIM_NETWORK_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/clock.h"
#include "sim/rng.h"

namespace dxpu::sim {

using PortId = uint32_t;

// Called with each frame delivered to a port; the span is valid only during the call.
using Receiver = std::function<void(std::span<const uint8_t> frame)>;

// How one direction of a path between two ports behaves. All probabilities are per frame.
struct PathConfig {
  Nanos latency = 0;               // one-way propagation delay
  Nanos jitter = 0;                // extra delay uniform in [0, jitter]; never reorders
  uint64_t bandwidth_bps = 0;      // serialization rate, bits/s; 0 = infinite
  uint64_t queue_limit_bytes = 0;  // sender-side queue (frames not fully sent); 0 = no limit
  double loss = 0;                 // dropped on the wire (after using the wire's time)
  double duplicate = 0;            // delivered twice
  double reorder = 0;              // held back by an extra delay in [1ns, reorder_delay]
  Nanos reorder_delay = 10 * kMicrosecond;
  double corrupt = 0;        // 1 to 3 distinct bits flipped anywhere in the frame
  bool partitioned = false;  // every frame sent while set is dropped
};

// What happened to the frames sent on one path (or, summed, on all of them).
struct PathCounters {
  uint64_t sent = 0;             // Send() calls
  uint64_t delivered = 0;        // frames handed to a receiver (duplicates included)
  uint64_t lost = 0;             // dropped by `loss`
  uint64_t duplicated = 0;       // extra copies made
  uint64_t reordered = 0;        // copies held back by `reorder`
  uint64_t corrupted = 0;        // copies with bits flipped
  uint64_t queue_drops = 0;      // tail drops: the sender-side queue was full
  uint64_t partition_drops = 0;  // sent while the path was partitioned
  uint64_t port_down_drops = 0;  // the sending port down when sent, or the receiving port
                                 // down (or with no receiver) when the frame arrived
  uint64_t bytes_sent = 0;
  uint64_t bytes_delivered = 0;

  PathCounters& operator+=(const PathCounters& o);
  bool operator==(const PathCounters&) const = default;
};

// The network. Frame fates, in order, for Send(from, to, frame):
//   1. sending port down: dropped (port_down_drops);
//   2. path partitioned: dropped (partition_drops);
//   3. queue_limit_bytes exceeded by the frames not yet fully serialized plus this one:
//      tail-dropped (queue_drops);
//   4. serialized after the frames ahead of it (FIFO), taking size*8/bandwidth;
//   5. lost with probability `loss`;
//   6. duplicated with probability `duplicate`; then each copy independently:
//   7. corrupted with probability `corrupt`;
//   8. delivered `latency` after its last bit was sent, plus jitter, never before an earlier
//      copy on the same path; or, with probability `reorder`, up to `reorder_delay` later
//      than that, so that later frames may overtake it.
// A frame is dropped (port_down_drops) if its receiving port is down at the moment it
// arrives, and only then: a port brought back up receives every frame that arrives after
// that, including ones sent before or while it was down (a restarted node sees stale frames
// from the fabric). Frames a port sent before it went down are still delivered. Changing a path's
// config affects the frames sent afterwards; frames in flight keep their schedule.
//
// The Network holds a reference to the Scheduler; do not run the scheduler's events after
// the Network is destroyed (declare the Scheduler first).
class Network {
 public:
  // Every path starts with `default_path`; `seed` determines every random choice.
  Network(Scheduler& scheduler, uint64_t seed, const PathConfig& default_path = {});
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;
  Network(Network&&) = delete;
  Network& operator=(Network&&) = delete;
  ~Network();

  Scheduler& scheduler() const { return scheduler_; }

  // Registers (or replaces) the receiver of `port`; Detach removes it.
  void Attach(PortId port, Receiver receiver);
  void Detach(PortId port);

  // Copies `frame` onto the path from -> to (see the class comment for what follows).
  void Send(PortId from, PortId to, std::span<const uint8_t> frame);

  // Replaces the config of the path from -> to (one direction), partition flag included.
  void SetPath(PortId from, PortId to, const PathConfig& config);
  // The config of the path from -> to (the default if it was never set).
  const PathConfig& path(PortId from, PortId to) const;
  // Sets (Partition) or clears (Heal) the partition flag of both directions between a and b.
  void Partition(PortId a, PortId b);
  void Heal(PortId a, PortId b);
  // Sets or clears the partition flag of the one direction from -> to.
  void SetPartitioned(PortId from, PortId to, bool partitioned);

  // A crashed (down) port neither sends nor receives.
  void SetPortDown(PortId port, bool down);
  bool IsPortDown(PortId port) const { return down_.contains(port); }

  // The counters of the path from -> to; and the sum over every path.
  PathCounters counters(PortId from, PortId to) const;
  PathCounters TotalCounters() const;

 private:
  struct Path;
  // A frame on its way; slots are reused (keeping their buffers), so that a steady run
  // allocates nothing per frame.
  struct InFlight {
    std::vector<uint8_t> bytes;
    Path* path = nullptr;
    PortId to = 0;
  };

  Path& GetPath(PortId from, PortId to);
  void Deliver(uint32_t slot);

  Scheduler& scheduler_;
  Rng rng_;
  PathConfig default_path_;
  std::unordered_map<uint64_t, std::unique_ptr<Path>> paths_;  // key: from << 32 | to
  std::unordered_map<PortId, Receiver> receivers_;
  std::unordered_set<PortId> down_;
  std::deque<InFlight> in_flight_;  // a deque: a receiver may Send while it reads a slot
  std::vector<uint32_t> free_in_flight_;
};

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_NETWORK_H_
