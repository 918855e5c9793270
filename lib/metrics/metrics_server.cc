// metrics_server.cc - the Prometheus endpoint: HTTP/1.1 on non-blocking TCP sockets, driven
// by the event loop's readable callbacks and timers.
#include "metrics/metrics_server.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <string_view>
#include <system_error>
#include <utility>

#include "metrics/prometheus_writer.h"
#include "util/errno_text.h"

namespace dxpu::metrics {
namespace {

constexpr int kBacklog = 64;
constexpr int kAcceptsPerWake = 64;  // then other work runs; the listener is level-triggered
constexpr int kReadsPerWake = 16;
constexpr std::chrono::milliseconds kAcceptPause{100};  // after EMFILE and the like

using util::ErrnoText;

std::string_view Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

}  // namespace

std::unique_ptr<MetricsServer> MetricsServer::Create(link::EventLoop& loop,
                                                     const link::LinkAddress& listen,
                                                     BodyCallback body, std::string* error,
                                                     const MetricsServerOptions& options) {
  auto fail = [&](std::string why) -> std::unique_ptr<MetricsServer> {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (!listen.is_ip()) return fail(fmt::format("'{}' is not an IP address", listen.ToString()));
  if (!body) return fail("no body callback");
  if (options.max_connections == 0 || options.max_head_bytes < 16) {
    return fail("max_connections must be at least 1 and max_head_bytes at least 16");
  }
  const int family = listen.ip().family;
  link::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd.valid()) return fail("socket: " + ErrnoText(errno));
  const int on = 1;
  // A restarted daemon rebinds at once, past the old connections' TIME_WAIT.
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    return fail("SO_REUSEADDR: " + ErrnoText(errno));
  }
  if (family == AF_INET6 &&
      ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) {
    return fail("IPV6_V6ONLY: " + ErrnoText(errno));
  }
  sockaddr_storage ss{};
  const socklen_t len = listen.ToSockaddr(&ss);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    return fail(fmt::format("bind {}: {}", listen.ToString(), ErrnoText(errno)));
  }
  if (::listen(fd.get(), kBacklog) != 0) return fail("listen: " + ErrnoText(errno));
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    return fail("getsockname: " + ErrnoText(errno));
  }
  auto local =
      link::LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&bound), bound_len);
  if (!local) return fail("getsockname: not an IP address");
  link::UniqueFd write_epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!write_epoll.valid()) return fail("epoll_create1: " + ErrnoText(errno));

  std::unique_ptr<MetricsServer> server(new MetricsServer(  // private constructor
      loop, std::move(fd), std::move(write_epoll), *local, std::move(body), options));
  MetricsServer* raw = server.get();
  if (const std::error_code ec = loop.AddFd(raw->listener_.get(), [raw] { raw->OnAcceptable(); })) {
    raw->accepting_ = false;
    return fail("event loop: " + ec.message());
  }
  if (const std::error_code ec =
          loop.AddFd(raw->write_epoll_.get(), [raw] { raw->OnWritable(); })) {
    raw->write_epoll_.Reset();
    return fail("event loop: " + ec.message());
  }
  spdlog::debug("metrics: listening on {}", raw->local_.ToString());
  return server;
}

MetricsServer::MetricsServer(link::EventLoop& loop, link::UniqueFd listener,
                             link::UniqueFd write_epoll, link::LinkAddress local, BodyCallback body,
                             const MetricsServerOptions& options)
    : loop_(loop),
      listener_(std::move(listener)),
      write_epoll_(std::move(write_epoll)),
      local_(std::move(local)),
      body_(std::move(body)),
      options_(options) {}

MetricsServer::~MetricsServer() {
  while (!connections_.empty()) Close(connections_.begin()->first);
  if (resume_timer_ != 0) loop_.CancelTimer(resume_timer_);
  if (accepting_) loop_.RemoveFd(listener_.get());
  if (write_epoll_.valid()) loop_.RemoveFd(write_epoll_.get());
}

void MetricsServer::PauseAccepting() {
  loop_.RemoveFd(listener_.get());
  accepting_ = false;
  resume_timer_ = loop_.AddTimer(link::EventLoop::Clock::now() + kAcceptPause, [this] {
    resume_timer_ = 0;
    accepting_ = !loop_.AddFd(listener_.get(), [this] { OnAcceptable(); });
  });
}

void MetricsServer::OnAcceptable() {
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    link::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM: the listener stays readable, so stop polling it for
      // a while rather than spin.
      spdlog::warn("metrics: accept: {}; pausing for {} ms", ErrnoText(err), kAcceptPause.count());
      PauseAccepting();
      return;
    }
    if (connections_.size() >= options_.max_connections && !MakeRoom()) {
      ++counters_.rejected;  // closed by fd's destructor
      continue;
    }
    const uint64_t id = next_id_++;
    Connection& c = connections_[id];
    c.fd = std::move(fd);
    c.reader = HttpRequestReader(options_.max_head_bytes);
    if (loop_.AddFd(c.fd.get(), [this, id] { OnReadable(id); })) {
      connections_.erase(id);
      continue;
    }
    ++counters_.accepted;
    Arm(id, c, options_.request_timeout);
  }
}

