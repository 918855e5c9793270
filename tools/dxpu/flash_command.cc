// flash_command.cc - `dxpu flash keygen|sign|inspect|init|sign-keys|rotate-keys|
// authorize-downgrade|push|status` (docs/firmware.md,
// "dxpu flash"); push and status are in flash_push.cc.
#include "flash_command.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bridge-fw/bridge_config.h"
#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/downgrade.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/image.h"
#include "bridge-fw/firmware/key_list.h"
#include "bridge-fw/firmware/signing.h"
#include "bridge-fw/firmware/slot_writer.h"
#include "bridge_command.h"
#include "error_report.h"
#include "flash_push.h"
#include "lib/cli/options.h"
#include "progress.h"

namespace dxpu::cli {
namespace {

using Json = nlohmann::ordered_json;
namespace fw = dxpu::firmware;

constexpr uint64_t kMaxInputFile = uint64_t{1} << 30;  // an image or its parts: 1 GiB at most

struct FlashOptions {
  bool json = false;
  std::string out;
  std::string key;
  std::string program;  // flash sign: the dxpu-bridge executable
  std::string config;
  std::string version;
  uint32_t hw_rev = 0;
  bool hw_rev_given = false;
  std::string build_id;
  int64_t build_time = -1;
  std::string image;
  std::vector<std::string> pubs;
  std::string flash;
  uint32_t blocks_per_slot = 256;
  uint32_t erase_block = 64 * 1024;
  uint32_t granule = 256;
  uint32_t security_version = 0;
  std::string root;       // sign-keys: the root secret key; init: the root public key
  std::string key_list;   // init, rotate-keys: a signed key list (sign-keys)
  uint32_t sequence = 1;  // sign-keys
  std::string bridge_id;  // init: hex (default random); authorize-downgrade: the bridge's
  FlashPushOptions push;
  BridgeTargets status;
};

Error FromFirmware(const fw::FirmwareError& e) { return {e.name, e.message}; }

int Fail(const FlashOptions& o, std::string_view sub, const Error& e) {
  return ReportError(fmt::format("flash {}", sub), e, o.json, std::cout, std::cerr, kExitFailure);
}

Result<std::vector<uint8_t>> ReadFile(const std::string& path, std::string_view what) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error{"open-error", fmt::format("{} {}: {}", what, path, ec.message())};
  if (size > kMaxInputFile)
    return Error{"too-large",
                 fmt::format("{} {}: {} bytes (at most {})", what, path, size, kMaxInputFile)};
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> data(size);
  if (!in || !in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(size)))
    return Error{"read-error", fmt::format("cannot read {} {}", what, path)};
  return data;
}

// Written next to `path`, then renamed over it: never half an image under the name.
Result<bool> WriteFileAtomically(const std::string& path, const std::vector<uint8_t>& data) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out ||
        !out.write(reinterpret_cast<const char*>(data.data()),
                   static_cast<std::streamsize>(data.size())) ||
        !out.flush())
      return Error{"write-error", fmt::format("cannot write {}", tmp)};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Error{"write-error", fmt::format("cannot rename {} to {}", tmp, path)};
  }
  return true;
}

