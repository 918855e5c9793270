// bridge_process.h - the real dxpu-bridge daemon as a child process, for tests: written from a
// configuration text into a temporary directory, started, stopped with SIGTERM (clean
// shutdown, its exit status) or SIGKILL (a crash), always reaped. Its output goes to a log
// file in that directory (LogTail).
#ifndef DXPU_TESTS_BRIDGE_BRIDGE_PROCESS_H_
#define DXPU_TESTS_BRIDGE_BRIDGE_PROCESS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dxpu::test {

// A loopback port nothing holds right now, for a test daemon to listen on (and to listen on
// again after a restart). Below the kernel's ephemeral range (ip_local_port_range, 32768 and
// up here), so no outgoing connection of any process can take it between this call and the
// daemon's bind, or between a daemon's death and its restart: a port bound to 0 and released
// came from that range, and a restarted agent once found its port taken by another test's
// HTTP client ("Address already in use"). type: SOCK_DGRAM or SOCK_STREAM.
uint16_t FreePort(int type);

// Whether `path` appears within 5 s (the daemon creates its management socket last).
bool WaitForPath(const std::string& path);

// The last `max_bytes` bytes of a file (a daemon's log, for a failure message); "" if none.
std::string FileTail(const std::filesystem::path& path, size_t max_bytes = 4000);

// GET `path` from an HTTP endpoint on 127.0.0.1:port (a daemon's metrics): the whole response,
// or "" when it cannot connect.
std::string HttpGet(uint16_t port, const std::string& path);

// One management request sent as these exact bytes to an AF_UNIX management socket (a capture
// replayed, a forged datagram): the answer's status, or -1 when none came within 2 s.
int SendManagementDatagram(const std::string& mgmt, const std::vector<uint8_t>& bytes);

// A path for a test daemon's AF_UNIX socket, unique in this process and free: a file a dead
// process with the same PID left there is removed first, so WaitForPath() cannot mistake it
// for the new daemon's socket. `name` says whose it is.
std::string FreshSocketPath(const std::string& name);

class BridgeProcess {
 public:
  // binary: the dxpu-bridge executable.
  BridgeProcess(const std::string& config_text, std::string binary = DXPU_BRIDGE_BIN);
  BridgeProcess(const BridgeProcess&) = delete;
  BridgeProcess& operator=(const BridgeProcess&) = delete;
  ~BridgeProcess();

  std::filesystem::path dir() const { return dir_; }
  // extra_arg: one more argument for the daemon ("--crash-after-ownership-change=2").
  bool Start(const std::string& extra_arg = "");
  // With these arguments after the configuration ("--flash", PATH, "--slot", "A").
  bool Start(const std::vector<std::string>& extra_args);
  // The exit status after SIGTERM, or -1 if it did not exit within 5 s.
  int Terminate();
  // SIGKILL, as a crash or a power cut would end it; reaped.
  void Kill();
  // Whether it is still running (reaped if it exited by itself).
  bool Alive();
  bool running() const { return pid_ > 0; }
  // Its process ID while running (for /proc/PID), else -1.
  pid_t pid() const { return pid_; }
  // The log's last `max_bytes` bytes (every start's output, appended), for a failure message.
  std::string LogTail(size_t max_bytes = 4000) const;

 private:
  std::filesystem::path dir_;
  std::filesystem::path config_;
  std::filesystem::path log_;
  std::string binary_;
  pid_t pid_ = -1;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_BRIDGE_PROCESS_H_
