// verilated_ports.h - a Verilated model's wide ports as 32-bit words, for testbenches and for
// the firmware side of a model (rtl_datapath.cc).
#ifndef DXPU_RTL_SIM_DATAPATH_VERILATED_PORTS_H_
#define DXPU_RTL_SIM_DATAPATH_VERILATED_PORTS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <type_traits>
#include <vector>

namespace dxpu::rtl {

// A port of N bits as Verilator lays it out: up to 64 bits a scalar, above a VlWide array of
// 32-bit words, word 0 holding bits 31:0. Missing words read as zero.
template <typename Port>
void SetBits(Port& port, std::span<const uint32_t> words) {
  if constexpr (std::is_integral_v<Port>) {
    uint64_t v = words.empty() ? 0 : words[0];
    if (words.size() > 1) v |= static_cast<uint64_t>(words[1]) << 32;
    port = static_cast<Port>(v);
  } else {
    for (size_t i = 0; i < std::size(port.m_storage); ++i)
      port.m_storage[i] = i < words.size() ? words[i] : 0;
  }
}

template <typename Port>
std::vector<uint32_t> GetBits(const Port& port, size_t nwords) {
  std::vector<uint32_t> words(nwords);
  if constexpr (std::is_integral_v<Port>) {
    auto v = static_cast<uint64_t>(port);
    words[0] = static_cast<uint32_t>(v);
    if (nwords > 1) words[1] = static_cast<uint32_t>(v >> 32);
  } else {
    for (size_t i = 0; i < nwords; ++i) words[i] = port.m_storage[i];
  }
  return words;
}

// Header bytes as on the wire -> the 128-bit header port's words (byte 0 in bits 127:120; a
// 3 DW header leaves bits 31:0 zero).
inline std::vector<uint32_t> HeaderWords(std::span<const uint8_t> bytes) {
  std::vector<uint32_t> w(4, 0);
  for (size_t i = 0; i < 16 && i < bytes.size(); ++i)
    w[3 - i / 4] |= static_cast<uint32_t>(bytes[i]) << (24 - 8 * (i % 4));
  return w;
}

// ...and back: the 16 wire bytes of a header port's words.
inline std::array<uint8_t, 16> HeaderBytes(std::span<const uint32_t> words) {
  std::array<uint8_t, 16> h{};
  for (size_t i = 0; i < 16 && 3 - i / 4 < words.size(); ++i)
    h[i] = static_cast<uint8_t>(words[3 - i / 4] >> (24 - 8 * (i % 4)));
  return h;
}

// `n` bytes from p (n <= width / 8) into a beat of `width` bits in wire order from the top:
// byte 0 in the top 8 bits (docs/rtl.md, byte order in a beat).
inline std::vector<uint32_t> BeatWords(const uint8_t* p, size_t n, unsigned width) {
  std::vector<uint32_t> words(width / 32);
  for (size_t i = 0; i < n; ++i) {
    const size_t bit = width - 8 - 8 * i;  // the byte's lowest bit
    words[bit / 32] |= static_cast<uint32_t>(p[i]) << (bit % 32);
  }
  return words;
}

// `n` wire-order bytes from the top of a beat of `width` bits (BeatWords' inverse).
inline std::vector<uint8_t> BeatBytes(std::span<const uint32_t> words, size_t n, unsigned width) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t bit = width - 8 - 8 * i;
    out[i] = static_cast<uint8_t>(words[bit / 32] >> (bit % 32));
  }
  return out;
}

// The keep bits of a beat of `width` bits holding `n` wire-order bytes: keep bit i enables
// bits 32i+31:32i, so the first dword is the top bit (docs/rtl.md).
inline uint32_t BeatKeep(size_t n, unsigned width) {
  const unsigned lanes = width / 32;
  const unsigned used = static_cast<unsigned>(std::min<size_t>((n + 3) / 4, lanes));
  if (used == 0) return 0;
  const uint32_t all = lanes >= 32 ? ~0u : (1u << lanes) - 1u;
  return all & ~((1u << (lanes - used)) - 1u);
}

// A beat of a TLP stream, header beside payload (docs/rtl.md): its payload bytes in wire order
// from the top, their dword enables, first and last beat.
struct TlpBeat {
  std::vector<uint32_t> data;
  uint32_t keep = 0;
  bool sop = false, eop = false;
};

// A TLP's wire bytes as such a stream carries them: the header's words (HeaderWords) and the
// payload beats; a TLP without payload is one beat with no dword enabled.
struct TlpStream {
  std::vector<uint32_t> hdr;
  uint32_t len = 0;  // the TLP's bytes, header included
  std::vector<TlpBeat> beats;
};
inline TlpStream TlpBeats(std::span<const uint8_t> tlp, unsigned width) {
  const size_t beat_bytes = width / 8;
  const size_t hb = (tlp[0] & 0x20) != 0 ? 16 : 12;
  const size_t rest = tlp.size() - hb;
  const size_t n = std::max<size_t>(1, (rest + beat_bytes - 1) / beat_bytes);
  TlpStream s{HeaderWords(tlp.first(hb)), static_cast<uint32_t>(tlp.size()), {}};
  for (size_t i = 0; i < n; ++i) {
    const size_t off = i * beat_bytes;
    const size_t k = off < rest ? std::min(beat_bytes, rest - off) : 0;
    s.beats.push_back(
        {BeatWords(tlp.data() + hb + off, k, width), BeatKeep(k, width), i == 0, i + 1 == n});
  }
  return s;
}

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_VERILATED_PORTS_H_
