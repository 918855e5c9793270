// dma_engine.cc - read splitting, tags, completion matching and timeouts; write building.
#include "gpu/dma_engine.h"

#include <algorithm>
#include <utility>

namespace dxpu::gpu {

DmaEngine::DmaEngine(const DmaOptions& options)
    : options_(options), reads_(std::clamp<uint16_t>(options.max_outstanding_reads, 1, 256)) {
  for (size_t tag = 0; tag < reads_.size(); ++tag) free_tags_.push_back(static_cast<uint16_t>(tag));
}

bool DmaEngine::StartRead(uint64_t job, uint64_t address, uint64_t length,
                          uint32_t max_read_request) {
  dxpu_tlp_req_split split{};
  if (dxpu_tlp_req_split_init(&split, address, length, max_read_request) != DXPU_TLP_OK) {
    return false;
  }
  CancelRead(job);
  jobs_.push_back(Job{.id = job, .split = split, .pieces_left = true, .in_flight = 0});
  return true;
}

DmaEngine::Job* DmaEngine::FindJob(uint64_t job) {
  for (Job& j : jobs_) {
    if (j.id == job) return &j;
  }
  return nullptr;
}

const DmaEngine::Job* DmaEngine::FindJob(uint64_t job) const {
  for (const Job& j : jobs_) {
    if (j.id == job) return &j;
  }
  return nullptr;
}

void DmaEngine::Prune() {
  std::erase_if(jobs_, [](const Job& j) { return !j.pieces_left && j.in_flight == 0; });
}

void DmaEngine::CancelRead(uint64_t job) {
  std::erase_if(jobs_, [job](const Job& j) { return j.id == job; });
}

void DmaEngine::CancelAll() { jobs_.clear(); }

bool DmaEngine::IssueRead(uint64_t job, TlpQueue& out) {
  Job* j = FindJob(job);
  return j != nullptr && Issue(*j, out);
}

bool DmaEngine::IssueRead(TlpQueue& out) {
  for (Job& j : jobs_) {
    if (j.pieces_left) return Issue(j, out);
  }
  return false;
}

bool DmaEngine::Issue(Job& job, TlpQueue& out) {
  if (!job.pieces_left || free_tags_.empty()) return false;
  dxpu_tlp_req_piece piece{};
  if (!dxpu_tlp_req_split_next(&job.split, &piece)) {
    job.pieces_left = false;
    Prune();
    return false;
  }
  if (job.split.next >= job.split.end) job.pieces_left = false;
  const uint16_t tag = free_tags_.front();
  free_tags_.pop_front();
  reads_[tag] = PendingRead{.job = job.id,
                            .first_byte = job.split.start + piece.offset,
                            .offset = piece.offset,
                            .bytes = piece.nbytes,
                            .received = 0,
                            .deadline = UINT64_MAX};
  ++in_flight_;
  ++job.in_flight;

  OwnedTlp t;
  t.origin = TlpOrigin::kDmaRead;
  dxpu_tlp_req_piece_header(&piece, DXPU_TLP_MRD, &t.header);
  t.header.requester_id = options_.requester_id;
  t.header.tag = tag;
  out.push_back(std::move(t));
  return true;
}

bool DmaEngine::ReadDone(uint64_t job) const {
  const Job* j = FindJob(job);
  return j == nullptr || (!j->pieces_left && j->in_flight == 0);
}

void DmaEngine::OnSent(const dxpu_tlp& mrd, uint64_t now) {
  if (mrd.tag >= reads_.size() || !reads_[mrd.tag]) return;
  const uint64_t timeout = options_.completion_timeout_ns;
  reads_[mrd.tag]->deadline = now > UINT64_MAX - timeout ? UINT64_MAX - 1 : now + timeout;
}

void DmaEngine::Retire(uint16_t tag) {
  if (Job* j = FindJob(reads_[tag]->job); j != nullptr && j->in_flight > 0) {
    --j->in_flight;
    if (!j->pieces_left && j->in_flight == 0) Prune();
  }
  reads_[tag].reset();
  free_tags_.push_back(tag);
  --in_flight_;
}

bool DmaEngine::IsOurs(const dxpu_tlp& cpl) const {
  return cpl.requester_id == options_.requester_id && cpl.tag < reads_.size() &&
         reads_[cpl.tag].has_value();
}

bool DmaEngine::Failed(const dxpu_tlp& cpl) {
  return cpl.cpl_status != DXPU_TLP_CPL_SC || (cpl.flags & DXPU_TLP_F_EP) != 0;
}

// The next bytes of read r, as a completer must send them: Byte Count the bytes left, Lower
// Address that of the next byte, data, no BCM.
bool DmaEngine::FitsRead(const dxpu_tlp& cpl, const PendingRead& r) {
  const uint32_t remaining = r.bytes - r.received;
  const uint64_t next = r.first_byte + r.received;
  return cpl.kind == DXPU_TLP_CPLD && cpl.payload != nullptr && cpl.byte_count == remaining &&
         cpl.lower_addr == (next & 0x7fu) && (cpl.flags & DXPU_TLP_F_BCM) == 0;
}

bool DmaEngine::TakesAsData(const dxpu_tlp& cpl) const {
  return IsOurs(cpl) && !Failed(cpl) && FitsRead(cpl, *reads_[cpl.tag]);
}

DmaCompletion DmaEngine::OnCompletion(const dxpu_tlp& cpl) {
  DmaCompletion c;
  if (!IsOurs(cpl)) return c;  // kUnexpected
  const auto tag = static_cast<uint16_t>(cpl.tag);
  PendingRead& r = *reads_[tag];
  c.job = r.job;
  if (Failed(cpl)) {
    c.kind = DmaCompletion::Kind::kFailed;
    c.status = cpl.cpl_status;
    c.read_done = true;
    Retire(tag);
    return c;
  }
  const uint32_t remaining = r.bytes - r.received;
  if (!FitsRead(cpl, r)) {
    c.kind = DmaCompletion::Kind::kMalformed;
    return c;
  }
  const uint32_t lead = cpl.lower_addr & 0x3u;
  const uint32_t carried = uint32_t{cpl.length_dw} * 4 - lead;
  const uint32_t n = std::min(remaining, carried);
  c.kind = DmaCompletion::Kind::kData;
  c.offset = r.offset + r.received;
  c.data = std::span<const uint8_t>(cpl.payload + lead, n);
  r.received += n;
  if (r.received == r.bytes) {
    c.read_done = true;
    Retire(tag);
  }
  return c;
}

size_t DmaEngine::ExpireReads(uint64_t now, std::vector<uint64_t>* jobs) {
  size_t expired = 0;
  for (size_t tag = 0; tag < reads_.size(); ++tag) {
    if (reads_[tag] && reads_[tag]->deadline <= now) {
      if (jobs != nullptr) jobs->push_back(reads_[tag]->job);
      Retire(static_cast<uint16_t>(tag));
      ++expired;
    }
  }
  return expired;
}

uint64_t DmaEngine::NextDeadline() const {
  uint64_t next = UINT64_MAX;
  if (in_flight_ == 0) return next;
  for (const std::optional<PendingRead>& r : reads_) {
    if (r) next = std::min(next, r->deadline);
  }
  return next;
}

void DmaEngine::Reset() {
  for (size_t tag = 0; tag < reads_.size(); ++tag) {
    if (reads_[tag]) {
      reads_[tag].reset();
      free_tags_.push_back(static_cast<uint16_t>(tag));
    }
  }
  in_flight_ = 0;
  jobs_.clear();
}

OwnedTlp DmaEngine::MakeWrite(uint64_t address, uint8_t first_be, uint8_t last_be,
                              std::vector<uint8_t> payload, TlpOrigin origin) const {
  OwnedTlp t;
  t.origin = origin;
  t.header.kind = DXPU_TLP_MWR;
  t.header.requester_id = options_.requester_id;
  t.header.addr = address;
  t.header.length_dw = static_cast<uint16_t>(payload.size() / 4);
  t.header.first_be = first_be;
  t.header.last_be = last_be;
  t.payload = std::move(payload);
  return t;
}

}  // namespace dxpu::gpu
