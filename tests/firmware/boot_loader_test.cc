// boot_loader_test.cc - the boot loader (bridge-fw/boot/): PrepareBoot's choice, boot state and
// extracted files; then the dxpu-boot process itself, running small shell scripts as the
// bridge: a reboot asked for, a trial that keeps failing, SIGTERM, nothing valid to boot.
#include "bridge-fw/boot/boot_loader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bridge-fw/firmware/boot_protocol.h"
#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/slot_writer.h"
#include "firmware_testutil.h"

namespace dxpu::firmware {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::RootKey;
using testing::ScratchDir;
using testing::SmallFactory;
using testing::TestBridgeId;
using testing::TestKey;
using testing::TestKeyList;

const FirmwareVersion kV1 = FirmwareVersion::Of(1, 0, 0);
const FirmwareVersion kV2 = FirmwareVersion::Of(1, 1, 0);
const std::string kConfig = R"({"node_id": "0xb0b", "links": []})";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// A bridge stand-in: appends its arguments to `log`, then runs `body`.
std::string Script(const std::string& log, const std::string& body) {
  return "#!/bin/sh\necho \"$@\" >> '" + log + "'\n" + body + "\n";
}

std::vector<uint8_t> Image(FirmwareVersion version, const std::string& exe,
                           const std::string& exe_name = "dxpu-bridge",
                           const std::string& config_name = "bridge.json") {
  ImageSpec spec;
  spec.version = version;
  spec.hw_revision = SmallFactory().hw_revision;
  spec.build_time = 1'796'000'000;
  spec.build_id = "boot-test-" + version.ToString();
  spec.sections = {{SectionType::kExecutable, exe_name, {exe.begin(), exe.end()}},
                   {SectionType::kConfig, config_name, {kConfig.begin(), kConfig.end()}}};
  FirmwareResult<std::vector<uint8_t>> image = BuildImage(spec, TestKey().secret_key);
  EXPECT_TRUE(image.ok()) << image.error().message;
  return image.ok() ? image.value() : std::vector<uint8_t>{};
}

// Writes `image` into `slot` (which is then on trial), as an update does.
void Install(FlashDevice& f, Slot slot, const std::vector<uint8_t>& image) {
  FirmwareResult<SlotWriter> w = SlotWriter::Begin(f, slot, OtherSlot(slot), image, false);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(w.value().Append(image).ok());
  FirmwareResult<ImageHeader> h = w.value().Finish();
  ASSERT_TRUE(h.ok()) << h.error().message;
}

// Installs and marks good, as `dxpu flash init --image` leaves slot A.
void InstallGoodImage(FlashDevice& f, Slot slot, const std::vector<uint8_t>& image) {
  FirmwareResult<Ok> r = testing::InstallGood(f, slot, image);
  ASSERT_TRUE(r.ok()) << r.error().message;
}

BootState StateOf(const std::string& flash) {
  auto f = FlashDevice::Open(flash);
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return {};
  FirmwareResult<std::optional<BootState>> s = ReadBootState(*f.value());
  EXPECT_TRUE(s.ok() && s.value().has_value());
  return s.ok() ? s.value().value_or(BootState{}) : BootState{};
}

// Flips one bit of the payload of the image in `slot`: its hash no longer matches.
void CorruptPayload(const std::string& flash, Slot slot) {
  const FlashLayout layout(SmallFactory());
  std::fstream io(flash, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(layout.slot_offset(slot) + kHeaderBytes + 20);
  io.seekg(at);
  char c = 0;
  io.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  io.seekp(at);
  io.write(&c, 1);
  ASSERT_TRUE(io.good());
}

class BootLoaderTest : public ::testing::Test {
 protected:
  // A new flash; `fill` writes its slots.
  template <typename Fill>
  void MakeFlash(Fill fill) {
    FirmwareResult<std::unique_ptr<FlashDevice>> f =
        FlashDevice::Create(flash_, SmallFactory(), TestKeyList());
    ASSERT_TRUE(f.ok()) << f.error().message;
    fill(*f.value());
  }
  std::string ExitScript(int status) const {
    return Script(runs_, "exit " + std::to_string(status));
  }
  std::string SlotFile(Slot slot, const char* name) const {
    return (fs::path(SlotWorkDir(work_, slot)) / name).string();
  }
  // What the script logs for one boot of `slot`.
  std::string RunLine(Slot slot, const std::string& extra = "") const {
    return "-c " + SlotFile(slot, kBootConfigName) + " --flash " + flash_ + " --slot " +
           std::string(SlotName(slot)) + extra;
  }

  ScratchDir dir_;
  std::string flash_ = fs::absolute(dir_.path("flash")).string();
  std::string work_ = fs::absolute(dir_.path("work")).string();
  std::string runs_ = fs::absolute(dir_.path("runs.log")).string();
};

TEST_F(BootLoaderTest, PrepareExtractsTheChosenSlotsExecutableAndConfiguration) {
  const std::string script = ExitScript(0);
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, script)); });
  for (int round = 0; round < 2; ++round) {  // the second time over the first's files
    FirmwareResult<BootPlan> plan = PrepareBoot(flash_, work_);
    ASSERT_TRUE(plan.ok()) << plan.error().name << ": " << plan.error().message;
    const BootPlan& p = plan.value();
    EXPECT_EQ(p.slot, Slot::kA);
    EXPECT_FALSE(p.trial);
    EXPECT_EQ(p.version, kV1);
    EXPECT_EQ(p.build_id, "boot-test-1.0.0");
    EXPECT_EQ(p.executable, work_ + "/slot-A/dxpu-bridge");
    EXPECT_EQ(p.config, work_ + "/slot-A/bridge.json");
    EXPECT_EQ(ReadFile(p.executable), script);
    EXPECT_EQ(ModeOf(p.executable), 0700U);
    EXPECT_EQ(ReadFile(p.config), kConfig);
    EXPECT_EQ(ModeOf(p.config), 0600U);
    EXPECT_EQ(ModeOf(SlotWorkDir(work_, Slot::kA)), 0700U);
    // Nothing else: no temporary file left, nothing for slot B.
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(SlotWorkDir(work_, Slot::kA)))
      names.push_back(e.path().filename().string());
    std::ranges::sort(names);
    EXPECT_EQ(names, (std::vector<std::string>{"bridge.json", "dxpu-bridge"}));
    EXPECT_FALSE(fs::exists(SlotWorkDir(work_, Slot::kB)));
  }
}

