// bench_virtio.cc - `dxpu bench virtio` (bench_virtio.h).
#include "bench_virtio.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "command.h"
#include "demo_bridge.h"
#include "host/direct_port.h"
#include "host/host_port.h"
#include "lib/cli/options.h"
#include "progress.h"
#include "virtio/gpu/gpu_requests.h"
#include "virtio/little_endian.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_driver.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::cli {
namespace {
// Named as well: a unity build shares one anonymous namespace among bench_gpu.cc and this.
namespace virtio_bench {

namespace fs = std::filesystem;
namespace blk = virtio::blk;
namespace vgpu = virtio::gpu;

constexpr uint64_t kBenchHostNode = 0xbe7d;
constexpr size_t kBlkDevice = 0;  // the port's devices: the disk, then the display
constexpr size_t kGpuDevice = 1;

struct BenchVirtioArgs {
  std::string link = "mem";
  std::chrono::nanoseconds duration = std::chrono::milliseconds(500);  // per cell and port
  uint64_t disk_mib = 256;
  std::string display = "1920x1080";
  bool json = false;
};

// ---- The driver's bus over a host port ----

// lib/virtio's driver over a HostPort's device: configuration and MMIO requests through the
// port's host proxy, host memory one pinned buffer of the port.
class HostPortBus final : public virtio::DriverBus {
 public:
  HostPortBus(host::HostPort& port, size_t device, dxgpu::HostBuffer memory)
      : port_(port), access_(port.driver()), device_(device), memory_(std::move(memory)) {}

  uint64_t memory_base() const { return memory_.IovaFor(device_); }
  uint64_t memory_size() const { return memory_.size; }
  uint8_t* memory_at(uint64_t iova) const { return memory_.data + (iova - memory_base()); }
  const std::string& error() const { return error_; }

  uint32_t ConfigRead32(uint16_t offset) override {
    dxgpu::Expected<uint32_t> v = access_.ConfigRead(id(), static_cast<uint16_t>(offset & ~3u));
    if (!v.ok()) Fail(v.status());
    return v.ok() ? *v : ~uint32_t{0};
  }
  uint64_t BarAddress(uint8_t bar) const override {
    return bar < 6 ? port_.port_device(device_).attached.bars[bar].address : 0;
  }
  uint64_t MmioRead(uint64_t address, uint32_t size) override {
    uint8_t bytes[4] = {};
    const dxgpu::Status s = access_.MemRead(id(), address, std::span(bytes, size));
    if (!s.ok()) {
      Fail(s);
      return ~uint64_t{0};
    }
    return virtio::LoadLe(bytes, 0, static_cast<int>(size));
  }
  void MmioWrite(uint64_t address, std::span<const uint8_t> bytes) override {
    if (const dxgpu::Status s = access_.MemWrite(id(), address, bytes); !s.ok()) Fail(s);
  }
  void MemoryWrite(uint64_t address, std::span<const uint8_t> bytes) override {
    if (Inside(address, bytes.size())) std::memcpy(memory_at(address), bytes.data(), bytes.size());
  }
  void MemoryRead(uint64_t address, std::span<uint8_t> out) override {
    if (Inside(address, out.size())) std::memcpy(out.data(), memory_at(address), out.size());
  }
  bool WaitUntil(const std::function<bool()>& done) override {
    const dxgpu::Status s = port_.Wait(device_, done, kWaitNs);
    if (!s.ok()) Fail(s);
    return s.ok();
  }

 private:
  static constexpr uint64_t kWaitNs = 5'000'000'000;

  host::DeviceId id() const { return port_.port_device(device_).id; }
  bool Inside(uint64_t address, size_t length) {
    if (address >= memory_base() && length <= memory_.size &&
        address - memory_base() <= memory_.size - length)
      return true;
    if (error_.empty())
      error_ = fmt::format("host memory 0x{:x}+{} outside the buffer", address, length);
    return false;
  }
  void Fail(const dxgpu::Status& s) {
    if (error_.empty()) error_ = s.ToString();
  }

