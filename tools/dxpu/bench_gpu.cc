// bench_gpu.cc - `dxpu bench gpu` (bench_gpu.h).
#include "bench_gpu.h"

#include <pthread.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>
#include <ctime>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "command.h"
#include "demo_bridge.h"
#include "dxgpu/runtime.h"
#include "dxpu/dxfp.h"
#include "fabric/link_driver.h"
#include "fabric/raw_link_pair.h"
#include "gpu/gpu_registers.h"
#include "host/direct_port.h"
#include "link/event_loop.h"
#include "link/link_waiter.h"
#include "link/spin.h"
#include "progress.h"
#include "stats.h"

namespace dxpu::cli {
namespace {

namespace fs = std::filesystem;
namespace regs = gpu::regs;

constexpr uint64_t kBenchHostNode = 0xbe7c;

struct BenchGpuArgs {
  std::string link = "mem";
  std::string profile = "dxgpu";
  std::vector<uint64_t> sizes = {4096, 65536, 1u << 20, 16u << 20, 64u << 20};
  uint32_t mmio_reads = 2000;
  uint32_t doorbells = 20000;
  uint64_t min_bytes = 128u << 20;  // each bandwidth cell copies at least this much
  std::string direction = "both";   // "h2d", "d2h" or "both"
  bool busy_poll = false;
  bool json = false;
};

// --busy-poll: how long each thread spins after the last frame before it sleeps.
constexpr uint64_t kBusyPollNs = 500'000;

struct Cell {
  std::string what;  // "mmio-read", "doorbell", "h2d", "d2h"
  uint64_t size = 0;
  double direct = 0;  // ns per read; writes/s; bytes/s
  double dxpu = 0;
  bool higher_is_better = true;
  std::string error;
  double direct_cpu = 0;  // CPU seconds of this process per wall second while it ran
  double dxpu_cpu = 0;
  double Ratio() const { return direct == 0 ? 0 : dxpu / direct; }
};

// One port's figures, in the order of the cells.
class PortBench {
 public:
  PortBench(dxgpu::Runtime& rt, const BenchGpuArgs& args) : rt_(rt), args_(args) {}

  dxgpu::Expected<double> MmioReadNs() {
    dxgpu::Port& port = rt_.port();
    std::vector<double> ns;
    for (uint32_t i = 0; i < args_.mmio_reads; ++i) {
      const uint64_t t0 = port.Now();
      auto v = port.ReadRegister(0, regs::kId);
      if (!v.ok()) return v.status();
      if (*v != regs::kIdValue)
        return dxgpu::Status{dxgpu::ErrorCode::kInternal, "register ID read back wrong"};
      ns.push_back(static_cast<double>(port.Now() - t0));
    }
    return Median(ns);
  }

  // Posted writes per second; a read at the end proves they all arrived (reads do not pass
  // writes).
  dxgpu::Expected<double> DoorbellsPerSecond() {
    dxgpu::Port& port = rt_.port();
    const uint64_t t0 = port.Now();
    for (uint32_t i = 0; i < args_.doorbells; ++i) {
      dxgpu::Status s = port.WriteRegister(0, regs::kIntrEnable, i & regs::kIntrMask);
      if (!s.ok()) return s;
    }
    auto v = port.ReadRegister(0, regs::kIntrEnable);
    if (!v.ok()) return v.status();
    const double seconds = static_cast<double>(port.Now() - t0) / 1e9;
    if (*v != ((args_.doorbells - 1) & regs::kIntrMask))
      return dxgpu::Status{dxgpu::ErrorCode::kInternal, "the last write is not what reads back"};
    return args_.doorbells / seconds;
  }

