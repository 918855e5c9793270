// model.cc - the performance model (model.h, docs/perf-model.md): path costs, and a trace
// re-timed event by event with the DxPU path's deltas.
#include "perfmodel/model.h"

#include "perfmodel/collective.h"
#include "perfmodel/flow_network.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dxpu::perfmodel {
namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();
constexpr uint64_t kGpfifoEntryBytes = 16;
constexpr uint64_t kSemaphoreBytes = 16;
// How far back a synchronisation looks for the work it waited for (ops by end time).
constexpr size_t kCoverSearch = 64;

struct Path {
  double one_way_ns;
  double bytes_per_ns;
};

Path PathOf(const ModelParams& p, bool dxpu) {
  if (!dxpu) return {p.pcie_latency_ns, p.pcie_bandwidth_gbps / 8};
  return {p.pcie_latency_ns + p.box_pcie_latency_ns + p.added_latency_ns,
          std::min(p.fabric_bandwidth_gbps, p.pcie_bandwidth_gbps) / 8};
}

// Bytes on the wire for `bytes` of payload in TLPs of at most MPS.
double WireBytes(const ModelParams& p, uint64_t bytes) {
  const uint64_t tlps = (bytes + p.mps - 1) / p.mps;
  return static_cast<double>(bytes) + static_cast<double>(tlps) * p.tlp_overhead_bytes;
}

// Non-posted reads of `bytes`: one round trip, then the data at the lower of the path's rate
// and what the read tags keep in flight per round trip.
double ReadNs(const ModelParams& p, const Path& path, uint64_t bytes) {
  if (bytes == 0) return 0;
  const double rtt = 2 * path.one_way_ns;
  const double payload_share = static_cast<double>(bytes) / WireBytes(p, bytes);
  double rate = path.bytes_per_ns * payload_share;
  if (rtt > 0) {
    rate = std::min(rate, static_cast<double>(p.read_tags) * p.mrrs / rtt);
  }
  return rtt + static_cast<double>(bytes) / rate;
}

// Posted writes of `bytes`: serialised onto the path; their latency shows later.
double WriteNs(const ModelParams& p, const Path& path, uint64_t bytes) {
  return WireBytes(p, bytes) / path.bytes_per_ns;
}

PathCosts CostsOf(const ModelParams& p, bool dxpu) {
  const Path path = PathOf(p, dxpu);
  PathCosts c;
  c.one_way_ns = path.one_way_ns;
  c.fetch_ns = ReadNs(p, path, p.pushbuffer_bytes);
  c.gpfifo_ns = ReadNs(p, path, kGpfifoEntryBytes);
  c.launch_ns = path.one_way_ns + c.gpfifo_ns + c.fetch_ns;
  c.notify_ns = path.one_way_ns + WriteNs(p, path, kSemaphoreBytes);
  return c;
}

// A copy of `native_ns` whose native and DxPU path times are `on_native` and `on_dxpu`: one
// slower than its path explains was held back elsewhere, and takes the DxPU path's time only if
// that is slower still; one at the path's speed (or faster) changes by the paths' difference.
double ThroughDxpu(double native_ns, double on_native, double on_dxpu) {
  return native_ns >= on_native ? std::max(native_ns, on_dxpu) : native_ns + (on_dxpu - on_native);
}

// Which deltas a re-timing applies.
enum Cost : unsigned {
  kSyncCost = 1,
  kLaunchCost = 2,
  kH2dCost = 4,
  kD2hCost = 8,
  kOtherCost = 16,
  kPeerCost = 32,
};

// A peer copy that ran within kExplainedShare of the time its links explain ran at their pace:
// it changes by the difference of the two paths' times. One slower still was held back
// elsewhere, and takes the DxPU path's time only if that is slower (ThroughDxpu).
constexpr double kExplainedShare = 1.05;

double PeerThroughDxpu(double native_ns, double on_native, double on_dxpu) {
  if (native_ns <= on_native * kExplainedShare) return native_ns + (on_dxpu - on_native);
  return std::max(native_ns, on_dxpu);
}

// The links peer copies take, as a FlowNetwork's. Natively each GPU's own PCIe link to the
// root complex: up shared by its copies, and the root complex's queue in front of its link down.
// Through DxPU, inside a box, the same over the box's switch; between boxes, up the source box's
// fabric link (its GPUs' copies sharing it), then the host proxy's queue in front of the target
// box's link down. A copy ends when the completion of its flush read (the runtime reads the last
// DW back) is back: sent once the data has landed, it waits in the source's queue behind the
// data going to the source then. Its fixed time besides: the latencies on that way, and between
// boxes the host proxy sending a DxFP frame on once it has all of it.
class PeerLinks {
 public:
  PeerLinks(const ModelParams& p, size_t gpus, size_t boxes)
      : p_(&p), gpus_(gpus), boxes_(boxes), native_(PathOf(p, false)), fabric_(PathOf(p, true)) {}

  FlowNetwork NativeNetwork() const {
    const std::vector<double> rates(gpus_, native_.bytes_per_ns);
    return {rates, rates};
  }
  FlowNetwork DxpuNetwork() const {
    std::vector<double> rates(gpus_, p_->pcie_bandwidth_gbps / 8);
    rates.resize(gpus_ + boxes_, fabric_.bytes_per_ns);
    return {rates, rates};
  }

