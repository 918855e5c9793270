// split_virtqueue.cc - fetching (avail ring, descriptor table, indirect tables, buffers),
// the checks on each chain, and completions (buffers, used element, used->idx, interrupt).
#include "virtio/split_virtqueue.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "virtio/little_endian.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio {
namespace {

bool Wraps(uint64_t address, uint64_t length) { return length != 0 && address + length < address; }

}  // namespace

SplitVirtqueue::SplitVirtqueue(const VirtqueueLayout& layout, const VirtqueueLimits& limits,
                               GuestDma& dma, Hooks hooks)
    : layout_(layout), limits_(limits), dma_(dma), hooks_(std::move(hooks)) {}

std::string SplitVirtqueue::ValidateLayout(const VirtqueueLayout& l) {
  if (l.size == 0 || l.size > kMaxQueueSize || !std::has_single_bit(l.size)) {
    return "queue " + std::to_string(l.index) + ": size " + std::to_string(l.size) +
           " is not a power of two in 1..32768";
  }
  // 2.7: descriptor table 16-byte, available ring 2-byte, used ring 4-byte aligned.
  if (l.desc % 16 != 0 || l.driver % 2 != 0 || l.device % 4 != 0) {
    return "queue " + std::to_string(l.index) + ": ring addresses are misaligned";
  }
  const uint64_t n = l.size;
  if (Wraps(l.desc, n * kDescSize) || Wraps(l.driver, kAvailRing + 2 * n + 2) ||
      Wraps(l.device, kUsedRing + kUsedElemSize * n + 2)) {
    return "queue " + std::to_string(l.index) + ": a ring wraps the address space";
  }
  return {};
}

void SplitVirtqueue::Fail(std::string why) {
  if (stopped_) return;
  stopped_ = true;
  hooks_.needs_reset("queue " + std::to_string(layout_.index) + ": " + why);
}

// ---- Fetching ----

void SplitVirtqueue::Kick() {
  if (stopped_) return;
  if (fetching_) {
    kicked_while_fetching_ = true;
    return;
  }
  ReadAvail();
}

void SplitVirtqueue::ReadAvail() {
  fetching_ = true;
  kicked_while_fetching_ = false;
  dma_.Read(layout_.driver, 4, hooks_.max_read_request(),
            [this](bool ok, std::vector<uint8_t> data) {
              if (stopped_) return;
              if (!ok) {
                ++counters_.dma_errors;
                return Fail("reading the available ring failed");
              }
              OnAvail(std::move(data));
            });
}

void SplitVirtqueue::OnAvail(std::vector<uint8_t> data) {
  const uint16_t idx = LoadLe16(data, 2);
  const auto pending = static_cast<uint16_t>(idx - last_avail_);
  if (pending > layout_.size) {
    return Fail("avail->idx " + std::to_string(idx) + " is more than the queue size ahead of " +
                std::to_string(last_avail_));
  }
  if (pending == 0) {
    fetching_ = false;
    if (kicked_while_fetching_) ReadAvail();
    return;
  }
  // The entries up to the ring's end in one read; the rest on the next pass.
  const uint16_t start = last_avail_ & (layout_.size - 1);
  const uint16_t n = std::min<uint16_t>(pending, static_cast<uint16_t>(layout_.size - start));
  dma_.Read(layout_.driver + kAvailRing + 2u * start, 2u * n, hooks_.max_read_request(),
            [this](bool ok, std::vector<uint8_t> ring) {
              if (stopped_) return;
              if (!ok) {
                ++counters_.dma_errors;
                return Fail("reading the available ring failed");
              }
              OnRing(std::move(ring));
            });
}

void SplitVirtqueue::OnRing(std::vector<uint8_t> ring) {
  std::vector<uint16_t> heads;
  for (size_t i = 0; i + 1 < ring.size(); i += 2) heads.push_back(LoadLe16(ring, i));
  last_avail_ = static_cast<uint16_t>(last_avail_ + heads.size());
  // The whole table: one read instead of one per descriptor (it is the driver's, mapped for
  // the device as a whole).
  dma_.Read(layout_.desc, uint32_t{layout_.size} * kDescSize, hooks_.max_read_request(),
            [this, heads = std::move(heads)](bool ok, std::vector<uint8_t> table) mutable {
              if (stopped_) return;
              if (!ok) {
                ++counters_.dma_errors;
                return Fail("reading the descriptor table failed");
              }
              OnTable(std::move(heads), std::move(table));
            });
}

