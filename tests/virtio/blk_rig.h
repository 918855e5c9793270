// blk_rig.h - a virtio-blk function on a temporary backing file, the test host and the test
// driver, wired together; block requests built as Linux's virtio_blk lays them out (header,
// data, status byte).
#ifndef DXPU_TESTS_VIRTIO_BLK_RIG_H_
#define DXPU_TESTS_VIRTIO_BLK_RIG_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/test_host.h"
#include "virtio/virtio_blk_device.h"
#include "virtio/virtio_pci_function.h"
#include "virtio_driver.h"

namespace dxpu::virtio::test {

// A directory removed with its files at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct BlkResult {
  bool done = false;  // the used ring moved
  uint8_t status = 0xff;
  std::vector<uint8_t> data;  // the data-in bytes
  UsedElem used;
};

class BlkRig {
 public:
  static constexpr uint64_t kQueueBase = 0x1000'0000;
  static constexpr uint64_t kQueueStride = 0x10'0000;
  static constexpr uint64_t kBufferBase = 0x2000'0000;

  explicit BlkRig(VirtioBlkOptions options = {}, VirtioPciOptions pci = {},
                  gpu::TestHostOptions host = {});

  // Probe, negotiate every offered feature, set up `queues` queues of `size`, DRIVER_OK.
  bool Start(uint16_t queues = 1, uint16_t size = 64);

  // One request: header (type, sector), `out` as device-readable data, `in_len` bytes of
  // device-writable data, the status byte; waits for its used element.
  BlkResult Request(uint16_t q, uint32_t type, uint64_t sector, std::span<const uint8_t> out,
                    uint32_t in_len, bool indirect = false);
  // The chain's buffers for such a request (tests that submit on their own).
  std::vector<Buffer> Chain(uint32_t type, uint64_t sector, std::span<const uint8_t> out,
                            uint32_t in_len);
  uint64_t Allocate(uint64_t bytes);

  std::vector<uint8_t> FileBytes(uint64_t offset, size_t length) const;
  void WriteFile(uint64_t offset, std::span<const uint8_t> bytes) const;
  uint64_t FileAllocatedBytes() const;

  TempDir dir;
  std::string file;
  VirtioPciFunction* function = nullptr;  // owned by owner
  std::unique_ptr<VirtioPciFunction> owner;
  std::unique_ptr<gpu::TestHost> host;
  std::unique_ptr<VirtioDriver> driver;
  std::string error;
  std::vector<uint16_t> used_seen = std::vector<uint16_t>(64, 0);
  uint64_t next_buffer = kBufferBase;
  uint64_t last_status_address = 0;
  uint64_t last_data_address = 0;
};

std::vector<uint8_t> Pattern(size_t n, uint32_t seed);

}  // namespace dxpu::virtio::test

#endif  // DXPU_TESTS_VIRTIO_BLK_RIG_H_
