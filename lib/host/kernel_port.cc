// kernel_port.cc - the kernel port over dxpu.ko's character devices (kernel_port.h).
#include "host/kernel_port.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <system_error>
#include <utility>

#include "dxgpu/text.h"
#include "gpu/device_profile.h"
#include "gpu/gpu_registers.h"
#include "link/unique_fd.h"

namespace dxpu::host {
namespace {

using dxgpu::ErrorCode;
using dxgpu::Expected;
using dxgpu::Status;

constexpr uint64_t kWaitSliceNs = 50'000'000;  // the longest poll() before ready() runs again
constexpr uint64_t kFourGiB = uint64_t{1} << 32;

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// ioctl(), restarted when a signal interrupts it.
int Ioctl(int fd, unsigned long request, void* arg) {
  int rc = 0;
  do {
    rc = ::ioctl(fd, request, arg);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

std::string_view MmioStatusText(uint8_t status) {
  switch (status) {
    case DXPU_MMIO_UR:
      return "Unsupported Request";
    case DXPU_MMIO_CA:
      return "Completer Abort";
    case DXPU_MMIO_TIMEOUT:
      return "no completion within the request timeout";
    default:
      return "an unknown status";
  }
}

// One device file and what DXPU_IOC_INFO said about it.
struct KernelDevice {
  std::string path;
  link::UniqueFd fd;
  std::string pci_name;  // "10000:00:00.0"
  dxgpu::PortDeviceInfo info;
  std::atomic<bool> lost{false};
  std::mutex events_mu;             // one reader of the file's events at a time
  std::atomic<uint64_t> events{0};  // events read, by any thread

  // "/dev/dxpu0 (10000:00:00.0)"
  std::string Name() const { return pci_name.empty() ? path : path + " (" + pci_name + ")"; }

  Status Lost() {
    lost.store(true, std::memory_order_relaxed);
    return {ErrorCode::kDeviceLost,
            fmt::format("{} is lost: its bridge's session went down or its slot was powered off",
                        info.location)};
  }

  // Runs a batch of register accesses; what names them in an error.
  Status Mmio(std::span<dxpu_mmio_op> ops, std::string_view what) {
    dxpu_mmio_batch batch{};
    batch.ops = reinterpret_cast<uintptr_t>(ops.data());
    batch.count = static_cast<uint32_t>(ops.size());
    const int rc = Ioctl(fd.get(), DXPU_IOC_MMIO, &batch);
    const int err = rc < 0 ? errno : 0;
    if (err == ENODEV) return Lost();
    for (const dxpu_mmio_op& op : ops) {
      if (op.status != DXPU_MMIO_OK)
        return {ErrorCode::kBusError,
                fmt::format("{}: BAR{} {} at {}: {}", Name(), op.bar, what, dxgpu::Hex(op.offset),
                            MmioStatusText(op.status))};
    }
    if (err != 0)
      return {err == EINVAL ? ErrorCode::kInvalidArgument : ErrorCode::kBusError,
              fmt::format("{}: BAR0 {} at {}: {}", Name(), what, dxgpu::Hex(ops.front().offset),
                          ErrnoText(err))};
    if (batch.done != batch.count)
      return {ErrorCode::kBusError,
              fmt::format("{}: BAR0 {} at {}: {} of {} accesses done", Name(), what,
                          dxgpu::Hex(ops.front().offset), batch.done, batch.count)};
    return {};
  }

  // Takes the event poll() reported, so that the next poll() waits for a new one. Under
  // events_mu and after a second look, so that no thread blocks in read() for an event
  // another thread has taken.
  void ConsumeEvent() {
    const std::lock_guard lock(events_mu);
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return;
    if ((p.revents & POLLHUP) != 0) {
      lost.store(true, std::memory_order_relaxed);
      return;
    }
    if ((p.revents & POLLIN) == 0) return;
    dxpu_event event{};
    const ssize_t n = ::read(fd.get(), &event, sizeof event);
    if ((n < 0 && errno == ENODEV) || (n == static_cast<ssize_t>(sizeof event) && event.lost != 0))
      lost.store(true, std::memory_order_relaxed);
    events.fetch_add(1, std::memory_order_release);
  }
};

dxpu_mmio_op ReadOp(uint32_t offset) {
  dxpu_mmio_op op{};
  op.bar = 0;
  op.dir = DXPU_MMIO_READ;
  op.width = 4;
  op.offset = offset;
  return op;
}

// The six BAR registers from sysfs, or nothing when they cannot be read.
std::optional<std::array<uint32_t, DXPU_BARS>> ReadBarRegisters(const std::string& sysfs_root,
                                                                const std::string& pci_name) {
  constexpr std::streamoff kBar0 = 0x10;
  std::ifstream config(sysfs_root + "/bus/pci/devices/" + pci_name + "/config", std::ios::binary);
  std::array<uint8_t, size_t{DXPU_BARS} * 4> bytes{};
  if (!config.seekg(kBar0) || !config.read(reinterpret_cast<char*>(bytes.data()),
                                           static_cast<std::streamsize>(bytes.size())))
    return std::nullopt;
  std::array<uint32_t, DXPU_BARS> regs{};
  for (size_t i = 0; i < regs.size(); ++i) {
    for (size_t b = 0; b < 4; ++b) regs[i] |= uint32_t{bytes[i * 4 + b]} << (8 * b);
  }
  return regs;
}

std::string Location(const std::string& path, const std::string& pci_name,
                     const dxpu_device_info& info) {
  const uint8_t* m = info.bridge_mac;
  return fmt::format(
      "kernel {} = {} via bridge {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} dev {:02x}:{:02x}.{}",
      path, pci_name, m[0], m[1], m[2], m[3], m[4], m[5], info.remote_bdf >> 8,
      (info.remote_bdf >> 3) & 0x1f, info.remote_bdf & 7);
}

Expected<std::unique_ptr<KernelDevice>> OpenDevice(const std::string& path,
                                                   const std::string& sysfs_root) {
  auto d = std::make_unique<KernelDevice>();
  d->path = path;
  d->fd.Reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!d->fd.valid()) {
    const int err = errno;
    std::string hint;
    if (err == ENOENT) hint = " (is dxpu.ko loaded and the device's slot powered on?)";
    if (err == EACCES || err == EPERM) hint = " (it needs root, or access to the file)";
    return Status{ErrorCode::kUnavailable,
                  fmt::format("cannot open {}: {}{}", path, ErrnoText(err), hint)};
  }
  dxpu_device_info info{};
  if (Ioctl(d->fd.get(), DXPU_IOC_INFO, &info) != 0) {
    const int err = errno;
    if (err == ENODEV)
      return Status{ErrorCode::kDeviceLost, fmt::format("{}: the device is lost", path)};
    return Status{ErrorCode::kUnavailable,
                  fmt::format("{} is not a dxpu device (DXPU_IOC_INFO: {})", path, ErrnoText(err))};
  }
  d->pci_name.assign(info.pci_name, strnlen(info.pci_name, sizeof info.pci_name));
  d->info.location = Location(path, d->pci_name, info);
  if ((info.flags & DXPU_INFO_F_LOST) != 0) return d->Lost();
  d->info.profile = gpu::ProfileNameForIds(info.vendor_id, info.device_id);
  d->info.vendor_id = info.vendor_id;
  d->info.device_id = info.device_id;
  d->info.msix_vectors = info.msix_vectors;

  std::array<dxpu_mmio_op, 2> mem_size = {ReadOp(gpu::regs::kMemSizeLo),
                                          ReadOp(gpu::regs::kMemSizeHi)};
  if (Status s = d->Mmio(mem_size, "read of MEM_SIZE"); !s.ok()) return s;
  d->info.memory_bytes = (mem_size[0].value & 0xffff'ffff) | (mem_size[1].value << 32);

  const KernelMemoryWindow window = MemoryWindowOf(info, ReadBarRegisters(sysfs_root, d->pci_name));
  d->info.memory_window = window.address;
  d->info.memory_window_size = window.size;
  return d;
}

class KernelPort final : public dxgpu::Port {
 public:
  explicit KernelPort(std::vector<std::unique_ptr<KernelDevice>> devices)
      : devices_(std::move(devices)) {}
  ~KernelPort() override {
    for (const auto& [iova, p] : pinned_) Unpin(iova, p);
  }
  KernelPort(const KernelPort&) = delete;
  KernelPort& operator=(const KernelPort&) = delete;
  KernelPort(KernelPort&&) = delete;
  KernelPort& operator=(KernelPort&&) = delete;

  std::string_view kind() const override { return "kernel"; }
  size_t device_count() const override { return devices_.size(); }
  const dxgpu::PortDeviceInfo& device_info(size_t device) const override {
    return devices_.at(device)->info;
  }

  Expected<uint32_t> ReadRegister(size_t device, uint32_t offset) override {
    if (device >= devices_.size()) return Status{ErrorCode::kNoDevice, "no such device"};
    std::array<dxpu_mmio_op, 1> op = {ReadOp(offset)};
    if (Status s = devices_[device]->Mmio(op, "read"); !s.ok()) return s;
    return static_cast<uint32_t>(op[0].value);
  }

  Status WriteRegister(size_t device, uint32_t offset, uint32_t value) override {
    if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
    std::array<dxpu_mmio_op, 1> op{};
    op[0].bar = 0;
    op[0].dir = DXPU_MMIO_WRITE;
    op[0].width = 4;
    op[0].offset = offset;
    op[0].value = value;
    return devices_[device]->Mmio(op, "write");
  }

  Expected<dxgpu::HostBuffer> AllocHost(uint64_t bytes) override;
  Status FreeHost(const dxgpu::HostBuffer& buffer) override;
  Status Wait(size_t device, const std::function<bool()>& ready, uint64_t timeout_ns) override;
  uint64_t Now() const override { return MonotonicNs(); }
  Status Health(size_t device) const override;

 private:
  struct Pinned {
    uint8_t* data = nullptr;
    uint64_t size = 0;  // mapped bytes (whole pages)
  };

  // Unmaps and frees a buffer (the module frees it once unmapped); the windows of every
  // device go with it.
  void Unpin(uint64_t iova, const Pinned& p) const {
    if (p.data != nullptr) munmap(p.data, p.size);
    dxpu_dma_ref ref{iova};
    (void)Ioctl(devices_[0]->fd.get(), DXPU_IOC_DMA_FREE, &ref);
  }

  std::vector<std::unique_ptr<KernelDevice>> devices_;
  std::mutex mu_;                      // pinned_
  std::map<uint64_t, Pinned> pinned_;  // by IOVA
};

Expected<dxgpu::HostBuffer> KernelPort::AllocHost(uint64_t bytes) {
  if (bytes == 0 || bytes > DXPU_DMA_MAX_SIZE)
    return Status{ErrorCode::kInvalidArgument,
                  fmt::format("cannot pin {} bytes (dxpu.ko: 1 byte to 1 GiB a buffer)", bytes)};
  KernelDevice& first = *devices_[0];
  dxpu_dma_alloc alloc{};
  alloc.size = bytes;
  if (Ioctl(first.fd.get(), DXPU_IOC_DMA_ALLOC, &alloc) != 0) {
    const int err = errno;
    if (err == ENODEV) return first.Lost();
    return Status{err == ENOMEM || err == ENOSPC ? ErrorCode::kOutOfMemory : ErrorCode::kInternal,
                  fmt::format("{}: pinning {} bytes: {}", first.Name(), bytes, ErrnoText(err))};
  }
  // From here on, whatever fails frees what was done so far.
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  Pinned pinned{nullptr, (bytes + page - 1) / page * page};
  struct Undo {
    const KernelPort* port;
    uint64_t iova;
    const Pinned* pinned;
    ~Undo() {
      if (port != nullptr) port->Unpin(iova, *pinned);
    }
  } undo{this, alloc.iova, &pinned};

  void* mem = mmap(nullptr, pinned.size, PROT_READ | PROT_WRITE, MAP_SHARED, first.fd.get(),
                   static_cast<off_t>(alloc.mmap_offset));
  if (mem == MAP_FAILED)
    return Status{ErrorCode::kOutOfMemory, fmt::format("{}: mapping {} pinned bytes: {}",
                                                       first.Name(), bytes, ErrnoText(errno))};
  pinned.data = static_cast<uint8_t*>(mem);
  for (size_t i = 1; i < devices_.size(); ++i) {
    KernelDevice& d = *devices_[i];
    dxpu_dma_ref ref{alloc.iova};
    if (Ioctl(d.fd.get(), DXPU_IOC_DMA_SHARE, &ref) != 0) {
      const int err = errno;
      if (err == ENODEV) return d.Lost();
      return Status{err == ENOMEM || err == ENOSPC ? ErrorCode::kOutOfMemory : ErrorCode::kInternal,
                    fmt::format("{}: sharing pinned memory at {}: {}", d.Name(),
                                dxgpu::Hex(alloc.iova), ErrnoText(err))};
    }
  }
  {
    const std::lock_guard lock(mu_);
    pinned_.emplace(alloc.iova, pinned);
  }
  undo.port = nullptr;
  return dxgpu::HostBuffer{pinned.data, alloc.iova, bytes, {}};
}

Status KernelPort::FreeHost(const dxgpu::HostBuffer& buffer) {
  Pinned p;
  {
    const std::lock_guard lock(mu_);
    auto it = pinned_.find(buffer.iova);
    if (it == pinned_.end() || it->second.data != buffer.data)
      return {ErrorCode::kInvalidArgument, "not a pinned buffer of this port"};
    p = it->second;
    pinned_.erase(it);
  }
  Unpin(buffer.iova, p);
  return {};
}

Status KernelPort::Wait(size_t device, const std::function<bool()>& ready, uint64_t timeout_ns) {
  if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
  KernelDevice& d = *devices_[device];
  const uint64_t start = Now();
  const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
  for (;;) {
    // An event another thread reads after ready() ran would not wake this one's poll().
    const uint64_t events = d.events.load(std::memory_order_acquire);
    if (ready()) return {};
    if (d.lost.load(std::memory_order_relaxed)) return d.Lost();
    const uint64_t now = Now();
    if (now >= deadline)
      return {ErrorCode::kTimeout,
              fmt::format("no answer from {} within {} ms", d.Name(), timeout_ns / 1'000'000)};
    const uint64_t slice = std::min(deadline - now, kWaitSliceNs);
    const timespec ts{static_cast<time_t>(slice / 1'000'000'000),
                      static_cast<long>(slice % 1'000'000'000)};
    if (d.events.load(std::memory_order_acquire) != events) continue;
    pollfd p{d.fd.get(), POLLIN, 0};
    const int rc = ::ppoll(&p, 1, &ts, nullptr);
    if (rc < 0 && errno != EINTR)
      return {ErrorCode::kInternal, fmt::format("{}: poll: {}", d.Name(), ErrnoText(errno))};
    if (rc <= 0) continue;
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0)
      d.lost.store(true, std::memory_order_relaxed);
    else if ((p.revents & POLLIN) != 0)
      d.ConsumeEvent();
  }
}

Status KernelPort::Health(size_t device) const {
  if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
  KernelDevice& d = *devices_[device];
  if (d.lost.load(std::memory_order_relaxed)) return d.Lost();
  dxpu_device_info info{};
  if (Ioctl(d.fd.get(), DXPU_IOC_INFO, &info) != 0) {
    const int err = errno;
    if (err == ENODEV) return d.Lost();
    return {ErrorCode::kInternal, fmt::format("{}: DXPU_IOC_INFO: {}", d.Name(), ErrnoText(err))};
  }
  if ((info.flags & DXPU_INFO_F_LOST) != 0) return d.Lost();
  return {};
}

}  // namespace

KernelMemoryWindow MemoryWindowOf(
    const dxpu_device_info& info,
    const std::optional<std::array<uint32_t, DXPU_BARS>>& bar_registers) {
  KernelMemoryWindow best;
  for (size_t i = 1; i < DXPU_BARS; ++i) {
    const uint64_t address = info.bar_addr[i];
    const uint64_t size = info.bar_size[i];
    bool is64_prefetchable = address >= kFourGiB;
    if (bar_registers) {
      const uint32_t reg = (*bar_registers)[i];
      const bool is64 = (reg & 0x1) == 0 && ((reg >> 1) & 0x3) == 0x2;
      is64_prefetchable = is64 && (reg & 0x8) != 0;
      if (is64) ++i;  // the next register is its upper half
    }
    if (size != 0 && is64_prefetchable && size > best.size) best = {address, size};
  }
  return best;
}

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenKernelPort(const KernelPortOptions& options) {
  if (options.devices.empty())
    return Status{ErrorCode::kInvalidArgument, "the kernel port needs at least one device file"};
  std::vector<std::unique_ptr<KernelDevice>> devices;
  for (const std::string& path : options.devices) {
    Expected<std::unique_ptr<KernelDevice>> d = OpenDevice(path, options.sysfs_root);
    if (!d.ok()) return d.status();
    for (const auto& other : devices) {
      if (other->pci_name == (*d)->pci_name)
        return Status{ErrorCode::kInvalidArgument, fmt::format("{} and {} are the same device ({})",
                                                               other->path, path, other->pci_name)};
    }
    devices.push_back(std::move(d).value());
  }
  return std::unique_ptr<dxgpu::Port>(new KernelPort(std::move(devices)));
}

}  // namespace dxpu::host
