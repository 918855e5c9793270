// kernel_port.cc - the kernel port over dxgpu.ko's character devices (kernel_port.h).
#include "host/kernel_port.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "dxgpu/text.h"
#include "gpu/device_profile.h"
#include "link/unique_fd.h"

namespace dxpu::host {
namespace {

using dxgpu::ErrorCode;
using dxgpu::Expected;
using dxgpu::Status;

constexpr uint64_t kWaitSliceNs = 50'000'000;  // the longest poll() before ready() runs again

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

// One device file and what DXGPU_IOC_INFO said about it.
struct KernelDevice {
  std::string path;
  link::UniqueFd fd;
  std::string pci_name;  // "10000:00:00.0"
  dxgpu::PortDeviceInfo info;
  std::atomic<bool> lost{false};
  std::mutex events_mu;             // one reader of the file's events at a time
  std::atomic<uint64_t> events{0};  // events read, by any thread

  // "/dev/dxgpu0 (10000:00:00.0)"
  std::string Name() const { return pci_name.empty() ? path : path + " (" + pci_name + ")"; }

  Status Lost() {
    lost.store(true, std::memory_order_relaxed);
    return {ErrorCode::kDeviceLost,
            fmt::format("{} is gone: the device was removed (its bridge's session went down, "
                        "its slot was powered off, or it was unbound from dxgpu.ko)",
                        Name())};
  }

  // Runs a batch of register accesses in order; what names them in an error.
  Status Regs(std::span<dxgpu_reg_op> ops, std::string_view what) {
    dxgpu_regs batch{};
    batch.ops = reinterpret_cast<uintptr_t>(ops.data());
    batch.count = static_cast<uint32_t>(ops.size());
    if (Ioctl(fd.get(), DXGPU_IOC_REGS, &batch) != 0) {
      const int err = errno;
      if (err == ENODEV) return Lost();
      const std::string where =
          fmt::format("{}: BAR0 {} at {}", Name(), what,
                      dxgpu::Hex(ops[std::min<size_t>(batch.done, ops.size() - 1)].offset));
      if (err == EPERM)
        return {ErrorCode::kInvalidArgument,
                where + ": refused, the register belongs to dxgpu.ko (INTR_ENABLE, INTR_STATUS)"};
      return {err == EINVAL ? ErrorCode::kInvalidArgument : ErrorCode::kBusError,
              fmt::format("{}: {}", where, ErrnoText(err))};
    }
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
    dxgpu_event event{};
    const ssize_t n = ::read(fd.get(), &event, sizeof event);
    if ((n < 0 && errno == ENODEV) ||
        (n == static_cast<ssize_t>(sizeof event) && (event.flags & DXGPU_INFO_F_LOST) != 0))
      lost.store(true, std::memory_order_relaxed);
    events.fetch_add(1, std::memory_order_release);
  }
};

dxgpu_reg_op RegOp(uint32_t offset, uint32_t value, uint32_t flags) {
  dxgpu_reg_op op{};
  op.offset = offset;
  op.value = value;
  op.flags = flags;
  return op;
}

Expected<std::unique_ptr<KernelDevice>> OpenDevice(const std::string& path) {
  auto d = std::make_unique<KernelDevice>();
  d->path = path;
  d->fd.Reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!d->fd.valid()) {
    const int err = errno;
    std::string hint;
    if (err == ENOENT) hint = " (is dxgpu.ko loaded and a GPU bound to it?)";
    if (err == EACCES || err == EPERM) hint = " (it needs root, or access to the file)";
    if (err == ENODEV || err == ENXIO) hint = " (the device is gone)";
    return Status{err == ENODEV || err == ENXIO ? ErrorCode::kDeviceLost : ErrorCode::kUnavailable,
                  fmt::format("cannot open {}: {}{}", path, ErrnoText(err), hint)};
  }
  dxgpu_info info{};
  if (Ioctl(d->fd.get(), DXGPU_IOC_INFO, &info) != 0) {
    const int err = errno;
    if (err == ENODEV)
      return Status{ErrorCode::kDeviceLost, fmt::format("{}: the device is gone", path)};
    return Status{
        ErrorCode::kUnavailable,
        fmt::format("{} is not a dxgpu device (DXGPU_IOC_INFO: {})", path, ErrnoText(err))};
  }
  d->pci_name.assign(info.pci_name, strnlen(info.pci_name, sizeof info.pci_name));
  d->info.location = fmt::format("kernel {} = {}", path, d->pci_name);
  if ((info.flags & DXGPU_INFO_F_LOST) != 0) return d->Lost();
  d->info.profile = gpu::ProfileNameForIds(info.vendor_id, info.device_id);
  d->info.vendor_id = info.vendor_id;
  d->info.device_id = info.device_id;
  d->info.msix_vectors = info.msix_vectors;
  d->info.memory_bytes = info.memory_bytes;
  const KernelMemoryWindow window = MemoryWindowOf(info);
  d->info.memory_window = window.address;
  d->info.memory_window_size = window.size;
  return d;
}

class KernelPort final : public dxgpu::Port {
 public:
  explicit KernelPort(std::vector<std::unique_ptr<KernelDevice>> devices)
      : devices_(std::move(devices)) {}
  ~KernelPort() override {
    for (const auto& [data, p] : pinned_) Unpin(p);
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
    std::array<dxgpu_reg_op, 1> op = {RegOp(offset, 0, 0)};
    if (Status s = devices_[device]->Regs(op, "read"); !s.ok()) return s;
    return op[0].value;
  }