TEST_F(BootLoaderTest, SectionNamesAreNeverPaths) {
  MakeFlash([&](FlashDevice& f) {
    InstallGoodImage(f, Slot::kA,
                     Image(kV1, ExitScript(0), "../../escape-exe", "/tmp/escape.json"));
  });
  FirmwareResult<BootPlan> plan = PrepareBoot(flash_, work_);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan.value().executable, SlotFile(Slot::kA, kBootExecutableName));
  EXPECT_EQ(ReadFile(plan.value().config), kConfig);
  EXPECT_FALSE(fs::exists(dir_.path("escape-exe")));
  EXPECT_FALSE(fs::exists(fs::path(work_) / "escape-exe"));
}

TEST_F(BootLoaderTest, ATrialUsesUpATryPerPrepareThenTheOtherSlotBoots) {
  MakeFlash([&](FlashDevice& f) {
    InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0)));
    Install(f, Slot::kB, Image(kV2, ExitScript(1)));
  });
  ASSERT_EQ(StateOf(flash_).tries_left, kTrialTries);
  for (int i = 1; i <= kTrialTries; ++i) {
    FirmwareResult<BootPlan> plan = PrepareBoot(flash_, work_);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan.value().slot, Slot::kB) << "boot " << i;
    EXPECT_TRUE(plan.value().trial);
    EXPECT_EQ(plan.value().version, kV2);
    EXPECT_EQ(plan.value().executable, SlotFile(Slot::kB, kBootExecutableName));
    // Written before the bridge runs: a bridge that dies now has used this try.
    EXPECT_EQ(StateOf(flash_).tries_left, kTrialTries - i);
  }
  FirmwareResult<BootPlan> plan = PrepareBoot(flash_, work_);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan.value().slot, Slot::kA);
  EXPECT_FALSE(plan.value().trial);
  EXPECT_EQ(plan.value().version, kV1);
  ASSERT_FALSE(plan.value().notes.empty());
  EXPECT_TRUE(Contains(plan.value().notes[0], "slot B failed its trial (no tries left)"));
  const BootState s = StateOf(flash_);
  EXPECT_EQ(s.state_of(Slot::kB), SlotState::kBad);
  EXPECT_FALSE(s.trial);
  EXPECT_EQ(s.active, Slot::kA);
}

