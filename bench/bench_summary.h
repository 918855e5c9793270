// bench_summary.h - what the benchmark programs share: a main that runs the benchmarks its
// flags select and then prints a summary, and a console reporter that keeps the runs for
// that summary.
#ifndef DXPU_BENCH_BENCH_SUMMARY_H_
#define DXPU_BENCH_BENCH_SUMMARY_H_

#include <benchmark/benchmark.h>

#include <functional>
#include <vector>

namespace dxpu::bench {

// Console output as usual, then a summary: each run that completed (a plain run, or the mean
// when --benchmark_repetitions asks for aggregates) goes to Record, and Summarize prints the
// summary after the console output.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) final;
  void Finalize() final;

 protected:
  virtual void Record(const Run& run) = 0;
  virtual void Summarize() = 0;

  // The run's counter `name`, 0 when it has none.
  static double Counter(const Run& run, const char* name);
};

// The body of a benchmark program's main: reads the benchmark flags (1 on one it does not
// know), runs the benchmarks they select and reports them to `reporter` (null: the reporter
// --benchmark_format picks), then calls `after` (when given). Returns main's exit status.
int RunBenchmarks(int argc, char** argv, benchmark::BenchmarkReporter* reporter,
                  const std::function<void()>& after = {});

}  // namespace dxpu::bench

#endif  // DXPU_BENCH_BENCH_SUMMARY_H_
