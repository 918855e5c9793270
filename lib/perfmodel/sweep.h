// sweep.h - the model over a grid of fabric latencies and bandwidths, and the overhead curve
// written out: CSV and JSON for scripts, SVG for people (docs/perf-model.md).
#ifndef DXPU_LIB_PERFMODEL_SWEEP_H_
#define DXPU_LIB_PERFMODEL_SWEEP_H_

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perfmodel/model.h"

namespace dxpu::perfmodel {

struct SweepPoint {
  double added_latency_ns = 0;
  double fabric_bandwidth_gbps = 0;
  Prediction prediction;
};

// `predict` for every (latency, bandwidth) pair, the rest of `base` unchanged; latency-major.
// `progress(done, total)` after each point, if given.
std::vector<SweepPoint> Sweep(const std::function<Prediction(const ModelParams&)>& predict,
                              const ModelParams& base, std::span<const double> latencies_ns,
                              std::span<const double> bandwidths_gbps,
                              const std::function<void(size_t, size_t)>& progress = {});

nlohmann::json ToJson(const Prediction& p);
nlohmann::json ToJson(const ModelParams& p);
// One object per point: added_latency_us, fabric_bandwidth_gbps and the prediction.
nlohmann::json SweepToJson(const std::vector<SweepPoint>& points);
// A header line, then one line per point (times in us, overhead in %).
std::string SweepToCsv(const std::vector<SweepPoint>& points);
// Overhead (%) against added one-way latency (us), one line per bandwidth. `title` names the
// workload; it is escaped.
std::string SweepToSvg(const std::vector<SweepPoint>& points, const std::string& title);

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_SWEEP_H_