TEST_F(BootLoaderTest, NothingValidIsAnErrorNamingEachSlotsProblem) {
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0))); });
  CorruptPayload(flash_, Slot::kA);
  FirmwareResult<BootPlan> plan = PrepareBoot(flash_, work_);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().name, kNoBootableImage);
  EXPECT_TRUE(Contains(plan.error().message, "slot A: bad-hash")) << plan.error().message;
  EXPECT_TRUE(Contains(plan.error().message, "slot B: empty")) << plan.error().message;
  EXPECT_FALSE(fs::exists(work_));  // nothing extracted
}

TEST_F(BootLoaderTest, AMissingOrBrokenFlashIsAnError) {
  FirmwareResult<BootPlan> plan = PrepareBoot(dir_.path("no-such-flash"), work_);
  ASSERT_FALSE(plan.ok());
  EXPECT_FALSE(plan.error().name.empty());
  std::ofstream(dir_.path("garbage")) << "not a flash";
  plan = PrepareBoot(dir_.path("garbage"), work_);
  ASSERT_FALSE(plan.ok());
  EXPECT_FALSE(plan.error().message.empty());
}

TEST_F(BootLoaderTest, WriteFileAtomicallyFailsCleanly) {
  const std::vector<uint8_t> data = {1, 2, 3};
  FirmwareResult<Ok> w = WriteFileAtomically(dir_.path("missing-dir/file"), data, 0600);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().name, "extract");
  fs::create_directories(dir_.path("d/file"));  // a directory where the file should go
  w = WriteFileAtomically(dir_.path("d/file"), data, 0600);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().name, "extract");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path("d")), fs::directory_iterator()), 1)
      << "the temporary file is removed";
}

// ---- the dxpu-boot process ----

// dxpu-boot as a child process, its stdout and stderr in files; killed and reaped at the end.
class BootProcess {
 public:
  BootProcess(const ScratchDir& dir, std::vector<std::string> args)
      : out_(dir.path("boot.out")), err_(dir.path("boot.err")) {
    args.insert(args.begin(), DXPU_BOOT_EXE);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  BootProcess(const BootProcess&) = delete;
  BootProcess& operator=(const BootProcess&) = delete;
  ~BootProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The wait status, or nullopt if it is still running after `timeout`.
  std::optional<int> Wait(milliseconds timeout = milliseconds(20'000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return std::nullopt;
  }
  // The exit status; -1 when it did not exit by itself in time or was killed.
  int ExitStatus(milliseconds timeout = milliseconds(20'000)) {
    const std::optional<int> status = Wait(timeout);
    return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }
  void Signal(int sig) const { kill(pid_, sig); }
  std::string out() const { return ReadFile(out_); }
  std::string err() const { return ReadFile(err_); }

 private:
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
};

bool WaitForLine(const std::string& path, const std::string& line) {
  for (int i = 0; i < 2000; ++i) {
    for (const std::string& l : Lines(path))
      if (l == line) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

TEST_F(BootLoaderTest, ProcessARebootAskedForBootsAgainAtOnce) {
  // Exits 75 the first time (asking for a reboot), 0 the second.
  const std::string mark = dir_.path("rebooted");
  const std::string script =
      Script(runs_, "if [ -e '" + mark + "' ]; then exit 0; fi\n: > '" + mark + "'\nexit " +
                        std::to_string(kRebootExitStatus));
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, script)); });
  // A restart delay of a minute: only a reboot asked for may skip it.
  BootProcess boot(dir_, {"--flash", flash_, "--work-dir", work_, "--max-boots", "2",
                          "--restart-delay", "60s", "--", "--extra", "x"});
  EXPECT_EQ(boot.ExitStatus(), 0) << boot.err();
  EXPECT_EQ(Lines(runs_), (std::vector<std::string>{RunLine(Slot::kA, " --extra x"),
                                                    RunLine(Slot::kA, " --extra x")}));
  EXPECT_TRUE(Contains(boot.err(), "reboot requested")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "exited with status 0 without being asked to stop"))
      << boot.err();
}