void SplitVirtqueue::OnTable(std::vector<uint16_t> heads, std::vector<uint8_t> table) {
  for (const uint16_t head : heads) {
    if (stopped_) return;
    StartChain(head, table);
  }
  if (stopped_) return;
  ReadAvail();  // again, until it stops moving
}

SplitVirtqueue::Descriptor SplitVirtqueue::DescriptorAt(std::span<const uint8_t> table,
                                                        uint32_t index) {
  const size_t at = size_t{index} * kDescSize;
  return Descriptor{.address = LoadLe64(table, at),
                    .length = LoadLe32(table, at + 8),
                    .flags = LoadLe16(table, at + 12),
                    .next = LoadLe16(table, at + 14)};
}

void SplitVirtqueue::StartChain(uint16_t head, std::span<const uint8_t> table) {
  if (head >= layout_.size) return Fail("head " + std::to_string(head) + " is out of range");
  if (in_flight_.contains(head)) {
    return Fail("head " + std::to_string(head) + " made available while in flight");
  }
  const Descriptor first = DescriptorAt(table, head);
  if ((first.flags & kDescFlagIndirect) == 0) {
    Chain chain;
    if (!Walk(table, layout_.size, head, false, chain)) return;
    return StartGather(head, std::move(chain));
  }
  // An indirect table: only at the head (the device takes it nowhere else), alone.
  if (!layout_.indirect) return Fail("indirect descriptor without RING_INDIRECT_DESC");
  if ((first.flags & kDescFlagNext) != 0) return Fail("indirect descriptor with NEXT");
  if (first.length == 0 || first.length % kDescSize != 0 ||
      first.length / kDescSize > limits_.max_indirect_entries ||
      Wraps(first.address, first.length)) {
    return Fail("indirect table of " + std::to_string(first.length) + " bytes");
  }
  in_flight_.emplace(head, Chain{});  // claimed while its table is read
  dma_.Read(first.address, first.length, hooks_.max_read_request(),
            [this, head](bool ok, std::vector<uint8_t> indirect) {
              if (stopped_) return;
              if (!ok) {
                ++counters_.dma_errors;
                return Fail("reading an indirect table failed");
              }
              in_flight_.erase(head);
              Chain chain;
              const auto entries = static_cast<uint32_t>(indirect.size() / kDescSize);
              if (!Walk(indirect, entries, 0, true, chain)) return;
              StartGather(head, std::move(chain));
            });
}

bool SplitVirtqueue::Walk(std::span<const uint8_t> table, uint32_t entries, uint16_t first,
                          bool indirect, Chain& chain) {
  uint32_t index = first;
  // A chain visits each entry at most once: more steps than entries is a loop.
  for (uint32_t steps = 0;; ++steps) {
    if (steps >= entries) {
      Fail("descriptor chain longer than its table (a loop)");
      return false;
    }
    const Descriptor d = DescriptorAt(table, index);
    if ((d.flags & kDescFlagIndirect) != 0) {
      Fail(indirect ? "indirect descriptor inside an indirect table"
                    : "indirect descriptor after the head");
      return false;
    }
    if (Wraps(d.address, d.length)) {
      Fail("buffer wraps the address space");
      return false;
    }
    if ((d.flags & kDescFlagWrite) != 0) {
      chain.writable.push_back({d.address, d.length});
      chain.writable_bytes += d.length;
    } else {
      if (!chain.writable.empty()) {
        Fail("device-readable buffer after a device-writable one");
        return false;
      }
      chain.readable.push_back({d.address, d.length});
      chain.readable_bytes += d.length;
    }
    if (chain.readable_bytes > limits_.max_request_bytes ||
        chain.writable_bytes > limits_.max_request_bytes) {
      Fail("request larger than " + std::to_string(limits_.max_request_bytes) + " bytes");
      return false;
    }
    if ((d.flags & kDescFlagNext) == 0) return true;
    if (d.next >= entries) {
      Fail("next index " + std::to_string(d.next) + " out of range");
      return false;
    }
    index = d.next;
  }
}

