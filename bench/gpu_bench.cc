// gpu_bench.cc - COPY bandwidth of the GPU model (lib/gpu/gpu_device.h) driven by the
// in-process host (lib/gpu/test_host.h), host to device and device to host, against memcpy of
// the same bytes in the same run. What it measures is the model's cost per byte on one core:
// every TLP built, handed over, matched and applied, at MPS 256 / MRRS 512 (RCB 64) - the
// bound on how fast a simulated GPU can move data, not a GPU's speed (the model's own time
// for the copy is the virtual clock's business).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "gpu/commands.h"
#include "gpu/gpu_device.h"
#include "gpu/gpu_registers.h"
#include "gpu/test_host.h"

namespace {

using dxpu::gpu::GpuDevice;
using dxpu::gpu::PushbufferBuilder;
using dxpu::gpu::TestHost;
namespace regs = dxpu::gpu::regs;

constexpr uint64_t kBytes = 16 << 20;
constexpr uint64_t kRing = uint64_t{1} << 32;
constexpr uint64_t kPushbuffer = kRing + (1 << 20);
constexpr uint64_t kSemaphore = kRing + (2 << 20);
constexpr uint64_t kHostBuffer = uint64_t{8} << 32;
constexpr uint32_t kRingEntries = 64;

// A dxgpu with its channel set up, and the host around it.
struct Rig {
  std::unique_ptr<GpuDevice> device;
  std::unique_ptr<TestHost> host;
  uint32_t put = 0;
  uint64_t releases = 0;

  Rig() {
    device = GpuDevice::Create(*dxpu::gpu::FindProfile("dxgpu"), {});
    host = std::make_unique<TestHost>(*device);
    host->Enumerate();
    host->Mmio32Write(regs::kGpfifoBaseLo, static_cast<uint32_t>(kRing));
    host->Mmio32Write(regs::kGpfifoBaseHi, static_cast<uint32_t>(kRing >> 32));
    host->Mmio32Write(regs::kGpfifoEntries, kRingEntries);
    host->Mmio32Write(regs::kControl, regs::kControlEnable);
  }

  // One COPY and a semaphore release; false if the release did not land.
  bool Copy(uint32_t flags, uint64_t src, uint64_t dst) {
    const std::vector<uint8_t> pb =
        PushbufferBuilder()
            .Copy({.flags = flags, .size = kBytes, .src = src, .dst = dst})
            .Semaphore(
                {.address = kSemaphore, .payload = ++releases, .flags = dxpu::gpu::kSemaphore64})
            .bytes();
    host->memory().Write(kPushbuffer, pb);
    host->memory().Write(
        kRing + uint64_t{put} * 16,
        dxpu::gpu::EncodeGpfifoEntry(
            {.pushbuffer = kPushbuffer, .length = static_cast<uint32_t>(pb.size()), .flags = 0}));
    put = (put + 1) % kRingEntries;
    host->Mmio32Write(regs::kGpPut, put);
    host->RunUntilIdle();
    uint64_t seen = 0;
    std::vector<uint8_t> b(8);
    host->memory().Read(kSemaphore, b);
    std::memcpy(&seen, b.data(), 8);
    return seen == releases && device->channel_error() == dxpu::gpu::ChannelError::kNone;
  }
};

std::vector<uint8_t> RandomBytes(size_t n) {
  std::mt19937_64 rng(42);  // NOLINT(cert-msc32-c,cert-msc51-cpp): the same bytes each run
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(&v[i], &r, 8);
  }
  return v;
}

void BM_CopyHostToDevice(benchmark::State& state) {
  Rig rig;
  const std::vector<uint8_t> data = RandomBytes(kBytes);
  rig.host->memory().Write(kHostBuffer, data);
  for (auto _ : state) {
    if (!rig.Copy(dxpu::gpu::kCopySrcHost, kHostBuffer, 0)) {
      state.SkipWithError("the copy did not complete");
      return;
    }
  }
  std::vector<uint8_t> check(kBytes);
  rig.device->ReadMemory(0, check);
  if (check != data) state.SkipWithError("device memory differs");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

void BM_CopyDeviceToHost(benchmark::State& state) {
  Rig rig;
  const std::vector<uint8_t> data = RandomBytes(kBytes);
  rig.device->WriteMemory(0, data);
  for (auto _ : state) {
    if (!rig.Copy(dxpu::gpu::kCopyDstHost, 0, kHostBuffer)) {
      state.SkipWithError("the copy did not complete");
      return;
    }
  }
  std::vector<uint8_t> check(kBytes);
  rig.host->memory().Read(kHostBuffer, check);
  if (check != data) state.SkipWithError("host memory differs");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

// The baseline: memcpy of the same number of bytes between two buffers.
void BM_Memcpy(benchmark::State& state) {
  const std::vector<uint8_t> src = RandomBytes(kBytes);
  std::vector<uint8_t> dst(kBytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

BENCHMARK(BM_CopyHostToDevice)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyDeviceToHost)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);

class GpuSummary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& r) override {
    rate_[r.run_name.function_name] = Counter(r, "bytes_per_second");
  }
  void Summarize() override {
    const double base = rate_["BM_Memcpy"];
    std::printf("\nGPU model COPY of 16 MiB through the in-process host (one core):\n");
    std::printf("  %-22s %12s %16s\n", "case", "GB/s", "x memcpy time");
    for (const char* name : {"BM_CopyHostToDevice", "BM_CopyDeviceToHost", "BM_Memcpy"}) {
      if (!rate_.contains(name) || rate_[name] <= 0) continue;
      const double r = rate_[name];
      std::printf("  %-22s %12.2f %16.1f\n", name + 3, r / 1e9, base > 0 ? base / r : 0.0);
    }
  }

 private:
  std::map<std::string, double> rate_;
};

}  // namespace

int main(int argc, char** argv) {
  GpuSummary summary;
  return dxpu::bench::RunBenchmarks(argc, argv, &summary);
}