  // A copy's way: the link it shares, the queue its data waits in, the queue its flush read's
  // completion waits in.
  struct Way {
    std::array<size_t, 1> link;
    size_t queue;
    size_t back;
  };
  static Way NativeWay(size_t from, size_t to) { return {{from}, to, from}; }
  Way DxpuWay(size_t from, size_t to, int64_t from_box, int64_t to_box) const {
    if (from_box == to_box) return {{from}, to, from};
    const auto box = [&](int64_t b) { return gpus_ + static_cast<size_t>(b); };
    return {{box(from_box)}, box(to_box), box(from_box)};
  }

  // The copy's time from `start`, its flow `flow` on `net` over `way`.
  double NativeNs(FlowNetwork& net, size_t flow, const Way& way, double start) const {
    return CopyNs(net, flow, way, start, native_.one_way_ns, 0);
  }
  double DxpuNs(FlowNetwork& net, size_t flow, const Way& way, double start, uint64_t bytes,
                bool between_boxes) const {
    if (!between_boxes) return CopyNs(net, flow, way, start, p_->box_pcie_latency_ns, 0);
    const double frame_ns =
        std::min(WriteNs(*p_, fabric_, bytes), p_->fabric_frame_bytes / fabric_.bytes_per_ns);
    return CopyNs(net, flow, way, start, fabric_.one_way_ns, frame_ns);
  }

 private:
  // The data's last byte leaves its queue, reaches the target, the flush read's completion comes
  // back to the source's queue (three one-way trips, and a frame's time where the host proxy
  // forwards), waits there behind the data going to the source then, and one more trip.
  static double CopyNs(FlowNetwork& net, size_t flow, const Way& way, double start, double one_way,
                       double frame_ns) {
    const double reply = net.End(flow) + (3 * one_way) + frame_ns;
    return net.Through(way.back, reply) + one_way - start;
  }

  const ModelParams* p_;
  size_t gpus_;
  size_t boxes_;
  Path native_;
  Path fabric_;
};

// A queue's GPFIFO reads: one in flight at a time, and a new one only once at most `prefetch`
// fetched entries are left unfinished. A doorbell that arrives while one is in flight waits for
// it, then is read with every entry rung by then (as the model GPU does: docs/dxgpu.md, "The
// channel").
class GpfifoReads {
 public:
  // When the entry whose doorbell arrives at `arrival` has been read, if a new read may start
  // no earlier than `refill` and takes `read_ns(start)`.
  template <typename ReadNs>
  double Read(double arrival, double refill, const ReadNs& read_ns) {
    if (arrival < start_) return end_;  // rung before the read in flight began: in it
    start_ = std::max({arrival, end_, refill});
    end_ = start_ + read_ns(start_);
    return end_;
  }

 private:
  double start_ = kNever;
  double end_ = kNever;
};

// The host-to-GPU direction of one device's path, a FIFO: what the host sends there (a
// doorbell, the completions of a GPFIFO or pushbuffer read) leaves after the host-to-device
// copy data queued before it.
class DownstreamLink {
 public:
  DownstreamLink(const ModelParams& p, const Path& path) : p_(&p), path_(path) {}

  // A host-to-device copy of `bytes` that the GPU started at `start`: its data queues at the
  // host's end once its reads arrive there.
  void CopyStarted(double start, uint64_t bytes) {
    const double from = start + path_.one_way_ns;
    const double ns = WireBytes(*p_, bytes) / path_.bytes_per_ns;
    if (!busy_.empty() && from <= busy_.back().second) {
      busy_.back().second += ns;
      return;
    }
    busy_.emplace_back(from, from + ns);
  }
  // How long something the host sends at `at` waits behind copy data.
  double Queued(double at) const {
    auto it =
        std::upper_bound(busy_.begin(), busy_.end(), at,
                         [](double t, const std::pair<double, double>& b) { return t < b.first; });
    if (it == busy_.begin()) return 0;
    --it;
    return std::max(0.0, it->second - at);
  }

 private:
  const ModelParams* p_;
  Path path_;
  std::vector<std::pair<double, double>> busy_;  // [from, until), in order, disjoint
};

// When an operation's launch has it ready to run: the host rings at `rung`; the doorbell, the
// GPFIFO read's completion and the pushbuffer's each wait behind the copy data ahead of them.
double Launched(const PathCosts& c, GpfifoReads& reads, const DownstreamLink& down, double rung,
                double refill) {
  const double ow = c.one_way_ns;
  const double doorbell = rung + down.Queued(rung) + ow;
  const double read = reads.Read(
      doorbell, refill, [&](double start) { return c.gpfifo_ns + down.Queued(start + ow); });
  return read + c.fetch_ns + down.Queued(read + ow);
}

bool IsBlocking(CallKind k) { return k == CallKind::kSync || k == CallKind::kSyncCopy; }
bool Enqueues(CallKind k) {
  return k == CallKind::kLaunch || k == CallKind::kCopy || k == CallKind::kMemset ||
         k == CallKind::kSyncCopy;
}

// What re-timing needs of the trace, worked out once (it does not depend on the deltas).
class RetimePlan {
 public:
  RetimePlan(const Trace& t, const ModelParams& p) : t_(t), p_(p) {
    const PathCosts native = CostsOf(p, false);
    LinkOpsToCalls();
    IndexThreads();
    BuildQueues();
    PlaceOverBoxes();
    BuildNativeConstraints(native);
    BuildCovers();
    BuildEventOrder();
  }

  // The workload's end (ns) with the deltas of `mask` applied.
  // With `retimed`, also every call and operation at its new time.
  double Run(unsigned mask, Trace* retimed = nullptr) const;
  const WorkloadCounts& counts() const { return counts_; }

