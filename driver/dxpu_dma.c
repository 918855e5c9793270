// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_dma.c - the host's IOVA space and the host memory the remote devices may DMA through the
 * character device: buffers the module allocates (vmalloc_user: zeroed, mappable), each at an
 * IOVA of its own in the host's DMA range and registered as a DMA window of one or more devices
 * in their bridge's host transaction layer, which serves the devices' reads and writes there and
 * refuses them anywhere else.
 *
 * The IOVA space is one for every user: these buffers and the DMA API's mappings
 * (dxpu_dma_ops.c) take their ranges from the same allocator, so no two windows of a device
 * ever overlap. A range is the lowest with room for it (first fit, the list kept in IOVA
 * order), a guard page from the ranges beside it, so freed space is used again however much is
 * allocated over time, and a device's overrun past a buffer lands where nothing is mapped.
 *
 * A buffer lives while it is allocated or mapped: freeing it removes its windows at once (the
 * devices can no longer reach it), and the memory goes when the last mapping does. Its IOVA is
 * free again at once.
 *
 * Locking: dxpu_iova_lock (a spinlock, interrupts off) guards the IOVA list only and is a leaf:
 * the DMA API allocates in any context. dxpu_dma_lock is a mutex over the buffers, held for no
 * copy to or from user memory; mmap takes it under mmap_lock. A device's removal sets its lost
 * flag before it forgets the device's windows under this lock, so a call that finds the device
 * not lost under the lock adds its window before they are forgotten.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dxpu_fabric.h"
#include "dxpu_gpu.h"

/* The host's DMA range (docs/host-proxy.md, "The host's address map"). */
#define DXPU_DMA_BASE 0x100000000ull
#define DXPU_DMA_END 0x4000000000ull /* the most dxpu_dma_init takes */
#define DXPU_DMA_GUARD PAGE_SIZE     /* unmapped between buffers: an overrun is refused */
#define DXPU_DMA_MAX_SHARES 32

struct dxpu_dma_buf {
	struct kref ref;       /* allocated, and each mapping */
	struct list_head node; /* in dxpu_dma_bufs */
	const void *owner;
	struct dxpu_iova range;
	u64 size;
	void *mem;
	unsigned int nr_gpus;
	struct dxpu_gpu *gpus[DXPU_DMA_MAX_SHARES]; /* windows (no reference: removal forgets) */
};

static DEFINE_MUTEX(dxpu_dma_lock); /* the buffer list, each buffer's gpus */
static LIST_HEAD(dxpu_dma_bufs);
static DEFINE_SPINLOCK(dxpu_iova_lock); /* the ranges taken, in IOVA order */
static LIST_HEAD(dxpu_iova_ranges);
static u64 dxpu_dma_end = DXPU_DMA_END; /* IOVAs lie in [DXPU_DMA_BASE, dxpu_dma_end) */

int dxpu_dma_init(u64 dma_space)
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

static void dxpu_dma_release(struct kref *ref)
{
	struct dxpu_dma_buf *buf = container_of(ref, struct dxpu_dma_buf, ref);

	vfree(buf->mem);
	kfree(buf);
}

static struct dxpu_dma_buf *dxpu_dma_find(u64 iova)
{
	struct dxpu_dma_buf *buf;

	lockdep_assert_held(&dxpu_dma_lock);
	list_for_each_entry(buf, &dxpu_dma_bufs, node)
		if (buf->range.start == iova)
			return buf;
	return NULL;
}

static int dxpu_dma_window_add(struct dxpu_gpu *gpu, struct dxpu_dma_buf *buf)
{
	int err;

	if (buf->nr_gpus == DXPU_DMA_MAX_SHARES)
		return -ENOSPC;
	err = dxpu_bridge_add_window(gpu->bridge, gpu->remote_bdf, buf->range.start, buf->size,
				     buf->mem, DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE);
	if (err)
		return err;
	buf->gpus[buf->nr_gpus++] = gpu;
	return 0;
}

static void dxpu_dma_window_remove(struct dxpu_gpu *gpu, struct dxpu_dma_buf *buf)
{
	dxpu_bridge_remove_window(gpu->bridge, gpu->remote_bdf, buf->range.start);
}

/* buf at the lowest free IOVA, a window of gpu, on the list. Caller holds the lock. */
static int dxpu_dma_insert(struct dxpu_gpu *gpu, struct dxpu_dma_buf *buf)
{
	int err;

	if (READ_ONCE(gpu->lost))
		return -ENODEV;
	err = dxpu_iova_alloc(&buf->range, buf->size, U64_MAX);
	if (err)
		return err;
	err = dxpu_dma_window_add(gpu, buf);
	if (err) {
		dxpu_iova_free(&buf->range);
		return err;
	}
	list_add_tail(&buf->node, &dxpu_dma_bufs);
	return 0;
}

