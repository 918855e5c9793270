// demo_transfer.cc - DMA reads and posted writes as real TLPs, counted and checked.
#include "demo_transfer.h"

#include <core/tlp_codec.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <span>

#include "fabric/completion.h"
#include "hex.h"
#include "tlp_io.h"

namespace dxpu::cli {
namespace {

// The content of the memory being copied, a function of the byte's address.
uint8_t PatternByte(uint64_t addr) {
  uint64_t x = addr * 0x9e3779b97f4a7c15ull;
  return static_cast<uint8_t>(x >> 56);
}

// Byte enables of DW i of a request (1-DW requests use the First BE only).
uint8_t DwByteEnables(const dxpu_tlp& t, uint32_t i) {
  if (i == 0) return t.first_be;
  if (i + 1u == t.length_dw) return t.last_be;
  return 0xf;
}

bool SameRequest(const dxpu_tlp& a, const dxpu_tlp& b) {
  return a.kind == b.kind && a.addr == b.addr && a.length_dw == b.length_dw &&
         a.first_be == b.first_be && a.last_be == b.last_be && a.tag == b.tag &&
         a.requester_id == b.requester_id;
}

uint64_t CountDataErrors(std::span<const uint8_t> got, uint64_t base) {
  uint64_t errors = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != PatternByte(base + i)) ++errors;
  }
  return errors;
}

// Fills dest with bytes that differ from the pattern, so a byte never delivered counts.
Bytes Unfilled(uint64_t nbytes, uint64_t base) {
  Bytes b(nbytes);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(~PatternByte(base + i));
  return b;
}

// One DMA read: the GPU (requester) and the host (completer) exchanging real TLPs.
// A TLP that failed to encode, decode or round-trip: counted and logged.
void CountFailure(TransferStats& st, const char* what, const Error& e) {
  ++st.tlp_failures;
  spdlog::error("{}: {}: {}", what, e.name, e.message);
}

class DmaRead {
 public:
  explicit DmaRead(const DmaReadConfig& c)
      : c_(c), dest_(Unfilled(c.nbytes, c.addr)), payload_(DXPU_TLP_MAX_PAYLOAD) {}

  Result<TransferStats> Run(Progress& progress) {
    dxpu_tlp_req_split split{};
    dxpu_tlp_err err = dxpu_tlp_req_split_init(&split, c_.addr, c_.nbytes, c_.mrrs);
    if (err != DXPU_TLP_OK) return TlpError(err);
    dxpu_tlp_req_piece piece{};
    uint16_t tag = 0;
    while (dxpu_tlp_req_split_next(&split, &piece)) {
      Request(piece, tag);
      tag = static_cast<uint16_t>((tag + 1u) & 0xffu);
      progress.Update(piece.offset + piece.nbytes, c_.nbytes);
    }
    if (!fatal_.name.empty()) return fatal_;
    st_.data_errors = CountDataErrors(dest_, c_.addr);
    return st_;
  }

 private:
  // Requester side: one MRd on the wire, then its completions.
  void Request(const dxpu_tlp_req_piece& piece, uint16_t tag) {
    dxpu_tlp mrd{};
    dxpu_tlp_req_piece_header(&piece, DXPU_TLP_MRD, &mrd);
    mrd.requester_id = c_.requester_id;
    mrd.tag = tag;
    Result<Bytes> wire = EncodeTlp(mrd);
    if (!wire.ok()) return Fail("MRd encode", wire.error());
    ++st_.requests;
    st_.header_bytes += dxpu_tlp_header_len(&mrd);
    Result<dxpu_tlp> got = DecodeTlp(wire.value());  // as the host proxy receives it
    if (!got.ok()) return Fail("MRd decode", got.error());
    if (!SameRequest(got.value(), mrd)) return Fail("MRd round trip", Error{"differs", ""});
    uint64_t received = Complete(got.value(), piece);
    if (received != piece.nbytes) {
      ++st_.tlp_failures;
      spdlog::error("MRd tag {}: {} of {} bytes completed", tag, received, piece.nbytes);
    }
  }

  // Completer side: CplDs for one decoded MRd; the requester places each one's data.
  // Returns the bytes the requester received.
  uint64_t Complete(const dxpu_tlp& req, const dxpu_tlp_req_piece& piece) {
    dxpu_tlp_cpl_split split{};
    dxpu_tlp_err err = dxpu_tlp_cpl_split_init(&split, req.addr, req.length_dw, req.first_be,
                                               req.last_be, c_.rcb, c_.mps);
    if (err != DXPU_TLP_OK) {
      if (fatal_.name.empty()) fatal_ = TlpError(err);
      return 0;
    }
    dxpu_tlp_cpl_piece cp{};
    uint64_t received = 0;
    while (dxpu_tlp_cpl_split_next(&split, &cp)) {
      uint64_t first = req.addr + uint64_t{cp.offset_dw} * 4u;
      for (uint32_t i = 0; i < cp.length_dw * 4u; ++i) payload_[i] = PatternByte(first + i);
      const dxpu_tlp cpld = fabric::ReadCompletion(req, c_.completer_id, cp, payload_.data());
      Result<Bytes> wire = EncodeTlp(cpld);
      if (!wire.ok()) {
        Fail("CplD encode", wire.error());
        continue;
      }
      ++st_.completions;
      st_.header_bytes += dxpu_tlp_header_len(&cpld);
      st_.payload_bytes += dxpu_tlp_payload_len(&cpld);
      Result<dxpu_tlp> got = DecodeTlp(wire.value());  // as the GPU receives it
      if (!got.ok()) {
        Fail("CplD decode", got.error());
        continue;
      }
      received += Place(got.value(), piece);
    }
    return received;
  }

