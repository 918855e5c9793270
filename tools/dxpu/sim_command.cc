// sim_command.cc - see sim_command.h.
#include "sim_command.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "progress.h"
#include "sim/fabric_scenario.h"
#include "sim/fault_plan.h"
#include "sim/rng.h"

namespace dxpu::cli {
namespace {

constexpr const char* kDefaultFaults =
    "loss=0.05,dup=0.02,reorder=0.05,corrupt=0.01,latency=5us,bw=25g";

struct SimFabricArgs {
  uint64_t first_seed = 1;
  uint64_t seeds = 100;
  std::string faults = kDefaultFaults;
  bool exact = false;
  uint32_t host_tlps = 400;
  uint32_t bridge_tlps = 200;
  uint32_t max_frame = 0;
  bool json = false;
  bool verbose = false;
};

// The fault mix one seed runs with: the given mix, or one drawn below it from the seed.
sim::FaultPlan PlanForSeed(const sim::FaultPlan& max, uint64_t seed, bool exact) {
  if (exact) return max;
  sim::Rng rng = sim::Rng(seed).Fork(0xfa17);
  return sim::RandomizeFaultPlan(rng, max);
}

std::string ReplayCommand(const SimFabricArgs& a, uint64_t seed) {
  std::string cmd =
      "dxpu sim fabric --seed " + std::to_string(seed) + " --seeds 1 --faults '" + a.faults + "'";
  if (a.exact) cmd += " --exact";
  if (a.host_tlps != 400) cmd += " --tlps " + std::to_string(a.host_tlps);
  if (a.bridge_tlps != 200) cmd += " --bridge-tlps " + std::to_string(a.bridge_tlps);
  if (a.max_frame != 0) cmd += " --max-frame " + std::to_string(a.max_frame);
  return cmd;
}

nlohmann::json ToJson(const sim::FabricScenarioResult& r, const sim::FaultPlan& plan) {
  return {{"seed", r.seed},
          {"passed", r.passed()},
          {"failures", r.failures},
          {"faults", sim::ToString(plan)},
          {"completed", r.completed},
          {"finished_at_ns", r.finished_at},
          {"max_frame", r.max_frame},
          {"sessions", r.sessions},
          {"link_downs", r.link_downs},
          {"tlps_delivered", r.tlps_delivered},
          {"tlps_retransmitted", r.tlps_retransmitted},
          {"reads_completed", r.reads_completed},
          {"reads_unanswered", r.reads_unanswered},
          {"credit_refusals", r.credit_refusals},
          {"frames_dropped", r.frames_dropped},
          {"max_queued", r.max_queued},
          {"max_in_flight", r.max_in_flight},
          {"network",
           {{"sent", r.network.sent},
            {"delivered", r.network.delivered},
            {"lost", r.network.lost},
            {"duplicated", r.network.duplicated},
            {"reordered", r.network.reordered},
            {"corrupted", r.network.corrupted},
            {"partition_drops", r.network.partition_drops},
            {"port_down_drops", r.network.port_down_drops}}}};
}

int RunSimFabric(const SimFabricArgs& a) {
  const sim::FaultPlanResult parsed = sim::ParseFaultSpec(a.faults);
  if (!parsed.ok()) {
    std::cerr << "dxpu sim fabric: --faults: " << parsed.error << '\n';
    return kExitUsage;
  }
  // The scenario's nodes are "host" and "bridge".
  auto known = [](const std::string& n) { return n.empty() || n == "host" || n == "bridge"; };
  for (const auto& c : parsed.plan->crashes) {
    if (!known(c.node)) {
      std::cerr << "dxpu sim fabric: --faults: crash of unknown node '" << c.node
                << "' (the nodes are host and bridge)\n";
      return kExitUsage;
    }
  }
  for (const auto& p : parsed.plan->partitions) {
    if (!known(p.from) || !known(p.to)) {
      std::cerr << "dxpu sim fabric: --faults: cut between unknown nodes (the nodes are host "
                   "and bridge)\n";
      return kExitUsage;
    }
  }
  uint64_t passed = 0;
  uint64_t failed = 0;
  nlohmann::json results = nlohmann::json::array();
  Progress progress("simulating");
  for (uint64_t i = 0; i < a.seeds; i++) {
    const uint64_t seed = a.first_seed + i;
    sim::FabricScenarioOptions opt;
    opt.seed = seed;
    opt.faults = PlanForSeed(*parsed.plan, seed, a.exact);
    opt.host_tlps = a.host_tlps;
    opt.bridge_tlps = a.bridge_tlps;
    opt.max_frame = a.max_frame;
    const sim::FabricScenarioResult r = sim::RunFabricScenario(opt);
    spdlog::debug("seed {}: {} ({} TLPs, {} sessions)", seed, r.passed() ? "pass" : "FAIL",
                  r.tlps_delivered, r.sessions);
    if (r.passed()) {
      passed++;
    } else {
      failed++;
      if (!a.json) {
        std::cout << "seed " << seed << " FAILED with faults '" << sim::ToString(opt.faults)
                  << "':\n";
        for (const std::string& f : r.failures) std::cout << "  " << f << '\n';
        std::cout << "  replay: " << ReplayCommand(a, seed) << '\n';
      }
    }
    if (a.verbose && !a.json) {
      std::cout << "seed " << seed << ": " << (r.passed() ? "ok" : "FAILED") << ", "
                << r.tlps_delivered << " TLPs delivered, " << r.tlps_retransmitted
                << " retransmitted, " << r.sessions << " sessions, " << r.link_downs
                << " link downs, frame " << r.max_frame << ", faults '" << sim::ToString(opt.faults)
                << "'\n";
    }
    if (a.json) results.push_back(ToJson(r, opt.faults));
    progress.Update(i + 1, a.seeds);
  }
  if (a.json) {
    nlohmann::json out = {{"seeds", a.seeds}, {"first_seed", a.first_seed}, {"faults", a.faults},
                          {"passed", passed}, {"failed", failed},           {"results", results}};
    std::cout << out.dump(2) << '\n';
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command AddSimCommand(CLI::App& parent) {
  CLI::App* sim = parent.add_subcommand(
      "sim", "Run DxPU components in the deterministic simulator (virtual time, seeded faults)");
  sim->require_subcommand(1);
  auto args = std::make_shared<SimFabricArgs>();
  CLI::App* fabric = sim->add_subcommand(
      "fabric",
      "Run a host and a bridge DxFP session over a simulated network for N seeds: writes, "
      "reads and split completions both ways, with loss, duplication, reordering, "
      "corruption, partitions and crashes. After each seed it checks that every TLP arrived "
      "exactly once and in order, that no posted TLP waited on another class, that link "
      "down came within its bound with the right unanswered reads, and that memory stayed "
      "bounded. A failing seed prints the command that replays it. Ends with "
      "'N passed, M failed'; exit status 1 if any failed.");
  fabric->add_option("--seed", args->first_seed, "first seed")->capture_default_str();
  fabric->add_option("--seeds", args->seeds, "number of seeds to run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}))
      ->capture_default_str();
  fabric
      ->add_option("--faults", args->faults,
                   "fault mix (docs/simulator.md); the nodes are host and bridge. Each seed "
                   "draws its probabilities uniformly below these, unless --exact")
      ->capture_default_str();
  fabric->add_flag("--exact", args->exact, "use the fault mix as given for every seed");
  fabric->add_option("--tlps", args->host_tlps, "TLPs the host submits per seed")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  fabric->add_option("--bridge-tlps", args->bridge_tlps, "DMA writes the bridge submits per seed")
      ->check(CLI::Range(0u, 1'000'000u))
      ->capture_default_str();
  fabric->add_option("--max-frame", args->max_frame, "frame size; 0: 1500 or 9000 by seed")
      ->check(CLI::Range(0u, 9216u))
      ->capture_default_str();
  fabric->add_flag("--json", args->json, "print every seed's result as JSON");
  fabric->add_flag("--verbose,-v", args->verbose, "print a line per seed");
  fabric->footer(
      "Examples:\n"
      "  dxpu sim fabric --seeds 2000\n"
      "  dxpu sim fabric --seeds 200 --faults 'loss=0.1,partition=20ms+30ms'\n"
      "  dxpu sim fabric --seed 42 --seeds 1 --faults 'crash=bridge@10ms+5ms' --verbose");
  return {sim, [args, fabric] {
            if (!fabric->parsed()) return kExitUsage;
            if (args->max_frame != 0 && args->max_frame < 128) {
              std::cerr << "dxpu sim fabric: --max-frame must be 0 or 128..9216\n";
              return kExitUsage;
            }
            return RunSimFabric(*args);
          }};
}

}  // namespace dxpu::cli
