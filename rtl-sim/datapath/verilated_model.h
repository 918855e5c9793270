// verilated_model.h - a Verilated model the firmware side runs (rtl_datapath.cc, rtl_port.cc):
// its own VerilatedContext, the clock, a cycle count, an FST waveform on request, and its
// coverage written on destruction under $DXPU_RTL_COV_DIR (`dxpu rtl regress`, docs/rtl.md).
#ifndef DXPU_RTL_SIM_DATAPATH_VERILATED_MODEL_H_
#define DXPU_RTL_SIM_DATAPATH_VERILATED_MODEL_H_

#include <unistd.h>
#include <verilated.h>
#include <verilated_cov.h>
#include <verilated_fst_c.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace dxpu::rtl {

template <typename Model>
class VerilatedModel {
 public:
  // `instance`: the model's instance name; `cov_prefix`: its coverage files'.
  VerilatedModel(const char* instance, std::string cov_prefix)
      : cov_prefix_(std::move(cov_prefix)), ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->traceEverOn(true);
    model_ = std::make_unique<Model>(ctx_.get(), instance);
  }
  VerilatedModel(const VerilatedModel&) = delete;
  VerilatedModel& operator=(const VerilatedModel&) = delete;
  VerilatedModel(VerilatedModel&&) = delete;
  VerilatedModel& operator=(VerilatedModel&&) = delete;
  ~VerilatedModel() {
    model_->final();
    if (trace_) trace_->close();
    WriteCoverage();
  }

  Model& m() { return *model_; }
  const Model& m() const { return *model_; }
  uint64_t cycles() const { return cycles_; }

  // One clock cycle: falling edge, rising edge.
  void Tick() {
    Model& m = *model_;
    m.clk = 0;
    m.eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    m.clk = 1;
    m.eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    ++cycles_;
  }

  // The cycle in halves, for a caller that looks at what crosses the edges before the rising one:
  // Low(), drive the inputs, eval() and look, then Rise(). Two evaluations a cycle, not Tick()'s
  // three (one with the inputs driven): each runs the model's logic from its inputs.
  void Low() { model_->clk = 0; }
  void Rise() {
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    model_->clk = 1;
    model_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    ++cycles_;
  }

  // Writes an FST waveform of everything from now on.
  bool Trace(const std::string& path) {
    if (trace_) trace_->close();
    trace_ = std::make_unique<VerilatedFstC>();
    model_->trace(trace_.get(), 99);
    trace_->open(path.c_str());
    return trace_->isOpen();
  }

 private:
  // With $DXPU_RTL_COV_DIR set, the coverage goes to a file of its own there.
  void WriteCoverage() {
    const char* dir = std::getenv("DXPU_RTL_COV_DIR");  // NOLINT(concurrency-mt-unsafe)
    if (dir == nullptr || *dir == '\0') return;
    static std::atomic<unsigned> serial{0};
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = std::string(dir) + "/" + cov_prefix_ + "." + std::to_string(getpid()) +
                             "." + std::to_string(serial++) + ".dat";
    ctx_->coveragep()->write(path.c_str());
  }

  std::string cov_prefix_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  uint64_t cycles_ = 0;
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_VERILATED_MODEL_H_
