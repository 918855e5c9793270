// gpu_driver.h - what a host's GPU driver does with a borrowed dxgpu, for bridge tests:
// enumerate and size the BARs, place them, enable the function, set up the GPFIFO ring and
// submit pushbuffers with a doorbell, wait for semaphores in host memory (docs/dxgpu.md).
#ifndef DXPU_TESTS_BRIDGE_GPU_DRIVER_H_
#define DXPU_TESTS_BRIDGE_GPU_DRIVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "box_world.h"
#include "gpu/commands.h"

namespace dxpu::test {

// A pushbuffer under construction, with positional arguments for brevity; the encoding is
// lib/gpu's (gpu::PushbufferBuilder, docs/dxgpu.md).
class Pushbuffer {
 public:
  Pushbuffer& Copy(bool src_host, bool dst_host, uint64_t size, uint64_t src, uint64_t dst);
  Pushbuffer& Semaphore(uint64_t addr, uint64_t payload, bool interrupt = false,
                        bool timestamp = false, bool payload64 = false);
  Pushbuffer& Interrupt(uint32_t vector);
  Pushbuffer& Memset32(uint64_t dst, uint32_t count, uint32_t value);
  Pushbuffer& Axpy(uint32_t n, float a, uint64_t x, uint64_t y);
  Pushbuffer& Gemm(uint32_t m, uint32_t n, uint32_t k, float alpha, float beta, uint64_t a,
                   uint64_t b, uint64_t c);
  Pushbuffer& ReduceSum(uint32_t n, uint64_t x, uint64_t out);
  Pushbuffer& Raw(uint32_t dw);
  const std::vector<uint32_t>& words() const { return builder_.words(); }

 private:
  gpu::PushbufferBuilder builder_;
};

// Host memory the driver uses (all inside one region the device is granted).
struct DriverLayout {
  uint64_t bar0 = 0xe000'0000;         // where the host places BAR0 (32-bit)
  uint64_t bar_mem = 0x20'0000'0000;   // where it places the memory BAR (64-bit)
  uint64_t ring = 0x8000'0000;         // GPFIFO ring, 64 entries
  uint64_t pushbuffers = 0x8001'0000;  // pushbuffers, 4 KiB apart, reused round robin
  uint64_t semaphores = 0x8010'0000;   // semaphores
  uint64_t control_size = 0x20'0000;   // ring + pushbuffers + semaphores
  uint64_t msi = 0xfee0'0000;          // the interrupt range
};

class GpuDriver {
 public:
  GpuDriver(BoxWorld& world, TestHost& host, uint16_t bdf, DriverLayout layout = {});

  // Enumerates and sizes the BARs, places them, enables memory and bus mastering, grants
  // the device DMA into the control region (and the interrupt range), programs the ring.
  // Empty on success, else what failed.
  std::string BringUp(bridge::DeviceIndex device);
  // Submits one pushbuffer and rings the doorbell.
  bool Submit(const Pushbuffer& pb);
  // Runs until the 32-bit semaphore at addr reads value (false on the time limit).
  bool WaitSemaphore(uint64_t addr, uint32_t value, uint64_t limit_ns = 2'000'000'000);
  // Submits pb followed by a semaphore release and waits for it.
  bool Run(Pushbuffer pb, uint64_t limit_ns = 2'000'000'000);

  std::optional<uint32_t> Read(uint32_t reg);  // BAR0 register
  bool Write(uint32_t reg, uint32_t value);
  // BAR sizes as the host's sizing read them back (index -> size; 0: none).
  const std::vector<uint64_t>& bar_sizes() const { return bar_sizes_; }
  const DriverLayout& layout() const { return layout_; }
  uint8_t mem_bar() const { return mem_bar_; }

 private:
  BoxWorld& world_;
  TestHost& host_;
  uint16_t bdf_;
  DriverLayout layout_;
  std::vector<uint64_t> bar_sizes_;
  uint8_t mem_bar_ = 0;
  uint32_t put_ = 0;
  uint32_t next_pb_ = 0;
  uint32_t sequence_ = 0;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_GPU_DRIVER_H_
