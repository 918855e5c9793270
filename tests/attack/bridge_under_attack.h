// bridge_under_attack.h - the real dxpu-bridge daemon as the attack suite starts it (issue 32
// item 7): host authentication on (`identity`: its own fabric key, the listed hosts' public
// keys), signed management (`management.trusted_keys`), metrics on loopback, two model GPUs.
// The test reads what the bridge counted from its metrics endpoint, and its memory from /proc.
#ifndef DXPU_TESTS_ATTACK_BRIDGE_UNDER_ATTACK_H_
#define DXPU_TESTS_ATTACK_BRIDGE_UNDER_ATTACK_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "crypto/sodium_crypto_ops.h"
#include "link/link_address.h"
#include "management_keys.h"

namespace dxpu::test::attack {

// The hosts the bridge lists, each key bound to its node ID.
inline constexpr uint64_t kVictimNode = 0xa1;  // the victim, lent GPU 0
inline constexpr uint64_t kTenantNode = 0xa2;  // a second tenant (the attacker, when it has a GPU)
inline constexpr uint64_t kLateNode = 0xa3;    // a host that connects while the attack goes on
inline constexpr uint16_t kHostBdf = 0x0100;   // where every host sees its GPU
inline constexpr uint64_t kGpuMemory = uint64_t{16} << 20;  // each GPU's memory

struct FabricKeys {
  crypto::KeyPair bridge = crypto::NewKeyPair();
  crypto::KeyPair victim = crypto::NewKeyPair();
  crypto::KeyPair tenant = crypto::NewKeyPair();
  crypto::KeyPair late = crypto::NewKeyPair();
  crypto::KeyPair stranger = crypto::NewKeyPair();  // listed nowhere
};

struct BridgeUnderAttackOptions {
  uint32_t hellos_per_second = 20;
  uint32_t hello_burst = 40;
  std::string link_down = "2s";
  std::vector<std::string> args;  // more command-line arguments ("--flash", PATH, ...)
};

class BridgeUnderAttack {
 public:
  explicit BridgeUnderAttack(BridgeUnderAttackOptions options = {});
  ~BridgeUnderAttack();
  BridgeUnderAttack(const BridgeUnderAttack&) = delete;
  BridgeUnderAttack& operator=(const BridgeUnderAttack&) = delete;

  // Starts the daemon and waits for its management socket: "" or what went wrong.
  std::string Start();

  const FabricKeys& keys() const { return keys_; }
  const TestManagementKey& management_key() const { return management_key_; }
  uint16_t fabric_port() const { return fabric_port_; }
  link::LinkAddress fabric() const;
  const std::string& management_path() const { return management_path_; }
  BridgeProcess& process() { return *process_; }

  // A controller holding the trusted management key.
  bridge::ManagementClient Manager() const;
  // Assigns `device` to `node` at kHostBdf and grants it the host's DMA ranges, as a pool
  // manager lends a GPU: "" or the refusal.
  std::string Lend(uint16_t device, uint64_t node) const;

  std::string Metrics() const;
  // The value of one series of the metrics ("name" or "name{labels}"): -1 when it is absent.
  double Metric(const std::string& series) const;
  // One host session's counter as the bridge's metrics show it ("unsealed", "bad_tag").
  double SessionCounter(uint64_t node, const std::string& counter) const;
  // dxpu_bridge_hellos_unauthenticated_total{reason=...}.
  double HellosRefused(const std::string& reason) const;
  // The daemon's resident memory (VmRSS), KiB; -1 when unknown.
  long RssKiB() const;

 private:
  BridgeUnderAttackOptions options_;
  FabricKeys keys_;
  TestManagementKey management_key_ = MakeTestManagementKey();
  std::filesystem::path dir_;
  std::string setup_error_;  // the key file could not be written
  uint16_t fabric_port_ = 0;
  uint16_t metrics_port_ = 0;
  std::string management_path_;
  std::unique_ptr<BridgeProcess> process_;
};

}  // namespace dxpu::test::attack

#endif  // DXPU_TESTS_ATTACK_BRIDGE_UNDER_ATTACK_H_
