// dxfp_frame_fuzz.cc - libFuzzer target: the DxFP frame parser (lib/core/dxfp_frame.c) on any
// bytes, as they came and with their CRC32C put right (so changes reach the checks after the
// CRC's). A frame it accepts is walked record by record, written again with the frame writer
// (when it holds no record of an unknown type, which the parser skips), and must parse again to
// the same header and records (docs/fuzzing.md).
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/dxfp_frame.h"
#include "fuzz_util.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "dxfp_frame_fuzz", what); }

struct Parsed {
  dxfp_header hdr{};
  std::vector<dxpu_tlp> tlps;
  std::vector<dxfp_credits> credits;
  std::vector<dxfp_hello> hellos;
  std::vector<dxfp_close> closes;
  std::vector<uint8_t> order;  // known record types in order
  size_t unknown = 0;          // records of types this end does not know (skipped)
};

// Every record of an accepted frame, read as the session reads it.
Parsed Walk(const dxfp_frame& f) {
  Parsed p;
  p.hdr = f.hdr;
  dxfp_record_iter it{};
  dxfp_record_iter_init(&it, &f);
  dxfp_record r{};
  while (dxfp_record_next(&it, &r)) {
    p.order.push_back(r.type);
    switch (r.type) {
      case DXFP_REC_TLP: {
        dxpu_tlp t{};
        Check(dxpu_tlp_decode(r.body, r.len, &t) == DXPU_TLP_OK, "accepted frame, bad TLP");
        p.tlps.push_back(t);
        break;
      }
      case DXFP_REC_CREDIT:
        dxfp_credits_read(r.body, &p.credits.emplace_back());
        break;
      case DXFP_REC_HELLO:
        dxfp_hello_read(r.body, &p.hellos.emplace_back());
        break;
      case DXFP_REC_CLOSE:
        dxfp_close_read(r.body, &p.closes.emplace_back());
        break;
      default:
        p.unknown++;  // a later version's record: skipped, as the session skips it
        p.order.pop_back();
    }
  }
  Check(p.order.size() + p.unknown == f.hdr.nrec, "records walked differ from the count");
  return p;
}

bool SameHeader(const dxfp_header& a, const dxfp_header& b) {
  return a.version == b.version && a.type == b.type && a.flags == b.flags && a.nrec == b.nrec &&
         a.dst_session == b.dst_session && a.src_session == b.src_session &&
         a.dst_epoch == b.dst_epoch && a.src_epoch == b.src_epoch && a.seq == b.seq &&
         a.ack == b.ack;
}

// Writes the parsed frame again; it must parse to the same content.
void Rewrite(const Parsed& p, size_t frame_len) {
  std::vector<uint8_t> buf(DXFP_MAX_FRAME);
  dxfp_writer w{};
  Check(dxfp_writer_init(&w, buf.data(), frame_len, &p.hdr) == DXFP_OK, "writer refuses header");
  size_t t = 0, c = 0, h = 0, x = 0;
  for (const uint8_t type : p.order) {
    dxfp_err err = DXFP_OK;
    if (type == DXFP_REC_TLP) err = dxfp_writer_add_tlp(&w, &p.tlps[t++]);
    if (type == DXFP_REC_CREDIT) err = dxfp_writer_add_credits(&w, &p.credits[c++]);
    if (type == DXFP_REC_HELLO) err = dxfp_writer_add_hello(&w, &p.hellos[h++]);
    if (type == DXFP_REC_CLOSE) err = dxfp_writer_add_close(&w, &p.closes[x++]);
    Check(err == DXFP_OK, "the writer refuses a record the parser accepted");
  }
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  Check(len == frame_len, "the rewritten frame has another length");
  dxfp_frame f{};
  Check(dxfp_frame_parse(buf.data(), len, DXFP_MAX_FRAME, &f) == DXFP_OK,
        "the rewritten frame does not parse");
  const Parsed q = Walk(f);
  Check(SameHeader(p.hdr, q.hdr) && p.order == q.order, "rewritten header or records differ");
  for (size_t i = 0; i < p.tlps.size(); ++i)
    Check(dxpu::fuzz::SameTlp(p.tlps[i], q.tlps[i]), "rewritten TLP differs");
  for (size_t i = 0; i < p.credits.size(); ++i)
    Check(memcmp(&p.credits[i], &q.credits[i], sizeof(dxfp_credits)) == 0, "credits differ");
  for (size_t i = 0; i < p.hellos.size(); ++i)
    Check(p.hellos[i].node_id == q.hellos[i].node_id &&
              p.hellos[i].max_frame == q.hellos[i].max_frame &&
              p.hellos[i].replay_window == q.hellos[i].replay_window &&
              p.hellos[i].caps == q.hellos[i].caps &&
              p.hellos[i].version_min == q.hellos[i].version_min &&
              p.hellos[i].version_max == q.hellos[i].version_max,
          "HELLO differs");
  for (size_t i = 0; i < p.closes.size(); ++i)
    Check(p.closes[i].reason == q.closes[i].reason &&
              p.closes[i].version_min == q.closes[i].version_min &&
              p.closes[i].version_max == q.closes[i].version_max,
          "CLOSE differs");
}

void ParseOne(std::span<const uint8_t> bytes) {
  // Each session's limit as well as the largest: a frame over max_frame is refused.
  for (const uint32_t max_frame : {uint32_t{DXFP_MAX_FRAME}, uint32_t{1500}}) {
    dxfp_frame f{};
    const dxfp_err err = dxfp_frame_parse(bytes.data(), bytes.size(), max_frame, &f);
    Check(err >= DXFP_OK && err < DXFP_ERR_COUNT && dxfp_err_name(err) != nullptr,
          "error out of range");
    if (err != DXFP_OK) continue;
    const size_t frame_len = DXFP_HDR_SIZE + f.records_len + DXFP_CRC_SIZE;
    Check(frame_len <= bytes.size() && frame_len <= max_frame, "accepted past its limits");
    const Parsed p = Walk(f);
    if (p.unknown == 0) Rewrite(p, frame_len);  // the writer writes known records only
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseOne({data, size});
  std::vector<uint8_t> fixed(data, data + size);
  if (dxpu::fuzz::FixDxfpCrc(fixed)) ParseOne(fixed);
  return 0;
}
