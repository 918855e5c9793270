// link_host.h - a TestHost over a real link (UDP, AF_UNIX) to a dxpu-bridge process, driven in
// real time: for the tests that start the daemon (daemon_test, the firmware update tests).
#ifndef DXPU_TESTS_BRIDGE_LINK_HOST_H_
#define DXPU_TESTS_BRIDGE_LINK_HOST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "core/dxfp_session.h"
#include "link/link.h"
#include "link/link_address.h"
#include "test_host.h"

namespace dxpu::test {

// Session parameters for real time on a loaded machine (CI runs the sanitizer build on two
// busy cores): the default 20 ms without progress would take a session down when a process
// is merely descheduled.
const dxfp_session_config& SlackSession();

class LinkHost {
 public:
  LinkHost(uint64_t node, std::unique_ptr<link::Link> l, link::LinkAddress bridge,
           uint32_t session_id = 7);
  TestHost& host() { return host_; }
  bool ok() const { return link_ != nullptr; }

  // Establishes the session and reads DW0 (Vendor ID, Device ID) of the device at bdf.
  std::optional<uint32_t> ConnectAndReadIds(uint16_t bdf, int timeout_ms = 3000);
  // Reads DW0 of the device at bdf on the established session.
  std::optional<uint32_t> ReadIds(uint16_t bdf, int timeout_ms = 3000);

  // Moves frames until done() or timeout_ms of real time.
  bool RunUntil(const std::function<bool()>& done, int timeout_ms = 3000);

 private:
  TestHost host_;
  link::LinkAddress bridge_;
  std::unique_ptr<link::Link> link_;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_LINK_HOST_H_
