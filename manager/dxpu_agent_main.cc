// dxpu_agent_main.cc - dxpu-agent: the pool manager's agent on a host (docs/manager.md).
// Registers the host with the manager and hot-adds and hot-removes the GPUs the manager gives
// it: through dxpu.ko's sysfs when the module is loaded, through the userspace host proxy
// otherwise. SIGINT or SIGTERM stops it. `dxpu-agent attach ...` and `dxpu-agent detach ...`
// run the backend once, without a manager, and exit.
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <spdlog/fmt/fmt.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "bridge-fw/bridge_config.h"
#include "crypto/fabric_keys.h"
#include "lib/cli/duration.h"
#include "lib/cli/help_formatter.h"
#include "lib/cli/options.h"
#include "manager/addresses.h"
#include "manager/agent_service.h"
#include "manager/http_limits.h"
#include "manager/proxy_backend.h"
#include "manager/serve_until_signal.h"
#include "manager/sysfs_backend.h"
#include "manager/tls_options.h"

namespace {

using namespace dxpu::manager;

// One attach or detach from the command line.
struct OneShot {
  std::string fabric;
  int device = 0;
  std::string host_bdf;
  std::string gpu;
  std::string mode = "auto";
  std::string node = "0";
};

// "0xa1", "161": a node ID; nullopt when it is not a number.
std::optional<uint64_t> NodeId(const std::string& text) {
  try {
    size_t used = 0;
    const uint64_t id = std::stoull(text, &used, 0);
    if (used != text.size()) return std::nullopt;
    return id;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::unique_ptr<AttachBackend> MakeBackend(const std::string& mode, double link_down_s,
                                           std::optional<dxpu::crypto::KeyPair> key = {}) {
  auto sysfs = std::make_unique<SysfsBackend>();
  if (mode == "kernel" || (mode == "auto" && sysfs->Present())) return sysfs;
  ProxyBackendOptions po;
  po.link_down_ns = static_cast<uint64_t>(link_down_s * 1e9);
  po.key = std::move(key);
  return std::make_unique<ProxyBackend>(po);
}

// The host's fabric public key as the agent registers it: userspace mode from --fabric-key
// (the secret key file; the key pair goes to the proxy), kernel mode from dxpu.ko's
// /sys/devices/dxpu/key (its public half; "" when no key was written there).
std::string RegisteredFabricKey(const AttachBackend& backend,
                                const std::optional<dxpu::crypto::KeyPair>& key) {
  if (backend.mode() == "userspace") return key ? dxpu::crypto::KeyHex(key->pub) : "";
  std::ifstream in("/sys/devices/dxpu/key");
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  auto parsed = dxpu::crypto::ParseFabricPublicKey(line);
  return parsed.ok() ? dxpu::crypto::KeyHex(parsed.value()) : "";
}

CLI::App* AddOneShot(CLI::App& app, const char* name, const char* description, const char* example,
                     OneShot& o, std::string& level) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("--fabric", o.fabric,
                  "where the GPU's bridge is: its MAC for dxpu.ko (kernel mode), udp:IP:PORT "
                  "for the userspace host proxy")
      ->required();
  cmd->add_option("--device", o.device,
                  "the GPU's device number on its bridge (kernel mode: not used, the bridge "
                  "knows the device by --host-bdf)")
      ->required()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--host-bdf", o.host_bdf,
                  "where the bridge presents the GPU to this host (dxpu bridge assign "
                  "--host-bdf)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& s) {
            return dxpu::bridge::ParseBdf(s) ? std::string()
                                             : "'" + s + "' is not a BDF such as 01:00.0";
          },
          "BB:DD.F"));
  cmd->add_option("--gpu", o.gpu, "the GPU's name in the result line (default: FABRIC/DEVICE)");
  cmd->add_option("--mode", o.mode, "auto (kernel if dxpu.ko is loaded), kernel or userspace")
      ->check(CLI::IsMember({"auto", "kernel", "userspace"}))
      ->capture_default_str();
  cmd->add_option("--node-id", o.node,
                  "this host's DxFP node ID: userspace mode only (dxpu.ko uses its own)")
      ->capture_default_str();
  cmd->add_option("--log-level", level, "trace, debug, info, warn, error (on stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  cmd->footer(example);
  return cmd;
}

