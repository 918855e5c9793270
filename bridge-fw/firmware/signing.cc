// signing.cc - Ed25519 and SHA-256 through libsodium; key files (signing.h).
#include "bridge-fw/firmware/signing.h"

#include <fcntl.h>
#include <sodium.h>
#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include "lib/util/errno_text.h"
#include "link/unique_fd.h"

namespace dxpu::firmware {
namespace {

constexpr std::string_view kPublicPrefix = "DXPU-FW-PUBLIC-KEY-V1 ";
constexpr std::string_view kSecretPrefix = "DXPU-FW-SECRET-KEY-V1 ";
constexpr size_t kMaxKeyFile = 1024;

void InitSodium() {
  static const bool ready = sodium_init() >= 0;
  if (!ready) std::abort();  // libsodium found no usable random source: nothing is safe to do
}

std::optional<uint8_t> HexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  return std::nullopt;
}

// Exactly out.size() bytes of hex.
bool FromHex(std::string_view hex, std::span<uint8_t> out) {
  if (hex.size() != out.size() * 2) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::optional<uint8_t> hi = HexDigit(hex[2 * i]);
    const std::optional<uint8_t> lo = HexDigit(hex[2 * i + 1]);
    if (!hi || !lo) return false;
    out[i] = static_cast<uint8_t>(*hi << 4 | *lo);
  }
  return true;
}

FirmwareError FileError(const std::string& path, std::string_view what) {
  return {"key-file", fmt::format("{}: {}", path, what)};
}

// The file's one line (trailing whitespace dropped), or why not.
FirmwareResult<std::string> ReadKeyLine(const std::string& path) {
  link::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return FileError(path, util::ErrnoText(errno));
  std::string text(kMaxKeyFile + 1, '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n < 0) return FileError(path, util::ErrnoText(errno));
  if (static_cast<size_t>(n) > kMaxKeyFile) return FileError(path, "too long for a key file");
  text.resize(static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

template <size_t N>
FirmwareResult<std::array<uint8_t, N>> ParseKey(const std::string& path, const std::string& line,
                                                std::string_view prefix,
                                                std::string_view other_prefix,
                                                std::string_view what) {
  if (line.starts_with(other_prefix)) {
    return FileError(path,
                     fmt::format("this is not a {} (it holds the other half of the pair)", what));
  }
  std::array<uint8_t, N> key{};
  if (!line.starts_with(prefix) || !FromHex(std::string_view(line).substr(prefix.size()), key))
    return FileError(path, fmt::format("not a {} file ('{}' and {} hex digits)", what,
                                       prefix.substr(0, prefix.size() - 1), 2 * N));
  return key;
}

FirmwareResult<Ok> WriteNew(const std::string& path, const std::string& text, mode_t mode) {
  link::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) {
    return FirmwareError{
        errno == EEXIST ? "exists" : "key-file",
        fmt::format("{}: {}", path,
                    errno == EEXIST ? "exists (a key is never replaced)" : util::ErrnoText(errno))};
  }
  if (::fchmod(fd.get(), mode) != 0 ||
      ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0) {
    const std::string why = util::ErrnoText(errno);
    ::unlink(path.c_str());
    return FileError(path, why);
  }
  return Ok{};
}

}  // namespace

KeyPair GenerateKeyPair() {
  InitSodium();
  KeyPair k;
  crypto_sign_keypair(k.public_key.data(), k.secret_key.data());
  return k;
}

KeyId KeyIdOf(const PublicKey& key) {
  const Sha256Digest d = Sha256(key);
  KeyId id{};
  std::copy_n(d.begin(), id.size(), id.begin());
  return id;
}

Sha256Digest Sha256(std::span<const uint8_t> data) {
  InitSodium();
  Sha256Digest d{};
  crypto_hash_sha256(d.data(), data.data(), data.size());
  return d;
}

Signature Sign(std::span<const uint8_t> message, const SecretKey& key) {
  InitSodium();
  Signature s{};
  crypto_sign_detached(s.data(), nullptr, message.data(), message.size(), key.data());
  return s;
}

bool VerifySignature(std::span<const uint8_t> message, const Signature& signature,
                     const PublicKey& key) {
  InitSodium();
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(),
                                     key.data()) == 0;
}

std::string ToHex(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const uint8_t b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

bool ParseHex(std::string_view hex, std::span<uint8_t> out) { return FromHex(hex, out); }

void RandomBytes(std::span<uint8_t> out) {
  InitSodium();
  randombytes_buf(out.data(), out.size());
}

PublicKey PublicKeyOf(const SecretKey& key) {
  InitSodium();
  PublicKey p{};
  crypto_sign_ed25519_sk_to_pk(p.data(), key.data());
  return p;
}

FirmwareResult<PublicKey> ReadPublicKeyFile(const std::string& path) {
  FirmwareResult<std::string> line = ReadKeyLine(path);
  if (!line.ok()) return line.error();
  return ParseKey<32>(path, line.value(), kPublicPrefix, kSecretPrefix, "public key");
}

FirmwareResult<SecretKey> ReadSecretKeyFile(const std::string& path) {
  FirmwareResult<std::string> line = ReadKeyLine(path);
  if (!line.ok()) return line.error();
  FirmwareResult<SecretKey> key =
      ParseKey<64>(path, line.value(), kSecretPrefix, kPublicPrefix, "secret key");
  if (!key.ok()) return key;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    return FirmwareError{"insecure-key-file",
                         fmt::format("{}: a secret key readable by others (mode {:04o}); chmod "
                                     "600 it, and consider the key exposed",
                                     path, st.st_mode & 07777)};
  }
  // libsodium's secret key ends with its public key: a file whose halves disagree is damaged.
  InitSodium();
  std::array<uint8_t, 32> seed{};
  crypto_sign_ed25519_sk_to_seed(seed.data(), key.value().data());
  KeyPair again;
  crypto_sign_seed_keypair(again.public_key.data(), again.secret_key.data(), seed.data());
  sodium_memzero(seed.data(), seed.size());
  if (again.secret_key != key.value()) return FileError(path, "a damaged secret key");
  sodium_memzero(again.secret_key.data(), again.secret_key.size());
  return key;
}

FirmwareResult<Ok> WriteKeyFiles(const std::string& base, const KeyPair& keys) {
  const std::string secret = base + ".key";
  const std::string pub = base + ".pub";
  struct stat st {};
  for (const std::string& p : {secret, pub}) {
    if (::stat(p.c_str(), &st) == 0)
      return FirmwareError{"exists", fmt::format("{}: exists (a key is never replaced)", p)};
  }
  FirmwareResult<Ok> s = WriteNew(
      secret, fmt::format("{}{}\n", kSecretPrefix, ToHex(keys.secret_key)), S_IRUSR | S_IWUSR);
  if (!s.ok()) return s;
  FirmwareResult<Ok> p = WriteNew(pub, fmt::format("{}{}\n", kPublicPrefix, ToHex(keys.public_key)),
                                  S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH);
  if (!p.ok()) {
    ::unlink(secret.c_str());
    return p;
  }
  return Ok{};
}

}  // namespace dxpu::firmware
