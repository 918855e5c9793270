#include "tlp_testutil.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dxpu::test {

std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) != 0 ? c - '0'
            : (c >= 'a' && c <= 'f')                         ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                         ? c - 'A' + 10
                                                             : -1;
    if (v < 0) {
      std::fprintf(stderr, "bad hex literal: %.*s\n", static_cast<int>(hex.size()), hex.data());
      std::abort();
    }
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  if (hi >= 0) std::abort();
  return out;
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    if (i != 0) s += (i % 4 == 0) ? "  " : " ";
    s += buf;
  }
  return s;
}

std::vector<uint8_t> encode_ok(const dxpu_tlp& t) {
  std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  dxpu_tlp_err err = dxpu_tlp_encode(&t, buf.data(), buf.size(), &len);
  if (err != DXPU_TLP_OK) {
    std::fprintf(stderr, "encode failed: %s\n", dxpu_tlp_err_name(err));
    return {};
  }
  buf.resize(len);
  return buf;
}

dxpu_tlp_err encode_err(const dxpu_tlp& t) {
  std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  return dxpu_tlp_encode(&t, buf.data(), buf.size(), &len);
}

dxpu_tlp_err decode(const std::vector<uint8_t>& bytes, dxpu_tlp* out) {
  return dxpu_tlp_decode(bytes.data(), bytes.size(), out);
}

bool same_tlp(const dxpu_tlp& a, const dxpu_tlp& b, std::string* why) {
#define DXPU_SAME(f)               \
  if (a.f != b.f) {                \
    if (why != nullptr) *why = #f; \
    return false;                  \
  }
  DXPU_SAME(kind)
  DXPU_SAME(tc)
  DXPU_SAME(attr)
  DXPU_SAME(at)
  DXPU_SAME(flags)
  DXPU_SAME(ph)
  DXPU_SAME(st)
  DXPU_SAME(length_dw)
  DXPU_SAME(requester_id)
  DXPU_SAME(tag)
  DXPU_SAME(first_be)
  DXPU_SAME(last_be)
  DXPU_SAME(addr)
  DXPU_SAME(cfg_target)
  DXPU_SAME(cfg_reg)
  DXPU_SAME(completer_id)
  DXPU_SAME(byte_count)
  DXPU_SAME(cpl_status)
  DXPU_SAME(lower_addr)
  DXPU_SAME(msg_code)
  DXPU_SAME(msg_routing)
  DXPU_SAME(digest)
#undef DXPU_SAME
  if (std::memcmp(a.msg_hdr, b.msg_hdr, sizeof a.msg_hdr) != 0) {
    if (why != nullptr) *why = "msg_hdr";
    return false;
  }
  uint32_t n = dxpu_tlp_payload_len(&a);
  bool same_payload = (a.payload == nullptr) == (b.payload == nullptr);
  if (same_payload && n != 0) {
    same_payload = a.payload != nullptr && std::memcmp(a.payload, b.payload, n) == 0;
  }
  if (!same_payload && why != nullptr) *why = "payload";
  return same_payload;
}

uint64_t test_seed() {
  // Tests read the environment before any thread starts.
  if (const char* env = std::getenv("DXPU_SEED");  // NOLINT(concurrency-mt-unsafe)
      env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 0);
  }
  return std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
}

uint32_t RandomTlpGenerator::uniform(uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_);
}

void RandomTlpGenerator::fill_common(dxpu_tlp* t) {
  t->tc = static_cast<uint8_t>(uniform(0, 7));
  t->attr = static_cast<uint8_t>(uniform(0, 7));
  t->requester_id = static_cast<uint16_t>(uniform(0, 0xffff));
  t->tag = static_cast<uint16_t>(uniform(0, 0x3ff));
  if (coin()) t->flags |= DXPU_TLP_F_EP;
  if (uniform(0, 7) == 0) {
    t->flags |= DXPU_TLP_F_TD;
    t->digest = static_cast<uint32_t>(rng_());
  }
}

