// pki_command.cc - `dxpu pki` (pki_command.h), over manager/pki.h.
#include "pki_command.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "manager/pki.h"

namespace dxpu::cli {

namespace {

struct PkiOptions {
  std::string dir;
  std::string cn;
  std::vector<std::string> sans;
  int days = 825;
};

int Report(const std::string& problem, const std::string& done) {
  if (!problem.empty()) {
    std::fprintf(stderr, "dxpu pki: %s\n", problem.c_str());
    return kExitFailure;
  }
  std::printf("%s\n", done.c_str());
  return kExitOk;
}

}  // namespace

Command AddPkiCommand(CLI::App& parent) {
  auto o = std::make_shared<PkiOptions>();
  CLI::App* pki = parent.add_subcommand(
      "pki",
      "Make the pool's own CA and the certificates of its control plane: dxpu-manager, "
      "dxpu-agents and the people and scripts that call them (mTLS; docs/manager.md)");
  pki->require_subcommand(1);
  CLI::App* init = pki->add_subcommand(
      "init",
      "Make a CA in DIR: DIR/ca.crt (give it to every party) and DIR/ca.key (0600; keep it "
      "where only the operator can read it)");
  init->add_option("DIR", o->dir, "the CA's directory (created 0700 if missing)")->required();
  init->add_option("--days", o->days, "how long the CA is valid")
      ->check(CLI::Range(1, 36500))
      ->capture_default_str();
  init->footer("\nExample:\n  dxpu pki init /etc/dxpu/pki\n");
  CLI::App* issue = pki->add_subcommand(
      "issue",
      "Issue a key and a certificate signed by DIR's CA, for a TLS client and server: "
      "DIR/STEM.crt and DIR/STEM.key (STEM: the CN with ':' as '-'). The CN is the identity: "
      "operator, reader, host:NAME (a host's agent and its tenant), manager (dxpu-manager)");
  issue->add_option("DIR", o->dir, "the CA's directory (dxpu pki init)")->required();
  issue->add_option("--cn", o->cn, "the identity: operator, reader, host:NAME or manager")
      ->required();
  issue
      ->add_option("--san", o->sans,
                   "an IP address or DNS name the holder serves at (its --listen or "
                   "--advertise); repeat for more")
      ->take_all();
  issue->add_option("--days", o->days, "how long the certificate is valid")
      ->check(CLI::Range(1, 36500))
      ->capture_default_str();
  issue->footer(
      "\nExamples:\n"
      "  dxpu pki issue /etc/dxpu/pki --cn manager --san 10.0.0.5\n"
      "  dxpu pki issue /etc/dxpu/pki --cn host:h1 --san 10.0.0.21\n"
      "  dxpu pki issue /etc/dxpu/pki --cn operator\n"
      "Exit status: 0 made, 1 not made (the reason on stderr), 2 bad command line.\n");
  return {pki, [o, init]() -> int {
            if (init->parsed()) {
              return Report(manager::InitPoolCa(o->dir, o->days),
                            o->dir + "/ca.crt " + o->dir + "/ca.key");
            }
            manager::IssuedFiles files;
            const std::string problem =
                manager::IssuePoolCertificate(o->dir, o->cn, o->sans, o->days, &files);
            return Report(problem, files.cert + " " + files.key);
          }};
}

}  // namespace dxpu::cli
