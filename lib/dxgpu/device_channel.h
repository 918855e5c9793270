// device_channel.h - the runtime's side of one device's channel (docs/dxgpu.md, "The
// channel"; docs/dxgpu-runtime.md, "Submissions"). At Open it takes one pinned buffer from the
// port for a progress word, the GPFIFO ring and a pushbuffer arena (one pushbuffer slot per
// ring entry), programs GPFIFO_BASE and GPFIFO_ENTRIES and enables the channel.
//
// Every submission is one pushbuffer (the caller's commands, then a 64-bit SEMAPHORE_RELEASE of
// the submission's sequence number into the progress word, asking for an interrupt when
// Port::completion_interrupts()), one GPFIFO entry and one doorbell. The memory's addresses
// in the device's registers and commands are this device's IOVAs (HostBuffer::IovaFor).
// The channel runs entries in order, so submission `seq` is complete once progress >= seq; a
// ring slot (and its pushbuffer slot) is reused once the submission that used it is complete.
//
// Errors: a waiter that sees no progress for a slice reads STATUS; when the channel stopped it
// reads ERROR_CODE and ERROR_INFO, records the failure (kDeviceError naming the error) against
// the submission in that entry, counts that submission complete, and restarts the channel
// (CONTROL.restart), which goes on with the entries after it. Failures are collected by the
// owner of the submission (TakeFailures). Port::Wait or Port::Health reporting the device lost
// makes every later call return kDeviceLost.
//
// Thread-safe: submissions are serialised by a mutex; waits read the progress word without it.
#ifndef DXPU_LIB_DXGPU_DEVICE_CHANNEL_H_
#define DXPU_LIB_DXGPU_DEVICE_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dxgpu/port.h"
#include "dxgpu/status.h"
#include "gpu/commands.h"

namespace dxpu::dxgpu {

struct ChannelOptions {
  uint32_t ring_entries = 1024;          // a power of two, 2..65536
  uint32_t pushbuffer_bytes = 256;       // per ring entry; a multiple of 16
  uint64_t wait_slice_ns = 50'000'000;   // how long a wait runs before it looks at STATUS
  uint64_t timeout_ns = 10'000'000'000;  // the longest any wait lasts: then kTimeout
};

struct DeviceRegisters {
  uint32_t version = 0;
  uint64_t memory_bytes = 0;  // MEM_SIZE
};

class DeviceChannel {
 public:
  // Checks ID/VERSION, reads MEM_SIZE, sets up the ring and enables the channel.
  static Expected<std::unique_ptr<DeviceChannel>> Open(Port& port, size_t device,
                                                       const ChannelOptions& options);
  DeviceChannel(const DeviceChannel&) = delete;
  DeviceChannel& operator=(const DeviceChannel&) = delete;
  // Close(), its result dropped.
  ~DeviceChannel();

  size_t device() const { return device_; }
  const DeviceRegisters& registers() const { return registers_; }

  // Submits `commands` (at most pushbuffer_bytes - 24 bytes of them) followed by the progress
  // release; waits for a free ring slot first. Returns the submission's sequence number (1,
  // 2, ...). `owner` is whom a failure of it is reported to (TakeFailures), `label` (a string
  // literal) what it was, for messages.
  Expected<uint64_t> Submit(gpu::PushbufferBuilder commands, uint64_t owner, const char* label);

  // Whether submission `seq` is complete (done, or failed and recorded).
  bool Completed(uint64_t seq) const;
  uint64_t last_submitted() const { return last_submitted_.load(std::memory_order_acquire); }
  // Waits until Completed(seq): ok, kDeviceLost, kTimeout (after timeout_ns), or the error of
  // reading the registers. A failure of the submission is not returned here: see TakeFailures.
  Status Wait(uint64_t seq);

  // Owners with this bit (a synchronous call's own submissions) are never taken by
  // TakeFailures(0, ...): only the call itself reports them.
  static constexpr uint64_t kPrivateOwner = uint64_t{1} << 63;

  // The failures recorded for `owner` (0: anyone's but private owners') in submissions up to
  // `through`, removed
  // from the record: the first one (its message counting the others), or ok if none.
  Status TakeFailures(uint64_t owner, uint64_t through);
  // Forgets the failures recorded for `owner`.
  void DropFailures(uint64_t owner);

  // Waits for the last submission (bounded by timeout_ns), disables the channel and returns
  // the ring's memory to the port. Later calls fail with kUnavailable.
  Status Close();

 private:
  DeviceChannel(Port& port, size_t device, const ChannelOptions& options);
  Status Setup();
  uint64_t progress() const;
  // Wait's loop; with `locked`, the caller holds mu_.
  Status WaitFor(uint64_t seq, bool locked);
  // Reads STATUS; on a channel error records it and restarts the channel. Needs mu_.
  Status HandleChannelErrorLocked();
  // "progress 41 of 42, STATUS busy, GP_GET 5, GP_PUT 7" (best effort).
  std::string Describe(uint64_t seq);
  Status Lost(const Status& why);
  std::string Prefix() const;

  Port& port_;
  const size_t device_;
  const ChannelOptions options_;
  const bool interrupts_;  // Port::completion_interrupts()
  DeviceRegisters registers_;
  HostBuffer memory_;  // progress word at 0, ring at kRingOffset, then the pushbuffer arena
  uint8_t* ring_ = nullptr;
  uint8_t* arena_ = nullptr;
  uint64_t progress_iova_ = 0;  // this device's IOVAs of memory_
  uint64_t ring_iova_ = 0;
  uint64_t arena_iova_ = 0;

  std::mutex mu_;  // submissions, the ring, error handling
  uint64_t next_seq_ = 1;
  uint32_t put_ = 0;
  struct SlotInfo {
    uint64_t seq = 0;
    uint64_t owner = 0;
    const char* label = "";
  };
  std::vector<SlotInfo> slots_;
  bool closed_ = false;

  std::atomic<uint64_t> last_submitted_{0};
  std::atomic<uint64_t> floor_{0};  // failed submissions count as complete up to here
  std::atomic<bool> lost_{false};
  std::mutex lost_mu_;
  Status lost_status_;

  struct Failure {
    uint64_t owner = 0;
    Status status;
  };
  std::mutex failures_mu_;
  std::map<uint64_t, Failure> failures_;  // by sequence number
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_DEVICE_CHANNEL_H_
