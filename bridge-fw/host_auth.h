// host_auth.h - the bridge's side of the authenticated handshake (docs/protocol.md 4.12): its
// long-term key, the hosts that may connect (each key bound to a node ID; from the
// configuration, and set or removed at runtime by the pool manager, 15.9), the last HELLO
// timestamp taken from each, and a limit on HELLOs per source. Sans-IO: the bridge hands it a
// HELLO as it arrived and the time; it says who sent it, with the opened handshake for the
// session, or why not, cheapest check first (rate, MAC1, then the X25519s), and allocates
// nothing for a HELLO that fails.
#ifndef DXPU_BRIDGE_FW_HOST_AUTH_H_
#define DXPU_BRIDGE_FW_HOST_AUTH_H_

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/dxfp_handshake.h"
#include "crypto/sodium_crypto_ops.h"

namespace dxpu::bridge {

// A host allowed to connect: its public key and the node ID its sessions get.
struct HostKey {
  crypto::Key public_key{};
  uint64_t node_id = 0;
};

// What a bridge authenticates with. Absent from the configuration: plaintext sessions.
struct BoxIdentity {
  crypto::KeyPair keys;
  std::vector<HostKey> hosts;
  // HELLOs one source (link and address) may send: a steady rate and a burst.
  uint32_t hellos_per_second = 20;
  uint32_t hello_burst = 40;
  size_t max_sources = 4096;  // sources remembered by the limit (a new one beyond: one forgotten)
  // Under load: more HELLOs past MAC1 than this a second, from all sources together, and for a
  // second after, a HELLO must carry the cookie of its source (MAC2) or it is answered with one.
  uint32_t handshakes_per_second = 100;
};

enum class HelloRefusal : uint8_t {
  kRateLimited,   // the source sent more HELLOs than its limit
  kMalformed,     // not a HELLO frame (length, CRC, records)
  kNoAuth,        // no handshake records: a plaintext host
  kBadMac1,       // MAC1 fails: the sender does not know this bridge's key
  kBadHandshake,  // the handshake fails (not from the key it names, or not to us)
  kUnknownKey,    // a key this bridge does not list
  kWrongNode,     // the HELLO names another node ID than the key's
  kStale,         // its timestamp is not above the last HELLO taken from that key (a replay)
  kCookie,        // under load, without its source's cookie: answered with a COOKIE frame
  kCount
};
std::string_view HelloRefusalName(HelloRefusal r);  // "rate-limited", "bad-mac1", ...

// What became of a host key the manager set (HOST_KEY_SET, docs/protocol.md 15.9).
enum class HostKeyResult : uint8_t {
  kOk,
  kBadKey,      // not a key a host can have: non-canonical, or a low-order point (no secret)
  kBadNode,     // node ID 0
  kKeyInUse,    // the key is bound to another node
  kNoIdentity,  // the bridge has none (plaintext sessions): it lists no keys
};
std::string_view HostKeyResultName(HostKeyResult r);  // "ok", "bad-key", ...

struct OpenedHello {
  dxfp_frame frame{};  // points into the caller's buffer
  dxfp_noise hs{};     // for dxfp_session_accept_auth (which wipes it)
  uint64_t node = 0;
};

// Under load, the answer to a HELLO without its source's cookie: a COOKIE frame to send back.
struct CookieReply {
  std::array<uint8_t, DXFP_COOKIE_FRAME_SIZE> frame{};
};

class HostAuthenticator {
 public:
  explicit HostAuthenticator(BoxIdentity identity);
  HostAuthenticator(const HostAuthenticator&) = delete;
  HostAuthenticator& operator=(const HostAuthenticator&) = delete;
  HostAuthenticator(HostAuthenticator&&) = delete;
  HostAuthenticator& operator=(HostAuthenticator&&) = delete;
  ~HostAuthenticator();

  // A HELLO from `source` at now (ns, monotonic). On success its timestamp is taken: the same
  // HELLO again is kStale (a repeated HELLO belongs to the session it opened; the caller routes
  // it there first). Under load a HELLO without its source's cookie gets a CookieReply for the
  // caller to send to the source (also counted as the refusal kCookie), and nothing else.
  std::variant<OpenedHello, HelloRefusal, CookieReply> Open(uint64_t now, const std::string& source,
                                                            std::span<const uint8_t> frame);

  // Binds `key` to `node` for the next HELLOs: the node's previous key, if any, opens no more
  // (rotation); a live session opened with it is not touched. The same key and node again: kOk,
  // nothing changes (its HELLO timestamps are kept).
  HostKeyResult SetHostKey(const crypto::Key& key, uint64_t node);
  // The node's key opens no more HELLOs (kUnknownKey); its live session is not touched. False
  // when the node had none.
  bool RemoveHostKey(uint64_t node);
  // Hosts with a key that opens HELLOs now.
  size_t host_keys() const;

  // Whether HELLOs must carry a cookie now (more than handshakes_per_second in the last second).
  bool UnderLoad(uint64_t now) const { return now < load_until_; }
  const crypto::Key& public_key() const { return identity_.keys.pub; }
  // Sources the limit forgot before they were idle, to make room for a new one (a flood from
  // more than max_sources sources).
  uint64_t sources_forgotten() const { return sources_forgotten_; }
  const std::array<uint64_t, static_cast<size_t>(HelloRefusal::kCount)>& refusals() const {
    return refusals_;
  }

 private:
  struct Bucket {
    double tokens = 0;
    uint64_t last = 0;
  };
  struct KnownHost {
    uint64_t node_id = 0;         // 0: removed (the key opens nothing; its timestamp is kept)
    uint64_t last_timestamp = 0;  // 0: none taken yet
  };

  // A source not known yet is remembered (a full bucket, one token taken; when max_sources are
  // known, one of them forgotten); false when the one taken was its last. Open calls it only
  // once a new source's HELLO passed MAC1 and, under load, its cookie (a known source pays its
  // token before any check).
  bool AllowHello(uint64_t now, const std::string& source);
  HelloRefusal Refuse(HelloRefusal r);
  void ForgetIdleSources(uint64_t now);
  // Charges one HELLO past MAC1 to the whole bridge's budget; load starts when it runs out.
  void ChargeLoad(uint64_t now);
  // The cookie secrets: a new one every two minutes, the one before still taken.
  void RotateCookieSecret(uint64_t now);
  bool HasCookie(const std::string& source, std::span<const uint8_t> hello,
                 const dxfp_frame& f) const;
  CookieReply MakeCookieReply(const std::string& source, const dxfp_frame& f) const;

  BoxIdentity identity_;
  std::array<uint8_t, DXFP_HASH_SIZE> mac1_key_{};
  std::map<crypto::Key, KnownHost> hosts_;
  std::unordered_map<std::string, Bucket> sources_;
  Bucket load_{};
  uint64_t load_until_ = 0;
  std::array<uint8_t, DXFP_KEY_SIZE> cookie_secret_{}, previous_cookie_secret_{};
  uint64_t cookie_secret_born_ = 0;
  bool have_cookie_secret_ = false;
  std::array<uint64_t, static_cast<size_t>(HelloRefusal::kCount)> refusals_{};
  uint64_t sources_forgotten_ = 0;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_HOST_AUTH_H_