void RandomTlpGenerator::fill_payload(dxpu_tlp* t) {
  payload_.resize(static_cast<size_t>(t->length_dw) * 4);
  for (auto& b : payload_) b = static_cast<uint8_t>(rng_());
  t->payload = payload_.data();
}

// A memory request built from a random byte range that does not cross 4 KiB,
// so Length, byte enables and address agree by construction.
void RandomTlpGenerator::fill_mem(dxpu_tlp* t) {
  uint64_t page = coin()
                      ? uniform(0, 0xfffff)
                      : (static_cast<uint64_t>(uniform(1, 0xffffffff)) << 20) | uniform(0, 0xfffff);
  // Mostly small requests, sometimes up to a whole page.
  uint32_t max_len = uniform(0, 3) == 0 ? 4096 : 256;
  uint32_t off = uniform(0, 4095);
  uint32_t len = uniform(1, std::min<uint32_t>(max_len, 4096 - off));
  uint64_t start = (page << 12) + off;
  dxpu_tlp_req_split s{};
  dxpu_tlp_req_piece p{};
  dxpu_tlp_req_split_init(&s, start, len, 4096);
  dxpu_tlp_req_split_next(&s, &p);
  t->addr = p.addr;
  t->length_dw = p.length_dw;
  t->first_be = p.first_be;
  t->last_be = p.last_be;
  if (t->length_dw == 1 && uniform(0, 7) == 0) t->first_be = static_cast<uint8_t>(uniform(0, 15));
  if (t->length_dw == 2 && (t->addr & 4) == 0 && uniform(0, 3) == 0) {
    t->first_be = static_cast<uint8_t>(uniform(1, 15));
    t->last_be = static_cast<uint8_t>(uniform(1, 15));
  }
  t->at = static_cast<uint8_t>(uniform(0, 2));
  if (coin()) {  // TPH: ST[7:0] displaces Tag[7:0] (MWr) or the byte enables (MRd)
    t->flags |= DXPU_TLP_F_TH;
    t->ph = static_cast<uint8_t>(uniform(0, 3));
    t->st = static_cast<uint8_t>(uniform(0, 255));
    if (t->kind == DXPU_TLP_MWR) {
      t->tag &= 0x300;
    } else {
      t->first_be = 0xf;
      t->last_be = t->length_dw > 1 ? 0xf : 0;
    }
  }
  if (uniform(0, 7) == 0) t->flags |= DXPU_TLP_F_LN;
  if (t->kind == DXPU_TLP_MWR) fill_payload(t);
}

void RandomTlpGenerator::fill_cfg(dxpu_tlp* t) {
  t->tc = 0;
  t->attr &= DXPU_TLP_ATTR_IDO;
  t->length_dw = 1;
  t->first_be = static_cast<uint8_t>(uniform(0, 15));
  t->cfg_target = static_cast<uint16_t>(uniform(0, 0xffff));
  t->cfg_reg = static_cast<uint16_t>(uniform(0, 0x3ff) << 2);
  if (t->kind == DXPU_TLP_CFGWR0 || t->kind == DXPU_TLP_CFGWR1) fill_payload(t);
}