// Runs one attach or detach; the result line on stdout, an error on stderr (exit 1).
int RunOneShot(bool attach, const OneShot& o, const std::string& level) {
  auto logger = spdlog::stderr_color_mt("dxpu-agent");  // stdout holds the result alone
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
  AttachRequest r;
  r.fabric = o.fabric;
  r.device = static_cast<uint16_t>(o.device);
  r.host_bdf = *dxpu::bridge::ParseBdf(o.host_bdf);
  r.gpu = o.gpu.empty() ? o.fabric + "/" + std::to_string(o.device) : o.gpu;
  std::optional<uint64_t> node = NodeId(o.node);
  if (!node) {
    std::fprintf(stderr, "dxpu-agent: --node-id must be a number, not '%s'\n", o.node.c_str());
    return 2;
  }
  r.node_id = *node;
  std::unique_ptr<AttachBackend> backend = MakeBackend(o.mode, 1.0);
  if (backend->mode() == "userspace" && r.node_id == 0) {
    std::fprintf(stderr, "dxpu-agent: userspace mode needs --node-id (non-zero)\n");
    return 2;
  }
  if (attach) {
    PoolResult<std::string> line = backend->Attach(r);
    if (!line.ok()) {
      std::fprintf(stderr, "dxpu-agent: %s: %s\n", line.error().name.c_str(),
                   line.error().message.c_str());
      return 1;
    }
    std::printf("%s\n", line.value().c_str());
    return 0;
  }
  PoolResult<Done> done = backend->Detach(r);
  if (!done.ok()) {
    std::fprintf(stderr, "dxpu-agent: %s: %s\n", done.error().name.c_str(),
                 done.error().message.c_str());
    return 1;
  }
  std::printf("%s: detached\n", r.gpu.c_str());
  return 0;
}

// "http://HOST:PORT[/PATH]" (https too), or several comma-separated: "" when each is one, else
// what is wrong.
std::string CheckUrl(const std::string& option, const std::string& list, const char* example) {
  const std::vector<std::string> urls = SplitUrls(list);
  if (urls.empty()) return fmt::format("{} is empty; give a URL such as {}", option, example);
  for (const std::string& url : urls) {
    if (!ParseHttpUrl(url)) {
      return fmt::format("{} '{}' is not a URL such as {} (http://HOST:PORT)", option, url,
                         example);
    }
  }
  return "";
}

// The daemon's own flags (AgentOptions holds the rest).
struct DaemonFlags {
  std::string node;
  std::string listen = "127.0.0.1";
  int port = 17491;
  std::string mode = "auto";
  std::chrono::nanoseconds link_down = std::chrono::seconds(1);
  std::chrono::nanoseconds heartbeat = std::chrono::seconds(10);
  bool port_given = false;
  bool insecure_plaintext = false;
  std::string fabric_key;  // --fabric-key: the host's secret key file (userspace mode)
};

