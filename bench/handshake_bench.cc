// What authenticated sessions cost (issue 32's performance section; docs/performance.md,
// "Authenticated, sealed sessions"), one core:
//  - BM_BridgeAnswersHello: the handshakes a bridge answers a second: a HELLO from a listed
//    host opened (MAC1, three X25519) and its WELCOME built (an ephemeral key, two X25519), as
//    the bridge's HostAuthenticator and session do it;
//  - BM_BridgeAnswersWithACookie: under load, a HELLO from a new source answered with a COOKIE
//    frame (MAC1, the source's cookie, the cookie sealed): what a flood from forged addresses
//    costs per HELLO;
//  - BM_ReadRoundTrip/sealed:0|1: one 4-byte memory read and its completion through a pair of
//    sessions in memory (host and bridge in this thread), plaintext and sealed in the same
//    process: the time sealing adds to an MMIO read, before the network's own.
// A summary prints the handshakes a second and the sealed round trip against the plaintext one.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "bridge-fw/host_auth.h"
#include "core/dxfp_session.h"
#include "core/tlp_build.h"
#include "crypto/fabric_keys.h"
#include "crypto/sodium_crypto_ops.h"

namespace {

using Frame = std::vector<uint8_t>;
using dxpu::crypto::KeyPair;

constexpr uint64_t kHostNode = 0x1111;

// One session, its memory, and what it delivered (the last TLP's header and 4 bytes of data).
struct End {
  std::vector<uint64_t> memory;
  dxfp_session s{};
  uint64_t delivered = 0;
  dxpu_tlp last{};
  std::array<uint8_t, 4> data{};
};

void OnDeliver(void* ctx, const dxpu_tlp* t) {
  auto* e = static_cast<End*>(ctx);
  const uint32_t len = dxpu_tlp_payload_len(t);
  e->delivered++;
  e->last = *t;
  e->last.payload = nullptr;
  for (uint32_t i = 0; i < len && i < e->data.size(); ++i) e->data[i] = t->payload[i];
  dxfp_session_release(&e->s, static_cast<int>(dxpu_tlp_kind_class(t->kind)), len);
}

void OnDown(void*, dxfp_down_reason, const dxpu_tlp*, size_t) {}

dxfp_session_config SmallConfig(dxfp_session_role role) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.role = role;
  c.node_id = role == DXFP_ROLE_INITIATOR ? kHostNode : 0xb0c5;
  c.session_id = role == DXFP_ROLE_INITIATOR ? 7 : 9;
  c.epoch = role == DXFP_ROLE_INITIATOR ? 70 : 90;
  c.max_frame = 1500;
  c.replay_window = 64;
  c.replay_bytes = 64 * 1024;
  return c;
}

bool Init(End* e, const dxfp_session_config& cfg) {
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnDown, nullptr};
  e->memory.assign((dxfp_session_mem_size(&cfg) + 7) / 8, 0);
  e->delivered = 0;
  return dxfp_session_init(&e->s, &cfg, e->memory.data(), e->memory.size() * 8, &kOps, e);
}

// Every frame `from` has to send, handed to `to`.
void Exchange(End& from, End& to, uint64_t now) {
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  while (dxfp_session_poll(&from.s, now, buf.data(), buf.size(), &len))
    (void)dxfp_session_receive(&to.s, now, buf.data(), len);
}

struct Keys {
  KeyPair host = dxpu::crypto::NewKeyPair();
  KeyPair bridge = dxpu::crypto::NewKeyPair();
};

// HELLOs a host with these keys sends, each from a new session (a new ephemeral key).
std::vector<Frame> Hellos(const Keys& k, size_t n) {
  std::vector<Frame> out;
  dxfp_session_config first = SmallConfig(DXFP_ROLE_INITIATOR);
  dxpu::crypto::SetHostAuth(&first, k.host, k.bridge.pub);
  for (size_t i = 0; i < n; ++i) {
    dxfp_session_config c = first;
    c.auth.wall_clock_offset_ns += i * 1000;  // every HELLO later than the one before
    End host;
    if (!Init(&host, c)) return {};
    dxfp_session_connect(&host.s, 1000);
    Frame f(DXFP_MAX_FRAME);
    size_t len = 0;
    if (!dxfp_session_poll(&host.s, 1000, f.data(), f.size(), &len)) return {};
    f.resize(len);
    out.push_back(std::move(f));
  }
  return out;
}

