// copy_engine.h - the copy engine: runs one COPY command in any of its four directions.
//   host -> device   memory reads of the source (at most MRRS, never crossing 4 KiB, at most
//                    max_outstanding_reads in flight); each completion's data is written to
//                    device memory as it arrives
//   device -> host   posted writes of at most MPS, never crossing 4 KiB; with kCopyFlush
//                    then a read of the last DW written, whose completion ends the copy
//   host -> host     through a 1 MiB staging buffer: read a chunk, then write it
//   device -> device a local copy, done when the roofline says 2 * size bytes of memory
//                    traffic take (no launch overhead)
// Sans-IO: the channel calls Pump to let it queue TLPs, and hands it the data of its reads.
#ifndef DXPU_LIB_GPU_COPY_ENGINE_H_
#define DXPU_LIB_GPU_COPY_ENGINE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/tlp_codec.h"
#include "gpu/commands.h"
#include "gpu/device_profile.h"
#include "gpu/dma_engine.h"
#include "gpu/owned_tlp.h"
#include "gpu/sparse_memory.h"

namespace dxpu::gpu {

class CopyEngine {
 public:
  static constexpr uint64_t kStagingBytes = uint64_t{1} << 20;

  CopyEngine(SparseMemory& memory, DmaEngine& dma, const Roofline& roofline)
      : memory_(memory), dma_(dma), roofline_(roofline) {}

  // Checks the command (BAD_LENGTH: size 0 or above 4 GiB; BAD_ADDRESS: a device range
  // outside device memory or a host range that wraps; BAD_FLAGS: reserved bits, or a flush
  // on a copy that does not write from device memory) and starts it at time `start`, its DMA
  // reads under `job`. A device-to-device copy happens here.
  ChannelError Start(const CopyCommand& c, uint64_t job, uint32_t max_read_request,
                     uint32_t max_payload, uint64_t start);
  // Queues what it can: reads while tags are free, writes while `out` holds fewer than
  // `queue_limit` TLPs. The caller calls it only while Bus Master Enable is set.
  void Pump(TlpQueue& out, size_t queue_limit);
  // Bytes of the job's reads, at an offset of what the current read covers.
  void OnReadData(uint64_t offset, std::span<const uint8_t> data);
  // Once the copy is over: when it finished (a device-to-device copy: its roofline end,
  // which may lie ahead of `now`; otherwise `now`, when its last write was queued or its last
  // read answered). nullopt while it runs.
  std::optional<uint64_t> Finished(uint64_t now) const;
  // The roofline end of a device-to-device copy in progress; UINT64_MAX otherwise.
  uint64_t wake_time() const;
  // Stops (after an error or a reset): nothing more is queued.
  void Abort();
  bool active() const { return mode_ != Mode::kIdle; }

 private:
  enum class Mode : uint8_t { kIdle, kHostToDevice, kDeviceToHost, kHostToHost, kDeviceToDevice };

  void StartChunkRead();
  void QueueWrites(TlpQueue& out, size_t queue_limit);

  SparseMemory& memory_;
  DmaEngine& dma_;
  const Roofline& roofline_;

  Mode mode_ = Mode::kIdle;
  CopyCommand command_;
  uint64_t job_ = 0;
  uint32_t max_read_request_ = 0;
  uint32_t max_payload_ = 0;
  uint64_t done_at_ = 0;  // device to device

  // Writes in progress (device to host, or a host-to-host chunk): the split of the
  // destination range and, per transfer offset, where the bytes come from.
  bool writing_ = false;
  bool flush_ = false;     // kCopyFlush: read back once the writes are queued
  bool flushing_ = false;  // that read is under way
  dxpu_tlp_req_split write_split_{};
  uint64_t chunk_start_ = 0;  // host to host: the chunk's offset in the transfer
  uint64_t chunk_bytes_ = 0;
  bool chunk_reading_ = false;
  std::vector<uint8_t> staging_;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_COPY_ENGINE_H_
