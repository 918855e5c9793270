// trace.cc - the trace's GPUs in placement order, and the names of GPU operation and runtime
// call kinds, as messages and reports print them.
#include "perfmodel/trace.h"

#include <algorithm>

namespace dxpu::perfmodel {

std::vector<int32_t> GpusInPlacementOrder(const Trace& trace) {
  std::vector<int32_t> seen;
  const auto see = [&](int32_t device) {
    if (std::ranges::find(seen, device) == seen.end()) seen.push_back(device);
  };
  for (const GpuOp& op : trace.ops) see(op.device);
  for (const GpuOp& op : trace.ops) {
    if (op.kind == GpuOpKind::kMemcpyPeer && op.peer_device != kNoDevice) see(op.peer_device);
  }
  return seen;
}

size_t PeerDestination(const GpuOp& op, const std::vector<int32_t>& gpus) {
  const auto index = [&](int32_t device) {
    return static_cast<size_t>(std::ranges::find(gpus, device) - gpus.begin());
  };
  if (op.peer_device != kNoDevice) return index(op.peer_device);
  return (index(op.device) + 1) % gpus.size();
}

const char* ToString(GpuOpKind kind) {
  switch (kind) {
    case GpuOpKind::kKernel:
      return "kernel";
    case GpuOpKind::kMemset:
      return "memset";
    case GpuOpKind::kMemcpyHtoD:
      return "memcpy-htod";
    case GpuOpKind::kMemcpyDtoH:
      return "memcpy-dtoh";
    case GpuOpKind::kMemcpyDtoD:
      return "memcpy-dtod";
    case GpuOpKind::kMemcpyPeer:
      return "memcpy-peer";
  }
  return "unknown";
}

const char* ToString(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kSendRecv:
      return "send-recv";
  }
  return "unknown";
}

const char* ToString(CallKind kind) {
  switch (kind) {
    case CallKind::kLaunch:
      return "launch";
    case CallKind::kCopy:
      return "copy";
    case CallKind::kMemset:
      return "memset";
    case CallKind::kSyncCopy:
      return "sync-copy";
    case CallKind::kSync:
      return "sync";
    case CallKind::kOther:
      return "other";
  }
  return "unknown";
}

}  // namespace dxpu::perfmodel
