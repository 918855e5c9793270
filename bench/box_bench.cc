// box_bench.cc - GPU-model DMA bandwidth through the whole GPU box: a test host's session,
// the bridge (sessions, data plane, BAR emulation) and a dxgpu's copy engines, over in-memory
// links on one core, against memcpy of the same bytes in the same run (docs/dxgpu.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "box_world.h"
#include "gpu/device_profile.h"
#include "gpu_driver.h"

namespace {

using dxpu::test::BoxWorld;
using dxpu::test::GpuDriver;
using dxpu::test::Pushbuffer;

constexpr uint64_t kHostBuf = 0x1'0000'0000;
constexpr uint64_t kBytes = 16ULL << 20;

// One box with one dxgpu, one host holding it, brought up, with a granted buffer.
struct Rig {
  std::unique_ptr<BoxWorld> world;
  std::unique_ptr<GpuDriver> driver;
  bool ok = false;

  Rig() {
    dxpu::bridge::BridgeBoxConfig c;
    c.node_id = 0xb0c5;
    c.epoch = 1;
    dxpu::bridge::BoxDeviceConfig d;
    d.profile = *dxpu::gpu::FindProfile("dxgpu");
    d.box_bdf = 0x0100;
    d.memory_bytes = 64ULL << 20;
    c.devices.push_back(d);
    world = std::make_unique<BoxWorld>(c, dxpu::test::Transport::kMemoryLink);
    dxpu::test::TestHost& h = world->AddHost(0xa0);
    if (!world->Connect(h) ||
        world->box().Assign(0, 0xa0, 0x0100) != dxpu::bridge::ManageResult::kOk)
      return;
    driver = std::make_unique<GpuDriver>(*world, h, 0x0100);
    if (!driver->BringUp(0).empty()) return;
    h.AddMemory(kHostBuf, kBytes);
    ok = world->box().GrantDma(0, {kHostBuf, kHostBuf, kBytes}) == dxpu::bridge::ManageResult::kOk;
  }
};

void Copy(benchmark::State& state, bool to_device) {
  Rig rig;
  if (!rig.ok) {
    state.SkipWithError("the box did not come up");
    return;
  }
  for (auto _ : state) {
    Pushbuffer pb;
    if (to_device) {
      pb.Copy(true, false, kBytes, kHostBuf, 0);
    } else {
      pb.Copy(false, true, kBytes, 0, kHostBuf);
    }
    if (!rig.driver->Run(pb, 60'000'000'000ULL)) {
      state.SkipWithError("the copy did not complete");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

void BM_CopyHostToDevice(benchmark::State& state) { Copy(state, true); }
void BM_CopyDeviceToHost(benchmark::State& state) { Copy(state, false); }

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> src(kBytes, 1), dst(kBytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

BENCHMARK(BM_CopyHostToDevice)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyDeviceToHost)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

class BoxSummary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& r) override {
    rate_[r.run_name.function_name] = Counter(r, "bytes_per_second");
  }
  void Summarize() override {
    const double base = rate_["BM_Memcpy"];
    std::printf("\nGPU-model DMA through the box (16 MiB copies, in-memory links, one core):\n");
    std::printf("  %-22s %10s %16s\n", "case", "GB/s", "x memcpy rate");
    for (const char* name : {"BM_CopyHostToDevice", "BM_CopyDeviceToHost", "BM_Memcpy"}) {
      if (!rate_.contains(name) || rate_[name] <= 0) continue;
      const double r = rate_[name];
      std::printf("  %-22s %10.3f %16.4f\n", name + 3, r / 1e9, base > 0 ? r / base : 0.0);
    }
  }

 private:
  std::map<std::string, double> rate_;
};

}  // namespace

int main(int argc, char** argv) {
  BoxSummary summary;
  return dxpu::bench::RunBenchmarks(argc, argv, &summary);
}
