// management_client.h - the controller's side of a bridge's management socket (docs/protocol.md
// section 15): one request, one answer, over UDP or an AF_UNIX datagram socket, retried on
// silence. Used by `dxpu bridge`, the demo and the tests; the pool manager's agent later.
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/dxpu_mgmt.h"
#include "link/link_address.h"

namespace dxpu::bridge {

// The answer to one request, or why there is none.
struct ManagementReply {
  std::vector<uint8_t> bytes;  // the response datagram (empty on error)
  dxpu_mgmt_msg msg{};         // decoded; msg.status is the bridge's verdict
  std::string error_name;      // "" when an answer came: "timeout", "send", "socket", ...
  std::string error;           // a sentence for people

  bool answered() const { return error_name.empty(); }
  // Answered with DXPU_MGMT_OK.
  bool ok() const { return answered() && msg.status == DXPU_MGMT_OK; }
  // "" when ok(); otherwise what went wrong, for people.
  std::string Problem() const;
};

// What a refusal status means, for people (scripts match dxpu_mgmt_status_name).
std::string RefusalSentence(uint16_t status);

class ManagementClient {
 public:
  explicit ManagementClient(link::LinkAddress target, int timeout_ms = 1000, int attempts = 3)
      : target_(std::move(target)), timeout_ms_(timeout_ms), attempts_(attempts) {}

  // Sends the request (a fresh request ID) and waits for the response with that ID.
  ManagementReply Exchange(dxpu_mgmt_msg request) const;

  ManagementReply Assign(uint16_t device, uint16_t host_bdf, uint64_t node) const;
  ManagementReply Release(uint16_t device) const;
  ManagementReply Grant(uint16_t device, uint64_t device_base, uint64_t host_base,
                        uint64_t size) const;
  ManagementReply RevokeAll(uint16_t device) const;
  ManagementReply Status() const;

  const link::LinkAddress& target() const { return target_; }

 private:
  link::LinkAddress target_;
  int timeout_ms_;
  int attempts_;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_
