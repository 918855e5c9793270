// dxpu_bridge_main.cc - the dxpu-bridge daemon: the GPU box's side of DxPU (docs/bridge.md,
// docs/bridge-config.md).
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "bridge-fw/bridge_config.h"
#include "bridge-fw/bridge_daemon.h"
#include "bridge-fw/firmware/boot_protocol.h"
#include "bridge-fw/firmware/firmware_service.h"
#include "lib/cli/help_formatter.h"
#include "lib/cli/options.h"
#include "rtl-sim/datapath_choice.h"

namespace {

// %j: the log message as a JSON string body (quotes, backslashes and control characters
// escaped), so that a JSON log line stays one valid JSON object whatever the message says.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    for (const char c : msg.payload) {
      switch (c) {
        case '"':
          dest.append(std::string_view("\\\""));
          break;
        case '\\':
          dest.append(std::string_view("\\\\"));
          break;
        case '\n':
          dest.append(std::string_view("\\n"));
          break;
        case '\t':
          dest.append(std::string_view("\\t"));
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(dest), "\\u{:04x}", static_cast<unsigned>(c));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

void SetUpLogging(const dxpu::bridge::LogConfig& log) {
  spdlog::set_level(log.level);
  if (log.format == dxpu::bridge::LogFormat::kJson) {
    auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    f->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","component":"dxpu-bridge","msg":"%j"})");
    spdlog::set_formatter(std::move(f));
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ %v");
  }
}

int Main(int argc, char** argv) {
  CLI::App app{
      "dxpu-bridge: the GPU box's DxPU bridge. Terminates the DxFP sessions of the hosts that\n"
      "borrow this box's GPUs, translates their TLPs onto the box's PCIe and enforces who owns\n"
      "which device. Devices are assigned, released (reset and scrubbed) and granted DMA windows\n"
      "through management messages (dxpu bridge ...). SIGINT/SIGTERM: graceful shutdown.\n"
      "Configuration: docs/bridge-config.md."};
  dxpu::cli::UseDxpuHelpFormatter(app);
  std::string config_path;
  bool check_only = false;
  std::string level;
  app.add_option("-c,--config", config_path, "the configuration file (JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_flag("--check", check_only, "validate the configuration, print a summary and exit");
  app.add_option("--log-level", level, "override log.level: trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  std::string datapath = "golden";
  app.add_option("--datapath", datapath, dxpu::bridge::DatapathHelp())
      ->check(CLI::IsMember(dxpu::bridge::DatapathNames()))
      ->capture_default_str();
  uint32_t crash_after = 0;
  app.add_option("--crash-after-ownership-change", crash_after,
                 "crash tests only: exit after the N-th ASSIGN or RELEASE took effect")
      ->group("");  // hidden
  std::string flash_path;
  std::string slot_name;
  app.add_option(dxpu::firmware::kFlashOption, flash_path,
                 "the flash this bridge was booted from (given by dxpu-boot): enables firmware "
                 "updates over the management socket (docs/firmware.md)")
      ->check(CLI::ExistingFile);
  app.add_option(dxpu::firmware::kSlotOption, slot_name, "the flash slot booted: A or B")
      ->check(CLI::IsMember({"A", "B"}));
  std::chrono::nanoseconds health_delay = std::chrono::seconds(3);
  dxpu::cli::AddDurationOption(app, "--health-delay", &health_delay,
                               "a trial boot is marked good after serving this long (at most "
                               "60min)",
                               {{"--health-delay-ms", dxpu::cli::DurationUnit::kMilliseconds}});
  uint64_t crash_at_flash_op = 0;
  app.add_option("--crash-at-flash-op", crash_at_flash_op,
                 "crash tests only: lose power (exit 137) at the N-th flash operation")
      ->group("");  // hidden
  uint32_t flash_erase_delay_ms = 0;
  app.add_option("--flash-erase-delay-ms", flash_erase_delay_ms,
                 "tests only: each flash erase takes this long (a slow NOR part)")
      ->group("");  // hidden
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a bad command line: 2 (CLI11 has its own codes)
  }
  if (health_delay > std::chrono::minutes(60)) {
    std::fprintf(stderr, "dxpu-bridge: --health-delay %s: at most 60min\n",
                 dxpu::cli::FormatDuration(health_delay).c_str());
    return 2;
  }
  if (flash_path.empty() != slot_name.empty()) {
    std::fprintf(stderr, "dxpu-bridge: --flash and --slot go together\n");
    return 2;
  }
  dxpu::bridge::DaemonEmbedding embedding;
  embedding.crash_after_ownership_change = crash_after;
  embedding.health_delay_ms =
      static_cast<uint32_t>(std::chrono::ceil<std::chrono::milliseconds>(health_delay).count());
  std::string why;
  const std::optional<dxpu::bridge::DataPlane> plane = dxpu::bridge::DataPlaneNamed(datapath, &why);
  if (!plane) {
    std::fprintf(stderr, "dxpu-bridge: --datapath=%s: %s\n", datapath.c_str(), why.c_str());
    return 2;
  }
  embedding.plane = *plane;

  const dxpu::bridge::BridgeConfigResult loaded = dxpu::bridge::LoadBridgeConfig(config_path);
  if (!loaded.ok()) {
    for (const std::string& e : loaded.errors)
      std::fprintf(stderr, "%s: %s\n", config_path.c_str(), e.c_str());
    return 2;
  }
  dxpu::bridge::BridgeConfig config = *loaded.config;
  if (!level.empty()) config.log.level = spdlog::level::from_str(level);
  SetUpLogging(config.log);
  if (!flash_path.empty() && !check_only) {
    const auto slot = slot_name == "A" ? dxpu::firmware::Slot::kA : dxpu::firmware::Slot::kB;
    auto firmware = dxpu::firmware::FirmwareService::Open(flash_path, slot);
    if (!firmware.ok()) {
      spdlog::critical("cannot start: flash {}: {}: {}", flash_path, firmware.error().name,
                       firmware.error().message);
      return 1;
    }
    embedding.firmware = std::move(firmware).value();
    embedding.firmware->flash().SetDelays(uint64_t{flash_erase_delay_ms} * 1000000, 0);
    if (crash_at_flash_op != 0) {
      embedding.firmware->flash().ArmPowerCut(crash_at_flash_op - 1, [] {
        spdlog::warn("crash test: power lost at a flash operation");
        spdlog::default_logger()->flush();
        _exit(137);
      });
    }
  }
  if (check_only) {
    std::printf("%s: ok: node %#llx, %zu links, %zu devices\n", config_path.c_str(),
                static_cast<unsigned long long>(config.node_id), config.links.size(),
                config.devices.size());
    return 0;
  }
  std::string error;
  auto daemon = dxpu::bridge::BridgeDaemon::Create(config, &error, std::move(embedding));
  if (daemon) spdlog::info("data plane: {}", datapath);
  if (!daemon) {
    spdlog::critical("cannot start: {}", error);
    if (error.find("Address already in use") != std::string::npos) {
      spdlog::critical(
          "another process holds that address (a second dxpu-bridge on this machine?): stop "
          "it, or give this bridge other addresses in {} (\"links\", \"management\", "
          "\"metrics\"; docs/bridge-config.md)",
          config_path);
    }
    return 1;
  }
  return daemon->Run();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dxpu-bridge: %s\n", e.what());
    return 1;
  }
}
