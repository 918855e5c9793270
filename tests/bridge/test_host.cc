// test_host.cc - a host for bridge tests (test_host.h).
#include "test_host.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/tlp_build.h"

namespace dxpu::test {
namespace {

constexpr uint32_t kHostRcb = 64;
constexpr uint32_t kHostMps = 256;

}  // namespace

TestHost::TestHost(uint64_t node_id, uint32_t session_id, const dxfp_session_config* base) {
  dxfp_session_config cfg;
  if (base != nullptr) {
    cfg = *base;
  } else {
    dxfp_session_config_defaults(&cfg);
  }
  cfg.role = DXFP_ROLE_INITIATOR;
  cfg.node_id = node_id;
  cfg.session_id = session_id;
  cfg.epoch = static_cast<uint32_t>(node_id * 2654435761U) | 1U;
  cfg.initial_seq = session_id * 977U;
  fabric::EndpointCallbacks cb;
  cb.deliver = [this](const dxpu_tlp& t) { Deliver(t); };
  cb.link_down = [this](dxfp_down_reason, std::span<const dxpu_tlp> unanswered) {
    for (const dxpu_tlp& t : unanswered) {
      auto it = by_tag_.find(t.tag);
      if (it == by_tag_.end()) continue;
      HostRequest& r = requests_[it->second];
      r.done = true;
      r.status = DXPU_TLP_CPL_UR;
      by_tag_.erase(it);
    }
  };
  std::string error;
  fabric::EndpointOptions options;
  options.queue.max_tlps_per_class = 4096;
  options.queue.max_payload_bytes_per_class = size_t{4} << 20;
  endpoint_ = fabric::Endpoint::Create(cfg, std::move(cb), options, &error);
}

void TestHost::AddMemory(uint64_t base, uint64_t size) {
  memory_[base] = std::vector<uint8_t>(size, 0);
}

uint8_t* TestHost::Find(uint64_t addr, uint64_t len) {
  auto it = memory_.upper_bound(addr);
  if (it == memory_.begin()) return nullptr;
  --it;
  const uint64_t off = addr - it->first;
  if (off > it->second.size() || len > it->second.size() - off) return nullptr;
  return it->second.data() + off;
}

std::span<uint8_t> TestHost::Memory(uint64_t addr, uint64_t size) {
  uint8_t* p = Find(addr, size);
  if (p == nullptr) return {};
  return {p, size};
}

// ------------------------------------------------------------------ requests

std::optional<uint32_t> TestHost::Issue(dxpu_tlp tlp, uint32_t expect_bytes) {
  uint16_t tag = next_tag_;
  for (int tries = 0; by_tag_.contains(tag); ++tries) {
    if (tries == 256) return std::nullopt;
    tag = static_cast<uint16_t>((tag + 1) & 0xff);
  }
  next_tag_ = static_cast<uint16_t>((tag + 1) & 0xff);
  tlp.requester_id = kRequesterId;
  tlp.tag = tag;
  if (!endpoint_->Submit(tlp, now_ns)) return std::nullopt;
  const uint32_t id = next_id_++;
  HostRequest& r = requests_[id];
  r.data.assign(expect_bytes, 0);
  by_tag_[tag] = id;
  return id;
}

std::optional<uint32_t> TestHost::CfgRead(uint16_t bdf, uint16_t reg) {
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGRD0, bdf, reg, 0xf, &t);
  return Issue(t, 4);
}

std::optional<uint32_t> TestHost::CfgWrite(uint16_t bdf, uint16_t reg, uint32_t value, uint8_t be) {
  const std::array<uint8_t, 4> data{static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                    static_cast<uint8_t>(value >> 16),
                                    static_cast<uint8_t>(value >> 24)};
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, bdf, reg, be, &t);
  t.payload = data.data();
  return Issue(t, 0);
}

std::optional<uint32_t> TestHost::MemRead(uint64_t addr, uint32_t len) {
  dxpu_tlp t{};
  if (!dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, len, &t)) return std::nullopt;
  return Issue(t, len);
}

bool TestHost::MemWrite(uint64_t addr, std::span<const uint8_t> bytes) {
  dxpu_tlp_mwr_split split{};
  if (dxpu_tlp_mwr_split_init(&split, addr, bytes.data(), bytes.size(), kHostMps) != DXPU_TLP_OK)
    return false;
  std::array<uint8_t, kHostMps> buf{};
  dxpu_tlp t{};
  while (dxpu_tlp_mwr_split_next(&split, buf.data(), &t)) {
    t.requester_id = kRequesterId;
    if (!endpoint_->Submit(t, now_ns)) return false;
  }
  return true;
}

