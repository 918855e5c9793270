// tls.cc - mTLS for the pool's HTTP servers and clients (tls.h).
#include "manager/tls.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <mutex>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "lib/util/rate_limited_log.h"

namespace dxpu::manager {

namespace {

// OpenSSL's reasons queued in this thread, oldest first, emptying the queue.
std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    out += out.empty() ? text : std::string("; ") + text;
  }
  return out.empty() ? "no reason given" : out;
}

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// "IP:PORT" of the peer on the connection of `ssl`.
std::string PeerAddress(const SSL* ssl) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getpeername(SSL_get_fd(ssl), reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    port = ntohs(v6->sin6_port);
  }
  return fmt::format("{}:{}", ip, port);
}

std::string SubjectCommonName(X509* cert) {
  if (cert == nullptr) return "";
  char cn[256] = {};
  const int n =
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  return n > 0 ? std::string(cn, static_cast<size_t>(n)) : "";
}

// A client certificate the CA did not sign (or expired, or not for clients): refused at the
// handshake, a few log lines a second whatever the rate of attempts.
int VerifyClient(int ok, X509_STORE_CTX* store) {
  if (ok == 1) return 1;
  static std::mutex mutex;
  static util::RateLimitedLog log(1'000'000'000, 5);
  uint64_t suppressed = 0;
  {
    std::lock_guard lock(mutex);
    if (!log.Allow(0, NowNs(), &suppressed)) return 0;
  }
  const auto* ssl = static_cast<const SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  spdlog::warn("TLS: refused the client certificate of {} (CN '{}'): {}{}",
               ssl != nullptr ? PeerAddress(ssl) : "?",
               SubjectCommonName(X509_STORE_CTX_get_current_cert(store)),
               X509_verify_cert_error_string(X509_STORE_CTX_get_error(store)),
               suppressed > 0 ? fmt::format(" ({} more not logged)", suppressed) : std::string());
  return 0;
}

// The CN a client wants of its server, held by the client's SSL_CTX (freed with it).
void FreePeerCn(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

int PeerCnIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, FreePeerCn);
  return index;
}

// After the chain verified: the server's own certificate (depth 0) has the CN wanted.
int VerifyServerCn(int ok, X509_STORE_CTX* store) {
  if (ok != 1 || X509_STORE_CTX_get_error_depth(store) != 0) return ok;
  const auto* ssl = static_cast<const SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* want = ssl != nullptr ? static_cast<const std::string*>(
                                          SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), PeerCnIndex()))
                                    : nullptr;
  if (want == nullptr) return 1;
  const std::string cn = SubjectCommonName(X509_STORE_CTX_get_current_cert(store));
  if (cn == *want) return 1;
  spdlog::warn("TLS: the server's certificate is CN '{}', not '{}': refused", cn, *want);
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

// The server's context: its certificate and key, the CA its clients' certificates must be
// signed by, a client certificate required.
bool SetUpServerContext(SSL_CTX& ctx, const TlsFiles& files, std::string* error) {
  ERR_clear_error();
  auto fail = [&](const std::string& what) {
    *error = fmt::format("{}: {}", what, OpenSslErrors());
    return false;
  };
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return fail("TLS 1.2");
  if (SSL_CTX_use_certificate_chain_file(&ctx, files.cert.c_str()) != 1)
    return fail("the certificate " + files.cert);
  if (SSL_CTX_use_PrivateKey_file(&ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail("the key " + files.key);
  if (SSL_CTX_check_private_key(&ctx) != 1)
    return fail(fmt::format("the key {} is not the certificate {}'s", files.key, files.cert));
  if (SSL_CTX_load_verify_locations(&ctx, files.ca.c_str(), nullptr) != 1)
    return fail("the CA " + files.ca);
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.ca.c_str());
  if (names == nullptr) return fail("the CA " + files.ca);
  SSL_CTX_set_client_CA_list(&ctx, names);  // takes it
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, VerifyClient);
  return true;
}

// OpenSSL writes to the socket with write(2): a peer that closed the connection (a client
// refused at the handshake, a server that went away) would raise SIGPIPE, whose default kills the
// process. Ignored process-wide once TLS is used, the write fails with EPIPE instead, which
// cpp-httplib handles as a closed connection.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}

}  // namespace

std::string CheckTlsFiles(const TlsFiles& files, const std::string& what) {
  if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
    return fmt::format("TLS needs {} together (cert: '{}', key: '{}', CA: '{}')", what, files.cert,
                       files.key, files.ca);
  }
  for (const std::string& path : {files.cert, files.key, files.ca}) {
    if (access(path.c_str(), R_OK) != 0) return fmt::format("cannot read {}", path);
  }
  return "";
}

std::string CheckServing(const TlsFiles& files, bool insecure_plaintext,
                         const std::string& listen_host) {
  if (files.any()) return CheckTlsFiles(files, "--tls-cert, --tls-key and --tls-ca");
  if (IsLoopback(listen_host)) return "";
  if (!insecure_plaintext) {
    return fmt::format(
        "--listen {} is not a loopback address: serving there needs TLS with client "
        "certificates (--tls-cert, --tls-key, --tls-ca; docs/manager.md \"TLS and roles\"), or "
        "--insecure-plaintext to let anyone who reaches the port act as the operator",
        listen_host);
  }
  spdlog::warn(
      "--insecure-plaintext: serving plain HTTP on {}: anyone who reaches it is the operator "
      "(no identity, no roles)",
      listen_host);
  return "";
}

std::unique_ptr<httplib::Server> MakeServer(const TlsFiles& files, std::string* error) {
  if (!files.any()) return std::make_unique<httplib::Server>();
  IgnoreSigpipe();
  std::string why;
  auto server = std::make_unique<httplib::SSLServer>(
      [&](SSL_CTX& ctx) { return SetUpServerContext(ctx, files, &why); });
  if (!server->is_valid()) {
    *error = "TLS: " + (why.empty() ? OpenSslErrors() : why);
    return nullptr;
  }
  return server;
}

std::unique_ptr<httplib::Client> MakeClient(const std::string& url, const TlsFiles& files,
                                            const std::string& peer_cn) {
  if (!url.starts_with("https://")) return std::make_unique<httplib::Client>(url);
  IgnoreSigpipe();
  auto client = std::make_unique<httplib::Client>(url, files.cert, files.key);
  if (!files.ca.empty()) client->set_ca_cert_path(files.ca);
  client->enable_server_certificate_verification(true);
  SSL_CTX* ctx = client->ssl_context();
  if (!peer_cn.empty() && ctx != nullptr) {
    // cpp-httplib sets each connection's verify mode without a callback, which keeps this one.
    SSL_CTX_set_ex_data(ctx, PeerCnIndex(), new std::string(peer_cn));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, VerifyServerCn);
  }
  return client;
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  return inet_pton(AF_INET6, host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool OverTls(const httplib::Request& req) { return req.ssl != nullptr; }

std::string PeerCommonName(const httplib::Request& req) {
  if (req.ssl == nullptr) return "";
  // OpenSSL 3: SSL_get1_peer_certificate takes a const SSL in spirit but not in its type.
  X509* cert = SSL_get1_peer_certificate(const_cast<SSL*>(req.ssl));
  std::string cn = SubjectCommonName(cert);
  X509_free(cert);
  return cn;
}

}  // namespace dxpu::manager