  host::HostPort& port_;
  host::HostAccess access_;
  size_t device_;
  dxgpu::HostBuffer memory_;
  std::string error_;
};

// Bytes of host memory a bus's driver lays its rings and requests out in, from its base.
class Arena {
 public:
  explicit Arena(uint64_t base) : next_(base) {}
  uint64_t Take(uint64_t bytes) {
    const uint64_t at = next_;
    next_ += (bytes + 0xfff) & ~uint64_t{0xfff};
    return at;
  }

 private:
  uint64_t next_;
};

// One port's device, its driver started: probed, every feature it offers taken, `queues`
// queues of `queue_size`, DRIVER_OK.
struct Started {
  std::unique_ptr<HostPortBus> bus;
  std::unique_ptr<virtio::VirtioPciDriver> driver;
  std::unique_ptr<Arena> arena;
  std::string error;
};

Started StartDevice(dxgpu::Port& port, size_t device, uint64_t memory_bytes, uint16_t queues,
                    uint16_t queue_size) {
  Started s;
  auto* host_port = dynamic_cast<host::HostPort*>(&port);
  if (host_port == nullptr) {
    s.error = "not a host port";
    return s;
  }
  dxgpu::Expected<dxgpu::HostBuffer> memory = port.AllocHost(memory_bytes);
  if (!memory.ok()) {
    s.error = memory.status().ToString();
    return s;
  }
  s.bus = std::make_unique<HostPortBus>(*host_port, device, *memory);
  s.driver = std::make_unique<virtio::VirtioPciDriver>(*s.bus);
  s.arena = std::make_unique<Arena>(s.bus->memory_base());
  virtio::VirtioPciDriver& d = *s.driver;
  if (!d.Probe()) {
    s.error = "no virtio structures found" + (s.bus->error().empty() ? "" : ": " + s.bus->error());
    return s;
  }
  if ((d.Negotiate(~uint64_t{0}) & virtio::kStatusFeaturesOk) == 0) {
    s.error = "the device refused its own features";
    return s;
  }
  for (uint16_t q = 0; q < queues; ++q) {
    const uint64_t base = s.arena->Take(virtio::VirtioPciDriver::QueueBytes(queue_size));
    d.SetupQueue(q, queue_size, base, static_cast<uint16_t>(q + 1));
  }
  d.WriteCommon(virtio::kConfigMsixVector, 2, 0);
  d.DriverOk();
  if ((d.status() & virtio::kStatusDriverOk) == 0) s.error = "DRIVER_OK did not stick";
  if (!s.bus->error().empty()) s.error = s.bus->error();
  return s;
}

// Request chains in flight on one queue, each from a slot of its own (an indirect table, the
// request's header and footer, its data); the used ring's heads name the slots back.
class Requests {
 public:
  static constexpr uint64_t kTable = 0;      // indirect descriptors (<= 8 of 16 bytes)
  static constexpr uint64_t kHeader = 128;   // the request's header or command
  static constexpr uint64_t kFooter = 2048;  // the device's answer: a status byte, a response

  Requests(virtio::VirtioPciDriver& driver, Arena& arena, size_t slots, uint64_t data_bytes)
      : driver_(driver), heads_(driver.queue(0).size, SIZE_MAX) {
    for (size_t i = 0; i < slots; ++i) {
      control_.push_back(arena.Take(4096));
      data_.push_back(data_bytes == 0 ? 0 : arena.Take(data_bytes));
    }
  }
  uint64_t control(size_t slot) const { return control_[slot]; }
  uint64_t data(size_t slot) const { return data_[slot]; }

  // Makes the slot's chain available (through its indirect table); no notification.
  void Submit(size_t slot, std::span<const virtio::Buffer> chain) {
    const uint16_t head = driver_.Submit(0, chain, control_[slot] + kTable, false);
    heads_[head] = slot;
    ++in_flight_;
  }
  // Waits for the used ring to move; the slots whose chains completed, in order (empty: the
  // wait failed).
  std::vector<size_t> Completed() {
    std::vector<size_t> done;
    if (!driver_.WaitUsed(0, static_cast<uint16_t>(seen_ + 1))) return done;
    const uint16_t idx = driver_.used_idx(0);
    for (; seen_ != idx; ++seen_) {
      const virtio::UsedElem e = driver_.used(0, seen_);
      if (e.id < heads_.size() && heads_[e.id] != SIZE_MAX) {
        done.push_back(heads_[e.id]);
        heads_[e.id] = SIZE_MAX;
        --in_flight_;
      }
    }
    return done;
  }
  size_t in_flight() const { return in_flight_; }

