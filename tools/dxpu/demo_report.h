// demo_report.h - what `dxpu demo` found, as a value, and its three renderings: the table on
// the terminal, a JSON document, an SVG bar chart of the overheads.
#ifndef DXPU_TOOLS_DXPU_DEMO_REPORT_H_
#define DXPU_TOOLS_DXPU_DEMO_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "demo_pool.h"
#include "dxgpu/stats.h"

namespace dxpu::cli {

// One workload on one port.
struct DemoRun {
  bool ok = false;
  std::string error;
  uint64_t elapsed_ns = 0;
  uint32_t iterations = 0;
  double max_abs_error = 0;
  dxgpu::Stats stats;
};

// The same workload in the simulator at one added one-way latency.
struct DemoSimRun {
  uint64_t added_latency_ns = 0;
  DemoRun native;
  DemoRun dxpu;
};

struct DemoRow {
  std::string name;
  std::string description;
  DemoRun native;
  DemoRun dxpu;
  std::vector<DemoSimRun> simulated;
};

struct DemoDevice {
  std::string profile;
  std::string location;
  uint64_t memory_bytes = 0;
};

struct DemoReport {
  std::string link;                 // udp | unix | mem
  std::string datapath = "golden";  // the bridge's data plane: golden | rtl
  std::string bridge;               // where the box listens
  size_t box_gpus = 0;
  std::vector<DemoDevice> native_devices;
  std::vector<DemoDevice> dxpu_devices;
  uint64_t sim_bandwidth_bps = 0;
  std::vector<DemoRow> rows;
  PoolScene pool;  // the multi-host scene through the pool manager
  double wall_seconds = 0;

  bool ok() const;
};

// (dxpu - native) / native in percent; 0 when native is 0.
double OverheadPercent(uint64_t native_ns, uint64_t dxpu_ns);

// A run's runtime statistics: {"launch": {"calls", "ns", "bytes"}, ..., "submissions"}.
nlohmann::ordered_json StatsJson(const dxgpu::Stats& s);

std::string DemoTable(const DemoReport& report);
nlohmann::ordered_json DemoJson(const DemoReport& report);
std::string DemoSvg(const DemoReport& report);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_REPORT_H_