  // Bytes per second of synchronous copies from/to pinned memory of `size` bytes.
  dxgpu::Expected<double> CopyBytesPerSecond(bool h2d, uint64_t size) {
    auto host = rt_.MallocHost(size);
    if (!host.ok()) return host.status();
    auto dev = rt_.Malloc(0, size);
    if (!dev.ok()) {
      (void)rt_.FreeHost(*host);
      return dev.status();
    }
    auto* bytes = static_cast<uint8_t*>(*host);
    for (uint64_t i = 0; i < size; i += 4096) bytes[i] = static_cast<uint8_t>(i >> 12);
    const uint64_t reps = std::max<uint64_t>(2, args_.min_bytes / size);
    dxgpu::Status s;
    // One untimed copy first: pages touched, paths warm.
    s = h2d ? rt_.MemcpyHtoD(*dev, *host, size) : rt_.MemcpyDtoH(*host, *dev, size);
    const uint64_t t0 = rt_.port().Now();
    for (uint64_t r = 0; r < reps && s.ok(); ++r)
      s = h2d ? rt_.MemcpyHtoD(*dev, *host, size) : rt_.MemcpyDtoH(*host, *dev, size);
    const uint64_t took = rt_.port().Now() - t0;
    (void)rt_.Free(*dev);
    (void)rt_.FreeHost(*host);
    if (!s.ok()) return s;
    return static_cast<double>(reps * size) * 1e9 / static_cast<double>(took);
  }

 private:
  dxgpu::Runtime& rt_;
  const BenchGpuArgs& args_;
};

// ---- The round trip against the bare link's ping-pong ----

uint64_t Nanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The frames of one MMIO read as the host proxy and the bridge send them: a DATA frame with the
// TLP's record (an MRd with a 3-DW header: BAR0 lies below 4 GiB; its CplD, 3 DW and one DW of
// data) and the credit record every DATA frame carries, then the CRC.
constexpr size_t kCreditRecord = DXFP_REC_HDR_SIZE + DXFP_CREDIT_BODY_SIZE;
constexpr size_t kMmioRequestFrame =
    DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 12 + kCreditRecord + DXFP_CRC_SIZE;
constexpr size_t kMmioCompletionFrame =
    DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 12 + 4 + kCreditRecord + DXFP_CRC_SIZE;
static_assert(kMmioRequestFrame == 80 && kMmioCompletionFrame == 84);

// The wall clock and this process's CPU time (every thread), for CPU seconds per wall second.
struct CpuMark {
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;
  static CpuMark Take() { return {Nanos(CLOCK_MONOTONIC), Nanos(CLOCK_PROCESS_CPUTIME_ID)}; }
};

// CPU seconds per wall second between two marks (0 when no time passed).
double CpuPerWall(const CpuMark& from, const CpuMark& to) {
  if (to.wall_ns <= from.wall_ns) return 0;
  return static_cast<double>(to.cpu_ns - from.cpu_ns) /
         static_cast<double>(to.wall_ns - from.wall_ns);
}

struct RoundTripOptions {
  std::string profile = "dxgpu";
  uint32_t count = 2000;      // round trips per path and link
  uint64_t busy_poll_ns = 0;  // every thread of every path; 0: they sleep
  std::filesystem::path dir;  // where the bridges' sockets go
};

struct RoundTripRow {
  std::string link;  // "mem", "udp"
  // "ping-pong": the bare link; "mmio-read": the whole path, the waiting caller receiving its
  // answer; "mmio-read-worker": the same with the host proxy's worker receiving it and waking
  // the caller (one thread wake-up more, how the proxy ran before).
  std::string path;
  double median_ns = 0;
  double cpu = 0;           // CPU seconds of this process per wall second while it ran
  double vs_ping_pong = 0;  // median / the same link's ping-pong median
  std::string error;
};

constexpr uint64_t kGiveUpNs = 1'000'000'000;  // a round trip this long is a lost frame
constexpr uint64_t kMaxSleepNs = 50'000'000;
constexpr uint32_t kBlocks = 10;
constexpr uint32_t kWarmUp = 20;  // untimed round trips per path before the first block

// The bare link: this thread sends a frame of the MMIO read's request size and waits for the
// answer as the host proxy's waiting caller does (receives until the link is empty, sleeps in
// a LinkWaiter, or spins); a second thread answers with a frame of the completion's size from
// an EventLoop, as dxpu-bridge does (busy polling as it does too).
class PingPong {
 public:
  static std::unique_ptr<PingPong> Open(fabric::RawLinkKind kind, uint64_t busy_ns,
                                        std::string* error) {
    std::unique_ptr<PingPong> p(new PingPong(busy_ns));
    p->pair_ = fabric::OpenRawLinkPair(kind, 64);
    if (!p->pair_.ok()) {
      *error = "cannot open the link: " + p->pair_.error.message();
      return nullptr;
    }
    auto loop = link::EventLoop::Create();
    auto waiter = link::LinkWaiter::Create();
    std::error_code ec = loop.ok() ? waiter.error : loop.error;
    if (!ec) ec = waiter.link->AddLink(*p->pair_.tx);
    if (!ec) ec = loop.link->AddFd(p->pair_.rx->fd(), [raw = p.get()] { raw->Echo(false); });
    if (ec) {
      *error = ec.message();
      return nullptr;
    }
    p->loop_ = std::move(loop.link);
    p->waiter_ = std::move(waiter.link);
    if (busy_ns != 0) {
      p->loop_->SetBusyPoll(
          [raw = p.get()](bool before_sleep) {
            if (!before_sleep && !raw->echo_spinning_) raw->pair_.rx->StartSpinning();
            raw->echo_spinning_ = !before_sleep;
            return raw->Echo(!before_sleep);
          },
          std::chrono::nanoseconds(busy_ns));
    }
    p->echo_ = std::thread([raw = p.get()] {
      pthread_setname_np(pthread_self(), "dxpu-echo");
      (void)raw->loop_->Run();
    });
    return p;
  }

