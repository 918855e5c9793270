// collective.cc - an NCCL/RCCL collective's time on a path (collective.h).
#include "perfmodel/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace dxpu::perfmodel {
namespace {

// One hop of the group, from one GPU to another: its one-way latency and the rate one flow
// gets on it.
struct Hop {
  double one_way_ns;
  double bytes_per_ns;
};

double Wire(const ModelParams& p, double bytes) {
  const double tlps = std::ceil(bytes / p.mps);
  return bytes + tlps * p.tlp_overhead_bytes;
}

class Group {
 public:
  Group(const ModelParams& p, const std::vector<int64_t>& box_of_rank, bool dxpu)
      : p_(p), box_(box_of_rank), dxpu_(dxpu) {
    // Each box's fabric link carries, each way, the ring's edges that leave or enter the box.
    for (size_t r = 0; r < box_.size(); ++r) {
      const size_t next = (r + 1) % box_.size();
      if (Crosses(r, next)) {
        ++leaving_[box_[r]];
        ++entering_[box_[next]];
      }
    }
  }

  size_t size() const { return box_.size(); }

  // The hop from rank `from` to rank `to`, with `flows` sharing each fabric link it takes.
  Hop HopOf(size_t from, size_t to, double flows) const {
    const double pcie = p_.pcie_bandwidth_gbps / 8;
    if (!Crosses(from, to)) return {2 * p_.pcie_latency_ns, pcie};
    const double one_way = p_.pcie_latency_ns + p_.box_pcie_latency_ns + p_.added_latency_ns;
    const double fabric = std::min(p_.fabric_bandwidth_gbps, p_.pcie_bandwidth_gbps) / 8;
    return {2 * one_way, fabric / std::max(1.0, flows)};
  }

  // The ring's edge from rank r to the next, shared with the other edges on its fabric links.
  Hop RingEdge(size_t r) const {
    const size_t next = (r + 1) % box_.size();
    if (!Crosses(r, next)) return HopOf(r, next, 1);
    const double flows = std::max(leaving_.at(box_[r]), entering_.at(box_[next]));
    return HopOf(r, next, flows);
  }

  // A step of the ring: every rank sends `bytes` to the next at once; the slowest edge decides.
  double RingStep(double bytes) const {
    double slowest = 0;
    for (size_t r = 0; r < box_.size(); ++r) {
      const Hop h = RingEdge(r);
      slowest = std::max(slowest, Wire(p_, bytes) / h.bytes_per_ns + h.one_way_ns);
    }
    return slowest;
  }

  // A pipeline along the ring's n - 1 edges (broadcast, reduce): the data at the slowest edge's
  // rate, after every edge's latency.
  double RingPipeline(double bytes) const {
    double latency = 0, rate = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r + 1 < box_.size(); ++r) {
      const Hop h = RingEdge(r);
      latency += h.one_way_ns;
      rate = std::min(rate, h.bytes_per_ns);
    }
    return Wire(p_, bytes) / rate + latency;
  }

  // Tree all-reduce: up a binary tree and down again, pipelined: 2 x depth hops of latency, and
  // the data twice at the slowest hop's rate.
  double TreeAllReduce(double bytes) const {
    double latency = 0, rate = std::numeric_limits<double>::infinity();
    for (size_t r = 1; r < box_.size(); ++r) {
      const Hop h = HopOf(r, (r - 1) / 2, 1);  // to its parent
      latency = std::max(latency, h.one_way_ns);
      rate = std::min(rate, h.bytes_per_ns);
    }
    const double depth = std::ceil(std::log2(static_cast<double>(box_.size()) + 1) - 1);
    return 2 * (depth * latency + Wire(p_, bytes) / rate);
  }

  // All to all: each rank sends bytes / n to every other; each box's link carries what its
  // ranks send out of it.
  double AllToAll(double bytes) const {
    const double n = static_cast<double>(box_.size());
    std::map<int64_t, double> ranks_in;
    for (const int64_t b : box_) ranks_in[b] += 1;
    double slowest = 0;
    for (size_t r = 0; r < box_.size(); ++r) {
      // Natively (or inside the box) each GPU's own link; across boxes, its box's link shared
      // by its box's ranks.
      const double outside = dxpu_ ? n - ranks_in[box_[r]] : 0;
      const double inside = n - 1 - outside;
      const Hop local = HopOf(r, r, 1);
      double t = Wire(p_, bytes * inside / n) / local.bytes_per_ns + local.one_way_ns;
      if (outside > 0) {
        const Hop far = HopOf(r, (r + 1) % box_.size(), ranks_in[box_[r]]);
        t = std::max(t, Wire(p_, bytes * outside / n) / far.bytes_per_ns + far.one_way_ns);
      }
      slowest = std::max(slowest, t);
    }
    return slowest;
  }

 private:
  bool Crosses(size_t a, size_t b) const { return dxpu_ && box_[a] != box_[b]; }

  const ModelParams& p_;
  const std::vector<int64_t>& box_;
  bool dxpu_;
  std::map<int64_t, double> leaving_, entering_;
};

}  // namespace

double CollectiveNs(const Collective& c, const ModelParams& p,
                    const std::vector<int64_t>& box_of_rank, bool dxpu) {
  const Group g(p, box_of_rank, dxpu);
  if (g.size() < 2) return 0;
  const auto n = static_cast<double>(g.size());
  const auto bytes = static_cast<double>(c.bytes);
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      if (c.algorithm == CollectiveAlgorithm::kTree) return g.TreeAllReduce(bytes);
      return 2 * (n - 1) * g.RingStep(bytes / n);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return (n - 1) * g.RingStep(bytes / n);
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return g.RingPipeline(bytes);
    case CollectiveKind::kAllToAll:
      return g.AllToAll(bytes);
    case CollectiveKind::kSendRecv: {
      const Hop h = g.HopOf(0, 1, 1);
      return Wire(p, bytes) / h.bytes_per_ns + h.one_way_ns;
    }
  }
  return 0;
}

}  // namespace dxpu::perfmodel
