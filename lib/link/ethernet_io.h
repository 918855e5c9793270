// ethernet_io.h - sending and receiving one DxFP frame in one Ethernet-framed datagram, for
// the links whose datagrams carry an Ethernet header (AF_UNIX in QEMU framing, AF_PACKET).
#ifndef DXPU_LIB_LINK_ETHERNET_IO_H_
#define DXPU_LIB_LINK_ETHERNET_IO_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "link/ethernet_header.h"
#include "link/link.h"
#include "link/link_address.h"

namespace dxpu::link {

struct EthernetReceive {
  enum Outcome { kFrame, kWouldBlock, kDropped, kError };
  Outcome outcome = kWouldBlock;
  size_t size = 0;  // DxFP payload bytes in the caller's buffer (kFrame)
  MacAddress source{};
  MacAddress destination{};
  int error = 0;  // errno (kError)
};

// Receives one datagram: the Ethernet header apart, the payload straight into buf. kDropped
// (logged) for a datagram larger than header + buf, shorter than a header, or of another
// EtherType than 0x88B5 after an optional 802.1Q tag (which is removed).
EthernetReceive ReceiveEthernet(int fd, std::span<uint8_t> buf, std::string_view who);

// Sends header + the frame's pieces (at most kMaxFramePieces) as one datagram to dest
// (null: the socket's connected peer). Returns the byte count sendmsg returned, or -1
// with errno set.
ssize_t SendEthernet(int fd, const EthernetHeader& header, FramePieces frame, const sockaddr* dest,
                     socklen_t dest_len);

// A link whose datagrams are Ethernet frames (AF_UNIX in QEMU framing, AF_PACKET): one
// Receive for both. Only frames addressed to this end's own MAC are delivered, as a NIC
// without promiscuous mode delivers them: a frame for another MAC (a veth or a QEMU socket
// network hands every frame to every end) is dropped and counted, so a HELLO meant for
// another bridge can never open a session here. At most 64 discarded datagrams per call, so
// a flood of bad ones cannot hold the caller; the socket stays readable for the next call.
class EthernetLink : public Link {
 public:
  LinkResult Receive(std::span<uint8_t> buf, LinkAddress* from) final;

  // This end's MAC: the source of what it sends, the destination of what it takes.
  virtual const MacAddress& mac() const = 0;

 protected:
  // "unix", "packet": names the link in logs and errors.
  virtual std::string_view kind() const = 0;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_ETHERNET_IO_H_