std::string UtcText(uint64_t seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json HeaderJson(const fw::ImageHeader& h) {
  return {{"version", h.version.ToString()},
          {"hw_revision", h.hw_revision},
          {"build_id", h.build_id},
          {"build_time", UtcText(h.build_time)},
          {"key_id", fw::ToHex(h.key_id)},
          {"security_version", h.security_version},
          {"payload_length", h.payload_length},
          {"payload_sha256", fw::ToHex(h.payload_sha256)}};
}

int RunKeygen(const FlashOptions& o) {
  const fw::KeyPair keys = fw::GenerateKeyPair();
  fw::FirmwareResult<fw::Ok> w = fw::WriteKeyFiles(o.out, keys);
  if (!w.ok()) return Fail(o, "keygen", FromFirmware(w.error()));
  const std::string id = fw::ToHex(fw::KeyIdOf(keys.public_key));
  if (o.json) {
    std::cout << Json{{"key_id", id},
                      {"secret_key", o.out + ".key"},
                      {"public_key", o.out + ".pub"}}
                     .dump()
              << '\n';
  } else {
    std::cout << fmt::format(
        "key {}: secret key {}.key (mode 0600; keep it off the bridges), "
        "public key {}.pub (give it to dxpu flash init)\n",
        id, o.out, o.out);
  }
  return kExitOk;
}

int RunSign(const FlashOptions& o) {
  fw::FirmwareResult<fw::SecretKey> key = fw::ReadSecretKeyFile(o.key);
  if (!key.ok()) return Fail(o, "sign", FromFirmware(key.error()));
  fw::FirmwareResult<fw::FirmwareVersion> version = fw::FirmwareVersion::Parse(o.version);
  if (!version.ok()) return Fail(o, "sign", FromFirmware(version.error()));
  Result<std::vector<uint8_t>> exe = ReadFile(o.program, "the bridge executable");
  if (!exe.ok()) return Fail(o, "sign", exe.error());
  if (exe.value().size() < 4 || exe.value()[0] != 0x7f || exe.value()[1] != 'E' ||
      exe.value()[2] != 'L' || exe.value()[3] != 'F')
    return Fail(o, "sign",
                {"not-executable", fmt::format("{} is not an ELF executable", o.program)});
  Result<std::vector<uint8_t>> config = ReadFile(o.config, "the configuration");
  if (!config.ok()) return Fail(o, "sign", config.error());
  const bridge::BridgeConfigResult parsed = bridge::ParseBridgeConfig(std::string_view(
      reinterpret_cast<const char*>(config.value().data()), config.value().size()));
  if (!parsed.ok()) {
    std::string why;
    for (const std::string& e : parsed.errors) why += (why.empty() ? "" : "; ") + e;
    return Fail(o, "sign",
                {"bad-config", fmt::format("{}: not a bridge configuration: {}", o.config, why)});
  }
  fw::ImageSpec spec;
  spec.version = version.value();
  spec.hw_revision = o.hw_rev;
  spec.build_id = o.build_id;
  spec.security_version = o.security_version;
  if (o.build_time >= 0) {
    spec.build_time = static_cast<uint64_t>(o.build_time);
  } else if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH");  // NOLINT(concurrency-mt-unsafe)
             epoch != nullptr) {
    spec.build_time = std::strtoull(epoch, nullptr, 10);  // reproducible builds
  } else {
    spec.build_time = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
  }
  spec.sections = {{fw::SectionType::kExecutable, "dxpu-bridge", std::move(exe).value()},
                   {fw::SectionType::kConfig, "bridge.json", std::move(config).value()}};
  fw::FirmwareResult<std::vector<uint8_t>> image = fw::BuildImage(spec, key.value());
  if (!image.ok()) return Fail(o, "sign", FromFirmware(image.error()));
  Result<bool> written = WriteFileAtomically(o.out, image.value());
  if (!written.ok()) return Fail(o, "sign", written.error());
  const fw::ImageHeader h = fw::DecodeHeader(image.value()).value();
  if (o.json) {
    Json j = HeaderJson(h);
    j["image"] = o.out;
    j["bytes"] = image.value().size();
    std::cout << j.dump() << '\n';
  } else {
    std::cout << fmt::format(
        "{}: firmware {} for hardware revision {}, {} bytes, signed with key "
        "{}\n",
        o.out, h.version.ToString(), h.hw_revision, image.value().size(), fw::ToHex(h.key_id));
  }
  return kExitOk;
}

// A verification error worded for a file check: the keys are the --pub files given and the
// hardware revision is --hw-rev, not a bridge's.
Error InspectError(const FlashOptions& o, const fw::ImageHeader& h, const fw::TrustPolicy& policy,
                   Error e) {
  std::string files;
  for (size_t i = 0; i < o.pubs.size(); ++i)
    files += (i == 0 ? "" : i + 1 == o.pubs.size() ? " or " : ", ") + o.pubs[i];
  std::string keys;
  for (size_t i = 0; i < policy.keys.size(); ++i)
    keys += (i == 0 ? "" : ", ") + fw::ToHex(fw::KeyIdOf(policy.keys[i]));
  if (e.name == "unknown-key") {
    e.message = fmt::format(
        "{} is not signed by the key in {} (it is signed with key {}; {} hold{} key{} {})", o.image,
        files, fw::ToHex(h.key_id), files, o.pubs.size() == 1 ? "s" : "",
        policy.keys.size() == 1 ? "" : "s", keys);
  } else if (e.name == "bad-signature") {
    std::string file;
    for (size_t i = 0; i < policy.keys.size(); ++i)
      if (fw::KeyIdOf(policy.keys[i]) == h.key_id) file = o.pubs[i];
    e.message = fmt::format(
        "{}'s signature does not verify with the key in {} (key {}): the header was changed "
        "after signing, or another key with the same ID signed it",
        o.image, file, fw::ToHex(h.key_id));
  } else if (e.name == "wrong-hardware") {
    e.message = fmt::format("{} is built for hardware revision {}, not the --hw-rev {} given",
                            o.image, h.hw_revision, policy.hw_revision);
  }
  return e;
}