  Status WriteRegister(size_t device, uint32_t offset, uint32_t value) override {
    if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
    std::array<dxgpu_reg_op, 1> op = {RegOp(offset, value, DXGPU_REG_WRITE)};
    return devices_[device]->Regs(op, "write");
  }

  Expected<dxgpu::HostBuffer> AllocHost(uint64_t bytes) override;
  Status FreeHost(const dxgpu::HostBuffer& buffer) override;
  Status Wait(size_t device, const std::function<bool()>& ready, uint64_t timeout_ns) override;
  uint64_t Now() const override { return MonotonicNs(); }
  Status Health(size_t device) const override;
  bool completion_interrupts() const override { return true; }

 private:
  struct Pinned {
    uint8_t* data = nullptr;
    uint64_t size = 0;              // mapped bytes (whole pages)
    std::vector<uint64_t> handles;  // on each device's file, in order; 0: none there
  };

  // Frees the buffer on every file that has it and unmaps it (the driver frees the memory once
  // the last of them lets go).
  void Unpin(const Pinned& p) const {
    for (size_t i = 0; i < p.handles.size(); ++i) {
      uint64_t handle = p.handles[i];
      if (handle != 0) (void)Ioctl(devices_[i]->fd.get(), DXGPU_IOC_BUF_FREE, &handle);
    }
    if (p.data != nullptr) munmap(p.data, p.size);
  }

  // An error of a buffer ioctl on device d's file: the device gone, out of memory, or else.
  static Status BufferError(KernelDevice& d, int err, const std::string& what) {
    if (err == ENODEV) return d.Lost();
    return {err == ENOMEM || err == ENOSPC ? ErrorCode::kOutOfMemory : ErrorCode::kInternal,
            fmt::format("{}: {}: {}", d.Name(), what, ErrnoText(err))};
  }