bool TestHost::MemWrite32(uint64_t addr, uint32_t value) {
  const std::array<uint8_t, 4> data{static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                    static_cast<uint8_t>(value >> 16),
                                    static_cast<uint8_t>(value >> 24)};
  return MemWrite(addr, data);
}

// ------------------------------------------------------------------ what arrives

void TestHost::Deliver(const dxpu_tlp& t) {
  switch (t.kind) {
    case DXPU_TLP_MRD:
      return AnswerRead(t);
    case DXPU_TLP_MWR:
      return ApplyWrite(t);
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      return OnCompletion(t);
    default:
      unexpected_cpl++;
      return;
  }
}

void TestHost::AnswerRead(const dxpu_tlp& t) {
  dma_reads++;
  const uint32_t bytes = t.length_dw * 4U;
  const uint8_t* src = Find(t.addr, bytes);
  if (src == nullptr) {
    // Outside every region the host registered: UR, as the host proxy answers.
    dma_refused++;
    dxpu_tlp ur{};
    dxpu_tlp_completion_for(&t, kRequesterId, DXPU_TLP_CPL_UR, &ur);
    endpoint_->Submit(ur, now_ns);
    return;
  }
  dxpu_tlp_cpl_split split{};
  if (dxpu_tlp_cpl_split_init(&split, t.addr, t.length_dw, t.first_be, t.last_be, kHostRcb,
                              completion_payload) != DXPU_TLP_OK)
    return;
  dxpu_tlp cpl{};
  dxpu_tlp_completion_for(&t, kRequesterId, DXPU_TLP_CPL_SC, &cpl);
  dxpu_tlp_cpl_piece piece{};
  while (dxpu_tlp_cpl_split_next(&split, &piece)) {
    dxpu_tlp_completion_piece(&cpl, &piece);
    cpl.payload = src + size_t{piece.offset_dw} * 4;
    endpoint_->Submit(cpl, now_ns);
  }
}

void TestHost::ApplyWrite(const dxpu_tlp& t) {
  if (msi_size_ != 0 && t.addr >= msi_base_ && t.addr < msi_base_ + msi_size_) {
    uint32_t data = 0;
    std::memcpy(&data, t.payload, 4);
    interrupts_.push_back(Interrupt{t.addr, data, now_ns});
    return;
  }
  dma_writes++;
  const uint32_t bytes = t.length_dw * 4U;
  uint8_t* dst = Find(t.addr, bytes);
  if (dst == nullptr) {
    dma_refused++;
    return;
  }
  for (uint32_t i = 0; i < bytes; ++i) {
    const uint32_t dw = i / 4;
    const uint8_t be = dw == 0 ? t.first_be : (dw == t.length_dw - 1U ? t.last_be : 0xf);
    if ((be >> (i % 4)) & 1U) dst[i] = t.payload[i];
  }
}

void TestHost::OnCompletion(const dxpu_tlp& t) {
  auto it = by_tag_.find(t.tag);
  if (it == by_tag_.end() || t.requester_id != kRequesterId) {
    unexpected_cpl++;
    return;
  }
  HostRequest& r = requests_[it->second];
  if (t.cpl_status != DXPU_TLP_CPL_SC) {
    ur_received++;
    r.status = t.cpl_status;
  }
  if (t.kind == DXPU_TLP_CPLD && t.cpl_status == DXPU_TLP_CPL_SC && !r.data.empty()) {
    const uint32_t expect = static_cast<uint32_t>(r.data.size());
    const uint32_t offset = expect - std::min<uint32_t>(t.byte_count, expect);
    const uint32_t first = t.lower_addr & 3U;
    const uint32_t carried = std::min<uint32_t>(t.byte_count, t.length_dw * 4U - first);
    for (uint32_t i = 0; i < carried && offset + i < expect; ++i)
      r.data[offset + i] = t.payload[first + i];
    r.received += carried;
  }
  if (dxpu_tlp_cpl_is_final(&t)) {
    r.done = true;
    by_tag_.erase(it);
  }
}

}  // namespace dxpu::test