int RunInspect(const FlashOptions& o) {
  Result<std::vector<uint8_t>> image = ReadFile(o.image, "the image");
  if (!image.ok()) return Fail(o, "inspect", image.error());
  fw::FirmwareResult<fw::ImageHeader> header = fw::DecodeHeader(image.value());
  if (!header.ok()) return Fail(o, "inspect", FromFirmware(header.error()));
  const fw::ImageHeader& h = header.value();
  Json j = HeaderJson(h);
  j["digest"] = fw::ToHex(fw::ImageDigest(image.value()));
  // The sections, when the payload is all there (unverified unless keys were given).
  std::vector<fw::Section> sections;
  if (image.value().size() - fw::kHeaderBytes >= h.payload_length) {
    fw::FirmwareResult<std::vector<fw::Section>> s =
        fw::ParsePayload(std::span(image.value()).subspan(fw::kHeaderBytes, h.payload_length));
    if (s.ok()) sections = std::move(s).value();
  }
  Json js = Json::array();
  for (const fw::Section& s : sections)
    js.push_back(
        {{"type", fw::SectionTypeName(s.type)}, {"name", s.name}, {"bytes", s.data.size()}});
  j["sections"] = js;
  std::optional<Error> failed;
  if (!o.pubs.empty()) {
    fw::TrustPolicy policy;
    for (const std::string& p : o.pubs) {
      fw::FirmwareResult<fw::PublicKey> k = fw::ReadPublicKeyFile(p);
      if (!k.ok()) return Fail(o, "inspect", FromFirmware(k.error()));
      policy.keys.push_back(k.value());
    }
    policy.hw_revision = o.hw_rev_given ? o.hw_rev : h.hw_revision;
    policy.max_payload = kMaxInputFile;
    fw::FirmwareResult<fw::VerifiedImage> v = fw::VerifyImage(image.value(), policy);
    j["verified"] = v.ok();
    if (!v.ok()) failed = InspectError(o, h, policy, FromFirmware(v.error()));
  }
  if (o.json) {
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << fmt::format(
        "image        {}\nversion      {}\nsecurity     version {}\nhardware     revision {}\n"
        "build        {} ({})\nsigned with  key {}\npayload      {} bytes, SHA-256 {}\n"
        "digest       {}\n",
        o.image, h.version.ToString(), h.security_version, h.hw_revision,
        h.build_id.empty() ? "-" : h.build_id, UtcText(h.build_time), fw::ToHex(h.key_id),
        h.payload_length, fw::ToHex(h.payload_sha256), fw::ToHex(fw::ImageDigest(image.value())));
    for (const fw::Section& s : sections)
      std::cout << fmt::format("section      {} '{}', {} bytes\n", fw::SectionTypeName(s.type),
                               s.name, s.data.size());
    if (!o.pubs.empty() && !failed) std::cout << "verified     signature and payload hash good\n";
  }
  if (failed) {
    return ReportError("flash inspect", *failed, false, std::cout, std::cerr, kExitFailure);
  }
  return kExitOk;
}

Result<fw::BridgeId> ParseBridgeId(const std::string& hex) {
  fw::BridgeId id{};
  if (!fw::ParseHex(hex, id))
    return Error{"bad-bridge-id",
                 fmt::format("'{}' is not a bridge ID ({} hex digits, as dxpu flash init "
                             "printed it)",
                             hex, id.size() * 2)};
  return id;
}

