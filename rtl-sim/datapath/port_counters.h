// port_counters.h - the counters of rtl/dxpu_dxfp_port.sv, in the order of its m_counters port:
// counter i in bits [32i+31:32i]. The source of dxpu_dxfp_pkg's PORT_* (gen_pkg_consts.cc).
#ifndef DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_
#define DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_

namespace dxpu::rtl {

enum PortCounter : unsigned {
  kFramesTx = 0,     // frames sent (with TLPs or standalone)
  kTlpsFramed = 1,   // TLP records put in frames (first and again)
  kTlpsTx = 2,       // first transmissions
  kTlpsRetx = 3,     // retransmissions
  kNaksRx = 4,       // NAKs taken
  kNaksIgnored = 5,  // ... of which not acted on
  kRto = 6,          // retransmission timer expiries
  kBadAckRx = 7,     // peer acks naming a TLP never sent (replay buffer)
  kFramesOk = 8,     // frames received that parse
  kBadCrc = 9,
  kDuplicate = 10,        // TLP records received before the expected number
  kGap = 11,              // TLP records dropped behind a gap
  kWindowViolation = 12,  // frames dropped: window-violation
  kBadAck = 13,           // frames dropped: bad-ack
  kDelivered = 14,        // TLPs delivered
  kNaksTx = 15,           // NAKs sent
  kStandaloneTx = 16,     // frames sent without a TLP (ack, NAK, keepalive)
  kKeepalivesTx = 17,     // frames sent with ACK_REQ
  kTruncated = 18,
  kBadLength = 19,
  kBadVersion = 20,
  kBadType = 21,
  kMalformed = 22,
  kOversize = 23,         // TLPs to send dropped: larger than an empty frame
  kProbesTx = 24,         // credit probes sent (refused for credit, nothing in flight)
  kCreditViolation = 25,  // frames dropped: their TLPs passed our credit
  // A sealed session (docs/protocol.md 4.12): frames sealed and opened, and the drops before a
  // sealed frame reaches the decapsulator (truncated and bad-length ones count above).
  kFramesSealed = 26,  // frames sent sealed
  kFramesOpened = 27,  // frames received whose tag passed
  kBadTag = 28,        // frames dropped: the tag failed (forged, changed, another key)
  kReplayed = 29,      // frames dropped before any cryptography: counter taken or too old
  kUnsealed = 30,      // DATA frames in the clear on a sealed session, dropped
  kPortCounters = 31,  // verilator lint_on UNUSEDPARAM
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_
