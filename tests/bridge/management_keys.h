// management_keys.h - a management key pair for a test (docs/protocol.md 15.8): the signer a
// controller uses, the public key a bridge's configuration trusts, and key files for a
// program (dxpu-manager --management-key, dxpu bridge --key).
#ifndef DXPU_TESTS_BRIDGE_MANAGEMENT_KEYS_H_
#define DXPU_TESTS_BRIDGE_MANAGEMENT_KEYS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bridge-fw/firmware/signing.h"
#include "bridge-fw/management_auth.h"
#include "core/dxpu_mgmt.h"

namespace dxpu::test {

struct TestManagementKey {
  firmware::KeyPair pair;
  std::shared_ptr<bridge::ManagementSigner> signer;  // at the epoch it was made with

  // The key as management.trusted_keys names it.
  std::string PublicHex() const { return firmware::ToHex(pair.public_key); }
  // A signer of the same key at another epoch (a restarted or a stale manager).
  std::shared_ptr<bridge::ManagementSigner> AtEpoch(uint64_t epoch) const {
    return std::make_shared<bridge::ManagementSigner>(pair.secret_key, epoch);
  }
  // Writes BASE.key (0600) and BASE.pub; returns the secret key file's path, "" on failure.
  std::string WriteFiles(const std::string& base) const {
    return firmware::WriteKeyFiles(base, pair).ok() ? base + ".key" : "";
  }
};

inline TestManagementKey MakeTestManagementKey(uint64_t epoch = bridge::WallClockEpoch()) {
  TestManagementKey k;
  k.pair = firmware::GenerateKeyPair();
  k.signer = k.AtEpoch(epoch);
  return k;
}

// A signed ASSIGN datagram, as a controller with `signer` sends it (empty if it cannot be
// encoded).
inline std::vector<uint8_t> SignedAssign(bridge::ManagementSigner& signer, uint16_t device,
                                         uint64_t node) {
  dxpu_mgmt_msg m{};
  m.type = DXPU_MGMT_ASSIGN;
  m.request_id = 7;
  m.body.assign = {device, 0x0100, node};
  signer.Prepare(&m);
  std::vector<uint8_t> out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  if (dxpu_mgmt_encode(&m, out.data(), out.size(), &len) != DXPU_MGMT_ERR_OK) return {};
  out.resize(len);
  signer.Sign(out);
  return out;
}

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_MANAGEMENT_KEYS_H_
