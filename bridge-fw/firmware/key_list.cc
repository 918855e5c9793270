// key_list.cc - the signed list of trusted keys (key_list.h).
#include "bridge-fw/firmware/key_list.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "dxpu/compat.h"

namespace dxpu::firmware {
namespace {

constexpr size_t kListOffKeys = 16;

FirmwareError BadList(std::string message) { return {"bad-key-list", std::move(message)}; }

FirmwareResult<Ok> CheckKeys(const std::vector<PublicKey>& keys) {
  if (keys.empty() || keys.size() > kMaxTrustedKeys)
    return BadList(fmt::format("{} keys: a list holds 1 to {}", keys.size(), kMaxTrustedKeys));
  for (size_t i = 0; i < keys.size(); ++i)
    if (std::find(keys.begin() + static_cast<ptrdiff_t>(i) + 1, keys.end(), keys[i]) != keys.end())
      return BadList(fmt::format("key {} is listed twice", ToHex(KeyIdOf(keys[i]))));
  return Ok{};
}

}  // namespace

FirmwareResult<std::vector<uint8_t>> SignKeyList(const KeyList& list, const SecretKey& root) {
  if (FirmwareResult<Ok> ok = CheckKeys(list.keys); !ok.ok()) return ok.error();
  std::vector<uint8_t> b(kKeyListBytes, 0);
  dxpu_put_be32(b.data(), kKeyListMagic);
  dxpu_put_be16(&b[4], kKeyListFormat);
  dxpu_put_be16(&b[6], static_cast<uint16_t>(list.keys.size()));
  dxpu_put_be32(&b[8], list.sequence);
  for (size_t i = 0; i < list.keys.size(); ++i)
    std::ranges::copy(list.keys[i], b.begin() + static_cast<ptrdiff_t>(kListOffKeys + 32 * i));
  const Signature sig = Sign(std::span(b).first(kKeyListSignedBytes), root);
  std::ranges::copy(sig, b.begin() + kKeyListSignedBytes);
  return b;
}

FirmwareResult<KeyList> VerifyKeyList(std::span<const uint8_t> b, const PublicKey& root) {
  if (b.size() < kKeyListBytes) return BadList(fmt::format("{} bytes: too short", b.size()));
  if (std::all_of(b.begin(), b.begin() + kKeyListBytes, [](uint8_t x) { return x == 0xff; }))
    return BadList("empty");
  if (dxpu_get_be32(b.data()) != kKeyListMagic || dxpu_get_be16(&b[4]) != kKeyListFormat)
    return BadList("not a key list (magic or format)");
  Signature sig{};
  std::copy_n(b.begin() + kKeyListSignedBytes, sig.size(), sig.begin());
  if (!VerifySignature(b.first(kKeyListSignedBytes), sig, root))
    return BadList(
        fmt::format("its signature does not verify with the root key {}: the list was "
                    "changed, or another key signed it",
                    ToHex(KeyIdOf(root))));
  const uint16_t count = dxpu_get_be16(&b[6]);
  KeyList list;
  list.sequence = dxpu_get_be32(&b[8]);
  for (size_t i = 0; i < count && i < kMaxTrustedKeys; ++i) {
    PublicKey k{};
    std::copy_n(b.begin() + static_cast<ptrdiff_t>(kListOffKeys + 32 * i), k.size(), k.begin());
    list.keys.push_back(k);
  }
  if (count > kMaxTrustedKeys || !dxpu_all_zero(&b[12], 4) ||
      !dxpu_all_zero(&b[kListOffKeys + 32 * list.keys.size()],
                     32 * (kMaxTrustedKeys - list.keys.size())))
    return BadList(fmt::format("{} keys, or a reserved byte not zero", count));
  if (FirmwareResult<Ok> ok = CheckKeys(list.keys); !ok.ok()) return ok.error();
  return list;
}

}  // namespace dxpu::firmware
