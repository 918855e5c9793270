// register_file.cc - per-bit access types over 4 KiB of registers.
#include "gpu/register_file.h"

namespace dxpu::gpu {
namespace {

uint8_t ByteOf(uint32_t v, uint32_t i) { return static_cast<uint8_t>(v >> (8 * i)); }

}  // namespace

uint32_t RegisterFile::Gather(const std::array<uint8_t, kSize>& a, uint32_t offset, uint32_t size,
                              uint8_t past_end) {
  uint32_t v = 0;
  for (uint32_t i = 0; i < size && i < 4; ++i) {
    const uint32_t o = offset + i;
    const uint32_t byte = o < kSize ? a[o] : past_end;
    v |= byte << (8 * i);
  }
  return v;
}

void RegisterFile::Define(const RegisterSpec& spec) {
  for (uint32_t i = 0; i < spec.size && i < 4; ++i) {
    const uint32_t o = uint32_t{spec.offset} + i;
    if (o >= kSize) break;
    value_[o] = ByteOf(spec.value, i);
    rw_[o] = ByteOf(spec.rw, i);
    rw1c_[o] = static_cast<uint8_t>(ByteOf(spec.rw1c, i) & ~ByteOf(spec.rw, i));
    hwinit_[o] = static_cast<uint8_t>(ByteOf(spec.hwinit, i) & ~(rw_[o] | rw1c_[o]));
  }
}

uint32_t RegisterFile::Read(uint32_t offset, uint32_t size) const {
  return Gather(value_, offset, size, 0xff);
}

void RegisterFile::WriteByte(uint32_t offset, uint8_t value) {
  if (offset >= kSize) return;
  const uint8_t rw = rw_[offset];
  const uint8_t cleared = value & rw1c_[offset];
  value_[offset] = static_cast<uint8_t>(((value_[offset] & ~rw) | (value & rw)) & ~cleared);
}

void RegisterFile::SetBits(uint32_t offset, uint32_t size, uint32_t bits) {
  for (uint32_t i = 0; i < size && i < 4 && offset + i < kSize; ++i) {
    value_[offset + i] |= ByteOf(bits, i);
  }
}

void RegisterFile::ClearBits(uint32_t offset, uint32_t size, uint32_t bits) {
  for (uint32_t i = 0; i < size && i < 4 && offset + i < kSize; ++i) {
    value_[offset + i] &= static_cast<uint8_t>(~ByteOf(bits, i));
  }
}

BitAccess RegisterFile::AccessOf(uint32_t offset, unsigned bit) const {
  if (offset >= kSize || bit > 7) return BitAccess::kReadOnly;
  const auto mask = static_cast<uint8_t>(1u << bit);
  if ((rw_[offset] & mask) != 0) return BitAccess::kReadWrite;
  if ((rw1c_[offset] & mask) != 0) return BitAccess::kWrite1ToClear;
  if ((hwinit_[offset] & mask) != 0) return BitAccess::kHwInit;
  return BitAccess::kReadOnly;
}

uint32_t RegisterFile::WritableMask(uint32_t offset, uint32_t size) const {
  return Gather(rw_, offset, size, 0);
}

uint32_t RegisterFile::Write1ClearMask(uint32_t offset, uint32_t size) const {
  return Gather(rw1c_, offset, size, 0);
}

}  // namespace dxpu::gpu
