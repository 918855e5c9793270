// serve_until_signal.cc - an HTTP server stopped by SIGINT or SIGTERM (serve_until_signal.h).
#include "manager/serve_until_signal.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "lib/util/errno_text.h"

namespace dxpu::manager {

namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int BindExclusively(httplib::Server& server, const std::string& host, int port,
                    std::string* error) {
  auto listener = std::make_shared<int>(-1);
  server.set_socket_options([listener](int sock) {  // socket_t is int here
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listener = sock;
  });
  errno = 0;
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : 0);
  // cpp-httplib 0.11 listens with a backlog of 5: a burst of a dozen connections overflowed it,
  // and each connection past it waited a second for its SYN to be sent again (issue 32). A
  // second listen() on the socket only raises the backlog.
  if (bound > 0 && *listener >= 0) ::listen(*listener, SOMAXCONN);
  if (bound <= 0) {
    const int err = errno;
    *error = fmt::format("cannot listen on {}:{}: {}{}", host, port,
                         err != 0 ? util::ErrnoText(err) : "the address cannot be bound",
                         err == EADDRINUSE ? " (another process holds the port: a second "
                                             "daemon of the same pool?)"
                                           : "");
    return 0;
  }
  return bound;
}

std::string ParseListen(const std::string& listen, std::string* host, std::optional<int>* port) {
  std::string bad = fmt::format(  // not const: returned by move
      "--listen wants HOST:PORT or an address, e.g. 127.0.0.1:17490 or 0.0.0.0, not '{}'", listen);
  std::string h = listen;
  std::string p;
  bool has_port = false;
  in6_addr v6{};
  if (listen.starts_with('[')) {
    const size_t close = listen.find(']');
    if (close == std::string::npos) return bad;
    h = listen.substr(1, close - 1);
    const std::string rest = listen.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad;
      p = rest.substr(1);
      has_port = true;
    }
    if (inet_pton(AF_INET6, h.c_str(), &v6) != 1) return bad;
  } else if (const size_t colon = listen.find(':'); colon != std::string::npos) {
    if (listen.find(':', colon + 1) != std::string::npos) {
      if (inet_pton(AF_INET6, listen.c_str(), &v6) != 1) return bad;  // a bare IPv6 address
    } else {
      h = listen.substr(0, colon);
      p = listen.substr(colon + 1);
      has_port = true;
    }
  }
  if (h.empty() || h.find_first_of(" /?#@") != std::string::npos) return bad;
  *host = h;
  port->reset();
  if (has_port) {
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(p) > 65535)
      return bad;
    *port = std::stoi(p);
  }
  return "";
}

void ServeUntilSignal(httplib::Server& server) {
  const sigset_t set = StopSignals();
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&set, &sig);
    server.stop();
  });
  server.listen_after_bind();
  kill(getpid(), SIGTERM);  // ends the stopper's wait when the server stopped by itself
  stopper.join();
}

}  // namespace dxpu::manager