int RunInit(const FlashOptions& o) {
  fw::FactoryInfo info;
  info.geometry = {o.erase_block, o.granule, fw::kFirstSlotBlock + 2 * o.blocks_per_slot};
  info.hw_revision = o.hw_rev;
  info.blocks_per_slot = o.blocks_per_slot;
  fw::FirmwareResult<fw::PublicKey> root = fw::ReadPublicKeyFile(o.root);
  if (!root.ok()) return Fail(o, "init", FromFirmware(root.error()));
  info.root_key = root.value();
  if (o.bridge_id.empty()) {
    fw::RandomBytes(info.bridge_id);
  } else {
    Result<fw::BridgeId> id = ParseBridgeId(o.bridge_id);
    if (!id.ok()) return Fail(o, "init", id.error());
    info.bridge_id = id.value();
  }
  Result<std::vector<uint8_t>> key_list = ReadFile(o.key_list, "the key list");
  if (!key_list.ok()) return Fail(o, "init", key_list.error());
  std::vector<uint8_t> image;
  if (!o.image.empty()) {
    Result<std::vector<uint8_t>> read = ReadFile(o.image, "the image");
    if (!read.ok()) return Fail(o, "init", read.error());
    image = std::move(read).value();
  }
  fw::FirmwareResult<std::unique_ptr<fw::FlashDevice>> flash =
      fw::FlashDevice::Create(o.flash, info, key_list.value());
  if (!flash.ok()) return Fail(o, "init", FromFirmware(flash.error()));
  fw::FlashDevice& f = *flash.value();
  Json j = {{"flash", o.flash},
            {"bytes", info.geometry.size()},
            {"hw_revision", info.hw_revision},
            {"bridge_id", fw::ToHex(info.bridge_id)},
            {"trusted_keys", f.factory().keys.size()},
            {"slot_bytes", fw::FlashLayout(info).slot_size()}};
  if (!image.empty()) {
    // Slot A, programmed and marked good, as the factory leaves a bridge.
    auto undo = [&](const fw::FirmwareError& e) {
      flash.value().reset();
      std::error_code ec;
      std::filesystem::remove(o.flash, ec);
      return Fail(o, "init", FromFirmware(e));
    };
    fw::FirmwareResult<fw::SlotWriter> w =
        fw::SlotWriter::Begin(f, fw::Slot::kA, fw::Slot::kB, image, /*allow_downgrade=*/false);
    if (!w.ok()) return undo(w.error());
    Progress progress("programming slot A");
    constexpr size_t kPiece = size_t{1} << 20;
    for (size_t at = 0; at < image.size(); at += kPiece) {
      fw::FirmwareResult<fw::Ok> a =
          w.value().Append(std::span(image).subspan(at, std::min(kPiece, image.size() - at)));
      if (!a.ok()) return undo(a.error());
      progress.Update(at, image.size());
    }
    fw::FirmwareResult<fw::ImageHeader> done = w.value().Finish();
    if (!done.ok()) return undo(done.error());
    fw::FirmwareResult<std::optional<fw::BootState>> state = fw::ReadBootState(f);
    if (!state.ok()) return undo(state.error());
    fw::FirmwareResult<fw::Ok> good =
        fw::WriteBootState(f, fw::MarkGood(state.value().value_or(fw::BootState{}), fw::Slot::kA));
    if (!good.ok()) return undo(good.error());
    j["slot_a"] = done.value().version.ToString();
  }
  if (o.json) {
    std::cout << j.dump() << '\n';
  } else {
    std::cout << fmt::format(
        "{}: {} bytes, hardware revision {}, bridge ID {}, {} trusted keys, two slots of {} "
        "bytes{}\n",
        o.flash, info.geometry.size(), info.hw_revision, fw::ToHex(info.bridge_id),
        f.factory().keys.size(), fw::FlashLayout(info).slot_size(),
        j.contains("slot_a")
            ? fmt::format("; slot A: firmware {}, good", j["slot_a"].get<std::string>())
            : "");
  }
  return kExitOk;
}

int RunSignKeys(const FlashOptions& o) {
  fw::FirmwareResult<fw::SecretKey> root = fw::ReadSecretKeyFile(o.root);
  if (!root.ok()) return Fail(o, "sign-keys", FromFirmware(root.error()));
  fw::KeyList list;
  list.sequence = o.sequence;
  for (const std::string& p : o.pubs) {
    fw::FirmwareResult<fw::PublicKey> k = fw::ReadPublicKeyFile(p);
    if (!k.ok()) return Fail(o, "sign-keys", FromFirmware(k.error()));
    list.keys.push_back(k.value());
  }
  fw::FirmwareResult<std::vector<uint8_t>> signed_list = fw::SignKeyList(list, root.value());
  if (!signed_list.ok()) return Fail(o, "sign-keys", FromFirmware(signed_list.error()));
  Result<bool> written = WriteFileAtomically(o.out, signed_list.value());
  if (!written.ok()) return Fail(o, "sign-keys", written.error());
  const std::string root_id = fw::ToHex(fw::KeyIdOf(fw::PublicKeyOf(root.value())));
  if (o.json) {
    std::cout << Json{{"key_list", o.out},
                      {"sequence", o.sequence},
                      {"keys", list.keys.size()},
                      {"root_key_id", root_id}}
                     .dump()
              << '\n';
  } else {
    std::cout << fmt::format("{}: key list {} of {} key{}, signed with root key {}\n", o.out,
                             o.sequence, list.keys.size(), list.keys.size() == 1 ? "" : "s",
                             root_id);
  }
  return kExitOk;
}

