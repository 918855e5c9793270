// dma_engine.h - the GPU model as a PCIe requester: it splits a read of host memory into
// memory reads of at most Max Read Request Size that never cross a 4 KiB boundary, keeps at
// most max_outstanding_reads of them in flight (one tag each), matches the completions that
// come back to their read (tag, Requester ID, Byte Count, Lower Address), and retires a read
// that is not answered in time. It also builds the posted writes the engines send.
//
// Reads belong to a job (a number the caller picks): a batch of GPFIFO entries, a pushbuffer, a
// copy's source. Several jobs may be open at once (the channel fetches pushbuffers ahead while
// a copy runs); they share the tags, and the caller picks whose next piece goes out. The
// caller tells data of a job it still wants from that of one it abandoned by the job number.
#ifndef DXPU_LIB_GPU_DMA_ENGINE_H_
#define DXPU_LIB_GPU_DMA_ENGINE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "core/tlp_codec.h"
#include "gpu/owned_tlp.h"

namespace dxpu::gpu {

struct DmaOptions {
  uint16_t requester_id = 0;
  uint16_t max_outstanding_reads = 64;  // tags 0 .. n-1, n in 1..256
  uint64_t completion_timeout_ns = 50'000'000;
};

// What a completion meant to the DMA engine.
struct DmaCompletion {
  enum class Kind : uint8_t {
    kUnexpected,  // no read of this requester in flight with this tag: dropped
    kMalformed,   // matches a read but disagrees with it (Byte Count, Lower Address, a Cpl
                  // with status SC): dropped, the read stays in flight
    kData,        // `data` is the job's bytes at `offset`
    kFailed,      // a status other than SC, or poisoned data: the read is over, failed
  };
  Kind kind = Kind::kUnexpected;
  uint64_t job = 0;
  uint64_t offset = 0;            // within the job's transfer
  std::span<const uint8_t> data;  // points into the completion's payload
  bool read_done = false;         // the read this completion belongs to is over
  uint8_t status = DXPU_TLP_CPL_SC;
};

class DmaEngine {
 public:
  explicit DmaEngine(const DmaOptions& options);

  // Begins reading [address, address + length) for `job` (a number not open already) in
  // pieces of at most max_read_request bytes. Other open jobs are not affected. False
  // (nothing started) for an empty or wrapping range or an MRRS that is not a power of two in
  // 128..4096.
  bool StartRead(uint64_t job, uint64_t address, uint64_t length, uint32_t max_read_request);
  // Forgets `job`: its pieces not yet issued are never issued; its reads in flight still
  // complete (or time out), with its job number, and hold their tags until then.
  void CancelRead(uint64_t job);
  // Forgets every job (as CancelRead on each).
  void CancelAll();
  // Queues `job`'s next memory read, if a piece of it remains and a tag is free.
  bool IssueRead(uint64_t job, TlpQueue& out);
  // The same for the oldest open job with a piece left.
  bool IssueRead(TlpQueue& out);
  // Whether every piece of `job` has been issued and answered (true for a job that is not
  // open: finished, cancelled, or never started).
  bool ReadDone(uint64_t job) const;

  // The device sent this memory read: its completion timeout starts now.
  void OnSent(const dxpu_tlp& mrd, uint64_t now);
  // A Cpl or CplD that reached the device (already checked by dxpu_tlp_validate).
  DmaCompletion OnCompletion(const dxpu_tlp& cpl);
  // Whether OnCompletion would take cpl as data of a read in flight (kData).
  bool TakesAsData(const dxpu_tlp& cpl) const;
  // Retires the reads sent at least completion_timeout_ns before `now`; appends their jobs to
  // *jobs and returns how many there were.
  size_t ExpireReads(uint64_t now, std::vector<uint64_t>* jobs);
  // When the oldest read in flight times out; UINT64_MAX when none is.
  uint64_t NextDeadline() const;
  size_t reads_in_flight() const { return in_flight_; }

  // Function Level Reset: every read in flight is forgotten, so a late completion for it is
  // unexpected. Free tags are reused oldest-freed first; the forgotten reads' tags go last.
  void Reset();

  // A posted write of `payload` (length_dw * 4 bytes, with the byte enables) at a DW-aligned
  // address, from this requester.
  OwnedTlp MakeWrite(uint64_t address, uint8_t first_be, uint8_t last_be,
                     std::vector<uint8_t> payload, TlpOrigin origin) const;

  const DmaOptions& options() const { return options_; }

 private:
  struct PendingRead {
    uint64_t job = 0;
    uint64_t first_byte = 0;  // host address of the first byte asked for
    uint64_t offset = 0;      // of that byte within the job's transfer
    uint32_t bytes = 0;
    uint32_t received = 0;
    uint64_t deadline = UINT64_MAX;  // set when sent
  };

  // A read in flight of this requester has cpl's tag.
  bool IsOurs(const dxpu_tlp& cpl) const;
  // A status other than SC, or poisoned: the read ends, failed.
  static bool Failed(const dxpu_tlp& cpl);
  // cpl carries the next bytes of r as a completer must send them.
  static bool FitsRead(const dxpu_tlp& cpl, const PendingRead& r);

  struct Job {
    uint64_t id = 0;
    dxpu_tlp_req_split split{};
    bool pieces_left = true;  // pieces remain to be issued
    size_t in_flight = 0;
  };

  void Retire(uint16_t tag);
  Job* FindJob(uint64_t job);
  const Job* FindJob(uint64_t job) const;
  bool Issue(Job& job, TlpQueue& out);
  // Drops finished jobs.
  void Prune();

  DmaOptions options_;
  std::vector<std::optional<PendingRead>> reads_;  // by tag
  std::deque<uint16_t> free_tags_;
  size_t in_flight_ = 0;

  std::vector<Job> jobs_;  // open: pieces left or reads in flight; oldest first
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_DMA_ENGINE_H_