bool MetricsServer::MakeRoom() {
  for (const Phase phase : {Phase::kReading, Phase::kLingering}) {
    for (const auto& [id, c] : connections_) {  // by id: the oldest first
      if (c.phase != phase) continue;
      ++counters_.evicted;
      Close(id);
      return true;
    }
  }
  return false;
}

void MetricsServer::Arm(uint64_t id, Connection& c, std::chrono::milliseconds after) {
  if (c.timer != 0) loop_.CancelTimer(c.timer);
  c.timer = loop_.AddTimer(link::EventLoop::Clock::now() + after, [this, id] {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    it->second.timer = 0;  // fired
    if (it->second.phase != Phase::kLingering) ++counters_.timeouts;
    Close(id);
  });
}

void MetricsServer::OnReadable(uint64_t id) {
  std::array<char, 4096> buf{};
  for (int i = 0; i < kReadsPerWake; ++i) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    Connection& c = it->second;
    const ssize_t n = ::recv(c.fd.get(), buf.data(), buf.size(), 0);
    if (n > 0) {
      // Bytes after the request head, and anything once the response started, are dropped.
      if (c.phase == Phase::kReading &&
          c.reader.Feed(std::string_view(buf.data(), static_cast<size_t>(n))) !=
              HttpRequestReader::State::kIncomplete) {
        c.out = Response(c.reader);
        c.phase = Phase::kWriting;
        Flush(id, c);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && c.phase == Phase::kWriting) {
      // The client has finished sending but may still read: stop polling (EOF stays
      // readable) and finish the response.
      loop_.RemoveFd(c.fd.get());
      c.reading = false;
      return;
    }
    Close(id);  // EOF before a whole request or while lingering, or an error
    return;
  }
}

void MetricsServer::OnWritable() {
  std::array<epoll_event, 16> events{};
  const int n = ::epoll_wait(write_epoll_.get(), events.data(), static_cast<int>(events.size()), 0);
  for (int i = 0; i < n; ++i) {
    const uint64_t id = events[static_cast<size_t>(i)].data.u64;
    auto it = connections_.find(id);
    if (it != connections_.end() && it->second.phase == Phase::kWriting) Flush(id, it->second);
  }
}

void MetricsServer::Flush(uint64_t id, Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.waiting_to_write) {
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.u64 = id;
        if (::epoll_ctl(write_epoll_.get(), EPOLL_CTL_ADD, c.fd.get(), &ev) != 0) {
          Close(id);
          return;
        }
        c.waiting_to_write = true;
      }
      return;
    }
    Close(id);  // the client went away (EPIPE, ECONNRESET)
    return;
  }
  if (c.waiting_to_write) {
    ::epoll_ctl(write_epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
    c.waiting_to_write = false;
  }
  c.out = std::string();
  if (!c.reading || ::shutdown(c.fd.get(), SHUT_WR) != 0) {
    Close(id);  // the client has closed its side already: nothing to linger for
    return;
  }
  c.phase = Phase::kLingering;
  Arm(id, c, options_.linger_timeout);
}

void MetricsServer::Close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  if (c.reading) loop_.RemoveFd(c.fd.get());
  if (c.waiting_to_write) ::epoll_ctl(write_epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  if (c.timer != 0) loop_.CancelTimer(c.timer);
  connections_.erase(it);  // closes the socket
}

std::string MetricsServer::Response(const HttpRequestReader& reader) {
  int status = 200;
  std::string body;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view extra_headers;
  bool head_only = false;
  if (reader.state() == HttpRequestReader::State::kError) {
    status = reader.error_status();
    body = reader.error() + "\n";
    ++counters_.bad_requests;
    spdlog::debug("metrics: {} {}", status, reader.error());
  } else {
    const HttpRequest& req = reader.request();
    head_only = req.method == "HEAD";
    if (req.method != "GET" && !head_only) {
      status = 405;
      body = "method not allowed\n";
      extra_headers = "Allow: GET, HEAD\r\n";
    } else if (req.path() == "/metrics") {
      body = body_();
      content_type = kPrometheusContentType;
      ++counters_.scrapes;
    } else if (req.path() == "/healthz") {
      body = "ok\n";
    } else {
      status = 404;
      body = "not found\n";
    }
  }
  ++counters_.responses;
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
      status, Reason(status), content_type, body.size(), extra_headers);
  if (!head_only) out += body;
  return out;
}

}  // namespace dxpu::metrics