 private:
  struct OpPlan {
    int64_t call = -1;        // the call that enqueued it
    double submit = 0;        // when that call handed it over (native)
    int64_t prev = -1;        // the operation before it in its queue
    int64_t fetch_ref = -1;   // the operation `prefetch` before it in its queue
    int64_t refill_ref = -1;  // the one `prefetch` + 1 before: done before a new GPFIFO read
    size_t device = 0;
    size_t queue = 0;
    // How much later than its native start the model has its launch arrive (a real GPU that
    // launches faster than the model): taken off the launch's arrival both ways.
    double launch_excess = 0;
    double fetch_eff = 0;  // the fetch round trip it saw natively (at most the model's)
    double slack = 0;      // native start past its latest constraint
    // A peer copy with the GPUs placed (ModelParams::gpus_per_box): its GPUs (in placement
    // order) and their boxes (-1: not such a copy), and its time as the model has it on the
    // native links (each GPU's own PCIe link to the root complex, shared with the other copies
    // then) from its native start.
    int64_t from_gpu = -1, to_gpu = -1;
    int64_t from_box = -1, to_box = -1;
    double peer_native_ns = 0;
    // A collective: what its data movement takes longer through DxPU than natively.
    double collective_delta_ns = 0;
    // A chunk of a staged synchronous copy after the first: the chunk before it, and the
    // host's gap after that one natively.
    int64_t chunk_prev = -1;
    double chunk_gap_ns = 0;
  };
  struct Event {
    double time;
    int kind;  // 0 a call begins, 1 an operation begins, 2 a blocking call ends
    size_t index;
  };

  void LinkOpsToCalls();
  void IndexThreads();
  void BuildQueues();
  void BuildNativeConstraints(const PathCosts& native);
  void BuildCovers();
  void BuildEventOrder();
  void PlaceOverBoxes();
  void PlaceCollectives(const std::vector<int64_t>& box_of);
  // Every call and operation at its re-timed time.
  void WriteRetimed(const std::vector<double>& call_shift, const std::vector<double>& call_end,
                    const std::vector<double>& op_start, const std::vector<double>& op_end,
                    Trace* retimed) const;

  const Trace& t_;
  const ModelParams& p_;
  std::vector<OpPlan> ops_;
  size_t queues_ = 0;
  size_t devices_ = 0;
  size_t boxes_ = 1;
  size_t placed_gpus_ = 0;  // GPUs the peer copies' links are for
  std::vector<size_t> call_thread_;
  size_t threads_ = 0;
  std::vector<bool> counts_end_;  // per thread: its calls' ends count in the workload's end
  std::vector<int64_t> cover_;    // per call: the operation a blocking call waited for, or -1
  std::vector<Event> events_;
  WorkloadCounts counts_;
};

void RetimePlan::LinkOpsToCalls() {
  std::unordered_map<int64_t, size_t> by_correlation;
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    const RuntimeCall& call = t_.calls[c];
    if (call.correlation != kNoCorrelation && Enqueues(call.kind))
      by_correlation.emplace(call.correlation, c);
  }
  ops_.resize(t_.ops.size());
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    const GpuOp& op = t_.ops[i];
    const auto it = by_correlation.find(op.correlation);
    if (it == by_correlation.end() || t_.calls[it->second].start_ns > op.start_ns) continue;
    const RuntimeCall& call = t_.calls[it->second];
    ops_[i].call = static_cast<int64_t>(it->second);
    ops_[i].submit = static_cast<double>(std::min(call.start_ns + call.dur_ns, op.start_ns));
  }
  // A synchronous copy staged in chunks (a pageable cudaMemcpy: several copies under one call):
  // the host makes each chunk's next step once the last chunk's data is in (the host's gap
  // between them is that wait and its own copying), so a chunk starts no earlier than the one
  // before it ends, then that gap. Natively this is what the trace shows; through DxPU each
  // chunk's added time carries over to the next (issue 35: mlp-train's read-backs at the
  // demo's scale took 0.95 ms more through DxPU, and the model had 0.03 ms).
  std::unordered_map<int64_t, size_t> last_chunk;  // call -> its operation last seen
  for (size_t i = 0; i < t_.ops.size(); ++i) {     // in start order
    const int64_t call = ops_[i].call;
    if (call < 0 || t_.calls[call].kind != CallKind::kSyncCopy) continue;
    const auto [it, first] = last_chunk.try_emplace(call, i);
    if (first) continue;
    const GpuOp& before = t_.ops[it->second];
    ops_[i].chunk_prev = static_cast<int64_t>(it->second);
    ops_[i].chunk_gap_ns = static_cast<double>(
        std::max<int64_t>(0, t_.ops[i].start_ns - (before.start_ns + before.dur_ns)));
    it->second = i;
  }
}

void RetimePlan::IndexThreads() {
  std::unordered_map<int64_t, size_t> index;
  call_thread_.resize(t_.calls.size());
  for (size_t c = 0; c < t_.calls.size(); ++c)
    call_thread_[c] = index.emplace(t_.calls[c].thread, index.size()).first->second;
  threads_ = index.size();
  // The threads the workload waits for: those that give the GPU work or wait for it. A thread
  // of other calls only (a watchdog polling cudaEventQuery, as NCCL's does, on after the last
  // real synchronisation) does not decide when the workload ends (issue 35): its calls keep
  // their native times, so counting them would pin the end and hide every delay.
  counts_end_.assign(threads_, false);
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    if (t_.calls[c].kind != CallKind::kOther) counts_end_[call_thread_[c]] = true;
  }
  if (std::ranges::none_of(counts_end_, [](bool b) { return b; }))
    counts_end_.assign(threads_, true);
}

