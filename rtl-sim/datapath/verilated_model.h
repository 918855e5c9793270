// verilated_model.h - the one wrapper of a Verilated model, for the firmware side
// (rtl_datapath.cc, rtl_port.cc) and, as dxpu::rtl::Dut (tb/rtl_tb.h), every testbench: its own
// VerilatedContext, the clock and a cycle count, reset, an FST waveform, and its coverage written
// on destruction (`dxpu rtl regress`, docs/rtl.md). The model's clock is `clk`, its reset `rst`
// (active high).
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

struct VerilatedModelOptions {
  const char* instance = "dut";  // the model's instance name
  // The context randomises every input at construction (randReset(2)), so that an input its
  // user never drives shows.
  bool random_reset = false;
  // Tracing may start later (Trace()); without it, only `fst_path` can trace.
  bool traceable = true;
  std::string fst_path;       // an FST waveform of everything from construction on; empty: none
  std::string coverage_path;  // where the destructor writes the coverage; empty: nowhere
};

// Where the firmware side's model `prefix` writes its coverage: a file of its own under
// $DXPU_RTL_COV_DIR (empty: that is not set).
inline std::string FirmwareCoveragePath(const std::string& prefix) {
  const char* dir = std::getenv("DXPU_RTL_COV_DIR");  // NOLINT(concurrency-mt-unsafe)
  if (dir == nullptr || *dir == '\0') return {};
  static std::atomic<unsigned> serial{0};
  return std::string(dir) + "/" + prefix + "." + std::to_string(getpid()) + "." +
         std::to_string(serial++) + ".dat";
}

inline VerilatedModelOptions FirmwareOptions(const char* instance, const std::string& cov_prefix) {
  VerilatedModelOptions o;
  o.instance = instance;
  o.coverage_path = FirmwareCoveragePath(cov_prefix);
  return o;
}

template <typename Model>
class VerilatedModel {
 public:
  explicit VerilatedModel(VerilatedModelOptions options)
      : ctx_(std::make_unique<VerilatedContext>()),
        coverage_path_(std::move(options.coverage_path)) {
    if (options.random_reset) ctx_->randReset(2);
    if (options.traceable || !options.fst_path.empty()) ctx_->traceEverOn(true);
    model_ = std::make_unique<Model>(ctx_.get(), options.instance);
    if (!options.fst_path.empty()) Trace(options.fst_path);
  }
  // The firmware side's: traceable, coverage under $DXPU_RTL_COV_DIR as `cov_prefix`.
  VerilatedModel(const char* instance, const std::string& cov_prefix)
      : VerilatedModel(FirmwareOptions(instance, cov_prefix)) {}
  VerilatedModel(const VerilatedModel&) = delete;
  VerilatedModel& operator=(const VerilatedModel&) = delete;
  VerilatedModel(VerilatedModel&&) = delete;
  VerilatedModel& operator=(VerilatedModel&&) = delete;
  ~VerilatedModel() {
    model_->final();
    if (trace_) trace_->close();
    if (!coverage_path_.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(coverage_path_).parent_path(), ec);
      ctx_->coveragep()->write(coverage_path_.c_str());
    }
  }

  Model& m() { return *model_; }
  const Model& m() const { return *model_; }
  VerilatedContext& ctx() { return *ctx_; }
  uint64_t cycles() const { return cycles_; }

  // The model's logic from its inputs as they are now, no clock edge.
  void Eval() { model_->eval(); }

  // One clock cycle, falling edge then rising edge: inputs set before it are sampled at its
  // rising edge.
  void Tick() {
    Model& m = *model_;
    m.clk = 0;
    m.eval();
    Dump();
    ctx_->timeInc(1);
    m.clk = 1;
    m.eval();
    Dump();
    ctx_->timeInc(1);
    ++cycles_;
  }

  // The cycle in halves, for a caller that looks at what crosses the edges before the rising one:
  // Low(), drive the inputs, Eval() and look, then Rise(). Two evaluations a cycle, not Tick()'s
  // three (one with the inputs driven): each runs the model's logic from its inputs.
  void Low() { model_->clk = 0; }
  void Rise() {
    Dump();
    ctx_->timeInc(1);
    model_->clk = 1;
    model_->eval();
    Dump();
    ctx_->timeInc(1);
    ++cycles_;
  }

  // `rst` high for `reset_cycles` cycles, then low.
  void Reset(int reset_cycles = 4) {
    model_->rst = 1;
    for (int i = 0; i < reset_cycles; ++i) Tick();
    model_->rst = 0;
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
  void Dump() {
    if (trace_) trace_->dump(ctx_->time());
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::string coverage_path_;
  uint64_t cycles_ = 0;
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_VERILATED_MODEL_H_
