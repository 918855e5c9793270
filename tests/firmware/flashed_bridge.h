// flashed_bridge.h - a bridge as it runs in the field, for process tests: a flash whose slot A
// holds a signed image of the real dxpu-bridge (debug info stripped) with a given configuration,
// good and active, and the boot loader (dxpu-boot) that runs it.
#ifndef DXPU_TESTS_FIRMWARE_FLASHED_BRIDGE_H_
#define DXPU_TESTS_FIRMWARE_FLASHED_BRIDGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bridge-fw/firmware/image.h"
#include "bridge-fw/firmware/signing.h"
#include "child_process.h"
#include "firmware_testutil.h"

namespace dxpu::firmware::testing {

inline const FirmwareVersion kFlashedV1 = FirmwareVersion::Of(1, 0, 0);  // in slot A at first

class FlashedBridge {
 public:
  static constexpr uint32_t kEraseBlock = 64 * 1024;
  static constexpr uint32_t kGranule = 4096;

  // `dir` (created) holds the flash, the images, the boot loader's work directory and log.
  FlashedBridge(std::string dir, std::string config_json);

  // A new flash whose slot A holds v1 (kFlashedV1), good and active: `dxpu flash init --image`.
  void MakeFlash() const;
  // A signed image of the bridge with this configuration, or `config_json` when given
  // (hardware revision 7, SpecOf's).
  std::vector<uint8_t> Image(FirmwareVersion version, const KeyPair& key = TestKey(),
                             const std::string& config_json = "") const;
  // The image written to a file in the directory; its path.
  std::string ImageFile(const std::string& name, const std::vector<uint8_t>& image) const;
  // dxpu-boot (a restart delay of 100 ms) running the bridge with --health-delay 300ms and
  // `bridge_args`; its output appended to boot.log.
  std::unique_ptr<test::ChildProcess> Boot(const std::vector<std::string>& bridge_args = {}) const;

  std::string BootLog() const;  // boot.log's tail
  // How many times a bridge it ran lost power at its --crash-at-flash-op.
  size_t PowerCutsLogged() const;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
  std::string config_;
  std::vector<uint8_t> exe_;
};

}  // namespace dxpu::firmware::testing

#endif  // DXPU_TESTS_FIRMWARE_FLASHED_BRIDGE_H_
