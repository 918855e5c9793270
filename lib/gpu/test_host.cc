// test_host.cc - the in-process host: its requests, its answers to the device's DMA, and the
// loop that moves TLPs and time.
#include "gpu/test_host.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "core/tlp_build.h"
#include "gpu/pci_regs.h"
#include "pcie/byte_enables.h"

namespace dxpu::gpu {
namespace {

uint32_t Le32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace

TestHost::TestHost(pcie::Function& device, const TestHostOptions& options)
    : device_(device), options_(options), memory_(options.memory_bytes) {}

// --- Running ---

bool TestHost::Pump() {
  bool moved = false;
  while (true) {
    size_t taken = 0;
    const size_t polled = device_.Poll(now_, [&](const dxpu_tlp& t) {
      if (take_limit != 0 && taken == take_limit) return false;
      ++taken;
      OnDeviceTlp(t);
      return true;
    });
    while (!delayed_.empty() && delayed_.front().first <= now_) {
      to_device_.push_back(std::move(delayed_.front().second));
      delayed_.pop_front();
    }
    const bool delivered = !to_device_.empty();
    while (!to_device_.empty()) {
      const OwnedTlp t = std::move(to_device_.front());
      to_device_.pop_front();
      Send(t.View());
    }
    if (polled == 0 && !delivered) return moved;
    moved = true;
  }
}

bool TestHost::RunUntil(const std::function<bool()>& done, uint64_t time_limit) {
  while (true) {
    const bool moved = Pump();
    if (done && done()) return true;
    uint64_t next = device_.NextDeadline();
    if (!delayed_.empty()) next = std::min(next, delayed_.front().first);
    if (next == UINT64_MAX || next > time_limit) return !done || done();
    if (next > now_) {
      now_ = next;
    } else if (!moved) {
      return !done || done();  // a deadline that passed without effect: nothing more happens
    }
  }
}

// --- The device's TLPs ---

void TestHost::OnDeviceTlp(const dxpu_tlp& t) {
  if (on_device_tlp) on_device_tlp(t);
  switch (t.kind) {
    case DXPU_TLP_MRD:
      Answer(t, read_policy ? read_policy(t) : ReadAnswer::kComplete);
      break;
    case DXPU_TLP_MWR:
      if (t.addr == options_.msix_address && t.length_dw == 1) {
        msix_.push_back({.address = t.addr, .data = Le32(t.payload), .time = now_});
      } else {
        ApplyWrite(t);
      }
      break;
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      completions_[t.tag].push_back(OwnedTlp::Copy(t));
      if (dxpu_tlp_cpl_is_final(&t)) completed_[t.tag] = true;
      break;
    default:
      break;
  }
}

void TestHost::ApplyWrite(const dxpu_tlp& mwr) {
  if (!memory_.Contains(mwr.addr, uint64_t{mwr.length_dw} * 4)) {
    ++dropped_writes_;
    return;
  }
  // The first and last DW byte by byte as enabled, the DWs between them in one write.
  const auto write_dw = [&](uint32_t i) {
    const uint8_t be = pcie::DwByteEnables(mwr, i);
    for (uint32_t k = 0; k < 4; ++k) {
      if ((be >> k) & 1u) {
        memory_.Write(mwr.addr + uint64_t{i} * 4 + k,
                      std::span<const uint8_t>(mwr.payload + size_t{i} * 4 + k, 1));
      }
    }
  };
  write_dw(0);
  if (mwr.length_dw > 2) {
    memory_.Write(mwr.addr + 4,
                  std::span<const uint8_t>(mwr.payload + 4, (size_t{mwr.length_dw} - 2) * 4));
  }
  if (mwr.length_dw > 1) write_dw(mwr.length_dw - 1u);
}

void TestHost::Answer(const dxpu_tlp& mrd, ReadAnswer answer) {
  const uint64_t length = uint64_t{mrd.length_dw} * 4;
  if (answer == ReadAnswer::kComplete && !memory_.Contains(mrd.addr, length)) {
    answer = ReadAnswer::kUnsupported;
  }
  switch (answer) {
    case ReadAnswer::kHold:
      held_.push_back(OwnedTlp::Copy(mrd));
      return;
    case ReadAnswer::kIgnore:
      return;
    case ReadAnswer::kUnsupported:
    case ReadAnswer::kCompleterAbort: {
      dxpu_tlp c{};
      dxpu_tlp_completion_for(
          &mrd, options_.requester_id,
          answer == ReadAnswer::kUnsupported ? DXPU_TLP_CPL_UR : DXPU_TLP_CPL_CA, &c);
      Deliver(OwnedTlp::Copy(c));
      return;
    }
    case ReadAnswer::kComplete:
      break;
  }
  std::vector<uint8_t> data(length);
  memory_.Read(mrd.addr, data);
  dxpu_tlp_cpld_split split{};
  if (dxpu_tlp_cpld_split_init(&split, &mrd, options_.requester_id,
                               options_.read_completion_boundary,
                               options_.max_payload) != DXPU_TLP_OK) {
    return;  // not a valid read: no answer
  }
  dxpu_tlp c{};
  while (dxpu_tlp_cpld_split_next(&split, data.data(), &c)) Deliver(OwnedTlp::Copy(c));
}

void TestHost::Deliver(OwnedTlp answer) {
  if (options_.read_latency_ns == 0) {
    to_device_.push_back(std::move(answer));
  } else {
    delayed_.emplace_back(now_ + options_.read_latency_ns, std::move(answer));
  }
}

void TestHost::ReleaseHeld() {
  std::deque<OwnedTlp> held;
  held.swap(held_);
  for (const OwnedTlp& mrd : held) Answer(mrd.View(), ReadAnswer::kComplete);
}

// --- Requests ---

void TestHost::Send(const dxpu_tlp& tlp) {
  if (on_host_tlp) on_host_tlp(tlp);
  device_.Receive(tlp, now_);
}

std::vector<OwnedTlp> TestHost::Request(dxpu_tlp request) {
  const uint16_t tag = NextTag();
  request.tag = tag;
  request.requester_id = options_.requester_id;
  completions_.erase(tag);
  completed_.erase(tag);
  Send(request);
  RunUntil([&] { return completed_.contains(tag); });
  std::vector<OwnedTlp> out = std::move(completions_[tag]);
  completions_.erase(tag);
  completed_.erase(tag);
  return out;
}

uint32_t TestHost::ConfigRead32(uint16_t offset) {
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGRD0, 0, offset, 0xf, &t);
  const std::vector<OwnedTlp> cpl = Request(t);
  if (cpl.size() != 1 || cpl[0].header.kind != DXPU_TLP_CPLD || cpl[0].payload.size() < 4) {
    return 0xffffffff;
  }
  return Le32(cpl[0].payload.data());
}

void TestHost::ConfigWrite(uint16_t offset, uint32_t size, uint32_t value) {
  const uint32_t shift = offset & 3u;
  const uint32_t shifted = value << (8 * shift);
  uint8_t payload[4];
  for (int k = 0; k < 4; ++k) payload[k] = static_cast<uint8_t>(shifted >> (8 * k));
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, 0, offset,
                          static_cast<uint8_t>(((1u << size) - 1) << shift), &t);
  t.payload = payload;
  Request(t);
}

