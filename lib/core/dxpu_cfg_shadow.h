/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_cfg_shadow.h - a host's copy of a remote function's configuration space: read over
 * the fabric when the function is attached, then kept in step with the writes the host
 * forwards to it, so that configuration reads never wait for the network (the kernel's
 * pci_ops run under a spinlock). Sans-IO, no allocation.
 *
 * A write changes the copy as the function applies it (type 0 header, PCI Local Bus 3.0 and
 * PCIe 6.0 section 7.5.1): read-only fields keep their value; RW1C status bits clear where a 1 is
 * written; a BAR keeps only the address bits its size leaves writable, so writing all-ones
 * reads back the size mask and the type bits, which is what BAR sizing expects. Capability
 * headers (ID and next pointer), the PCI Express capability's capability and status
 * registers and the MSI-X table location are read-only; other capability bytes take what is
 * written. The function itself stays the truth: the host forwards every write.
 */
#ifndef DXPU_CORE_DXPU_CFG_SHADOW_H
#define DXPU_CORE_DXPU_CFG_SHADOW_H

#include <dxpu/compat.h>

DXPU_EXTERN_C_BEGIN

#define DXPU_CFG_SPACE_SIZE 4096u /* PCI Express configuration space */
#define DXPU_CFG_LEGACY_SIZE 256u /* PCI configuration space */
#define DXPU_CFG_BARS 6u

struct dxpu_cfg_shadow {
	uint8_t space[DXPU_CFG_SPACE_SIZE];
	uint32_t size;			  /* bytes the function implements: 256 or 4096 */
	uint32_t bar_mask[DXPU_CFG_BARS]; /* writable bits of each BAR register (0: none) */
	uint32_t rom_mask;		  /* writable bits of the Expansion ROM BAR (0: none) */
	bool has_io_bar;		  /* I/O Space Enable is writable only then */
};

/* A configuration access the shadow serves: 1, 2 or 4 bytes, naturally aligned, below 4 KiB. */
bool dxpu_cfg_access_ok(uint32_t where, uint32_t size);

/*
 * The copy from space[0..size) (size 256 or 4096; false, and nothing set, otherwise).
 * bar_mask: what each BAR register read back after all-ones was written to it, the type
 * bits included (0 for none; the upper half of a 64-bit BAR reads back its own mask); the
 * writable bits are derived from it. rom_readback: the same for the Expansion ROM BAR.
 */
bool dxpu_cfg_shadow_init(struct dxpu_cfg_shadow *sh, const uint8_t *space, uint32_t size,
			  const uint32_t bar_readback[DXPU_CFG_BARS], uint32_t rom_readback);

/* The value at where (little-endian, size bytes); all-ones past the implemented size or
 * for an access dxpu_cfg_access_ok refuses.
 */
uint32_t dxpu_cfg_shadow_read(const struct dxpu_cfg_shadow *sh, uint32_t where, uint32_t size);

/* Apply a write of size bytes at where as the function would; false (nothing changed) for an
 * access dxpu_cfg_access_ok refuses. A write past the implemented size changes nothing.
 */
bool dxpu_cfg_shadow_write(struct dxpu_cfg_shadow *sh, uint32_t where, uint32_t size, uint32_t val);

/* The size in bytes a BAR register's all-ones read-back describes (the low dword of a 64-bit
 * BAR with its upper half's read-back in upper); 0 when it describes none.
 */
uint64_t dxpu_cfg_bar_size(uint32_t readback, uint32_t upper);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_CFG_SHADOW_H */
