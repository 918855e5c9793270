// management_auth.cc - signed and fenced management requests (management_auth.h).
#include "bridge-fw/management_auth.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace dxpu::bridge {

uint64_t WallClockEpoch() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

ManagementSigner::ManagementSigner(const firmware::SecretKey& key, uint64_t epoch)
    : key_(key),
      public_key_(firmware::PublicKeyOf(key)),
      key_id_(firmware::KeyIdOf(public_key_)),
      epoch_(epoch) {}

ManagementSigner::~ManagementSigner() { sodium_memzero(key_.data(), key_.size()); }

std::shared_ptr<ManagementSigner> ManagementSigner::FromKeyFile(const std::string& path,
                                                                uint64_t epoch,
                                                                std::string* error) {
  firmware::FirmwareResult<firmware::SecretKey> key = firmware::ReadSecretKeyFile(path);
  if (!key.ok()) {
    *error = key.error().message;
    return nullptr;
  }
  auto signer = std::make_shared<ManagementSigner>(key.value(), epoch);
  sodium_memzero(key.value().data(), key.value().size());
  return signer;
}

void ManagementSigner::Prepare(dxpu_mgmt_msg* m) {
  if (!dxpu_mgmt_changes_state(m->type)) return;
  m->flags |= DXPU_MGMT_F_SIGNED;
  m->auth.epoch = epoch_;
  m->auth.sequence = next_sequence_.fetch_add(1);
  std::copy(key_id_.begin(), key_id_.end(), m->auth.key_id);
  m->auth.signature = nullptr;
}

void ManagementSigner::Sign(std::span<uint8_t> datagram) const {
  if (datagram.size() < DXPU_MGMT_HDR_SIZE + DXPU_MGMT_AUTH_SIZE ||
      (dxpu_get_be16(&datagram[DXPU_MGMT_OFF_FLAGS]) & DXPU_MGMT_F_SIGNED) == 0)
    return;
  const size_t signed_len = datagram.size() - DXPU_MGMT_SIGNATURE_SIZE;
  const firmware::Signature s = firmware::Sign(datagram.first(signed_len), key_);
  std::copy(s.begin(), s.end(), datagram.begin() + static_cast<std::ptrdiff_t>(signed_len));
}

std::string_view AuthVerdictName(AuthVerdict v) {
  switch (v) {
    case AuthVerdict::kOk:
      return "ok";
    case AuthVerdict::kUnsigned:
      return "unsigned";
    case AuthVerdict::kUnknownKey:
      return "unknown-key";
    case AuthVerdict::kBadSignature:
      return "bad-signature";
    case AuthVerdict::kStaleEpoch:
      return "stale-epoch";
    case AuthVerdict::kReplayed:
      return "replayed";
  }
  return "unknown";
}

uint16_t AuthVerdictStatus(AuthVerdict v) {
  switch (v) {
    case AuthVerdict::kOk:
      return DXPU_MGMT_OK;
    case AuthVerdict::kStaleEpoch:
      return DXPU_MGMT_STALE_EPOCH;
    case AuthVerdict::kReplayed:
      return DXPU_MGMT_REPLAYED;
    default:
      return DXPU_MGMT_UNAUTHENTICATED;
  }
}

ManagementAuthenticator::ManagementAuthenticator(const std::vector<firmware::PublicKey>& trusted,
                                                 bool insecure_unsigned)
    : insecure_unsigned_(insecure_unsigned) {
  for (const firmware::PublicKey& k : trusted) keys_[firmware::KeyIdOf(k)] = k;
}

AuthVerdict ManagementAuthenticator::CheckFence(Fence& f, const dxpu_mgmt_auth& a) {
  if (a.epoch < f.epoch) return AuthVerdict::kStaleEpoch;
  if (a.sequence == 0) return AuthVerdict::kReplayed;  // signers count from 1
  if (a.epoch > f.epoch) {
    f = Fence{a.epoch, a.sequence, 1};
    return AuthVerdict::kOk;
  }
  if (a.sequence > f.top) {
    const uint64_t shift = a.sequence - f.top;
    f.seen = shift >= kWindow ? 1 : (f.seen << shift) | 1;
    f.top = a.sequence;
    return AuthVerdict::kOk;
  }
  const uint64_t back = f.top - a.sequence;
  if (back >= kWindow || (f.seen >> back & 1) != 0) return AuthVerdict::kReplayed;
  f.seen |= uint64_t{1} << back;
  return AuthVerdict::kOk;
}

void ManagementAuthenticator::Count(AuthVerdict v, bool is_signed) {
  switch (v) {
    case AuthVerdict::kOk:
      (is_signed ? counters_.accepted_signed : counters_.accepted_unsigned)++;
      break;
    case AuthVerdict::kUnsigned:
      counters_.unsigned_requests++;
      break;
    case AuthVerdict::kUnknownKey:
      counters_.unknown_key++;
      break;
    case AuthVerdict::kBadSignature:
      counters_.bad_signature++;
      break;
    case AuthVerdict::kStaleEpoch:
      counters_.stale_epoch++;
      break;
    case AuthVerdict::kReplayed:
      counters_.replayed++;
      break;
  }
}

AuthVerdict ManagementAuthenticator::Check(const dxpu_mgmt_msg& m,
                                           std::span<const uint8_t> datagram) {
  const bool is_signed = dxpu_mgmt_is_signed(&m);
  if (!is_signed) {
    if (!dxpu_mgmt_changes_state(m.type)) return AuthVerdict::kOk;
    const AuthVerdict v = insecure_unsigned_ ? AuthVerdict::kOk : AuthVerdict::kUnsigned;
    Count(v, false);
    return v;
  }
  AuthVerdict v = AuthVerdict::kOk;
  firmware::KeyId id{};
  std::copy(m.auth.key_id, m.auth.key_id + id.size(), id.begin());
  const auto key = keys_.find(id);
  if (key == keys_.end()) {
    v = AuthVerdict::kUnknownKey;
  } else if (datagram.size() < DXPU_MGMT_HDR_SIZE + DXPU_MGMT_AUTH_SIZE) {
    v = AuthVerdict::kBadSignature;
  } else {
    const size_t signed_len = datagram.size() - DXPU_MGMT_SIGNATURE_SIZE;
    firmware::Signature s{};
    std::copy(datagram.begin() + static_cast<std::ptrdiff_t>(signed_len), datagram.end(),
              s.begin());
    if (!firmware::VerifySignature(datagram.first(signed_len), s, key->second))
      v = AuthVerdict::kBadSignature;
    else
      v = CheckFence(fences_[id], m.auth);
  }
  Count(v, true);
  return v;
}

}  // namespace dxpu::bridge
