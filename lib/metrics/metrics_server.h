// metrics_server.h - a minimal HTTP/1.1 server for Prometheus on a dxpu::link::EventLoop: no
// threads, non-blocking sockets, one response per connection ("Connection: close").
//
//   GET /metrics  200, text/plain; version=0.0.4, the body callback's text
//   GET /healthz  200, "ok\n"
//   other paths   404;  methods other than GET and HEAD: 405
//   a request head over max_head_bytes: 431; a malformed one: 400
//
// At most max_connections are open at once. One more makes room by closing the oldest
// connection that has not delivered its request yet (or, if none, the oldest one lingering
// after its response), so that idle or slowloris connections cannot lock a scraper or
// /healthz out (issue 32: 16 idle connections did, for the 10 s of request_timeout); only when
// every connection is writing its response is the new one closed at once. A connection that
// has not delivered its request within request_timeout is closed. After a
// response the server stops sending and reads (and discards) what the client still sends
// until it closes or linger_timeout passes, so that unread input does not turn into a reset
// that destroys the response in flight.
#ifndef DXPU_LIB_METRICS_METRICS_SERVER_H_
#define DXPU_LIB_METRICS_METRICS_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "link/event_loop.h"
#include "link/link_address.h"
#include "link/unique_fd.h"
#include "metrics/http_request.h"

namespace dxpu::metrics {

struct MetricsServerOptions {
  size_t max_connections = 16;
  size_t max_head_bytes = 8192;  // request line and header fields
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds linger_timeout{2'000};
};

struct MetricsServerCounters {
  uint64_t accepted = 0;      // connections taken on
  uint64_t rejected = 0;      // connections closed at once: max_connections were writing
  uint64_t evicted = 0;       // connections closed to make room for a new one
  uint64_t responses = 0;     // by any status
  uint64_t scrapes = 0;       // 200 responses to /metrics
  uint64_t bad_requests = 0;  // 400, 431 and 505 responses
  uint64_t timeouts = 0;      // connections closed with no request, or not read in time
};

class MetricsServer {
 public:
  using BodyCallback = std::function<std::string()>;

  // Listens on a TCP address (IPv4 or IPv6; port 0: one the kernel picks, see
  // local_address()) and serves on `loop`, which must outlive the server. Null, with *error
  // saying why, if the socket cannot be set up.
  static std::unique_ptr<MetricsServer> Create(link::EventLoop& loop,
                                               const link::LinkAddress& listen, BodyCallback body,
                                               std::string* error,
                                               const MetricsServerOptions& options = {});

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  MetricsServer(MetricsServer&&) = delete;
  MetricsServer& operator=(MetricsServer&&) = delete;
  // Closes the listening socket and every connection.
  ~MetricsServer();

  // The bound address, with the port the kernel chose.
  const link::LinkAddress& local_address() const { return local_; }
  size_t connections() const { return connections_.size(); }
  const MetricsServerCounters& counters() const { return counters_; }

 private:
  enum class Phase : uint8_t {
    kReading,   // the request head is arriving
    kWriting,   // the response is going out
    kLingering  // response sent, our side shut down; discarding input until the client closes
  };

  struct Connection {
    link::UniqueFd fd;
    HttpRequestReader reader;
    Phase phase = Phase::kReading;
    std::string out;  // the response
    size_t sent = 0;
    bool reading = true;            // registered for readability (false after the client's EOF)
    bool waiting_to_write = false;  // in write_epoll_
    link::EventLoop::TimerId timer = 0;
  };

  MetricsServer(link::EventLoop& loop, link::UniqueFd listener, link::UniqueFd write_epoll,
                link::LinkAddress local, BodyCallback body, const MetricsServerOptions& options);

  void OnAcceptable();
  void PauseAccepting();
  void OnReadable(uint64_t id);
  void OnWritable();
  void Respond(uint64_t id, Connection& c);
  void Flush(uint64_t id, Connection& c);
  void Close(uint64_t id);
  // Closes the oldest connection still reading its request, else the oldest lingering one;
  // false if every connection is writing its response.
  bool MakeRoom();
  void Arm(uint64_t id, Connection& c, std::chrono::milliseconds after);
  std::string Response(const HttpRequestReader& reader);

  link::EventLoop& loop_;
  link::UniqueFd listener_;
  link::UniqueFd write_epoll_;  // connections waiting for room to send; polled by loop_
  link::LinkAddress local_;
  BodyCallback body_;
  MetricsServerOptions options_;
  bool accepting_ = true;
  link::EventLoop::TimerId resume_timer_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Connection> connections_;
  MetricsServerCounters counters_;
};

}  // namespace dxpu::metrics

#endif  // DXPU_LIB_METRICS_METRICS_SERVER_H_
