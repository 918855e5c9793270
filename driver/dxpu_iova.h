/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_iova.h - the IOVA space of the devices on dxpu's bus (dxpu_iova.c) and the DMA API that
 * hands it out (dxpu_dma_ops.c).
 */
#ifndef DXPU_DRIVER_DXPU_IOVA_H
#define DXPU_DRIVER_DXPU_IOVA_H

#include <linux/list.h>
#include <linux/pci.h>
#include <linux/types.h>

/* A range of the IOVA space: one DMA API mapping. */
struct dxpu_iova {
	struct list_head node; /* in the space's list, in IOVA order */
	u64 start;	       /* page-aligned */
	u64 size;	       /* a multiple of the page size */
};

/* The IOVA space: dma_space bytes of the host's DMA range (-EINVAL: too small or too large). */
int dxpu_iova_init(u64 dma_space);
/* Every range given back (says so when one is not). */
void dxpu_iova_exit(void);
/* The space's last IOVA: a DMA mask must reach it. */
u64 dxpu_iova_last(void);
/*
 * r at the lowest free IOVA with room for size bytes (rounded up to pages) whose last byte is
 * at most limit (a DMA mask), a guard page from its neighbours. -ENOSPC: no such room. Any
 * context but NMI (a spinlock, interrupts off).
 */
int dxpu_iova_alloc(struct dxpu_iova *r, u64 size, u64 limit);
void dxpu_iova_free(struct dxpu_iova *r);

/*
 * A device added to dxpu's bus (BUS_NOTIFY_ADD_DEVICE, before any driver can probe it) gets
 * dxpu's dma_map_ops, serving it in its slot's bridge; at its deletion (BUS_NOTIFY_DEL_DEVICE,
 * after its driver let go) what it left mapped goes, windows first. Process context.
 */
void dxpu_dma_ops_attach(struct pci_dev *pdev);
void dxpu_dma_ops_detach(struct pci_dev *pdev);

#endif /* DXPU_DRIVER_DXPU_IOVA_H */
