// fuzz_box.h - the bridge the management target and its corpus generator send requests to:
// two model GPUs, fixed identity and epoch, so an input does the same thing in every run.
#ifndef DXPU_TESTS_FUZZ_FUZZ_BOX_H_
#define DXPU_TESTS_FUZZ_FUZZ_BOX_H_

#include <memory>

#include "bridge-fw/bridge_box.h"

namespace dxpu::fuzz {

// Throws std::runtime_error when the box cannot be made.
std::unique_ptr<bridge::BridgeBox> MakeFuzzBox();

}  // namespace dxpu::fuzz

#endif  // DXPU_TESTS_FUZZ_FUZZ_BOX_H_