// Serves the manager until SIGINT or SIGTERM.
int RunDaemon(AgentOptions o, const DaemonFlags& f) {
  if (f.node.empty()) {
    std::fprintf(stderr, "dxpu-agent: --node-id is required\n");
    return 2;
  }
  o.node_id = NodeId(f.node).value_or(0);
  if (o.node_id == 0) {
    std::fprintf(stderr, "dxpu-agent: --node-id must be a non-zero number, not '%s'\n",
                 f.node.c_str());
    return 2;
  }
  std::string listen = f.listen;
  int port = f.port;
  std::optional<int> listen_port;
  if (const std::string problem = ParseListen(f.listen, &listen, &listen_port); !problem.empty()) {
    spdlog::error("{}", problem);
    return 1;
  }
  if (listen_port) {
    if (f.port_given && f.port != *listen_port) {
      spdlog::error("--listen gives port {} and --port {}: give the port once", *listen_port,
                    f.port);
      return 1;
    }
    port = *listen_port;
  }
  for (const std::string& problem : {CheckUrl("--manager", o.manager, "http://10.0.0.5:17490"),
                                     o.advertise.empty() || CheckAgentUrl(o.advertise).empty()
                                         ? std::string()
                                         : "--advertise " + CheckAgentUrl(o.advertise)}) {
    if (!problem.empty()) {
      spdlog::error("{}", problem);
      return 1;
    }
  }
  if (o.manager.find("https://") != std::string::npos && o.tls.cert.empty()) {
    spdlog::error(
        "--manager {} is HTTPS: it takes this host's client certificate (CN host:{}): give "
        "--tls-cert, --tls-key and --tls-ca",
        o.manager, o.id);
    return 1;
  }
  if (o.advertise.empty() && (listen == "0.0.0.0" || listen == "::")) {
    spdlog::error(
        "--listen {} without --advertise: the manager would be told to call this agent at "
        "{}:{}, which is no address it can reach; give --advertise http://THIS-HOST-IP:{}",
        f.listen, listen, port, port);
    return 1;
  }
  if (const std::string problem = CheckServing(o.tls, f.insecure_plaintext, listen);
      !problem.empty()) {
    spdlog::error("{}", problem);
    return 1;
  }
  o.heartbeat_ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(f.heartbeat).count());
  // A registration the manager refuses (the node ID is another host's) ends the daemon: exit 1
  // with the manager's reason, instead of asking again forever.
  static std::atomic<bool> refused{false};
  o.on_refused = [](const std::string&) {
    refused = true;
    kill(getpid(), SIGTERM);  // ServeUntilSignal's sigwait takes it
  };
  std::optional<dxpu::crypto::KeyPair> key;
  if (!f.fabric_key.empty()) {
    auto read = dxpu::crypto::ReadFabricSecretKeyFile(f.fabric_key);
    if (!read.ok()) {
      spdlog::error("--fabric-key: {}", read.error().message);
      return 1;
    }
    key = read.value();
  }
  std::unique_ptr<AttachBackend> backend =
      MakeBackend(f.mode, std::chrono::duration<double>(f.link_down).count(), key);
  o.fabric_key = RegisteredFabricKey(*backend, key);
  std::string tls_error;
  const std::unique_ptr<httplib::Server> server = MakeServer(o.tls, &tls_error);
  if (!server) {
    spdlog::error("{}", tls_error);
    return 1;
  }
  ApplyHttpLimits(*server, HttpLimits{}, "dxpu-agent");
  std::string bind_error;
  const int bound = BindExclusively(*server, listen, port, &bind_error);
  if (bound <= 0) {
    spdlog::error("{}", bind_error);
    return 1;
  }
  if (o.advertise.empty()) {
    const std::string scheme = o.tls.any() ? "https://" : "http://";
    o.advertise =
        (listen.find(':') != std::string::npos ? scheme + "[" + listen + "]" : scheme + listen) +
        ":" + std::to_string(bound);
  }
  AgentService agent(o, std::move(backend));
  agent.InstallRoutes(*server);
  agent.StartRegistration();
  std::printf("dxpu-agent: host '%s' (node %#llx), API on %s, manager %s\n", o.id.c_str(),
              static_cast<unsigned long long>(o.node_id), o.advertise.c_str(), o.manager.c_str());
  std::fflush(stdout);
  ServeUntilSignal(*server);
  if (refused) return 1;  // the reason is logged already, on one line
  spdlog::info("stopping");
  return 0;
}

