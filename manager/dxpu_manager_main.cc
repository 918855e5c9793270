// dxpu_manager_main.cc - dxpu-manager: the pool manager daemon (docs/manager.md). Keeps the
// pool in SQLite (or, with --etcd, in etcd as one of several replicas: replica.h), serves the
// REST API, and drives bridges and host agents through attach and release. SIGINT or SIGTERM
// stops it; whatever was in progress resumes at the next start (or under the next leader).
#include <fcntl.h>
#include <httplib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "lib/cli/duration.h"
#include "lib/cli/help_formatter.h"
#include "lib/cli/options.h"
#include "lib/util/errno_text.h"
#include "manager/http_limits.h"
#include "manager/leader_redirect.h"
#include "manager/manager_service.h"
#include "manager/replica.h"
#include "manager/rest_api.h"
#include "manager/serve_until_signal.h"
#include "manager/service_slot.h"
#include "manager/sqlite_store.h"
#include "manager/tls_options.h"

namespace {

// The pool's database is one manager's alone: two managers on one database would each drive the
// bridges from their own view (a split brain). An exclusive flock(2) on DB.lock, held for the
// process's life: the kernel drops it when the process dies, however it dies, so a crashed
// manager's lock goes away by itself. The file says the holder's PID, for the message.
// Returns the lock's descriptor (kept open), or -1 with *error saying why and what to do.
int LockDatabase(const std::string& db, std::string* error) {
  const std::string path = db + ".lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = fmt::format(
        "cannot open {}: {} (the lock beside --db {}; give a --db in a "
        "directory this user may write)",
        path, dxpu::util::ErrnoText(errno), db);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    int pid = 0;
    if (n > 0 && std::from_chars(buf, buf + n, pid).ec == std::errc() && pid > 0)
      holder = fmt::format(" (pid {})", pid);
    close(fd);
    *error = err == EWOULDBLOCK
                 ? fmt::format("another dxpu-manager holds {}{}; stop it or use another --db", db,
                               holder)
                 : fmt::format("cannot lock {}: {}", path, dxpu::util::ErrnoText(err));
    return -1;
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds anyway; only the PID in messages is missing.
  }
  return fd;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "manager";
  return name;
}

// What the daemon cannot honour, said before it starts: "" when the configuration is usable.
std::string CheckConfiguration(const std::string& db) {
  if (db.empty()) return "--db is empty; give the pool's SQLite file, e.g. --db pool.db";
  const std::filesystem::path parent = std::filesystem::path(db).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return fmt::format("--db {}: the directory {} does not exist; create it or give another --db",
                       db, parent.string());
  }
  if (std::filesystem::is_directory(db, ec))
    return fmt::format("--db {} is a directory; give a file in it, e.g. --db {}/pool.db", db, db);
  return "";
}

// --crash-at before:N or after:N into o; false if it is neither.
bool ParseCrashAt(const std::string& crash_at, dxpu::manager::ServiceOptions* o) {
  const size_t colon = crash_at.find(':');
  const std::string when = crash_at.substr(0, colon);
  if (colon == std::string::npos || (when != "before" && when != "after")) return false;
  o->crash_after_record = when == "after";
  const std::string n = crash_at.substr(colon + 1);
  return std::from_chars(n.data(), n.data() + n.size(), o->crash_step).ec == std::errc();
}

// --attach-timeout, --detach-timeout and --probe-interval: durations, each in its range.
void AddTimingOptions(CLI::App& app, std::chrono::nanoseconds* attach,
                      std::chrono::nanoseconds* detach, std::chrono::nanoseconds* probe) {
  using dxpu::cli::DurationRange;
  using dxpu::cli::DurationUnit;
  using std::chrono::seconds;
  dxpu::cli::AddBoundedDuration(app, "--attach-timeout", attach,
                                "how long an attach may take before it is rolled back (1s to 1h; "
                                "a bare number is seconds)",
                                DurationRange{seconds(1), seconds(3600)}, {},
                                DurationUnit::kSeconds);
  dxpu::cli::AddBoundedDuration(app, "--detach-timeout", detach,
                                "how long a live host may take to let go of a released GPU "
                                "before its bridge takes it (1s to 1h; a bare number is seconds)",
                                DurationRange{seconds(1), seconds(3600)}, {},
                                DurationUnit::kSeconds);
  dxpu::cli::AddBoundedDuration(app, "--probe-interval", probe,
                                "how often each box is probed (50ms to 10min; a bare number is "
                                "seconds)",
                                DurationRange{std::chrono::milliseconds(50), seconds(600)}, {},
                                DurationUnit::kSeconds);
}