 private:
  virtio::VirtioPciDriver& driver_;
  std::vector<size_t> heads_;  // slot by descriptor head
  std::vector<uint64_t> control_;
  std::vector<uint64_t> data_;
  uint16_t seen_ = 0;
  size_t in_flight_ = 0;
};

// ---- virtio-blk ----

struct BlkWorkload {
  std::string name;  // "4k-rand-read-qd1"
  uint32_t type = blk::kTypeIn;
  uint32_t bytes = 4096;
  uint16_t depth = 1;
  bool random = true;
};

const std::vector<BlkWorkload>& BlkWorkloads() {
  static const std::vector<BlkWorkload> w = {
      {"4k-rand-read-qd1", blk::kTypeIn, 4096, 1, true},
      {"4k-rand-read-qd32", blk::kTypeIn, 4096, 32, true},
      {"4k-rand-write-qd32", blk::kTypeOut, 4096, 32, true},
      {"128k-seq-read-qd8", blk::kTypeIn, 128 << 10, 8, false},
      {"128k-seq-write-qd8", blk::kTypeOut, 128 << 10, 8, false},
  };
  return w;
}

constexpr uint16_t kBlkQueueSize = 64;
constexpr uint32_t kBlkSegment = 64 << 10;  // the device's size_max: the largest data buffer
constexpr uint64_t kBlkMaxBytes = 128 << 10;

struct Measured {
  double ops_per_s = 0;
  double bytes_per_s = 0;
  std::string error;
};

// One port's disk, driven on its first queue.
class BlkBench {
 public:
  BlkBench(dxgpu::Port& port, uint64_t disk_bytes) : disk_sectors_(disk_bytes / 512) {
    started_ = StartDevice(port, kBlkDevice, 16 << 20, 1, kBlkQueueSize);
    if (!started_.error.empty()) return;
    requests_ = std::make_unique<Requests>(*started_.driver, *started_.arena, 32, kBlkMaxBytes);
    for (size_t s = 0; s < 32; ++s) {
      uint8_t* p = started_.bus->memory_at(requests_->data(s));
      for (uint64_t i = 0; i < kBlkMaxBytes; ++i) p[i] = static_cast<uint8_t>(i * 7 + s);
    }
    port_ = &port;
  }
  const std::string& error() const { return started_.error; }

  // A write of a known 4 KiB and its read back into another slot: the disk answers right.
  std::string Check() {
    Submit(0, blk::kTypeOut, 8, 4096);
    Submit(1, blk::kTypeIn, 8, 4096);
    started_.driver->Kick(0);
    size_t done = 0;
    while (done < 2) {
      const std::vector<size_t> c = requests_->Completed();
      if (c.empty()) return "no answer: " + started_.bus->error();
      for (size_t s : c) {
        if (Status(s) != blk::kStatusOk) return fmt::format("status {}", Status(s));
      }
      done += c.size();
    }
    if (std::memcmp(started_.bus->memory_at(requests_->data(0)),
                    started_.bus->memory_at(requests_->data(1)), 4096) != 0)
      return "4 KiB written at sector 8 read back different";
    return {};
  }

  Measured Run(const BlkWorkload& w, std::chrono::nanoseconds duration) {
    Measured m;
    next_sector_ = 0;
    const uint64_t t0 = port_->Now();
    const uint64_t end = t0 + static_cast<uint64_t>(duration.count());
    uint64_t ops = 0;
    for (size_t s = 0; s < w.depth; ++s) Submit(s, w.type, NextSector(w), w.bytes);
    started_.driver->Kick(0);
    while (requests_->in_flight() > 0) {
      const std::vector<size_t> c = requests_->Completed();
      if (c.empty()) {
        m.error = "no answer: " + started_.bus->error();
        return m;
      }
      const bool more = port_->Now() < end;
      for (size_t s : c) {
        if (Status(s) != blk::kStatusOk) {
          m.error = fmt::format("request answered status {}", Status(s));
          return m;
        }
        ++ops;
        if (more) Submit(s, w.type, NextSector(w), w.bytes);
      }
      if (more) started_.driver->Kick(0);
    }
    const double seconds = static_cast<double>(port_->Now() - t0) / 1e9;
    m.ops_per_s = static_cast<double>(ops) / seconds;
    m.bytes_per_s = m.ops_per_s * w.bytes;
    return m;
  }