std::optional<uint16_t> TestHost::FindCapability(uint8_t cap_id) {
  if ((ConfigRead32(pci::kCommand) >> 16 & pci::kStatusCapList) == 0) return std::nullopt;
  uint32_t at = ConfigRead32(pci::kCapabilityList) & 0xfcu;
  // At most 48 capabilities fit in 0x40..0xff: more steps mean a loop.
  for (int steps = 0; steps < 48 && at >= pci::kHeaderSize; ++steps) {
    const uint32_t header = ConfigRead32(static_cast<uint16_t>(at));
    if ((header & 0xffu) == cap_id) return static_cast<uint16_t>(at);
    at = (header >> 8) & 0xfcu;
  }
  return std::nullopt;
}

void TestHost::Enumerate() {
  uint64_t next32 = options_.bar32_base;
  uint64_t next64 = options_.bar64_base;
  for (const pcie::Bar& b : device_.Bars()) {
    uint64_t& next = b.is_64bit ? next64 : next32;
    const uint64_t address = (next + b.size - 1) / b.size * b.size;
    next = address + b.size;
    const auto offset = static_cast<uint16_t>(pci::kBar0 + 4 * b.index);
    ConfigWrite(offset, 4, static_cast<uint32_t>(address));
    if (b.is_64bit) ConfigWrite(offset + 4, 4, static_cast<uint32_t>(address >> 32));
    bar_addresses_[b.index] = address;
  }
  if (const std::optional<uint16_t> exp = FindCapability(pci::kCapIdExp)) {
    const auto devctl = static_cast<uint16_t>(*exp + pci::kExpDevCtl);
    const uint32_t current = ConfigRead32(devctl) & 0xffffu;
    const auto code = [](uint32_t bytes) { return std::countr_zero(bytes / 128); };
    const uint32_t value = (current & ~uint32_t{pci::kExpDevCtlPayload | pci::kExpDevCtlReadrq}) |
                           (code(options_.max_payload) << 5) |
                           (code(options_.max_read_request) << 12) | pci::kExpDevCtlExtTag;
    ConfigWrite(devctl, 2, value);
  }
  ConfigWrite(pci::kCommand, 2, pci::kCommandMemory | pci::kCommandMaster);
  if (const std::optional<uint16_t> msix = FindCapability(pci::kCapIdMsix)) {
    const uint32_t control = ConfigRead32(*msix) >> 16;
    const uint32_t table = ConfigRead32(static_cast<uint16_t>(*msix + pci::kMsixTable));
    ConfigWrite(static_cast<uint16_t>(*msix + pci::kMsixFlags), 2, pci::kMsixFlagsEnable);
    const auto bar = static_cast<uint8_t>(table & pci::kMsixBirMask);
    const uint64_t table_offset = table & ~uint32_t{pci::kMsixBirMask};
    const uint32_t vectors = (control & pci::kMsixFlagsQsize) + 1;
    for (uint32_t v = 0; v < vectors; ++v) {
      const uint64_t entry = table_offset + uint64_t{v} * 16;
      BarWrite32(bar, entry + 0, static_cast<uint32_t>(options_.msix_address));
      BarWrite32(bar, entry + 4, static_cast<uint32_t>(options_.msix_address >> 32));
      BarWrite32(bar, entry + 8, v);
      BarWrite32(bar, entry + 12, 0);  // unmasked
    }
  }
}

