// boot_loader.cc - choosing a slot and extracting its bridge (boot_loader.h).
#include "bridge-fw/boot/boot_loader.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/flash_device.h"
#include "link/unique_fd.h"
#include "util/errno_text.h"

namespace dxpu::firmware {

namespace {

namespace fs = std::filesystem;

FirmwareError ExtractError(const std::string& what, int err) {
  return {"extract", fmt::format("{}: {}", what, util::ErrnoText(err))};
}

// A temporary file, unlinked when this goes out of scope unless Keep() was called.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void Keep() { path_.clear(); }

 private:
  std::string path_;
};

FirmwareResult<Ok> WriteAll(int fd, std::span<const uint8_t> data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ExtractError("writing " + path, n < 0 ? errno : EIO);
    data = data.subspan(static_cast<size_t>(n));
  }
  return Ok{};
}

// A fall-back: the trial ended without success, or the active slot could not boot.
bool IsFallBack(const std::optional<BootState>& before, const BootChoice& c) {
  if (!before || c.trial) return false;
  const bool trial_ended = before->trial.has_value();
  const bool active_lost = before->active && c.slot != before->active;
  return trial_ended || active_lost;
}

void LogNotes(const std::optional<BootState>& before, const BootChoice& c) {
  const spdlog::level::level_enum level =
      IsFallBack(before, c) ? spdlog::level::warn : spdlog::level::info;
  for (const std::string& note : c.notes) spdlog::log(level, "boot: {}", note);
}

const Section* FindSection(const std::vector<Section>& sections, SectionType type) {
  for (const Section& s : sections)
    if (s.type == type) return &s;
  return nullptr;
}

struct Chosen {
  Slot slot;
  bool trial;
  FirmwareVersion version;
  std::vector<std::string> notes;
};

// Reads the state, checks the slots, chooses, and writes the state first when a slot boots.
FirmwareResult<Chosen> Choose(FlashDevice& flash) {
  FirmwareResult<std::optional<BootState>> state = ReadBootState(flash);
  if (!state.ok()) return state.error();
  const std::array<SlotImage, 2> slots = {CheckSlot(flash, Slot::kA), CheckSlot(flash, Slot::kB)};
  BootChoice c = ChooseBoot(state.value(), slots);
  LogNotes(state.value(), c);
  if (!c.slot) return FirmwareError{kNoBootableImage, c.reason};
  if (c.write_state) {
    FirmwareResult<Ok> w = WriteBootState(flash, c.state);
    if (!w.ok()) return w.error();
  }
  return Chosen{*c.slot, c.trial, slots[SlotIndex(*c.slot)].version, std::move(c.notes)};
}

FirmwareResult<Ok> Extract(const VerifiedImage& image, const BootPlan& plan) {
  const Section* exe = FindSection(image.sections, SectionType::kExecutable);
  const Section* config = FindSection(image.sections, SectionType::kConfig);
  if (exe == nullptr || config == nullptr)
    return FirmwareError{"bad-payload", "the image has no executable or no configuration"};
  const fs::path dir = fs::path(plan.executable).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return FirmwareError{"extract", fmt::format("creating {}: {}", dir.string(), ec.message())};
  if (::chmod(dir.c_str(), 0700) != 0) return ExtractError("chmod " + dir.string(), errno);
  FirmwareResult<Ok> w = WriteFileAtomically(plan.executable, exe->data, kBootExecutableMode);
  if (!w.ok()) return w;
  return WriteFileAtomically(plan.config, config->data, kBootConfigMode);
}

}  // namespace

std::string SlotWorkDir(const std::string& work_dir, Slot slot) {
  return (fs::path(work_dir) / fmt::format("slot-{}", SlotName(slot))).string();
}

FirmwareResult<Ok> WriteFileAtomically(const std::string& path, std::span<const uint8_t> data,
                                       mode_t mode) {
  const fs::path target(path);
  std::string temp =
      (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  link::UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!fd.valid())
    return ExtractError("creating a file in " + target.parent_path().string(), errno);
  TempFile guard(temp);
  FirmwareResult<Ok> w = WriteAll(fd.get(), data, temp);
  if (!w.ok()) return w;
  if (::fchmod(fd.get(), mode) != 0) return ExtractError("chmod " + temp, errno);
  // No fsync: the files are extracted from the flash again at every boot.
  if (::close(fd.Release()) != 0) return ExtractError("closing " + temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0)
    return ExtractError(fmt::format("renaming {} to {}", temp, path), errno);
  guard.Keep();
  return Ok{};
}

FirmwareResult<BootPlan> PrepareBoot(const std::string& flash_path, const std::string& work_dir) {
  FirmwareResult<std::unique_ptr<FlashDevice>> opened = FlashDevice::Open(flash_path);
  if (!opened.ok()) return opened.error();
  std::unique_ptr<FlashDevice> flash = std::move(opened).value();
  FirmwareResult<Chosen> chosen = Choose(*flash);
  if (!chosen.ok()) return chosen.error();
  Chosen& c = chosen.value();
  FirmwareResult<VerifiedImage> image = ReadSlotImage(*flash, c.slot);
  flash.reset();  // closed: the bridge opens it itself
  if (!image.ok()) return image.error();
  if (image.value().header.version != c.version)
    return FirmwareError{"slot-changed",
                         fmt::format("slot {} changed while it was read", SlotName(c.slot))};

  std::error_code ec;
  const fs::path dir = fs::absolute(SlotWorkDir(work_dir, c.slot), ec);
  if (ec) return FirmwareError{"extract", fmt::format("{}: {}", work_dir, ec.message())};
  BootPlan plan;
  plan.slot = c.slot;
  plan.trial = c.trial;
  plan.version = c.version;
  plan.build_id = image.value().header.build_id;
  plan.executable = (dir / kBootExecutableName).string();
  plan.config = (dir / kBootConfigName).string();
  plan.notes = std::move(c.notes);
  FirmwareResult<Ok> x = Extract(image.value(), plan);
  if (!x.ok()) return x.error();
  return plan;
}

std::optional<std::string> ConfigOverride(const std::string& config,
                                          const std::vector<std::string>& bridge_args) {
  const char* const why =
      "the image's signed configuration is the bridge's, and only a signed image replaces it "
      "(dxpu flash sign --config, then dxpu flash push)";
  if (!config.empty()) return fmt::format("--config {}: refused: {}", config, why);
  for (const std::string& a : bridge_args) {
    if (a == "-c" || a.starts_with("-c") || a == "--config" || a.starts_with("--config="))
      return fmt::format("bridge argument '{}': refused: {}", a, why);
  }
  return std::nullopt;
}

}  // namespace dxpu::firmware
