// pki.cc - the pool's own small CA (pki.h), with OpenSSL's C API.
#include "manager/pki.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include <spdlog/fmt/fmt.h>

#include "lib/util/errno_text.h"

namespace dxpu::manager {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using Extension = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

constexpr long kDaySeconds = 86'400;

std::string OpenSslError(const std::string& what) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  char text[256] = "no reason given";
  if (e != 0) ERR_error_string_n(e, text, sizeof text);
  return fmt::format("{}: {}", what, text);
}

// A new file, mode 0600 for keys, never one that is there already.
File CreateFile(const std::string& path, mode_t mode, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = fmt::format("cannot create {}: {}", path, util::ErrnoText(errno));
    return nullptr;
  }
  FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) ::close(fd);
  return File(f);
}

// Writes the key and the certificate; "" or why not.
std::string WritePair(const std::string& stem, EVP_PKEY* key, X509* cert, IssuedFiles* out) {
  std::string error;
  out->cert = stem + ".crt";
  out->key = stem + ".key";
  if (access(out->cert.c_str(), F_OK) == 0)
    return fmt::format("{} exists; remove it to issue it again", out->cert);
  {
    File f = CreateFile(out->key, 0600, &error);
    if (!f) return error;
    if (PEM_write_PrivateKey(f.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
      return OpenSslError("writing " + out->key);
  }
  File f = CreateFile(out->cert, 0644, &error);
  if (!f) return error;
  if (PEM_write_X509(f.get(), cert) != 1) return OpenSslError("writing " + out->cert);
  return "";
}

bool AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  Extension ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for `key` named `cn`, valid for `days` days, its extensions `extensions`
// (NID, value), signed by `issuer_key` (issuer: `issuer`, or itself when null).
Cert MakeCertificate(EVP_PKEY* key, const std::string& cn, int days,
                     const std::vector<std::pair<int, std::string>>& extensions, X509* issuer,
                     EVP_PKEY* issuer_key) {
  Cert cert(X509_new());
  Bignum serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr)
    return nullptr;
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // clocks a little apart
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * kDaySeconds);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>("DxPU pool"), -1, -1,
                                 0) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name) !=
          1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return nullptr;
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    if (!AddExtension(cert.get(), &ctx, nid, value)) return nullptr;
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return nullptr;
  return cert;
}

// "IP:1.2.3.4" or "DNS:name" for a SAN value; "" when it is neither.
std::string SanEntry(const std::string& value) {
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, value.c_str(), &a4) == 1 || inet_pton(AF_INET6, value.c_str(), &a6) == 1)
    return "IP:" + value;
  const bool dns = !value.empty() && value.size() <= 253 && value.front() != '-' &&
                   value.front() != '.' &&
                   value.find_first_not_of(
                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789-.") == std::string::npos;
  return dns ? "DNS:" + value : "";
}

std::string CheckCommonName(const std::string& cn) {
  const bool ok = !cn.empty() && cn.size() <= 64 &&
                  cn.find_first_not_of(
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._-:") == std::string::npos;
  return ok ? ""
            : fmt::format("'{}' is not a CN this tool issues (1-64 of A-Z a-z 0-9 . _ - :)", cn);
}

bool ValidDays(int days) { return days >= 1 && days <= 36'500; }

}  // namespace

std::string CertificateStem(const std::string& cn) {
  std::string stem = cn;
  for (char& c : stem) {
    if (c == ':') c = '-';
  }
  return stem;
}

std::string InitPoolCa(const std::string& dir, int days) {
  if (!ValidDays(days)) return fmt::format("--days {} is not 1 to 36500", days);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fmt::format("cannot create {}: {}", dir, util::ErrnoText(errno));
  ERR_clear_error();
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("making the CA's key");
  Cert cert = MakeCertificate(key.get(), "DxPU pool CA", days,
                              {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                               {NID_key_usage, "critical,keyCertSign,cRLSign"},
                               {NID_subject_key_identifier, "hash"}},
                              nullptr, key.get());
  if (!cert) return OpenSslError("making the CA's certificate");
  IssuedFiles files;
  return WritePair(dir + "/ca", key.get(), cert.get(), &files);
}

std::string IssuePoolCertificate(const std::string& dir, const std::string& cn,
                                 const std::vector<std::string>& sans, int days, IssuedFiles* out) {
  if (std::string bad = CheckCommonName(cn); !bad.empty()) return bad;
  if (!ValidDays(days)) return fmt::format("--days {} is not 1 to 36500", days);
  std::string san;
  for (const std::string& s : sans) {
    const std::string entry = SanEntry(s);
    if (entry.empty()) return fmt::format("--san '{}' is neither an IP address nor a DNS name", s);
    san += (san.empty() ? "" : ",") + entry;
  }
  ERR_clear_error();
  const std::string ca_cert_path = dir + "/ca.crt", ca_key_path = dir + "/ca.key";
  File ca_cert_file(std::fopen(ca_cert_path.c_str(), "re"));
  File ca_key_file(std::fopen(ca_key_path.c_str(), "re"));
  if (!ca_cert_file || !ca_key_file)
    return fmt::format("no CA in {} (ca.crt and ca.key; dxpu pki init {})", dir, dir);
  Cert ca(PEM_read_X509(ca_cert_file.get(), nullptr, nullptr, nullptr));
  Key ca_key(PEM_read_PrivateKey(ca_key_file.get(), nullptr, nullptr, nullptr));
  if (!ca || !ca_key) return OpenSslError("reading the CA in " + dir);
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("making the key");
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth,clientAuth"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!san.empty()) extensions.emplace_back(NID_subject_alt_name, san);
  Cert cert = MakeCertificate(key.get(), cn, days, extensions, ca.get(), ca_key.get());
  if (!cert) return OpenSslError("making the certificate");
  return WritePair(dir + "/" + CertificateStem(cn), key.get(), cert.get(), out);
}

}  // namespace dxpu::manager
