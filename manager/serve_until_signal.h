// serve_until_signal.h - how dxpu-manager and dxpu-agent run their HTTP server: SIGINT and
// SIGTERM are blocked in every thread and taken by one (sigwait), which stops the server, so
// nothing runs in a signal handler.
#ifndef DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_
#define DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_

namespace httplib {
class Server;
}

namespace dxpu::manager {

// Blocks SIGINT and SIGTERM in the calling thread; call it first in main, so that every thread
// started afterwards has them blocked too.
void BlockStopSignals();
// Serves `server` (bound already) until SIGINT or SIGTERM, or until it stops by itself.
void ServeUntilSignal(httplib::Server& server);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_
