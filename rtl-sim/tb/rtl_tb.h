// rtl_tb.h - what every RTL testbench shares: a Verilated model under test with its own
// VerilatedContext (docs/rtl.md), its clock, reset and cycle count; wide ports as 32-bit words;
// and the hooks `dxpu rtl regress` drives through the environment:
//
//   DXPU_SEED=N            the seed of every random test (printed by the test; replays a run)
//   DXPU_RTL_FST_DIR=DIR   each simulation writes its waveform to DIR/<test>.<n>.fst
//   DXPU_RTL_COV_DIR=DIR   each simulation writes its coverage to DIR/<test>.<n>.dat
//
// Without them a testbench neither traces nor writes coverage files.
#ifndef DXPU_RTL_SIM_TB_RTL_TB_H_
#define DXPU_RTL_SIM_TB_RTL_TB_H_

#include <gtest/gtest.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "rtl-sim/datapath/verilated_ports.h"

namespace dxpu::rtl {

// The number of the next simulation this process starts (0, 1, ...).
unsigned NextSimSerial();

// Where simulation `serial`'s waveform or coverage goes (empty: nowhere):
// DIR/<suite.test>.<serial>.ext for the environment variable naming DIR.
std::string ArtifactPath(const char* env_var, unsigned serial, const char* ext);

// Writes the context's coverage to its ArtifactPath(DXPU_RTL_COV_DIR) when that is set.
void WriteCoverage(VerilatedContext& ctx, unsigned serial);

// The seed of a randomised test: $DXPU_SEED, or a fresh one (dxpu::test::test_seed()); printed,
// and named in every failure while it lives, so that DXPU_SEED=<n> replays the test.
//   const TestSeed seed;
//   std::mt19937_64 rng(seed.value());
class TestSeed {
 public:
  explicit TestSeed(const char* file = __builtin_FILE(), int line = __builtin_LINE());
  uint64_t value() const { return seed_; }

 private:
  uint64_t seed_;
  ::testing::ScopedTrace trace_;
};

// One model under test: a fresh context, clocked by Tick(), reset for `reset_cycles` cycles by
// Reset() (the model's `rst` is active high). Every input must be driven before the first
// Eval(): the context randomises them (randReset(2)) so an undriven input shows.
template <typename Model>
class Sim {
 public:
  Sim() : ctx_(std::make_unique<VerilatedContext>()), serial_(NextSimSerial()) {
    ctx_->randReset(2);
    const std::string fst = ArtifactPath("DXPU_RTL_FST_DIR", serial_, "fst");
    if (!fst.empty()) ctx_->traceEverOn(true);
    model_ = std::make_unique<Model>(ctx_.get(), "dut");
    if (!fst.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      model_->trace(trace_.get(), 99);
      trace_->open(fst.c_str());
    }
  }
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;
  Sim(Sim&&) = delete;
  Sim& operator=(Sim&&) = delete;
  ~Sim() {
    model_->final();
    if (trace_) trace_->close();
    WriteCoverage(*ctx_, serial_);
  }

  Model& m() { return *model_; }
  const Model& m() const { return *model_; }
  VerilatedContext& ctx() { return *ctx_; }
  uint64_t cycles() const { return cycles_; }

  void Eval() { model_->eval(); }
  // One clock cycle: inputs set before it are sampled at its rising edge.
  void Tick() {
    model_->clk = 0;
    model_->eval();
    Dump();
    ctx_->timeInc(1);
    model_->clk = 1;
    model_->eval();
    Dump();
    ctx_->timeInc(1);
    ++cycles_;
  }
  void Reset(int reset_cycles = 4) {
    model_->rst = 1;
    for (int i = 0; i < reset_cycles; ++i) Tick();
    model_->rst = 0;
  }

 private:
  void Dump() {
    if (trace_) trace_->dump(ctx_->time());
  }

  std::unique_ptr<VerilatedContext> ctx_;
  unsigned serial_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  uint64_t cycles_ = 0;
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_TB_RTL_TB_H_
