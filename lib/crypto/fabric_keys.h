// fabric_keys.h - the long-term X25519 keys of hosts and bridges (docs/security.md, "Keys"):
// key files and the text form of a public key in configurations.
//
//   BASE.key  "DXPU-FABRIC-SECRET-KEY-V1 <64 hex digits>\n", mode 0600
//   BASE.pub  "DXPU-FABRIC-PUBLIC-KEY-V1 <64 hex digits>\n"
//
// A configuration names a public key by its 64 hex digits (or a .pub file's line).
#ifndef DXPU_LIB_CRYPTO_FABRIC_KEYS_H_
#define DXPU_LIB_CRYPTO_FABRIC_KEYS_H_

#include <span>
#include <string>
#include <string_view>

#include "core/dxfp_session.h"
#include "crypto/sodium_crypto_ops.h"
#include "util/expected.h"

namespace dxpu::crypto {

struct KeyError {
  std::string message;  // which file and why
};
template <typename T>
using KeyResult = util::Expected<T, KeyError>;

// A secret key file. Refused: unreadable, not the format above, or readable by group or others
// (a secret key anyone on the machine can read is no identity).
KeyResult<KeyPair> ReadFabricSecretKeyFile(const std::string& path);
// A public key file.
KeyResult<Key> ReadFabricPublicKeyFile(const std::string& path);
// 64 hex digits, or a whole .pub line; nullopt-like error when it is neither.
KeyResult<Key> ParseFabricPublicKey(std::string_view text);
// Writes BASE.key (0600, created exclusively: an existing file is an error) and BASE.pub.
KeyResult<bool> WriteFabricKeyFiles(const std::string& base, const KeyPair& keys);
// "DXPU-FABRIC-PUBLIC-KEY-V1 <hex>" without the newline, and the bare hex.
std::string FabricPublicKeyLine(const Key& key);
std::string KeyHex(const Key& key);

// An initiator's session authenticated with libsodium: this host's key pair, the bridge's
// public key, and HELLO timestamps from the wall clock (its offset from CLOCK_MONOTONIC, the
// clock the session's "now" must then come from).
void SetHostAuth(dxfp_session_config* cfg, const KeyPair& host, const Key& bridge_public);

// A responder's side of an authenticated HELLO, for tools, benchmarks and tests: the handshake
// opened with the bridge's key (the host's key checked when expect_host is given), then
// dxfp_session_accept_auth(). DXFP_RX_NO_AUTH when the HELLO does not open. A bridge does more
// (bridge-fw/host_auth.h: the host's node, its timestamps, a rate limit). ops: null for
// libsodium's.
dxfp_rx_result AcceptAuthenticatedHello(dxfp_session* s, uint64_t now, const KeyPair& bridge,
                                        std::span<const uint8_t> hello,
                                        const Key* expect_host = nullptr,
                                        const dxfp_crypto_ops* ops = nullptr);

}  // namespace dxpu::crypto

#endif  // DXPU_LIB_CRYPTO_FABRIC_KEYS_H_
