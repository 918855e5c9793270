// pool_command.cc - `dxpu pool ...`: a client of dxpu-manager's REST/JSON API
// (docs/manager.md, "The API" and "dxpu pool").
#include "pool_command.h"
#include "pool_simulate.h"

#include <httplib.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "error_report.h"
#include "lib/cli/duration.h"
#include "lib/cli/options.h"
#include "manager/leader_redirect.h"
#include "manager/pool_audit.h"
#include "manager/tls.h"
#include "manager/tls_options.h"
#include "result.h"

namespace dxpu::cli {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kDefaultManager = "http://127.0.0.1:17490";
constexpr const char* kManagerEnv = "DXPU_MANAGER";
constexpr const char* kTlsHint =
    "is --tls-cert a certificate of the pool's CA, and --tls-ca the CA that signed the "
    "manager's ($DXPU_TLS_CERT, $DXPU_TLS_KEY, $DXPU_TLS_CA)?";
constexpr int kPollWaitSeconds = 1;  // each poll asks the manager to wait this long
constexpr auto kMinPollInterval = std::chrono::milliseconds(200);
constexpr auto kRetryInterval = std::chrono::seconds(1);  // after a poll that got no answer

struct PoolOptions {
  std::string manager = kDefaultManager;
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);  // --timeout
  double timeout_s = 10;                                        // the same, in seconds
  bool json = false;
  std::string id;  // a box or an allocation
  std::string management, fabric;
  std::string adopt;  // add-box --adopt: "" or "reset"
  bool free_only = false;
  std::string state;
  std::string box;
  std::string host;
  uint32_t count = 0;
  std::string policy;
  std::string profile;
  std::string key;
  std::chrono::nanoseconds wait = std::chrono::seconds(60);  // --wait
  double wait_s = 60;                                        // the same, in seconds
  manager::TlsFiles tls;  // --tls-cert, --tls-key, --tls-ca: for an https:// manager
};

// The manager's URL: [http://|https://]HOST[:PORT][/PREFIX]; IPv6 hosts in brackets.
struct ManagerUrl {
  std::string origin;  // scheme://host:port, what the HTTP client connects to
  std::string prefix;  // a path in front of every request ("" or "/pool")
  std::string text;    // as given, for messages
};

Result<ManagerUrl> ParseManagerUrl(const std::string& text) {
  const Error bad{"bad-url", fmt::format("'{}' is not a manager URL (http://HOST:PORT, e.g. {})",
                                         text, kDefaultManager)};
  std::string rest = text;
  std::string scheme = "http";
  if (const size_t p = rest.find("://"); p != std::string::npos) {
    scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") return bad;
  std::string prefix;
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    prefix = rest.substr(slash);
    rest.resize(slash);
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string host = rest;
  std::string port;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return bad;
    host = rest.substr(0, close + 1);
    const std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad;
      port = after.substr(1);
    }
  } else if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  constexpr std::string_view kNotInHost = ":?#@ ";
  if (host.empty() ||
      (!host.starts_with('[') && host.find_first_of(kNotInHost) != std::string::npos))
    return bad;
  if (prefix.find_first_of("?# ") != std::string::npos) return bad;
  if (port.empty()) {
    port = scheme == "https" ? "443" : "80";
  } else if (port.size() > 5 ||
             !std::ranges::all_of(port, [](char c) { return c >= '0' && c <= '9'; }) ||
             std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return bad;
  }
  return ManagerUrl{fmt::format("{}://{}:{}", scheme, host, port), prefix, text};
}

// Percent-encodes a path segment or a query value (everything but A-Z a-z 0-9 - . _ ~).
std::string Escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~';
    out += plain ? std::string(1, ch) : fmt::format("%{:02X}", c);
  }
  return out;
}

std::chrono::microseconds Micros(double seconds) {
  return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

enum class Method { kGet, kPost, kDelete };

const char* MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
  }
  return "?";
}

// An HTTP answer: its status and its body as JSON (discarded when it is not JSON).
struct Reply {
  int status = 0;
  Json body;
  std::string request;  // "GET /v1/status", for messages
};

// The manager, or its replicas (comma-separated URLs): a standby's 503 "not-leader" names the
// leader, which is then asked; a replica that cannot be connected to, the next one. Only a
// request that was not taken is sent again (manager/leader_redirect.h).
class ManagerClient {
 public:
  ManagerClient(std::vector<ManagerUrl> urls, double timeout_s, manager::TlsFiles tls)
      : urls_(std::move(urls)), timeout_s_(timeout_s), tls_(std::move(tls)) {}

  const ManagerUrl& url() const { return urls_[current_]; }

  // Sends one request; an Error only when no answer came (any HTTP status is an answer).
  // wait_s: how long the manager may hold the request (?wait=), added to the read timeout.
  Result<Reply> Exchange(Method method, const std::string& path, const Json* body = nullptr,
                         double wait_s = 0) {
    // Each known replica once, and the leaders they name.
    for (size_t asked = 0;; ++asked) {
      Result<Reply> r = ExchangeOnce(method, path, body, wait_s);
      if (asked > urls_.size() + 1) return r;
      if (!r.ok()) {
        if (r.error().name != "unreachable" || urls_.size() == 1) return r;
        current_ = (current_ + 1) % urls_.size();  // never taken: the next replica
        continue;
      }
      if (r.value().status != 503 || !r.value().body.is_object() ||
          r.value().body.value("error", "") != "not-leader") {
        return r;
      }
      const std::string leader = manager::LeaderNamedBy(503, r.value().body.dump());
      Result<ManagerUrl> to = ParseManagerUrl(leader);
      if (leader.empty() || !to.ok()) {
        if (urls_.size() == 1) return r;
        current_ = (current_ + 1) % urls_.size();
        continue;
      }
      spdlog::debug("{} is a standby; following it to the leader at {}", url().text, leader);
      Follow(std::move(to).value());
    }
  }

