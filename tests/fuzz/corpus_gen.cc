// corpus_gen.cc - writes the fuzz targets' seed corpora (docs/fuzzing.md, "The seed corpora")
// from the project's own encoders and writers: TLPs from the TLP encoder, frames a pair of real
// sessions send, management requests and a bridge's answers to them, signed firmware images,
// small traces, configurations and REST bodies. Deterministic: run twice, the same bytes, so
// fuzz.corpus-current can tell when a wire format changed under the committed corpus.
//
//   dxpu_fuzz_corpus DIR    writes DIR/NAME/gen-*, one folder per target
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/firmware/image.h"
#include "bridge-fw/management.h"
#include "core/dxfp_handshake.h"
#include "core/dxpu_mgmt.h"
#include "core/tlp_build.h"
#include "core/tlp_codec.h"
#include "crypto/sodium_crypto_ops.h"
#include "fuzz_box.h"
#include "fuzz_key.h"
#include "fuzz_util.h"
#include "session_world.h"

namespace {

namespace fs = std::filesystem;
using dxpu::fuzz::AppendPiece;
using Bytes = std::vector<uint8_t>;

class Writer {
 public:
  explicit Writer(fs::path root) : root_(std::move(root)) {}
  void Put(const std::string& target, const std::string& name, std::span<const uint8_t> bytes) {
    fs::create_directories(root_ / target);
    std::ofstream out(root_ / target / ("gen-" + name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + (root_ / target / name).string());
  }
  void Put(const std::string& target, const std::string& name, std::string_view text) {
    Put(target, name, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }

 private:
  fs::path root_;
};

Bytes Encode(const dxpu_tlp& t) {
  Bytes out(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  if (dxpu_tlp_encode(&t, out.data(), out.size(), &len) != DXPU_TLP_OK)
    throw std::runtime_error("a seed TLP does not encode");
  out.resize(len);
  return out;
}

std::vector<std::pair<std::string, dxpu_tlp>> SeedTlps() {
  static const std::array<uint8_t, 64> kData{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
  std::vector<std::pair<std::string, dxpu_tlp>> out;
  dxpu_tlp t{};
  dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1000, 64, &t);
  out.emplace_back("mrd-3dw", t);
  dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1234'0000'0000ull, 6, &t);
  out.emplace_back("mrd-4dw-partial", t);
  dxpu_tlp_mem_request(DXPU_TLP_MWR, 0x2000, kData.size(), &t);
  t.payload = kData.data();
  t.attr = 2;
  out.emplace_back("mwr", t);
  dxpu_tlp_mem_request(DXPU_TLP_MWR, 0x9'0000'0004ull, 3, &t);
  t.payload = kData.data();
  t.flags = DXPU_TLP_F_TD;
  t.digest = 0x12345678;
  out.emplace_back("mwr-4dw-digest", t);
  dxpu_tlp_config_request(DXPU_TLP_CFGRD0, 0x0100, 0x10, 0xf, &t);
  out.emplace_back("cfgrd0", t);
  dxpu_tlp_config_request(DXPU_TLP_CFGWR1, 0x0208, 0x104, 0x3, &t);
  t.payload = kData.data();
  out.emplace_back("cfgwr1", t);
  dxpu_tlp rd{};
  dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1004, 8, &rd);
  rd.tag = 0x123;
  dxpu_tlp_completion_for(&rd, 0x0200, DXPU_TLP_CPL_SC, &t);
  t.payload = kData.data();
  out.emplace_back("cpld", t);
  dxpu_tlp_completion_for(&rd, 0x0200, DXPU_TLP_CPL_UR, &t);
  out.emplace_back("cpl-ur", t);
  t = {};
  t.kind = DXPU_TLP_MSG;
  t.msg_code = DXPU_TLP_MSG_ASSERT_INTA;
  t.msg_routing = DXPU_TLP_ROUTE_LOCAL;
  out.emplace_back("msg-inta", t);
  t = {};
  t.kind = DXPU_TLP_MSGD;
  t.length_dw = 2;
  t.msg_code = DXPU_TLP_MSG_VENDOR_TYPE1;
  t.msg_routing = DXPU_TLP_ROUTE_BY_ID;
  t.payload = kData.data();
  out.emplace_back("msgd-vendor", t);
  return out;
}

void Tlps(Writer& w) {
  for (const auto& [name, t] : SeedTlps()) w.Put("tlp", name, Encode(t));
}

// The COOKIE frame a bridge under load (the authenticated worlds' bridge key) answers a HELLO
// with: a fixed nonce and cookie, so the corpus is the same every time.
Bytes CookieFor(const Bytes& hello) {
  dxfp_frame f{};
  Bytes out(DXFP_COOKIE_FRAME_SIZE);
  const std::array<uint8_t, DXFP_COOKIE_NONCE_SIZE> nonce{};
  std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
  cookie.fill(0xc0);
  size_t len = 0;
  if (dxfp_frame_parse(hello.data(), hello.size(), DXFP_MAX_FRAME, &f) != DXFP_OK ||
      dxfp_cookie_reply_write(&dxpu::crypto::SodiumCryptoOps(), dxpu::fuzz::BridgeKey().pub.data(),
                              nonce.data(), cookie.data(), &f, out.data(), &len) != DXFP_OK)
    return {};
  return out;
}

// The hello target's seeds (hello_fuzz.cc): the listed host's HELLO from one source, again (a
// replay: stale), from every source, and past the handshake budget (cookies); and a plaintext
// HELLO. Op bits: source (0-1), MAC1 put right (2), CRC put right (3).
void Hellos(Writer& w, const Bytes& hello) {
  Bytes one, many, flood;
  AppendPiece(&one, 0, hello);
  AppendPiece(&one, 0, hello);
  for (uint8_t src = 0; src < 4; ++src) AppendPiece(&many, src, hello);
  for (int i = 0; i < 24; ++i) AppendPiece(&flood, static_cast<uint8_t>(i & 3), hello);
  w.Put("hello", "listed-host-then-replayed", one);
  w.Put("hello", "four-sources", many);
  w.Put("hello", "past-the-budget", flood);
  Bytes changed = hello, fixed;
  changed[DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 15] ^= 1;  // the node ID: MAC1 and CRC made right
  AppendPiece(&fixed, 4 | 8, changed);
  w.Put("hello", "another-node-mac1-right", fixed);
}

// The frames an honest pair sends: handshake, TLPs both ways, acknowledgements, a close.
void Frames(Writer& w) {
  dxpu::fuzz::SessionWorld world;
  std::vector<dxpu::fuzz::Frame> frames;
  world.on_send = [&](const dxpu::fuzz::SessionEnd&, const dxpu::fuzz::Frame& f) {
    frames.push_back(f);
  };
  dxfp_session_connect(world.initiator.s(), world.now);
  world.Pump();
  for (const auto& [name, t] : SeedTlps()) {
    if (dxpu_tlp_kind_class(t.kind) == DXPU_TLP_CLASS_COMPLETION) continue;
    dxfp_session_send(world.initiator.s(), world.now, &t);
    dxfp_session_send(world.responder.s(), world.now, &t);
  }
  world.Pump();
  world.Advance(3 * DXFP_NS_PER_MS);
  dxfp_session_close(world.initiator.s(), world.now, DXFP_CLOSE_SHUTDOWN);
  world.Pump();
  for (size_t i = 0; i < frames.size() && i < 48; ++i) {
    const uint8_t type = frames[i][DXFP_OFF_TYPE];
    w.Put("dxfp_frame", "frame-" + std::to_string(i) + "-type" + std::to_string(type), frames[i]);
  }
  // An authenticated pair's handshake (HELLO with NOISE, MAC1, MAC2; WELCOME) and the COOKIE a
  // bridge under load answers that HELLO with.
  dxpu::fuzz::SessionWorld auth(true);
  std::vector<dxpu::fuzz::Frame> handshake;
  auth.on_send = [&](const dxpu::fuzz::SessionEnd&, const dxpu::fuzz::Frame& f) {
    if (handshake.size() < 2) handshake.push_back(f);
  };
  dxfp_session_connect(auth.initiator.s(), auth.now);
  auth.Pump();
  if (handshake.size() == 2) {
    w.Put("dxfp_frame", "auth-hello", handshake[0]);
    w.Put("dxfp_frame", "auth-welcome", handshake[1]);
    w.Put("dxfp_frame", "cookie", CookieFor(handshake[0]));
    Hellos(w, handshake[0]);
  }
}

// Per scenario: the victim's honest peer carries on (handshake, TLPs, time) and every frame it
// sends the victim becomes a piece; then time, a replay, a send and a close.
void Sessions(Writer& w) {
  const auto scenarios = dxpu::fuzz::Scenarios();
  for (size_t s = 0; s < scenarios.size(); ++s) {
    dxpu::fuzz::SessionWorld world(scenarios[s].authenticated);
    scenarios[s].setup(world);
    Bytes input{static_cast<uint8_t>(s)};
    // A victim connecting with a handshake first gets a cookie for its HELLO (a bridge under
    // load), then the peer's frames.
    const bool cookie_first = scenarios[s].authenticated && world.victim == &world.initiator &&
                              world.initiator.state() != DXFP_STATE_ESTABLISHED;
    world.on_send = [&](const dxpu::fuzz::SessionEnd& from, const dxpu::fuzz::Frame& f) {
      if (&from != world.victim) {
        AppendPiece(&input, 0, f);
      } else if (cookie_first && input.size() == 1 && f[DXFP_OFF_TYPE] == DXFP_HELLO) {
        AppendPiece(&input, 0, CookieFor(f));
      }
    };
    if (world.initiator.state() == DXFP_STATE_IDLE)
      dxfp_session_connect(world.initiator.s(), world.now);
    world.Advance(2 * DXFP_NS_PER_MS);
    for (const auto& [name, t] : SeedTlps()) {
      if (dxpu_tlp_kind_class(t.kind) != DXPU_TLP_CLASS_COMPLETION)
        dxfp_session_send(world.Peer().s(), world.now, &t);
    }
    // The completions of the reads the in-flight scenarios' victims wait for.
    static const std::array<uint8_t, 16> kData{9, 8, 7, 6};
    for (uint16_t i = 0; i < 4; ++i) {
      const dxpu_tlp rd = dxpu::fuzz::InFlightRead(i);
      dxpu_tlp cpl{};
      dxpu_tlp_completion_for(&rd, 0x0200, DXPU_TLP_CPL_SC, &cpl);
      cpl.payload = kData.data();
      dxfp_session_send(world.Peer().s(), world.now, &cpl);
    }
    world.Pump();
    world.Advance(DXFP_NS_PER_MS);
    w.Put("dxfp_session", std::string(scenarios[s].name) + "-peer", input);

    Bytes ops{static_cast<uint8_t>(s)};
    const uint8_t advance[3] = {0x00, 0x40, 0x00};  // 16384 x 16 ns
    AppendPiece(&ops, 2, advance);
    const uint8_t replay[1] = {0};
    AppendPiece(&ops, 3, replay);
    AppendPiece(&ops, 4, Encode(SeedTlps()[0].second));
    AppendPiece(&ops, 5, {});
    w.Put("dxfp_session", std::string(scenarios[s].name) + "-ops", ops);
  }
}

Bytes EncodeMgmt(const dxpu_mgmt_msg& m) {
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  if (dxpu_mgmt_encode(&m, out.data(), out.size(), &len) != DXPU_MGMT_ERR_OK)
    throw std::runtime_error("a seed management message does not encode");
  out.resize(len);
  return out;
}

dxpu_mgmt_msg Request(uint8_t type, uint32_t id) {
  dxpu_mgmt_msg m{};
  m.type = type;
  m.request_id = id;
  return m;
}

// A firmware image signed with the fuzz targets' key (fuzz_key.h: the same in every run).
Bytes SeedImage(uint32_t minor, size_t exe_bytes) {
  dxpu::firmware::ImageSpec spec;
  spec.version = dxpu::firmware::FirmwareVersion::Of(1, minor, 0);
  spec.hw_revision = 7;
  spec.build_time = 1'796'000'000;
  spec.build_id = "fuzz-seed";
  Bytes exe(exe_bytes);
  for (size_t i = 0; i < exe.size(); ++i) exe[i] = static_cast<uint8_t>(i * 7);
  const std::string config = R"({"node_id": "0xb0b", "links": []})";
  spec.sections = {
      {dxpu::firmware::SectionType::kExecutable, "dxpu-bridge", exe},
      {dxpu::firmware::SectionType::kConfig, "bridge.json", Bytes(config.begin(), config.end())}};
  auto image = dxpu::firmware::BuildImage(spec, dxpu::fuzz::FuzzKey().secret_key);
  if (!image.ok()) throw std::runtime_error(image.error().message);
  return std::move(image).value();
}

// Requests of every type, as one sequence a bridge answers, and each answer on its own.
void Management(Writer& w) {
  std::vector<dxpu_mgmt_msg> requests;
  dxpu_mgmt_msg m = Request(DXPU_MGMT_INVENTORY, 1);
  requests.push_back(m);
  m = Request(DXPU_MGMT_ASSIGN, 2);
  m.body.assign = {1, 0x0300, 0xa0};
  requests.push_back(m);
  m = Request(DXPU_MGMT_DMA_GRANT, 3);
  m.body.dma_grant = {1, 0x1000, 0x1000, 0x1000};
  requests.push_back(m);
  m = Request(DXPU_MGMT_DMA_LIST, 4);
  m.body.dma_list_request.device = 1;
  requests.push_back(m);
  requests.push_back(Request(DXPU_MGMT_STATUS, 5));
  m = Request(DXPU_MGMT_DMA_REVOKE_ALL, 6);
  m.body.dma_revoke_all.device = 1;
  requests.push_back(m);
  m = Request(DXPU_MGMT_RELEASE, 7);
  m.body.release.device = 1;
  requests.push_back(m);
  requests.push_back(Request(DXPU_MGMT_FW_STATUS, 8));
  m = Request(DXPU_MGMT_SCREENSHOT, 9);
  m.body.screenshot_request = {1, 0};
  requests.push_back(m);

  auto box = dxpu::fuzz::MakeFuzzBox();
  dxpu::bridge::ManagementCounters counters;
  Bytes sequence;
  for (const dxpu_mgmt_msg& r : requests) {
    const Bytes request = EncodeMgmt(r);
    AppendPiece(&sequence, 0, request);
    const Bytes answer = dxpu::bridge::HandleManagement(*box, request, 1000, &counters);
    Bytes one;
    AppendPiece(&one, 0, answer);
    w.Put("mgmt", std::string("answer-") + dxpu_mgmt_type_name(r.type), one);
  }
  w.Put("mgmt", "requests", sequence);

  // A firmware update: FW_BEGIN (odd op: the target signs it), chunks, FW_COMMIT, FW_REBOOT.
  const Bytes image = SeedImage(1, 1500);
  Bytes update;
  m = Request(DXPU_MGMT_FW_BEGIN, 20);
  m.body.fw_begin = {0, image.data()};
  AppendPiece(&update, 1, EncodeMgmt(m));
  constexpr size_t kChunk = 1024;
  for (size_t at = 0; at < image.size(); at += kChunk) {
    const size_t n = std::min(kChunk, image.size() - at);
    m = Request(DXPU_MGMT_FW_CHUNK, static_cast<uint32_t>(21 + at / kChunk));
    m.body.fw_chunk = {at, 0, static_cast<uint16_t>(n), image.data() + at};
    AppendPiece(&update, 1, EncodeMgmt(m));
  }
  AppendPiece(&update, 0, EncodeMgmt(Request(DXPU_MGMT_FW_COMMIT, 30)));
  AppendPiece(&update, 0, EncodeMgmt(Request(DXPU_MGMT_FW_STATUS, 31)));
  AppendPiece(&update, 0, EncodeMgmt(Request(DXPU_MGMT_FW_REBOOT, 32)));
  w.Put("mgmt", "firmware-update", update);
}

void Firmware(Writer& w) {
  w.Put("firmware_image", "image-1.2.0", SeedImage(2, 100));
  w.Put("firmware_image", "image-1.0.0-empty-exe", SeedImage(0, 0));
}

Bytes Gzip(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    throw std::runtime_error("deflateInit2");
  Bytes out(deflateBound(&z, text.size()) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

void Traces(Writer& w) {
  const std::string_view trace = R"trace({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 4, "args": {"correlation": 1}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 12, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 1, "bytes": 4096}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 3, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 33, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 84, "dur": 2, "args": {"device": 0, "stream": 7, "bytes": 256}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 90, "dur": 9, "args": {"device": 0, "stream": 7, "correlation": 3, "bytes": 1024}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 86, "dur": 2, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 88, "dur": 12, "args": {"device": 0, "stream": 7}},
  {"ph": "i", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 9}
]})trace";
  w.Put("kineto_trace", "trace.json", trace);
  w.Put("kineto_trace", "trace.json.gz", Gzip(trace));
  w.Put("kineto_trace", "empty.json", R"({"traceEvents": []})");
}

void Configs(Writer& w) {
  w.Put("bridge_config", "udp.json", R"({
  "node_id": "0x0000000000b0b001",
  "links": [{"type": "udp", "listen": "127.0.0.1:17480"}],
  "management": {"listen": "127.0.0.1:17481"},
  "metrics": {"listen": "[::1]:9480"},
  "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "256MiB"},
              {"profile": "dxgpu", "box_bdf": "02:00.0"}],
  "limits": {"max_hosts": 64, "max_pending_per_host": 64, "completion_timeout": "50ms",
             "tag_quarantine": "100ms", "link_down": "20ms"},
  "log": {"level": "info", "format": "text"}
})");
  w.Put("bridge_config", "packet.json", R"({
  // comments are allowed
  "node_id": "0xb0b",
  "links": [{"type": "packet", "interface": "eth0", "mac": "02:00:00:00:00:01"},
            {"type": "unix", "path": "/tmp/dxpu.sock"}],
  "devices": []
})");
  w.Put("bridge_config", "bdf", "01:00.7");
  w.Put("bridge_config", "size", "1.5GiB");
  w.Put("bridge_config", "ip-port", "[fe80::1%eth0]:17480");
}

