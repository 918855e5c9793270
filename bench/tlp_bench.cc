// TLP codec and CRC32C throughput. Each codec case runs beside a baseline in
// the same process: copying the same bytes (memcpy into a struct-sized
// buffer), so the summary reads as "decode costs N copies" as well as ns/TLP.
// Aim (issue 2): decode >= 30 M headers/s on one core.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "core/crc32c.h"
#include "core/tlp_codec.h"

namespace {

struct Case {
  const char* name;
  dxpu_tlp tlp;
};

std::array<uint8_t, 4096> g_payload{};

dxpu_tlp make_mwr32() {  // doorbell-style posted write: 3DW header, 1 DW
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.requester_id = DXPU_BDF(0, 0, 0);
  t.addr = 0xf0000040;
  t.length_dw = 1;
  t.first_be = 0xf;
  t.payload = g_payload.data();
  return t;
}

dxpu_tlp make_mrd64() {  // DMA read at MRRS 512 from a 64-bit address
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MRD;
  t.requester_id = DXPU_BDF(1, 0, 0);
  t.tag = 0x123;
  t.addr = 0x123456000ULL;
  t.length_dw = 128;
  t.first_be = 0xf;
  t.last_be = 0xf;
  return t;
}

dxpu_tlp make_cpld256() {  // read completion with 256 bytes
  dxpu_tlp t{};
  t.kind = DXPU_TLP_CPLD;
  t.completer_id = DXPU_BDF(0, 0, 0);
  t.requester_id = DXPU_BDF(1, 0, 0);
  t.tag = 0x123;
  t.length_dw = 64;
  t.byte_count = 512;
  t.lower_addr = 0;
  t.payload = g_payload.data();
  return t;
}

const Case& get_case(int i) {
  static const std::array<Case, 3> cases = {{
      {"MWr3DW_4B", make_mwr32()},
      {"MRd4DW", make_mrd64()},
      {"CplD_256B", make_cpld256()},
  }};
  return cases.at(static_cast<size_t>(i));
}

std::vector<uint8_t> wire_of(const dxpu_tlp& t) {
  std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  if (dxpu_tlp_encode(&t, buf.data(), buf.size(), &len) != DXPU_TLP_OK) std::abort();
  buf.resize(len);
  return buf;
}

void BM_Decode(benchmark::State& state) {
  const Case& c = get_case(static_cast<int>(state.range(0)));
  std::vector<uint8_t> wire = wire_of(c.tlp);
  dxpu_tlp out{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire.data());
    dxpu_tlp_err err = dxpu_tlp_decode(wire.data(), wire.size(), &out);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(c.name);
}

void BM_Encode(benchmark::State& state) {
  const Case& c = get_case(static_cast<int>(state.range(0)));
  std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(&c.tlp);
    dxpu_tlp_err err = dxpu_tlp_encode(&c.tlp, buf.data(), buf.size(), &len);
    benchmark::DoNotOptimize(err);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(c.name);
}

// Baseline: copy the header into a struct-sized buffer (what any decoder
// must at least touch), and for data TLPs nothing more: decode is zero-copy.
void BM_BaselineCopyHeader(benchmark::State& state) {
  const Case& c = get_case(static_cast<int>(state.range(0)));
  std::vector<uint8_t> wire = wire_of(c.tlp);
  size_t hdr = dxpu_tlp_header_len(&c.tlp);
  alignas(8) uint8_t out[sizeof(dxpu_tlp)];
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire.data());
    std::memcpy(out, wire.data(), hdr);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(c.name);
}