// --etcd and what goes with it: the pool's state in etcd, this process one replica of several.
struct EtcdFlags {
  std::string endpoints;  // "http://10.0.0.1:2379,http://10.0.0.2:2379"
  std::string prefix = "/dxpu";
  std::string replica;
  std::string advertise;
  std::chrono::nanoseconds ttl = std::chrono::seconds(5);
  dxpu::manager::TlsFiles tls;
  int64_t max_txn_ops = 128;
};

void AddEtcdOptions(CLI::App& app, EtcdFlags* e) {
  const std::string group = "Replicated (etcd)";
  app.add_option("--etcd", e->endpoints,
                 "keep the pool in etcd instead of --db: the members' client URLs, comma-"
                 "separated; this process is then one replica of the manager, leading when "
                 "elected (docs/manager.md \"Replicas on etcd\")")
      ->group(group);
  app.add_option("--etcd-prefix", e->prefix, "the pool's keys in etcd are under this prefix")
      ->capture_default_str()
      ->group(group);
  app.add_option("--replica", e->replica,
                 "this replica's name, unique in the pool (default: the host name and port)")
      ->group(group);
  app.add_option("--advertise", e->advertise,
                 "the URL clients reach this replica's API at, given to them by standbys when "
                 "it leads (default: the scheme, --listen address and port)")
      ->group(group);
  dxpu::cli::AddBoundedDuration(
      app, "--leader-ttl", &e->ttl,
      "the leader lease: a dead leader is replaced within this time (2s to 60s; a bare number is "
      "seconds)",
      dxpu::cli::DurationRange{std::chrono::seconds(2), std::chrono::seconds(60)}, {},
      dxpu::cli::DurationUnit::kSeconds)
      ->group(group);
  app.add_option("--etcd-cert", e->tls.cert, "this manager's client certificate towards etcd (PEM)")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--etcd-key", e->tls.key, "its private key (PEM)")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--etcd-ca", e->tls.ca, "the CA that signed the etcd members' certificates (PEM)")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--etcd-max-txn-ops", e->max_txn_ops,
                 "the etcd cluster's --max-txn-ops: the most keys one change may write")
      ->check(CLI::Range(int64_t{16}, int64_t{100000}))
      ->capture_default_str()
      ->group(group);
}

// The --etcd members' URLs; "" when every one is usable, else what is wrong.
std::string CheckEndpoints(const std::vector<std::string>& urls) {
  if (urls.empty())
    return "--etcd names no member (e.g. http://10.0.0.1:2379,http://10.0.0.2:2379)";
  for (const std::string& url : urls) {
    if (!url.starts_with("http://") && !url.starts_with("https://"))
      return fmt::format("--etcd: '{}' is not an http:// or https:// URL", url);
  }
  return "";
}

// One manager on SQLite: "" when --db is usable and this process holds its lock (until it
// ends), else what is wrong.
std::string CheckSqlite(const std::string& db) {
  if (std::string problem = CheckConfiguration(db); !problem.empty()) return problem;
  std::string lock_error;
  if (LockDatabase(db, &lock_error) < 0) return lock_error;  // held until the process ends
  return "";
}

// Replicas on etcd: "" when --etcd is usable (its URLs into *endpoints), else what is wrong.
std::string CheckReplicated(const EtcdFlags& etcd, bool db_given,
                            std::vector<std::string>* endpoints) {
  if (db_given) return "give --db (one manager on SQLite) or --etcd (replicas on etcd), not both";
  *endpoints = dxpu::manager::SplitUrls(etcd.endpoints);
  return CheckEndpoints(*endpoints);
}

// The pool on SQLite, served for the process's life; null (said why) if it cannot be.
std::unique_ptr<dxpu::manager::ServiceSlot> OpenSqlite(const std::string& db,
                                                       const std::string& sync,
                                                       const dxpu::manager::ServiceOptions& o) {
  using namespace dxpu::manager;
  PoolResult<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(db, sync == "full" ? SqliteSync::kFull : SqliteSync::kNormal);
  if (!store.ok()) {
    spdlog::error("{}: {}", store.error().name, store.error().message);
    return nullptr;
  }
  PoolResult<std::unique_ptr<ManagerService>> service =
      ManagerService::Start(std::move(store).value(), o);
  if (!service.ok()) {
    spdlog::error("{}: {}", service.error().name, service.error().message);
    return nullptr;
  }
  return std::make_unique<ServiceSlot>(std::shared_ptr<ManagerService>(std::move(service).value()));
}

