// pool_audit.h - checks a running pool against what its parts say, from outside: the manager's
// allocations (REST API), each box's owners (its bridge's management STATUS) and each host's
// devices (its agent's API). Returns the invariants of docs/manager.md that do not hold, as
// sentences; none when the pool is consistent. Used by the demo's pool scene and the tests;
// meaningful when nothing is in progress (the manager settled).
#ifndef DXPU_MANAGER_POOL_AUDIT_H_
#define DXPU_MANAGER_POOL_AUDIT_H_

#include <string>
#include <vector>

#include "manager/pool_error.h"
#include "manager/tls.h"

namespace dxpu::manager {

struct PoolAudit {
  size_t gpus = 0, leased = 0, free = 0;  // on the bridges that answered
  std::vector<std::string> problems;
  // The bridges and agents that did not answer, one sentence each ("box box-a (management
  // 127.0.0.1:17481): STATUS: no answer ..."): what they hold was not checked.
  std::vector<std::string> unreachable;
  bool consistent() const { return problems.empty() && unreachable.empty(); }
};

// The audit of every part that answers, or why it could not be made at all (the manager did
// not answer). Over https://, `tls` is the client certificate (an operator's or a reader's)
// shown to the manager and to the agents.
PoolResult<PoolAudit> AuditPool(const std::string& manager_url, const TlsFiles& tls = {});

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_AUDIT_H_
