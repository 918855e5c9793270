// gpu_driver.h - the test's side of VirtioGpuDevice: it plays the virtio-over-PCI transport
// (hands requests in, answers GuestReads from a guest memory it owns, collects completions)
// and builds the spec's request structures byte by byte.
#ifndef DXPU_TESTS_VIRTIO_GPU_GPU_DRIVER_H_
#define DXPU_TESTS_VIRTIO_GPU_GPU_DRIVER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "virtio/gpu/gpu_requests.h"
#include "virtio/gpu/virtio_gpu_device.h"

namespace dxpu::virtio::gpu::test {

class GpuDriver {
 public:
  explicit GpuDriver(const VirtioGpuOptions& options = {});

  VirtioGpuDevice device;

  // Guest memory: separate pieces; a read must lie inside one piece or it fails (a UR).
  void PutMemory(uint64_t address, std::vector<uint8_t> bytes);
  void RemoveMemory(uint64_t address) { memory_.erase(address); }

  // Hands a request in and returns its head.
  uint16_t Submit(uint16_t queue, std::vector<uint8_t> readable, uint32_t writable = 4096);
  // Polls until the device has nothing to do; with answer_reads, each GuestRead is answered
  // at once from guest memory, else it is kept in held_reads.
  void Run(bool answer_reads = true);
  // Answers a held read from guest memory (ok = false: fails it).
  void Answer(const GuestRead& read, bool ok = true);
  // Submit + Run; the one completion for it (fails the test when there is not exactly one).
  std::vector<uint8_t> Call(uint16_t queue, std::vector<uint8_t> readable,
                            uint32_t writable = 4096);
  std::vector<uint8_t> Control(std::vector<uint8_t> readable) {
    return Call(kControlQueue, std::move(readable));
  }
  // The response type of a control command.
  uint32_t Status(std::vector<uint8_t> readable) { return Le32(Control(std::move(readable)), 0); }

  // A resource made and filled from a guest copy `image` (its format's bytes, row-major), the
  // backing cut into `pieces` pieces at scattered addresses.
  void MakeResource(uint32_t id, uint32_t format, uint32_t width, uint32_t height,
                    const std::vector<uint8_t>& image, int pieces = 1);
  // Rewrites the guest copy of a resource made by MakeResource.
  void WriteGuestImage(uint32_t id, const std::vector<uint8_t>& image);

  uint64_t Counter(std::string_view name) const;

  std::vector<Completion> completions;
  std::vector<GuestRead> held_reads;
  std::vector<GuestRead> all_reads;
  int config_changes = 0;
  int needs_reset = 0;

 private:
  std::optional<std::vector<uint8_t>> ReadGuest(uint64_t address, uint32_t length) const;

  std::map<uint64_t, std::vector<uint8_t>> memory_;
  // Per resource from MakeResource: the pieces of its backing, in order.
  std::map<uint32_t, std::vector<MemEntry>> backings_;
  uint16_t next_head_ = 0;
  uint64_t next_address_ = 0x100000;
};

}  // namespace dxpu::virtio::gpu::test

#endif  // DXPU_TESTS_VIRTIO_GPU_GPU_DRIVER_H_
