// virtio_blk_device.cc - the block device's configuration, its requests on the backing file,
// and the release policy.
#include "virtio/virtio_blk_device.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "virtio/little_endian.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio {
std::unique_ptr<VirtioBlkDevice> VirtioBlkDevice::Create(const VirtioBlkOptions& options,
                                                         std::string* error) {
  const auto fail = [&](std::string why) {
    if (error != nullptr) *error = "virtio-blk '" + options.path + "': " + std::move(why);
    return nullptr;
  };
  if (options.path.empty()) return fail("no backing file path");
  if (options.size_bytes == 0 || options.size_bytes % blk::kSectorSize != 0) {
    return fail("size must be a positive multiple of 512 bytes");
  }
  if (options.num_queues < 1 || options.num_queues > 64) return fail("queues must be 1..64");
  if (options.queue_size < 2 || options.queue_size > kMaxQueueSize ||
      !std::has_single_bit(options.queue_size)) {
    return fail("queue size must be a power of two in 2..32768");
  }
  if (options.serial.size() > blk::kIdBytes) return fail("serial longer than 20 bytes");
  if (options.size_max < blk::kSectorSize || options.seg_max < 1 ||
      uint64_t{options.size_max} * options.seg_max > (uint64_t{1} << 30)) {
    return fail("size_max * seg_max must be 512 bytes .. 1 GiB");
  }
  if (options.max_discard_sectors == 0 || options.max_discard_seg == 0) {
    return fail("discard limits must be > 0");
  }
  const int fd = ::open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return fail(std::string("open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return fail(std::string("fstat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  if (st.st_size == 0) {
    // New (or empty): sized sparse, nothing allocated.
    if (::ftruncate(fd, static_cast<off_t>(options.size_bytes)) != 0) {
      const int e = errno;
      ::close(fd);
      return fail(std::string("ftruncate: ") + std::strerror(e));
    }
  } else if (static_cast<uint64_t>(st.st_size) != options.size_bytes) {
    ::close(fd);
    return fail("exists with " + std::to_string(st.st_size) + " bytes, configured " +
                std::to_string(options.size_bytes) + ": refused (resize it yourself)");
  }
  return std::unique_ptr<VirtioBlkDevice>(new VirtioBlkDevice(options, fd));
}

VirtioBlkDevice::VirtioBlkDevice(const VirtioBlkOptions& options, int fd)
    : options_(options), fd_(fd) {}

VirtioBlkDevice::~VirtioBlkDevice() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t VirtioBlkDevice::device_features() const {
  uint64_t f = 0;
  for (int bit :
       {blk::kFeatureSizeMax, blk::kFeatureSegMax, blk::kFeatureBlkSize, blk::kFeatureFlush,
        blk::kFeatureMq, blk::kFeatureDiscard, blk::kFeatureWriteZeroes}) {
    f |= FeatureBit(bit);
  }
  return f;
}

uint32_t VirtioBlkDevice::config_size() const { return blk::kConfigSize; }

uint32_t VirtioBlkDevice::ReadConfig(uint32_t offset, uint32_t size) const {
  std::array<uint8_t, blk::kConfigSize> cfg{};
  const auto put = [&](uint32_t at, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) cfg[at + k] = static_cast<uint8_t>(v >> (8 * k));
  };
  put(blk::kCfgCapacity, capacity_sectors(), 8);
  put(blk::kCfgSizeMax, options_.size_max, 4);
  put(blk::kCfgSegMax, options_.seg_max, 4);
  put(blk::kCfgBlkSize, blk::kSectorSize, 4);
  put(blk::kCfgNumQueues, options_.num_queues, 2);
  put(blk::kCfgMaxDiscardSectors, options_.max_discard_sectors, 4);
  put(blk::kCfgMaxDiscardSeg, options_.max_discard_seg, 4);
  put(blk::kCfgDiscardSectorAlignment, 1, 4);  // any sector (the file punches what it can)
  put(blk::kCfgMaxWriteZeroesSectors, options_.max_discard_sectors, 4);
  put(blk::kCfgMaxWriteZeroesSeg, options_.max_discard_seg, 4);
  put(blk::kCfgWriteZeroesMayUnmap, 1, 1);
  if ((size != 1 && size != 2 && size != 4) || offset >= cfg.size() || size > cfg.size() - offset) {
    return 0;
  }
  uint32_t v = 0;
  for (uint32_t k = 0; k < size; ++k) v |= uint32_t{cfg[offset + k]} << (8 * k);
  return v;
}

void VirtioBlkDevice::Reset() {
  done_.clear();  // requests are synchronous: only their completions can be in flight
  features_ = 0;
}

uint64_t VirtioBlkDevice::Release(ReleasePolicy policy) {
  Reset();
  if (policy == ReleasePolicy::kKeep) return 0;
  // Zero the whole disk without allocating: a hole reads as zeros.
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                  static_cast<off_t>(options_.size_bytes)) != 0) {
    // A file system without hole punching: write zeros.
    std::vector<uint8_t> zeros(1u << 20);
    for (uint64_t at = 0; at < options_.size_bytes; at += zeros.size()) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(zeros.size(), options_.size_bytes - at));
      if (::pwrite(fd_, zeros.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
        ++counters_.io_errors;
        return at;
      }
    }
  }
  ::fdatasync(fd_);
  return options_.size_bytes;
}

