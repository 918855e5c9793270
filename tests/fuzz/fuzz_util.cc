// fuzz_util.cc - see fuzz_util.h.
#include "fuzz_util.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/crc32c.h"
#include "dxpu/compat.h"
#include "dxpu/dxfp.h"

namespace dxpu::fuzz {

bool PieceReader::Next(Piece* piece) {
  if (rest_.size() < 3) return false;
  piece->op = rest_[0];
  const size_t len = std::min<size_t>(dxpu_get_be16(rest_.data() + 1), rest_.size() - 3);
  piece->bytes = rest_.subspan(3, len);
  rest_ = rest_.subspan(3 + len);
  return true;
}

void AppendPiece(std::vector<uint8_t>* out, uint8_t op, std::span<const uint8_t> bytes) {
  const size_t len = std::min<size_t>(bytes.size(), UINT16_MAX);
  uint8_t head[3] = {op, 0, 0};
  dxpu_put_be16(head + 1, static_cast<uint16_t>(len));
  out->insert(out->end(), head, head + 3);
  out->insert(out->end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
}

bool FixDxfpCrc(std::span<uint8_t> frame) {
  if (frame.size() < DXFP_MIN_FRAME) return false;
  const size_t len = dxpu_get_be16(frame.data() + DXFP_OFF_LENGTH);
  if (len < DXFP_MIN_FRAME || len > frame.size()) return false;
  dxpu_put_be32(frame.data() + len - DXFP_CRC_SIZE,
                dxpu_crc32c(0, frame.data(), len - DXFP_CRC_SIZE));
  return true;
}

bool SameTlp(const dxpu_tlp& a, const dxpu_tlp& b) {
  dxpu_tlp x = a;
  dxpu_tlp y = b;
  x.payload = y.payload = nullptr;
  const uint32_t n = dxpu_tlp_payload_len(&a);
  if (memcmp(&x, &y, sizeof(x)) != 0 || n != dxpu_tlp_payload_len(&b)) return false;
  return n == 0 || memcmp(a.payload, b.payload, n) == 0;
}

void Require(bool ok, const char* target, const char* what) {
  if (ok) return;
  fprintf(stderr, "%s: %s\n", target, what);
  abort();
}

void QuietLogs() { spdlog::set_level(spdlog::level::off); }

}  // namespace dxpu::fuzz
