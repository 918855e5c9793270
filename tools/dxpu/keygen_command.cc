// keygen_command.cc - `dxpu keygen --out BASE [--json]` and `dxpu keygen --public KEYFILE`.
#include "keygen_command.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "crypto/fabric_keys.h"

namespace dxpu::cli {
namespace {

struct KeygenOptions {
  std::string out;
  std::string public_of;
  bool json = false;
};

int Fail(const std::string& why) {
  std::cerr << "dxpu keygen: " << why << '\n';
  return kExitFailure;
}

void Print(const KeygenOptions& o, const crypto::Key& pub, const std::string& key_file) {
  if (o.json) {
    nlohmann::json j{{"public_key", crypto::KeyHex(pub)}};
    if (!key_file.empty()) j["key_file"] = key_file;
    if (!o.out.empty()) j["public_key_file"] = o.out + ".pub";
    std::cout << j.dump() << '\n';
    return;
  }
  if (!key_file.empty()) std::cout << "secret key: " << key_file << " (mode 0600)\n";
  if (!o.out.empty()) std::cout << "public key: " << o.out << ".pub\n";
  std::cout << crypto::KeyHex(pub) << '\n';
}

int Run(const KeygenOptions& o) {
  if (o.out.empty() == o.public_of.empty())
    return Fail("give exactly one of --out (a new key pair) and --public (the public key of one)");
  if (!o.public_of.empty()) {
    crypto::KeyResult<crypto::KeyPair> k = crypto::ReadFabricSecretKeyFile(o.public_of);
    if (!k.ok()) return Fail(k.error().message);
    Print(o, k.value().pub, "");
    return kExitOk;
  }
  const crypto::KeyPair keys = crypto::NewKeyPair();
  crypto::KeyResult<bool> w = crypto::WriteFabricKeyFiles(o.out, keys);
  if (!w.ok()) return Fail(w.error().message);
  Print(o, keys.pub, o.out + ".key");
  return kExitOk;
}

}  // namespace

Command AddKeygenCommand(CLI::App& parent) {
  auto o = std::make_shared<KeygenOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "keygen",
      "Make a fabric key pair (X25519) for a host or a bridge: BASE.key (secret, mode 0600, "
      "never overwritten) and BASE.pub; prints the public key, which the other side lists "
      "(a bridge's identity.hosts, a host's --bridge-key)");
  cmd->add_option("--out", o->out, "the files' path without extension");
  cmd->add_option("--public", o->public_of, "print the public key of this secret key file");
  cmd->add_flag("--json", o->json, "print {\"public_key\": ..., \"key_file\": ...} as JSON");
  cmd->footer(
      "\nExamples:\n"
      "  dxpu keygen --out /etc/dxpu/bridge-7\n"
      "  dxpu keygen --public /etc/dxpu/host-12.key --json\n"
      "docs/security.md, \"Keys\", says where each key goes.");
  return {cmd, [o] { return Run(*o); }};
}

}  // namespace dxpu::cli