int Main(int argc, char** argv) {
  BlockStopSignals();

  CLI::App app{
      "dxpu-agent: a host's agent for the DxPU pool manager. Registers this host (its name and "
      "DxFP node ID) with dxpu-manager, then attaches and detaches the GPUs the manager gives it: "
      "through dxpu.ko's hot-plug slots when the module is loaded (mode kernel), or through the "
      "userspace host proxy (mode userspace). With the attach or detach command it does one attach "
      "or detach without a manager and exits. See docs/manager.md."};
  dxpu::cli::UseDxpuHelpFormatter(app);  // before the subcommands: they inherit it
  app.require_subcommand(0, 1);
  char hostname[HOST_NAME_MAX + 1] = {};
  gethostname(hostname, sizeof hostname);
  AgentOptions o;
  o.id = hostname;
  o.manager = "http://127.0.0.1:17490";
  DaemonFlags f;
  std::string level = "info";
  app.add_option("--host,--id", o.id,
                 "this host's name in the pool, what `dxpu pool allocate --host` names (default: "
                 "this machine's hostname)")
      ->capture_default_str();
  app.add_option("--node-id", f.node,
                 "this host's DxFP node ID (what bridges assign GPUs to); required, but for "
                 "attach and detach");
  app.add_option("--manager", o.manager,
                 "the manager's API; replicas on etcd: each one's, comma-separated (a standby "
                 "sends the agent to the leader)")
      ->capture_default_str();
  app.add_option("--fabric-key", f.fabric_key,
                 "userspace mode: this host's fabric secret key file (dxpu keygen); its public "
                 "half is registered, and the manager lets the host reach the bridges of its GPUs "
                 "with it (kernel mode registers dxpu.ko's /sys/devices/dxpu/key)")
      ->check(CLI::ExistingFile);
  app.add_option("--listen", f.listen,
                 "where this agent's API listens: HOST:PORT, or an address (the port is --port's)")
      ->capture_default_str();
  CLI::Option* port_option =
      app.add_option("--port", f.port, "its TCP port (0: any; the port is printed)")
          ->capture_default_str()
          ->check(CLI::Range(0, 65535));
  app.add_option("--advertise", o.advertise,
                 "the URL the manager calls this agent at (default: http://LISTEN:PORT)");
  app.add_option("--mode", f.mode, "auto (kernel if dxpu.ko is loaded), kernel or userspace")
      ->check(CLI::IsMember({"auto", "kernel", "userspace"}))
      ->capture_default_str();
  using dxpu::cli::DurationUnit;
  using std::chrono::milliseconds;
  dxpu::cli::AddBoundedDuration(app, "--link-down", &f.link_down,
                                "userspace: how long without progress before a bridge's GPUs are "
                                "lost (100ms to 1min; a bare number is seconds)",
                                {milliseconds(100), milliseconds(60'000)}, {},
                                DurationUnit::kSeconds);
  dxpu::cli::AddBoundedDuration(app, "--heartbeat", &f.heartbeat,
                                "how often it registers again (100ms to 10min); the manager "
                                "counts the host dead after 3 missed",
                                {milliseconds(100), milliseconds(600'000)},
                                {{"--heartbeat-ms", DurationUnit::kMilliseconds}});
  app.add_option("--log-level", level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  AddDaemonTlsOptions(app, &o.tls, &f.insecure_plaintext);
  app.add_option("--crash-after-call", o.crash_call,
                 "crash tests only: exit after the N-th attach or detach took effect")
      ->group("");  // hidden

  OneShot shot;
  CLI::App* attach_cmd = AddOneShot(
      app, "attach",
      "Attach one GPU now, without a manager: bind a free dxpu.ko hot-plug slot to it and power "
      "the slot on (kernel mode), or open it through the userspace host proxy (userspace mode: "
      "the GPU is this process's, and goes when it exits, so this only checks it can be "
      "attached). The bridge must have assigned it to this host (dxpu bridge assign). "
      "Attaching what is attached is done. Prints what the host has, e.g. 'GPU (slot dxpu0)'.",
      "\nExample:\n"
      "  dxpu-agent attach --mode kernel --fabric 02:00:00:00:b0:01 --device 0 "
      "--host-bdf 01:00.0\n",
      shot, level);
  CLI::App* detach_cmd = AddOneShot(
      app, "detach",
      "Detach one GPU now, without a manager: power its dxpu.ko hot-plug slot off and unbind it "
      "(kernel mode). Detaching what is not attached is done.",
      "\nExample:\n"
      "  dxpu-agent detach --mode kernel --fabric 02:00:00:00:b0:01 --device 0 "
      "--host-bdf 01:00.0\n",
      shot, level);
  // After the subcommands: CLI11 copies a parent's footer into subcommands made later.
  app.footer(
      "\nExamples:\n"
      "  dxpu-agent --host h1 --node-id 0xa1 --manager http://10.0.0.5:17490 --listen 10.0.0.21\n"
      "  dxpu-agent attach --fabric 02:00:00:00:b0:01 --device 0 --host-bdf 01:00.0\n"
      "  dxpu-agent detach --fabric 02:00:00:00:b0:01 --device 0 --host-bdf 01:00.0\n"
      "(dxpu-agent attach --help, dxpu-agent detach --help: their options)\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help: 0; a bad command line: 2 (docs/cli.md)
    return rc == 0 ? 0 : 2;
  }
  if (attach_cmd->parsed() || detach_cmd->parsed())
    return RunOneShot(attach_cmd->parsed(), shot, level);
  f.port_given = port_option->count() > 0;
  spdlog::set_level(spdlog::level::from_str(level));
  return RunDaemon(std::move(o), f);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dxpu-agent: internal error: %s\n", e.what());
    return 1;
  }
}
