// virtio_blk_device.h - the virtio block device (type 2, OASIS virtio v1.2 section 5.2) behind
// the virtio PCI transport, backed by a file on the box: read, write, flush, get ID, discard
// and write zeroes (holes punched or ranges zeroed in the file), multiple queues.
//
// The file is opened O_CLOEXEC and created sparse at the configured size when absent; an
// existing file of another size is refused (the operator's data is never truncated or grown
// by a configuration typo). Requests run synchronously in Submit (pread/pwrite on the box's
// file) and their completions wait for Poll. Every request is checked: a short header, a
// sector range past the capacity, a data length that is not whole sectors or exceeds
// size_max * seg_max, or an I/O error answer VIRTIO_BLK_S_IOERR; an unknown type
// VIRTIO_BLK_S_UNSUPP; a chain with no writable byte for the status cannot be answered and
// is completed empty, counted.
#ifndef DXPU_LIB_VIRTIO_VIRTIO_BLK_DEVICE_H_
#define DXPU_LIB_VIRTIO_VIRTIO_BLK_DEVICE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "virtio/virtio_device.h"

namespace dxpu::virtio {

struct VirtioBlkOptions {
  std::string path;                         // the backing file on the box
  uint64_t size_bytes = 0;                  // a multiple of 512, > 0
  uint16_t num_queues = 2;                  // request queues (MQ), 1..64
  uint16_t queue_size = 256;                // each queue's maximum, a power of two
  std::string serial = "dxpu-virtio-blk";   // GET_ID: at most 20 bytes
  uint32_t size_max = 64u << 10;            // largest data segment, bytes
  uint32_t seg_max = 64;                    // data segments per request
  uint32_t max_discard_sectors = 1u << 22;  // 2 GiB per discard/write-zeroes segment
  uint32_t max_discard_seg = 32;
};

struct VirtioBlkCounters {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t flushes = 0;
  uint64_t get_ids = 0;
  uint64_t discards = 0;
  uint64_t write_zeroes = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t io_errors = 0;     // IOERR answers
  uint64_t unsupported = 0;   // UNSUPP answers
  uint64_t unanswerable = 0;  // no writable byte for the status
};

class VirtioBlkDevice final : public VirtioDevice {
 public:
  // nullptr, with *error set, when the options are out of range or the file cannot be opened,
  // created or sized, or exists with another size.
  static std::unique_ptr<VirtioBlkDevice> Create(const VirtioBlkOptions& options,
                                                 std::string* error = nullptr);
  ~VirtioBlkDevice() override;

  uint16_t device_id() const override { return 2; }
  std::string_view kind() const override { return "virtio-blk"; }
  uint64_t device_features() const override;
  uint16_t num_queues() const override { return options_.num_queues; }
  uint16_t queue_max_size(uint16_t /*queue*/) const override { return options_.queue_size; }

  uint32_t config_size() const override;
  uint32_t ReadConfig(uint32_t offset, uint32_t size) const override;
  // Its configuration is read-only: writeback (CONFIG_WCE) is not offered.
  void WriteConfig(uint32_t /*offset*/, uint32_t /*size*/, uint32_t /*value*/) override {}

  void SetDriverFeatures(uint64_t features) override { features_ = features; }
  void Start() override {}
  void Reset() override;
  uint64_t Release(ReleasePolicy policy) override;

  void Submit(Request request, uint64_t now) override;
  std::optional<DeviceAction> Poll(uint64_t now) override;
  // It reads guest memory only through its requests' chains.
  void OnGuestRead(uint64_t /*tag*/, std::span<const uint8_t> /*data*/, bool /*ok*/,
                   uint64_t /*now*/) override {}

  uint64_t memory_bytes() const override { return options_.size_bytes; }
  void VisitCounters(const CounterVisitor& visit) const override;

  const VirtioBlkCounters& counters() const { return counters_; }
  uint64_t capacity_sectors() const { return options_.size_bytes / 512; }

 private:
  VirtioBlkDevice(const VirtioBlkOptions& options, int fd);

  // The bytes to write into the chain's writable buffers (data, then the status byte).
  std::vector<uint8_t> Execute(const Request& request);
  uint8_t Read(uint64_t sector, std::vector<uint8_t>& data);
  uint8_t Write(uint64_t sector, std::span<const uint8_t> data);
  uint8_t DiscardOrZero(std::span<const uint8_t> segments, bool zero);
  bool InRange(uint64_t sector, uint64_t bytes) const;

  VirtioBlkOptions options_;
  int fd_ = -1;
  uint64_t features_ = 0;
  std::deque<Completion> done_;
  VirtioBlkCounters counters_;
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_BLK_DEVICE_H_
