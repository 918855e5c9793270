// bridge_config_fuzz.cc - libFuzzer target: the bridge daemon's configuration file
// (bridge-fw/bridge_config.cc, docs/bridge-config.md) on any text, and the small parsers it
// is made of (BDF, byte size, IP:port, MAC) on the same text. A configuration is valid or a
// sentence that says why not; nothing may throw (docs/fuzzing.md).
#include <cstdint>
#include <string_view>

#include "bridge-fw/bridge_config.h"
#include "fuzz_util.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "bridge_config_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const dxpu::bridge::BridgeConfigResult r = dxpu::bridge::ParseBridgeConfig(text);
  if (!r.ok()) Check(!r.errors.empty(), "a refusal without a sentence");
  (void)dxpu::bridge::ParseBdf(text);
  (void)dxpu::bridge::ParseByteSize(text);
  (void)dxpu::bridge::ParseIpPort(text);
  (void)dxpu::bridge::ParseMac(text);
  return 0;
}
