// victim_host.h - a tenant's host as the attack suite runs it: the userspace host proxy with its
// fabric key (host::OpenProxyPort) on one GPU borrowed from the bridge, the libdxgpu runtime on
// it, and a workload beside the attack that checks every result it computes: y = 3x for fresh x
// each round (copy in, memset, axpy, copy out). What the host's end of the session counted is
// read from its lib/core state.
#ifndef DXPU_TESTS_ATTACK_VICTIM_HOST_H_
#define DXPU_TESTS_ATTACK_VICTIM_HOST_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/dxfp_session.h"
#include "crypto/sodium_crypto_ops.h"
#include "dxgpu/runtime.h"
#include "host/host_proxy.h"

namespace dxpu::test::attack {

struct WorkloadReport {
  uint64_t rounds = 0;  // rounds completed and checked
  uint64_t wrong = 0;   // elements that were not 3x
  std::string error;    // the first call that failed
};

struct HostSide {
  host::PathState path;
  dxfp_session_counters session{};
};

class VictimHost {
 public:
  // Connects as `node` with `key` to the bridge with public key `bridge_key` at 127.0.0.1:port
  // (the bridge, or a relay in front of it), attaches its GPU and opens the runtime.
  static dxgpu::Expected<std::unique_ptr<VictimHost>> Open(uint64_t node,
                                                           const crypto::KeyPair& key,
                                                           const crypto::Key& bridge_key,
                                                           uint16_t port);
  // Only the port, attached, without a runtime: for a host that programs its GPU itself.
  static dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenPort(uint64_t node,
                                                                const crypto::KeyPair& key,
                                                                const crypto::Key& bridge_key,
                                                                uint16_t port,
                                                                uint16_t* local_port = nullptr);
  ~VictimHost();
  VictimHost(const VictimHost&) = delete;
  VictimHost& operator=(const VictimHost&) = delete;

  dxgpu::Runtime& runtime() { return *runtime_; }
  dxgpu::Port& port() { return runtime_->port(); }
  // The host's UDP port (where the bridge's frames for it go).
  uint16_t local_port() const { return local_port_; }

  void StartWorkload();
  // Waits until `more` rounds past the current one completed (false after timeout_ms).
  bool WaitRounds(uint64_t more, int timeout_ms = 20000) const;
  WorkloadReport StopWorkload();

  // Its session with the bridge as its end sees it.
  HostSide Side();

 private:
  VictimHost() = default;
  void Work();

  std::unique_ptr<dxgpu::Runtime> runtime_;
  uint16_t local_port_ = 0;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::mutex mu_;  // report_
  WorkloadReport report_;
};

}  // namespace dxpu::test::attack

#endif  // DXPU_TESTS_ATTACK_VICTIM_HOST_H_
