// guest_dma.cc - reads as DmaEngine jobs gathered into one buffer each; writes cut by the
// codec's posted-write split.
#include "virtio/guest_dma.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/tlp_build.h"

namespace dxpu::virtio {

void GuestDma::Read(uint64_t address, uint32_t length, uint32_t max_read_request, ReadDone done) {
  if (length == 0) {
    deferred_.emplace_back(true, std::move(done));
    return;
  }
  const uint64_t job = next_job_++;
  if (!engine_.StartRead(job, address, length, max_read_request)) {
    deferred_.emplace_back(false, std::move(done));  // wraps, or a bad MRRS
    return;
  }
  jobs_.emplace(job, Job{.data = std::vector<uint8_t>(length), .done = std::move(done)});
}

bool GuestDma::Write(uint64_t address, std::span<const uint8_t> bytes, uint32_t max_payload,
                     dxpu::gpu::TlpQueue& out) const {
  if (bytes.empty()) return true;
  dxpu_tlp_mwr_split split{};
  if (dxpu_tlp_mwr_split_init(&split, address, bytes.data(), bytes.size(), max_payload) !=
      DXPU_TLP_OK) {
    return false;
  }
  std::array<uint8_t, 4096> buf{};
  dxpu_tlp w{};
  while (dxpu_tlp_mwr_split_next(&split, buf.data(), &w)) {
    std::vector<uint8_t> payload(buf.data(), buf.data() + size_t{w.length_dw} * 4);
    out.push_back(engine_.MakeWrite(w.addr, w.first_be, w.last_be, std::move(payload),
                                    dxpu::gpu::TlpOrigin::kDmaWrite));
  }
  return true;
}

void GuestDma::Issue(dxpu::gpu::TlpQueue& out) {
  while (engine_.IssueRead(out)) {
  }
}

void GuestDma::Finish(uint64_t job, bool ok) {
  const auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  Job j = std::move(it->second);
  jobs_.erase(it);
  if (!ok) {
    engine_.CancelRead(job);
    j.data.clear();
  }
  j.done(ok, std::move(j.data));
}

dxpu::gpu::DmaCompletion::Kind GuestDma::OnCompletion(const dxpu_tlp& cpl) {
  const dxpu::gpu::DmaCompletion c = engine_.OnCompletion(cpl);
  switch (c.kind) {
    case dxpu::gpu::DmaCompletion::Kind::kUnexpected:
    case dxpu::gpu::DmaCompletion::Kind::kMalformed:
      break;
    case dxpu::gpu::DmaCompletion::Kind::kData: {
      const auto it = jobs_.find(c.job);
      if (it == jobs_.end()) break;  // a read already failed or forgotten: its data is late
      std::vector<uint8_t>& data = it->second.data;
      if (c.offset <= data.size() && c.data.size() <= data.size() - c.offset) {
        std::copy(c.data.begin(), c.data.end(), data.begin() + static_cast<ptrdiff_t>(c.offset));
      }
      if (engine_.ReadDone(c.job)) Finish(c.job, true);
      break;
    }
    case dxpu::gpu::DmaCompletion::Kind::kFailed:
      Finish(c.job, false);
      break;
  }
  return c.kind;
}

size_t GuestDma::Expire(uint64_t now) {
  std::vector<uint64_t> expired;
  const size_t n = engine_.ExpireReads(now, &expired);
  for (const uint64_t job : expired) Finish(job, false);
  return n;
}

void GuestDma::RunDeferred() {
  while (!deferred_.empty()) {
    std::vector<std::pair<bool, ReadDone>> now;
    now.swap(deferred_);
    for (auto& [ok, done] : now) done(ok, {});
  }
}

void GuestDma::Reset() {
  engine_.Reset();  // forgets every job and read in flight
  jobs_.clear();
  deferred_.clear();
}

}  // namespace dxpu::virtio
