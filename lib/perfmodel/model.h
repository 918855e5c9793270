// model.h - the performance model: what a workload's time becomes when its GPUs are reached
// through DxPU instead of a local PCIe link (docs/perf-model.md).
//
// The mechanisms (those of the model GPU and of a real one alike), with L the one-way latency
// and B the bandwidth of the path between host and GPU:
//   launch   (the GPU queue dry) doorbell + GPFIFO read + pushbuffer read: L + 2 reads; one
//            GPFIFO read in flight at a time, so a doorbell that arrives during one waits for
//            it (several launches at once: the first is read alone, the rest a read later)
//   sync     the completion semaphore is a posted write: L, then the host sees it
//   H2D      the copy engine's non-posted reads: RTT + bytes / min(B, tags x MRRS / RTT)
//   D2H      posted writes: bytes / B (their latency shows in the sync after them)
//   fetch    with work queued the GPU fetches `prefetch` pushbuffers ahead: an entry's
//            pushbuffer is asked for when the entry `prefetch` before it starts
// Natively L = pcie latency, B = pcie bandwidth; through DxPU L = pcie latency + the box's
// PCIe link (bridge to GPU) + the added one-way latency, B = min(fabric, pcie).
//
// A trace is re-timed event by event (Retime): every host call keeps its own duration and the
// gaps between calls (the host's work); a GPU operation starts at the latest of its queue's
// previous operation's end, its launch's arrival and its pushbuffer's fetch, plus whatever
// slack it had natively; a copy's duration changes by the copy's delta; a synchronisation ends
// when the last GPU work it waited for is seen by the host. Natively (every delta zero) this
// reproduces the trace exactly; so zero added latency is zero overhead by construction.
#ifndef DXPU_LIB_PERFMODEL_MODEL_H_
#define DXPU_LIB_PERFMODEL_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "perfmodel/trace.h"

