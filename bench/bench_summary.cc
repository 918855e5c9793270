// bench_summary.cc - see bench_summary.h.
#include "bench_summary.h"

namespace dxpu::bench {

void SummaryReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    const bool mean = r.run_type == Run::RT_Aggregate && r.aggregate_name == "mean";
    if (r.error_occurred || (r.run_type != Run::RT_Iteration && !mean)) continue;
    Record(r);
  }
  ConsoleReporter::ReportRuns(runs);
}

void SummaryReporter::Finalize() {
  ConsoleReporter::Finalize();
  Summarize();
}

double SummaryReporter::Counter(const Run& run, const char* name) {
  const auto it = run.counters.find(name);
  return it == run.counters.end() ? 0.0 : static_cast<double>(it->second);
}

int RunBenchmarks(int argc, char** argv, benchmark::BenchmarkReporter* reporter,
                  const std::function<void()>& after) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(reporter);
  benchmark::Shutdown();
  if (after) after();
  return 0;
}

}  // namespace dxpu::bench
