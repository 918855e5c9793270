// tls.h - the pool's control plane over TLS with client certificates (mTLS, issue 32 item 3;
// docs/manager.md "TLS and roles"): dxpu-manager's and dxpu-agent's HTTP servers, and the
// clients that call them (the manager's calls to agents, the agents' registration, dxpu pool).
// One CA per pool signs every certificate; a server requires a client certificate it signed,
// and a client verifies the server's certificate against it (name or IP in its SAN).
#ifndef DXPU_MANAGER_TLS_H_
#define DXPU_MANAGER_TLS_H_

#include <memory>
#include <string>

namespace httplib {
class Client;
class Server;
struct Request;
}  // namespace httplib

namespace dxpu::manager {

// PEM files: this party's certificate (chain) and key, and the pool's CA.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  bool any() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// "" when `files` is usable: all three given and readable (`what` names the program's options
// in the message, e.g. "--tls-cert, --tls-key and --tls-ca"), else what is wrong, for people.
std::string CheckTlsFiles(const TlsFiles& files, const std::string& what);

// Both below, when they make TLS ones, set SIGPIPE to be ignored in the process (OpenSSL writes
// with write(2); a peer gone would otherwise kill it).
//
// A plain HTTP server when !files.any(); else a TLS server (TLS 1.2 or later) that refuses at
// the handshake every client without a certificate signed by files.ca. Null with *error saying
// why (a file OpenSSL cannot read or a key that is not the certificate's).
std::unique_ptr<httplib::Server> MakeServer(const TlsFiles& files, std::string* error);

// A client of `url` (http:// or https://, as httplib::Client takes it): over https it presents
// files.cert and files.key (when given) and verifies the server against files.ca (the system's
// CAs when none is given), its name or IP address included, and, when `peer_cn` is given, that
// the server's certificate has that subject CN (the manager calling host h1's agent wants
// "host:h1": a host cannot register another host's agent as its own).
std::unique_ptr<httplib::Client> MakeClient(const std::string& url, const TlsFiles& files,
                                            const std::string& peer_cn = "");

// "" when a daemon may serve at `listen_host` as configured: over TLS (all three files given
// and readable), or over plain HTTP on a loopback address, or over plain HTTP elsewhere with
// `insecure_plaintext` (then it logs a warning: anyone who reaches the port is the operator).
// Else what is wrong and what to do, for people.
std::string CheckServing(const TlsFiles& files, bool insecure_plaintext,
                         const std::string& listen_host);

// Whether `host` (a --listen address) is a loopback address: 127.0.0.0/8, ::1, "localhost".
bool IsLoopback(const std::string& host);

// The subject CN of the client certificate the TLS server verified for `req`; "" on a plain
// HTTP server.
std::string PeerCommonName(const httplib::Request& req);
// Whether `req` came over TLS.
bool OverTls(const httplib::Request& req);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_TLS_H_