 private:
  uint8_t Status(size_t slot) {
    return *started_.bus->memory_at(requests_->control(slot) + Requests::kFooter);
  }
  uint64_t NextSector(const BlkWorkload& w) {
    const uint64_t per = w.bytes / 512;
    const uint64_t slots = disk_sectors_ / per;
    if (w.random) {
      rng_ ^= rng_ << 13;
      rng_ ^= rng_ >> 7;
      rng_ ^= rng_ << 17;
      return (rng_ % slots) * per;
    }
    const uint64_t at = next_sector_;
    next_sector_ = (next_sector_ + per) % (slots * per);
    return at;
  }
  // Linux's layout: header, the data in segments of at most size_max, the status byte.
  void Submit(size_t slot, uint32_t type, uint64_t sector, uint32_t bytes) {
    const uint64_t ctl = requests_->control(slot);
    std::vector<uint8_t> header;
    virtio::AppendLe(header, type, 4);
    virtio::AppendLe(header, 0, 4);
    virtio::AppendLe(header, sector, 8);
    started_.bus->MemoryWrite(ctl + Requests::kHeader, header);
    *started_.bus->memory_at(ctl + Requests::kFooter) = 0xff;
    std::vector<virtio::Buffer> chain = {{ctl + Requests::kHeader, blk::kHeaderSize, false}};
    for (uint32_t at = 0; at < bytes; at += kBlkSegment) {
      chain.push_back(
          {requests_->data(slot) + at, std::min(kBlkSegment, bytes - at), type == blk::kTypeIn});
    }
    chain.push_back({ctl + Requests::kFooter, 1, true});
    requests_->Submit(slot, chain);
  }

  uint64_t disk_sectors_;
  dxgpu::Port* port_ = nullptr;
  Started started_;
  std::unique_ptr<Requests> requests_;
  uint64_t next_sector_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
};

// ---- virtio-gpu ----

struct GpuWorkload {
  std::string name;  // "frame-1920x1080", "update-64x64"
  vgpu::Rect rect;
};

// One port's display: a resource of the display's size scanned out, updated by transfer and
// flush of a rectangle.
class GpuBench {
 public:
  static constexpr uint32_t kResource = 1;

  GpuBench(dxgpu::Port& port, uint32_t width, uint32_t height) : width_(width) {
    const uint64_t frame_bytes = uint64_t{width} * height * 4;
    started_ = StartDevice(port, kGpuDevice, frame_bytes + (8 << 20), 2, 64);
    if (!started_.error.empty()) return;
    requests_ = std::make_unique<Requests>(*started_.driver, *started_.arena, 2, 0);
    backing_ = started_.arena->Take(frame_bytes);
    port_ = &port;
    const vgpu::Rect all{0, 0, width, height};
    for (const std::vector<uint8_t>& cmd :
         {vgpu::Create2d(kResource, vgpu::kFormatB8G8R8X8, width, height),
          vgpu::AttachBacking(kResource, {{backing_, static_cast<uint32_t>(frame_bytes)}}),
          vgpu::SetScanoutCmd(0, kResource, all)}) {
      if (std::string e = Commands({cmd}); !e.empty()) {
        started_.error = e;
        return;
      }
    }
  }
  const std::string& error() const { return started_.error; }