bool VirtioBlkDevice::InRange(uint64_t sector, uint64_t bytes) const {
  const uint64_t capacity = capacity_sectors();
  const uint64_t sectors = bytes / blk::kSectorSize;
  return sector <= capacity && sectors <= capacity - sector;
}

uint8_t VirtioBlkDevice::Read(uint64_t sector, std::vector<uint8_t>& data) {
  if (data.size() % blk::kSectorSize != 0 || !InRange(sector, data.size()))
    return blk::kStatusIoErr;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pread(fd_, data.data() + done, data.size() - done,
                              static_cast<off_t>(sector * blk::kSectorSize + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return blk::kStatusIoErr;
    done += static_cast<size_t>(n);
  }
  counters_.bytes_read += data.size();
  return blk::kStatusOk;
}

uint8_t VirtioBlkDevice::Write(uint64_t sector, std::span<const uint8_t> data) {
  if (data.size() % blk::kSectorSize != 0 || !InRange(sector, data.size()))
    return blk::kStatusIoErr;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                               static_cast<off_t>(sector * blk::kSectorSize + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return blk::kStatusIoErr;
    done += static_cast<size_t>(n);
  }
  counters_.bytes_written += data.size();
  return blk::kStatusOk;
}

uint8_t VirtioBlkDevice::DiscardOrZero(std::span<const uint8_t> segments, bool zero) {
  if (segments.empty() || segments.size() % blk::kSegmentSize != 0 ||
      segments.size() / blk::kSegmentSize > options_.max_discard_seg) {
    return blk::kStatusIoErr;
  }
  // Every segment checked before any is applied: a bad one changes nothing.
  for (size_t at = 0; at < segments.size(); at += blk::kSegmentSize) {
    const uint64_t sector = LoadLe64(segments, at);
    const uint32_t count = LoadLe32(segments, at + 8);
    const uint32_t flags = LoadLe32(segments, at + 12);
    if (count > options_.max_discard_sectors || !InRange(sector, uint64_t{count} * 512) ||
        (flags & ~blk::kSegmentFlagUnmap) != 0 || (!zero && flags != 0)) {
      return blk::kStatusIoErr;  // 5.2.6.2: unmap is for write zeroes only; others reserved
    }
  }
  for (size_t at = 0; at < segments.size(); at += blk::kSegmentSize) {
    const uint64_t sector = LoadLe64(segments, at);
    const uint32_t count = LoadLe32(segments, at + 8);
    const bool unmap = (LoadLe32(segments, at + 12) & blk::kSegmentFlagUnmap) != 0;
    if (count == 0) continue;
    const auto offset = static_cast<off_t>(sector * blk::kSectorSize);
    const auto length = static_cast<off_t>(uint64_t{count} * blk::kSectorSize);
    // Discard and an unmapping write-zeroes free the range (a hole reads zeros, which is also
    // what a discarded range reads here); a plain write-zeroes keeps it allocated.
    const int mode = (!zero || unmap) ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                                      : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
    if (::fallocate(fd_, mode, offset, length) != 0) {
      if (!zero) continue;  // a discard is a hint: the data may stay
      std::vector<uint8_t> zeros(static_cast<size_t>(length));
      if (Write(sector, zeros) != blk::kStatusOk) return blk::kStatusIoErr;
    }
  }
  return blk::kStatusOk;
}

std::vector<uint8_t> VirtioBlkDevice::Execute(const Request& r) {
  const uint32_t writable = r.writable_bytes;
  // The status byte is the chain's last writable byte; what precedes it is data.
  const uint32_t data_in = writable - 1;
  std::vector<uint8_t> out;
  const auto answer = [&](uint8_t status) {
    if (status == blk::kStatusIoErr) ++counters_.io_errors;
    if (status == blk::kStatusUnsupp) ++counters_.unsupported;
    out.resize(data_in, 0);
    out.push_back(status);
    return out;
  };
  if (r.readable.size() < blk::kHeaderSize) return answer(blk::kStatusIoErr);
  const std::span<const uint8_t> in(r.readable);
  const uint32_t type = LoadLe32(in, 0);
  const uint64_t sector = LoadLe64(in, 8);
  const std::span<const uint8_t> payload = in.subspan(blk::kHeaderSize);
  const uint64_t max_data = uint64_t{options_.size_max} * options_.seg_max;
  switch (type) {
    case blk::kTypeIn: {
      ++counters_.reads;
      if (!payload.empty() || data_in > max_data) return answer(blk::kStatusIoErr);
      out.resize(data_in);
      const uint8_t status = Read(sector, out);
      if (status != blk::kStatusOk) std::fill(out.begin(), out.end(), 0);
      return answer(status);
    }
    case blk::kTypeOut:
      ++counters_.writes;
      if (payload.size() > max_data) return answer(blk::kStatusIoErr);
      return answer(Write(sector, payload));
    case blk::kTypeFlush:
      ++counters_.flushes;
      return answer(::fdatasync(fd_) == 0 ? blk::kStatusOk : blk::kStatusIoErr);
    case blk::kTypeGetId: {
      ++counters_.get_ids;
      // 20 bytes, NUL-padded (not terminated when the serial fills them), or fewer if the
      // buffer is shorter.
      out.assign(options_.serial.begin(), options_.serial.end());
      out.resize(std::min<uint32_t>(blk::kIdBytes, data_in), 0);
      return answer(blk::kStatusOk);
    }
    case blk::kTypeDiscard:
      ++counters_.discards;
      if ((features_ & FeatureBit(blk::kFeatureDiscard)) == 0) return answer(blk::kStatusUnsupp);
      return answer(DiscardOrZero(payload, false));
    case blk::kTypeWriteZeroes:
      ++counters_.write_zeroes;
      if ((features_ & FeatureBit(blk::kFeatureWriteZeroes)) == 0) {
        return answer(blk::kStatusUnsupp);
      }
      return answer(DiscardOrZero(payload, true));
    default:
      return answer(blk::kStatusUnsupp);
  }
}

void VirtioBlkDevice::Submit(Request request, uint64_t /*now*/) {
  Completion c{.queue = request.queue, .head = request.head, .written = {}};
  if (request.writable_bytes == 0) {
    ++counters_.unanswerable;  // nowhere to put the status: used with length 0
  } else {
    c.written = Execute(request);
  }
  done_.push_back(std::move(c));
}

std::optional<DeviceAction> VirtioBlkDevice::Poll(uint64_t /*now*/) {
  if (done_.empty()) return std::nullopt;
  DeviceAction a = std::move(done_.front());
  done_.pop_front();
  return a;
}

void VirtioBlkDevice::VisitCounters(const CounterVisitor& visit) const {
  const VirtioBlkCounters& c = counters_;
  visit("blk_reads", c.reads);
  visit("blk_writes", c.writes);
  visit("blk_flushes", c.flushes);
  visit("blk_get_ids", c.get_ids);
  visit("blk_discards", c.discards);
  visit("blk_write_zeroes", c.write_zeroes);
  visit("blk_bytes_read", c.bytes_read);
  visit("blk_bytes_written", c.bytes_written);
  visit("blk_io_errors", c.io_errors);
  visit("blk_unsupported", c.unsupported);
  visit("blk_unanswerable", c.unanswerable);
}

}  // namespace dxpu::virtio
