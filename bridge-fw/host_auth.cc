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
// WireGuard's: a cookie secret lives two minutes; load lasts a second after the budget ran out.
constexpr uint64_t kCookieSecretNs = 120 * kNsPerS;
constexpr uint64_t kLoadHoldNs = kNsPerS;

// A token bucket: refilled at `rate` a second up to `burst`; true when it paid for one more.
bool TakeToken(double* tokens, uint64_t* last, uint64_t now, uint32_t rate, uint32_t burst) {
  const double elapsed_s = static_cast<double>(now - *last) / static_cast<double>(kNsPerS);
  *tokens = std::min(static_cast<double>(burst), *tokens + elapsed_s * rate);
  *last = now;
  if (*tokens < 1.0) return false;
  *tokens -= 1.0;
  return true;
}

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
    case HelloRefusal::kCookie:
      return "cookie";
    case HelloRefusal::kCount:
      break;
  }
  return "unknown";
}

std::string_view HostKeyResultName(HostKeyResult r) {
  switch (r) {
    case HostKeyResult::kOk:
      return "ok";
    case HostKeyResult::kBadKey:
      return "bad-key";
    case HostKeyResult::kBadNode:
      return "bad-node";
    case HostKeyResult::kKeyInUse:
      return "key-in-use";
    case HostKeyResult::kNoIdentity:
      return "no-identity";
  }
  return "unknown";
}

HostAuthenticator::HostAuthenticator(BoxIdentity identity) : identity_(std::move(identity)) {
  dxfp_mac1_key(&crypto::SodiumCryptoOps(), identity_.keys.pub.data(), mac1_key_.data());
  for (const HostKey& h : identity_.hosts) hosts_[h.public_key] = KnownHost{h.node_id, 0};
  load_.tokens = identity_.handshakes_per_second;
}

HostAuthenticator::~HostAuthenticator() {
  sodium_memzero(identity_.keys.secret.data(), identity_.keys.secret.size());
  sodium_memzero(cookie_secret_.data(), cookie_secret_.size());
  sodium_memzero(previous_cookie_secret_.data(), previous_cookie_secret_.size());
}

HostKeyResult HostAuthenticator::SetHostKey(const crypto::Key& key, uint64_t node) {
  if (node == 0) return HostKeyResult::kBadNode;
  // A public key is a canonical u-coordinate (bit 255 clear) whose X25519 with ours is not zero:
  // a low-order point has no secret behind it, and every handshake with it would be known.
  std::array<uint8_t, crypto_scalarmult_BYTES> shared{};
  const bool usable =
      (key[31] & 0x80) == 0 &&
      crypto_scalarmult(shared.data(), identity_.keys.secret.data(), key.data()) == 0;
  sodium_memzero(shared.data(), shared.size());
  if (!usable) return HostKeyResult::kBadKey;
  auto it = hosts_.find(key);
  if (it != hosts_.end() && it->second.node_id != 0 && it->second.node_id != node)
    return HostKeyResult::kKeyInUse;
  for (auto& [other_key, h] : hosts_)
    if (h.node_id == node && other_key != key) h.node_id = 0;  // the node's previous key
  hosts_[key].node_id = node;
  return HostKeyResult::kOk;
}

bool HostAuthenticator::RemoveHostKey(uint64_t node) {
  bool had = false;
  for (auto& entry : hosts_) {
    if (node != 0 && entry.second.node_id == node) {
      entry.second.node_id = 0;
      had = true;
    }
  }
  return had;
}

size_t HostAuthenticator::host_keys() const {
  return static_cast<size_t>(
      std::ranges::count_if(hosts_, [](const auto& h) { return h.second.node_id != 0; }));
}

void HostAuthenticator::ChargeLoad(uint64_t now) {
  if (load_.last == 0) load_.last = now;
  if (!TakeToken(&load_.tokens, &load_.last, now, identity_.handshakes_per_second,
                 identity_.handshakes_per_second))
    load_until_ = now + kLoadHoldNs;
}

void HostAuthenticator::RotateCookieSecret(uint64_t now) {
  if (have_cookie_secret_ && now - cookie_secret_born_ < kCookieSecretNs) return;
  previous_cookie_secret_ = cookie_secret_;
  randombytes_buf(cookie_secret_.data(), cookie_secret_.size());
  if (!have_cookie_secret_) previous_cookie_secret_ = cookie_secret_;
  cookie_secret_born_ = now;
  have_cookie_secret_ = true;
}

bool HostAuthenticator::HasCookie(const std::string& source, std::span<const uint8_t> hello,
                                  const dxfp_frame& f) const {
  const auto* ops = &crypto::SodiumCryptoOps();
  const auto* src = reinterpret_cast<const uint8_t*>(source.data());
  for (const auto* secret : {&cookie_secret_, &previous_cookie_secret_}) {
    std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
    dxfp_cookie_make(ops, secret->data(), src, source.size(), cookie.data());
    if (dxfp_hello_mac2_ok(ops, cookie.data(), hello.data(), &f)) return true;
  }
  return false;
}

CookieReply HostAuthenticator::MakeCookieReply(const std::string& source,
                                               const dxfp_frame& f) const {
  const auto* ops = &crypto::SodiumCryptoOps();
  std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
  std::array<uint8_t, DXFP_COOKIE_NONCE_SIZE> nonce{};
  dxfp_cookie_make(ops, cookie_secret_.data(), reinterpret_cast<const uint8_t*>(source.data()),
                   source.size(), cookie.data());
  randombytes_buf(nonce.data(), nonce.size());
  CookieReply reply;
  size_t len = 0;
  dxfp_cookie_reply_write(ops, identity_.keys.pub.data(), nonce.data(), cookie.data(), &f,
                          reply.frame.data(), &len);
  return reply;
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
  return TakeToken(&b.tokens, &b.last, now, identity_.hellos_per_second, identity_.hello_burst);
}

std::variant<OpenedHello, HelloRefusal, CookieReply> HostAuthenticator::Open(
    uint64_t now, const std::string& source, std::span<const uint8_t> frame) {
  const auto* ops = &crypto::SodiumCryptoOps();
  OpenedHello out;
  // In order of cost: a source already known pays its limit before anything (a lookup); MAC1
  // (one HMAC); under load, the source's cookie (an HMAC more), which a new source must show
  // before it is remembered (so forged sources fill nothing); then the handshake (three X25519).
  auto known = sources_.find(source);
  if (known != sources_.end() && !TakeToken(&known->second.tokens, &known->second.last, now,
                                            identity_.hellos_per_second, identity_.hello_burst))
    return Refuse(HelloRefusal::kRateLimited);
  const bool is_new = known == sources_.end();
  dxfp_err e = dxfp_hello_check_mac1(ops, mac1_key_.data(), frame.data(), frame.size(),
                                     DXFP_MAX_FRAME, &out.frame);
  if (e == DXFP_OK) {
    ChargeLoad(now);
    RotateCookieSecret(now);
    if (UnderLoad(now) && !HasCookie(source, frame, out.frame)) {
      Refuse(HelloRefusal::kCookie);
      return MakeCookieReply(source, out.frame);
    }
    if (is_new && !AllowHello(now, source)) return Refuse(HelloRefusal::kRateLimited);
  }
  uint64_t timestamp = 0;
  if (e == DXFP_OK)
    e = dxfp_hello_open(&out.hs, ops, identity_.keys.secret.data(), mac1_key_.data(), frame.data(),
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
  if (it == hosts_.end() || it->second.node_id == 0) {
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
