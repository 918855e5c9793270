// gpu_host.h - the GPU model's test rig: a GpuDevice driven by the in-process host
// (lib/gpu/test_host.h: host memory, answers to the device's DMA reads with CplDs split at RCB
// and MPS, its writes applied, MSI-X messages recorded, config/MMIO requests, a virtual clock
// advanced to NextDeadline), a GPFIFO ring in host memory with submission helpers, and a
// checker of every TLP the device sends.
#ifndef DXPU_TESTS_GPU_GPU_HOST_H_
#define DXPU_TESTS_GPU_GPU_HOST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gpu/commands.h"
#include "gpu/gpu_device.h"
#include "gpu/test_host.h"

namespace dxpu::gpu::test {

// The dxgpu profile's MSI-X table and Pending Bit Array, offsets in BAR0 (lib/gpu/README.md).
inline constexpr uint32_t kMsixTable = 0xff0000;
inline constexpr uint32_t kMsixPba = 0xff1000;

// Checks every TLP the device sends against PCIe's rules and the function's settings, and
// tracks its reads in flight (from the MRd until the host delivers its last completion).
class TlpStreamChecker {
 public:
  explicit TlpStreamChecker(const GpuDevice& device) : device_(device) {}

  void OnDeviceTlp(const dxpu_tlp& t);
  void OnHostTlp(const dxpu_tlp& t);

  const std::vector<std::string>& violations() const { return violations_; }
  size_t max_reads_in_flight() const { return max_in_flight_; }
  size_t reads() const { return reads_; }
  size_t writes() const { return writes_; }  // DMA writes, MSI-X messages excluded
  // Forget the reads in flight (after the device retired them: timeout, FLR).
  void ForgetReads() { in_flight_.clear(); }
  // An MSI-X message address: writes there are not DMA writes.
  uint64_t msix_address = 0;

 private:
  void Violation(const std::string& what);

  const GpuDevice& device_;
  std::map<uint16_t, bool> in_flight_;
  size_t max_in_flight_ = 0;
  size_t reads_ = 0;
  size_t writes_ = 0;
  std::vector<std::string> violations_;
};

struct RigOptions {
  std::string profile = "dxgpu";
  GpuOptions gpu;
  TestHostOptions host;
  uint32_t ring_entries = 64;
};

// Host memory layout of the rig (above 4 GiB, so the device's DMA uses 4DW headers).
inline constexpr uint64_t kRingAddress = uint64_t{1} << 32;
inline constexpr uint64_t kPushbufferArea = kRingAddress + (1u << 20);
inline constexpr uint64_t kSemaphoreArea = kRingAddress + (64u << 20);
inline constexpr uint64_t kHostData = uint64_t{8} << 32;  // copy sources and destinations

class GpuRig {
 public:
  explicit GpuRig(const RigOptions& options = {});

  GpuDevice& device() { return *device_; }
  TestHost& host() { return *host_; }
  TlpStreamChecker& checker() { return *checker_; }

  // Enumerates the function, programs the ring (GPFIFO_BASE, GPFIFO_ENTRIES) and enables
  // the channel.
  void Start();
  // Writes the pushbuffer to host memory, its GPFIFO entry at GP_PUT, and rings the doorbell
  // (GP_PUT + 1). Returns the entry's index.
  uint32_t Submit(const PushbufferBuilder& pushbuffer);
  // Writes an entry as given (any address, length, flags) and rings the doorbell.
  uint32_t SubmitEntry(const GpfifoEntry& entry);
  // Runs until nothing is left to do (no TLPs moving, no deadline).
  bool Run(uint64_t time_limit = UINT64_MAX) { return host_->RunUntilIdle(time_limit); }

  uint32_t Reg(uint32_t offset) { return host_->Mmio32Read(offset); }
  void SetReg(uint32_t offset, uint32_t value) { host_->Mmio32Write(offset, value); }

  // Host memory.
  void HostWrite(uint64_t address, std::span<const uint8_t> bytes);
  std::vector<uint8_t> HostRead(uint64_t address, uint64_t length);
  uint64_t HostRead64(uint64_t address);
  uint32_t HostRead32(uint64_t address);
  // Device memory.
  void DeviceWrite(uint64_t offset, std::span<const uint8_t> bytes);
  std::vector<uint8_t> DeviceRead(uint64_t offset, uint64_t length);

  uint32_t put() const { return put_; }

 private:
  RigOptions options_;
  std::unique_ptr<GpuDevice> device_;
  std::unique_ptr<TestHost> host_;
  std::unique_ptr<TlpStreamChecker> checker_;
  uint32_t put_ = 0;
  uint64_t next_pushbuffer_ = kPushbufferArea;
};

// Seeded random bytes and floats.
std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n);
std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n, float lo = -1.0f, float hi = 1.0f);
std::vector<uint8_t> FloatBytes(const std::vector<float>& v);
std::vector<float> BytesToFloats(const std::vector<uint8_t>& b);

// $DXPU_SEED if set, else a fresh seed; the caller prints it (SCOPED_TRACE) for replay.
uint64_t Seed();

}  // namespace dxpu::gpu::test

#endif  // DXPU_TESTS_GPU_GPU_HOST_H_