namespace dxpu::perfmodel {

struct ModelParams {
  // The native path: a local PCIe link (the simulator's defaults, sim-world/sim_port.h).
  double pcie_latency_ns = 250;      // one way
  double pcie_bandwidth_gbps = 200;  // what Gen4 x16 carries of TLPs (25 GB/s)
  // What DxPU adds: the GPU box's own PCIe link between its bridge and the GPU (as the
  // simulator has it), and the fabric.
  double box_pcie_latency_ns = 250;  // one way
  double added_latency_ns = 1000;    // one way: proxies, switches, cables
  double fabric_bandwidth_gbps = 100;
  // DxFP frames on the fabric (jumbo frames): the host forwards a peer copy's frame from one box
  // to another once it has all of it.
  uint32_t fabric_frame_bytes = 9000;
  // The device's PCIe settings (the same both ways).
  uint32_t mps = 256;              // Max Payload Size: posted writes and read completions
  uint32_t mrrs = 4096;            // Max Read Request Size
  uint32_t read_tags = 256;        // outstanding non-posted reads
  double tlp_overhead_bytes = 24;  // per TLP on the wire: header, sequence number, LCRC, framing
  // The GPU's host interface.
  uint32_t prefetch = 4;            // pushbuffers fetched ahead of the running entry
  uint32_t pushbuffer_bytes = 128;  // one submission's commands
  // true: one in-order queue per device, streams serialised (the model GPU: one channel);
  // false: one queue per stream (a real GPU's concurrent streams).
  bool serial_streams = false;
  // Where the GPUs sit through DxPU: so many in the first box, so many in the next, ... in the
  // trace's placement order (GpusInPlacementOrder). Empty: all in one box. A peer copy between
  // two boxes crosses the fabric twice, through the host (box to host, host to box), and shares
  // each box's fabric link with the other copies crossing it then.
  std::vector<size_t> gpus_per_box;
};

// Where the added time goes. Attributed by switching the deltas on one category at a time in
// this order (sync, launch, H2D, D2H, other); each is the total's growth at its step, so they
// add up to the total exactly.
struct Breakdown {
  double sync_ns = 0;    // completions seen later: synchronisations, synchronous copies
  double launch_ns = 0;  // launches that found the GPU queue dry; pushbuffer fetches not ahead
  double h2d_ns = 0;     // host-to-device copies (non-posted reads)
  double d2h_ns = 0;     // device-to-host copies (posted writes)
  double other_ns = 0;   // memsets, device copies, peer copies inside a box: none
  double peer_ns = 0;    // peer copies and collectives between boxes (the fabric, the host)
};

// What the trace holds, as the model classifies it natively.
struct WorkloadCounts {
  uint64_t launches = 0;      // GPU operations with a host call that enqueued them
  uint64_t dry_launches = 0;  // ... that started because their launch arrived (queue dry)
  uint64_t syncs = 0;         // synchronisations and synchronous copies
  uint64_t kernels = 0;
  uint64_t h2d_copies = 0, h2d_bytes = 0;
  uint64_t d2h_copies = 0, d2h_bytes = 0;
  uint64_t other_ops = 0;  // memsets, device and peer copies
  uint64_t peer_copies_between_boxes = 0, peer_bytes_between_boxes = 0;
  uint64_t collectives = 0;  // NCCL/RCCL kernels the trace describes (Trace::collectives)
};

struct Prediction {
  double native_ns = 0;
  double dxpu_ns = 0;
  double overhead_pct = 0;  // (dxpu / native - 1) x 100
  Breakdown breakdown;
  WorkloadCounts counts;
};

// A workload given as summary counts instead of a trace: every cost is taken to lie on the
// critical path (an upper bound where the workload overlaps them).
struct WorkloadSummary {
  double native_ns = 0;
  uint64_t syncs = 0;
  uint64_t dry_launches = 0;
  uint64_t h2d_copies = 0, h2d_bytes = 0;  // bytes in all, split evenly over the copies
  uint64_t d2h_copies = 0, d2h_bytes = 0;
};

// The per-event costs on one path.
struct PathCosts {
  double one_way_ns = 0;
  double launch_ns = 0;  // doorbell to the pushbuffer's arrival, the queue dry
  double notify_ns = 0;  // a semaphore written to the host's memory
  double fetch_ns = 0;   // a pushbuffer read's round trip
  double gpfifo_ns = 0;  // a GPFIFO entry read's round trip
};
PathCosts NativePath(const ModelParams& p);
PathCosts DxpuPath(const ModelParams& p);
// A host-to-device / device-to-host copy of `bytes` on the native or the DxPU path.
double H2dCopyNs(const ModelParams& p, bool dxpu, uint64_t bytes);
double D2hCopyNs(const ModelParams& p, bool dxpu, uint64_t bytes);
// A copy the trace shows taking `native_ns`, through DxPU. Its added round trip always counts
// (an H2D copy's reads wait for it); the DxPU path's rate only where it is slower than the rate
// the copy ran at natively: a copy that ran slower than the fabric carries (pageable memory,
// small copies: 4-12 GB/s in real traces) was held back by something DxPU leaves as it was.
// max(native + round trip added, the DxPU path's copy time). A copy at the native path's own
// speed gets exactly the path's difference, as before (issue 35).
double H2dRetimedNs(const ModelParams& p, double native_ns, uint64_t bytes);
double D2hRetimedNs(const ModelParams& p, double native_ns, uint64_t bytes);

// Checks the parameters: "" if usable, else what is wrong.
std::string CheckParams(const ModelParams& p);
// Checks the placement against the trace's GPUs: "" if it places each of them, else what is
// wrong ("the placement 2+1 holds 3 GPUs; the trace has 4").
std::string CheckPlacement(const Trace& trace, const ModelParams& p);

Prediction Predict(const Trace& trace, const ModelParams& params);
// The trace as the model has it through DxPU: every call and operation at its new time (whole
// ns), each at its index in `trace`. Its latest end is Predict's dxpu_ns.
Trace Retime(const Trace& trace, const ModelParams& params);
Prediction Predict(const WorkloadSummary& summary, const ModelParams& params);

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_MODEL_H_
