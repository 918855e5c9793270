// tx_queue.cc - the ordering queue in front of a DxFP session: choose the next TLP under
// PCIe's passing rules, and act on the session's answer.
#include "fabric/tx_queue.h"

#include <limits>

namespace dxpu::fabric {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
constexpr int kP = DXPU_TLP_CLASS_POSTED;
constexpr int kNp = DXPU_TLP_CLASS_NON_POSTED;
constexpr int kCpl = DXPU_TLP_CLASS_COMPLETION;
constexpr int kNoClass = -1;

std::array<TlpFifo, kTlpClasses> MakeFifos(const TxQueueOptions& o) {
  return {TlpFifo(o.max_tlps_per_class, o.max_payload_bytes_per_class),
          TlpFifo(o.max_tlps_per_class, o.max_payload_bytes_per_class),
          TlpFifo(o.max_tlps_per_class, o.max_payload_bytes_per_class)};
}

}  // namespace

TxQueue::TxQueue(const TxQueueOptions& options) : fifos_(MakeFifos(options)) {}

bool TxQueue::Push(const dxpu_tlp& tlp) {
  const int cls = dxpu_tlp_kind_class(tlp.kind);
  if (!fifos_[cls].Push(tlp, next_order_)) {
    ++stats_.push_refused;
    return false;
  }
  ++next_order_;
  ++stats_.pushed;
  return true;
}

size_t TxQueue::size() const {
  return fifos_[kP].size() + fifos_[kNp].size() + fifos_[kCpl].size();
}

uint64_t TxQueue::HeadOrder(int cls) const {
  return fifos_[cls].empty() ? kNone : fifos_[cls].front().order;
}

int TxQueue::Pick(const std::array<bool, kTlpClasses>& blocked) const {
  const uint64_t p = HeadOrder(kP);
  const uint64_t np = HeadOrder(kNp);
  const uint64_t cpl = HeadOrder(kCpl);
  // Which heads the rules let go, whether or not an older head of another class is
  // blocked: posted always; a completion unless an older posted TLP waits; a non-posted
  // request unless an older posted TLP or completion waits. (kNone is larger than any
  // submission number, so an empty class is never "older".)
  std::array<bool, kTlpClasses> may{};
  may[kP] = p != kNone;
  may[kCpl] = cpl != kNone && p > cpl;
  may[kNp] = np != kNone && p > np && cpl > np;
  int best = kNoClass;
  uint64_t best_order = kNone;
  for (int cls : {kP, kNp, kCpl}) {
    if (may[cls] && !blocked[cls] && HeadOrder(cls) < best_order) {
      best = cls;
      best_order = HeadOrder(cls);
    }
  }
  return best;
}

void TxQueue::CountPassing(int cls) {
  const uint64_t order = HeadOrder(cls);
  if (cls == kP) {
    if (HeadOrder(kNp) < order) ++stats_.posted_passed_np;
    if (HeadOrder(kCpl) < order) ++stats_.posted_passed_cpl;
  } else if (cls == kCpl && HeadOrder(kNp) < order) {
    ++stats_.cpl_passed_np;
  }
}

bool TxQueue::Apply(int cls, dxfp_send_result r, DrainReport* report) {
  switch (r) {
    case DXFP_SEND_OK:
      CountPassing(cls);
      fifos_[cls].Pop();
      ++report->sent;
      ++stats_.sent;
      return true;
    case DXFP_SEND_NO_CREDIT:
      ++stats_.no_credit[cls];
      report->blocked[cls] = true;
      return true;
    case DXFP_SEND_NP_FULL:
      // Only non-posted requests take request-table entries; blocking the class that was
      // refused (rather than always kNp) keeps the drain finite whatever try_send says.
      ++stats_.np_full;
      report->blocked[cls] = true;
      return true;
    case DXFP_SEND_TOO_BIG:
    case DXFP_SEND_INVALID:
      ++(r == DXFP_SEND_TOO_BIG ? stats_.dropped_too_big : stats_.dropped_invalid);
      fifos_[cls].Pop();
      ++report->dropped;
      return true;
    case DXFP_SEND_REPLAY_FULL:
      ++stats_.replay_full;
      break;
    case DXFP_SEND_NOT_READY:
      ++stats_.not_ready;
      break;
    case DXFP_SEND_DOWN:
      ++stats_.down;
      break;
    case DXFP_SEND_COUNT:
    default:
      ++stats_.unknown_result;
      break;
  }
  report->stop = r;
  return false;
}

size_t TxQueue::Drain(const SendFn& try_send) {
  DrainReport report;
  ++stats_.drains;
  // Each turn removes a TLP, blocks a class (at most kTlpClasses times) or stops.
  for (int cls = Pick(report.blocked); cls != kNoClass; cls = Pick(report.blocked)) {
    if (!Apply(cls, try_send(fifos_[cls].front().tlp), &report)) break;
  }
  if (report.stop == DXFP_SEND_OK && !report.blocked[kP] && !fifos_[kP].empty()) {
    report.posted_stranded = true;
    ++stats_.posted_stranded;
  }
  last_drain_ = report;
  return report.sent;
}

void TxQueue::Discard(const VisitFn& visit) {
  // Oldest first across the classes: merge by submission number.
  while (true) {
    int oldest = kNoClass;
    for (int cls : {kP, kNp, kCpl}) {
      if (HeadOrder(cls) != kNone && (oldest == kNoClass || HeadOrder(cls) < HeadOrder(oldest))) {
        oldest = cls;
      }
    }
    if (oldest == kNoClass) return;
    if (visit) visit(fifos_[oldest].front().tlp);
    fifos_[oldest].Pop();
  }
}

}  // namespace dxpu::fabric
