// flow_network.cc - copies that share links, as a fluid, in two stages (flow_network.h).
#include "perfmodel/flow_network.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <utility>

namespace dxpu::perfmodel {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow with fewer bytes left than this, or that would cross them in fewer ns, has crossed
// (rounding of rate x time).
constexpr double kDoneBytes = 1e-6;
constexpr double kDoneNs = 1e-6;
}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> link_bytes_per_ns,
                         const std::vector<double>& queue_bytes_per_ns)
    : capacity_(std::move(link_bytes_per_ns)) {
  assert(std::ranges::all_of(capacity_, [](double c) { return c > 0; }));
  for (const double r : queue_bytes_per_ns) {
    assert(r > 0);
    Queue q;
    q.rate = r;
    queues_.push_back(std::move(q));
  }
}

size_t FlowNetwork::Add(double start, double bytes, std::span<const size_t> links, size_t queue) {
  if (start < now_) {
    ++clamped_;
    start = now_;
  }
  RunTo(start);
  const size_t id = flows_.size();
  Flow f;
  f.remaining = bytes;
  f.queue = queue < queues_.size() ? queue : kNoQueue;
  f.links.assign(links.begin(), links.end());
  assert(std::ranges::all_of(f.links, [&](size_t l) { return l < capacity_.size(); }));
  if (bytes <= kDoneBytes || f.links.empty()) {
    // Nothing to cross, or nothing in its way: its bytes reach its queue at once.
    if (f.queue != kNoQueue) {
      queues_[f.queue].held += bytes;
      Sample(queues_[f.queue]);
    }
    f.remaining = 0;
    Finish(f);
    flows_.push_back(std::move(f));
    return id;
  }
  flows_.push_back(std::move(f));
  running_.push_back(id);
  ShareRates();
  return id;
}

double FlowNetwork::End(size_t id) {
  assert(id < flows_.size());
  while (flows_[id].end < 0 && RunToNextEnd()) {
  }
  return flows_[id].end;
}

double FlowNetwork::Through(size_t queue, double t) {
  if (t >= now_) RunTo(t);
  if (queue >= queues_.size()) return t;
  const Queue& q = queues_[queue];
  return t + (HeldAt(q, t) / q.rate);
}

double FlowNetwork::HeldAt(const Queue& q, double t) {
  // The last sample at or before t; none: it was empty and nothing arrived.
  const auto after = std::ranges::upper_bound(q.history, t, {}, &QueueSample::t);
  if (after == q.history.begin()) return 0;
  const QueueSample& s = *std::prev(after);
  return std::max(0.0, s.held + ((s.arriving - q.rate) * (t - s.t)));
}

void FlowNetwork::Sample(Queue& q) const {
  if (!q.history.empty() && q.history.back().t == now_) q.history.pop_back();
  q.history.push_back(QueueSample{now_, q.held, q.arriving});
}

double FlowNetwork::NextEnd() const {
  double next = kInf;
  for (const size_t id : running_) {
    next = std::min(next, now_ + (flows_[id].remaining / flows_[id].rate));
  }
  return next;
}

void FlowNetwork::RunTo(double t) {
  while (!running_.empty()) {
    const double next = NextEnd();
    if (next > t) break;
    EndAt(next);
  }
  Advance(std::max(now_, t));
}

bool FlowNetwork::RunToNextEnd() {
  if (running_.empty()) return false;
  EndAt(NextEnd());
  return true;
}

void FlowNetwork::EndAt(double next) {
  Advance(next);
  std::erase_if(running_, [&](size_t id) {
    Flow& f = flows_[id];
    if (f.remaining > std::max(kDoneBytes, f.rate * kDoneNs)) return false;
    f.remaining = 0;
    Finish(f);
    return true;
  });
  ShareRates();
}

void FlowNetwork::Finish(Flow& f) {
  f.end = f.queue == kNoQueue ? now_ : now_ + (queues_[f.queue].held / queues_[f.queue].rate);
}

void FlowNetwork::Advance(double t) {
  const double dt = t - now_;
  if (dt > 0) {
    for (const size_t id : running_) flows_[id].remaining -= flows_[id].rate * dt;
    for (Queue& q : queues_) q.held = std::max(0.0, q.held + ((q.arriving - q.rate) * dt));
  }
  now_ = std::max(now_, t);
}

// Progressive filling: the link that gives its unfixed flows the least share fixes them at it,
// and what they take is taken from their other links; again until every flow is fixed. Then
// what reaches each queue.
void FlowNetwork::ShareRates() {
  std::vector<double> left = capacity_;
  std::vector<size_t> unfixed_on(capacity_.size(), 0);
  std::vector<size_t> unfixed = running_;
  for (const size_t id : unfixed) {
    for (const size_t l : flows_[id].links) ++unfixed_on[l];
  }
  while (!unfixed.empty()) {
    size_t bottleneck = capacity_.size();
    double share = kInf;
    for (size_t l = 0; l < capacity_.size(); ++l) {
      if (unfixed_on[l] == 0) continue;
      const double s = std::max(0.0, left[l]) / static_cast<double>(unfixed_on[l]);
      if (s < share) {
        share = s;
        bottleneck = l;
      }
    }
    assert(bottleneck < capacity_.size());
    std::erase_if(unfixed, [&](size_t id) {
      Flow& f = flows_[id];
      if (std::ranges::find(f.links, bottleneck) == f.links.end()) return false;
      f.rate = std::max(share, kDoneBytes);
      for (const size_t l : f.links) {
        left[l] -= share;
        --unfixed_on[l];
      }
      return true;
    });
  }
  std::vector<double> arriving(queues_.size(), 0);
  for (const size_t id : running_) {
    if (flows_[id].queue != kNoQueue) arriving[flows_[id].queue] += flows_[id].rate;
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    if (arriving[i] == queues_[i].arriving) continue;
    queues_[i].arriving = arriving[i];
    Sample(queues_[i]);
  }
}

}  // namespace dxpu::perfmodel