// This process as one replica on etcd, campaigning from now on; says so on stdout.
std::unique_ptr<dxpu::manager::Replica> StartReplica(const EtcdFlags& etcd,
                                                     const std::vector<std::string>& endpoints,
                                                     const dxpu::manager::ServiceOptions& o,
                                                     const std::string& management_key,
                                                     const std::string& listening, int bound,
                                                     dxpu::manager::ServiceSlot& slot) {
  using namespace dxpu::manager;
  ReplicaOptions r;
  r.election.prefix = etcd.prefix;
  r.election.replica =
      etcd.replica.empty() ? fmt::format("{}:{}", HostName(), bound) : etcd.replica;
  r.election.url = etcd.advertise.empty() ? listening : etcd.advertise;
  r.election.ttl = std::chrono::duration_cast<std::chrono::milliseconds>(etcd.ttl);
  r.etcd.endpoints = endpoints;
  r.etcd.tls = etcd.tls;
  r.store.max_txn_ops = etcd.max_txn_ops;
  r.service = o;
  r.management_key = management_key;
  auto replica = std::make_unique<Replica>(r, slot);
  replica->Start();
  std::printf("dxpu-manager: API on %s, pool in etcd (%s, prefix %s) as replica %s\n",
              listening.c_str(), etcd.endpoints.c_str(), etcd.prefix.c_str(),
              r.election.replica.c_str());
  return replica;
}

