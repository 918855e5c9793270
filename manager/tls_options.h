// tls_options.h - the TLS options of the pool's programs (tls.h; docs/manager.md "TLS and
// roles"), the same words in dxpu-manager, dxpu-agent and dxpu pool.
#ifndef DXPU_MANAGER_TLS_OPTIONS_H_
#define DXPU_MANAGER_TLS_OPTIONS_H_

#include <CLI/CLI.hpp>

#include "manager/tls.h"

namespace dxpu::manager {

// A daemon's: its certificate and key (for its API, and as the client certificate of the
// calls it makes), the pool's CA (its clients' certificates must be signed by it, and so must
// the servers it calls), and --insecure-plaintext.
inline void AddDaemonTlsOptions(CLI::App& app, TlsFiles* files, bool* insecure_plaintext) {
  app.add_option("--tls-cert", files->cert,
                 "this daemon's certificate (PEM): its API is then HTTPS and requires client "
                 "certificates; also its client certificate towards the other daemons")
      ->group("TLS");
  app.add_option("--tls-key", files->key, "the certificate's private key (PEM)")->group("TLS");
  app.add_option("--tls-ca,--tls-client-ca", files->ca,
                 "the pool's CA (PEM): clients' certificates must be signed by it, and so must "
                 "the certificates of the servers this daemon calls")
      ->group("TLS");
  app.add_flag("--insecure-plaintext", *insecure_plaintext,
               "serve plain HTTP on an address that is not loopback (anyone who reaches it is "
               "the operator); without TLS, only loopback addresses are served")
      ->group("TLS");
}

// A client's, each with an environment default.
inline void AddClientTlsOptions(CLI::App& app, TlsFiles* files) {
  app.add_option("--tls-cert", files->cert,
                 "the client certificate (PEM) for an https:// manager; its CN is the identity "
                 "(operator, reader, host:NAME)")
      ->envname("DXPU_TLS_CERT");
  app.add_option("--tls-key", files->key, "the client certificate's private key (PEM)")
      ->envname("DXPU_TLS_KEY");
  app.add_option("--tls-ca", files->ca,
                 "the pool's CA (PEM) that signed the manager's certificate (default: the "
                 "system's CAs)")
      ->envname("DXPU_TLS_CA");
}

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_TLS_OPTIONS_H_
