// gpu_driver.cc - see gpu_driver.h.
#include "gpu_driver.h"

#include <gtest/gtest.h>

namespace dxpu::virtio::gpu::test {

GpuDriver::GpuDriver(const VirtioGpuOptions& options) : device(options) {
  device.SetDriverFeatures(device.device_features());
  device.Start();
}

void GpuDriver::PutMemory(uint64_t address, std::vector<uint8_t> bytes) {
  memory_[address] = std::move(bytes);
}

std::optional<std::vector<uint8_t>> GpuDriver::ReadGuest(uint64_t address, uint32_t length) const {
  auto it = memory_.upper_bound(address);
  if (it == memory_.begin()) return std::nullopt;
  --it;
  const uint64_t in = address - it->first;
  if (in > it->second.size() || length > it->second.size() - in) return std::nullopt;
  const auto piece = std::span(it->second).subspan(in, length);
  return std::vector<uint8_t>(piece.begin(), piece.end());
}

uint16_t GpuDriver::Submit(uint16_t queue, std::vector<uint8_t> readable, uint32_t writable) {
  const uint16_t head = next_head_++;
  device.Submit(Request{.queue = queue,
                        .head = head,
                        .readable = std::move(readable),
                        .writable_bytes = writable},
                0);
  return head;
}

void GpuDriver::Answer(const GuestRead& read, bool ok) {
  const auto data = ReadGuest(read.address, read.length);
  if (ok && data) {
    device.OnGuestRead(read.tag, *data, true, 0);
  } else {
    device.OnGuestRead(read.tag, {}, false, 0);
  }
}

void GpuDriver::Run(bool answer_reads) {
  // Bounded: a device that never goes quiet fails the test instead of hanging it.
  for (int i = 0; i < 10'000'000; ++i) {
    std::optional<DeviceAction> action = device.Poll(0);
    if (!action) return;
    if (auto* c = std::get_if<Completion>(&*action)) {
      completions.push_back(std::move(*c));
    } else if (auto* r = std::get_if<GuestRead>(&*action)) {
      EXPECT_GT(r->length, 0u);
      EXPECT_LE(r->length, kMaxGuestRead);
      all_reads.push_back(*r);
      if (answer_reads) {
        Answer(*r);
      } else {
        held_reads.push_back(*r);
      }
    } else if (std::holds_alternative<ConfigChanged>(*action)) {
      ++config_changes;
    } else {
      ++needs_reset;
    }
  }
  ADD_FAILURE() << "the device never went quiet";
}

std::vector<uint8_t> GpuDriver::Call(uint16_t queue, std::vector<uint8_t> readable,
                                     uint32_t writable) {
  const size_t before = completions.size();
  const uint16_t head = Submit(queue, std::move(readable), writable);
  Run();
  EXPECT_EQ(completions.size(), before + 1);
  if (completions.size() != before + 1) return {};
  EXPECT_EQ(completions.back().head, head);
  EXPECT_EQ(completions.back().queue, queue);
  return completions.back().written;
}

void GpuDriver::MakeResource(uint32_t id, uint32_t format, uint32_t width, uint32_t height,
                             const std::vector<uint8_t>& image, int pieces) {
  ASSERT_EQ(Status(Create2d(id, format, width, height)), kRespOkNodata);
  std::vector<MemEntry> entries;
  const size_t total = image.size();
  size_t at = 0;
  for (int i = 0; i < pieces; ++i) {
    // Uneven pieces (so rows straddle them), 64 KiB + 3 apart (never contiguous).
    size_t length = (i == pieces - 1) ? total - at : (total / pieces) + (i % 2 ? 7 : -5);
    length = std::min(length, total - at);
    if (length == 0) continue;
    entries.push_back(MemEntry{.address = next_address_, .length = static_cast<uint32_t>(length)});
    const auto piece = std::span(image).subspan(at, length);
    PutMemory(next_address_, std::vector<uint8_t>(piece.begin(), piece.end()));
    next_address_ += length + 0x10003;
    at += length;
  }
  backings_[id] = entries;
  ASSERT_EQ(Status(AttachBacking(id, entries)), kRespOkNodata);
}

void GpuDriver::WriteGuestImage(uint32_t id, const std::vector<uint8_t>& image) {
  size_t at = 0;
  for (const MemEntry& e : backings_.at(id)) {
    const auto piece = std::span(image).subspan(at, e.length);
    PutMemory(e.address, std::vector<uint8_t>(piece.begin(), piece.end()));
    at += e.length;
  }
}

uint64_t GpuDriver::Counter(std::string_view name) const {
  uint64_t found = UINT64_MAX;
  device.VisitCounters([&](std::string_view n, uint64_t v) {
    if (n == name) found = v;
  });
  EXPECT_NE(found, UINT64_MAX) << "no counter " << name;
  return found;
}

}  // namespace dxpu::virtio::gpu::test