void RetimePlan::BuildQueues() {
  std::vector<size_t> order(t_.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t_.ops[a].start_ns < t_.ops[b].start_ns; });
  std::unordered_map<uint64_t, std::vector<size_t>> queues;
  std::unordered_map<uint64_t, size_t> index_of;
  std::unordered_map<int32_t, size_t> device_of;
  for (const size_t i : order) {
    const GpuOp& op = t_.ops[i];
    ops_[i].device = device_of.try_emplace(op.device, device_of.size()).first->second;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(op.device)) << 32) ^
                         (p_.serial_streams ? 0 : static_cast<uint64_t>(op.stream));
    std::vector<size_t>& q = queues[key];
    ops_[i].queue = index_of.try_emplace(key, index_of.size()).first->second;
    if (!q.empty()) ops_[i].prev = static_cast<int64_t>(q.back());
    if (p_.prefetch > 0 && q.size() >= p_.prefetch)
      ops_[i].fetch_ref = static_cast<int64_t>(q[q.size() - p_.prefetch]);
    if (q.size() >= size_t{p_.prefetch} + 1)
      ops_[i].refill_ref = static_cast<int64_t>(q[q.size() - p_.prefetch - 1]);
    q.push_back(i);
  }
  queues_ = index_of.size();
  devices_ = device_of.size();
}

// The GPUs over the placement's boxes: which peer copies cross between boxes, and how long each
// took on the native links as the model has them (the same mechanism as through DxPU, so that a
// copy the trace shows slower or faster than that keeps the difference); what each collective
// adds through DxPU.
void RetimePlan::PlaceOverBoxes() {
  const std::vector<int32_t> gpus = GpusInPlacementOrder(t_);
  // A collective's group may hold more GPUs than the trace shows (one rank's trace of a job):
  // the placement places them all, the trace's first.
  size_t placed = gpus.size();
  for (const Collective& c : t_.collectives) placed = std::max<size_t>(placed, c.ranks);
  std::vector<int64_t> box_of(placed);
  size_t gpu = 0;
  int64_t box = 0;
  for (const size_t n : p_.gpus_per_box) {
    for (size_t k = 0; k < n && gpu < placed; ++k) box_of[gpu++] = box;
    ++box;
  }
  // Past the placement (CheckPlacement refuses that): a box each. No placement: all in one.
  if (!p_.gpus_per_box.empty()) {
    while (gpu < placed) box_of[gpu++] = box++;
  }
  boxes_ = static_cast<size_t>(std::max<int64_t>(box, 1));
  std::unordered_map<int32_t, size_t> index;
  for (size_t g = 0; g < gpus.size(); ++g) index.emplace(gpus[g], g);
  // Peer copies with a placement given: each copy a flow over its GPUs' native links, the
  // copies in flight at once sharing them (PeerLinks).
  if (p_.gpus_per_box.empty() || gpus.size() < 2) return PlaceCollectives(box_of);
  placed_gpus_ = gpus.size();
  const PeerLinks links(p_, placed_gpus_, boxes_);
  FlowNetwork net = links.NativeNetwork();
  std::vector<std::pair<size_t, size_t>> flows;  // (op, flow)
  for (size_t i = 0; i < t_.ops.size(); ++i) {   // in start order
    const GpuOp& op = t_.ops[i];
    if (op.kind != GpuOpKind::kMemcpyPeer) continue;
    OpPlan& plan = ops_[i];
    const size_t from = index.at(op.device);
    const size_t to = PeerDestination(op, gpus);
    plan.from_gpu = static_cast<int64_t>(from);
    plan.to_gpu = static_cast<int64_t>(to);
    plan.from_box = box_of[from];
    plan.to_box = box_of[to];
    const PeerLinks::Way way = PeerLinks::NativeWay(from, to);
    flows.emplace_back(
        i, net.Add(static_cast<double>(op.start_ns), WireBytes(p_, op.bytes), way.link, way.queue));
    if (plan.from_box != plan.to_box) {
      counts_.peer_copies_between_boxes++;
      counts_.peer_bytes_between_boxes += op.bytes;
    }
  }
  for (const auto& [i, flow] : flows) {
    const OpPlan& plan = ops_[i];
    ops_[i].peer_native_ns = links.NativeNs(
        net, flow,
        PeerLinks::NativeWay(static_cast<size_t>(plan.from_gpu), static_cast<size_t>(plan.to_gpu)),
        static_cast<double>(t_.ops[i].start_ns));
  }
  PlaceCollectives(box_of);
}

void RetimePlan::PlaceCollectives(const std::vector<int64_t>& box_of) {
  // Collectives: the group's ranks are the placement's first GPUs, in its order. All in one box
  // (no placement), they cost what they did. Each kind of collective is worked out once (a
  // trace repeats a few of them many times).
  std::map<std::tuple<CollectiveKind, CollectiveAlgorithm, uint64_t, uint32_t>, double> delta_of;
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    const GpuOp& op = t_.ops[i];
    if (op.collective >= t_.collectives.size()) continue;
    const Collective& c = t_.collectives[op.collective];
    counts_.collectives++;
    if (p_.gpus_per_box.size() < 2) continue;
    const auto key = std::tuple(c.kind, c.algorithm, c.bytes, c.ranks);
    auto it = delta_of.find(key);
    if (it == delta_of.end()) {
      const std::vector<int64_t> group(box_of.begin(), box_of.begin() + c.ranks);
      it = delta_of
               .emplace(key, std::max(0.0, CollectiveNs(c, p_, group, true) -
                                               CollectiveNs(c, p_, group, false)))
               .first;
    }
    ops_[i].collective_delta_ns = it->second;
  }
}