uint64_t TestHost::bar_address(uint8_t bar) const {
  const auto it = bar_addresses_.find(bar);
  return it == bar_addresses_.end() ? 0 : it->second;
}

HostRead TestHost::MemRead(uint64_t address, uint32_t length) {
  dxpu_tlp t{};
  if (!dxpu_tlp_mem_request(DXPU_TLP_MRD, address, length, &t)) {
    return {.status = DXPU_TLP_CPL_CA, .data = {}};  // not one request
  }
  HostRead result;
  for (const OwnedTlp& c : Request(t)) {
    if (c.header.cpl_status != DXPU_TLP_CPL_SC || c.header.kind != DXPU_TLP_CPLD) {
      result.status =
          c.header.cpl_status == DXPU_TLP_CPL_SC ? uint8_t{DXPU_TLP_CPL_CA} : c.header.cpl_status;
      result.data.clear();
      return result;
    }
    const uint32_t lead = c.header.lower_addr & 3u;
    const uint32_t n = std::min<uint32_t>(c.header.byte_count, c.payload.size() - lead);
    result.data.insert(result.data.end(), c.payload.begin() + lead, c.payload.begin() + lead + n);
  }
  if (result.data.size() != length) result.status = DXPU_TLP_CPL_CA;
  return result;
}

void TestHost::MemWrite(uint64_t address, std::span<const uint8_t> bytes) {
  // One MWr or none: a range that takes more (over 4 KiB, or across a page) is not sent.
  dxpu_tlp_mwr_split split{};
  if (dxpu_tlp_mwr_split_init(&split, address, bytes.data(), bytes.size(), 4096) != DXPU_TLP_OK)
    return;
  std::vector<uint8_t> payload(4096);
  dxpu_tlp t{};
  if (!dxpu_tlp_mwr_split_next(&split, payload.data(), &t) || split.req.next != split.req.end)
    return;
  t.requester_id = options_.requester_id;
  Send(t);
}

uint32_t TestHost::BarRead32(uint8_t bar, uint64_t offset) {
  const HostRead r = MemRead(bar_address(bar) + offset, 4);
  if (r.status != DXPU_TLP_CPL_SC || r.data.size() != 4) return 0xffffffff;
  return Le32(r.data.data());
}

void TestHost::BarWrite32(uint8_t bar, uint64_t offset, uint32_t value) {
  const uint8_t bytes[4] = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                            static_cast<uint8_t>(value >> 16), static_cast<uint8_t>(value >> 24)};
  MemWrite(bar_address(bar) + offset, bytes);
}

}  // namespace dxpu::gpu
