// channel.h - the GPU model's command channel: the GPFIFO registers and the engine that
// fetches GPFIFO entries and pushbuffers from host memory by DMA and executes their commands
// in order (copies through the CopyEngine, kernels on the roofline, semaphore releases,
// interrupts), stopping at the first error. It owns the channel's part of the BAR0 register
// map (GPFIFO, GP_GET/GP_PUT, STATUS, ERROR_*, INTR_*, CONTROL).
//
// Fetching overlaps execution (as a real GPU's host interface does): while the front entry
// runs, the channel fetches further GPFIFO entries and the pushbuffers of up to
// `pushbuffer_prefetch` entries after it, so the next entry starts as soon as the front one
// ends if its pushbuffer has arrived. An error found while fetching ahead (a bad entry, a
// failed read) is raised only when the entry it belongs to would run.
//
// Execution model (docs/dxgpu.md): one command at a time. A command starts when the one
// before it has finished: a kernel at its roofline end, a copy when its last data has been
// received (host to device) or its last write queued (device to host), a device-to-device copy
// at its roofline end. The channel keeps its own time: after a wait on the clock it resumes at
// exactly the end of that wait, after a wait on the bus (a doorbell, DMA data) at the `now` of
// the call that brought it.
#ifndef DXPU_LIB_GPU_CHANNEL_H_
#define DXPU_LIB_GPU_CHANNEL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "gpu/activity.h"
#include "gpu/commands.h"
#include "gpu/config_space.h"
#include "gpu/copy_engine.h"
#include "gpu/dma_engine.h"
#include "gpu/gpu_counters.h"
#include "gpu/owned_tlp.h"
#include "gpu/sparse_memory.h"

namespace dxpu::gpu {

class Channel {
 public:
  // Queues an MSI-X vector's message (the device's MSI-X table decides whether it goes out).
  using SignalVector = std::function<void(uint16_t vector)>;
  // The most TLPs the channel lets wait in the device's send queue before it stops queueing
  // more (it resumes when the queue drains).
  static constexpr size_t kQueueLimit = 64;

  // The most entries whose pushbuffers may be fetched ahead of the running one.
  static constexpr uint32_t kMaxPushbufferPrefetch = 64;

  // `pushbuffer_prefetch` (0..kMaxPushbufferPrefetch): how many entries after the running one
  // may have their pushbuffers fetched ahead; 0: an entry's pushbuffer is fetched only once
  // the entry before it has finished, and GPFIFO entries only once all fetched ones are done.
  // `activity`: called as each kernel and COPY finishes (activity.h); null: no log.
  Channel(SparseMemory& memory, DmaEngine& dma, const ConfigSpace& config, GpuCounters& counters,
          SignalVector signal, uint32_t pushbuffer_prefetch = 0, ActivitySink activity = {});

  // The channel's registers: nullopt / false for an offset that is not one of them.
  std::optional<uint32_t> ReadRegister(uint32_t offset) const;
  // `byte_mask` has 0xff in each enabled byte lane.
  bool WriteRegister(uint32_t offset, uint32_t value, uint32_t byte_mask);

  // Does all that can be done at `now`, queueing TLPs into `out`.
  void Step(uint64_t now, TlpQueue& out);
  // A completion the DMA engine matched to one of the reads.
  void OnReadCompletion(const DmaCompletion& completion);
  // A read of `job` timed out.
  void OnReadTimeout(uint64_t job);
  // When Step has something to do because time passed (a kernel's or a device-to-device
  // copy's end); UINT64_MAX when nothing waits on the clock.
  uint64_t NextDeadline() const;

  // Power-on state (FLR, scrub): registers 0, work dropped.
  void Reset();

  ChannelError error() const { return error_; }
  uint32_t status() const;
  uint32_t gp_get() const { return gp_get_; }
  uint32_t intr_status() const { return intr_status_; }

 private:
  enum class Active : uint8_t { kNone, kCopy, kKernel, kSemaphore };
  enum class Fetch : uint8_t { kNone, kFetching, kArrived, kFailed };
  struct Entry {
    uint32_t index = 0;  // in the ring
    GpfifoEntry entry;
    Fetch fetch = Fetch::kNone;  // of its pushbuffer
    uint64_t job = 0;            // kFetching: the pushbuffer's DMA job
    uint64_t arrived = 0;        // kArrived: the `now` at which its last byte was seen
    ChannelError error = ChannelError::kNone;  // kFailed: why (raised when it would run)
    std::vector<uint8_t> bytes;                // the pushbuffer, as fetched
  };
  bool BusMaster() const { return config_.bus_master_enabled(); }
  bool RingValid() const;
  uint64_t NewJob() { return ++jobs_; }
  void IssueReads(uint64_t job, TlpQueue& out);