void RestBodies(Writer& w) {
  w.Put("rest_body", "box.json",
        R"({"id": "box-a", "management": "udp:127.0.0.1:17481", "fabric": "udp:127.0.0.1:17480"})");
  w.Put(
      "rest_body", "host.json",
      R"({"id": "host-1", "node_id": "0xa0", "agent": "http://127.0.0.1:9700", "mode": "kernel", "boot_id": "0123abcd", "heartbeat_ms": 1000})");
  w.Put(
      "rest_body", "host-number.json",
      R"({"id": "h", "node_id": 160, "agent": "http://[::1]:9700", "mode": "proxy", "boot_id": "b"})");
  w.Put(
      "rest_body", "allocation.json",
      R"({"host": "host-1", "count": 2, "policy": "spread", "profile": "dxgpu", "request_key": "k1"})");
  w.Put("rest_body", "allocation-prefer.json", R"({"host": "host-1", "count": 1, "box": "box-a"})");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write the fuzz targets' seed corpora (docs/fuzzing.md)"};
  std::string dir;
  app.add_option("dir", dir, "Where to write them: DIR/NAME/gen-* per target")->required();
  CLI11_PARSE(app, argc, argv);
  dxpu::fuzz::QuietLogs();
  try {
    Writer w(dir);
    Tlps(w);
    Frames(w);
    Sessions(w);
    Management(w);
    Firmware(w);
    Traces(w);
    Configs(w);
    RestBodies(w);
  } catch (const std::exception& e) {
    std::cerr << "dxpu_fuzz_corpus: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
