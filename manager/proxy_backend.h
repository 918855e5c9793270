// proxy_backend.h - attach through the userspace host proxy: the agent holds, per bridge, one
// dxpu port (lib/host's OpenProxyPort: a DxFP session, every device attached over the wire and
// checked). Attaching or detaching a GPU opens that bridge's port again with the new set of
// devices (the bridge keeps ownership by node ID, not by session, so the other GPUs stay
// the host's). A GPU whose session went down (its bridge restarted) is attached again by the
// next attach.
#ifndef DXPU_MANAGER_PROXY_BACKEND_H_
#define DXPU_MANAGER_PROXY_BACKEND_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "crypto/sodium_crypto_ops.h"
#include "dxgpu/port.h"
#include "manager/agent_backend.h"

namespace dxpu::manager {

struct ProxyBackendOptions {
  uint64_t link_down_ns = 1'000'000'000;  // a bridge silent this long: its GPUs are lost
  uint64_t connect_timeout_ns = 3'000'000'000;
  // This host's fabric key pair (dxpu-agent --fabric-key): sessions to a bridge whose key the
  // manager sends are authenticated with it. nullopt: plaintext sessions only.
  std::optional<crypto::KeyPair> key;
};

class ProxyBackend final : public AttachBackend {
 public:
  explicit ProxyBackend(ProxyBackendOptions options = {}) : options_(options) {}
  std::string_view mode() const override { return "userspace"; }
  PoolResult<std::string> Attach(const AttachRequest& request) override;
  PoolResult<Done> Detach(const AttachRequest& request) override;

 private:
  struct BridgePort {
    uint64_t node_id = 0;
    std::string bridge_key;   // as the manager last sent it ("": plaintext)
    std::set<uint16_t> bdfs;  // what the port was opened with, in order
    std::unique_ptr<dxgpu::Port> port;
  };
  // Opens the bridge's port with `bdfs` (closing the one it had); none: closed.
  PoolResult<Done> Reopen(const std::string& fabric, const std::string& bridge_key, BridgePort& bp,
                          uint64_t node_id, std::set<uint16_t> bdfs) const;
  // The device's line, if the port has it attached and alive.
  static std::optional<std::string> Alive(const BridgePort& bp, uint16_t bdf);

  ProxyBackendOptions options_;
  std::map<std::string, BridgePort> bridges_;  // by fabric address
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_PROXY_BACKEND_H_
