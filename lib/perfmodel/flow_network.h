// flow_network.h - copies that share links, as a fluid, in two stages: each copy a flow of
// bytes over a set of links whose rate the flows on them share max-min fairly (the rate no
// flow can gain without taking it from one that has no more), worked out again whenever a flow
// starts or ends; then through a first-in first-out queue in front of the link that carries it
// to its target, which sends at that link's rate what reached it in the order it came. Data that
// reaches the queue faster than its link sends waits there, and so does whatever comes after it
// (the completion of a flush read: docs/perf-model.md, "GPUs over several boxes"). The queues
// hold what they are given (a root complex's or host proxy's buffers are taken as large enough).
//
// Flows are added as their starts become known and asked when they end; asking runs the network
// on to that end. A flow added with a start earlier than the time the network has run to starts
// then (counted: clamped()).
//
//   FlowNetwork net({25.0, 25.0}, {25.0});   // two links, one queue, bytes per ns
//   size_t a = net.Add(0, 1e6, {{0}}, 0);     // over link 0, then queue 0
//   size_t b = net.Add(0, 1e6, {{1}}, 0);     // over link 1, then queue 0
//   net.End(a), net.End(b);                   // both 80,000 ns: they reach the queue together
#ifndef DXPU_LIB_PERFMODEL_FLOW_NETWORK_H_
#define DXPU_LIB_PERFMODEL_FLOW_NETWORK_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace dxpu::perfmodel {

class FlowNetwork {
 public:
  static constexpr size_t kNoQueue = std::numeric_limits<size_t>::max();

  // Links and queues with these rates (bytes per ns, each > 0).
  FlowNetwork(std::vector<double> link_bytes_per_ns, const std::vector<double>& queue_bytes_per_ns);

  // A flow of `bytes` from `start` over `links` (indexes, each once), then through `queue`
  // (kNoQueue: none); its id.
  size_t Add(double start, double bytes, std::span<const size_t> links, size_t queue = kNoQueue);
  // When flow `id`'s last byte has left its queue.
  double End(size_t id);
  // When a few bytes that reach `queue` at `t` leave it: behind what is in it then (a time
  // already run past is looked up in the queue's history).
  double Through(size_t queue, double t);

  // The time the network has run to.
  double now() const { return now_; }
  // Flows added with a start before now() (started at now()).
  uint64_t clamped() const { return clamped_; }

 private:
  struct Flow {
    double remaining = 0;  // bytes still to cross its links
    double rate = 0;
    size_t queue = kNoQueue;
    double end = -1;  // when its last byte leaves its queue; < 0 while it crosses its links
    std::vector<size_t> links;
  };
  // A queue's state from `t` until the next sample.
  struct QueueSample {
    double t = 0;
    double held = 0;
    double arriving = 0;
  };
  struct Queue {
    double rate = 0;
    double held = 0;      // bytes in it
    double arriving = 0;  // bytes per ns reaching it from the flows crossing their links
    std::vector<QueueSample> history;  // each change of `arriving`, or of `held` at once
  };

  // What `q` held at t (<= now()).
  static double HeldAt(const Queue& q, double t);
  void Sample(Queue& q) const;

  // Runs every flow on to time t (the ends before it included).
  void RunTo(double t);
  // Runs on to the next time a flow has crossed its links; false when none is crossing.
  bool RunToNextEnd();
  // Runs on to `next`, a time some flows have crossed their links by, and finishes them.
  void EndAt(double next);
  double NextEnd() const;
  void Advance(double t);
  void ShareRates();
  // A flow that has crossed its links now: when its last byte leaves its queue.
  void Finish(Flow& f);

  std::vector<double> capacity_;
  std::vector<Queue> queues_;
  std::vector<Flow> flows_;
  std::vector<size_t> running_;  // ids of the flows crossing their links
  double now_ = 0;
  uint64_t clamped_ = 0;
};

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_FLOW_NETWORK_H_
