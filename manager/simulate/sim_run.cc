// sim_run.cc - a run's report, arrival by arrival (sim_run.h).
#include "manager/simulate/sim_run.h"

#include <algorithm>
#include <cmath>

namespace dxpu::poolsim {
namespace {

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

Ask TypicalAsk(const std::vector<TracePod>& pods) {
  std::vector<uint64_t> cpu;
  std::vector<uint64_t> memory;
  for (const TracePod& p : pods) {
    if (p.num_gpu == 0) continue;
    cpu.push_back(p.cpu_milli);
    memory.push_back(p.memory_mib);
  }
  if (cpu.empty()) return {};
  const auto mid = static_cast<std::ptrdiff_t>(cpu.size() / 2);
  std::nth_element(cpu.begin(), cpu.begin() + mid, cpu.end());
  std::nth_element(memory.begin(), memory.begin() + mid, memory.end());
  return {cpu[static_cast<size_t>(mid)], memory[static_cast<size_t>(mid)]};
}

double SimRun::AllocatedAt(int percent) const {
  double at = 0;
  for (const CurvePoint& p : curve) {
    if (p.arrived_percent > percent) break;
    at = p.allocated_percent;
  }
  return at;
}

RunRecorder::RunRecorder(SimRun& run, uint64_t capacity_milli) : run_(run) {
  run_.capacity_milli = capacity_milli;
}

void RunRecorder::Arrived(const TracePod& pod, bool placed, uint64_t allocated_milli) {
  const size_t index = run_.arrivals++;
  run_.arrived_milli += pod.total_gpu_milli();
  const bool constrained = pod.num_gpu > 0 && !pod.gpu_spec.empty();
  run_.constrained_arrivals += constrained ? 1 : 0;
  if (placed) {
    ++run_.placed;
    run_.constrained_placed += constrained ? 1 : 0;
  } else {
    ++run_.refused;
    run_.gpu_pods_refused += pod.num_gpu > 0 ? 1 : 0;
    if (!run_.first_failure) {
      run_.first_failure = FirstFailure{index, Percent(run_.arrived_milli, run_.capacity_milli),
                                        Percent(allocated_milli, run_.capacity_milli)};
    }
  }
  const auto point =
      static_cast<int>(std::lround(Percent(run_.arrived_milli, run_.capacity_milli)));
  if (point != bucket_ && bucket_count_ > 0) {
    run_.curve.push_back({bucket_, bucket_sum_ / static_cast<double>(bucket_count_)});
    bucket_sum_ = 0;
    bucket_count_ = 0;
  }
  bucket_ = point;
  bucket_sum_ += Percent(allocated_milli, run_.capacity_milli);
  ++bucket_count_;
}

void RunRecorder::Finish(uint64_t allocated_milli) {
  if (bucket_count_ > 0)
    run_.curve.push_back({bucket_, bucket_sum_ / static_cast<double>(bucket_count_)});
  bucket_count_ = 0;
  run_.allocated_milli = allocated_milli;
}

}  // namespace dxpu::poolsim
