// A stand-in for dxfp_session_send() that the TxQueue tests control: per-class credit,
// a non-posted request table, a replay buffer, a forced refusal, and a log of every offer.
// TLPs are told apart by their addr field, which the fake does not validate.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/dxfp_session.h"
#include "core/tlp_codec.h"

namespace dxpu::fabric::test {

// The three TLP classes, short.
inline constexpr int kP = DXPU_TLP_CLASS_POSTED;
inline constexpr int kNp = DXPU_TLP_CLASS_NON_POSTED;
inline constexpr int kCpl = DXPU_TLP_CLASS_COMPLETION;

// Marker traffic classes that make the fake refuse a TLP for good.
inline constexpr uint8_t kTcTooBig = 7;
inline constexpr uint8_t kTcInvalid = 6;

struct Offer {
  uint64_t id;  // tlp.addr
  int cls;      // dxpu_tlp_class
  dxfp_send_result result;

  bool operator==(const Offer&) const = default;
};

struct FakeSession {
  static constexpr int kPlenty = 1 << 30;

  std::array<int, 3> credits{kPlenty, kPlenty, kPlenty};  // TLPs each class may still send
  int np_slots = kPlenty;                  // non-posted requests the table may still take
  int replay_slots = kPlenty;              // TLPs the replay buffer may still take
  dxfp_send_result forced = DXFP_SEND_OK;  // NOT_READY or DOWN: refuse everything
  std::vector<Offer> offers;

  // Decides like a session (forced, then TOO_BIG / INVALID, replay, request table, credit)
  // and, on OK, spends what the TLP takes.
  dxfp_send_result operator()(const dxpu_tlp& t);

  // The ids of the accepted offers, in order.
  std::vector<uint64_t> accepted() const;
};

// A TLP of class cls with id `id` and payload_dw DWs of payload (posted: MWr or Msg when
// payload_dw is 0; non-posted: MRd, or CfgWr0 with 1 DW; completion: CplD or Cpl).
// Payload bytes come from PayloadByte(id, i) and live in *storage.
dxpu_tlp MakeTlp(int cls, uint64_t id, uint16_t payload_dw, std::vector<uint8_t>* storage);
uint8_t PayloadByte(uint64_t id, size_t i);

}  // namespace dxpu::fabric::test