  Measured Run(const GpuWorkload& w, std::chrono::nanoseconds duration) {
    Measured m;
    const uint64_t t0 = port_->Now();
    const uint64_t end = t0 + static_cast<uint64_t>(duration.count());
    uint64_t frames = 0;
    do {
      // A new picture in the rectangle's first row, then the update a compositor sends.
      std::memset(started_.bus->memory_at(backing_ + (uint64_t{w.rect.y} * width_ + w.rect.x) * 4),
                  static_cast<int>(frames), uint64_t{w.rect.width} * 4);
      const uint64_t offset = (uint64_t{w.rect.y} * width_ + w.rect.x) * 4;
      m.error =
          Commands({vgpu::TransferCmd(kResource, w.rect, offset), vgpu::Flush(kResource, w.rect)});
      if (!m.error.empty()) return m;
      ++frames;
    } while (port_->Now() < end);
    const double seconds = static_cast<double>(port_->Now() - t0) / 1e9;
    m.ops_per_s = static_cast<double>(frames) / seconds;
    m.bytes_per_s = m.ops_per_s * w.rect.width * w.rect.height * 4;
    return m;
  }

 private:
  // The commands in order on the control queue, one notification; each must answer OK_NODATA.
  std::string Commands(const std::vector<std::vector<uint8_t>>& cmds) {
    for (size_t s = 0; s < cmds.size(); ++s) {
      const uint64_t ctl = requests_->control(s);
      started_.bus->MemoryWrite(ctl + Requests::kHeader, cmds[s]);
      std::memset(started_.bus->memory_at(ctl + Requests::kFooter), 0, vgpu::kCtrlHdrSize);
      const std::vector<virtio::Buffer> chain = {
          {ctl + Requests::kHeader, static_cast<uint32_t>(cmds[s].size()), false},
          {ctl + Requests::kFooter, static_cast<uint32_t>(vgpu::kCtrlHdrSize), true}};
      requests_->Submit(s, chain);
    }
    started_.driver->Kick(0);
    while (requests_->in_flight() > 0) {
      const std::vector<size_t> c = requests_->Completed();
      if (c.empty()) return "no answer: " + started_.bus->error();
      for (size_t s : c) {
        const uint32_t type = virtio::LoadLe32(
            {started_.bus->memory_at(requests_->control(s) + Requests::kFooter), 4}, 0);
        if (type != vgpu::kRespOkNodata) return fmt::format("a command answered 0x{:04x}", type);
      }
    }
    return {};
  }

