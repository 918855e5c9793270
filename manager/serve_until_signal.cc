// serve_until_signal.cc - an HTTP server stopped by SIGINT or SIGTERM (serve_until_signal.h).
#include "manager/serve_until_signal.h"

#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fmt/format.h>

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
  server.set_socket_options([](int sock) {  // socket_t is int here
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  errno = 0;
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : 0);
  if (bound <= 0) {
    const int err = errno;
    *error = fmt::format("cannot listen on {}:{}: {}{}", host, port,
                         err != 0 ? std::strerror(err) : "the address cannot be bound",
                         err == EADDRINUSE ? " (another process holds the port: a second "
                                             "daemon of the same pool?)"
                                           : "");
    return 0;
  }
  return bound;
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
