/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_cfg_route.h - which function a memory request is for, from the functions' own
 * configuration spaces: a request belongs to the function one of whose memory BARs holds its
 * whole range while its Memory Space Enable is set, as a PCIe switch's downstream port routes
 * it (PCIe 6.0 section 7.5.1.2.1: BARs; 7.5.1.1.3: the Command register). dxpu.ko routes the
 * CPU's loads and stores to a BAR mapping this way (docs/kernel-module.md, "Transparent MMIO").
 */
#ifndef DXPU_CORE_DXPU_CFG_ROUTE_H
#define DXPU_CORE_DXPU_CFG_ROUTE_H

#include "dxpu_cfg_shadow.h"

DXPU_EXTERN_C_BEGIN

/*
 * Whether sh's function claims the memory request [addr, addr + len): len > 0, the range
 * inside one memory BAR (the BAR's number in *bar when bar is not NULL), memory decoding on.
 */
bool dxpu_cfg_claims_mem(const struct dxpu_cfg_shadow *sh, uint64_t addr, uint32_t len,
			 unsigned int *bar);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_CFG_ROUTE_H */