  PingPong(const PingPong&) = delete;
  PingPong& operator=(const PingPong&) = delete;
  ~PingPong() {
    if (echo_.joinable()) {
      loop_->Stop();
      echo_.join();
    }
  }

  // One round trip in ns; a negative value when no answer came within kGiveUpNs.
  double RoundTrip() {
    link::Link& l = *pair_.tx;
    const uint64_t t0 = fabric::MonotonicNanos();
    if (l.Send(pair_.to, request_)) return -1;
    bool answered = false;
    const link::Link::FrameUse use = [&](std::span<const uint8_t>, const link::LinkAddress&) {
      answered = true;
    };
    bool spinning = false;
    uint64_t last_work = t0;
    for (;;) {
      // As RealTimeHost::Receive: a pass over the link, then spin or sleep.
      while ((!spinning || l.MayHaveFrame()) && l.ReceiveInPlace(scratch_, use).ok()) {
      }
      if (answered) break;
      const uint64_t now = fabric::MonotonicNanos();
      if (now - t0 >= kGiveUpNs) return -1;
      if (busy_ns_ != 0 && now - last_work < busy_ns_) {
        if (!spinning) l.StartSpinning();
        spinning = true;
        link::Spinner spinner;
        while (!l.MayHaveFrame() && fabric::MonotonicNanos() < last_work + busy_ns_)
          spinner.Pause();
        continue;
      }
      if (spinning) {
        spinning = false;  // the next pass leaves the link able to wake this thread
        continue;
      }
      waiter_->Wait(std::min(kGiveUpNs - (now - t0), kMaxSleepNs));
      last_work = fabric::MonotonicNanos();
    }
    if (spinning) {
      while (l.ReceiveInPlace(scratch_, use).ok()) {
      }
    }
    return static_cast<double>(fabric::MonotonicNanos() - t0);
  }

 private:
  explicit PingPong(uint64_t busy_ns)
      : busy_ns_(busy_ns),
        request_(kMmioRequestFrame, 0x5a),
        reply_(kMmioCompletionFrame, 0xa5),
        scratch_(DXFP_MAX_FRAME),
        echo_scratch_(DXFP_MAX_FRAME) {}

  // The answering side: every frame answered; spinning, only while the link says one waits.
  bool Echo(bool spinning) {
    link::Link& l = *pair_.rx;
    const link::Link::FrameUse use = [&](std::span<const uint8_t>, const link::LinkAddress& from) {
      (void)l.Send(from, reply_);
    };
    int n = 0;
    while (n < 64 && (!spinning || l.MayHaveFrame()) && l.ReceiveInPlace(echo_scratch_, use).ok())
      ++n;
    return n != 0;
  }

