// bridge_bench.cc - translation throughput of the bridge's golden data plane
// (bridge-fw/golden_datapath.h): decisions per second on one core, against copying the same
// TLP structs in the same run. Aim (issue 4): >= 20 M lookups/s per core.
//
// A bridge with 32 devices held by 16 hosts, each device with 2 BAR windows and 16 DMA
// windows. Cases:
//   host MWr    a host's posted write into a BAR: BAR window lookup, ID rewrite
//   device MWr  a device's DMA write: DMA window lookup, ID rewrite, route to the owner
//   MRd + CplD  a host's read and the device's completion: tag taken and freed (two decisions)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "bridge-fw/golden_datapath.h"

namespace {

using dxpu::bridge::Decision;
using dxpu::bridge::DeviceIndex;
using dxpu::bridge::GoldenDatapath;
using dxpu::bridge::HostSlot;
using dxpu::bridge::Route;

constexpr int kDevices = 32;
constexpr int kHosts = 16;
constexpr int kAddresses = 1024;  // distinct addresses cycled through, spread over the windows

std::unique_ptr<GoldenDatapath> MakeBridge() {
  dxpu::bridge::GoldenDatapathConfig c;
  c.devices = kDevices;
  c.host_slots = kHosts;
  c.box_tags = 1024;
  auto dp = GoldenDatapath::Create(c);
  for (int d = 0; d < kDevices; ++d) {
    const auto dev = static_cast<DeviceIndex>(d);
    const auto host = static_cast<HostSlot>(d % kHosts);
    // Two devices per host: the second's BARs sit above the first's.
    const uint64_t slot = static_cast<uint64_t>(d / kHosts);
    dp->SetDevice(dev, {.box_rid = static_cast<uint16_t>((d + 1) << 8),
                        .host_rid = static_cast<uint16_t>(0x0008 + slot * 8),
                        .owner = host});
    dp->SetBarWindow(dev, 0,
                     {.host_base = 0xe000'0000 + slot * (16u << 20),
                      .device_base = 0x9000'0000 + uint64_t(d) * (16u << 20),
                      .size = 16u << 20});
    dp->SetBarWindow(dev, 1,
                     {.host_base = 0x40'0000'0000 + slot * (1ull << 34),
                      .device_base = 0x80'0000'0000 + uint64_t(d) * (1ull << 34),
                      .size = 1ull << 34});
    for (uint64_t w = 0; w < 16; ++w) {
      dp->AddDmaWindow(dev, {.device_base = 0x1'0000'0000 + w * (1u << 24),
                             .host_base = 0x1'0000'0000 + w * (1u << 24),
                             .size = 1u << 20});
    }
  }
  return dp;
}

dxpu_tlp Write(uint16_t requester, uint64_t addr) {
  static const uint8_t kData[64] = {};
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.requester_id = requester;
  t.addr = addr;
  t.length_dw = 16;
  t.first_be = 0xf;
  t.last_be = 0xf;
  t.payload = kData;
  return t;
}

// Host writes spread over both BARs of every host's devices.
std::vector<std::pair<HostSlot, dxpu_tlp>> HostWrites() {
  std::vector<std::pair<HostSlot, dxpu_tlp>> v;
  for (int i = 0; i < kAddresses; ++i) {
    const auto host = static_cast<HostSlot>(i % kHosts);
    const uint64_t slot = static_cast<uint64_t>((i / kHosts) % 2);
    const uint64_t addr = (i % 3 == 0) ? 0xe000'0000 + slot * (16u << 20) + (i * 256) % (16u << 20)
                                       : 0x40'0000'0000 + slot * (1ull << 34) + uint64_t(i) * 4096;
    v.emplace_back(host, Write(0, addr));
  }
  return v;
}

void BM_HostWrite(benchmark::State& state) {
  auto dp = MakeBridge();
  const auto writes = HostWrites();
  size_t i = 0;
  for (auto _ : state) {
    const auto& [host, tlp] = writes[i++ % writes.size()];
    Decision d = dp->FromHost(host, tlp, 0);
    benchmark::DoNotOptimize(d);
  }
  if (dp->counters().dropped != 0) state.SkipWithError("a write was refused");
  state.SetItemsProcessed(state.iterations());
}

void BM_DeviceWrite(benchmark::State& state) {
  auto dp = MakeBridge();
  std::vector<std::pair<DeviceIndex, dxpu_tlp>> writes;
  for (int i = 0; i < kAddresses; ++i) {
    const int d = i % kDevices;
    const uint64_t w = static_cast<uint64_t>(i % 16);
    writes.emplace_back(static_cast<DeviceIndex>(d),
                        Write(static_cast<uint16_t>((d + 1) << 8),
                              0x1'0000'0000 + w * (1u << 24) + (i * 64) % (1u << 20)));
  }
  size_t i = 0;
  for (auto _ : state) {
    const auto& [dev, tlp] = writes[i++ % writes.size()];
    Decision d = dp->FromDevice(dev, tlp, 0);
    benchmark::DoNotOptimize(d);
  }
  if (dp->counters().dropped != 0) state.SkipWithError("a DMA write was refused");
  state.SetItemsProcessed(state.iterations());
}

// Two decisions per iteration: the read (tag taken) and its completion (tag freed).
void BM_ReadAndCompletion(benchmark::State& state) {
  auto dp = MakeBridge();
  std::vector<std::pair<HostSlot, dxpu_tlp>> reads;
  for (auto [host, w] : HostWrites()) {
    w.kind = DXPU_TLP_MRD;
    w.payload = nullptr;
    w.tag = static_cast<uint16_t>(reads.size() % 256);
    reads.emplace_back(host, w);
  }
  static const uint8_t kData[64] = {};
  size_t i = 0;
  for (auto _ : state) {
    const auto& [host, tlp] = reads[i++ % reads.size()];
    const Decision r = dp->FromHost(host, tlp, 0);
    dxpu_tlp cpl{};
    cpl.kind = DXPU_TLP_CPLD;
    cpl.requester_id = r.tlp.requester_id;
    cpl.tag = r.tlp.tag;
    cpl.completer_id = static_cast<uint16_t>((r.port + 1) << 8);
    cpl.length_dw = 16;
    cpl.byte_count = 64;
    cpl.payload = kData;
    Decision c = dp->FromDevice(r.port, cpl, 0);
    benchmark::DoNotOptimize(c);
  }
  if (dp->counters().dropped != 0 || dp->counters().retries != 0)
    state.SkipWithError("a read or completion was refused");
  state.SetItemsProcessed(2 * state.iterations());
}

// The baseline: copying the same TLP structs into a Decision, no lookup.
void BM_BaselineCopy(benchmark::State& state) {
  const auto writes = HostWrites();
  size_t i = 0;
  for (auto _ : state) {
    Decision d{
        Route::kDevice, writes[i % writes.size()].first, {}, writes[i % writes.size()].second};
    ++i;
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_HostWrite);
BENCHMARK(BM_DeviceWrite);
BENCHMARK(BM_ReadAndCompletion);
BENCHMARK(BM_BaselineCopy);

class BridgeSummary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& r) override {
    rate_[r.run_name.function_name] = Counter(r, "items_per_second");
  }
  void Summarize() override {
    const double base = rate_["BM_BaselineCopy"];
    std::printf("\nBridge translation, golden model (one core):\n");
    std::printf("  %-22s %14s %14s\n", "case", "M decisions/s", "x copy time");
    bool met = true;
    int cases = 0;
    for (const char* name : {"BM_HostWrite", "BM_DeviceWrite", "BM_ReadAndCompletion"}) {
      if (!rate_.contains(name) || rate_[name] <= 0) continue;
      const double r = rate_[name];
      std::printf("  %-22s %14.1f %14.1f\n", name + 3, r / 1e6, base > 0 ? base / r : 0.0);
      met = met && r >= 20e6;
      ++cases;
    }
    if (cases > 0) std::printf("  aim: >= 20 M lookups/s per core: %s\n", met ? "met" : "NOT met");
  }

 private:
  std::map<std::string, double> rate_;
};

}  // namespace

int main(int argc, char** argv) {
  BridgeSummary summary;
  return dxpu::bench::RunBenchmarks(argc, argv, &summary);
}