int RunRotateKeys(const FlashOptions& o) {
  Result<std::vector<uint8_t>> key_list = ReadFile(o.key_list, "the key list");
  if (!key_list.ok()) return Fail(o, "rotate-keys", key_list.error());
  fw::FirmwareResult<std::unique_ptr<fw::FlashDevice>> flash = fw::FlashDevice::Open(o.flash);
  if (!flash.ok()) return Fail(o, "rotate-keys", FromFirmware(flash.error()));
  const uint32_t before = flash.value()->factory().key_list_sequence;
  fw::FirmwareResult<fw::Ok> r = flash.value()->RotateKeys(key_list.value());
  if (!r.ok()) return Fail(o, "rotate-keys", FromFirmware(r.error()));
  const fw::FactoryInfo& f = flash.value()->factory();
  if (o.json) {
    std::cout << Json{{"flash", o.flash},
                      {"sequence", f.key_list_sequence},
                      {"keys", f.keys.size()}}
                     .dump()
              << '\n';
  } else {
    std::cout << fmt::format("{}: key list {} (was {}), {} trusted key{}\n", o.flash,
                             f.key_list_sequence, before, f.keys.size(),
                             f.keys.size() == 1 ? "" : "s");
  }
  return kExitOk;
}

int RunAuthorizeDowngrade(const FlashOptions& o) {
  fw::FirmwareResult<fw::SecretKey> key = fw::ReadSecretKeyFile(o.key);
  if (!key.ok()) return Fail(o, "authorize-downgrade", FromFirmware(key.error()));
  Result<fw::BridgeId> bridge = ParseBridgeId(o.bridge_id);
  if (!bridge.ok()) return Fail(o, "authorize-downgrade", bridge.error());
  Result<std::vector<uint8_t>> image = ReadFile(o.image, "the image");
  if (!image.ok()) return Fail(o, "authorize-downgrade", image.error());
  fw::FirmwareResult<std::vector<uint8_t>> auth =
      fw::SignDowngrade(bridge.value(), image.value(), key.value());
  if (!auth.ok()) return Fail(o, "authorize-downgrade", FromFirmware(auth.error()));
  Result<bool> written = WriteFileAtomically(o.out, auth.value());
  if (!written.ok()) return Fail(o, "authorize-downgrade", written.error());
  const fw::DowngradeAuth a = fw::DecodeDowngrade(auth.value()).value();
  if (o.json) {
    std::cout << Json{{"authorisation", o.out},
                      {"bridge_id", fw::ToHex(a.bridge)},
                      {"version", a.version.ToString()},
                      {"digest", fw::ToHex(a.image_digest)},
                      {"key_id", fw::ToHex(a.key_id)}}
                     .dump()
              << '\n';
  } else {
    std::cout << fmt::format(
        "{}: bridge {} may take {} (version {}, digest {}) below its minimum; signed with key "
        "{}\n",
        o.out, fw::ToHex(a.bridge), o.image, a.version.ToString(), fw::ToHex(a.image_digest),
        fw::ToHex(a.key_id));
  }
  return kExitOk;
}

int RunPush(const FlashOptions& o) {
  if (o.push.wait > std::chrono::hours(1))
    return ReportError(
        "flash push",
        Error{"bad-wait", fmt::format("--wait {}: at most 60min", FormatDuration(o.push.wait))},
        o.push.targets.json, std::cout, std::cerr, kExitUsage);
  Result<std::vector<uint8_t>> image = ReadFile(o.push.image, "the image");
  if (!image.ok())
    return ReportError("flash push", image.error(), o.push.targets.json, std::cout, std::cerr,
                       kExitFailure);
  FlashPushOptions push = o.push;
  if (!push.downgrade_file.empty()) {
    Result<std::vector<uint8_t>> auth =
        ReadFile(push.downgrade_file, "the downgrade authorisation");
    if (!auth.ok())
      return ReportError("flash push", auth.error(), o.push.targets.json, std::cout, std::cerr,
                         kExitFailure);
    push.downgrade = std::move(auth).value();
  }
  return RunFlashPush(push, image.value());
}