void RetimePlan::BuildNativeConstraints(const PathCosts& native) {
  std::vector<GpfifoReads> gpfifo(queues_);
  std::vector<DownstreamLink> downstream(devices_, DownstreamLink(p_, PathOf(p_, false)));
  // In start order, as Run meets them.
  std::vector<size_t> order(t_.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t_.ops[a].start_ns < t_.ops[b].start_ns; });
  for (const size_t i : order) {
    const GpuOp& op = t_.ops[i];
    OpPlan& plan = ops_[i];
    const auto start = static_cast<double>(op.start_ns);
    const double after_prev =
        plan.prev < 0 ? kNever
                      : static_cast<double>(t_.ops[plan.prev].start_ns + t_.ops[plan.prev].dur_ns);
    double launched = kNever;
    if (plan.call >= 0) {
      const double refill = plan.refill_ref < 0
                                ? kNever
                                : static_cast<double>(t_.ops[plan.refill_ref].start_ns +
                                                      t_.ops[plan.refill_ref].dur_ns);
      const double model =
          Launched(native, gpfifo[plan.queue], downstream[plan.device], plan.submit, refill);
      plan.launch_excess = std::max(0.0, model - start);
      launched = model - plan.launch_excess;
    }
    double fetched = kNever;
    if (plan.fetch_ref >= 0) {
      const auto ref_start = static_cast<double>(t_.ops[plan.fetch_ref].start_ns);
      plan.fetch_eff = std::clamp(start - ref_start, 0.0, native.fetch_ns);
      fetched = ref_start + plan.fetch_eff;
    }
    if (op.kind == GpuOpKind::kMemcpyHtoD) downstream[plan.device].CopyStarted(start, op.bytes);
    const double chunked = plan.chunk_prev < 0
                               ? kNever
                               : static_cast<double>(t_.ops[plan.chunk_prev].start_ns +
                                                     t_.ops[plan.chunk_prev].dur_ns) +
                                     plan.chunk_gap_ns;
    const double ready = std::max({after_prev, launched, fetched, chunked});
    plan.slack = ready == kNever ? 0 : std::max(0.0, start - ready);
    if (plan.call >= 0) counts_.launches++;
    if (plan.call >= 0 && launched > after_prev && launched >= fetched) counts_.dry_launches++;
    switch (op.kind) {
      case GpuOpKind::kKernel:
        counts_.kernels++;
        break;
      case GpuOpKind::kMemcpyHtoD:
        counts_.h2d_copies++;
        counts_.h2d_bytes += op.bytes;
        break;
      case GpuOpKind::kMemcpyDtoH:
        counts_.d2h_copies++;
        counts_.d2h_bytes += op.bytes;
        break;
      default:
        counts_.other_ops++;
        break;
    }
  }
}

// The GPU work a blocking call waited for: a synchronous copy its own copy; a synchronisation
// the operation that ended last before it returned, of those enqueued before it began.
void RetimePlan::BuildCovers() {
  cover_.assign(t_.calls.size(), -1);
  // Operations by end time: a synchronisation looks back from its own end.
  std::vector<size_t> by_end(t_.ops.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  const auto EndOf = [&](size_t i) { return t_.ops[i].start_ns + t_.ops[i].dur_ns; };
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t a, size_t b) { return EndOf(a) < EndOf(b); });
  std::map<std::pair<int32_t, int64_t>, std::vector<size_t>> by_end_of_stream;
  for (const size_t i : by_end) by_end_of_stream[{t_.ops[i].device, t_.ops[i].stream}].push_back(i);
  std::unordered_map<int64_t, int64_t> copy_of_call;
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    if (ops_[i].call >= 0 && t_.calls[ops_[i].call].kind == CallKind::kSyncCopy)
      copy_of_call[ops_[i].call] = static_cast<int64_t>(i);
  }
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    const RuntimeCall& call = t_.calls[c];
    if (!IsBlocking(call.kind)) continue;
    counts_.syncs++;
    const int64_t end = call.start_ns + call.dur_ns;
    const auto own = copy_of_call.find(static_cast<int64_t>(c));
    if (own != copy_of_call.end()) {
      const GpuOp& op = t_.ops[own->second];
      if (op.start_ns + op.dur_ns <= end) cover_[c] = own->second;
      continue;
    }
    // A stream synchronisation looks at its stream's operations only.
    const std::vector<size_t>* candidates = &by_end;
    if (call.sync_stream != kAnyStream) {
      const auto stream = by_end_of_stream.find({call.sync_device, call.sync_stream});
      if (stream == by_end_of_stream.end()) continue;
      candidates = &stream->second;
    }
    auto it = std::upper_bound(candidates->begin(), candidates->end(), end,
                               [&](int64_t e, size_t i) { return e < EndOf(i); });
    for (size_t looked = 0; it != candidates->begin() && looked < kCoverSearch; ++looked) {
      --it;
      const OpPlan& plan = ops_[*it];
      const double enqueued =
          plan.call >= 0 ? plan.submit : static_cast<double>(t_.ops[*it].start_ns);
      if (enqueued <= static_cast<double>(call.start_ns)) {
        cover_[c] = static_cast<int64_t>(*it);
        break;
      }
    }
  }
}