int dxpu_dma_alloc(struct dxpu_gpu *gpu, const void *owner, u64 size, u64 *iova)
{
	struct dxpu_dma_buf *buf;
	int err;

	if (!size || size > DXPU_DMA_MAX_SIZE)
		return -EINVAL;
	size = PAGE_ALIGN(size);
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	buf->mem = vmalloc_user(size);
	if (!buf->mem) {
		kfree(buf);
		return -ENOMEM;
	}
	kref_init(&buf->ref);
	buf->owner = owner;
	buf->size = size;
	mutex_lock(&dxpu_dma_lock);
	err = dxpu_dma_insert(gpu, buf);
	*iova = buf->range.start;
	mutex_unlock(&dxpu_dma_lock);
	if (err)
		kref_put(&buf->ref, dxpu_dma_release);
	return err;
}

int dxpu_dma_share(struct dxpu_gpu *gpu, u64 iova)
{
	struct dxpu_dma_buf *buf;
	unsigned int i;
	int err;

	mutex_lock(&dxpu_dma_lock);
	buf = dxpu_dma_find(iova);
	err = buf ? 0 : -ENOENT;
	if (READ_ONCE(gpu->lost))
		err = -ENODEV;
	for (i = 0; !err && i < buf->nr_gpus; i++)
		if (buf->gpus[i] == gpu)
			err = -EEXIST;
	if (!err)
		err = dxpu_dma_window_add(gpu, buf);
	mutex_unlock(&dxpu_dma_lock);
	return err;
}

/* Windows removed, off the list, the allocation's reference dropped. Caller holds the lock. */
static void dxpu_dma_destroy(struct dxpu_dma_buf *buf)
{
	unsigned int i;

	for (i = 0; i < buf->nr_gpus; i++)
		dxpu_dma_window_remove(buf->gpus[i], buf);
	buf->nr_gpus = 0;
	list_del(&buf->node);
	dxpu_iova_free(&buf->range);
	kref_put(&buf->ref, dxpu_dma_release);
}

int dxpu_dma_free(const void *owner, u64 iova)
{
	struct dxpu_dma_buf *buf;
	int err = 0;

	mutex_lock(&dxpu_dma_lock);
	buf = dxpu_dma_find(iova);
	if (!buf || buf->owner != owner)
		err = -ENOENT;
	else
		dxpu_dma_destroy(buf);
	mutex_unlock(&dxpu_dma_lock);
	return err;
}

void dxpu_dma_free_owner(const void *owner)
{
	struct dxpu_dma_buf *buf, *tmp;

	mutex_lock(&dxpu_dma_lock);
	list_for_each_entry_safe(buf, tmp, &dxpu_dma_bufs, node)
		if (buf->owner == owner)
			dxpu_dma_destroy(buf);
	mutex_unlock(&dxpu_dma_lock);
}

void dxpu_dma_forget_gpu(struct dxpu_gpu *gpu)
{
	struct dxpu_dma_buf *buf;
	unsigned int i;

	mutex_lock(&dxpu_dma_lock);
	list_for_each_entry(buf, &dxpu_dma_bufs, node) {
		for (i = 0; i < buf->nr_gpus; i++) {
			if (buf->gpus[i] != gpu)
				continue;
			dxpu_dma_window_remove(gpu, buf);
			buf->gpus[i] = buf->gpus[--buf->nr_gpus];
			break;
		}
	}
	mutex_unlock(&dxpu_dma_lock);
}

static void dxpu_dma_vm_open(struct vm_area_struct *vma)
{
	struct dxpu_dma_buf *buf = vma->vm_private_data;

	kref_get(&buf->ref);
}

static void dxpu_dma_vm_close(struct vm_area_struct *vma)
{
	struct dxpu_dma_buf *buf = vma->vm_private_data;

	kref_put(&buf->ref, dxpu_dma_release);
}

static const struct vm_operations_struct dxpu_dma_vm_ops = {
	.open = dxpu_dma_vm_open,
	.close = dxpu_dma_vm_close,
};

int dxpu_dma_mmap(struct dxpu_gpu *gpu, struct vm_area_struct *vma)
{
	u64 iova = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dxpu_dma_buf *buf;
	bool shared = false;
	unsigned int i;
	int err;

	mutex_lock(&dxpu_dma_lock);
	buf = dxpu_dma_find(iova);
	for (i = 0; buf && i < buf->nr_gpus; i++)
		shared |= buf->gpus[i] == gpu;
	if (READ_ONCE(gpu->lost)) {
		err = -ENODEV;
	} else if (!shared) {
		err = -ENOENT;
	} else if (vma->vm_end - vma->vm_start > buf->size) {
		err = -EINVAL;
	} else {
		err = remap_vmalloc_range(vma, buf->mem, 0);
		if (!err) {
			vma->vm_private_data = buf;
			vma->vm_ops = &dxpu_dma_vm_ops;
			kref_get(&buf->ref);
		}
	}
	mutex_unlock(&dxpu_dma_lock);
	return err;
}

void dxpu_dma_exit(void)
{
	WARN_ON(!list_empty(&dxpu_dma_bufs));
	WARN_ON(!list_empty(&dxpu_iova_ranges));
}