TEST_F(BootLoaderTest, ProcessAFailingTrialFallsBackAfterItsTries) {
  MakeFlash([&](FlashDevice& f) {
    InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0)));
    Install(f, Slot::kB, Image(kV2, ExitScript(1)));
  });
  BootProcess boot(
      dir_, {"--flash", flash_, "--work-dir", work_, "--max-boots", "4", "--restart-delay", "0s"});
  EXPECT_EQ(boot.ExitStatus(), 0) << boot.err();
  EXPECT_EQ(Lines(runs_), (std::vector<std::string>{RunLine(Slot::kB), RunLine(Slot::kB),
                                                    RunLine(Slot::kB), RunLine(Slot::kA)}));
  EXPECT_TRUE(Contains(boot.err(), "exited with status 1")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "choosing again in 0s")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "warning dxpu-boot: boot: slot B failed its trial"))
      << boot.err();
  const BootState s = StateOf(flash_);
  EXPECT_EQ(s.state_of(Slot::kB), SlotState::kBad);
  EXPECT_EQ(s.active, Slot::kA);
}

TEST_F(BootLoaderTest, ProcessATrialImageThatCannotExecuteFallsBackToo) {
  MakeFlash([&](FlashDevice& f) {
    InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0)));
    Install(f, Slot::kB, Image(kV2, "not an executable"));
  });
  BootProcess boot(
      dir_, {"--flash", flash_, "--work-dir", work_, "--max-boots", "4", "--restart-delay", "0s"});
  EXPECT_EQ(boot.ExitStatus(), 0) << boot.err();
  EXPECT_EQ(Lines(runs_), (std::vector<std::string>{RunLine(Slot::kA)}));
  EXPECT_TRUE(Contains(boot.err(), "cannot start " + SlotFile(Slot::kB, kBootExecutableName)))
      << boot.err();
}

TEST_F(BootLoaderTest, ProcessSigtermReachesTheBridgeThenDxpuBootExitsZero) {
  const std::string script = Script(runs_, "trap 'echo term >> \"" + runs_ +
                                               "\"; kill $p 2>/dev/null; exit 0' TERM\n"
                                               "sleep 30 & p=$!\n"
                                               "echo ready >> '" +
                                               runs_ + "'\nwait $p\nexit 3");
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, script)); });
  BootProcess boot(dir_, {"--flash", flash_, "--work-dir", work_, "--restart-delay", "0s"});
  ASSERT_TRUE(WaitForLine(runs_, "ready")) << boot.err();
  boot.Signal(SIGTERM);
  EXPECT_EQ(boot.ExitStatus(), 0) << boot.err();
  EXPECT_EQ(Lines(runs_), (std::vector<std::string>{RunLine(Slot::kA), "ready", "term"}));
  EXPECT_TRUE(Contains(boot.err(), "SIGTERM: passing it to the bridge")) << boot.err();
}

TEST_F(BootLoaderTest, ProcessNothingValidExitsOneWithTheReason) {
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0))); });
  CorruptPayload(flash_, Slot::kA);
  // --restart-delay-ms, the old spelling of --restart-delay (milliseconds), is still taken.
  BootProcess boot(dir_, {"--flash", flash_, "--work-dir", work_, "--restart-delay-ms", "0"});
  EXPECT_EQ(boot.ExitStatus(), 1) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "critical")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "slot A: bad-hash")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "slot B: empty")) << boot.err();
  EXPECT_FALSE(fs::exists(runs_));  // nothing ran
}

TEST_F(BootLoaderTest, ProcessRunsTheSignedConfigurationWithExtraArguments) {
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0))); });
  BootProcess boot(dir_, {"--flash", flash_, "--work-dir", work_, "--max-boots", "1", "--",
                          "--log-level", "debug"});
  EXPECT_EQ(boot.ExitStatus(), 0) << boot.err();
  EXPECT_EQ(Lines(runs_), (std::vector<std::string>{RunLine(Slot::kA, " --log-level debug")}));
}

