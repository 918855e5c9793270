// MetricsServer (lib/metrics/metrics_server.h) on 127.0.0.1 and ::1, port 0, with real TCP
// clients: non-blocking sockets in the test thread, which also drives the event loop with
// RunOnce. Every status, big bodies, slow and half-closed clients, garbage, the idle timeout
// and the connection limit.
#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "link/event_loop.h"
#include "link/unique_fd.h"
#include "tlp_testutil.h"

namespace dxpu::metrics {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A TCP client on a non-blocking socket.
class Client {
 public:
  explicit Client(const link::LinkAddress& to) {
    sockaddr_storage ss{};
    const socklen_t len = to.ToSockaddr(&ss);
    fd_.Reset(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int r = ::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&ss), len);
    connected_ = r == 0 || errno == EINPROGRESS;
  }

  bool connected() const { return connected_; }

  // Sends what the socket takes now: the bytes sent, or -1 when the connection is gone.
  ssize_t SendSome(std::string_view data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_.get(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else if (n < 0 && errno != EINTR) {
        return -1;
      }
    }
    return static_cast<ssize_t>(sent);
  }

  // Sends everything, if the socket buffer takes it at once (small amounts).
  bool Send(std::string_view data) { return SendSome(data) == static_cast<ssize_t>(data.size()); }

  void ShutdownWrite() { ::shutdown(fd_.get(), SHUT_WR); }

  // Reads what has arrived; notes EOF and resets.
  void Poll() {
    char buf[65536];
    while (!closed_) {
      const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        closed_ = true;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return;
      } else if (errno != EINTR) {
        closed_ = true;
        reset_ = errno == ECONNRESET;
      }
    }
  }

  bool closed() const { return closed_; }
  bool reset() const { return reset_; }
  const std::string& received() const { return received_; }

 private:
  link::UniqueFd fd_;
  bool connected_ = false;
  bool closed_ = false;
  bool reset_ = false;
  std::string received_;
};

bool AllClosed(const std::vector<Client*>& clients) {
  return std::ranges::all_of(clients, [](const Client* c) { return c->closed(); });
}

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// Splits a response; status 0 if it is not one.
Response ParseResponse(const std::string& text) {
  Response r;
  const size_t head_end = text.find("\r\n\r\n");
  if (head_end == std::string::npos || !text.starts_with("HTTP/1.1 ")) return r;
  r.status = std::stoi(text.substr(9, 3));
  size_t at = text.find("\r\n") + 2;
  while (at < head_end) {
    const size_t eol = text.find("\r\n", at);
    const std::string line = text.substr(at, eol - at);
    const size_t colon = line.find(": ");
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(colon + 2);
    at = eol + 2;
  }
  r.body = text.substr(head_end + 4);
  return r;
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = link::EventLoop::Create();
    ASSERT_TRUE(loop.ok()) << loop.error.message();
    loop_ = std::move(loop.link);
  }

  void Start(const MetricsServerOptions& options = {}, const char* ip = "127.0.0.1") {
    std::string error;
    server_ = MetricsServer::Create(
        *loop_, *link::LinkAddress::FromIp(ip, 0),
        [this] {
          ++scrapes_;
          return body_;
        },
        &error, options);
    ASSERT_NE(server_, nullptr) << error;
  }

  // Runs the loop and polls the clients until done() or the time is up; false on timeout.
  bool RunUntil(const std::function<bool()>& done, const std::vector<Client*>& clients,
                milliseconds limit = milliseconds(5000)) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > deadline) return false;
      loop_->RunOnce(milliseconds(2));
      for (Client* c : clients) c->Poll();
    }
    return true;
  }

  // Sends everything, running the loop while the socket buffer is full; false if the
  // connection went away first.
  bool SendAll(Client& c, std::string_view data) {
    const auto deadline = Clock::now() + milliseconds(5000);
    while (!data.empty() && Clock::now() < deadline) {
      const ssize_t n = c.SendSome(data);
      if (n < 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
      if (!data.empty()) loop_->RunOnce(milliseconds(1));
    }
    return data.empty();
  }

  // Sends a request on a new connection and returns all the server sent before closing.
  std::string Exchange(std::string_view request) {
    Client c(server_->local_address());
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.Send(request));
    EXPECT_TRUE(RunUntil([&] { return c.closed(); }, {&c})) << "no close after " << request;
    return c.received();
  }

  std::unique_ptr<link::EventLoop> loop_;
  std::unique_ptr<MetricsServer> server_;
  std::string body_ = "# TYPE up gauge\nup 1\n";
  int scrapes_ = 0;
};