  uint64_t busy_ns_;
  fabric::RawLinkPair pair_;
  std::unique_ptr<link::EventLoop> loop_;
  std::unique_ptr<link::LinkWaiter> waiter_;
  std::thread echo_;
  bool echo_spinning_ = false;  // the echo thread's
  std::vector<uint8_t> request_;
  std::vector<uint8_t> reply_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> echo_scratch_;
};

// One path's samples as the blocks take them.
struct PathRun {
  std::string link;
  std::string path;
  std::function<double()> once;  // ns; negative: failed (error says why)
  std::vector<double> samples;
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;
  std::string error;
};

// An MMIO read of the ID register through `port`.
std::function<double()> MmioRead(dxgpu::Port& port, std::string* error) {
  return [&port, error] {
    const uint64_t t0 = fabric::MonotonicNanos();
    dxgpu::Expected<uint32_t> v = port.ReadRegister(0, regs::kId);
    const uint64_t took = fabric::MonotonicNanos() - t0;
    if (!v.ok()) {
      *error = v.status().ToString();
      return -1.0;
    }
    if (*v != regs::kIdValue) {
      *error = "register ID read back wrong";
      return -1.0;
    }
    return static_cast<double>(took);
  };
}

// What one link's paths need open while they are measured.
struct LinkSetup {
  std::unique_ptr<PingPong> ping_pong;
  std::vector<std::unique_ptr<DemoBridge>> bridges;
  std::vector<std::unique_ptr<dxgpu::Port>> ports;
};

// The blocks MeasureRoundTrips takes in all (a progress step each).
uint32_t RoundTripSteps(const RoundTripOptions& options) {
  return std::min(kBlocks, std::max(options.count, 1u));
}

// Every path on the in-memory link and UDP loopback, `count` round trips each, in blocks taken
// in turn (so that the machine's drift falls on every path alike); step() as each block ends.
std::vector<RoundTripRow> MeasureRoundTrips(const RoundTripOptions& o,
                                            const std::function<void()>& step) {
  const std::vector<std::pair<std::string, fabric::RawLinkKind>> links = {
      {"mem", fabric::RawLinkKind::kMemory}, {"udp", fabric::RawLinkKind::kUdpLoopback}};
  std::vector<LinkSetup> setups(links.size());
  std::vector<PathRun> runs;
  runs.reserve(links.size() * 3);
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string& name = links[i].first;
    LinkSetup& s = setups[i];
    PathRun pp{name, "ping-pong", {}, {}, 0, 0, {}};
    s.ping_pong = PingPong::Open(links[i].second, o.busy_poll_ns, &pp.error);
    runs.push_back(std::move(pp));
    if (s.ping_pong) runs.back().once = [p = s.ping_pong.get()] { return p->RoundTrip(); };
    for (const bool waiter_receives : {true, false}) {
      PathRun run{name, waiter_receives ? "mmio-read" : "mmio-read-worker", {}, {}, 0, 0, {}};
      DemoBridgeOptions bo;
      bo.link = name;
      bo.profiles = {o.profile};
      bo.dir = o.dir / fmt::format("rt-{}-{}", name, waiter_receives ? "waiter" : "worker");
      bo.busy_poll_ns = o.busy_poll_ns;
      std::error_code ec;
      std::filesystem::create_directories(bo.dir, ec);
      Result<std::unique_ptr<DemoBridge>> bridge = DemoBridge::Start(bo);
      if (!bridge.ok()) {
        run.error = bridge.error().message;
        runs.push_back(std::move(run));
        continue;
      }
      const host::RealTimeOptions rt{.busy_poll_ns = o.busy_poll_ns,
                                     .waiter_receives = waiter_receives};
      auto port = bridge.value()->OpenHostPort(1, 0x7e57, rt);
      s.bridges.push_back(std::move(bridge.value()));
      if (!port.ok()) {
        run.error = port.status().ToString();
        runs.push_back(std::move(run));
        continue;
      }
      s.ports.push_back(std::move(*port));
      runs.push_back(std::move(run));
      runs.back().once = MmioRead(*s.ports.back(), &runs.back().error);
    }
  }

  // Between blocks, long enough for the last path's spinning threads to go to sleep.
  const auto settle = std::chrono::nanoseconds(2 * o.busy_poll_ns);
  for (PathRun& r : runs) {
    for (uint32_t i = 0; i < kWarmUp && r.once && r.error.empty(); ++i) {
      if (r.once() < 0 && r.error.empty()) r.error = "no answer within a second";
    }
  }
  const uint32_t blocks = RoundTripSteps(o);
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint32_t n = o.count / blocks + (b < o.count % blocks ? 1 : 0);
    for (PathRun& r : runs) {
      if (!r.once || !r.error.empty()) continue;
      std::this_thread::sleep_for(settle);
      const CpuMark start = CpuMark::Take();
      for (uint32_t i = 0; i < n; ++i) {
        const double ns = r.once();
        if (ns < 0) {
          if (r.error.empty()) r.error = "no answer within a second";
          break;
        }
        r.samples.push_back(ns);
      }
      const CpuMark end = CpuMark::Take();
      r.wall_ns += end.wall_ns - start.wall_ns;
      r.cpu_ns += end.cpu_ns - start.cpu_ns;
    }
    step();
  }

