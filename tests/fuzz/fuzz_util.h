// fuzz_util.h - what the libFuzzer targets (docs/fuzzing.md) and their corpus generator share:
// the length-prefixed framing of an input that carries several messages, a DxFP frame's CRC32C
// put right after the fuzzer changed the bytes it covers, and quiet logs.
#ifndef DXPU_TESTS_FUZZ_FUZZ_UTIL_H_
#define DXPU_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/tlp_codec.h"

namespace dxpu::fuzz {

// An input read as a sequence of pieces: each is an opcode byte, a big-endian 16-bit length and
// that many bytes (fewer at the end of the input: the piece gets what is left).
class PieceReader {
 public:
  explicit PieceReader(std::span<const uint8_t> input) : rest_(input) {}
  struct Piece {
    uint8_t op = 0;
    std::span<const uint8_t> bytes;
  };
  // False at the end of the input.
  bool Next(Piece* piece);

 private:
  std::span<const uint8_t> rest_;
};

// Appends one piece in PieceReader's framing (the corpus generator writes inputs so).
void AppendPiece(std::vector<uint8_t>* out, uint8_t op, std::span<const uint8_t> bytes);

// When frame's Length field names a length the buffer holds, writes the CRC32C its first
// Length - 4 bytes have into its last 4: the fuzzer's changes then reach the checks after the
// CRC's. False (the frame unchanged) otherwise.
bool FixDxfpCrc(std::span<uint8_t> frame);

// Two TLPs with the same fields and payload bytes (wherever their payloads are).
bool SameTlp(const dxpu_tlp& a, const dxpu_tlp& b);

// A property every input must keep: if `ok` is false, prints what broke and aborts (libFuzzer
// keeps the input as a crash).
void Require(bool ok, const char* target, const char* what);

// spdlog off: the parsers log what they refuse, which would be most of every run's time.
void QuietLogs();

}  // namespace dxpu::fuzz

#endif  // DXPU_TESTS_FUZZ_FUZZ_UTIL_H_
