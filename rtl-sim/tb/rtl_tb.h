// rtl_tb.h - what every RTL testbench shares: the model under test (Dut, below: one wrapper with
// its own VerilatedContext, its clock, reset and cycle count; docs/rtl.md); wide ports as 32-bit
// words; and the hooks `dxpu rtl regress` drives through the environment:
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

#include "rtl-sim/datapath/verilated_model.h"
#include "rtl-sim/datapath/verilated_ports.h"

namespace dxpu::rtl {

// The number of the next simulation this process starts (0, 1, ...).
unsigned NextSimSerial();

// Where simulation `serial`'s waveform or coverage goes (empty: nowhere):
// DIR/<suite.test>.<serial>.ext for the environment variable naming DIR.
std::string ArtifactPath(const char* env_var, unsigned serial, const char* ext);

// A testbench's model options for simulation `serial`: random reset, and the waveform and the
// coverage at their ArtifactPath()s.
VerilatedModelOptions TestbenchOptions(unsigned serial);

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

// One model under test: the one Verilated model wrapper (datapath/verilated_model.h: a fresh
// context, m(), Tick(), Eval(), cycles(), Reset() for `reset_cycles` cycles with `rst` high),
// set up as every testbench wants it: the context randomises the inputs (randReset(2)), so that
// every input must be driven before the first Eval() or the undriven one shows; the waveform
// and the coverage go where DXPU_RTL_FST_DIR and DXPU_RTL_COV_DIR say. A testbench's own driver
// derives from it, adding only what its module needs:
//   template <typename Model>
//   class Dut : public dxpu::rtl::Dut<Model> { ... Drive(...), Idle() ... };
template <typename Model>
class Dut : public VerilatedModel<Model> {
 public:
  Dut() : VerilatedModel<Model>(TestbenchOptions(NextSimSerial())) {}
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_TB_RTL_TB_H_