  std::vector<RoundTripRow> rows;
  for (const PathRun& r : runs) {
    RoundTripRow row{r.link, r.path, Median(r.samples), 0, 0, r.error};
    if (r.wall_ns != 0) row.cpu = static_cast<double>(r.cpu_ns) / static_cast<double>(r.wall_ns);
    rows.push_back(row);
  }
  for (RoundTripRow& row : rows) {
    for (const RoundTripRow& pp : rows) {
      if (pp.link == row.link && pp.path == "ping-pong" && pp.median_ns > 0)
        row.vs_ping_pong = row.median_ns / pp.median_ns;
    }
  }
  // Ports first, then their bridges.
  for (LinkSetup& s : setups) s.ports.clear();
  for (LinkSetup& s : setups) {
    for (auto& b : s.bridges) b->Stop();
  }
  return rows;
}

// A figure and the CPU it cost.
struct Measured {
  dxgpu::Expected<double> value;
  double cpu = 0;
};

template <typename F>
Measured Measure(const F& f) {
  const CpuMark start = CpuMark::Take();
  dxgpu::Expected<double> v = f();
  return {std::move(v), CpuPerWall(start, CpuMark::Take())};
}

void Fill(Cell& c, const Measured& direct, const Measured& dxpu) {
  if (!direct.value.ok()) c.error = "direct: " + direct.value.status().ToString();
  if (!dxpu.value.ok())
    c.error += (c.error.empty() ? "" : "; ") + ("dxpu: " + dxpu.value.status().ToString());
  if (direct.value.ok()) c.direct = *direct.value;
  if (dxpu.value.ok()) c.dxpu = *dxpu.value;
  c.direct_cpu = direct.cpu;
  c.dxpu_cpu = dxpu.cpu;
}

std::string Figure(const Cell& c, double v) {
  if (c.what == "mmio-read") return fmt::format("{:.2f} us", v / 1000);
  if (c.what == "doorbell") return fmt::format("{:.2f} M/s", v / 1e6);
  return fmt::format("{:.2f} GB/s", v / 1e9);
}

std::string SizeText(uint64_t s) {
  if (s == 0) return "";
  if (s >= (1u << 20)) return fmt::format("{} MiB", s >> 20);
  return fmt::format("{} KiB", s >> 10);
}

// The figures as JSON; true when one failed.
bool PrintJson(const BenchGpuArgs& args, const std::vector<Cell>& cells,
               const std::vector<RoundTripRow>& trips) {
  bool failed = false;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Cell& c : cells) {
    nlohmann::ordered_json r{{"what", c.what},
                             {"size", c.size},
                             {"unit", c.what == "mmio-read"  ? "ns"
                                      : c.what == "doorbell" ? "writes/s"
                                                             : "bytes/s"},
                             {"direct", c.direct},
                             {"dxpu", c.dxpu},
                             {"ratio", c.Ratio()},
                             {"direct_cpu", c.direct_cpu},
                             {"dxpu_cpu", c.dxpu_cpu}};
    if (!c.error.empty()) r["error"] = c.error;
    failed |= !c.error.empty();
    rows.push_back(r);
  }
  nlohmann::ordered_json round_trips = nlohmann::ordered_json::array();
  for (const RoundTripRow& t : trips) {
    nlohmann::ordered_json r{{"link", t.link},
                             {"path", t.path},
                             {"median_ns", t.median_ns},
                             {"cpu", t.cpu},
                             {"vs_ping_pong", t.vs_ping_pong}};
    if (!t.error.empty()) r["error"] = t.error;
    failed |= !t.error.empty();
    round_trips.push_back(r);
  }
  std::cout << nlohmann::ordered_json{{"link", args.link},
                                      {"profile", args.profile},
                                      {"busy_poll", args.busy_poll},
                                      {"results", rows},
                                      {"round_trip_frames",
                                       {{"request", kMmioRequestFrame},
                                        {"completion", kMmioCompletionFrame}}},
                                      {"round_trips", round_trips}}
                   .dump(2)
            << '\n';
  return failed;
}

