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
  f.geometry = {4096, 64, 3 + 2 * 4};
  f.hw_revision = 7;
  f.blocks_per_slot = 4;
  f.keys = {TestKey().public_key};
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
