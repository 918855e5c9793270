// bar_registers.h - a memory BAR as configuration registers. Bits 3:0 are hardware-initialized
// (memory space, 32/64-bit type, prefetchable); the address bits at and above the size are
// RW and those below it read 0, so writing all-ones reads back the size mask. A 64-bit BAR's
// upper half (index + 1) holds address bits 63:32: all RW for a BAR up to 4 GiB, and for a
// larger one the bits below the size are read-only 0 there too.
#ifndef DXPU_LIB_GPU_BAR_REGISTERS_H_
#define DXPU_LIB_GPU_BAR_REGISTERS_H_

#include <cstdint>

#include "gpu/device_profile.h"
#include "gpu/register_file.h"

namespace dxpu::gpu {

// Offset of BAR `index` in the type 0 header.
constexpr uint16_t BarOffset(uint8_t index) { return static_cast<uint16_t>(0x10 + 4 * index); }

// Defines the BAR's register(s) at `size` bytes with address 0.
void DefineBar(RegisterFile& regs, const BarSpec& bar, uint64_t size);

// Changes the BAR's size (Resizable BAR), keeping the address bits that stay writable.
void ResizeBar(RegisterFile& regs, const BarSpec& bar, uint64_t size);

// The address the BAR's registers decode to (flag bits removed).
uint64_t BarAddress(const RegisterFile& regs, const BarSpec& bar);

// The size the BAR's writable bits describe (what sizing it would find).
uint64_t BarSize(const RegisterFile& regs, const BarSpec& bar);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_BAR_REGISTERS_H_
