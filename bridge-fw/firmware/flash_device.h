// flash_device.h - the bridge's NOR flash, modelled on a file (docs/firmware.md, "The flash"):
// erase whole blocks to 0xFF, program whole aligned granules into erased ones only, read
// anything; block 0 is the factory block, written once. A test can cut the power after N
// operations: that operation is torn and every later one fails with `power-lost`, as if the
// bridge had lost power there; opening the file again is the next boot.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_FLASH_DEVICE_H_
#define DXPU_BRIDGE_FW_FIRMWARE_FLASH_DEVICE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/key_list.h"
#include "bridge-fw/firmware/signing.h"
#include "link/unique_fd.h"

namespace dxpu::firmware {

inline constexpr uint32_t kFactoryMagic = 0x4458464c;  // "DXFL"
inline constexpr uint16_t kLayoutVersion = 2;
inline constexpr size_t kFactoryBytes = 164;  // what block 0 holds, CRC included
// Block 0 the factory block, 1 and 2 the boot state, 3 and 4 the key list, then the slots.
inline constexpr uint32_t kFirstKeyListBlock = 3;
inline constexpr uint32_t kFirstSlotBlock = 5;

using BridgeId = std::array<uint8_t, 16>;

struct FlashGeometry {
  uint32_t erase_block = 64 * 1024;  // a power of two, 4 KiB .. 1 MiB
  uint32_t granule = 256;            // a power of two, 64 .. 4 KiB, dividing the erase block
  uint32_t blocks = 0;               // the flash is blocks x erase_block bytes
  uint64_t size() const { return uint64_t{blocks} * erase_block; }
};

// Block 0: the part and the bridge, written at the factory (the boot ROM model: never written
// again); and the trusted keys, from the key list the root key signed.
struct FactoryInfo {
  FlashGeometry geometry;
  uint32_t hw_revision = 0;
  uint32_t blocks_per_slot = 0;
  BridgeId bridge_id{};  // this bridge's identity (a downgrade authorisation names it)
  PublicKey root_key{};  // signs the key list; in block 0, so never replaced
  // The trusted image-signing keys and their list's sequence: not in block 0, but from the
  // newest key list (blocks 3, 4) that verifies with root_key, read by Open.
  std::vector<PublicKey> keys;
  uint32_t key_list_sequence = 0;
};

// The factory block's bytes, and back (bad-factory when they are not one).
std::vector<uint8_t> EncodeFactory(const FactoryInfo& info);
FirmwareResult<FactoryInfo> DecodeFactory(std::span<const uint8_t> bytes);
// Whether the geometry and layout are ones this model (and a bridge) can use; why not.
FirmwareResult<Ok> CheckFactory(const FactoryInfo& info);

class FlashDevice {
 public:
  // A new flash file at `path` (refused if it exists): all erased, block 0 programmed from
  // `info_in`, and `key_list` (SignKeyList's bytes, which must verify with its root_key) in
  // block 3.
  static FirmwareResult<std::unique_ptr<FlashDevice>> Create(const std::string& path,
                                                             const FactoryInfo& info_in,
                                                             std::span<const uint8_t> key_list);
  // An existing flash file: its factory block must be valid, its size the geometry's, and one
  // of its key-list blocks must hold a list signed by the root key (bad-key-list otherwise:
  // the bridge does not boot).
  static FirmwareResult<std::unique_ptr<FlashDevice>> Open(const std::string& path);

  FlashDevice(const FlashDevice&) = delete;
  FlashDevice& operator=(const FlashDevice&) = delete;
  ~FlashDevice() = default;

  const FactoryInfo& factory() const { return factory_; }

  // Key rotation: `key_list` must verify with the root key and carry a higher sequence than
  // the current list; it is written into the key-list block not holding the current one
  // (power-safe: until it is whole, the current list verifies and the new one does not).
  FirmwareResult<Ok> RotateKeys(std::span<const uint8_t> key_list);

  // Tests of a slow part only: each erase takes at least `erase`, each granule programmed
  // at least `program` (a real NOR erases a 64 KiB block in about half a second).
  void SetDelays(uint64_t erase_ns, uint64_t program_ns) {
    erase_delay_ns_ = erase_ns;
    program_delay_ns_ = program_ns;
  }
  const FlashGeometry& geometry() const { return factory_.geometry; }

  FirmwareResult<Ok> Read(uint64_t offset, std::span<uint8_t> out) const;
  // Sets block `block` (not 0) to 0xFF.
  FirmwareResult<Ok> Erase(uint32_t block);
  // Programs `data` at `offset`: both multiples of the granule, every granule erased, not in
  // block 0. Granule by granule: each is one operation.
  FirmwareResult<Ok> Program(uint64_t offset, std::span<const uint8_t> data);

  // Power cuts. After `operations` more operations succeed, the next one is torn (a prefix of
  // the granule programmed, of the block erased: its length, 1 byte to all but one, varies with
  // the operation count) and then `on_cut` runs (a crash test's process exits there); with no
  // `on_cut`, that operation and every later one fail with power-lost.
  void ArmPowerCut(uint64_t operations, std::function<void()> on_cut = {});
  bool power_lost() const { return power_lost_; }
  uint64_t operations() const { return operations_; }  // erases and granules programmed

 private:
  FlashDevice(link::UniqueFd fd, FactoryInfo factory);
  // Counts an operation; false when the power is (now) cut, after tearing it with `tear`.
  bool Operate(const std::function<void()>& tear);
  size_t TornBytes(size_t n) const;
  FirmwareResult<Ok> WriteAt(uint64_t offset, std::span<const uint8_t> data);
  // The newest key list that verifies into factory_.keys; which block holds it.
  FirmwareResult<Ok> LoadKeyList();
  FirmwareResult<Ok> WriteKeyList(uint32_t block, std::span<const uint8_t> key_list);

  link::UniqueFd fd_;
  FactoryInfo factory_;
  uint64_t operations_ = 0;
  bool cut_armed_ = false;
  uint64_t cut_at_ = 0;
  std::function<void()> on_cut_;
  bool power_lost_ = false;
  uint32_t key_list_block_ = kFirstKeyListBlock;
  uint64_t erase_delay_ns_ = 0;
  uint64_t program_delay_ns_ = 0;
};

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_FLASH_DEVICE_H_