// The figures as tables; true when one failed.
bool PrintText(const BenchGpuArgs& args, const std::vector<Cell>& cells,
               const std::vector<RoundTripRow>& trips) {
  bool failed = false;
  std::cout << fmt::format(
      "direct: {} on an ideal local link; dxpu: host proxy, DxFP over {}, "
      "dxpu-bridge (this process); busy polling {}\n",
      args.profile, args.link, args.busy_poll ? "on" : "off");
  std::cout << fmt::format("{:<10} {:>8} {:>14} {:>5} {:>14} {:>5} {:>8}\n", "what", "size",
                           "direct", "cpu", "dxpu", "cpu", "ratio");
  for (const Cell& c : cells) {
    failed |= !c.error.empty();
    std::cout << fmt::format("{:<10} {:>8} {:>14} {:>5.2f} {:>14} {:>5.2f} {:>8.3f}{}\n", c.what,
                             SizeText(c.size), Figure(c, c.direct), c.direct_cpu, Figure(c, c.dxpu),
                             c.dxpu_cpu, c.Ratio(), c.error.empty() ? "" : "  " + c.error);
  }
  std::cout << "ratio: dxpu / direct (for mmio-read, the round trip: higher is slower)\n\n";
  std::cout << fmt::format(
      "MMIO read against the bare link's ping-pong of the same frames ({} B out, {} B back), "
      "median of {}, taken in turns:\n",
      kMmioRequestFrame, kMmioCompletionFrame, args.mmio_reads);
  std::cout << fmt::format("{:<5} {:<18} {:>12} {:>5} {:>13}\n", "link", "path", "median", "cpu",
                           "/ ping-pong");
  for (const RoundTripRow& t : trips) {
    failed |= !t.error.empty();
    std::cout << fmt::format("{:<5} {:<18} {:>9.2f} us {:>5.2f} {:>13.3f}{}\n", t.link, t.path,
                             t.median_ns / 1000, t.cpu, t.vs_ping_pong,
                             t.error.empty() ? "" : "  " + t.error);
  }
  std::cout << "mmio-read: the waiting caller receives its answer; mmio-read-worker: the host "
               "proxy's worker does and wakes it\n"
               "cpu: CPU seconds this process used per wall second while the figure was "
               "measured (all its threads)\n";
  return failed;
}