TEST_F(BootLoaderTest, ProcessRefusesToOverrideTheSignedConfiguration) {
  // The image carries a signed configuration: neither --config nor a configuration option
  // passed on to the bridge replaces it (issue 32 item 5). Nothing runs, nothing is written.
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0))); });
  const std::string config = fs::absolute(dir_.path("mine.json")).string();
  std::ofstream(config) << "{}";
  const BootState before = StateOf(flash_);
  const std::vector<std::vector<std::string>> overrides = {{"--config", config},
                                                           {"--", "-c", config},
                                                           {"--", "--config=" + config},
                                                           {"--", "-c" + config}};
  for (const std::vector<std::string>& extra : overrides) {
    std::vector<std::string> args = {"--flash", flash_, "--work-dir", work_, "--max-boots", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    BootProcess boot(dir_, args);
    EXPECT_EQ(boot.ExitStatus(), 2) << extra.back();
    EXPECT_TRUE(Contains(boot.err(), "refused: the image's signed configuration is the bridge's"))
        << boot.err();
  }
  EXPECT_FALSE(fs::exists(runs_));
  EXPECT_TRUE(StateOf(flash_).SameAs(before));
}

TEST_F(BootLoaderTest, ProcessRefusesAKeyListTheRootKeyDidNotSign) {
  MakeFlash([&](FlashDevice& f) { InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0))); });
  // The list in block 3 replaced by one an attacker signed with their own key.
  const std::vector<uint8_t> forged =
      TestKeyList({testing::OtherKey().public_key}, 9, testing::OtherKey());
  {
    std::fstream io(flash_, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(kFirstKeyListBlock) * SmallFactory().geometry.erase_block);
    io.write(reinterpret_cast<const char*>(forged.data()),
             static_cast<std::streamsize>(forged.size()));
    ASSERT_TRUE(io.good());
  }
  BootProcess boot(dir_, {"--flash", flash_, "--work-dir", work_, "--restart-delay-ms", "0"});
  EXPECT_EQ(boot.ExitStatus(), 1) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "critical")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "bad-key-list: ")) << boot.err();
  EXPECT_TRUE(Contains(boot.err(), "no list of trusted keys signed by the root key")) << boot.err();
  EXPECT_FALSE(fs::exists(runs_));
}

TEST_F(BootLoaderTest, ProcessOncePrintsThePlanWithoutRunningIt) {
  MakeFlash([&](FlashDevice& f) {
    InstallGoodImage(f, Slot::kA, Image(kV1, ExitScript(0)));
    Install(f, Slot::kB, Image(kV2, ExitScript(0)));
  });
  BootProcess json(dir_, {"--flash", flash_, "--work-dir", work_, "--once", "--json"});
  ASSERT_EQ(json.ExitStatus(), 0) << json.err();
  const nlohmann::json plan = nlohmann::json::parse(json.out());
  EXPECT_EQ(plan["slot"], "B");
  EXPECT_EQ(plan["trial"], true);
  EXPECT_EQ(plan["version"], "1.1.0");
  EXPECT_EQ(plan["executable"], SlotFile(Slot::kB, kBootExecutableName));
  EXPECT_EQ(plan["config"], SlotFile(Slot::kB, kBootConfigName));
  EXPECT_FALSE(fs::exists(runs_));
  EXPECT_EQ(StateOf(flash_).tries_left, kTrialTries - 1);  // a real prepare: a try used

  BootProcess text(dir_, {"--flash", flash_, "--work-dir", work_, "--once"});
  ASSERT_EQ(text.ExitStatus(), 0) << text.err();
  EXPECT_TRUE(Contains(text.out(), "slot: B\ntrial: yes\nversion: 1.1.0\n")) << text.out();
  EXPECT_TRUE(Contains(text.out(), "executable: " + SlotFile(Slot::kB, kBootExecutableName)));
}

TEST_F(BootLoaderTest, ProcessBadUsageExitsTwo) {
  BootProcess boot(dir_, {"--work-dir", work_});
  EXPECT_EQ(boot.ExitStatus(), 2);
  EXPECT_TRUE(Contains(boot.err(), "--flash")) << boot.err();
}

}  // namespace
}  // namespace dxpu::firmware
