// copy_engine.cc - COPY in four directions over the DMA engine and device memory.
#include "gpu/copy_engine.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "gpu/kernels.h"

namespace dxpu::gpu {
namespace {

bool HostRangeOk(uint64_t address, uint64_t size) { return size - 1 <= UINT64_MAX - address; }

}  // namespace

ChannelError CopyEngine::Start(const CopyCommand& c, uint64_t job, uint32_t max_read_request,
                               uint32_t max_payload, uint64_t start) {
  if (c.size == 0 || c.size > kMaxCopyBytes) return ChannelError::kBadLength;
  const bool src_host = (c.flags & kCopySrcHost) != 0;
  const bool dst_host = (c.flags & kCopyDstHost) != 0;
  flush_ = (c.flags & kCopyFlush) != 0;
  // A flush belongs to writes from device memory: reserved bits and other uses are refused.
  if ((c.flags & ~kCopyFlagsMask) != 0 || (flush_ && (src_host || !dst_host)))
    return ChannelError::kBadFlags;
  const bool src_ok = src_host ? HostRangeOk(c.src, c.size) : memory_.Contains(c.src, c.size);
  const bool dst_ok = dst_host ? HostRangeOk(c.dst, c.size) : memory_.Contains(c.dst, c.size);
  if (!src_ok || !dst_ok) return ChannelError::kBadAddress;

  command_ = c;
  job_ = job;
  max_read_request_ = max_read_request;
  max_payload_ = max_payload;
  writing_ = false;
  flushing_ = false;
  chunk_reading_ = false;
  if (src_host && dst_host) {
    mode_ = Mode::kHostToHost;
    chunk_start_ = 0;
    chunk_bytes_ = 0;
    StartChunkRead();
  } else if (src_host) {
    mode_ = Mode::kHostToDevice;
    dma_.StartRead(job_, c.src, c.size, max_read_request_);
  } else if (dst_host) {
    mode_ = Mode::kDeviceToHost;
    dxpu_tlp_req_split_init(&write_split_, c.dst, c.size, max_payload_);
    writing_ = true;
  } else {
    mode_ = Mode::kDeviceToDevice;
    memory_.Copy(c.dst, c.src, c.size);
    done_at_ = start + DeviceCopyNs(roofline_, c.size);
  }
  return ChannelError::kNone;
}

void CopyEngine::StartChunkRead() {
  chunk_start_ += chunk_bytes_;
  chunk_bytes_ = std::min(kStagingBytes, command_.size - chunk_start_);
  staging_.assign(chunk_bytes_, 0);
  dma_.StartRead(job_, command_.src + chunk_start_, chunk_bytes_, max_read_request_);
  chunk_reading_ = true;
}

void CopyEngine::Pump(TlpQueue& out, size_t queue_limit) {
  switch (mode_) {
    case Mode::kHostToDevice:
      while (out.size() < queue_limit && dma_.IssueRead(job_, out)) {
      }
      break;
    case Mode::kDeviceToHost:
      QueueWrites(out, queue_limit);
      if (!writing_ && flush_ && !flushing_) {
        // Behind the last write on its path: the read of the last DW written.
        const uint64_t last_dw = (command_.dst + command_.size - 1) & ~uint64_t{3};
        dma_.StartRead(job_, last_dw, 4, max_read_request_);
        flushing_ = true;
      }
      if (flushing_) dma_.IssueRead(job_, out);
      break;
    case Mode::kHostToHost:
      if (chunk_reading_) {
        while (out.size() < queue_limit && dma_.IssueRead(job_, out)) {
        }
        if (!dma_.ReadDone(job_)) break;
        chunk_reading_ = false;
        dxpu_tlp_req_split_init(&write_split_, command_.dst + chunk_start_, chunk_bytes_,
                                max_payload_);
        writing_ = true;
      }
      QueueWrites(out, queue_limit);
      if (!writing_ && chunk_start_ + chunk_bytes_ < command_.size) {
        StartChunkRead();
        while (out.size() < queue_limit && dma_.IssueRead(job_, out)) {
        }
      }
      break;
    case Mode::kIdle:
    case Mode::kDeviceToDevice:
      break;
  }
}

void CopyEngine::QueueWrites(TlpQueue& out, size_t queue_limit) {
  while (writing_ && out.size() < queue_limit) {
    dxpu_tlp_req_piece piece{};
    if (!dxpu_tlp_req_split_next(&write_split_, &piece)) {
      writing_ = false;
      break;
    }
    std::vector<uint8_t> payload(size_t{piece.length_dw} * 4, 0);
    const uint64_t lead = write_split_.start + piece.offset - piece.addr;
    const std::span<uint8_t> bytes(payload.data() + lead, piece.nbytes);
    if (mode_ == Mode::kDeviceToHost) {
      memory_.Read(command_.src + piece.offset, bytes);
    } else {
      std::memcpy(bytes.data(), staging_.data() + piece.offset, piece.nbytes);
    }
    out.push_back(dma_.MakeWrite(piece.addr, piece.first_be, piece.last_be, std::move(payload),
                                 TlpOrigin::kDmaWrite));
    if (write_split_.next >= write_split_.end) writing_ = false;
  }
}

void CopyEngine::OnReadData(uint64_t offset, std::span<const uint8_t> data) {
  if (mode_ == Mode::kHostToDevice) {
    memory_.Write(command_.dst + offset, data);
  } else if (mode_ == Mode::kHostToHost && chunk_reading_ && offset <= staging_.size() &&
             data.size() <= staging_.size() - offset) {
    std::memcpy(staging_.data() + offset, data.data(), data.size());
  }
}

std::optional<uint64_t> CopyEngine::Finished(uint64_t now) const {
  switch (mode_) {
    case Mode::kIdle:
      return now;
    case Mode::kHostToDevice:
      if (dma_.ReadDone(job_)) return now;
      return std::nullopt;
    case Mode::kDeviceToHost:
      if (!writing_ && (!flush_ || (flushing_ && dma_.ReadDone(job_)))) return now;
      return std::nullopt;
    case Mode::kHostToHost:
      if (!chunk_reading_ && !writing_ && chunk_start_ + chunk_bytes_ >= command_.size) {
        return now;
      }
      return std::nullopt;
    case Mode::kDeviceToDevice:
      if (now >= done_at_) return done_at_;
      return std::nullopt;
  }
  return std::nullopt;
}

uint64_t CopyEngine::wake_time() const {
  return mode_ == Mode::kDeviceToDevice ? done_at_ : UINT64_MAX;
}

void CopyEngine::Abort() {
  if (mode_ == Mode::kHostToDevice || mode_ == Mode::kHostToHost || flushing_)
    dma_.CancelRead(job_);
  mode_ = Mode::kIdle;
  writing_ = false;
  flushing_ = false;
  chunk_reading_ = false;
  staging_.clear();
  staging_.shrink_to_fit();
}

}  // namespace dxpu::gpu
