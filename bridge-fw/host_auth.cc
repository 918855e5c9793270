// host_auth.cc - see host_auth.h.
#include "bridge-fw/host_auth.h"

#include <sodium.h>

#include <algorithm>
#include <utility>

#include "core/dxfp_session.h"

namespace dxpu::bridge {
namespace {

constexpr uint64_t kNsPerS = 1'000'000'000;
// A source silent this long has a full bucket again: forgetting it changes nothing.
constexpr uint64_t kIdleSourceNs = 10 * kNsPerS;

}  // namespace

std::string_view HelloRefusalName(HelloRefusal r) {
  switch (r) {
    case HelloRefusal::kRateLimited:
      return "rate-limited";
    case HelloRefusal::kMalformed:
      return "malformed";
    case HelloRefusal::kNoAuth:
      return "no-auth";
    case HelloRefusal::kBadMac1:
      return "bad-mac1";
    case HelloRefusal::kBadHandshake:
      return "bad-handshake";
    case HelloRefusal::kUnknownKey:
      return "unknown-key";
    case HelloRefusal::kWrongNode:
      return "wrong-node";
    case HelloRefusal::kStale:
      return "stale";
    case HelloRefusal::kCount:
      break;
  }
  return "unknown";
}

HostAuthenticator::HostAuthenticator(BoxIdentity identity) : identity_(std::move(identity)) {
  dxfp_mac1_key(&crypto::SodiumCryptoOps(), identity_.keys.pub.data(), mac1_key_.data());
  for (const HostKey& h : identity_.hosts) hosts_[h.public_key] = KnownHost{h.node_id, 0};
}

HostAuthenticator::~HostAuthenticator() {
  sodium_memzero(identity_.keys.secret.data(), identity_.keys.secret.size());
}

HelloRefusal HostAuthenticator::Refuse(HelloRefusal r) {
  refusals_[static_cast<size_t>(r)]++;
  return r;
}

void HostAuthenticator::ForgetIdleSources(uint64_t now) {
  std::erase_if(sources_, [&](const auto& s) { return now - s.second.last >= kIdleSourceNs; });
}

bool HostAuthenticator::AllowHello(uint64_t now, const std::string& source) {
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    if (sources_.size() >= identity_.max_sources) ForgetIdleSources(now);
    // Still full: a flood from many sources. Refusing every new source here locked every new
    // host out for as long as the flood lasted (the attack suite's many-source flood, issue
    // 32), so one remembered source makes room instead: the table's memory stays bounded, and
    // a forgotten source only starts again from a full bucket.
    if (sources_.size() >= identity_.max_sources) {
      sources_.erase(sources_.begin());
      sources_forgotten_++;
    }
    it = sources_.emplace(source, Bucket{static_cast<double>(identity_.hello_burst), now}).first;
  }
  Bucket& b = it->second;
  const double elapsed_s = static_cast<double>(now - b.last) / static_cast<double>(kNsPerS);
  b.tokens = std::min(static_cast<double>(identity_.hello_burst),
                      b.tokens + elapsed_s * identity_.hellos_per_second);
  b.last = now;
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

std::variant<OpenedHello, HelloRefusal> HostAuthenticator::Open(uint64_t now,
                                                                const std::string& source,
                                                                std::span<const uint8_t> frame) {
  if (!AllowHello(now, source)) return Refuse(HelloRefusal::kRateLimited);
  OpenedHello out;
  uint64_t timestamp = 0;
  const dxfp_err e = dxfp_hello_open(&out.hs, &crypto::SodiumCryptoOps(),
                                     identity_.keys.secret.data(), mac1_key_.data(), frame.data(),
                                     frame.size(), DXFP_MAX_FRAME, &out.frame, &timestamp);
  if (e != DXFP_OK) {
    dxfp_noise_wipe(&out.hs);
    if (e == DXFP_ERR_NO_AUTH) return Refuse(HelloRefusal::kNoAuth);
    if (e == DXFP_ERR_BAD_MAC1) return Refuse(HelloRefusal::kBadMac1);
    if (e == DXFP_ERR_BAD_TAG) return Refuse(HelloRefusal::kBadHandshake);
    return Refuse(HelloRefusal::kMalformed);
  }
  crypto::Key key{};
  std::copy(std::begin(out.hs.rs), std::end(out.hs.rs), key.begin());
  auto it = hosts_.find(key);
  HelloRefusal why = HelloRefusal::kCount;
  dxfp_hello hello{};
  if (it == hosts_.end()) {
    why = HelloRefusal::kUnknownKey;
  } else if (!dxfp_hello_identity(&out.frame, &hello) || hello.node_id != it->second.node_id) {
    why = HelloRefusal::kWrongNode;
  } else if (timestamp <= it->second.last_timestamp) {
    why = HelloRefusal::kStale;
  }
  if (why != HelloRefusal::kCount) {
    dxfp_noise_wipe(&out.hs);
    return Refuse(why);
  }
  it->second.last_timestamp = timestamp;
  out.node = it->second.node_id;
  return out;
}

}  // namespace dxpu::bridge
