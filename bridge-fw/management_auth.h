// management_auth.h - signed and fenced management requests (docs/protocol.md 15.8): the
// controller's signer (the pool manager, `dxpu bridge` for an operator) and the bridge's
// check. A request that changes the bridge's state carries an authentication record: the
// signer's epoch, a sequence number, its key ID and an Ed25519 signature over the whole
// datagram. The bridge accepts it only under a key its configuration trusts, from the highest
// epoch it has accepted under that key, with a sequence number it has not seen in that epoch:
// a stale manager (a lower epoch) and a captured request sent again are refused. Keys are the
// firmware's key files (bridge-fw/firmware/signing.h, `dxpu flash keygen`).
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_AUTH_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_AUTH_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/firmware/signing.h"
#include "core/dxpu_mgmt.h"

namespace dxpu::bridge {

// An epoch from the wall clock: nanoseconds since 1970. A signer started later has a higher
// one, so a restarted manager fences out the one before it (as long as the clock does not go
// back by more than the time between the two starts).
uint64_t WallClockEpoch();

// The controller's side: signs the requests that change state. Thread-safe (the manager's
// workers share one); the sequence numbers of one signer never repeat.
class ManagementSigner {
 public:
  ManagementSigner(const firmware::SecretKey& key, uint64_t epoch);
  ~ManagementSigner();
  ManagementSigner(const ManagementSigner&) = delete;
  ManagementSigner& operator=(const ManagementSigner&) = delete;

  // The signer of a secret key file; null, with *error set, when the file cannot be used.
  static std::shared_ptr<ManagementSigner> FromKeyFile(const std::string& path, uint64_t epoch,
                                                       std::string* error);

  // For a request whose type changes state: sets DXPU_MGMT_F_SIGNED and fills m->auth with the
  // epoch, the next sequence number and the key ID. Other requests are left as they are.
  void Prepare(dxpu_mgmt_msg* m);
  // Signs an encoded datagram that Prepare()d: its last DXPU_MGMT_SIGNATURE_SIZE bytes receive
  // the signature of the bytes before them. A datagram without the flag is left alone.
  void Sign(std::span<uint8_t> datagram) const;

  uint64_t epoch() const { return epoch_; }
  const firmware::PublicKey& public_key() const { return public_key_; }

 private:
  firmware::SecretKey key_{};
  firmware::PublicKey public_key_{};
  firmware::KeyId key_id_{};
  uint64_t epoch_ = 0;
  std::atomic<uint64_t> next_sequence_{1};
};

// What the bridge makes of a request's authentication.
enum class AuthVerdict : uint8_t {
  kOk,            // signed under a trusted key, fresh; or read-only; or unsigned and allowed
  kUnsigned,      // a state-changing request without a signature
  kUnknownKey,    // signed under a key the bridge does not trust
  kBadSignature,  // the signature does not verify
  kStaleEpoch,    // an epoch below the highest accepted under that key
  kReplayed,      // a sequence number seen (or too old to tell) in the current epoch
};
std::string_view AuthVerdictName(AuthVerdict v);
// The wire status a refusal is answered with.
uint16_t AuthVerdictStatus(AuthVerdict v);

struct AuthCounters {
  uint64_t unsigned_requests = 0;
  uint64_t unknown_key = 0;
  uint64_t bad_signature = 0;
  uint64_t stale_epoch = 0;
  uint64_t replayed = 0;
  uint64_t accepted_signed = 0;
  uint64_t accepted_unsigned = 0;  // insecure_unsigned only
};

// The bridge's side. Its fence (per trusted key: the highest epoch accepted and the sequence
// numbers seen in it) lives as long as the object, i.e. the bridge process. Not thread-safe:
// the daemon's loop thread calls it.
class ManagementAuthenticator {
 public:
  // A sequence number this far below the highest seen in the epoch is refused as replayed
  // (requests from the manager's concurrent workers may arrive out of order within it).
  static constexpr uint64_t kWindow = 64;

  ManagementAuthenticator(const std::vector<firmware::PublicKey>& trusted, bool insecure_unsigned);

  // The verdict on a decoded request `m` from `datagram` (its bytes, which dxpu_mgmt_decode
  // accepted). A read-only request passes unsigned; a signed one of any type is verified.
  // Only an accepted signed request moves the fence.
  AuthVerdict Check(const dxpu_mgmt_msg& m, std::span<const uint8_t> datagram);

  const AuthCounters& counters() const { return counters_; }
  bool has_keys() const { return !keys_.empty(); }
  bool insecure_unsigned() const { return insecure_unsigned_; }

 private:
  struct Fence {
    uint64_t epoch = 0;
    uint64_t top = 0;   // the highest sequence number accepted in the epoch
    uint64_t seen = 0;  // bit i: top - i was accepted
  };
  static AuthVerdict CheckFence(Fence& f, const dxpu_mgmt_auth& a);
  void Count(AuthVerdict v, bool is_signed);

  std::map<firmware::KeyId, firmware::PublicKey> keys_;
  std::map<firmware::KeyId, Fence> fences_;
  bool insecure_unsigned_ = false;
  AuthCounters counters_;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_AUTH_H_