// --bridge (repeatable), --timeout, --attempts, --json: how push and status reach bridges.
void AddTargetOptions(CLI::App* cmd, BridgeTargets& t) {
  cmd->add_option("--bridge", t.bridges,
                  "a bridge's management socket: IP:PORT or unix:PATH (repeatable; the "
                  "bridges are done in turn)")
      ->required();
  AddDurationOption(*cmd, "--timeout", &t.timeout, "how long to wait for each answer (1ms .. 60s)",
                    {{"--timeout-ms", DurationUnit::kMilliseconds}});
  cmd->add_option("--attempts", t.attempts, "sends of a request before giving up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", t.json, "print the result as a JSON array, one object per bridge");
  AddManagementKeyOption(*cmd, &t.key);
}

CLI::App* AddPushCommand(CLI::App* flash, FlashOptions& o) {
  CLI::App* push = flash->add_subcommand(
      "push",
      "Update bridges' firmware over their management sockets: send the image, commit it, "
      "reboot into it and wait until it runs (resumes an interrupted transfer)");
  push->add_option("IMAGE", o.push.image, "the signed image file (dxpu flash sign)")->required();
  AddTargetOptions(push, o.push.targets);
  push->add_option("--allow-downgrade", o.push.downgrade_file,
                   "a downgrade authorisation (dxpu flash authorize-downgrade) for this image "
                   "and bridge: lets an image older than the bridge's running or minimum "
                   "version in (the bridge checks it and logs the downgrade)");
  push->add_flag("--no-reboot", o.push.no_reboot,
                 "stop after the commit: the image boots, on trial, at the bridge's next restart");
  push->add_option("--chunk-size", o.push.chunk_bytes, "image bytes per FW_CHUNK datagram")
      ->capture_default_str()
      ->check(CLI::Range(uint32_t{1}, kMaxChunkBytes));
  push->add_flag("--reinstall", o.push.reinstall,
                 "write the image even into a bridge that already runs its version (into the "
                 "other slot, then reboot into it)");
  AddDurationOption(*push, "--wait", &o.push.wait,
                    "after the reboot, how long to wait for the bridge to run the image and its "
                    "health check to mark it good (at most 60min; 0s: do not wait; a bare "
                    "number is seconds, as dxpu pool's --wait)",
                    {{"--wait-s", DurationUnit::kSeconds}}, DurationUnit::kSeconds);
  push->footer(
      "\nExamples:\n"
      "  dxpu flash push bridge-1.4.0.dxfw --bridge 127.0.0.1:17481\n"
      "  dxpu flash push bridge-1.4.0.dxfw --bridge unix:/run/dxpu/box-a.mgmt --bridge "
      "unix:/run/dxpu/box-b.mgmt --json\n"
      "  dxpu flash push bridge-1.3.9.dxfw --bridge 127.0.0.1:17481 --allow-downgrade "
      "bridge-7-1.3.9.auth\n"
      "  dxpu flash push bridge-1.4.0.dxfw --bridge 127.0.0.1:17481 --no-reboot\n"
      "  dxpu flash push bridge-1.4.0.dxfw --bridge 127.0.0.1:17481 --wait 2min\n"
      "Running it again after an interruption resumes where each bridge stopped; a bridge that "
      "already runs the image's version is left alone (nothing to do), unless --reinstall.\n"
      "Exit status: 0 every bridge runs the image, marked good by its health check (with "
      "--no-reboot: has it committed; with --wait 0s: accepted the reboot), 1 the image or a "
      "bridge refused or failed, or fell back, or was not marked good within --wait (a line per "
      "bridge on stderr), 2 bad command line.\n");
  return push;
}

CLI::App* AddStatusCommand(CLI::App* flash, FlashOptions& o) {
  CLI::App* status = flash->add_subcommand(
      "status",
      "Show bridges' firmware: the running slot and version, each slot's image and state, "
      "the trial, the minimum version, the hardware revision and any transfer");
  AddTargetOptions(status, o.status);
  status->footer(
      "\nExamples:\n"
      "  dxpu flash status --bridge 127.0.0.1:17481\n"
      "  dxpu flash status --bridge unix:/run/dxpu/box-a.mgmt --bridge "
      "unix:/run/dxpu/box-b.mgmt --json\n"
      "Exit status: 0 every bridge answered, 1 one did not or refused, 2 bad command line.\n");
  return status;
}

}  // namespace