  // The JSON of a 2xx answer; the manager's {"error", "message"} (or what was wrong with the
  // answer) otherwise.
  Result<Json> Call(Method method, const std::string& path, const Json* body = nullptr) {
    return Expect(Exchange(method, path, body));
  }

  Result<Json> Expect(Result<Reply> reply) const {
    if (!reply.ok()) return reply.error();
    Reply& r = reply.value();
    if (r.status >= 200 && r.status < 300) {
      if (r.body.is_discarded()) {
        return Error{"bad-answer", fmt::format("the manager at {} answered HTTP {} without JSON",
                                               url().text, r.status)};
      }
      return std::move(r.body);
    }
    if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_string() &&
        r.body.contains("message") && r.body["message"].is_string()) {
      Error e{r.body["error"].get<std::string>(), r.body["message"].get<std::string>()};
      // The server's router did not know the path: a manager of another version, a wrong
      // prefix in the URL, or an ID with a '/' in it.
      if (e.name == "no-such-path") {
        e.message =
            fmt::format("the manager at {} has no {} ({})", url().text, r.request, e.message);
      }
      return e;
    }
    return Error{"bad-answer", fmt::format("the manager at {} answered HTTP {} without the "
                                           "usual error body (is it a dxpu-manager?)",
                                           url().text, r.status)};
  }

 private:
  Result<Reply> ExchangeOnce(Method method, const std::string& path, const Json* body,
                             double wait_s) {
    httplib::Client& http = Http();
    http.set_read_timeout(Micros(timeout_s_ + wait_s));
    const std::string target = url().prefix + path;
    httplib::Result r = [&] {
      switch (method) {
        case Method::kPost:
          return http.Post(target, body != nullptr ? body->dump() : std::string("{}"),
                           "application/json");
        case Method::kDelete:
          return http.Delete(target);
        case Method::kGet:
          break;
      }
      return http.Get(target);
    }();
    if (!r) {
      spdlog::debug("{} {}{}: no answer ({})", MethodName(method), url().origin, target,
                    httplib::to_string(r.error()));
      return NoAnswer(r.error(), timeout_s_ + wait_s);
    }
    spdlog::debug("{} {}{}: HTTP {}", MethodName(method), url().origin, target, r->status);
    return Reply{r->status, Json::parse(r->body, nullptr, /*allow_exceptions=*/false),
                 fmt::format("{} {}", MethodName(method), target)};
  }

  // The current replica's HTTP client, made on first use.
  httplib::Client& Http() {
    if (http_.size() < urls_.size()) http_.resize(urls_.size());
    std::unique_ptr<httplib::Client>& c = http_[current_];
    if (!c) {
      c = manager::MakeClient(url().origin, tls_);
      c->set_url_encode(false);  // paths and queries are escaped here
      c->set_connection_timeout(Micros(timeout_s_));
      c->set_write_timeout(Micros(timeout_s_));
      c->set_default_headers(
          {{"User-Agent", "dxpu/" DXPU_VERSION}, {"Accept", "application/json"}});
    }
    return *c;
  }

  void Follow(ManagerUrl leader) {
    for (size_t i = 0; i < urls_.size(); ++i) {
      if (urls_[i].origin == leader.origin && urls_[i].prefix == leader.prefix) {
        current_ = i;
        return;
      }
    }
    urls_.push_back(std::move(leader));
    current_ = urls_.size() - 1;
  }

  Error NoAnswer(httplib::Error e, double waited_s) const {
    switch (e) {
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
        return {"tls-refused", fmt::format("the TLS handshake with the manager at {} failed "
                                           "({}): {}",
                                           url().text, httplib::to_string(e), kTlsHint)};
      case httplib::Error::Connection:
        return {"unreachable", fmt::format("cannot connect to the manager at {} (is dxpu-manager "
                                           "running there? --manager or ${} say where)",
                                           url().text, kManagerEnv)};
      case httplib::Error::ConnectionTimeout:
        return {"timeout",
                fmt::format("the manager at {} did not accept a connection within {:g} s",
                            url().text, timeout_s_)};
      case httplib::Error::Read:
        return {"timeout", fmt::format("no answer from the manager at {} within {:g} s (or it "
                                       "closed the connection){}",
                                       url().text, waited_s, TlsSuffix())};
      case httplib::Error::Write:
        return {"no-answer", fmt::format("the connection to the manager at {} broke while "
                                         "sending{}",
                                         url().text, TlsSuffix())};
      default:
        return {"no-answer", fmt::format("no answer from the manager at {} ({})", url().text,
                                         httplib::to_string(e))};
    }
  }

  // TLS 1.3: the server refuses a client certificate after the client's side of the
  // handshake is done, so the refusal shows as a connection closed while sending or reading.
  std::string TlsSuffix() const {
    if (!url().origin.starts_with("https://")) return "";
    return fmt::format("; over TLS a refused client certificate looks the same: {}", kTlsHint);
  }

  std::vector<ManagerUrl> urls_;  // never empty
  size_t current_ = 0;
  double timeout_s_;
  manager::TlsFiles tls_;
  std::vector<std::unique_ptr<httplib::Client>> http_;  // one per URL, as they are used
};

// A field of an answer as text: strings as they are, numbers as digits, booleans yes/no,
// missing or null as "".
std::string Text(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return it->dump();
}

using Row = std::vector<std::string>;

