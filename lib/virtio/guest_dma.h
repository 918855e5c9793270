// guest_dma.h - the virtio transport's access to the driver's memory: reads of byte ranges
// answered through a callback, by DMA through lib/gpu's DmaEngine (memory reads split at
// MRRS and 4 KiB, tags, completion matching, timeouts), and posted writes split at MPS and
// 4 KiB. Nothing reaches guest memory any other way: every byte goes over the bus as a TLP,
// and the host decides (a read of memory it did not map for the device is answered UR/CA).
//
// A read ends exactly once: with its bytes, or failed (a completion with a status other than
// SC, poisoned data, or no answer within the completion timeout). Callbacks run from
// OnCompletion, Expire or RunDeferred, never from Read itself. Reset forgets every read: its
// callback never runs, and late completions are counted unexpected by the caller.
#ifndef DXPU_LIB_VIRTIO_GUEST_DMA_H_
#define DXPU_LIB_VIRTIO_GUEST_DMA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "gpu/dma_engine.h"
#include "gpu/owned_tlp.h"

namespace dxpu::virtio {

class GuestDma {
 public:
  using ReadDone = std::function<void(bool ok, std::vector<uint8_t> data)>;

  explicit GuestDma(const dxpu::gpu::DmaOptions& options) : engine_(options) {}

  // Starts reading [address, address + length) with pieces of at most `max_read_request`
  // bytes. A range that wraps, or an empty one, ends at the next RunDeferred (failed, or with
  // no bytes).
  void Read(uint64_t address, uint32_t length, uint32_t max_read_request, ReadDone done);
  // Queues posted writes of `bytes` at `address`, each at most `max_payload` bytes and inside
  // one 4 KiB page. False (nothing queued) for a range that wraps.
  bool Write(uint64_t address, std::span<const uint8_t> bytes, uint32_t max_payload,
             dxpu::gpu::TlpQueue& out) const;

  // Queues the memory reads that may go now (one per free tag).
  void Issue(dxpu::gpu::TlpQueue& out);
  void OnSent(const dxpu_tlp& mrd, uint64_t now) { engine_.OnSent(mrd, now); }
  // A completion for the device (validated); its kind, for the caller's counters.
  dxpu::gpu::DmaCompletion::Kind OnCompletion(const dxpu_tlp& cpl);
  bool TakesAsData(const dxpu_tlp& cpl) const { return engine_.TakesAsData(cpl); }
  // Fails the reads that timed out; returns how many pieces timed out.
  size_t Expire(uint64_t now);
  // Ends the reads Read could not start (callbacks run here).
  void RunDeferred();
  uint64_t NextDeadline() const { return engine_.NextDeadline(); }

  void Reset();
  size_t reads_open() const { return jobs_.size() + deferred_.size(); }
  size_t reads_in_flight() const { return engine_.reads_in_flight(); }

 private:
  struct Job {
    std::vector<uint8_t> data;
    ReadDone done;
  };
  void Finish(uint64_t job, bool ok);

  dxpu::gpu::DmaEngine engine_;
  std::map<uint64_t, Job> jobs_;
  std::vector<std::pair<bool, ReadDone>> deferred_;
  uint64_t next_job_ = 1;
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_GUEST_DMA_H_