// CRC32C over one frame-sized buffer of random bytes (fixed seed). Each call
// continues from the previous call's result, as a frame's CRC is waited for
// (stored into the frame before the send, compared after the receive): calls
// cannot overlap in the CPU, so this is the time of one frame's CRC, not the
// throughput of many independent ones (which a small frame would overstate).
void crc_bench(benchmark::State& state, uint32_t (*crc_fn)(uint32_t, const void*, size_t)) {
  std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)));
  std::mt19937 rng(1);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc_fn(crc, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

// dxpu_crc32c(): carry-less multiplication folding beside crc32 chains where the CPU has
// them (dxpu_crc32c_impl_name() says which), three interleaved crc32 chains below that.
void BM_Crc32c(benchmark::State& state) { crc_bench(state, dxpu_crc32c); }

// The previous hardware paths: three interleaved crc32 chains, and one dependent chain.
void BM_Crc32c3Way(benchmark::State& state) { crc_bench(state, dxpu_crc32c_hw_3way); }
void BM_Crc32cSingle(benchmark::State& state) { crc_bench(state, dxpu_crc32c_hw_single); }

// Portable slicing-by-8 (the kernel's path).
void BM_Crc32cPortable(benchmark::State& state) { crc_bench(state, dxpu_crc32c_portable); }

void BM_BaselineMemcpy(benchmark::State& state) {
  std::vector<uint8_t> src(static_cast<size_t>(state.range(0)), 0x5a);
  std::vector<uint8_t> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(BM_Decode)->DenseRange(0, 2);
BENCHMARK(BM_Encode)->DenseRange(0, 2);
BENCHMARK(BM_BaselineCopyHeader)->DenseRange(0, 2);
// Frame sizes: a small frame, a 256 B write's frame, an Ethernet MTU, a 4 KiB TLP,
// DXFP_MAX_FRAME.
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);
BENCHMARK(BM_Crc32c3Way)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);
BENCHMARK(BM_Crc32cSingle)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);
BENCHMARK(BM_BaselineMemcpy)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);

// Console output as usual, then a summary: rate per case and the ratio to
// the baseline measured in this same run.
class TlpSummary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& r) override {
    ns_[r.run_name.str()] = r.GetAdjustedRealTime();
    label_[r.run_name.str()] = r.report_label;
  }

  void Summarize() override {
    std::printf("\nTLP codec summary (one core):\n");
    std::printf("  %-10s %-7s %9s %12s %16s\n", "case", "op", "ns/TLP", "M TLP/s",
                "x baseline copy");
    int decodes = 0;
    bool aim_met = true;
    for (int i = 0; i < 3; ++i) {
      std::string base = "BM_BaselineCopyHeader/" + std::to_string(i);
      for (const char* op : {"Decode", "Encode"}) {
        std::string key = std::string("BM_") + op + "/" + std::to_string(i);
        if (!ns_.contains(key) || !ns_.contains(base)) continue;
        double ns = ns_[key];
        std::printf("  %-10s %-7s %9.2f %12.1f %16.1f\n", label_[key].c_str(), op, ns, 1e3 / ns,
                    ns / ns_[base]);
        if (std::string(op) == "Decode") {
          ++decodes;
          aim_met = aim_met && 1e3 / ns >= 30.0;
        }
      }
    }
    if (decodes > 0) {
      std::printf("  aim: decode >= 30 M headers/s on one core: %s\n", aim_met ? "met" : "NOT met");
    }
    bool crc_header = false;
    for (const char* n : {"64", "256", "1500", "4096", "9216"}) {
      const std::string crc = std::string("BM_Crc32c/") + n;
      const std::string three = std::string("BM_Crc32c3Way/") + n;
      const std::string one = std::string("BM_Crc32cSingle/") + n;
      const std::string port = std::string("BM_Crc32cPortable/") + n;
      const std::string cpy = std::string("BM_BaselineMemcpy/") + n;
      if (!ns_.contains(crc) || !ns_.contains(three) || !ns_.contains(one) || !ns_.contains(port))
        continue;
      if (!crc_header) {
        std::printf(
            "\nCRC32C (dxpu_crc32c: %s), GB/s (one core; each call continues from the "
            "previous result):\n",
            dxpu_crc32c_impl_name());
        std::printf("  %6s %8s %8s %8s %9s %11s %13s %9s\n", "bytes", "crc32c", "3-chain",
                    "1-chain", "portable", "vs 3-chain", "vs portable", "x memcpy");
        crc_header = true;
      }
      const double bytes = std::stod(n);
      std::printf("  %6s %8.2f %8.2f %8.2f %9.2f %10.2fx %12.2fx", n, bytes / ns_[crc],
                  bytes / ns_[three], bytes / ns_[one], bytes / ns_[port], ns_[three] / ns_[crc],
                  ns_[port] / ns_[crc]);
      if (ns_.contains(cpy)) std::printf(" %8.1fx", ns_[crc] / ns_[cpy]);
      std::printf("\n");
    }
    if (crc_header && !dxpu_crc32c_hw_available()) {
      std::printf("  (no CRC32C instruction on this CPU: all are the portable code)\n");
    }
  }

 private:
  std::map<std::string, double> ns_;
  std::map<std::string, std::string> label_;
};

}  // namespace

int main(int argc, char** argv) {
  TlpSummary reporter;
  return dxpu::bench::RunBenchmarks(argc, argv, &reporter);
}
