// register_file.h - 4 KiB of configuration registers with an access type for every bit:
// read-only, hardware-initialized, read-write, or write-1-to-clear. A software write changes
// only RW bits (to the written value) and RW1C bits (cleared where a 1 is written); the
// device side sets bits directly. Values are little-endian: the byte at offset o is the least
// significant byte of a multi-byte register at o.
#ifndef DXPU_LIB_GPU_REGISTER_FILE_H_
#define DXPU_LIB_GPU_REGISTER_FILE_H_

#include <array>
#include <cstdint>
#include <span>

#include "gpu/pci_regs.h"

namespace dxpu::gpu {

enum class BitAccess : uint8_t {
  kReadOnly,       // RO (also RsvdP/RsvdZ): software writes have no effect; hardware may change it
  kHwInit,         // HwInit: set at power-on from the profile, read-only to software
  kReadWrite,      // RW
  kWrite1ToClear,  // RW1C: status, set by hardware, cleared by writing 1
};

// One register (or part of one) for RegisterFile::Define: `size` bytes at `offset` with the
// power-on `value`; the bits in `rw` are RW, those in `rw1c` RW1C, those in `hwinit` HwInit,
// the rest read-only. The masks must be disjoint.
struct RegisterSpec {
  uint16_t offset = 0;
  uint8_t size = 4;  // 1, 2 or 4
  uint32_t value = 0;
  uint32_t rw = 0;
  uint32_t rw1c = 0;
  uint32_t hwinit = 0;
};

class RegisterFile {
 public:
  static constexpr uint32_t kSize = pci::kConfigSpaceSize;

  // Sets value and access of every bit of the register. Out-of-range bytes are ignored.
  void Define(const RegisterSpec& spec);

  // `size` (1..4) bytes at `offset` as a little-endian value; bytes past the end read 0xff.
  uint32_t Read(uint32_t offset, uint32_t size) const;

  // A software write of one byte: RW bits take the new value, RW1C bits written 1 clear.
  void WriteByte(uint32_t offset, uint8_t value);

  // The device side: sets or clears bits whatever their access (status bits, pending bits,
  // registers the hardware keeps up to date).
  void SetBits(uint32_t offset, uint32_t size, uint32_t bits);
  void ClearBits(uint32_t offset, uint32_t size, uint32_t bits);

  BitAccess AccessOf(uint32_t offset, unsigned bit) const;
  // The masks of `size` bytes at `offset`, little-endian like Read.
  uint32_t WritableMask(uint32_t offset, uint32_t size) const;  // RW bits
  uint32_t Write1ClearMask(uint32_t offset, uint32_t size) const;

  std::span<const uint8_t, kSize> bytes() const { return value_; }

  bool operator==(const RegisterFile&) const = default;

 private:
  static uint32_t Gather(const std::array<uint8_t, kSize>& a, uint32_t offset, uint32_t size,
                         uint8_t past_end);

  std::array<uint8_t, kSize> value_{};
  std::array<uint8_t, kSize> rw_{};
  std::array<uint8_t, kSize> rw1c_{};
  std::array<uint8_t, kSize> hwinit_{};
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_REGISTER_FILE_H_
