// flashed_bridge.cc - a flashed bridge under its boot loader (flashed_bridge.h).
#include "flashed_bridge.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "bridge-fw/firmware/flash_device.h"

namespace dxpu::firmware::testing {
namespace {

constexpr const char* kCutLine = "power lost at a flash operation";

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string ReadText(const std::string& path) {
  const std::vector<uint8_t> b = ReadFile(path);
  return {b.begin(), b.end()};
}

}  // namespace

FlashedBridge::FlashedBridge(std::string dir, std::string config_json)
    : dir_(std::move(dir)), config_(std::move(config_json)) {
  std::filesystem::create_directories(path("work"));
  const std::string stripped = path("dxpu-bridge");
  const std::string strip =
      fmt::format("objcopy --strip-debug '{}' '{}'", DXPU_BRIDGE_BIN, stripped);
  // NOLINTNEXTLINE(cert-env33-c,concurrency-mt-unsafe): test setup, a fixed command
  exe_ = std::system(strip.c_str()) == 0 ? ReadFile(stripped) : ReadFile(DXPU_BRIDGE_BIN);
  if (exe_.empty()) throw std::runtime_error("cannot read " DXPU_BRIDGE_BIN);
  MakeFlash();
}

void FlashedBridge::MakeFlash() const {
  std::filesystem::remove(path("flash"));
  FactoryInfo f;
  f.hw_revision = SpecOf(kFlashedV1).hw_revision;
  f.blocks_per_slot = static_cast<uint32_t>((exe_.size() + config_.size()) / kEraseBlock + 2);
  f.geometry = {kEraseBlock, kGranule, kFirstSlotBlock + 2 * f.blocks_per_slot};
  f.bridge_id = TestBridgeId();
  f.root_key = RootKey().public_key;
  auto flash = FlashDevice::Create(path("flash"), f, TestKeyList());
  if (!flash.ok()) throw std::runtime_error(flash.error().message);
  if (FirmwareResult<Ok> r = InstallGood(*flash.value(), Slot::kA, Image(kFlashedV1)); !r.ok())
    throw std::runtime_error(r.error().message);
}

std::vector<uint8_t> FlashedBridge::Image(FirmwareVersion version, const KeyPair& key,
                                          const std::string& config_json) const {
  const std::string& config = config_json.empty() ? config_ : config_json;
  ImageSpec spec = SpecOf(version);
  spec.build_id = "flashed-bridge-" + version.ToString();
  spec.sections = {{SectionType::kExecutable, "dxpu-bridge", exe_},
                   {SectionType::kConfig, "bridge.json", {config.begin(), config.end()}}};
  FirmwareResult<std::vector<uint8_t>> image = BuildImage(spec, key.secret_key);
  if (!image.ok()) throw std::runtime_error(image.error().message);
  return std::move(image).value();
}

std::string FlashedBridge::ImageFile(const std::string& name,
                                     const std::vector<uint8_t>& image) const {
  std::ofstream out(path(name), std::ios::binary);
  out.write(reinterpret_cast<const char*>(image.data()),
            static_cast<std::streamsize>(image.size()));
  return path(name);
}

std::unique_ptr<test::ChildProcess> FlashedBridge::Boot(
    const std::vector<std::string>& bridge_args) const {
  std::vector<std::string> argv = {
      DXPU_BOOT_BIN,     "--flash", path("flash"), "--work-dir",     path("work"),
      "--restart-delay", "100ms",   "--",          "--health-delay", "300ms"};
  argv.insert(argv.end(), bridge_args.begin(), bridge_args.end());
  auto p = std::make_unique<test::ChildProcess>(argv, path("boot.log"));
  p->Start();
  return p;
}

std::string FlashedBridge::BootLog() const {
  const std::string text = ReadText(path("boot.log"));
  return text.size() > 6000 ? text.substr(text.size() - 6000) : text;
}

size_t FlashedBridge::PowerCutsLogged() const {
  const std::string text = ReadText(path("boot.log"));
  size_t n = 0;
  for (size_t at = text.find(kCutLine); at != std::string::npos; at = text.find(kCutLine, at + 1))
    ++n;
  return n;
}

}  // namespace dxpu::firmware::testing
