// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_cfg_route.c - a memory request routed by the functions' BARs (see the header).
 */
#include "dxpu_cfg_route.h"

#define DXPU_CFG_COMMAND 0x04u
#define DXPU_CFG_COMMAND_MEMORY 0x2u
#define DXPU_CFG_BAR0 0x10u

static uint32_t dxpu_cfg_dword(const struct dxpu_cfg_shadow *sh, uint32_t where)
{
	return dxpu_cfg_shadow_read(sh, where, 4);
}

bool dxpu_cfg_claims_mem(const struct dxpu_cfg_shadow *sh, uint64_t addr, uint32_t len,
			 unsigned int *bar)
{
	uint32_t i;

	if (!len || addr + len < addr)
		return false;
	if (!(dxpu_cfg_dword(sh, DXPU_CFG_COMMAND) & DXPU_CFG_COMMAND_MEMORY))
		return false;
	for (i = 0; i < DXPU_CFG_BARS; i++) {
		uint32_t reg = dxpu_cfg_dword(sh, DXPU_CFG_BAR0 + 4 * i);
		uint64_t base = reg & ~0xFu;
		uint64_t mask = 0xFFFFFFFF00000000ull | (sh->bar_mask[i] & ~0xFu);
		bool wide = (reg & 0x7u) == 0x4u && i + 1 < DXPU_CFG_BARS;
		uint32_t first = i;

		if (reg & 0x1u || !(sh->bar_mask[i] & ~0xFu))
			continue; /* an I/O BAR, or none */
		if (wide) {
			i++;
			base |= (uint64_t)dxpu_cfg_dword(sh, DXPU_CFG_BAR0 + 4 * i) << 32;
			mask = ((uint64_t)sh->bar_mask[i] << 32) | (sh->bar_mask[first] & ~0xFu);
		}
		/* The BAR's size: its address bits below the lowest writable one. */
		if (addr >= base && addr - base < ~mask + 1 && len <= ~mask + 1 - (addr - base)) {
			if (bar)
				*bar = first;
			return true;
		}
	}
	return false;
}
