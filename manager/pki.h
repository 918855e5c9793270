// pki.h - the pool's own small CA, for `dxpu pki` and the tests (docs/manager.md "Making the
// certificates"): a CA key and certificate in a directory, and certificates it signs whose
// subject CN is an identity of access.h ("operator", "reader", "host:NAME", "manager") and
// whose SAN holds the names and IP addresses a server is reached at. Keys are ECDSA P-256,
// written 0600 and never overwritten; certificates are for both TLS clients and servers.
#ifndef DXPU_MANAGER_PKI_H_
#define DXPU_MANAGER_PKI_H_

#include <string>
#include <vector>

namespace dxpu::manager {

struct IssuedFiles {
  std::string cert;
  std::string key;
};

// DIR/ca.crt and DIR/ca.key, a new CA valid for `days` days; DIR is created (0700) if missing.
// "" when made, else why not (a CA there already, a directory it cannot write).
std::string InitPoolCa(const std::string& dir, int days);

// A key and a certificate for `cn` signed by DIR's CA: DIR/STEM.crt and DIR/STEM.key, STEM the
// CN with ':' as '-' ("host:h1" -> host-h1). `sans`: IP addresses and DNS names. "" when
// made (*out: the paths), else why not (a bad CN or SAN, files there already, no CA).
std::string IssuePoolCertificate(const std::string& dir, const std::string& cn,
                                 const std::vector<std::string>& sans, int days, IssuedFiles* out);

// The file stem of a CN's certificate and key.
std::string CertificateStem(const std::string& cn);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_PKI_H_
