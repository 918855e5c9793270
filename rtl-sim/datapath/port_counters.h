// port_counters.h - the counters of rtl/dxpu_dxfp_port.sv (dxpu_dxfp_pkg's PORT_*), in the order
// of its m_counters port: counter i in bits [32i+31:32i].
#ifndef DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_
#define DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_

namespace dxpu::rtl {

enum PortCounter : unsigned {
  kFramesTx = 0,
  kTlpsFramed = 1,
  kTlpsTx = 2,
  kTlpsRetx = 3,
  kNaksRx = 4,
  kNaksIgnored = 5,
  kRto = 6,
  kBadAckRx = 7,
  kFramesOk = 8,
  kBadCrc = 9,
  kDuplicate = 10,
  kGap = 11,
  kWindowViolation = 12,
  kBadAck = 13,
  kDelivered = 14,
  kNaksTx = 15,
  kStandaloneTx = 16,
  kKeepalivesTx = 17,
  kTruncated = 18,
  kBadLength = 19,
  kBadVersion = 20,
  kBadType = 21,
  kMalformed = 22,
  kOversize = 23,
  kProbesTx = 24,
  kCreditViolation = 25,
  kPortCounters = 26,
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_PORT_COUNTERS_H_