  uint32_t width_;  // the resource's: its rows' stride
  dxgpu::Port* port_ = nullptr;
  Started started_;
  std::unique_ptr<Requests> requests_;
  uint64_t backing_ = 0;
};

// ---- the run ----

struct Row {
  std::string device;  // "virtio-blk", "virtio-gpu"
  std::string workload;
  uint32_t bytes = 0;  // per operation (a request, a frame)
  uint16_t depth = 1;
  Measured direct;
  Measured dxpu;
  double Ratio() const { return direct.ops_per_s == 0 ? 0 : dxpu.ops_per_s / direct.ops_per_s; }
  std::string error() const { return direct.error.empty() ? dxpu.error : direct.error; }
};

bridge::BoxDeviceConfig DiskConfig(const fs::path& file, uint64_t bytes) {
  bridge::BoxDeviceConfig c;
  c.kind = bridge::DeviceKind::kVirtioBlk;
  c.blk.backing = file.string();
  c.blk.size_bytes = bytes;
  c.blk.queues = 1;
  return c;
}

bridge::BoxDeviceConfig DisplayConfig(uint32_t width, uint32_t height) {
  bridge::BoxDeviceConfig c;
  c.kind = bridge::DeviceKind::kVirtioGpu;
  c.display = {width, height};
  return c;
}

// The same device entries as the bridge's, each made by the bridge's own MakeFunction.
host::DirectFunctionFactory Native(bridge::BoxDeviceConfig config) {
  return [config](uint16_t host_bdf, std::string* error) mutable {
    config.box_bdf = host_bdf;
    return bridge::MakeFunction(config, bridge::FunctionContext{}, error);
  };
}

bridge::DeviceConfig ForBridge(const bridge::BoxDeviceConfig& c) {
  bridge::DeviceConfig d;
  d.kind = c.kind;
  d.blk = c.blk;
  d.display = c.display;
  return d;
}

void PrintText(const BenchVirtioArgs& a, const std::string& where, const std::vector<Row>& rows) {
  std::cout << fmt::format("virtio devices natively (direct) and through DxPU ({}), {} per cell\n",
                           where, FormatDuration(a.duration));
  std::cout << fmt::format("{:<11} {:<20} {:>14} {:>14} {:>8}\n", "device", "workload", "direct",
                           "dxpu", "ratio");
  for (const Row& r : rows) {
    if (!r.error().empty()) {
      std::cout << fmt::format("{:<11} {:<20} error: {}\n", r.device, r.workload, r.error());
      continue;
    }
    const bool blk = r.device == "virtio-blk";
    const auto figure = [&](const Measured& m) {
      if (!blk) return fmt::format("{:.0f} us/frame", 1e6 / m.ops_per_s);
      if (r.bytes <= 4096) return fmt::format("{:.0f} IOPS", m.ops_per_s);
      return fmt::format("{:.0f} MB/s", m.bytes_per_s / 1e6);
    };
    std::cout << fmt::format("{:<11} {:<20} {:>14} {:>14} {:>7.1f}%\n", r.device, r.workload,
                             figure(r.direct), figure(r.dxpu), r.Ratio() * 100);
  }
  std::cout << "ratio: operations per second through DxPU over natively (frames for virtio-gpu)\n";
}

void PrintJson(const BenchVirtioArgs& a, const std::string& where, const std::vector<Row>& rows) {
  nlohmann::json out;
  out["link"] = a.link;
  out["where"] = where;
  out["duration_ns"] = a.duration.count();
  out["results"] = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j = {{"device", r.device},
                        {"workload", r.workload},
                        {"bytes", r.bytes},
                        {"depth", r.depth},
                        {"direct_ops_per_s", r.direct.ops_per_s},
                        {"dxpu_ops_per_s", r.dxpu.ops_per_s},
                        {"direct_bytes_per_s", r.direct.bytes_per_s},
                        {"dxpu_bytes_per_s", r.dxpu.bytes_per_s},
                        {"ratio", r.Ratio()}};
    if (!r.error().empty()) j["error"] = r.error();
    out["results"].push_back(j);
  }
  std::cout << out.dump(2) << "\n";
}

int RunBenchVirtio(const BenchVirtioArgs& a) {
  const std::optional<bridge::VirtioGpuSettings> size = bridge::ParseDisplaySize(a.display);
  if (!size) {
    std::cerr << "dxpu bench virtio: --display must be WIDTHxHEIGHT, each 16..4095\n";
    return kExitUsage;
  }
  const uint32_t width = size->width;
  const uint32_t height = size->height;
  const fs::path dir = fs::temp_directory_path() / fmt::format("dxpu-bench-virtio-{}", getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  const uint64_t disk_bytes = a.disk_mib << 20;
  const bridge::BoxDeviceConfig disk = DiskConfig(dir / "box-disk.img", disk_bytes);
  const bridge::BoxDeviceConfig display = DisplayConfig(width, height);

  DemoBridgeOptions bo;
  bo.link = a.link;
  bo.dir = dir;
  bo.devices = {ForBridge(disk), ForBridge(display)};
  Result<std::unique_ptr<DemoBridge>> box = DemoBridge::Start(bo);
  if (!box.ok()) {
    std::cerr << "dxpu bench virtio: " << box.error().message << "\n";
    fs::remove_all(dir, ec);
    return kExitFailure;
  }
  host::DirectPortOptions direct_options;
  direct_options.profiles = {};
  direct_options.functions = {Native(DiskConfig(dir / "native-disk.img", disk_bytes)),
                              Native(display)};
  auto dxpu_port = box.value()->OpenHostPort(2, kBenchHostNode);
  auto direct_port = host::OpenDirectPort(direct_options);
  if (!dxpu_port.ok() || !direct_port.ok()) {
    std::cerr << "dxpu bench virtio: "
              << (dxpu_port.ok() ? direct_port.status() : dxpu_port.status()).ToString() << "\n";
    fs::remove_all(dir, ec);
    return kExitFailure;
  }
  std::vector<Row> rows;
  {
    BlkBench direct_disk(**direct_port, disk_bytes);
    BlkBench dxpu_disk(**dxpu_port, disk_bytes);
    GpuBench direct_display(**direct_port, width, height);
    GpuBench dxpu_display(**dxpu_port, width, height);
    std::string setup;
    for (const std::string* e : {&direct_disk.error(), &dxpu_disk.error(), &direct_display.error(),
                                 &dxpu_display.error()}) {
      if (setup.empty()) setup = *e;
    }
    if (setup.empty()) setup = direct_disk.Check();
    if (setup.empty()) setup = dxpu_disk.Check();
    if (!setup.empty()) {
      std::cerr << "dxpu bench virtio: setting the devices up: " << setup << "\n";
      fs::remove_all(dir, ec);
      return kExitFailure;
    }
    // A whole frame, and a 64x64 rectangle in the middle (a cursor-sized update; smaller on
    // a smaller display).
    const uint32_t uw = std::min(64u, width);
    const uint32_t uh = std::min(64u, height);
    const std::vector<GpuWorkload> gpu_workloads = {
        {fmt::format("frame-{}x{}", width, height), {0, 0, width, height}},
        {fmt::format("update-{}x{}", uw, uh), {(width - uw) / 2, (height - uh) / 2, uw, uh}}};
    const uint64_t total = BlkWorkloads().size() + gpu_workloads.size();
    Progress progress("bench virtio");
    uint64_t done = 0;
    for (const BlkWorkload& w : BlkWorkloads()) {
      Row r{"virtio-blk", w.name, w.bytes, w.depth, {}, {}};
      r.direct = direct_disk.Run(w, a.duration);
      r.dxpu = dxpu_disk.Run(w, a.duration);
      rows.push_back(r);
      progress.Update(++done, total);
    }
    for (const GpuWorkload& w : gpu_workloads) {
      Row r{"virtio-gpu", w.name, w.rect.width * w.rect.height * 4, 1, {}, {}};
      r.direct = direct_display.Run(w, a.duration);
      r.dxpu = dxpu_display.Run(w, a.duration);
      rows.push_back(r);
      progress.Update(++done, total);
    }
  }
  dxpu_port->reset();
  direct_port->reset();
  const std::string where = box.value()->where();
  box.value()->Stop();
  fs::remove_all(dir, ec);
  if (a.json)
    PrintJson(a, where, rows);
  else
    PrintText(a, where, rows);
  const bool failed =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.error().empty(); });
  return failed ? kExitFailure : kExitOk;
}

}  // namespace virtio_bench
}  // namespace