  // Requester side: the bytes of a decoded CplD go where its Byte Count says; Lower Address
  // must agree. Returns the bytes placed.
  uint64_t Place(const dxpu_tlp& cpl, const dxpu_tlp_req_piece& piece) {
    uint64_t done = piece.nbytes - std::min<uint64_t>(cpl.byte_count, piece.nbytes);
    uint64_t offset = piece.offset + done;  // of this completion's first byte, in the transfer
    uint32_t lead = cpl.lower_addr & 0x3u;
    uint64_t n = std::min<uint64_t>(cpl.byte_count, cpl.length_dw * 4u - lead);
    if (cpl.byte_count > piece.nbytes || ((c_.addr + offset) & 0x7fu) != cpl.lower_addr ||
        offset + n > dest_.size()) {
      ++st_.tlp_failures;
      spdlog::error("CplD tag {} bc {} la 0x{:02x} does not fit its request", cpl.tag,
                    cpl.byte_count, cpl.lower_addr);
      return 0;
    }
    std::copy_n(cpl.payload + lead, n, dest_.begin() + static_cast<std::ptrdiff_t>(offset));
    return n;
  }

  void Fail(const char* what, const Error& e) { CountFailure(st_, what, e); }

  const DmaReadConfig& c_;
  TransferStats st_;
  Error fatal_;
  Bytes dest_;
  Bytes payload_;
};

// One posted write stream: the host (requester) and the GPU (receiver).
class PostedWrite {
 public:
  explicit PostedWrite(const PostedWriteConfig& c)
      : c_(c), dest_(Unfilled(c.nbytes, 0)), payload_(DXPU_TLP_MAX_PAYLOAD) {}

  Result<TransferStats> Run(Progress& progress) {
    dxpu_tlp_req_split split{};
    dxpu_tlp_err err = dxpu_tlp_req_split_init(&split, c_.addr, c_.nbytes, c_.mps);
    if (err != DXPU_TLP_OK) return TlpError(err);
    dxpu_tlp_req_piece piece{};
    while (dxpu_tlp_req_split_next(&split, &piece)) {
      Write(piece);
      progress.Update(piece.offset + piece.nbytes, c_.nbytes);
    }
    st_.data_errors = CountDataErrors(dest_, 0);
    return st_;
  }

 private:
  void Write(const dxpu_tlp_req_piece& piece) {
    dxpu_tlp mwr{};
    dxpu_tlp_req_piece_header(&piece, DXPU_TLP_MWR, &mwr);
    mwr.requester_id = c_.requester_id;
    // Source bytes: the pattern by offset in the transfer; disabled lanes carry zeros.
    for (uint32_t i = 0; i < piece.length_dw * 4u; ++i) {
      uint64_t at = piece.addr + i;
      bool in = at >= c_.addr + piece.offset && at < c_.addr + piece.offset + piece.nbytes;
      payload_[i] = in ? PatternByte(at - c_.addr) : 0;
    }
    mwr.payload = payload_.data();
    Result<Bytes> wire = EncodeTlp(mwr);
    if (!wire.ok()) return Fail("MWr encode", wire.error());
    ++st_.requests;
    st_.header_bytes += dxpu_tlp_header_len(&mwr);
    st_.payload_bytes += dxpu_tlp_payload_len(&mwr);
    Result<dxpu_tlp> got = DecodeTlp(wire.value());  // as the GPU receives it
    if (!got.ok()) return Fail("MWr decode", got.error());
    if (!SameRequest(got.value(), mwr)) return Fail("MWr round trip", Error{"differs", ""});
    Store(got.value());
  }

  // Receiver side: the enabled bytes of a decoded MWr land at its address.
  void Store(const dxpu_tlp& t) {
    for (uint32_t dw = 0; dw < t.length_dw; ++dw) {
      uint8_t be = DwByteEnables(t, dw);
      for (uint32_t b = 0; b < 4; ++b) {
        if (!(be & (1u << b))) continue;
        uint64_t at = t.addr + uint64_t{dw} * 4u + b;
        if (at < c_.addr || at - c_.addr >= dest_.size()) {
          ++st_.tlp_failures;
          spdlog::error("MWr to 0x{:x} writes outside the transfer", at);
          return;
        }
        dest_[at - c_.addr] = t.payload[dw * 4u + b];
      }
    }
  }

  void Fail(const char* what, const Error& e) { CountFailure(st_, what, e); }

  const PostedWriteConfig& c_;
  TransferStats st_;
  Bytes dest_;
  Bytes payload_;
};

}  // namespace

double TransferStats::Efficiency() const {
  uint64_t total = payload_bytes + header_bytes;
  return total ? static_cast<double>(payload_bytes) / static_cast<double>(total) : 0.0;
}

Result<TransferStats> SimulateDmaRead(const DmaReadConfig& config, Progress& progress) {
  return DmaRead(config).Run(progress);
}

Result<TransferStats> SimulatePostedWrite(const PostedWriteConfig& config, Progress& progress) {
  return PostedWrite(config).Run(progress);
}

}  // namespace dxpu::cli