int RunBenchGpu(const BenchGpuArgs& args) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("dxpu-bench-{}", getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  DemoBridgeOptions bo;
  bo.link = args.link;
  bo.profiles = {args.profile};
  bo.dir = dir;
  const uint64_t busy_ns = args.busy_poll ? kBusyPollNs : 0;
  bo.busy_poll_ns = busy_ns;
  Result<std::unique_ptr<DemoBridge>> box = DemoBridge::Start(bo);
  if (!box.ok()) {
    std::cerr << "dxpu bench gpu: " << box.error().message << "\n";
    return kExitFailure;
  }
  auto dxpu_port =
      box.value()->OpenHostPort(1, kBenchHostNode, host::RealTimeOptions{.busy_poll_ns = busy_ns});
  auto direct_port = host::OpenDirectPort({{args.profile}});
  if (!dxpu_port.ok() || !direct_port.ok()) {
    std::cerr << "dxpu bench gpu: "
              << (dxpu_port.ok() ? direct_port.status() : dxpu_port.status()).ToString() << "\n";
    return kExitFailure;
  }
  auto dxpu_rt = dxgpu::Runtime::Open(std::move(*dxpu_port));
  auto direct_rt = dxgpu::Runtime::Open(std::move(*direct_port));
  if (!dxpu_rt.ok() || !direct_rt.ok()) {
    std::cerr << "dxpu bench gpu: "
              << (dxpu_rt.ok() ? direct_rt.status() : dxpu_rt.status()).ToString() << "\n";
    return kExitFailure;
  }
  PortBench direct(**direct_rt, args);
  PortBench dxpu(**dxpu_rt, args);

  std::vector<Cell> cells;
  std::vector<bool> directions;
  if (args.direction != "d2h") directions.push_back(true);
  if (args.direction != "h2d") directions.push_back(false);
  const RoundTripOptions ro{args.profile, args.mmio_reads, busy_ns, dir};
  const uint64_t total = 2 + directions.size() * args.sizes.size() + RoundTripSteps(ro);
  Progress progress("bench gpu");
  uint64_t done = 0;
  {
    Cell c{"mmio-read", 0, 0, 0, false, {}, 0, 0};
    Fill(c, Measure([&] { return direct.MmioReadNs(); }),
         Measure([&] { return dxpu.MmioReadNs(); }));
    cells.push_back(c);
    progress.Update(++done, total);
  }
  {
    Cell c{"doorbell", 0, 0, 0, true, {}, 0, 0};
    Fill(c, Measure([&] { return direct.DoorbellsPerSecond(); }),
         Measure([&] { return dxpu.DoorbellsPerSecond(); }));
    cells.push_back(c);
    progress.Update(++done, total);
  }
  for (bool h2d : directions) {
    for (uint64_t size : args.sizes) {
      Cell c{h2d ? "h2d" : "d2h", size, 0, 0, true, {}, 0, 0};
      Fill(c, Measure([&] { return direct.CopyBytesPerSecond(h2d, size); }),
           Measure([&] { return dxpu.CopyBytesPerSecond(h2d, size); }));
      cells.push_back(c);
      progress.Update(++done, total);
    }
  }
  dxpu_rt->reset();
  direct_rt->reset();
  box.value()->Stop();
  const std::vector<RoundTripRow> trips =
      MeasureRoundTrips(ro, [&] { progress.Update(++done, total); });
  fs::remove_all(dir, ec);

  const bool failed = args.json ? PrintJson(args, cells, trips) : PrintText(args, cells, trips);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

std::function<int()> AddBenchGpuCommand(CLI::App& bench, CLI::App** app) {
  auto args = std::make_shared<BenchGpuArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "gpu",
      "A borrowed GPU against a local one, in one run: MMIO read round trip (median), posted "
      "MMIO write (doorbell) rate, and H2D/D2H bandwidth of synchronous copies from pinned "
      "memory by size, each through the direct port (the GPU model on an ideal local link) and "
      "through DxPU (userspace host proxy, DxFP over --link, a dxpu-bridge in this process), "
      "with the ratio dxpu/direct. Both sides run the same GPU model on this machine's CPU. "
      "Then the MMIO read against the bare link's own ping-pong of frames of the same sizes, on "
      "the in-memory link and on UDP loopback, taken in turns (--mmio-reads of each), with the "
      "ratio. Every figure has the CPU it cost beside it (CPU seconds per wall second).");
  cmd->add_option("--link", args->link, "the DxPU side's link: mem, udp (loopback) or unix")
      ->check(CLI::IsMember({"mem", "udp", "unix"}))
      ->capture_default_str();
  cmd->add_option("--profile", args->profile, "GPU model profile")->capture_default_str();
  cmd->add_option("--size", args->sizes,
                  "copy sizes in bytes, 4 B .. 1 GiB (default 4 KiB .. 64 MiB)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--mmio-reads", args->mmio_reads, "register reads to time")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  cmd->add_option("--doorbells", args->doorbells, "posted register writes to time")
      ->check(CLI::Range(1u, 10'000'000u))
      ->capture_default_str();
  cmd->add_option("--min-bytes", args->min_bytes, "bytes each bandwidth cell copies at least")
      ->capture_default_str();
  cmd->add_option("--direction", args->direction, "copies to time: h2d, d2h or both")
      ->check(CLI::IsMember({"h2d", "d2h", "both"}))
      ->capture_default_str();
  cmd->add_flag("--busy-poll", args->busy_poll,
                "busy polling everywhere it is fair: the host proxy's threads, the bridge's loop "
                "and both ends of the ping-pong spin on their links for up to 500us after the "
                "last frame before they sleep (lower round trips for a core's worth of CPU each: "
                "see the cpu columns)");
  cmd->add_flag("--json", args->json, "print the results as JSON");
  cmd->footer(
      "Examples:\n"
      "  dxpu bench gpu\n"
      "  dxpu bench gpu --link udp --size 65536 --size 67108864 --json\n"
      "  dxpu bench gpu --busy-poll --size 4096");
  *app = cmd;
  return [args] { return RunBenchGpu(*args); };
}

}  // namespace dxpu::cli
