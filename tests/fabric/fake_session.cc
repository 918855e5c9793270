// A stand-in for dxfp_session_send() that the TxQueue tests control.
#include "fake_session.h"

namespace dxpu::fabric::test {

dxfp_send_result FakeSession::operator()(const dxpu_tlp& t) {
  const int cls = dxpu_tlp_kind_class(t.kind);
  dxfp_send_result r = DXFP_SEND_OK;
  if (forced != DXFP_SEND_OK) {
    r = forced;
  } else if (t.tc == kTcTooBig) {
    r = DXFP_SEND_TOO_BIG;
  } else if (t.tc == kTcInvalid) {
    r = DXFP_SEND_INVALID;
  } else if (replay_slots <= 0) {
    r = DXFP_SEND_REPLAY_FULL;
  } else if (cls == DXPU_TLP_CLASS_NON_POSTED && np_slots <= 0) {
    r = DXFP_SEND_NP_FULL;
  } else if (credits[cls] <= 0) {
    r = DXFP_SEND_NO_CREDIT;
  }
  if (r == DXFP_SEND_OK) {
    --replay_slots;
    --credits[cls];
    if (cls == DXPU_TLP_CLASS_NON_POSTED) --np_slots;
  }
  offers.push_back({t.addr, cls, r});
  return r;
}

std::vector<uint64_t> FakeSession::accepted() const {
  std::vector<uint64_t> ids;
  for (const Offer& o : offers) {
    if (o.result == DXFP_SEND_OK) ids.push_back(o.id);
  }
  return ids;
}

uint8_t PayloadByte(uint64_t id, size_t i) { return static_cast<uint8_t>(id * 37 + i * 11 + 5); }

dxpu_tlp MakeTlp(int cls, uint64_t id, uint16_t payload_dw, std::vector<uint8_t>* storage) {
  dxpu_tlp t{};
  t.addr = id;
  t.length_dw = payload_dw;
  switch (cls) {
    case DXPU_TLP_CLASS_POSTED:
      t.kind = payload_dw != 0 ? DXPU_TLP_MWR : DXPU_TLP_MSG;
      break;
    case DXPU_TLP_CLASS_NON_POSTED:
      t.kind = payload_dw != 0 ? DXPU_TLP_CFGWR0 : DXPU_TLP_MRD;
      break;
    default:
      t.kind = payload_dw != 0 ? DXPU_TLP_CPLD : DXPU_TLP_CPL;
      break;
  }
  if (payload_dw != 0) {
    storage->resize(size_t{payload_dw} * 4);
    for (size_t i = 0; i < storage->size(); ++i) (*storage)[i] = PayloadByte(id, i);
    t.payload = storage->data();
  }
  return t;
}

}  // namespace dxpu::fabric::test