dxpu::bridge::BoxIdentity IdentityOf(const Keys& k) {
  dxpu::bridge::BoxIdentity id;
  id.keys = k.bridge;
  id.hosts = {{k.host.pub, kHostNode}};
  id.hellos_per_second = 1'000'000;  // the limits out of the way: the cryptography is measured
  id.hello_burst = 1'000'000;
  id.handshakes_per_second = 1'000'000;
  return id;
}

double& HandshakesPerSecond() {
  static double v = 0;
  return v;
}
double& CookiesPerSecond() {
  static double v = 0;
  return v;
}
std::map<int64_t, double>& RoundTripUs() {
  static std::map<int64_t, double> v;
  return v;
}

void BM_BridgeAnswersHello(benchmark::State& state) {
  const Keys k;
  const std::vector<Frame> hellos = Hellos(k, 256);
  if (hellos.size() != 256) {
    state.SkipWithError("could not make the HELLOs");
    return;
  }
  std::optional<dxpu::bridge::HostAuthenticator> auth;
  auth.emplace(IdentityOf(k));
  dxfp_session_config rc = SmallConfig(DXFP_ROLE_RESPONDER);
  rc.auth.ops = &dxpu::crypto::SodiumCryptoOps();
  End bridge;
  std::array<uint8_t, DXFP_MAX_FRAME> welcome{};
  uint64_t answered = 0, now = 1'000'000;
  size_t i = 0;
  for (auto _ : state) {
    // A new host restart each time: its HELLOs come in the order they were made.
    if (i == hellos.size()) {
      state.PauseTiming();
      auth.emplace(IdentityOf(k));
      i = 0;
      state.ResumeTiming();
    }
    auto opened = auth->Open(now++, "0/10.0.0.1:17480", hellos[i++]);
    auto* hello = std::get_if<dxpu::bridge::OpenedHello>(&opened);
    if (hello == nullptr) {
      const auto* why = std::get_if<dxpu::bridge::HelloRefusal>(&opened);
      state.SkipWithError(("a HELLO was refused: " +
                           std::string(why != nullptr ? HelloRefusalName(*why) : "cookie"))
                              .c_str());
      return;
    }
    if (!Init(&bridge, rc)) {
      state.SkipWithError("the bridge's session configuration was refused");
      return;
    }
    const dxfp_rx_result r = dxfp_session_accept_auth(&bridge.s, now, &hello->frame, &hello->hs);
    if (r != DXFP_RX_OK) {
      state.SkipWithError(
          ("a HELLO was not answered: " + std::string(dxfp_rx_result_name(r))).c_str());
      return;
    }
    size_t len = 0;
    answered += dxfp_session_poll(&bridge.s, now, welcome.data(), welcome.size(), &len) ? 1 : 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(answered));
  state.counters["handshakes_per_s"] =
      benchmark::Counter(static_cast<double>(answered), benchmark::Counter::kIsRate);
}

void BM_BridgeAnswersWithACookie(benchmark::State& state) {
  const Keys k;
  const std::vector<Frame> hellos = Hellos(k, 1);
  if (hellos.empty()) {
    state.SkipWithError("could not make a HELLO");
    return;
  }
  dxpu::bridge::BoxIdentity id = IdentityOf(k);
  id.handshakes_per_second = 1;  // under load from the second HELLO on
  dxpu::bridge::HostAuthenticator auth(id);
  (void)auth.Open(1, "0/10.0.0.1:17480", hellos[0]);
  uint64_t cookies = 0, n = 0;
  std::string source;
  for (auto _ : state) {
    source = "0/10.1." + std::to_string((n >> 8) & 0xff) + "." + std::to_string(n & 0xff) + ":1";
    ++n;
    auto answer = auth.Open(2, source, hellos[0]);
    cookies += std::holds_alternative<dxpu::bridge::CookieReply>(answer) ? 1 : 0;
  }
  if (cookies != n) state.SkipWithError("a HELLO under load was not answered with a cookie");
  state.SetItemsProcessed(static_cast<int64_t>(cookies));
  state.counters["cookies_per_s"] =
      benchmark::Counter(static_cast<double>(cookies), benchmark::Counter::kIsRate);
}

