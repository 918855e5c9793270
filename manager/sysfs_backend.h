// sysfs_backend.h - attach through dxpu.ko (docs/kernel-module.md): bind a free hot-plug slot
// to the GPU (/sys/devices/dxpu/bind "dxpuN <bridge MAC> <BDF>"), then power it on
// (/sys/bus/pci/slots/dxpuN/power 1: the module reads the GPU's configuration space over the
// fabric and the PCI core adds it). Detach powers the slot off and unbinds it. The bridge's
// fabric address is its MAC (the module speaks DxFP on raw Ethernet). `root` prefixes every
// path ("" on a host; a test may point it elsewhere only with a real module behind it).
#ifndef DXPU_MANAGER_SYSFS_BACKEND_H_
#define DXPU_MANAGER_SYSFS_BACKEND_H_

#include <optional>
#include <string>
#include <vector>

#include "manager/agent_backend.h"

namespace dxpu::manager {

// One line of /sys/devices/dxpu/slots.
struct SlotLine {
  std::string slot;  // "dxpu0"
  bool bound = false;
  std::string mac;  // bound: the bridge's MAC, lower case
  std::string bdf;  // bound: "01:00.0"
  bool on = false;
};
// Parses the slots file; lines it cannot read are left out (and logged).
std::vector<SlotLine> ParseSlots(const std::string& text);

class SysfsBackend final : public AttachBackend {
 public:
  explicit SysfsBackend(std::string root = "") : root_(std::move(root)) {}
  std::string_view mode() const override { return "kernel"; }
  PoolResult<std::string> Attach(const AttachRequest& request) override;
  PoolResult<Done> Detach(const AttachRequest& request) override;
  // Whether dxpu.ko is loaded (its sysfs directory is there).
  bool Present() const;

 private:
  PoolResult<std::vector<SlotLine>> Slots() const;
  PoolResult<Done> Write(const std::string& path, const std::string& value) const;
  std::string root_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_SYSFS_BACKEND_H_