TEST_F(MetricsServerTest, ReportsTheBoundPort) {
  Start();
  const link::LinkAddress& a = server_->local_address();
  ASSERT_TRUE(a.is_ip());
  EXPECT_EQ(a.ip().family, AF_INET);
  EXPECT_NE(a.ip().port, 0);
  EXPECT_EQ(a.ToString(), "127.0.0.1:" + std::to_string(a.ip().port));
}

TEST_F(MetricsServerTest, MetricsBodyIsTheCallbacks) {
  Start();
  body_ = "# HELP up Whether the bridge is up.\n# TYPE up gauge\nup 1\n";
  const Response r = ParseResponse(Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers.at("content-length"), std::to_string(body_.size()));
  EXPECT_EQ(r.headers.at("connection"), "close");
  EXPECT_EQ(r.body, body_);
  EXPECT_EQ(scrapes_, 1);
  // Each scrape asks the callback again.
  body_ = "up 0\n";
  EXPECT_EQ(ParseResponse(Exchange("GET /metrics?x=1 HTTP/1.0\r\n\r\n")).body, "up 0\n");
  EXPECT_EQ(scrapes_, 2);
  EXPECT_EQ(server_->counters().scrapes, 2u);
  EXPECT_EQ(server_->counters().responses, 2u);
}