Command AddFlashCommand(CLI::App& parent) {
  auto o = std::make_shared<FlashOptions>();
  CLI::App* flash = parent.add_subcommand(
      "flash",
      "Bridge firmware: signing keys, signed images, a bridge's flash, and updates over the "
      "management socket (docs/firmware.md)");
  flash->require_subcommand(1);

  CLI::App* keygen = flash->add_subcommand(
      "keygen", "Make an Ed25519 signing key pair: BASE.key (secret, mode 0600) and BASE.pub");
  keygen->add_option("--out", o->out, "the files' path without extension")->required();
  keygen->add_flag("--json", o->json, "print the result as JSON");
  keygen->footer("\nExample:\n  dxpu flash keygen --out release-2026\n");

  CLI::App* sign = flash->add_subcommand(
      "sign",
      "Build a firmware image of a dxpu-bridge executable and its default configuration, "
      "signed with a secret key");
  sign->add_option("--key", o->key, "the secret key file (dxpu flash keygen)")->required();
  // --bridge is the old name: everywhere else --bridge is a bridge's management socket.
  sign->add_option("--program,--bridge", o->program, "the dxpu-bridge executable (strip it first)")
      ->required();
  sign->add_option("--config", o->config, "its default configuration (docs/bridge-config.md)")
      ->required();
  sign->add_option("--version", o->version, "the firmware version, MAJOR.MINOR.PATCH")->required();
  sign->add_option("--hw-rev", o->hw_rev, "the hardware revision it is built for")->required();
  sign->add_option("--build-id", o->build_id,
                   "a build identifier, e.g. a git commit (<= 40 "
                   "printable characters)");
  sign->add_option("--build-time", o->build_time,
                   "seconds since 1970 (default: $SOURCE_DATE_EPOCH, else now)");
  sign->add_option("--security-version", o->security_version,
                   "the anti-rollback level (default 0): raise it in an image that fixes a "
                   "vulnerability; a bridge that marked it good never runs a lower one again")
      ->capture_default_str();
  sign->add_option("--out", o->out, "the image file to write")->required();
  sign->add_flag("--json", o->json, "print the result as JSON");
  sign->footer(
      "\nExample:\n  dxpu flash sign --key release-2026.key --program dxpu-bridge --config "
      "bridge.json --version 1.4.0 --hw-rev 1 --build-id $(git rev-parse --short HEAD) --out "
      "bridge-1.4.0.dxfw\n");

  CLI::App* inspect = flash->add_subcommand(
      "inspect",
      "Show an image's header and sections; with --pub, verify its signature and "
      "payload hash (exit 1 when they do not verify)");
  inspect->add_option("IMAGE", o->image, "the image file")->required();
  inspect->add_option("--pub", o->pubs, "a trusted public key file (repeatable)");
  inspect->add_option("--hw-rev", o->hw_rev, "with --pub: the hardware revision it must be for")
      ->each([o](const std::string&) { o->hw_rev_given = true; });
  inspect->add_flag("--json", o->json, "print the result as JSON");
  inspect->footer("\nExample:\n  dxpu flash inspect bridge-1.4.0.dxfw --pub release-2026.pub\n");

  CLI::App* init = flash->add_subcommand(
      "init",
      "Make a new bridge's flash file (the factory's step): its geometry, hardware "
      "revision, identity, root key and first signed key list; with --image, slot A "
      "programmed and marked good");
  init->add_option("--flash", o->flash, "the flash file to create (refused if it exists)")
      ->required();
  init->add_option("--hw-rev", o->hw_rev, "the bridge's hardware revision")->required();
  init->add_option("--root-pub", o->root,
                   "the root public key file (dxpu flash keygen): written into the factory "
                   "block, it signs every key list the bridge trusts")
      ->required();
  init->add_option("--keys", o->key_list,
                   "the signed list of trusted image-signing keys (dxpu flash sign-keys)")
      ->required();
  init->add_option("--bridge-id", o->bridge_id,
                   "the bridge's identity, 32 hex digits (default: random; printed)");
  init->add_option("--image", o->image, "an image to program into slot A");
  init->add_option("--blocks-per-slot", o->blocks_per_slot, "erase blocks in each slot")
      ->capture_default_str();
  init->add_option("--erase-block", o->erase_block, "the erase block size, bytes")
      ->capture_default_str();
  init->add_option("--granule", o->granule, "the write granule, bytes")->capture_default_str();
  init->add_flag("--json", o->json, "print the result as JSON");
  init->footer(
      "\nExample:\n  dxpu flash init --flash bridge-7.flash --hw-rev 1 --root-pub root.pub "
      "--keys keys-1.dxkl --image bridge-1.4.0.dxfw\n");

  CLI::App* sign_keys = flash->add_subcommand(
      "sign-keys",
      "Sign a list of 1 to 4 trusted image-signing keys with the root key: what dxpu flash "
      "init writes and dxpu flash rotate-keys replaces");
  sign_keys->add_option("--root", o->root, "the root secret key file")->required();
  sign_keys->add_option("--pub", o->pubs, "a trusted public key file (1 to 4)")->required();
  sign_keys
      ->add_option("--sequence", o->sequence,
                   "the list's number: a rotation needs a higher one than the bridge's")
      ->capture_default_str();
  sign_keys->add_option("--out", o->out, "the key list file to write")->required();
  sign_keys->add_flag("--json", o->json, "print the result as JSON");
  sign_keys->footer(
      "\nExample:\n  dxpu flash sign-keys --root root.key --pub release-2026.pub --pub "
      "release-2027.pub --sequence 2 --out keys-2.dxkl\n");

  CLI::App* rotate = flash->add_subcommand(
      "rotate-keys",
      "Replace a bridge flash's trusted keys with a newer list signed by its root key "
      "(power-safe: the old list stays until the new one is whole)");
  rotate->add_option("--flash", o->flash, "the bridge's flash file")->required();
  rotate->add_option("--keys", o->key_list, "the signed key list (dxpu flash sign-keys)")
      ->required();
  rotate->add_flag("--json", o->json, "print the result as JSON");
  rotate->footer(
      "\nExample:\n  dxpu flash rotate-keys --flash bridge-7.flash --keys keys-2.dxkl\n");

  CLI::App* authorize = flash->add_subcommand(
      "authorize-downgrade",
      "Sign a downgrade authorisation: lets one bridge (its ID) take one image (its digest) "
      "below its running or minimum version, with dxpu flash push --allow-downgrade");
  authorize->add_option("--key", o->key, "a secret key the bridge trusts (as for sign)")
      ->required();
  authorize->add_option("--image", o->image, "the older image to allow")->required();
  authorize
      ->add_option("--bridge-id", o->bridge_id,
                   "the bridge's ID (32 hex digits: dxpu flash init printed it, and the "
                   "bridge logs it at start)")
      ->required();
  authorize->add_option("--out", o->out, "the authorisation file to write")->required();
  authorize->add_flag("--json", o->json, "print the result as JSON");
  authorize->footer(
      "\nExample:\n  dxpu flash authorize-downgrade --key release-2026.key --image "
      "bridge-1.3.9.dxfw --bridge-id 6f1c0d2e9a7b44c1a0b3d5e7f9012345 --out bridge-7-1.3.9.auth\n");

  CLI::App* push = AddPushCommand(flash, *o);
  CLI::App* status = AddStatusCommand(flash, *o);

  flash->footer(
      "\nExamples:\n"
      "  dxpu flash keygen --out release-2026\n"
      "  dxpu flash sign --key release-2026.key --program dxpu-bridge --config bridge.json "
      "--version 1.4.0 --hw-rev 1 --out bridge-1.4.0.dxfw\n"
      "  dxpu flash inspect bridge-1.4.0.dxfw --pub release-2026.pub\n"
      "  dxpu flash sign-keys --root root.key --pub release-2026.pub --out keys-1.dxkl\n"
      "  dxpu flash init --flash bridge-7.flash --hw-rev 1 --root-pub root.pub --keys "
      "keys-1.dxkl --image bridge-1.4.0.dxfw\n"
      "  dxpu flash push bridge-1.4.0.dxfw --bridge 127.0.0.1:17481\n"
      "  dxpu flash status --bridge 127.0.0.1:17481\n"
      "Exit status: 0 done, 1 refused or failed (the reason on stderr; with --json an "
      "{\"error\", \"message\"} object on stdout), 2 bad command line.\n");

  return {flash,
          [o, keygen, sign, inspect, init, sign_keys, rotate, authorize, push, status]() -> int {
            if (keygen->parsed()) return RunKeygen(*o);
            if (sign_keys->parsed()) return RunSignKeys(*o);
            if (rotate->parsed()) return RunRotateKeys(*o);
            if (authorize->parsed()) return RunAuthorizeDowngrade(*o);
            if (sign->parsed()) return RunSign(*o);
            if (inspect->parsed()) return RunInspect(*o);
            if (init->parsed()) return RunInit(*o);
            if (push->parsed()) return RunPush(*o);
            if (status->parsed()) return RunFlashStatus(o->status);
            return kExitUsage;
          }};
}

}  // namespace dxpu::cli
