// rest_body_fuzz.cc - libFuzzer target: the pool manager's REST request bodies
// (manager/pool_json.cc: POST /v1/boxes, /v1/hosts, /v1/allocations), each input read by every
// body parser, and the answer the API would send (the record or the error, as JSON text)
// written out as rest_api.cc writes it. Nothing may throw: a body is a PoolError or a request
// (docs/fuzzing.md).
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "manager/pool_json.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "rest_body_fuzz", what); }

template <typename T>
void Answer(const dxpu::manager::PoolResult<T>& r) {
  if (r.ok()) {
    if constexpr (requires { dxpu::manager::ToJson(r.value()); })
      Check(!dxpu::manager::ToJson(r.value()).dump(2).empty(), "empty record");
    return;
  }
  Check(r.error().kind == dxpu::manager::ErrorKind::kBadRequest, "a body refused as no 400");
  Check(!r.error().message.empty(), "a refusal without a message");
  Check(!dxpu::manager::ToJson(r.error()).dump(2).empty(), "empty error");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Answer(dxpu::manager::AddBoxRequestFromJson(body));
  Answer(dxpu::manager::HostFromJson(body));
  Answer(dxpu::manager::AllocationRequestFromJson(body));
  return 0;
}