  // Fetching: collects finished fetches, starts new ones (GPFIFO entries, pushbuffers up to
  // the prefetch depth) and issues their reads. Whether anything changed.
  bool FetchStep(uint64_t now, TlpQueue& out);
  bool StartPushbufferFetches();
  bool StartEntryFetch();
  void FinishEntryFetch();
  Entry* FetchingEntry(uint64_t job);
  void FetchFailed(uint64_t job, ChannelError error);
  // Raises a deferred fetch error once no earlier work is left: the front entry's, or a
  // failed GPFIFO fetch's when no entry is left. Whether it did.
  bool RaiseDeferredError();
  // Begins running the front entry if its pushbuffer has arrived.
  bool StartEntry();
  bool Execute(uint64_t now, TlpQueue& out);
  bool ProgressActive(uint64_t now, TlpQueue& out);
  void StartCommand(const Command& command);
  void StartCopy(const CopyCommand& c);
  void StartSemaphore(const SemaphoreCommand& c);
  void StartInterrupt(const InterruptCommand& c);
  void FinishKernel(ChannelError error, uint64_t ns, ActivityKind kind, uint64_t bytes);
  void ReleaseSemaphore(TlpQueue& out);
  void CancelEntryFetch();

  // The activity log (only while activity_ is set): the ordinal of the entry at ring `index`
  // that starts now; the running command's record, begun at its start, sent at its end.
  uint64_t NextEntryOrdinal(uint32_t index) const;
  void BeginActivity(ActivityKind kind, uint64_t bytes);
  void EndActivity();

  // Stops the channel with an error about the GPFIFO entry at `index`; `consume`: GP_GET
  // moves past it (an entry that was fetched), else GP_GET is left as it is.
  void Fail(ChannelError error, uint32_t index, bool consume);
  // Sets INTR_STATUS bits; each enabled bit that becomes set sends its vector.
  void RaiseInterrupt(uint32_t bits);
  void SignalEnabledEdges(uint32_t asserted_before);

  SparseMemory& memory_;
  DmaEngine& dma_;
  const ConfigSpace& config_;
  GpuCounters& counters_;
  SignalVector signal_;
  CopyEngine copy_;

  // Registers.
  uint64_t gpfifo_base_ = 0;
  uint32_t gpfifo_entries_ = 0;
  uint32_t gp_get_ = 0;
  uint32_t gp_put_ = 0;
  bool enabled_ = false;
  ChannelError error_ = ChannelError::kNone;
  uint32_t error_info_ = 0;
  uint32_t intr_status_ = 0;
  uint32_t intr_enable_ = 0;

  // Engine state.
  uint64_t jobs_ = 0;  // the last DMA job number handed out (never reset)
  // The GPFIFO fetch in flight (entries fetch_first_ .. + fetch_count_ - 1, entry_fetching_),
  // or the one that failed (entry_fetch_error_, raised once the entries fetched before it have
  // run).
  uint64_t entry_job_ = 0;
  uint64_t copy_job_ = 0;    // the running copy's DMA job
  uint64_t wait_until_ = 0;  // a kernel's end
  uint64_t time_ = 0;        // the channel's own time (see above)
  size_t pc_ = 0;            // next command in words_
  std::vector<uint8_t> entry_buffer_;
  std::deque<Entry> entries_;    // fetched, not yet finished; the front one runs
  std::vector<uint32_t> words_;  // the running entry's pushbuffer
  SemaphoreCommand semaphore_;
  uint32_t prefetch_ = 0;  // pushbuffer_prefetch
  uint32_t fetch_first_ = 0;
  uint32_t fetch_count_ = 0;
  ChannelError entry_fetch_error_ = ChannelError::kNone;
  Active active_ = Active::kNone;
  bool entry_fetching_ = false;
  bool running_ = false;            // the front entry is executing
  bool semaphore_stalled_ = false;  // waited for Bus Master Enable

  ActivitySink activity_;
  uint64_t entry_ordinal_ = 0;  // of the entry running or last run; 0: none since ring setup
  std::optional<CommandActivity> current_;  // the running kernel's or copy's, while logged
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_CHANNEL_H_