int Main(int argc, char** argv) {
  using namespace dxpu::manager;
  BlockStopSignals();
  CLI::App app{
      "dxpu-manager: the DxPU pool manager. Knows every GPU box (dxpu-bridge) and host "
      "(dxpu-agent), allocates GPUs to hosts and drives the bridges and agents through attach and "
      "release; its state is in an SQLite file (WAL), or with --etcd in an etcd cluster shared by "
      "several replicas of which one leads, so a restart resumes what was in progress. "
      "The REST/JSON API is described in docs/manager.md; `dxpu pool` is its client."};
  std::string listen = "127.0.0.1";
  int port = 17490;
  std::string db = "dxpu-pool.db";
  std::string sync = "normal";
  std::string level = "info";
  ServiceOptions o;
  using std::chrono::nanoseconds;
  using std::chrono::seconds;
  nanoseconds attach = seconds(60), detach = seconds(30), probe = seconds(2);
  dxpu::cli::UseDxpuHelpFormatter(app);
  app.add_option("--listen", listen,
                 "where the API listens: HOST:PORT, or an address (the port is --port's)")
      ->capture_default_str();
  CLI::Option* port_option =
      app.add_option("--port", port, "the API's TCP port (0: any; the port is printed)")
          ->capture_default_str()
          ->check(CLI::Range(0, 65535));
  CLI::Option* db_option =
      app.add_option("--db", db, "the SQLite file that holds the pool (created if missing)")
          ->capture_default_str();
  app.add_option("--sync", sync,
                 "normal: a commit survives a crash of this process; full: also a power loss "
                 "(an fsync per change)")
      ->check(CLI::IsMember({"normal", "full"}))
      ->capture_default_str();
  RestOptions rest;
  app.add_option("--bridge-socket-dir", rest.bridge_socket_dir,
                 "a box's unix: management address must name a socket in this directory (its "
                 "udp:IP:PORT needs none)")
      ->capture_default_str();
  std::string audit_path;
  app.add_option("--audit-log", audit_path,
                 "where every change and refused change is recorded, one JSON line each "
                 "(default: the --db file's name with .audit.jsonl)");
  std::string management_key;
  app.add_option("--management-key", management_key,
                 "the Ed25519 secret key file (`dxpu flash keygen`) the manager signs its "
                 "bridge requests with; each bridge trusts its public half "
                 "(management.trusted_keys). Without it they go unsigned")
      ->check(CLI::ExistingFile);
  AddTimingOptions(app, &attach, &detach, &probe);
  app.add_option("--workers", o.workers, "steps run at once")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--log-level", level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  bool insecure_plaintext = false;
  AddDaemonTlsOptions(app, &o.tls, &insecure_plaintext);
  EtcdFlags etcd;
  AddEtcdOptions(app, &etcd);
  std::string crash_at;
  app.add_option("--crash-at", crash_at,
                 "crash tests only: before:N or after:N exits at the N-th step of attach or "
                 "release, before or after recording it")
      ->group("");  // hidden
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help: 0; a bad command line: 2 (docs/cli.md)
    return rc == 0 ? 0 : 2;
  }
  if (!crash_at.empty() && !ParseCrashAt(crash_at, &o)) {
    std::fprintf(stderr, "dxpu-manager: --crash-at wants before:N or after:N\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(level));
  std::optional<int> listen_port;
  if (const std::string problem = ParseListen(listen, &listen, &listen_port); !problem.empty()) {
    spdlog::error("{}", problem);
    return 1;
  }
  if (listen_port) {
    if (port_option->count() > 0 && port != *listen_port) {
      spdlog::error("--listen gives port {} and --port {}: give the port once", *listen_port, port);
      return 1;
    }
    port = *listen_port;
  }
  if (const std::string problem = CheckServing(o.tls, insecure_plaintext, listen);
      !problem.empty()) {
    spdlog::error("{}", problem);
    return 1;
  }
  const bool replicated = !etcd.endpoints.empty();
  std::vector<std::string> endpoints;
  if (const std::string problem =
          replicated ? CheckReplicated(etcd, db_option->count() > 0, &endpoints) : CheckSqlite(db);
      !problem.empty()) {
    spdlog::error("{}", problem);
    return 1;
  }
  if (!management_key.empty()) {
    std::string key_error;
    o.signer = dxpu::bridge::ManagementSigner::FromKeyFile(
        management_key, dxpu::bridge::WallClockEpoch(), &key_error);
    if (!o.signer) {
      spdlog::error("--management-key: {}", key_error);
      return 1;
    }
    if (replicated)
      o.signer.reset();  // each term signs with its own epoch
    else
      spdlog::info("signing bridge requests with {} (epoch {})", management_key, o.signer->epoch());
  } else {
    spdlog::warn(
        "no --management-key: bridge requests go unsigned, and a bridge that trusts a "
        "management key refuses them{}",
        replicated ? "; nor do bridges fence off a replica whose term has ended" : "");
  }
  o.pool.attach_timeout_ns = static_cast<uint64_t>(attach.count());
  o.pool.detach_timeout_ns = static_cast<uint64_t>(detach.count());
  o.pool.probe_interval_ns = static_cast<uint64_t>(probe.count());

  std::unique_ptr<ServiceSlot> slot =
      replicated ? std::make_unique<ServiceSlot>() : OpenSqlite(db, sync, o);
  if (!slot) return 1;
  if (audit_path.empty())
    audit_path = replicated ? "dxpu-manager.audit.jsonl" : db + ".audit.jsonl";
  std::string audit_error;
  std::unique_ptr<AuditLog> audit = AuditLog::Open(audit_path, &audit_error);
  if (!audit) {
    spdlog::error("{} (--audit-log)", audit_error);
    return 1;
  }
  rest.audit = audit.get();
  std::string tls_error;
  const std::unique_ptr<httplib::Server> server = MakeServer(o.tls, &tls_error);
  if (!server) {
    spdlog::error("{}", tls_error);
    return 1;
  }
  ApplyHttpLimits(*server, HttpLimits{}, "dxpu-manager");
  InstallRestApi(*server, *slot, rest);
  std::string bind_error;
  const int bound = BindExclusively(*server, listen, port, &bind_error);
  if (bound <= 0) {
    spdlog::error("{}", bind_error);
    return 1;
  }
  const std::string scheme = o.tls.any() ? "https" : "http";
  std::unique_ptr<Replica> replica;
  if (replicated) {
    const std::string advertise = fmt::format("{}://{}:{}", scheme, listen, bound);
    replica = StartReplica(etcd, endpoints, o, management_key, advertise, bound, *slot);
  } else {
    std::printf("dxpu-manager: API on %s://%s:%d, pool in %s\n", scheme.c_str(), listen.c_str(),
                bound, db.c_str());
  }
  std::fflush(stdout);
  ServeUntilSignal(*server);
  spdlog::info("stopping");
  replica.reset();  // a term it holds is given up: another replica leads at once
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dxpu-manager: %s\n", e.what());
    return 1;
  }
}