// Columns padded to their widest cell, two spaces apart; an empty cell shows as "-".
void PrintTable(std::ostream& out, const Row& header, const std::vector<Row>& rows,
                std::string_view indent = "") {
  std::vector<size_t> width(header.size(), 1);
  auto cell = [](const Row& r, size_t i) -> std::string {
    return i < r.size() && !r[i].empty() ? r[i] : "-";
  };
  for (size_t i = 0; i < header.size(); ++i) {
    width[i] = std::max(width[i], header[i].size());
    for (const Row& r : rows) width[i] = std::max(width[i], cell(r, i).size());
  }
  auto line = [&](const Row& r) {
    std::string s(indent);
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string c = cell(r, i);
      s += c;
      if (i + 1 < header.size()) s.append(width[i] - c.size() + 2, ' ');
    }
    out << s << '\n';
  };
  line(header);
  for (const Row& r : rows) line(r);
}

void PrintJson(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

int ShowJson(const Json& j) {
  PrintJson(j);
  return kExitOk;
}

int Fail(const PoolOptions& o, std::string_view sub, const Error& e, int code = kExitFailure) {
  return ReportError(fmt::format("pool {}", sub), e, o.json, std::cout, std::cerr, code);
}

// A failure after the result was printed (with --json, stdout already holds it): stderr only.
int FailAfterPrint(std::string_view sub, const Error& e) {
  return ReportError(fmt::format("pool {}", sub), e, false, std::cout, std::cerr, kExitFailure);
}

Error NotA(const ManagerClient& c, std::string_view what) {
  return {"bad-answer", fmt::format("the manager at {} did not answer {}", c.url().text, what)};
}

// "3" means alloc-3.
std::string AllocationId(const std::string& id) {
  const bool digits =
      !id.empty() && std::ranges::all_of(id, [](char c) { return c >= '0' && c <= '9'; });
  return digits ? "alloc-" + id : id;
}

size_t AttachedCount(const Json& a) {
  if (!a.contains("gpus") || !a["gpus"].is_array()) return 0;
  return static_cast<size_t>(std::ranges::count_if(
      a["gpus"], [](const Json& g) { return Text(g, "step") == "attached"; }));
}

size_t GpuCount(const Json& a) {
  return a.contains("gpus") && a["gpus"].is_array() ? a["gpus"].size() : 0;
}

// "1 GPU", "2 GPUs".
std::string Gpus(const std::string& count) {
  return fmt::format("{} GPU{}", count, count == "1" ? "" : "s");
}

// "alloc-3: attaching, 1 of 2 GPUs attached" while waiting.
std::string Describe(const Json& a) {
  const std::string state = Text(a, "state");
  if (state == "attaching")
    return fmt::format("{}: attaching, {} of {} attached", Text(a, "id"), AttachedCount(a),
                       Gpus(Text(a, "count")));
  if (state == "releasing")
    return fmt::format("{}: releasing, {} still held", Text(a, "id"),
                       Gpus(std::to_string(GpuCount(a))));
  return fmt::format("{}: {}", Text(a, "id"), state);
}

// What an allocation on its way waits for: its first GPU not yet where the wait wants it, and
// who is to move it ("waiting for host h2's agent to detach box-a/0"), with the last problem.
std::string WaitingFor(const Json& a) {
  std::string what;
  if (a.contains("gpus") && a["gpus"].is_array()) {
    for (const Json& g : a["gpus"]) {
      const std::string step = Text(g, "step");
      const std::string gpu = Text(g, "gpu");
      const std::string host = Text(a, "host");
      const std::string box = Text(g, "box");
      if (step == "reserved") {
        what = fmt::format("waiting for box {}'s bridge to assign {}", box, gpu);
      } else if (step == "assigned") {
        what = fmt::format("waiting for host {}'s agent to attach {}", host, gpu);
      } else if (step == "detaching") {
        what = fmt::format("waiting for host {}'s agent to detach {}", host, gpu);
      } else if (step == "scrubbing") {
        what = fmt::format("waiting for box {}'s bridge to reset and scrub {}", box, gpu);
      } else {
        continue;
      }
      break;
    }
  }
  if (what.empty()) what = Describe(a);
  if (const std::string error = Text(a, "error"); !error.empty())
    what += fmt::format(" (last problem: {})", error);
  return what;
}

// A line on stderr while waiting. On a terminal: one line redrawn, shown after a second, erased
// when the wait ends. Elsewhere (a log, a pipe, CI): a plain line every few seconds, so that a
// long wait is never silent. (progress.h counts units of work; a wait has none to count.)
class WaitLine {
 public:
  static constexpr auto kPlainEvery = std::chrono::seconds(5);
  explicit WaitLine(std::string prefix)
      : enabled_(isatty(STDERR_FILENO) == 1),
        prefix_(std::move(prefix)),
        start_(Clock::now()),
        next_plain_(start_ + kPlainEvery) {}
  WaitLine(const WaitLine&) = delete;
  WaitLine& operator=(const WaitLine&) = delete;
  ~WaitLine() {
    if (shown_) {
      std::fputs("\r\x1b[K", stderr);
      std::fflush(stderr);
    }
  }

  void Show(const std::string& text) {
    const auto elapsed = Clock::now() - start_;
    if (!enabled_) {
      if (Clock::now() < next_plain_) return;
      next_plain_ += kPlainEvery;
      std::fputs(fmt::format("{}: {} ({} s)\n", prefix_, text,
                             std::chrono::duration_cast<std::chrono::seconds>(elapsed).count())
                     .c_str(),
                 stderr);
      std::fflush(stderr);
      return;
    }
    if (elapsed < std::chrono::seconds(1)) return;
    static constexpr std::string_view kFrames = "|/-\\";
    const char frame = kFrames[frame_++ % kFrames.size()];
    std::fputs(fmt::format("\r{} {} ({} s)\x1b[K", frame, text,
                           std::chrono::duration_cast<std::chrono::seconds>(elapsed).count())
                   .c_str(),
               stderr);
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  size_t frame_ = 0;
  std::string prefix_;
  Clock::time_point start_;
  Clock::time_point next_plain_;
};

bool StateIn(const Json& a, std::initializer_list<std::string_view> states) {
  return std::ranges::find(states, Text(a, "state")) != states.end();
}

void SleepUntil(Clock::time_point t) {
  if (t > Clock::now()) std::this_thread::sleep_until(t);
}

// Polls the allocation (GET ?wait=1, so that each request stays short) until its state is one
// of `until` or wait_s have passed, and returns it as last seen. A manager that does not
// answer for a while (a restart) is asked again until the time is up.
Result<Json> Await(ManagerClient& c, Json a, std::initializer_list<std::string_view> until,
                   double wait_s, std::string_view sub) {
  const std::string id = Text(a, "id");
  const std::string path = fmt::format("/v1/allocations/{}?wait={}", Escape(id), kPollWaitSeconds);
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(Micros(wait_s));
  WaitLine line(fmt::format("{} {}", sub, id));
  std::optional<Error> no_answer;
  while (!StateIn(a, until) && Clock::now() < deadline) {
    line.Show(no_answer ? fmt::format("the manager: {}; asking again", no_answer->name)
                        : WaitingFor(a));
    const Clock::time_point sent = Clock::now();
    Result<Reply> reply = c.Exchange(Method::kGet, path, nullptr, kPollWaitSeconds);
    if (!reply.ok()) {
      no_answer = reply.error();
      SleepUntil(std::min(sent + kRetryInterval, deadline));
      continue;
    }
    no_answer.reset();
    Result<Json> body = c.Expect(std::move(reply));
    if (!body.ok()) return body.error();
    if (!body.value().is_object()) return NotA(c, "an allocation");
    a = std::move(body).value();
    if (!StateIn(a, until)) SleepUntil(std::min(sent + kMinPollInterval, deadline));
  }
  if (no_answer) {
    return Error{no_answer->name,
                 fmt::format("{}; {} was {} when last seen (see 'dxpu pool show {}')",
                             no_answer->message, id, Text(a, "state"), id)};
  }
  return a;
}

void PrintAllocation(std::ostream& out, const Json& a) {
  std::string what = fmt::format("{}: {}, {} for {}, policy {}", Text(a, "id"), Text(a, "state"),
                                 Gpus(Text(a, "count")), Text(a, "host"), Text(a, "policy"));
  if (!Text(a, "box").empty()) what += fmt::format(" (box {})", Text(a, "box"));
  if (!Text(a, "profile").empty()) what += fmt::format(", profile {}", Text(a, "profile"));
  if (!Text(a, "request_key").empty()) what += fmt::format(", key {}", Text(a, "request_key"));
  out << what << '\n';
  if (!Text(a, "error").empty()) out << "  error: " << Text(a, "error") << '\n';
  if (GpuCount(a) == 0) return;
  std::vector<Row> rows;
  for (const Json& g : a["gpus"])
    rows.push_back({Text(g, "gpu"), Text(g, "host_bdf"), Text(g, "step")});
  PrintTable(out, {"gpu", "host BDF", "step"}, rows, "  ");
}

int Show(const PoolOptions& o, const Json& j, void (*print)(std::ostream&, const Json&)) {
  if (o.json) {
    PrintJson(j);
  } else {
    print(std::cout, j);
  }
  return kExitOk;
}

// --- the subcommands -----------------------------------------------------------------------

int RunStatus(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> s = c.Call(Method::kGet, "/v1/status");
  if (!s.ok()) return Fail(o, sub, s.error());
  if (!s.value().is_object()) return Fail(o, sub, NotA(c, "a status"));
  if (o.json) return ShowJson(s.value());
  const Json& j = s.value();
  std::vector<Row> rows = {
      {"manager", c.url().text},
      {"boxes", fmt::format("{} of {} healthy", Text(j, "boxes_healthy"), Text(j, "boxes"))},
      {"GPUs", fmt::format("{} of {} free", Text(j, "gpus_free"), Text(j, "gpus"))},
      {"hosts", Text(j, "hosts")},
      {"allocations", fmt::format("{} active, {} in progress", Text(j, "allocations_active"),
                                  Text(j, "allocations_in_progress"))},
      {"steps", fmt::format("{} in flight", Text(j, "actions_in_flight"))}};
  if (j.contains("counters") && j["counters"].is_object()) {
    const Json& k = j["counters"];
    rows.push_back({"since start",
                    fmt::format("{} allocations, {} releases, {} refused, {} attach "
                                "timeouts, {} store errors",
                                Text(k, "allocations"), Text(k, "releases"), Text(k, "refusals"),
                                Text(k, "attach_timeouts"), Text(k, "store_errors"))});
  }
  for (const Row& r : rows) std::cout << fmt::format("{:<12} {}\n", r[0], r[1]);
  return kExitOk;
}

int RunBoxes(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> boxes = c.Call(Method::kGet, "/v1/boxes");
  if (!boxes.ok()) return Fail(o, sub, boxes.error());
  if (!boxes.value().is_array()) return Fail(o, sub, NotA(c, "a list of boxes"));
  if (o.json) return ShowJson(boxes.value());
  if (boxes.value().empty()) {
    std::cout << "no boxes (add one: dxpu pool add-box ID --bridge ADDR --fabric ADDR)\n";
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const Json& b : boxes.value())
    rows.push_back({Text(b, "id"), Text(b, "healthy"), Text(b, "management"), Text(b, "fabric")});
  PrintTable(std::cout, {"box", "healthy", "bridge", "fabric"}, rows);
  return kExitOk;
}

int RunAddBox(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Json body = {{"id", o.id}, {"management", o.management}, {"fabric", o.fabric}};
  if (!o.adopt.empty()) body["adopt"] = o.adopt;
  Result<Json> box = c.Call(Method::kPost, "/v1/boxes", &body);
  if (!box.ok()) return Fail(o, sub, box.error());
  if (o.json) return ShowJson(box.value());
  std::cout << fmt::format(
      "{}: added (bridge {}, fabric {}); its GPUs are listed once the manager has probed it\n",
      Text(box.value(), "id"), Text(box.value(), "management"), Text(box.value(), "fabric"));
  return kExitOk;
}

int RunRemoveBox(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> done = c.Call(Method::kDelete, "/v1/boxes/" + Escape(o.id));
  if (!done.ok()) return Fail(o, sub, done.error());
  if (o.json) return ShowJson(done.value());
  std::cout << o.id << ": removed\n";
  return kExitOk;
}

int RunGpus(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  std::vector<std::string> query;
  if (o.free_only) query.emplace_back("state=free");
  if (!o.state.empty()) query.push_back("state=" + Escape(o.state));
  if (!o.box.empty()) query.push_back("box=" + Escape(o.box));
  std::string path = "/v1/gpus";
  for (size_t i = 0; i < query.size(); ++i) path += (i == 0 ? "?" : "&") + query[i];
  Result<Json> gpus = c.Call(Method::kGet, path);
  if (!gpus.ok()) return Fail(o, sub, gpus.error());
  if (!gpus.value().is_array()) return Fail(o, sub, NotA(c, "a list of GPUs"));
  if (o.json) return ShowJson(gpus.value());
  if (gpus.value().empty()) {
    std::cout << (query.empty() ? "no GPUs (a box's GPUs are listed once the manager has probed "
                                  "it: see dxpu pool boxes)\n"
                                : "no such GPUs\n");
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const Json& g : gpus.value()) {
    const Json lease = g.contains("lease") ? g["lease"] : Json();
    rows.push_back({Text(g, "gpu"), Text(g, "profile"), Text(g, "box_bdf"), Text(g, "state"),
                    Text(lease, "host"), Text(lease, "host_bdf"), Text(lease, "allocation"),
                    Text(lease, "step")});
  }
  PrintTable(std::cout,
             {"gpu", "profile", "box BDF", "state", "host", "host BDF", "allocation", "step"},
             rows);
  return kExitOk;
}

int RunHosts(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> hosts = c.Call(Method::kGet, "/v1/hosts");
  if (!hosts.ok()) return Fail(o, sub, hosts.error());
  if (!hosts.value().is_array()) return Fail(o, sub, NotA(c, "a list of hosts"));
  if (o.json) return ShowJson(hosts.value());
  if (hosts.value().empty()) {
    std::cout << "no hosts (a host appears when its dxpu-agent registers)\n";
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const Json& h : hosts.value()) {
    std::string seen;
    if (h.contains("last_seen_ago_ms") && h["last_seen_ago_ms"].is_number_unsigned()) {
      const double ago_s = static_cast<double>(h["last_seen_ago_ms"].get<uint64_t>()) / 1000.0;
      seen = ago_s < 10 ? fmt::format("{:.1f} s ago", ago_s) : fmt::format("{:.0f} s ago", ago_s);
    }
    rows.push_back({Text(h, "id"), Text(h, "node_id"), Text(h, "mode"), Text(h, "agent"),
                    Text(h, "liveness"), seen, Text(h, "boot_id")});
  }
  PrintTable(std::cout, {"host", "node ID", "mode", "agent", "liveness", "last seen", "boot ID"},
             rows);
  return kExitOk;
}

int RunRemoveHost(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> done = c.Call(Method::kDelete, "/v1/hosts/" + Escape(o.id));
  if (!done.ok()) return Fail(o, sub, done.error());
  if (o.json) return ShowJson(done.value());
  std::cout << o.id
            << ": removed (if its dxpu-agent still runs, it registers the host again at its next "
               "heartbeat)\n";
  return kExitOk;
}

// The pool checked from outside: the manager's leases against each bridge's owners and each
// agent's devices (manager/pool_audit.h). Exit 1 when an invariant does not hold.
int RunAudit(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  // Replicas: the leader is audited (a standby sends the client to it; a manager that does not
  // answer is the audit's own error to say).
  (void)c.Exchange(Method::kGet, "/v1/status");
  manager::PoolResult<manager::PoolAudit> a =
      manager::AuditPool(c.url().origin + c.url().prefix, o.tls);
  if (!a.ok()) return Fail(o, sub, Error{a.error().name, a.error().message});
  const manager::PoolAudit& audit = a.value();
  if (o.json) {
    ShowJson(Json{{"consistent", audit.consistent()},
                  {"gpus", audit.gpus},
                  {"leased", audit.leased},
                  {"free", audit.free},
                  {"problems", audit.problems},
                  {"unreachable", audit.unreachable}});
  } else if (audit.consistent()) {
    std::cout << fmt::format(
        "consistent: {} GPUs, {} leased, {} free; every bridge and agent agrees with the "
        "manager\n",
        audit.gpus, audit.leased, audit.free);
  } else {
    for (const std::string& p : audit.problems) std::cout << "problem: " << p << "\n";
    for (const std::string& u : audit.unreachable) std::cout << "unreachable: " << u << "\n";
    if (audit.problems.empty()) {
      std::cout << fmt::format(
          "no problem among the parts that answered ({} GPUs, {} leased, {} free); what the "
          "unreachable parts hold was not checked\n",
          audit.gpus, audit.leased, audit.free);
    }
  }
  if (audit.consistent()) return kExitOk;
  if (o.json) {
    return FailAfterPrint(sub, {audit.problems.empty() ? "unreachable" : "inconsistent",
                                fmt::format("{} problems, {} unreachable (bridges and agents)",
                                            audit.problems.size(), audit.unreachable.size())});
  }
  return kExitFailure;
}

int RunAllocations(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> list = c.Call(Method::kGet, "/v1/allocations");
  if (!list.ok()) return Fail(o, sub, list.error());
  if (!list.value().is_array()) return Fail(o, sub, NotA(c, "a list of allocations"));
  if (o.json) return ShowJson(list.value());
  if (list.value().empty()) {
    std::cout << "no allocations\n";
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const Json& a : list.value()) {
    std::string gpus;
    if (GpuCount(a) > 0) {
      for (const Json& g : a["gpus"]) gpus += (gpus.empty() ? "" : ",") + Text(g, "gpu");
    }
    rows.push_back({Text(a, "id"), Text(a, "host"), Text(a, "count"), Text(a, "policy"),
                    Text(a, "state"), gpus, Text(a, "error")});
  }
  PrintTable(std::cout, {"allocation", "host", "count", "policy", "state", "gpus", "error"}, rows);
  return kExitOk;
}

int RunShow(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> a = c.Call(Method::kGet, "/v1/allocations/" + Escape(AllocationId(o.id)));
  if (!a.ok()) return Fail(o, sub, a.error());
  if (!a.value().is_object()) return Fail(o, sub, NotA(c, "an allocation"));
  return Show(o, a.value(), PrintAllocation);
}

int RunAllocate(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  // --box names the box to prefer: it goes with --policy prefer, which needs it.
  const std::string policy = o.policy.empty() && !o.box.empty() ? "prefer" : o.policy;
  if (policy == "prefer" && o.box.empty()) {
    return Fail(o, sub, Error{"bad-policy", "--policy prefer needs --box ID, the box to prefer"},
                kExitUsage);
  }
  if (!o.box.empty() && policy != "prefer") {
    return Fail(o, sub,
                Error{"bad-policy", fmt::format("--box goes with --policy prefer, not {} (which "
                                                "chooses among every box)",
                                                policy)},
                kExitUsage);
  }
  Json body = {{"host", o.host}, {"count", o.count}};
  if (!policy.empty()) body["policy"] = policy;
  if (!o.box.empty()) body["box"] = o.box;
  if (!o.profile.empty()) body["profile"] = o.profile;
  if (!o.key.empty()) body["request_key"] = o.key;
  Result<Json> made = c.Call(Method::kPost, "/v1/allocations", &body);
  if (!made.ok()) return Fail(o, sub, made.error());
  if (!made.value().is_object()) return Fail(o, sub, NotA(c, "an allocation"));
  Json a = std::move(made).value();
  if (o.wait_s > 0) {
    Result<Json> waited = Await(c, a, {"active", "failed", "releasing", "released"}, o.wait_s, sub);
    if (!waited.ok()) return Fail(o, sub, waited.error());
    a = std::move(waited).value();
  }
  Show(o, a, PrintAllocation);
  const std::string id = Text(a, "id");
  const std::string state = Text(a, "state");
  if (state == "active" || (state == "attaching" && o.wait_s <= 0)) return kExitOk;
  if (state == "attaching") {
    return FailAfterPrint(
        sub, Error{"timeout", fmt::format("{} is still attaching after {}; it goes on (see "
                                          "'dxpu pool show {}', or release it)",
                                          id, FormatDuration(o.wait), id)});
  }
  if (state == "failed") {
    const std::string why = Text(a, "error");
    return FailAfterPrint(
        sub,
        Error{"allocation-failed",
              fmt::format("{} failed: {}", id, why.empty() ? "the manager gave no reason" : why)});
  }
  return FailAfterPrint(
      sub, Error{"already-released",
                 fmt::format("{} is {}: the request key '{}' names an allocation released since",
                             id, state, o.key)});
}

int RunRelease(const PoolOptions& o, ManagerClient& c, std::string_view sub) {
  Result<Json> released = c.Call(Method::kDelete, "/v1/allocations/" + Escape(AllocationId(o.id)));
  if (!released.ok()) return Fail(o, sub, released.error());
  if (!released.value().is_object()) return Fail(o, sub, NotA(c, "an allocation"));
  Json a = std::move(released).value();
  if (o.wait_s > 0) {
    Result<Json> waited = Await(c, a, {"released"}, o.wait_s, sub);
    if (!waited.ok()) return Fail(o, sub, waited.error());
    a = std::move(waited).value();
  }
  Show(o, a, PrintAllocation);
  if (Text(a, "state") == "released" || o.wait_s <= 0) return kExitOk;
  const std::string id = Text(a, "id");
  return FailAfterPrint(
      sub, Error{"timeout", fmt::format("{} is still {} after {}; it goes on (see 'dxpu pool "
                                        "show {}')",
                                        id, Text(a, "state"), FormatDuration(o.wait), id)});
}

// --- the command line ------------------------------------------------------------------------

using RunFn = int (*)(const PoolOptions&, ManagerClient&, std::string_view);

struct Sub {
  CLI::App* app;
  RunFn run;
};

std::string DefaultManager() {
  // Read once, before any thread starts.
  const char* env = std::getenv(kManagerEnv);  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultManager);
}

void CommonOptions(CLI::App* cmd, PoolOptions& o) {
  cmd->add_option(
         "--manager", o.manager,
         fmt::format("the manager's URL, or its replicas' comma-separated (default: ${}, else {})",
                     kManagerEnv, kDefaultManager))
      ->capture_default_str();
  AddDurationOption(*cmd, "--timeout", &o.timeout,
                    "how long to wait for each HTTP answer (100ms to 1h; a bare number is seconds)",
                    {}, DurationUnit::kSeconds);
  cmd->add_flag("--json", o.json, "print the manager's JSON answer instead of a table");
  manager::AddClientTlsOptions(*cmd, &o.tls);
}

constexpr const char* kExitStatus =
    "Exit status: 0 done, 1 refused or no answer, 2 bad command line.";

// A subcommand with the common options; its footer: details (if any), the examples, the exit
// status.
CLI::App* AddSub(CLI::App* pool, PoolOptions& o, const char* name, const std::string& what,
                 const std::string& examples, const std::string& details = "") {
  CLI::App* cmd = pool->add_subcommand(name, what);
  CommonOptions(cmd, o);
  const bool several = examples.find('\n') + 1 < examples.size();
  cmd->footer(fmt::format("{}{}:\n{}{}", details.empty() ? "" : details + "\n",
                          several ? "Examples" : "Example", examples, kExitStatus));
  return cmd;
}

// status, boxes, add-box, remove-box, gpus, hosts.
void AddInventoryCommands(CLI::App* pool, PoolOptions& o, std::vector<Sub>& subs) {
  CLI::App* status = AddSub(pool, o, "status",
                            "The pool in numbers: boxes healthy, GPUs free, hosts, allocations "
                            "active and in progress",
                            "  dxpu pool status --manager http://10.0.0.5:17490\n");
  subs.push_back({status, RunStatus});

  CLI::App* boxes = AddSub(pool, o, "boxes",
                           "List the GPU boxes (dxpu-bridges): health, management and fabric "
                           "addresses",
                           "  dxpu pool boxes --json\n");
  subs.push_back({boxes, RunBoxes});

  CLI::App* add_box =
      AddSub(pool, o, "add-box",
             "Add a GPU box (a dxpu-bridge), or change its addresses; the manager learns its "
             "GPUs from the bridge",
             "  dxpu pool add-box box-a --bridge 127.0.0.1:17481 --fabric "
             "udp:127.0.0.1:17480\n");
  add_box->add_option("ID", o.id, "the box's name (A-Z a-z 0-9 . _ -)")->required();
  add_box
      ->add_option("--bridge,--management", o.management,
                   "the bridge's management socket: udp:IP:PORT (or IP:PORT), or unix:PATH "
                   "in the manager's --bridge-socket-dir")
      ->required();
  add_box
      ->add_option("--fabric", o.fabric,
                   "where hosts reach the bridge: udp:IP:PORT, or its MAC for dxpu.ko")
      ->required();
  add_box
      ->add_option("--adopt", o.adopt,
                   "reset: take a bridge that holds assignments this pool did not make (or does "
                   "not answer), resetting and scrubbing those GPUs; their hosts lose them. The "
                   "manager refuses such a bridge without it, naming what it holds")
      ->check(CLI::IsMember({"reset"}));
  subs.push_back({add_box, RunAddBox});

  CLI::App* remove_box = AddSub(pool, o, "remove-box",
                                "Remove a GPU box from the pool (refused while any of its GPUs "
                                "is held)",
                                "  dxpu pool remove-box box-a\n");
  remove_box->add_option("ID", o.id, "the box's name")->required();
  subs.push_back({remove_box, RunRemoveBox});

  CLI::App* gpus = AddSub(pool, o, "gpus",
                          "List the GPUs: profile, box BDF, state (free, leased, unavailable) and "
                          "who holds them",
                          "  dxpu pool gpus --free --box box-a\n");
  auto* free_flag = gpus->add_flag("--free", o.free_only, "only the free GPUs");
  gpus->add_option("--state", o.state, "only the GPUs in this state")
      ->check(CLI::IsMember({"free", "leased", "unavailable"}))
      ->excludes(free_flag);
  gpus->add_option("--box", o.box, "only this box's GPUs");
  subs.push_back({gpus, RunGpus});

  CLI::App* hosts = AddSub(pool, o, "hosts",
                           "List the hosts (their dxpu-agents register them): node ID, mode, "
                           "agent address, liveness (alive, dead: 3 heartbeats missed), boot ID",
                           "  dxpu pool hosts\n");
  subs.push_back({hosts, RunHosts});

  CLI::App* remove_host =
      AddSub(pool, o, "remove-host",
             "Remove a host's registration (refused while it holds GPUs: release its allocations "
             "first)",
             "  dxpu pool remove-host h2\n",
             "Stop the host's dxpu-agent first: a running agent registers its host again at its\n"
             "next heartbeat. Frees the host's node ID for another host.\n");
  remove_host->add_option("NAME", o.id, "the host's name")->required();
  subs.push_back({remove_host, RunRemoveHost});

  CLI::App* audit =
      AddSub(pool, o, "audit",
             "Check the pool from outside: every lease against its bridge's owners (management "
             "STATUS) and its host's agent; exit 1 with the problems when they disagree",
             "  dxpu pool audit\n  dxpu pool audit --json\n",
             "Meaningful when nothing is in progress (dxpu pool status: 0 in progress). This host\n"
             "must reach each bridge's management address and each agent's address as the manager\n"
             "does.\n");
  subs.push_back({audit, RunAudit});
}

// allocations, allocate, release, show.
void AddAllocationCommands(CLI::App* pool, PoolOptions& o, std::vector<Sub>& subs) {
  CLI::App* allocations =
      AddSub(pool, o, "allocations", "List the allocations: host, count, policy, state, GPUs",
             "  dxpu pool allocations\n  dxpu pool list --json\n");
  allocations->alias("list");
  subs.push_back({allocations, RunAllocations});

  CLI::App* allocate = AddSub(
      pool, o, "allocate", "Give a host GPUs from the pool and wait until they are attached",
      "  dxpu pool allocate --host h1 --count 2 --policy spread\n"
      "  dxpu pool allocate --host h1 --count 1 --box box-b --key job-42 --wait 0\n",
      "The manager reserves free GPUs, assigns them to the host at their bridges and has the\n"
      "host's agent hot-add them. This prints the allocation once it is active (exit 0) or\n"
      "failed (exit 1, with the reason); still attaching after --wait is exit 1 too.\n"
      "Interrupting the wait does not stop the allocation: see it with 'dxpu pool show ID'.\n"
      "With --json, the allocation's JSON is printed whatever its state; why it is exit 1\n"
      "goes to stderr.\n");
  allocate->add_option("--host", o.host, "the host, as its agent registered it")->required();
  allocate->add_option("--count", o.count, "how many GPUs")->required();
  allocate
      ->add_option("--policy", o.policy,
                   "pack: as few boxes as possible; spread: one per box in turn; prefer: the "
                   "--box first (default: pack, or prefer with --box)")
      ->check(CLI::IsMember({"pack", "spread", "prefer"}));
  allocate->add_option("--box", o.box, "the box to prefer (implies --policy prefer)");
  allocate->add_option("--profile", o.profile,
                       "the GPU profile (default: the one with the most free GPUs)");
  allocate->add_option("--key", o.key,
                       "an idempotency key: the same key again answers the same allocation, so "
                       "a lost answer can be retried");
  AddDurationOption(*allocate, "--wait", &o.wait,
                    "how long to wait for the allocation to be active (0s: answer at once, while "
                    "it is attaching; a bare number is seconds)",
                    {}, DurationUnit::kSeconds);
  subs.push_back({allocate, RunAllocate});

  CLI::App* release = AddSub(
      pool, o, "release", "Release an allocation and wait until its GPUs are back in the pool",
      "  dxpu pool release alloc-3\n  dxpu pool release 3 --wait 0\n",
      "The host's agent hot-removes the GPUs, then their bridge resets and scrubs them; this\n"
      "prints the allocation once it is released (exit 0). Releasing one that is already\n"
      "released, or failed, is refused (exit 1).\n");
  release->add_option("ID", o.id, "the allocation: alloc-N, or N")->required();
  AddDurationOption(*release, "--wait", &o.wait,
                    "how long to wait for the GPUs to be back (0s: answer at once, while it is "
                    "releasing; a bare number is seconds)",
                    {}, DurationUnit::kSeconds);
  subs.push_back({release, RunRelease});

  CLI::App* show = AddSub(pool, o, "show", "Show one allocation: its state and GPUs",
                          "  dxpu pool show alloc-3 --json\n");
  show->add_option("ID", o.id, "the allocation: alloc-N, or N")->required();
  subs.push_back({show, RunShow});
}

}  // namespace

