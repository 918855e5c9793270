// serve_until_signal.cc - an HTTP server stopped by SIGINT or SIGTERM (serve_until_signal.h).
#include "manager/serve_until_signal.h"

#include <httplib.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <thread>

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