// At one instant: operations begin first (a synchronisation ending then may have waited for
// one that takes no time), then blocking calls end, then calls begin (a call made the moment a
// synchronisation returned runs as late as it does).
int Rank(int kind) { return kind == 1 ? 0 : kind == 2 ? 1 : 2; }

void RetimePlan::BuildEventOrder() {
  events_.reserve(t_.calls.size() * 2 + t_.ops.size());
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    const RuntimeCall& call = t_.calls[c];
    events_.push_back({static_cast<double>(call.start_ns), 0, c});
    if (IsBlocking(call.kind))
      events_.push_back({static_cast<double>(call.start_ns + call.dur_ns), 2, c});
  }
  for (size_t i = 0; i < t_.ops.size(); ++i)
    events_.push_back({static_cast<double>(t_.ops[i].start_ns), 1, i});
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    return Rank(a.kind) < Rank(b.kind);
  });
}

double RetimePlan::Run(unsigned mask, Trace* retimed) const {
  const PathCosts native = CostsOf(p_, false);
  const PathCosts dxpu = CostsOf(p_, true);
  const PathCosts& launch = (mask & kLaunchCost) != 0 ? dxpu : native;
  const double d_fetch = (mask & kLaunchCost) != 0 ? dxpu.fetch_ns - native.fetch_ns : 0;
  const double d_notify = (mask & kSyncCost) != 0 ? dxpu.notify_ns - native.notify_ns : 0;

  std::vector<double> shift(threads_, 0.0);  // how late each host thread runs now
  std::vector<double> call_shift(t_.calls.size(), 0.0);
  std::vector<double> call_end(t_.calls.size(), 0.0);
  std::vector<bool> call_seen(t_.calls.size(), false);
  std::vector<double> op_start(t_.ops.size(), 0.0), op_end(t_.ops.size(), 0.0);
  std::vector<GpfifoReads> gpfifo(queues_);
  // The copy data in the way goes at the rate its copies take at this step: a launch waits
  // longer behind a copy because the copy is slower (H2D), not because the launch is (launch).
  Path down = PathOf(p_, (mask & kLaunchCost) != 0);
  down.bytes_per_ns = PathOf(p_, (mask & kH2dCost) != 0).bytes_per_ns;
  std::vector<DownstreamLink> downstream(devices_, DownstreamLink(p_, down));
  // Peer copies with the GPUs placed share their links through DxPU (PeerLinks); a copy's end
  // is worked out when something needs it (by then the copies that start before it ends have
  // started: the trace's order), running the links on to it.
  const bool peer_flows = placed_gpus_ != 0 && (mask & kPeerCost) != 0;
  const PeerLinks links(p_, placed_gpus_, boxes_);
  FlowNetwork peer_net = peer_flows ? links.DxpuNetwork() : FlowNetwork({}, {});
  std::vector<int64_t> peer_flow(peer_flows ? t_.ops.size() : 0, -1);
  std::vector<double> peer_native_dur(peer_flow.size(), 0);
  double last = 0;
  const auto end_of = [&](int64_t i) -> double {
    if (!peer_flows || peer_flow[i] < 0) return op_end[i];
    const OpPlan& plan = ops_[i];
    const double on_dxpu =
        links.DxpuNs(peer_net, static_cast<size_t>(peer_flow[i]),
                     links.DxpuWay(static_cast<size_t>(plan.from_gpu),
                                   static_cast<size_t>(plan.to_gpu), plan.from_box, plan.to_box),
                     op_start[i], t_.ops[i].bytes, plan.from_box != plan.to_box);
    op_end[i] = op_start[i] +
                std::max(0.0, PeerThroughDxpu(peer_native_dur[i], plan.peer_native_ns, on_dxpu));
    peer_flow[i] = -1;
    last = std::max(last, op_end[i]);
    return op_end[i];
  };
  for (const Event& e : events_) {
    if (e.kind == 0) {
      const RuntimeCall& call = t_.calls[e.index];
      call_seen[e.index] = true;
      call_shift[e.index] = shift[call_thread_[e.index]];
      call_end[e.index] = static_cast<double>(call.start_ns + call.dur_ns) + call_shift[e.index];
    } else if (e.kind == 1) {
      const GpuOp& op = t_.ops[e.index];
      const OpPlan& plan = ops_[e.index];
      double ready = kNever;
      if (plan.prev >= 0) ready = end_of(plan.prev);
      if (plan.call >= 0 && call_seen[plan.call]) {
        double refill = kNever;
        if (plan.refill_ref >= 0) refill = end_of(plan.refill_ref);
        ready = std::max(ready, Launched(launch, gpfifo[plan.queue], downstream[plan.device],
                                         plan.submit + call_shift[plan.call], refill) -
                                    plan.launch_excess);
      }
      if (plan.fetch_ref >= 0)
        ready = std::max(ready, op_start[plan.fetch_ref] + plan.fetch_eff + d_fetch);
      if (plan.chunk_prev >= 0)
        ready = std::max(ready, end_of(plan.chunk_prev) + plan.chunk_gap_ns);
      // Never earlier than natively: a launch that waited natively behind copy data can find
      // the path clear through DxPU (the copy's data reaches the host later), but what the
      // trace shows is taken as the least the work takes.
      op_start[e.index] = ready == kNever
                              ? static_cast<double>(op.start_ns)
                              : std::max(ready + plan.slack, static_cast<double>(op.start_ns));
      double dur = static_cast<double>(op.dur_ns);
      if (op.kind == GpuOpKind::kMemcpyHtoD && (mask & kH2dCost) != 0)
        dur = H2dRetimedNs(p_, dur, op.bytes);
      if (op.kind == GpuOpKind::kMemcpyDtoH && (mask & kD2hCost) != 0)
        dur = D2hRetimedNs(p_, dur, op.bytes);
      if ((mask & kPeerCost) != 0) dur += plan.collective_delta_ns;
      op_end[e.index] = op_start[e.index] + std::max(0.0, dur);
      if (peer_flows && plan.from_gpu >= 0) {
        peer_native_dur[e.index] = dur;
        const PeerLinks::Way way =
            links.DxpuWay(static_cast<size_t>(plan.from_gpu), static_cast<size_t>(plan.to_gpu),
                          plan.from_box, plan.to_box);
        peer_flow[e.index] = static_cast<int64_t>(
            peer_net.Add(op_start[e.index], WireBytes(p_, op.bytes), way.link, way.queue));
      } else {
        last = std::max(last, op_end[e.index]);
      }
      if (op.kind == GpuOpKind::kMemcpyHtoD)
        downstream[plan.device].CopyStarted(op_start[e.index], op.bytes);
    } else {
      const RuntimeCall& call = t_.calls[e.index];
      const auto native_end = static_cast<double>(call.start_ns + call.dur_ns);
      double end = native_end + call_shift[e.index];
      const int64_t cover = cover_[e.index];
      if (cover >= 0) {
        const GpuOp& op = t_.ops[cover];
        const auto op_native_end = static_cast<double>(op.start_ns + op.dur_ns);
        end = std::max(end, end_of(cover) + d_notify + (native_end - op_native_end));
      }
      call_end[e.index] = end;
      double& s = shift[call_thread_[e.index]];
      s = std::max(s, end - native_end);
    }
  }
  for (size_t i = 0; i < peer_flow.size(); ++i) end_of(static_cast<int64_t>(i));
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    if (counts_end_[call_thread_[c]]) last = std::max(last, call_end[c]);
  }
  if (retimed != nullptr) WriteRetimed(call_shift, call_end, op_start, op_end, retimed);
  return last;
}