std::function<int()> AddBenchVirtioCommand(CLI::App& bench, CLI::App** app) {
  auto args = std::make_shared<virtio_bench::BenchVirtioArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "virtio",
      "virtio devices in a GPU box against the same device models attached natively, in one "
      "run: a virtio-blk disk (a sparse file in the temporary directory; random 4 KiB reads at "
      "queue depth 1 and 32, random 4 KiB writes at 32, sequential 128 KiB reads and writes at "
      "8: IOPS and MB/s) and a virtio-gpu display (a whole frame transferred and flushed, and a "
      "64x64 update: the time each takes). Each through the direct port (the device on an ideal "
      "local link) and through DxPU (userspace host proxy, DxFP over --link, a dxpu-bridge in "
      "this process), driven by the same virtio driver (lib/virtio), with the ratio dxpu/direct. "
      "A 4 KiB written and read back checks each disk first.");
  cmd->add_option("--link", args->link, "the DxPU side's link: mem, udp (loopback) or unix")
      ->check(CLI::IsMember({"mem", "udp", "unix"}))
      ->capture_default_str();
  AddBoundedDuration(*cmd, "--duration", &args->duration, "time per workload and side",
                     {std::chrono::milliseconds(10), std::chrono::seconds(60)});
  cmd->add_option("--disk-mib", args->disk_mib, "each disk's size in MiB (sparse)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--display", args->display, "the display's size, WIDTHxHEIGHT (16..4095)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the results as JSON");
  cmd->footer(
      "Examples:\n"
      "  dxpu bench virtio\n"
      "  dxpu bench virtio --link udp --duration 2s --json\n"
      "  dxpu bench virtio --display 1024x768 --disk-mib 1024");
  *app = cmd;
  return [args] { return virtio_bench::RunBenchVirtio(*args); };
}

}  // namespace dxpu::cli
