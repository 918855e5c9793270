// serve_until_signal.h - how dxpu-manager and dxpu-agent run their HTTP server: bound to a port
// no other process shares, then SIGINT and SIGTERM are blocked in every thread and taken by one
// (sigwait), which stops the server, so nothing runs in a signal handler.
#ifndef DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_
#define DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_

#include <optional>
#include <string>

namespace httplib {
class Server;
}

namespace dxpu::manager {

// Blocks SIGINT and SIGTERM in the calling thread; call it first in main, so that every thread
// started afterwards has them blocked too.
void BlockStopSignals();
// Binds `server` to host:port (port 0: any free port) for this process alone: cpp-httplib's
// default socket options add SO_REUSEPORT, with which a second dxpu-manager or dxpu-agent on
// the same port started without complaint and the kernel spread the connections over both (a
// split brain of the pool). SO_REUSEADDR stays, so a restart does not wait out TIME_WAIT. The
// listen backlog is the system's maximum (SOMAXCONN), not cpp-httplib's 5.
// Returns the port bound, or 0 with *error saying why (the system's reason and the address).
int BindExclusively(httplib::Server& server, const std::string& host, int port, std::string* error);
// A daemon's --listen: "HOST:PORT", "[V6]:PORT", or an address alone ("127.0.0.1", "::1": the
// port is --port's). Returns "" with *host and *port (nullopt: none given) set, or what is wrong
// with it, for people.
std::string ParseListen(const std::string& listen, std::string* host, std::optional<int>* port);
// Serves `server` (bound already) until SIGINT or SIGTERM, or until it stops by itself.
void ServeUntilSignal(httplib::Server& server);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_SERVE_UNTIL_SIGNAL_H_
