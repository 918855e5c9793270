// firmware_testutil.cc - the firmware tests' shared pieces (firmware_testutil.h).
#include "firmware_testutil.h"

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/slot_writer.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace dxpu::firmware::testing {

const KeyPair& TestKey() {
  static const KeyPair key = GenerateKeyPair();
  return key;
}

const KeyPair& OtherKey() {
  static const KeyPair key = GenerateKeyPair();
  return key;
}

const KeyPair& RootKey() {
  static const KeyPair key = GenerateKeyPair();
  return key;
}

std::vector<uint8_t> TestKeyList(const std::vector<PublicKey>& keys, uint32_t sequence,
                                 const KeyPair& root) {
  KeyList list;
  list.sequence = sequence;
  list.keys = keys.empty() ? std::vector<PublicKey>{TestKey().public_key} : keys;
  FirmwareResult<std::vector<uint8_t>> b = SignKeyList(list, root.secret_key);
  if (!b.ok()) throw std::runtime_error(b.error().message);
  return std::move(b).value();
}

BridgeId TestBridgeId() {
  return {0xb1, 0xd9, 0xe0, 0x01, 0x02, 0x03, 0x04, 0x05,
          0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d};
}

ImageSpec SpecOf(FirmwareVersion version, size_t exe_bytes, uint32_t seed) {
  ImageSpec spec;
  spec.version = version;
  spec.hw_revision = 7;
  spec.build_time = 1'796'000'000;
  spec.build_id = "test-" + std::to_string(seed);
  std::mt19937 rng(seed);
  std::vector<uint8_t> exe(exe_bytes);
  for (uint8_t& b : exe) b = static_cast<uint8_t>(rng());
  const std::string config = R"({"node_id": "0xb0b", "links": []})";
  spec.sections = {{SectionType::kExecutable, "dxpu-bridge", exe},
                   {SectionType::kConfig, "bridge.json", {config.begin(), config.end()}}};
  return spec;
}

std::vector<uint8_t> SignedImage(FirmwareVersion version, size_t exe_bytes, uint32_t seed,
                                 const KeyPair& key) {
  FirmwareResult<std::vector<uint8_t>> image =
      BuildImage(SpecOf(version, exe_bytes, seed), key.secret_key);
  if (!image.ok()) throw std::runtime_error(image.error().message);
  return std::move(image).value();
}

std::vector<uint8_t> SecureImage(FirmwareVersion version, uint32_t security_version,
                                 uint32_t seed) {
  ImageSpec spec = SpecOf(version, 3000, seed);
  spec.security_version = security_version;
  FirmwareResult<std::vector<uint8_t>> image = BuildImage(spec, TestKey().secret_key);
  if (!image.ok()) throw std::runtime_error(image.error().message);
  return std::move(image).value();
}

FirmwareResult<Ok> InstallGood(FlashDevice& flash, Slot slot, const std::vector<uint8_t>& image) {
  FirmwareResult<SlotWriter> w = SlotWriter::Begin(flash, slot, OtherSlot(slot), image, false);
  if (!w.ok()) return w.error();
  if (FirmwareResult<Ok> a = w.value().Append(image); !a.ok()) return a;
  if (FirmwareResult<ImageHeader> f = w.value().Finish(); !f.ok()) return f.error();
  FirmwareResult<std::optional<BootState>> state = ReadBootState(flash);
  if (!state.ok()) return state.error();
  return WriteBootState(flash, MarkGood(state.value().value_or(BootState{}), slot));
}

FactoryInfo SmallFactory() {
  FactoryInfo f;
  f.geometry = {4096, 64, kFirstSlotBlock + 2 * 4};
  f.hw_revision = 7;
  f.blocks_per_slot = 4;
  f.bridge_id = TestBridgeId();
  f.root_key = RootKey().public_key;
  return f;
}

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): test setup
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/dxpu-fw-test.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp");
  dir_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace dxpu::firmware::testing
