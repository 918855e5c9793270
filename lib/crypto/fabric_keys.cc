// fabric_keys.cc - see fabric_keys.h.
#include "crypto/fabric_keys.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dxpu::crypto {
namespace {

constexpr std::string_view kSecretTag = "DXPU-FABRIC-SECRET-KEY-V1";
constexpr std::string_view kPublicTag = "DXPU-FABRIC-PUBLIC-KEY-V1";
constexpr size_t kMaxFileBytes = 4096;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool ParseHex(std::string_view hex, Key* out) {
  if (hex.size() != 2 * out->size()) return false;
  size_t bin_len = 0;
  return sodium_hex2bin(out->data(), out->size(), hex.data(), hex.size(), nullptr, &bin_len,
                        nullptr) == 0 &&
         bin_len == out->size();
}

// "TAG <hex>" -> the key.
KeyResult<Key> ParseLine(std::string_view line, std::string_view tag, const std::string& what) {
  line = Trim(line);
  if (line.substr(0, tag.size()) != tag || line.size() <= tag.size() || line[tag.size()] != ' ')
    return KeyError{what + ": not a " + std::string(tag) + " line"};
  Key key{};
  if (!ParseHex(Trim(line.substr(tag.size() + 1)), &key))
    return KeyError{what + ": the key is not 64 hexadecimal digits"};
  return key;
}

KeyResult<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return KeyError{path + ": cannot read: " + std::strerror(errno)};
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxFileBytes) return KeyError{path + ": too large for a key file"};
  return text;
}

}  // namespace

std::string KeyHex(const Key& key) {
  std::string hex(2 * key.size() + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), key.data(), key.size());
  hex.pop_back();
  return hex;
}

std::string FabricPublicKeyLine(const Key& key) {
  return std::string(kPublicTag) + " " + KeyHex(key);
}

void SetHostAuth(dxfp_session_config* cfg, const KeyPair& host, const Key& bridge_public) {
  timespec real{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &real);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  const auto ns = [](const timespec& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
  };
  cfg->auth.ops = &SodiumCryptoOps();
  std::copy(host.secret.begin(), host.secret.end(), cfg->auth.static_secret);
  std::copy(bridge_public.begin(), bridge_public.end(), cfg->auth.peer_public);
  cfg->auth.wall_clock_offset_ns = ns(real) - ns(mono);
}

dxfp_rx_result AcceptAuthenticatedHello(dxfp_session* s, uint64_t now, const KeyPair& bridge,
                                        std::span<const uint8_t> hello, const Key* expect_host,
                                        const dxfp_crypto_ops* ops) {
  if (ops == nullptr) ops = &SodiumCryptoOps();
  std::array<uint8_t, DXFP_HASH_SIZE> mac1{};
  dxfp_mac1_key(ops, bridge.pub.data(), mac1.data());
  dxfp_noise hs{};
  dxfp_frame f{};
  uint64_t timestamp = 0;
  if (dxfp_hello_open(&hs, ops, bridge.secret.data(), mac1.data(), hello.data(), hello.size(),
                      DXFP_MAX_FRAME, &f, &timestamp) != DXFP_OK ||
      (expect_host != nullptr && !std::equal(expect_host->begin(), expect_host->end(), hs.rs))) {
    dxfp_noise_wipe(&hs);
    return DXFP_RX_NO_AUTH;
  }
  return dxfp_session_accept_auth(s, now, &f, &hs);
}

KeyResult<KeyPair> ReadFabricSecretKeyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return KeyError{path + ": " + std::strerror(errno)};
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    return KeyError{path + ": a secret key must not be readable by group or others (chmod 600)"};
  KeyResult<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.error();
  KeyResult<Key> secret = ParseLine(text.value(), kSecretTag, path);
  if (!secret.ok()) return secret.error();
  KeyPair pair{secret.value(), PublicKeyOf(secret.value())};
  sodium_memzero(text.value().data(), text.value().size());
  return pair;
}

KeyResult<Key> ReadFabricPublicKeyFile(const std::string& path) {
  KeyResult<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.error();
  return ParseLine(text.value(), kPublicTag, path);
}

KeyResult<Key> ParseFabricPublicKey(std::string_view text) {
  text = Trim(text);
  if (text.substr(0, kPublicTag.size()) == kPublicTag)
    return ParseLine(text, kPublicTag, "public key");
  Key key{};
  if (!ParseHex(text, &key))
    return KeyError{std::string("a public key is 64 hexadecimal digits (dxpu keygen writes one)")};
  return key;
}

KeyResult<bool> WriteFabricKeyFiles(const std::string& base, const KeyPair& keys) {
  const std::string key_path = base + ".key", pub_path = base + ".pub";
  const int fd = ::open(key_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return KeyError{key_path + ": " + std::strerror(errno)};
  std::string line = std::string(kSecretTag) + " " + KeyHex(keys.secret) + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());
  sodium_memzero(line.data(), line.size());
  const bool ok = n == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) return KeyError{key_path + ": cannot write: " + std::strerror(saved)};
  std::ofstream pub(pub_path, std::ios::trunc);
  pub << FabricPublicKeyLine(keys.pub) << "\n";
  pub.flush();
  if (!pub) return KeyError{pub_path + ": cannot write"};
  return true;
}

}  // namespace dxpu::crypto