void RetimePlan::WriteRetimed(const std::vector<double>& call_shift,
                              const std::vector<double>& call_end,
                              const std::vector<double>& op_start,
                              const std::vector<double>& op_end, Trace* retimed) const {
  *retimed = t_;
  const auto Ns = [](double t) { return static_cast<int64_t>(std::llround(t)); };
  for (size_t c = 0; c < t_.calls.size(); ++c) {
    RuntimeCall& call = retimed->calls[c];
    call.start_ns = Ns(static_cast<double>(call.start_ns) + call_shift[c]);
    call.dur_ns = std::max<int64_t>(0, Ns(call_end[c]) - call.start_ns);
  }
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    GpuOp& op = retimed->ops[i];
    op.start_ns = Ns(op_start[i]);
    op.dur_ns = std::max<int64_t>(0, Ns(op_end[i]) - op.start_ns);
  }
}

}  // namespace

PathCosts NativePath(const ModelParams& p) { return CostsOf(p, false); }
PathCosts DxpuPath(const ModelParams& p) { return CostsOf(p, true); }

double H2dCopyNs(const ModelParams& p, bool dxpu, uint64_t bytes) {
  return ReadNs(p, PathOf(p, dxpu), bytes);
}
double D2hCopyNs(const ModelParams& p, bool dxpu, uint64_t bytes) {
  return WriteNs(p, PathOf(p, dxpu), bytes);
}

double H2dRetimedNs(const ModelParams& p, double native_ns, uint64_t bytes) {
  if (bytes == 0) return native_ns;
  // The first read's added round trip is waited for whatever held the copy back.
  const double added_rtt = 2 * (PathOf(p, true).one_way_ns - PathOf(p, false).one_way_ns);
  return std::max(native_ns + added_rtt,
                  ThroughDxpu(native_ns, H2dCopyNs(p, false, bytes), H2dCopyNs(p, true, bytes)));
}

double D2hRetimedNs(const ModelParams& p, double native_ns, uint64_t bytes) {
  if (bytes == 0) return native_ns;
  return ThroughDxpu(native_ns, D2hCopyNs(p, false, bytes), D2hCopyNs(p, true, bytes));
}

std::string CheckParams(const ModelParams& p) {
  const auto finite_at_least = [](double v, double min) { return std::isfinite(v) && v >= min; };
  if (!finite_at_least(p.pcie_latency_ns, 0)) return "pcie latency must be >= 0 ns";
  if (!finite_at_least(p.box_pcie_latency_ns, 0)) return "box PCIe latency must be >= 0 ns";
  if (!finite_at_least(p.added_latency_ns, 0)) return "added latency must be >= 0 ns";
  if (!finite_at_least(p.pcie_bandwidth_gbps, 1e-3) || p.pcie_bandwidth_gbps > 1e6)
    return "pcie bandwidth must be between 0.001 and 1,000,000 Gb/s";
  if (!finite_at_least(p.fabric_bandwidth_gbps, 1e-3) || p.fabric_bandwidth_gbps > 1e6)
    return "fabric bandwidth must be between 0.001 and 1,000,000 Gb/s";
  const auto power_of_two = [](uint32_t v, uint32_t lo, uint32_t hi) {
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
  };
  if (!power_of_two(p.mps, 128, 4096)) return "MPS must be a power of two from 128 to 4096";
  if (!power_of_two(p.mrrs, 128, 4096)) return "MRRS must be a power of two from 128 to 4096";
  if (p.read_tags < 1 || p.read_tags > 1024) return "read tags must be from 1 to 1024";
  if (!finite_at_least(p.tlp_overhead_bytes, 0) || p.tlp_overhead_bytes > 256)
    return "TLP overhead must be from 0 to 256 bytes";
  if (p.prefetch > 64) return "prefetch must be from 0 to 64";
  if (p.pushbuffer_bytes < 16 || p.pushbuffer_bytes > (1U << 20))
    return "pushbuffer size must be from 16 bytes to 1 MiB";
  if (p.fabric_frame_bytes < 256 || p.fabric_frame_bytes > 65535)
    return "the fabric's frame size must be from 256 to 65535 bytes";
  if (std::ranges::any_of(p.gpus_per_box, [](size_t n) { return n == 0 || n > 1024; }))
    return "a placement's boxes must hold from 1 to 1024 GPUs each";
  return "";
}

