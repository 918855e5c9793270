// pinned_memory.cc - MallocHost's buffers and the translation of pointers into them.
#include "dxgpu/pinned_memory.h"

#include <iterator>
#include <string>
#include <utility>

#include "dxgpu/text.h"

namespace dxpu::dxgpu {

namespace {

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

Status CheckHostBuffer(const Port& port, const HostBuffer& buffer, uint64_t bytes,
                       uint64_t alignment, const std::string& what) {
  const auto fail = [&](const std::string& why) {
    return Status(ErrorCode::kInternal, "the port's AllocHost returned " + what + " " + why);
  };
  if (buffer.data == nullptr || buffer.size < bytes) {
    return fail("smaller than " + std::to_string(bytes) + " bytes");
  }
  if (!buffer.device_iovas.empty() && buffer.device_iovas.size() != port.device_count()) {
    return fail("with " + std::to_string(buffer.device_iovas.size()) + " device IOVAs for " +
                std::to_string(port.device_count()) + " devices");
  }
  bool aligned = Address(buffer.data) % alignment == 0;
  for (size_t d = 0; d < port.device_count(); ++d)
    aligned = aligned && buffer.IovaFor(d) % alignment == 0;
  if (!aligned) return fail("that is not " + std::to_string(alignment) + "-byte aligned");
  return Status::Ok();
}

PinnedRegistry::~PinnedRegistry() { (void)FreeAll(); }

Expected<HostBuffer> PinnedRegistry::Allocate(uint64_t bytes) {
  if (bytes == 0) return Status(ErrorCode::kInvalidArgument, "pinned allocation of 0 bytes");
  Expected<HostBuffer> buffer = port_.AllocHost(bytes);
  if (!buffer.ok()) return buffer;
  if (Status fit = CheckHostBuffer(port_, *buffer, bytes, 1, "a buffer"); !fit.ok()) {
    (void)port_.FreeHost(*buffer);
    return fit;
  }
  const std::lock_guard lock(mu_);
  buffers_.emplace(Address(buffer->data), *buffer);
  return buffer;
}

Status PinnedRegistry::Free(const void* data) {
  HostBuffer buffer;
  {
    const std::lock_guard lock(mu_);
    const auto it = buffers_.find(Address(data));
    if (it == buffers_.end()) {
      return {ErrorCode::kInvalidArgument,
              "FreeHost of " + Hex(Address(data)) +
                  ", which is not the start of a buffer MallocHost returned (freed "
                  "already, or never allocated)"};
    }
    buffer = it->second;
    buffers_.erase(it);
  }
  return port_.FreeHost(buffer);
}

Expected<uint64_t> PinnedRegistry::Translate(const void* data, uint64_t bytes,
                                             size_t device) const {
  const uintptr_t address = Address(data);
  const std::lock_guard lock(mu_);
  auto it = buffers_.upper_bound(address);
  if (it == buffers_.begin()) {
    return Status(ErrorCode::kInvalidArgument,
                  "host address " + Hex(address) + " is not in pinned memory (use MallocHost)");
  }
  --it;
  const uint64_t offset = address - it->first;
  if (offset >= it->second.size) {
    return Status(ErrorCode::kInvalidArgument,
                  "host address " + Hex(address) + " is not in pinned memory (use MallocHost)");
  }
  if (bytes > it->second.size - offset) {
    return Status(ErrorCode::kInvalidArgument, std::to_string(bytes) + " bytes at host address " +
                                                   Hex(address) +
                                                   " run past the end of its pinned buffer (" +
                                                   std::to_string(it->second.size) + " bytes)");
  }
  return it->second.IovaFor(device) + offset;
}

Status PinnedRegistry::FreeAll() {
  std::map<uintptr_t, HostBuffer> buffers;
  {
    const std::lock_guard lock(mu_);
    buffers.swap(buffers_);
  }
  Status first;
  for (const auto& [address, buffer] : buffers) {
    Status status = port_.FreeHost(buffer);
    if (first.ok() && !status.ok()) first = std::move(status);
  }
  return first;
}

size_t PinnedRegistry::buffer_count() const {
  const std::lock_guard lock(mu_);
  return buffers_.size();
}

}  // namespace dxpu::dxgpu
