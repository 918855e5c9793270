// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_iova.c - the IOVA space of the devices on dxpu's bus: the bus addresses the DMA API
 * (dxpu_dma_ops.c) hands out, in the host's DMA range. One allocator for every mapping, so no
 * two DMA windows of a device ever overlap. A range is the lowest with room for it (first fit,
 * the list kept in IOVA order), a guard page from the ranges beside it, so freed space is used
 * again however much is mapped over time, and a device's overrun past a mapping lands where
 * nothing is mapped.
 *
 * Locking: dxpu_iova_lock (a spinlock, interrupts off) guards the list and is a leaf: the DMA
 * API maps in any context but NMI.
 */
#include <linux/mm.h>
#include <linux/spinlock.h>

#include "dxpu_iova.h"

/* The host's DMA range (docs/host-proxy.md, "The host's address map"). */
#define DXPU_DMA_BASE 0x100000000ull
#define DXPU_DMA_END 0x4000000000ull /* the most dxpu_iova_init takes */
#define DXPU_DMA_GUARD PAGE_SIZE     /* unmapped between ranges: an overrun is refused */

static DEFINE_SPINLOCK(dxpu_iova_lock); /* the ranges taken, in IOVA order */
static LIST_HEAD(dxpu_iova_ranges);
static u64 dxpu_dma_end = DXPU_DMA_END; /* IOVAs lie in [DXPU_DMA_BASE, dxpu_dma_end) */

int dxpu_iova_init(u64 dma_space)
{
	if (dma_space < PAGE_SIZE || dma_space > DXPU_DMA_END - DXPU_DMA_BASE)
		return -EINVAL;
	dxpu_dma_end = DXPU_DMA_BASE + dma_space;
	return 0;
}

u64 dxpu_iova_last(void)
{
	return dxpu_dma_end - 1;
}

/*
 * The lowest IOVA at or below limit with size bytes free, a guard page from the ranges before
 * and after it: r->start, and in *next the list entry to insert r before. Caller holds
 * dxpu_iova_lock.
 */
static int dxpu_iova_place(struct dxpu_iova *r, u64 limit, struct list_head **next)
{
	struct list_head *before = &dxpu_iova_ranges; /* the list's end, unless a gap is found */
	struct dxpu_iova *cur;
	u64 at = DXPU_DMA_BASE;
	u64 end = min(dxpu_dma_end - 1, limit); /* the last usable byte */

	lockdep_assert_held(&dxpu_iova_lock);
	list_for_each_entry(cur, &dxpu_iova_ranges, node) {
		if (at + r->size + DXPU_DMA_GUARD <= cur->start) {
			before = &cur->node;
			break;
		}
		at = cur->start + cur->size + DXPU_DMA_GUARD;
	}
	if (end < DXPU_DMA_BASE || at > end || r->size - 1 > end - at)
		return -ENOSPC;
	r->start = at;
	*next = before;
	return 0;
}

int dxpu_iova_alloc(struct dxpu_iova *r, u64 size, u64 limit)
{
	struct list_head *next;
	unsigned long flags;
	int err;

	if (!size || size > DXPU_DMA_END - DXPU_DMA_BASE)
		return -EINVAL;
	r->size = PAGE_ALIGN(size);
	spin_lock_irqsave(&dxpu_iova_lock, flags);
	err = dxpu_iova_place(r, limit, &next);
	if (!err)
		list_add_tail(&r->node, next);
	spin_unlock_irqrestore(&dxpu_iova_lock, flags);
	return err;
}

void dxpu_iova_free(struct dxpu_iova *r)
{
	unsigned long flags;

	spin_lock_irqsave(&dxpu_iova_lock, flags);
	list_del(&r->node);
	spin_unlock_irqrestore(&dxpu_iova_lock, flags);
}

void dxpu_iova_exit(void)
{
	WARN_ON(!list_empty(&dxpu_iova_ranges));
}