std::string CheckPlacement(const Trace& trace, const ModelParams& p) {
  if (p.gpus_per_box.empty()) return "";
  const size_t gpus_shown = GpusInPlacementOrder(trace).size();
  size_t gpus = gpus_shown;
  for (const Collective& c : trace.collectives) gpus = std::max<size_t>(gpus, c.ranks);
  size_t placed = 0;
  std::string shown;
  for (const size_t n : p.gpus_per_box) {
    placed += n;
    shown += (shown.empty() ? "" : "+") + std::to_string(n);
  }
  if (placed == gpus) return "";
  return "the placement " + shown + " holds " + std::to_string(placed) + " GPUs; the trace has " +
         std::to_string(gpus) +
         (gpus > gpus_shown
              ? " (its collectives' group; it shows " + std::to_string(gpus_shown) + ")"
              : "");
}

Prediction Predict(const Trace& trace, const ModelParams& params) {
  const RetimePlan plan(trace, params);
  // The deltas switched on one category at a time: each step's growth is that category's.
  constexpr unsigned kAll = kSyncCost | kLaunchCost | kH2dCost | kD2hCost | kOtherCost | kPeerCost;
  const unsigned steps[] = {0,
                            kSyncCost,
                            kSyncCost | kLaunchCost,
                            kSyncCost | kLaunchCost | kH2dCost,
                            kSyncCost | kLaunchCost | kH2dCost | kD2hCost,
                            kSyncCost | kLaunchCost | kH2dCost | kD2hCost | kOtherCost,
                            kAll};
  double t[7];
  t[0] = plan.Run(steps[0]);
  for (size_t i = 1; i < 7; ++i) {
    // No peer copy or collective: the last step changes nothing.
    const bool no_peer =
        plan.counts().peer_copies_between_boxes == 0 && plan.counts().collectives == 0;
    t[i] = i == 6 && no_peer ? t[5] : plan.Run(steps[i]);
  }
  Prediction p;
  p.native_ns = t[0];
  p.dxpu_ns = t[6];
  p.overhead_pct = t[0] > 0 ? (t[6] / t[0] - 1) * 100 : 0;
  p.breakdown = {t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4], t[6] - t[5]};
  p.counts = plan.counts();
  return p;
}

Trace Retime(const Trace& trace, const ModelParams& params) {
  Trace out;
  RetimePlan(trace, params)
      .Run(kSyncCost | kLaunchCost | kH2dCost | kD2hCost | kOtherCost | kPeerCost, &out);
  return out;
}

Prediction Predict(const WorkloadSummary& s, const ModelParams& params) {
  const PathCosts native = CostsOf(params, false);
  const PathCosts dxpu = CostsOf(params, true);
  const auto per_copy = [](uint64_t bytes, uint64_t copies) {
    return copies == 0 ? uint64_t{0} : bytes / copies;
  };
  const uint64_t h2d = per_copy(s.h2d_bytes, s.h2d_copies);
  const uint64_t d2h = per_copy(s.d2h_bytes, s.d2h_copies);
  Prediction p;
  p.native_ns = s.native_ns;
  p.breakdown.sync_ns = static_cast<double>(s.syncs) * (dxpu.notify_ns - native.notify_ns);
  p.breakdown.launch_ns = static_cast<double>(s.dry_launches) * (dxpu.launch_ns - native.launch_ns);
  p.breakdown.h2d_ns = static_cast<double>(s.h2d_copies) *
                       (H2dCopyNs(params, true, h2d) - H2dCopyNs(params, false, h2d));
  p.breakdown.d2h_ns = static_cast<double>(s.d2h_copies) *
                       (D2hCopyNs(params, true, d2h) - D2hCopyNs(params, false, d2h));
  const Breakdown& b = p.breakdown;
  p.dxpu_ns = s.native_ns + b.sync_ns + b.launch_ns + b.h2d_ns + b.d2h_ns + b.other_ns + b.peer_ns;
  p.overhead_pct = s.native_ns > 0 ? (p.dxpu_ns / s.native_ns - 1) * 100 : 0;
  p.counts.syncs = s.syncs;
  p.counts.dry_launches = s.dry_launches;
  p.counts.h2d_copies = s.h2d_copies;
  p.counts.h2d_bytes = s.h2d_bytes;
  p.counts.d2h_copies = s.d2h_copies;
  p.counts.d2h_bytes = s.d2h_bytes;
  return p;
}

}  // namespace dxpu::perfmodel
