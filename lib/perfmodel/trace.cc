// trace.cc - the names of GPU operation and runtime call kinds, as messages and reports print
// them.
#include "perfmodel/trace.h"

namespace dxpu::perfmodel {

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
