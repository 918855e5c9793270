// dxfp_session_fuzz.cc - libFuzzer target: a DxFP session's receive path
// (lib/core/dxfp_session.c) in each state a session can be in, with an honest peer beside it.
// The input's first byte picks the scenario (session_world.h); the rest is a sequence of
// pieces (fuzz_util.h), each an action of an attacker on the fabric or of time:
//   op 0: a frame to the victim, its CRC32C put right;  op 1: the same, as it came;
//   op 2: the clock advances (24-bit count of 16 ns);   op 3: a captured frame of the peer's,
//   replayed (byte 0 picks which);                      op 4: the victim sends the piece as a
//   TLP (when it decodes);                              op 5: the victim closes.
// Whatever happens, the sessions never send a frame that does not parse, deliver a TLP that does
// not validate, report link down twice, or spin on a timer (docs/fuzzing.md).
#include <cstdint>
#include <span>
#include <vector>

#include "core/tlp_codec.h"
#include "fuzz_util.h"
#include "session_world.h"

namespace {

using dxpu::fuzz::PieceReader;
using dxpu::fuzz::SessionWorld;

enum Op : uint8_t { kFrame, kRawFrame, kAdvance, kReplay, kSend, kClose, kOpCount };

void Apply(SessionWorld& w, const PieceReader::Piece& p) {
  switch (p.op % kOpCount) {
    case kFrame: {
      std::vector<uint8_t> frame(p.bytes.begin(), p.bytes.end());
      dxpu::fuzz::FixDxfpCrc(frame);
      w.Deliver(*w.victim, frame);
      w.Pump();
      break;
    }
    case kRawFrame:
      w.Deliver(*w.victim, p.bytes);
      w.Pump();
      break;
    case kAdvance: {
      uint64_t ticks = 0;
      for (size_t i = 0; i < 3 && i < p.bytes.size(); ++i) ticks = ticks << 8 | p.bytes[i];
      w.Advance(ticks * 16);
      break;
    }
    case kReplay:
      if (!w.to_victim.empty() && !p.bytes.empty()) {
        const std::vector<uint8_t> frame = w.to_victim[p.bytes[0] % w.to_victim.size()];
        w.Deliver(*w.victim, frame);
        w.Pump();
      }
      break;
    case kSend: {
      dxpu_tlp t{};
      if (dxpu_tlp_decode(p.bytes.data(), p.bytes.size(), &t) == DXPU_TLP_OK) w.VictimSends(t);
      break;
    }
    case kClose:
      dxfp_session_close(w.victim->s(), w.now, DXFP_CLOSE_SHUTDOWN);
      w.Pump();
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto scenarios = dxpu::fuzz::Scenarios();
  const dxpu::fuzz::Scenario& scenario = scenarios[data[0] % scenarios.size()];
  SessionWorld w(scenario.authenticated);
  scenario.setup(w);
  PieceReader reader({data + 1, size - 1});
  PieceReader::Piece piece;
  for (int n = 0; n < 64 && reader.Next(&piece); ++n) Apply(w, piece);
  // Time runs on past the link-down time (20 ms): each end settles, or goes down.
  w.Advance(25 * DXFP_NS_PER_MS);
  return 0;
}