TEST_F(MetricsServerTest, HealthzNotFoundMethodNotAllowedHead) {
  Start();
  Response r = ParseResponse(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  r = ParseResponse(Exchange("GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(r.status, 404);
  r = ParseResponse(Exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(r.status, 404);
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "BREW"}) {
    r = ParseResponse(Exchange(std::string(method) + " /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.headers.at("allow"), "GET, HEAD") << method;
  }
  EXPECT_EQ(scrapes_, 0);
  // HEAD: the headers a GET would have, no body.
  const std::string head = Exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  r = ParseResponse(head);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-length"), std::to_string(body_.size()));
  EXPECT_EQ(r.body, "");
}

TEST_F(MetricsServerTest, BadRequests) {
  Start();
  EXPECT_EQ(ParseResponse(Exchange("GET / HTTP/1.1\r\n\r\n")).status, 400);  // no Host
  EXPECT_EQ(ParseResponse(Exchange("GET / HTTP/2.0\r\nHost: x\r\n\r\n")).status, 505);
  EXPECT_EQ(ParseResponse(Exchange(std::string("\x16\x03\x01\x02\x00\x01\r\n\r\n", 10))).status,
            400);  // a TLS ClientHello, say
  EXPECT_EQ(server_->counters().bad_requests, 3u);
}

TEST_F(MetricsServerTest, OversizeHeadIs431AndClosed) {
  Start();
  const std::string big =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(9000, 'p') + "\r\n\r\n";
  const Response r = ParseResponse(Exchange(big));
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(scrapes_, 0);
  // A head just under 8 KiB is fine.
  const std::string fits =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(8000, 'p') + "\r\n\r\n";
  EXPECT_EQ(ParseResponse(Exchange(fits)).status, 200);
}

// A body far larger than the socket buffers goes out in pieces as the client reads.
TEST_F(MetricsServerTest, LargeBody) {
  Start();
  body_.clear();
  for (int i = 0; body_.size() < (4u << 20); ++i) {
    body_ += "dxpu_big_total{i=\"" + std::to_string(i) + "\"} " + std::to_string(i * 7) + "\n";
  }
  const Response r = ParseResponse(Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), body_.size());
  EXPECT_TRUE(r.body == body_);
}

TEST_F(MetricsServerTest, RequestInPiecesAndHalfClose) {
  Start();
  Client c(server_->local_address());
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (char ch : request) {
    ASSERT_TRUE(c.Send(std::string(1, ch)));
    loop_->RunOnce(milliseconds(0));
  }
  // The client says it is done sending; it still gets its answer.
  c.ShutdownWrite();
  ASSERT_TRUE(RunUntil([&] { return c.closed(); }, {&c}));
  EXPECT_EQ(ParseResponse(c.received()).body, body_);
  EXPECT_FALSE(c.reset());
}

// Input after the request (a body, a pipelined request, junk) does not reset the connection
// before the client has read the response.
TEST_F(MetricsServerTest, InputAfterTheRequestDoesNotDestroyTheResponse) {
  Start();
  auto c = std::make_unique<Client>(server_->local_address());
  ASSERT_TRUE(c->Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(RunUntil([&] { return server_->counters().responses == 1; }, {}));
  ASSERT_TRUE(SendAll(*c, std::string(100000, 'j')));
  ASSERT_TRUE(RunUntil([&] { return c->closed(); }, {c.get()}));
  EXPECT_FALSE(c->reset());
  EXPECT_EQ(ParseResponse(c->received()).body, body_);
  EXPECT_EQ(server_->counters().responses, 1u);
  // The server lingers until the client closes, well before linger_timeout.
  EXPECT_EQ(server_->connections(), 1u);
  c.reset();
  ASSERT_TRUE(RunUntil([&] { return server_->connections() == 0; }, {}, milliseconds(1000)));
  EXPECT_EQ(server_->counters().timeouts, 0u);
}

TEST_F(MetricsServerTest, IdleClientIsClosedAfterTheTimeout) {
  MetricsServerOptions o;
  o.request_timeout = milliseconds(100);
  Start(o);
  const auto start = Clock::now();
  Client idle(server_->local_address());
  Client partial(server_->local_address());
  ASSERT_TRUE(partial.Send("GET /metrics HTTP/1.1\r\n"));  // and never the rest
  ASSERT_TRUE(RunUntil([&] { return idle.closed() && partial.closed(); }, {&idle, &partial}));
  EXPECT_GE(Clock::now() - start, milliseconds(100));
  EXPECT_EQ(idle.received(), "");
  EXPECT_EQ(partial.received(), "");
  EXPECT_EQ(server_->counters().timeouts, 2u);
  EXPECT_EQ(server_->connections(), 0u);
  EXPECT_EQ(scrapes_, 0);
}

TEST_F(MetricsServerTest, AtMostMaxConnections) {
  Start();  // 16
  std::vector<std::unique_ptr<Client>> clients;
  clients.reserve(16);
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<Client>(server_->local_address()));
  }
  ASSERT_TRUE(RunUntil([&] { return server_->connections() == 16; }, {}));
  // The 17th makes room: the oldest connection, which has sent nothing, is closed.
  Client extra(server_->local_address());
  ASSERT_TRUE(RunUntil([&] { return server_->counters().evicted == 1; }, {&extra}));
  clients.front()->Poll();
  ASSERT_TRUE(RunUntil([&] { return clients.front()->closed(); }, {clients.front().get()}));
  EXPECT_EQ(clients.front()->received(), "");
  EXPECT_EQ(server_->counters().rejected, 0u);
  EXPECT_EQ(server_->connections(), 16u);
  // The 15 others and the 17th are all served.
  std::vector<Client*> all = {&extra};
  ASSERT_TRUE(extra.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  for (size_t i = 1; i < clients.size(); ++i) {
    ASSERT_TRUE(clients[i]->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    all.push_back(clients[i].get());
  }
  ASSERT_TRUE(RunUntil([&] { return AllClosed(all); }, all));
  for (Client* c : all) EXPECT_EQ(ParseResponse(c->received()).status, 200);
  all.clear();
  clients.clear();
  ASSERT_TRUE(RunUntil([&] { return server_->connections() == 0; }, {}));
  EXPECT_EQ(ParseResponse(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).status, 200);
  EXPECT_EQ(server_->counters().accepted, 18u);
}

// Issue 32: 16 idle connections and 16 slowloris ones (a byte now and then, never a whole
// request) held every slot, and /healthz was refused for the 10 s of request_timeout. Now each
// new connection closes the oldest of them, and /healthz is answered at once, again and again.
TEST_F(MetricsServerTest, IdleAndSlowConnectionsCannotLockOutHealthz) {
  Start();  // 16, request_timeout 10 s
  std::vector<std::unique_ptr<Client>> squatters;
  for (int i = 0; i < 32; ++i) {
    squatters.push_back(std::make_unique<Client>(server_->local_address()));
    if (i % 2 == 1) {
      ASSERT_TRUE(squatters.back()->Send("GET /metr"));
    }
  }
  ASSERT_TRUE(RunUntil([&] { return server_->counters().accepted == 32; }, {}));
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ParseResponse(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  }
  EXPECT_EQ(server_->counters().rejected, 0u);
  // 16 squatters made room for the 16 after them, and the first /healthz for itself; the
  // next ones may find room left by the previous one, or make it.
  EXPECT_GE(server_->counters().evicted, 17u);
}

// Random bytes from many clients: each connection ends (answered or timed out), and the
// server then still serves.
TEST_F(MetricsServerTest, GarbageNeverHurts) {
  MetricsServerOptions o;
  o.request_timeout = milliseconds(200);
  Start(o);
  const uint64_t seed = dxpu::test::test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::unique_ptr<Client>> clients;
    std::vector<Client*> all;
    for (int i = 0; i < 12; ++i) {
      auto c = std::make_unique<Client>(server_->local_address());
      std::string junk((rng() % 3 == 0) ? "GET /metrics HTTP/1.1\r\n" : "");
      for (size_t n = rng() % 12000; n > 0; --n) junk += static_cast<char>(rng());
      if (rng() % 2 == 0) junk += "\r\n\r\n";
      SendAll(*c, junk);  // a rejected or answered connection may refuse the rest
      if (rng() % 2 == 0) c->ShutdownWrite();
      all.push_back(c.get());
      clients.push_back(std::move(c));
    }
    ASSERT_TRUE(RunUntil([&] { return AllClosed(all); }, all)) << "seed=" << seed;
    for (Client* c : all) {
      const Response r = ParseResponse(c->received());
      EXPECT_TRUE(c->received().empty() || r.status == 200 || r.status == 400 || r.status == 431 ||
                  r.status == 505)
          << "seed=" << seed << " " << c->received().substr(0, 80);
    }
  }
  EXPECT_EQ(ParseResponse(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).status, 200);
}

TEST_F(MetricsServerTest, Ipv6Loopback) {
  Start({}, "::1");
  EXPECT_EQ(server_->local_address().ip().family, AF_INET6);
  EXPECT_EQ(ParseResponse(Exchange("GET /metrics HTTP/1.1\r\nHost: [::1]\r\n\r\n")).body, body_);
}

TEST_F(MetricsServerTest, DestroyedWithOpenConnections) {
  Start();
  Client a(server_->local_address());
  Client b(server_->local_address());
  ASSERT_TRUE(b.Send("GET /met"));
  ASSERT_TRUE(RunUntil([&] { return server_->connections() == 2; }, {}));
  server_.reset();
  a.Poll();
  b.Poll();
  EXPECT_TRUE(a.closed());
  EXPECT_TRUE(b.closed());
  // The loop holds nothing of the server any more.
  EXPECT_FALSE(loop_->RunOnce(milliseconds(0)));
}

TEST_F(MetricsServerTest, CreateErrors) {
  Start();
  std::string error;
  // The port is taken.
  EXPECT_EQ(MetricsServer::Create(
                *loop_, server_->local_address(), [] { return ""; }, &error),
            nullptr);
  EXPECT_EQ(error, "bind " + server_->local_address().ToString() + ": Address already in use");
  EXPECT_EQ(MetricsServer::Create(
                *loop_, link::LinkAddress::Unix("/tmp/m.sock"), [] { return ""; }, &error),
            nullptr);
  EXPECT_EQ(error, "'unix:/tmp/m.sock' is not an IP address");
  EXPECT_EQ(
      MetricsServer::Create(*loop_, *link::LinkAddress::FromIp("127.0.0.1", 0), nullptr, &error),
      nullptr);
  EXPECT_EQ(error, "no body callback");
  MetricsServerOptions none;
  none.max_connections = 0;
  EXPECT_EQ(
      MetricsServer::Create(
          *loop_, *link::LinkAddress::FromIp("127.0.0.1", 0), [] { return ""; }, &error, none),
      nullptr);
  // The first server is unharmed.
  EXPECT_EQ(ParseResponse(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).status, 200);
}

}  // namespace
}  // namespace dxpu::metrics