void BM_ReadRoundTrip(benchmark::State& state) {
  const bool sealed = state.range(0) != 0;
  const Keys k;
  dxfp_session_config hc = SmallConfig(DXFP_ROLE_INITIATOR);
  dxfp_session_config bc = SmallConfig(DXFP_ROLE_RESPONDER);
  if (sealed) {
    dxpu::crypto::SetHostAuth(&hc, k.host, k.bridge.pub);
    bc.auth.ops = hc.auth.ops;
  }
  End host, bridge;
  if (!Init(&host, hc) || !Init(&bridge, bc)) {
    state.SkipWithError("session configuration refused");
    return;
  }
  uint64_t now = 1'000'000;
  dxfp_session_connect(&host.s, now);
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  if (!dxfp_session_poll(&host.s, now, buf.data(), buf.size(), &len)) return;
  const dxfp_rx_result accepted =
      sealed ? dxpu::crypto::AcceptAuthenticatedHello(&bridge.s, now, k.bridge, {buf.data(), len})
             : [&] {
                 dxfp_frame f{};
                 (void)dxfp_frame_parse(buf.data(), len, DXFP_MAX_FRAME, &f);
                 return dxfp_session_accept(&bridge.s, now, &f);
               }();
  Exchange(bridge, host, now);
  Exchange(host, bridge, now);
  if (accepted != DXFP_RX_OK || host.s.state != DXFP_STATE_ESTABLISHED) {
    state.SkipWithError("the sessions did not establish");
    return;
  }
  dxpu_tlp read{};
  read.kind = DXPU_TLP_MRD;
  read.length_dw = 1;
  read.first_be = 0xf;
  read.addr = 0x1'0000'0000ull;
  read.requester_id = 0x0100;
  const std::array<uint8_t, 4> value = {0xde, 0xc0, 0xad, 0x0b};
  uint8_t tag = 0;
  for (auto _ : state) {
    read.tag = tag++;
    ++now;
    if (dxfp_session_send(&host.s, now, &read) != DXFP_SEND_OK) break;
    const uint64_t before = bridge.delivered;
    Exchange(host, bridge, now);  // the read reaches the bridge
    if (bridge.delivered != before + 1) break;
    dxpu_tlp cpl{};
    dxpu_tlp_completion_for(&bridge.last, 0x0200, DXPU_TLP_CPL_SC, &cpl);
    cpl.payload = value.data();
    if (dxfp_session_send(&bridge.s, now, &cpl) != DXFP_SEND_OK) break;
    const uint64_t answered = host.delivered;
    Exchange(bridge, host, now);  // its completion reaches the host
    if (host.delivered != answered + 1 || host.data != value) break;
    // Each frame carries the acknowledgement of the one before: no frame waits for a timer.
  }
  if (state.iterations() > 0 && host.delivered != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("a read was not answered");
  state.SetLabel(sealed ? "sealed" : "plaintext");
}

// A run's time per iteration in microseconds (the benchmarks' unit).
double RunUs(const benchmark::BenchmarkReporter::Run& run) {
  return run.iterations > 0 ? run.GetAdjustedRealTime() : 0;
}

class Summary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& run) override {
    const std::string name = run.benchmark_name();
    if (name.rfind("BM_BridgeAnswersHello", 0) == 0)
      HandshakesPerSecond() = Counter(run, "handshakes_per_s");
    else if (name.rfind("BM_BridgeAnswersWithACookie", 0) == 0)
      CookiesPerSecond() = Counter(run, "cookies_per_s");
    else if (name.rfind("BM_ReadRoundTrip", 0) == 0)
      RoundTripUs()[name.find("sealed:1") != std::string::npos ? 1 : 0] = RunUs(run);
  }
  void Summarize() override {
    std::printf("\nAuthenticated sessions, one core:\n");
    std::printf("  handshakes a bridge answers: %.0f a second\n", HandshakesPerSecond());
    std::printf("  HELLOs answered with a cookie under load: %.0f a second\n", CookiesPerSecond());
    const auto& rtt = RoundTripUs();
    if (rtt.count(0) != 0 && rtt.count(1) != 0 && rtt.at(0) > 0)
      std::printf(
          "  4-byte read round trip through two sessions: plaintext %.2f us, sealed %.2f "
          "us (x%.2f, +%.2f us)\n",
          rtt.at(0), rtt.at(1), rtt.at(1) / rtt.at(0), rtt.at(1) - rtt.at(0));
  }
};

}  // namespace

BENCHMARK(BM_BridgeAnswersHello)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BridgeAnswersWithACookie)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadRoundTrip)->ArgName("sealed")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  Summary summary;
  return dxpu::bench::RunBenchmarks(argc, argv, &summary);
}
