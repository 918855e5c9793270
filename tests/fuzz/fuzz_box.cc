// fuzz_box.cc - see fuzz_box.h.
#include "fuzz_box.h"

#include <stdexcept>
#include <string>

#include "gpu/device_profile.h"

namespace dxpu::fuzz {

std::unique_ptr<bridge::BridgeBox> MakeFuzzBox() {
  bridge::BridgeBoxConfig c;
  c.node_id = 0xb0c5;
  c.epoch = 0x5eed;
  for (uint16_t i = 0; i < 2; ++i) {
    bridge::BoxDeviceConfig d;
    d.profile = *gpu::FindProfile("dxgpu");
    d.box_bdf = static_cast<uint16_t>(0x0100 + (i << 8));
    d.memory_bytes = 64 << 10;  // small: RELEASE scrubs it
    c.devices.push_back(d);
  }
  std::string error;
  auto box = bridge::BridgeBox::Create(c, &error);
  if (box == nullptr) throw std::runtime_error("cannot create the box: " + error);
  return box;
}

}  // namespace dxpu::fuzz