void SplitVirtqueue::StartGather(uint16_t head, Chain chain) {
  if (in_flight_.contains(head)) {
    return Fail("head " + std::to_string(head) + " made available while in flight");
  }
  // Over the byte budget: wait for completions (one chain always goes, whatever its size).
  if (bytes_in_flight_ != 0 &&
      bytes_in_flight_ + chain.readable_bytes > limits_.max_bytes_in_flight) {
    in_flight_.emplace(head, Chain{});
    parked_.emplace_back(head, std::move(chain));
    return;
  }
  bytes_in_flight_ += chain.readable_bytes;
  Gather& g = gathering_[head];
  g.head = head;
  g.bytes.resize(chain.readable_bytes);
  g.writable_bytes = static_cast<uint32_t>(chain.writable_bytes);
  uint64_t offset = 0;
  std::vector<std::pair<Segment, uint64_t>> reads;
  for (const Segment& s : chain.readable) {
    if (s.length != 0) reads.emplace_back(s, offset);
    offset += s.length;
  }
  g.reads_left = reads.size();
  in_flight_[head] = std::move(chain);
  if (reads.empty()) return OnGathered(head);
  for (const auto& read : reads) {
    const auto& segment = read.first;
    const size_t at = read.second;  // a variable (not a binding) for the capture: clang 14
    dma_.Read(segment.address, segment.length, hooks_.max_read_request(),
              [this, head, at](bool ok, std::vector<uint8_t> data) {
                if (stopped_) return;
                if (!ok) {
                  ++counters_.dma_errors;
                  return Fail("reading a buffer failed");
                }
                const auto it = gathering_.find(head);
                if (it == gathering_.end()) return;
                std::copy(data.begin(), data.end(),
                          it->second.bytes.begin() + static_cast<ptrdiff_t>(at));
                if (--it->second.reads_left == 0) OnGathered(head);
              });
  }
}

void SplitVirtqueue::OnGathered(uint16_t head) {
  auto node = gathering_.extract(head);
  if (node.empty()) return;
  Gather& g = node.mapped();
  ++counters_.requests;
  hooks_.submit(Request{.queue = layout_.index,
                        .head = head,
                        .readable = std::move(g.bytes),
                        .writable_bytes = g.writable_bytes});
}

// ---- Completions ----

void SplitVirtqueue::Complete(const Completion& completion, dxpu::gpu::TlpQueue& out) {
  if (stopped_) return;
  const auto it = in_flight_.find(completion.head);
  if (it == in_flight_.end() || gathering_.contains(completion.head)) {
    ++counters_.unknown_completions;
    return;
  }
  const Chain chain = std::move(it->second);
  in_flight_.erase(it);
  bytes_in_flight_ -= std::min(bytes_in_flight_, chain.readable_bytes);

  const uint32_t mps = hooks_.max_payload();
  std::span<const uint8_t> rest(completion.written);
  if (rest.size() > chain.writable_bytes) {
    ++counters_.truncated;
    rest = rest.first(chain.writable_bytes);
  }
  const auto written = static_cast<uint32_t>(rest.size());
  for (const Segment& s : chain.writable) {
    if (rest.empty()) break;
    const size_t n = std::min<size_t>(s.length, rest.size());
    dma_.Write(s.address, rest.first(n), mps, out);
    rest = rest.subspan(n);
  }
  std::vector<uint8_t> elem;
  AppendLe(elem, completion.head, 4);
  AppendLe(elem, written, 4);
  const uint16_t slot = used_idx_ & (layout_.size - 1);
  dma_.Write(layout_.device + kUsedRing + uint64_t{kUsedElemSize} * slot, elem, mps, out);
  used_idx_ = static_cast<uint16_t>(used_idx_ + 1);
  std::vector<uint8_t> idx;
  AppendLe(idx, used_idx_, 2);
  dma_.Write(layout_.device + kUsedIdx, idx, mps, out);
  ++counters_.completions;

  interrupt_check_needed_ = true;
  CheckInterrupt();

  while (!parked_.empty() && !stopped_ &&
         (bytes_in_flight_ == 0 || bytes_in_flight_ + parked_.front().second.readable_bytes <=
                                       limits_.max_bytes_in_flight)) {
    auto [head, parked] = std::move(parked_.front());
    parked_.pop_front();
    in_flight_.erase(head);
    StartGather(head, std::move(parked));
  }
}

void SplitVirtqueue::CheckInterrupt() {
  if (flags_read_in_flight_ || !interrupt_check_needed_ || stopped_) return;
  interrupt_check_needed_ = false;
  flags_read_in_flight_ = true;
  // Issued after the used->idx write: a read does not pass a posted write, so the flags it
  // sees were written by a driver that could already see the new index.
  dma_.Read(layout_.driver, 2, hooks_.max_read_request(),
            [this](bool ok, std::vector<uint8_t> flags) {
              flags_read_in_flight_ = false;
              if (stopped_) return;
              if (!ok) {
                ++counters_.dma_errors;
                return Fail("reading the available ring's flags failed");
              }
              if ((LoadLe16(flags, 0) & kAvailFlagNoInterrupt) != 0) {
                ++counters_.suppressed;
              } else {
                ++counters_.interrupts;
                hooks_.interrupt();
              }
              CheckInterrupt();
            });
}

}  // namespace dxpu::virtio
