// attacker.h - the malicious host of the attack suite: a raw UDP socket on the fabric (any
// source address on loopback), and the frames it forges from what it captured: HELLOs made by
// lib/core with a key of its own (or none), plaintext DATA and CLOSE frames carrying a
// victim's session IDs and epochs as they show in the clear, and sealed frames with a garbage
// tag.
#ifndef DXPU_TESTS_ATTACK_ATTACKER_H_
#define DXPU_TESTS_ATTACK_ATTACKER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dxfp_frame.h"
#include "crypto/sodium_crypto_ops.h"
#include "dxpu/tlp.h"
#include "link/unique_fd.h"

namespace dxpu::test::attack {

using Frame = std::vector<uint8_t>;

class RawUdp {
 public:
  // Bound to ip:0 (any 127.x.y.z is this machine's).
  explicit RawUdp(const std::string& ip = "127.0.0.1");
  bool ok() const { return fd_.valid(); }
  bool SendTo(uint16_t port, std::span<const uint8_t> frame) const;
  // The same, at most 16 frames a millisecond: a burst on loopback overflows the receiver's
  // socket buffer, and a frame the kernel drops is one the test cannot count.
  bool SendPaced(uint16_t port, std::span<const uint8_t> frame);
  // Datagrams that arrive within timeout_ms.
  size_t CountReceived(int timeout_ms) const;

 private:
  link::UniqueFd fd_;
  uint64_t sent_ = 0;
};

// The HELLO a host with node ID `node` sends first: authenticated with `key` to a bridge whose
// public key is `bridge_key`, or plaintext when key is null.
Frame HelloOf(uint64_t node, const crypto::KeyPair* key, const crypto::Key* bridge_key);

// The clear header of a captured frame.
dxfp_header HeaderOf(const Frame& frame);

// A plaintext frame of `type` with the IDs, epochs and numbers of `seen` (a frame of the
// session it forges into, in the same direction) carrying `tlp` (DATA) or a CLOSE record.
Frame PlainData(const dxfp_header& seen, const dxpu_tlp& tlp);
Frame PlainClose(const dxfp_header& seen);
// A captured sealed frame with its payload scrambled, its counter set far ahead (never used:
// no replay check stops it, only the tag) and, when type is not 0, its clear type changed.
Frame GarbageSealed(const Frame& sealed, uint8_t type = 0);

// A configuration write of `value` to register `reg` of the device at bdf: what an attacker
// would inject into a victim's session (0 to the Command register cuts its DMA).
dxpu_tlp ConfigWrite(uint16_t bdf, uint16_t reg, const uint32_t* value);
// A completion with data for requester `requester`, tag `tag`: forged to a host.
dxpu_tlp Completion(uint16_t requester, uint8_t tag, const uint32_t* data);

}  // namespace dxpu::test::attack

#endif  // DXPU_TESTS_ATTACK_ATTACKER_H_