Command AddPoolCommand(CLI::App& parent) {
  auto o = std::make_shared<PoolOptions>();
  o->manager = DefaultManager();
  CLI::App* pool = parent.add_subcommand(
      "pool",
      "Ask the pool manager (dxpu-manager) about its GPU boxes, GPUs, hosts and allocations; "
      "allocate GPUs to a host and release them");
  pool->require_subcommand(1);
  std::vector<Sub> subs;

  AddInventoryCommands(pool, *o, subs);
  AddAllocationCommands(pool, *o, subs);
  CLI::App* simulate = nullptr;
  std::function<int()> run_simulate = AddPoolSimulateCommand(*pool, &simulate);

  // After the subcommands: CLI11 copies a parent's footer into subcommands made later.
  pool->footer(fmt::format(
      "Examples:\n"
      "  dxpu-manager --db pool.db &\n"
      "  dxpu pool add-box box-a --bridge 127.0.0.1:17481 --fabric udp:127.0.0.1:17480\n"
      "  dxpu pool gpus --free\n"
      "  dxpu pool allocate --host h1 --count 2 --policy spread\n"
      "  dxpu pool release alloc-1\n"
      "The manager: --manager URL, else ${}, else {}.\n{}",
      kManagerEnv, kDefaultManager, kExitStatus));

  return {pool, [o, subs, simulate, run_simulate]() -> int {
            if (simulate->parsed()) return run_simulate();
            for (const Sub& s : subs) {
              if (!s.app->parsed()) continue;
              const std::string name = s.app->get_name();
              std::vector<ManagerUrl> urls;
              for (const std::string& text : manager::SplitUrls(o->manager)) {
                Result<ManagerUrl> url = ParseManagerUrl(text);
                if (!url.ok()) return Fail(*o, name, url.error(), kExitUsage);
                urls.push_back(std::move(url).value());
              }
              if (urls.empty()) {
                return Fail(*o, name, Error{"bad-url", "--manager is empty"}, kExitUsage);
              }
              using std::chrono::seconds;
              if (o->timeout < std::chrono::milliseconds(100) || o->timeout > seconds(3600)) {
                return Fail(*o, name,
                            Error{"bad-timeout", fmt::format("--timeout {} is out of range: 100ms "
                                                             "to 1h",
                                                             FormatDuration(o->timeout))},
                            kExitUsage);
              }
              if (o->wait > seconds(86400)) {
                return Fail(*o, name,
                            Error{"bad-wait", fmt::format("--wait {} is out of range: 0s to 24h",
                                                          FormatDuration(o->wait))},
                            kExitUsage);
              }
              o->timeout_s = std::chrono::duration<double>(o->timeout).count();
              o->wait_s = std::chrono::duration<double>(o->wait).count();
              if (o->manager.find("https://") != std::string::npos && o->tls.any()) {
                if (const std::string bad =
                        manager::CheckTlsFiles(o->tls, "--tls-cert, --tls-key and --tls-ca");
                    !bad.empty())
                  return Fail(*o, name, Error{"bad-tls", bad}, kExitUsage);
              }
              ManagerClient client(std::move(urls), o->timeout_s, o->tls);
              return s.run(*o, client, name);
            }
            return kExitUsage;
          }};
}

}  // namespace dxpu::cli
