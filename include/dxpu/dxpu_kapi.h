/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_kapi.h - what dxpu.ko exports to other kernel code: access to the BARs of a device on
 * dxpu's bus (whichever driver has it) without the CPU's loads and stores, each access a TLP
 * over the fabric (transparent MMIO turns the CPU's into the same TLPs; a test compares the
 * two paths). Process context only: reads sleep until their completion (at most the request
 * timeout, request_timeout_ms).
 */
#ifndef DXPU_KAPI_H
#define DXPU_KAPI_H

#include <linux/pci.h>
#include <linux/types.h>

int dxpu_mmio_read(struct pci_dev *pdev, int bar, u64 offset, void *buf, u32 len);
int dxpu_mmio_write(struct pci_dev *pdev, int bar, u64 offset, const void *buf, u32 len);

/*
 * A device on dxpu's bus (any driver): its DMA API mappings (windows now, made and removed
 * since it was added, refused), and its bridge's DMA served and refused (UR reads, dropped
 * writes) for all the bridge's devices. -ENODEV for a device dxpu does not serve.
 */
struct dxpu_dma_stats {
	u64 windows, mapped, unmapped, map_errors;
	u64 dma_reads, dma_writes, refused_reads, refused_writes;
};

int dxpu_dma_stats(struct pci_dev *pdev, struct dxpu_dma_stats *st);

#endif /* DXPU_KAPI_H */
