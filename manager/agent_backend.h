// agent_backend.h - how a host agent (dxpu-agent) hot-adds and hot-removes a GPU its manager
// gives it: through dxpu.ko's sysfs (SysfsBackend) when the module is loaded, or through the
// userspace host proxy (ProxyBackend) otherwise. Both are idempotent: attaching what is
// attached, or detaching what is not, is done.
#ifndef DXPU_MANAGER_AGENT_BACKEND_H_
#define DXPU_MANAGER_AGENT_BACKEND_H_

#include <cstdint>
#include <string>

#include "manager/pool_error.h"

namespace dxpu::manager {

// One GPU to attach or detach, as the manager sends it (docs/manager.md "The agent's API").
struct AttachRequest {
  std::string gpu;  // "box-a/3"
  std::string box;
  std::string fabric;  // where the box's bridge is: "udp:IP:PORT", or a MAC for dxpu.ko
  uint16_t device = 0;
  uint16_t host_bdf = 0;  // where the bridge presents it to this host
  uint64_t node_id = 0;   // this host's node ID, as the manager assigned it
  std::string allocation;
  // The bridge's fabric public key (64 hex digits), as the manager learned it from the bridge:
  // the host authenticates the bridge by it. "": a bridge without identity (plaintext).
  std::string bridge_key;
};

class AttachBackend {
 public:
  virtual ~AttachBackend() = default;
  virtual std::string_view mode() const = 0;  // "kernel" or "userspace"
  // Hot-adds the GPU; on success, a line saying what the host now has ("dxpu0: 4450:0001").
  virtual PoolResult<std::string> Attach(const AttachRequest& request) = 0;
  // Hot-removes it.
  virtual PoolResult<Done> Detach(const AttachRequest& request) = 0;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_AGENT_BACKEND_H_