  std::vector<std::unique_ptr<KernelDevice>> devices_;
  std::mutex mu_;                            // pinned_
  std::map<const uint8_t*, Pinned> pinned_;  // by host address
};

Expected<dxgpu::HostBuffer> KernelPort::AllocHost(uint64_t bytes) {
  if (bytes == 0 || bytes > DXGPU_BUF_MAX_SIZE)
    return Status{ErrorCode::kInvalidArgument,
                  fmt::format("cannot pin {} bytes (dxgpu.ko: 1 byte to {} MiB a buffer)", bytes,
                              DXGPU_BUF_MAX_SIZE >> 20)};
  KernelDevice& first = *devices_[0];
  dxgpu_buf_alloc alloc{};
  alloc.size = bytes;
  if (Ioctl(first.fd.get(), DXGPU_IOC_BUF_ALLOC, &alloc) != 0)
    return BufferError(first, errno, fmt::format("pinning {} bytes", bytes));
  // From here on, whatever fails frees what was done so far.
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  Pinned pinned{nullptr, (bytes + page - 1) / page * page, std::vector<uint64_t>(devices_.size())};
  pinned.handles[0] = alloc.handle;
  struct Undo {
    const KernelPort* port;
    const Pinned* pinned;
    ~Undo() {
      if (port != nullptr) port->Unpin(*pinned);
    }
  } undo{this, &pinned};

  void* mem = mmap(nullptr, pinned.size, PROT_READ | PROT_WRITE, MAP_SHARED, first.fd.get(),
                   static_cast<off_t>(alloc.mmap_offset));
  if (mem == MAP_FAILED)
    return Status{ErrorCode::kOutOfMemory, fmt::format("{}: mapping {} pinned bytes: {}",
                                                       first.Name(), bytes, ErrnoText(errno))};
  pinned.data = static_cast<uint8_t*>(mem);
  dxgpu::HostBuffer buffer{.data = pinned.data, .iova = 0, .size = bytes, .device_iovas = {}};
  buffer.device_iovas.push_back(alloc.iova);
  for (size_t i = 1; i < devices_.size(); ++i) {
    KernelDevice& d = *devices_[i];
    dxgpu_buf_import import{};
    import.fd = first.fd.get();
    import.handle = alloc.handle;
    if (Ioctl(d.fd.get(), DXGPU_IOC_BUF_IMPORT, &import) != 0)
      return BufferError(d, errno, fmt::format("importing a pinned buffer of {}", first.path));
    pinned.handles[i] = import.handle;
    buffer.device_iovas.push_back(import.iova);
  }
  {
    const std::lock_guard lock(mu_);
    pinned_.emplace(pinned.data, pinned);
  }
  undo.port = nullptr;
  return buffer;
}

Status KernelPort::FreeHost(const dxgpu::HostBuffer& buffer) {
  Pinned p;
  {
    const std::lock_guard lock(mu_);
    auto it = pinned_.find(buffer.data);
    if (it == pinned_.end())
      return {ErrorCode::kInvalidArgument, "not a pinned buffer of this port"};
    p = std::move(it->second);
    pinned_.erase(it);
  }
  Unpin(p);
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
  dxgpu_info info{};
  if (Ioctl(d.fd.get(), DXGPU_IOC_INFO, &info) != 0) {
    const int err = errno;
    if (err == ENODEV) return d.Lost();
    return {ErrorCode::kInternal, fmt::format("{}: DXGPU_IOC_INFO: {}", d.Name(), ErrnoText(err))};
  }
  if ((info.flags & DXGPU_INFO_F_LOST) != 0) return d.Lost();
  return {};
}

}  // namespace

KernelMemoryWindow MemoryWindowOf(const dxgpu_info& info) {
  constexpr uint32_t kWindow = DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH;
  KernelMemoryWindow best;
  for (size_t i = 1; i < DXGPU_BARS; ++i) {
    if ((info.bar_flags[i] & kWindow) == kWindow && info.bar_size[i] > best.size)
      best = {info.bar_addr[i], info.bar_size[i]};
  }
  return best;
}

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenKernelPort(const KernelPortOptions& options) {
  if (options.devices.empty())
    return Status{ErrorCode::kInvalidArgument, "the kernel port needs at least one device file"};
  std::vector<std::unique_ptr<KernelDevice>> devices;
  for (const std::string& path : options.devices) {
    Expected<std::unique_ptr<KernelDevice>> d = OpenDevice(path);
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
