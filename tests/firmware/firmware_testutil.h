// firmware_testutil.h - what the firmware tests share: a key pair made once, an image spec with
// a real-looking payload, a scratch directory.
#ifndef DXPU_TESTS_FIRMWARE_FIRMWARE_TESTUTIL_H_
#define DXPU_TESTS_FIRMWARE_FIRMWARE_TESTUTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "bridge-fw/firmware/image.h"
#include "bridge-fw/firmware/signing.h"

namespace dxpu::firmware::testing {

const KeyPair& TestKey();   // the key the test flashes trust
const KeyPair& OtherKey();  // a key they do not
const KeyPair& RootKey();   // the test flashes' root key: it signs their key lists
// A key list trusting `keys` (default: TestKey), signed by RootKey (or `root`).
std::vector<uint8_t> TestKeyList(const std::vector<PublicKey>& keys = {}, uint32_t sequence = 1,
                                 const KeyPair& root = RootKey());
// The bridge ID of SmallFactory's flashes.
BridgeId TestBridgeId();

// An image spec: version, hardware revision 7, an executable of `exe_bytes` seeded bytes and a
// small configuration.
ImageSpec SpecOf(FirmwareVersion version, size_t exe_bytes = 3000, uint32_t seed = 1);
std::vector<uint8_t> SignedImage(FirmwareVersion version, size_t exe_bytes = 3000,
                                 uint32_t seed = 1, const KeyPair& key = TestKey());

// An image of `version` with anti-rollback level `security_version`.
std::vector<uint8_t> SecureImage(FirmwareVersion version, uint32_t security_version,
                                 uint32_t seed = 1);

// Writes `image` into `slot` through SlotWriter and marks it good and active, as `dxpu flash
// init --image` leaves slot A of a new bridge.
FirmwareResult<Ok> InstallGood(FlashDevice& flash, Slot slot, const std::vector<uint8_t>& image);

// A small flash: 4 KiB blocks, 64-byte granules, 4-block slots, hardware revision 7, root
// key RootKey, bridge TestBridgeId (Create it with TestKeyList: trusting TestKey).
FactoryInfo SmallFactory();

// A fresh directory under the test's temporary directory, removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

}  // namespace dxpu::firmware::testing

#endif  // DXPU_TESTS_FIRMWARE_FIRMWARE_TESTUTIL_H_