void RandomTlpGenerator::fill_cpl(dxpu_tlp* t) {
  t->completer_id = static_cast<uint16_t>(uniform(0, 0xffff));
  if (uniform(0, 7) == 0) t->flags |= DXPU_TLP_F_LN;
  if (t->kind == DXPU_TLP_CPL) {
    static constexpr uint8_t kStatus[] = {DXPU_TLP_CPL_SC, DXPU_TLP_CPL_UR, DXPU_TLP_CPL_CRS,
                                          DXPU_TLP_CPL_CA};
    t->cpl_status = kStatus[uniform(0, 3)];
    t->byte_count = static_cast<uint16_t>(uniform(1, 4096));
    t->lower_addr = static_cast<uint8_t>(uniform(0, 127));
    if (uniform(0, 15) == 0) t->flags |= DXPU_TLP_F_BCM;
    return;
  }
  // A CplD from a random read, split at a random RCB and MPS: pick one piece.
  uint32_t off = uniform(0, 4095);
  uint32_t len = uniform(1, std::min<uint32_t>(uniform(0, 3) == 0 ? 4096 : 512, 4096 - off));
  dxpu_tlp_req_split rs{};
  dxpu_tlp_req_piece rp{};
  dxpu_tlp_req_split_init(&rs, (static_cast<uint64_t>(uniform(0, 0xfffff)) << 12) + off, len, 4096);
  dxpu_tlp_req_split_next(&rs, &rp);
  uint32_t rcb = coin() ? 64 : 128;
  uint32_t mps = 128u << uniform(0, 5);
  dxpu_tlp_cpl_split cs{};
  dxpu_tlp_cpl_piece cp{};
  dxpu_tlp_cpl_split_init(&cs, rp.addr, rp.length_dw, rp.first_be, rp.last_be, rcb, mps);
  uint32_t pick = uniform(0, 3);
  while (dxpu_tlp_cpl_split_next(&cs, &cp) && pick-- != 0 && cs.remaining != 0) {
  }
  t->length_dw = cp.length_dw;
  t->byte_count = cp.byte_count;
  t->lower_addr = cp.lower_addr;
  fill_payload(t);
}

void RandomTlpGenerator::fill_msg(dxpu_tlp* t) {
  switch (uniform(0, 2)) {
    case 0:  // INTx
      t->kind = DXPU_TLP_MSG;
      t->msg_code =
          static_cast<uint8_t>(uniform(DXPU_TLP_MSG_ASSERT_INTA, DXPU_TLP_MSG_DEASSERT_INTD));
      t->msg_routing = DXPU_TLP_ROUTE_LOCAL;
      t->tc = 0;
      break;
    case 1: {  // vendor-defined
      static constexpr uint8_t kRoutes[] = {DXPU_TLP_ROUTE_TO_RC, DXPU_TLP_ROUTE_BY_ID,
                                            DXPU_TLP_ROUTE_BROADCAST, DXPU_TLP_ROUTE_LOCAL};
      t->msg_code = coin() ? DXPU_TLP_MSG_VENDOR_TYPE0 : DXPU_TLP_MSG_VENDOR_TYPE1;
      t->msg_routing = kRoutes[uniform(0, 3)];
      break;
    }
    default:  // any other code, carried opaquely
      do {
        t->msg_code = static_cast<uint8_t>(uniform(0, 255));
      } while (dxpu_tlp_msg_is_intx(t->msg_code) || t->msg_code >= DXPU_TLP_MSG_VENDOR_TYPE0);
      t->msg_routing = static_cast<uint8_t>(uniform(0, 5));
      break;
  }
  for (auto& b : t->msg_hdr) b = static_cast<uint8_t>(rng_());
  if (t->kind == DXPU_TLP_MSGD) {
    t->length_dw = static_cast<uint16_t>(uniform(1, coin() ? 1024 : 16));
    fill_payload(t);
  }
}

dxpu_tlp RandomTlpGenerator::next() {
  dxpu_tlp t{};
  t.kind = static_cast<uint8_t>(uniform(DXPU_TLP_MRD, DXPU_TLP_MSGD));
  fill_common(&t);
  if (dxpu_tlp_kind_is_mem(t.kind)) {
    fill_mem(&t);
  } else if (dxpu_tlp_kind_is_cfg(t.kind)) {
    fill_cfg(&t);
  } else if (dxpu_tlp_kind_is_cpl(t.kind)) {
    fill_cpl(&t);
  } else {
    fill_msg(&t);
  }
  return t;
}

}  // namespace dxpu::test
