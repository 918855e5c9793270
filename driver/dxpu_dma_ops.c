// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_dma_ops.c - the DMA API for the devices on dxpu's bus, served as an IOMMU would serve it:
 * every dma_alloc_coherent, dma_map_single/page and scatterlist segment gets an IOVA of its own
 * from dxpu's IOVA space (dxpu_iova.c) and becomes a DMA window of that device in its bridge's
 * host path (a merged scatterlist: one range, a window per segment): exactly the bytes mapped,
 * readable by the device for DMA_TO_DEVICE, writable for DMA_FROM_DEVICE, both for
 * bidirectional and coherent memory. The host path answers anything else the device reads with
 * UR and drops anything else it writes, and counts both (/sys/devices/dxpu/bridges); nothing
 * outside a window ever touches host memory. Unmapping removes the window before its IOVA is
 * free again.
 *
 * The memory is coherent: the host path copies the device's writes into the mapped memory with
 * the CPU, and serves its reads from that memory, under the bridge's lock; no cache or bounce
 * buffer sits between them, so the dma_sync_* calls have nothing to do (the ops leave them out).
 *
 * Each device has its own struct dxpu_dma_dev, whose first member is the dma_map_ops its
 * dev->dma_ops points at: an op finds its device's state without a lookup. It is set when the
 * device is added to dxpu's bus (before any driver can probe it) and replaced by
 * dxpu_dma_gone_ops when the device is deleted (after its driver let go).
 *
 * Locking: mapping and unmapping run in any context but NMI (a driver maps in softirq context,
 * or under a spin_lock_irqsave): no sleeping, allocations as the caller's gfp allows (GFP_ATOMIC
 * for streaming maps). A device's lock (a spinlock, interrupts off) guards its set of mappings;
 * the IOVA space's lock and the bridge's are taken after it is released, never inside it. In
 * hard interrupt context the bridge's lock is only tried (dxpu_bridge_add_window): a mapping
 * fails when it is busy, and an unmapping's window is removed by a work item instead (the
 * IOVA stays taken until then, as an IOMMU's lazy flush keeps it).
 */
#include <linux/dma-map-ops.h>
#include <linux/rbtree.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <dxpu/dxpu_kapi.h>

#include "dxpu.h"
#include "dxpu_fabric.h"
#include "dxpu_iova.h"

struct dxpu_dma_map {
	struct rb_node node;   /* in the device's maps, by addr */
	struct list_head dead; /* in the device's dead list, its window still to remove */
	struct dxpu_iova range;
	dma_addr_t addr; /* what the driver got: range.start + the offset in the page */
	size_t size;	 /* the window: exactly the bytes mapped */
	void *cpu;	 /* the memory behind it (a merged scatterlist's: its first segment's) */
	bool coherent;	 /* dma_alloc_coherent's: its pages go with it */
	unsigned int nr_windows; /* a merged scatterlist's: one window per segment, */
	u64 *windows;		 /* at these IOVAs; NULL: the one window at addr */
};

struct dxpu_dma_dev {
	const struct dma_map_ops ops; /* first: dev->dma_ops point here */
	struct pci_dev *pdev;
	struct dxpu_bridge *bridge; /* a reference until detach */
	u16 bdf;		    /* the device's Requester ID in the bridge's windows */
	spinlock_t lock;	    /* the four below */
	struct rb_root maps;
	unsigned int nr_maps;
	struct list_head dead; /* unmapped in hard interrupt context with the bridge's lock busy */
	bool gone;
	struct work_struct dead_work;
	atomic64_t mapped, unmapped, map_errors;
};

static struct dxpu_dma_dev *dxpu_dma_dev(struct device *dev)
{
	return container_of(get_dma_ops(dev), struct dxpu_dma_dev, ops);
}

static u16 dxpu_dma_rights(enum dma_data_direction dir)
{
	switch (dir) {
	case DMA_TO_DEVICE:
		return DXPU_HOST_WIN_READ;
	case DMA_FROM_DEVICE:
		return DXPU_HOST_WIN_WRITE;
	case DMA_BIDIRECTIONAL:
		return DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE;
	default:
		return 0;
	}
}

/* The highest address a streaming mapping of dev may have. */
static u64 dxpu_dma_limit(struct device *dev)
{
	return min_not_zero(*dev->dma_mask, dev->bus_dma_limit);
}

/* A mapping refused: counted, and said (ratelimited) with why. */
static void dxpu_dma_refuse(struct dxpu_dma_dev *d, const char *what, size_t size, u64 limit,
			    int err)
{
	struct device *dev = &d->pdev->dev;

	atomic64_inc(&d->map_errors);
	dev_warn_ratelimited(dev,
			     "dxpu: DMA %s of %zu bytes refused (%d): %u windows, mask %#llx\n",
			     what, size, err, READ_ONCE(d->nr_maps), limit);
}

/* The IOVA, the record and the pages of a mapping whose windows are gone. */
static void dxpu_dma_release(struct dxpu_dma_map *m)
{
	dxpu_iova_free(&m->range);
	if (m->coherent)
		free_pages_exact(m->cpu, PAGE_ALIGN(m->size));
	kfree(m->windows);
	kfree(m);
}

/* m's windows removed from the bridge: outside hard interrupt context, where it cannot fail. */
static void dxpu_dma_remove_windows(struct dxpu_dma_dev *d, struct dxpu_dma_map *m)
{
	unsigned int i;

	if (!m->windows) {
		dxpu_bridge_remove_window(d->bridge, d->bdf, m->addr);
		return;
	}
	for (i = 0; i < m->nr_windows; i++)
		dxpu_bridge_remove_window(d->bridge, d->bdf, m->windows[i]);
}

static void dxpu_dma_dead_work(struct work_struct *work)
{
	struct dxpu_dma_dev *d = container_of(work, struct dxpu_dma_dev, dead_work);
	struct dxpu_dma_map *m, *tmp;
	unsigned long flags;
	LIST_HEAD(dead);

	spin_lock_irqsave(&d->lock, flags);
	list_splice_init(&d->dead, &dead);
	spin_unlock_irqrestore(&d->lock, flags);
	list_for_each_entry_safe(m, tmp, &dead, dead) {
		dxpu_dma_remove_windows(d, m);
		dxpu_dma_release(m);
	}
}

/*
 * m's windows removed, then the rest of it; in hard interrupt context, later in a work item
 * when the bridge's lock is busy (and always for a merged scatterlist's windows: all or none).
 */
static void dxpu_dma_retire(struct dxpu_dma_dev *d, struct dxpu_dma_map *m)
{
	unsigned long flags;

	if (!in_hardirq())
		dxpu_dma_remove_windows(d, m);
	if (!in_hardirq() ||
	    (!m->windows && !dxpu_bridge_remove_window(d->bridge, d->bdf, m->addr))) {
		dxpu_dma_release(m);
		return;
	}
	spin_lock_irqsave(&d->lock, flags);
	list_add_tail(&m->dead, &d->dead);
	spin_unlock_irqrestore(&d->lock, flags);
	schedule_work(&d->dead_work);
}

/* m among the device's mappings, unless it is being deleted. */
static int dxpu_dma_insert(struct dxpu_dma_dev *d, struct dxpu_dma_map *m)
{
	struct rb_node **link = &d->maps.rb_node, *parent = NULL;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&d->lock, flags);
	if (d->gone) {
		err = -ENODEV;
		goto out;
	}
	while (*link) {
		parent = *link;
		if (m->addr < rb_entry(parent, struct dxpu_dma_map, node)->addr)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&m->node, parent, link);
	rb_insert_color(&m->node, &d->maps);
	d->nr_maps++;
out:
	spin_unlock_irqrestore(&d->lock, flags);
	return err;
}

/* The mapping the driver got addr for, taken off the device's set; NULL if none. */
static struct dxpu_dma_map *dxpu_dma_take(struct dxpu_dma_dev *d, dma_addr_t addr)
{
	struct rb_node *n;
	struct dxpu_dma_map *m = NULL;
	unsigned long flags;

	spin_lock_irqsave(&d->lock, flags);
	for (n = d->maps.rb_node; n;) {
		struct dxpu_dma_map *cur = rb_entry(n, struct dxpu_dma_map, node);

		if (addr == cur->addr) {
			m = cur;
			rb_erase(n, &d->maps);
			d->nr_maps--;
			break;
		}
		n = addr < cur->addr ? n->rb_left : n->rb_right;
	}
	spin_unlock_irqrestore(&d->lock, flags);
	return m;
}

/*
 * A mapping record with an IOVA range for size bytes starting off bytes into its first page,
 * no higher than limit; NULL with *err as map_sg returns it (-ENOMEM: no IOVA or no memory,
 * -EINVAL: nothing to map).
 */
static struct dxpu_dma_map *dxpu_dma_new(size_t off, size_t size, u64 limit, gfp_t gfp, int *err)
{
	struct dxpu_dma_map *m = kzalloc(sizeof(*m), gfp);

	*err = -ENOMEM;
	if (!m)
		return NULL;
	*err = dxpu_iova_alloc(&m->range, off + size, limit);
	if (*err) {
		*err = *err == -EINVAL ? -EINVAL : -ENOMEM;
		kfree(m);
		return NULL;
	}
	m->addr = m->range.start + off;
	m->size = size;
	return m;
}

/* A window at iova of the device: 0, or as map_sg says it (-ENOMEM: no window left). */
static int dxpu_dma_add_window(struct dxpu_dma_dev *d, u64 iova, size_t size, void *cpu, u16 rights)
{
	int err = dxpu_bridge_add_window(d->bridge, d->bdf, iova, size, cpu, rights);

	if (!err)
		return 0;
	return err == -ENOSPC || err == -EBUSY ? -ENOMEM : -EIO;
}

/* m, its windows added, among the device's mappings; retired on failure. */
static int dxpu_dma_commit(struct dxpu_dma_dev *d, struct dxpu_dma_map *m, bool coherent)
{
	if (dxpu_dma_insert(d, m)) {
		dxpu_dma_retire(d, m);
		return -EIO;
	}
	m->coherent = coherent; /* after every failure: the caller frees its own pages */
	atomic64_inc(&d->mapped);
	return 0;
}

/*
 * size bytes at cpu a window of the device with rights, at an IOVA no higher than limit:
 * 0 and *addr, or a negative errno as map_sg returns them (-ENOMEM: no IOVA, no window left
 * or no memory; -EIO: the device is going; -EINVAL: nothing to map).
 */
static int dxpu_dma_map_one(struct dxpu_dma_dev *d, void *cpu, size_t size, u16 rights, u64 limit,
			    gfp_t gfp, bool coherent, dma_addr_t *addr)
{
	struct dxpu_dma_map *m;
	int err;

	if (!size || !rights)
		return -EINVAL;
	m = dxpu_dma_new(offset_in_page(cpu), size, limit, gfp, &err);
	if (!m)
		return err;
	m->cpu = cpu;
	err = dxpu_dma_add_window(d, m->addr, size, cpu, rights);
	if (err) {
		dxpu_dma_release(m);
		return err;
	}
	err = dxpu_dma_commit(d, m, coherent);
	if (!err)
		*addr = m->addr;
	return err;
}

/* The mapping at addr unmapped; a driver's address that is none is said, not fatal. */
static void dxpu_dma_unmap_one(struct dxpu_dma_dev *d, dma_addr_t addr, const char *what)
{
	struct dxpu_dma_map *m = dxpu_dma_take(d, addr);

	if (!m) {
		dev_warn_ratelimited(&d->pdev->dev, "dxpu: %s of %pad, which is not mapped\n", what,
				     &addr);
		return;
	}
	atomic64_inc(&d->unmapped);
	dxpu_dma_retire(d, m);
}

static void *dxpu_dma_api_alloc(struct device *dev, size_t size, dma_addr_t *handle, gfp_t gfp,
				unsigned long attrs)
{
	struct dxpu_dma_dev *d = dxpu_dma_dev(dev);
	gfp_t rec_gfp = gfpflags_allow_blocking(gfp) ? GFP_KERNEL : GFP_ATOMIC;
	void *cpu;
	int err;

	size = PAGE_ALIGN(size);
	cpu = alloc_pages_exact(size, (gfp & ~__GFP_COMP) | __GFP_ZERO);
	if (!cpu) {
		dxpu_dma_refuse(d, "allocation", size, dev->coherent_dma_mask, -ENOMEM);
		return NULL;
	}
	err = dxpu_dma_map_one(d, cpu, size, DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE,
			       dev->coherent_dma_mask, rec_gfp, true, handle);
	if (err) {
		free_pages_exact(cpu, size);
		dxpu_dma_refuse(d, "allocation", size, dev->coherent_dma_mask, err);
		return NULL;
	}
	return cpu;
}

/* The window goes first, then the pages (dxpu_dma_release). */
static void dxpu_dma_api_free(struct device *dev, size_t size, void *cpu, dma_addr_t handle,
			      unsigned long attrs)
{
	dxpu_dma_unmap_one(dxpu_dma_dev(dev), handle, "dma_free_coherent");
}

static dma_addr_t dxpu_dma_map_page(struct device *dev, struct page *page, unsigned long offset,
				    size_t size, enum dma_data_direction dir, unsigned long attrs)
{
	struct dxpu_dma_dev *d = dxpu_dma_dev(dev);
	u64 limit = dxpu_dma_limit(dev);
	dma_addr_t addr;
	int err;

	if (PageHighMem(page)) /* no kernel address the host path could copy through */
		err = -EINVAL;
	else
		err = dxpu_dma_map_one(d, page_address(page) + offset, size, dxpu_dma_rights(dir),
				       limit, GFP_ATOMIC, false, &addr);
	if (err) {
		dxpu_dma_refuse(d, "mapping", size, limit, err);
		return DMA_MAPPING_ERROR;
	}
	return addr;
}

static void dxpu_dma_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
				enum dma_data_direction dir, unsigned long attrs)
{
	dxpu_dma_unmap_one(dxpu_dma_dev(dev), addr, "unmapping");
}

/* Every mapped segment unmapped: up to the first of length 0 (after a merged one). */
static void dxpu_dma_unmap_sg(struct device *dev, struct scatterlist *sgl, int nents,
			      enum dma_data_direction dir, unsigned long attrs)
{
	struct dxpu_dma_dev *d = dxpu_dma_dev(dev);
	struct scatterlist *s;
	int i;

	for_each_sg(sgl, s, nents, i) {
		if (!sg_dma_len(s))
			break;
		dxpu_dma_unmap_one(d, sg_dma_address(s), "unmapping a segment");
	}
}

/*
 * Whether the segments can sit at consecutive IOVAs of one range, as an IOMMU merges them:
 * every inner boundary a page boundary (the first segment ends on one, each later one starts
 * and each but the last ends on one), so no request of the device (none crosses 4 KiB) spans
 * two segments' windows. All in the direct map.
 */
static bool dxpu_dma_sg_mergeable(struct scatterlist *sgl, int nents)
{
	struct scatterlist *s;
	int i;

	if (nents < 2)
		return false;
	for_each_sg(sgl, s, nents, i) {
		if (PageHighMem(sg_page(s)) || !s->length || (i && s->offset) ||
		    (i < nents - 1 && !PAGE_ALIGNED(s->offset + s->length)))
			return false;
	}
	return true;
}

/*
 * The segments as one DMA segment for the driver (the first's address and the whole length;
 * the others' length 0), a window of the host path per segment (each its own run of the
 * direct map) at consecutive IOVAs. 0, or the errno.
 */
static int dxpu_dma_map_sg_merged(struct dxpu_dma_dev *d, struct scatterlist *sgl, int nents,
				  u16 rights, u64 limit)
{
	struct dxpu_dma_map *m;
	struct scatterlist *s;
	size_t size = 0;
	u64 at;
	int i, err;

	for_each_sg(sgl, s, nents, i)
		size += s->length;
	if (!rights)
		return -EINVAL;
	m = dxpu_dma_new(sgl->offset, size, limit, GFP_ATOMIC, &err);
	if (!m)
		return err;
	m->cpu = sg_virt(sgl);
	m->windows = kcalloc(nents, sizeof(*m->windows), GFP_ATOMIC);
	err = m->windows ? 0 : -ENOMEM;
	at = m->addr;
	for_each_sg(sgl, s, nents, i) {
		if (err)
			break;
		err = dxpu_dma_add_window(d, at, s->length, sg_virt(s), rights);
		if (!err)
			m->windows[m->nr_windows++] = at;
		at += s->length;
	}
	if (!err)
		err = dxpu_dma_commit(d, m, false);
	else
		dxpu_dma_retire(d, m);
	if (err)
		return err;
	for_each_sg(sgl, s, nents, i) {
		sg_dma_address(s) = i ? DMA_MAPPING_ERROR : m->addr;
		sg_dma_len(s) = i ? 0 : size;
	}
	return 0;
}

/*
 * A list whose segments can be merged (dxpu_dma_sg_mergeable) is one DMA segment; otherwise
 * each segment is a window of its own. All or nothing: a segment refused unmaps those before
 * it, and the call returns the errno (dma_map_sg: 0).
 */
static int dxpu_dma_map_sg(struct device *dev, struct scatterlist *sgl, int nents,
			   enum dma_data_direction dir, unsigned long attrs)
{
	struct dxpu_dma_dev *d = dxpu_dma_dev(dev);
	u64 limit = dxpu_dma_limit(dev);
	struct scatterlist *s;
	int i, err = 0;

	if (dxpu_dma_sg_mergeable(sgl, nents)) {
		err = dxpu_dma_map_sg_merged(d, sgl, nents, dxpu_dma_rights(dir), limit);
		if (!err)
			return 1;
		dxpu_dma_refuse(d, "merged scatterlist mapping", sgl->length, limit, err);
		return err;
	}
	for_each_sg(sgl, s, nents, i) {
		if (PageHighMem(sg_page(s)))
			err = -EINVAL;
		else
			err = dxpu_dma_map_one(d, sg_virt(s), s->length, dxpu_dma_rights(dir),
					       limit, GFP_ATOMIC, false, &sg_dma_address(s));
		if (err)
			break;
		sg_dma_len(s) = s->length;
	}
	if (!err)
		return nents;
	dxpu_dma_refuse(d, "scatterlist mapping", s->length, limit, err);
	if (i)
		dxpu_dma_unmap_sg(dev, sgl, i, dir, attrs);
	return err;
}

/* A mask reaching the whole IOVA space: every IOVA dxpu hands out fits it. */
static int dxpu_dma_supported(struct device *dev, u64 mask)
{
	return mask >= dxpu_iova_last();
}

static u64 dxpu_dma_required_mask(struct device *dev)
{
	return DMA_BIT_MASK(fls64(dxpu_iova_last()));
}

/* What each device's state starts as (kmemdup): its ops, the rest set at attach. */
static const struct dxpu_dma_dev dxpu_dma_dev_init = {
		.ops = {
		.alloc = dxpu_dma_api_alloc,
		.free = dxpu_dma_api_free,
		.map_page = dxpu_dma_map_page,
		.unmap_page = dxpu_dma_unmap_page,
		.map_sg = dxpu_dma_map_sg,
		.unmap_sg = dxpu_dma_unmap_sg,
		.dma_supported = dxpu_dma_supported,
		.get_required_mask = dxpu_dma_required_mask,
	},
};

/*
 * The ops of a device dxpu no longer serves (deleted, or never attached): every mapping
 * refused; a free releases the pages dxpu left allocated at deletion (dxpu_dma_ops_detach).
 */
static void *dxpu_dma_gone_alloc(struct device *dev, size_t size, dma_addr_t *handle, gfp_t gfp,
				 unsigned long attrs)
{
	return NULL;
}

static void dxpu_dma_gone_free(struct device *dev, size_t size, void *cpu, dma_addr_t handle,
			       unsigned long attrs)
{
	free_pages_exact(cpu, PAGE_ALIGN(size));
}

static dma_addr_t dxpu_dma_gone_map_page(struct device *dev, struct page *page,
					 unsigned long offset, size_t size,
					 enum dma_data_direction dir, unsigned long attrs)
{
	return DMA_MAPPING_ERROR;
}

static void dxpu_dma_gone_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
				     enum dma_data_direction dir, unsigned long attrs)
{
}

static int dxpu_dma_gone_map_sg(struct device *dev, struct scatterlist *sgl, int nents,
				enum dma_data_direction dir, unsigned long attrs)
{
	return -EIO;
}

static void dxpu_dma_gone_unmap_sg(struct device *dev, struct scatterlist *sgl, int nents,
				   enum dma_data_direction dir, unsigned long attrs)
{
}

static const struct dma_map_ops dxpu_dma_gone_ops = {
	.alloc = dxpu_dma_gone_alloc,
	.free = dxpu_dma_gone_free,
	.map_page = dxpu_dma_gone_map_page,
	.unmap_page = dxpu_dma_gone_unmap_page,
	.map_sg = dxpu_dma_gone_map_sg,
	.unmap_sg = dxpu_dma_gone_unmap_sg,
	.dma_supported = dxpu_dma_supported,
	.get_required_mask = dxpu_dma_required_mask,
};

/* /sys/bus/pci/devices/.../dxpu_dma: the device's DMA API counts. */
static ssize_t dxpu_dma_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dxpu_dma_dev *d = dxpu_dma_dev(dev);

	return sysfs_emit(buf, "windows %u mapped %lld unmapped %lld map_errors %lld\n",
			  READ_ONCE(d->nr_maps), atomic64_read(&d->mapped),
			  atomic64_read(&d->unmapped), atomic64_read(&d->map_errors));
}
static DEVICE_ATTR_RO(dxpu_dma);

void dxpu_dma_ops_attach(struct pci_dev *pdev)
{
	struct dxpu_bridge *bridge;
	struct dxpu_slot *slot;
	struct dxpu_dma_dev *d;

	/*
	 * Without CONFIG_DMA_OPS (Debian's kernel has it) a device's dma_ops cannot be set: its
	 * driver's mappings go to dma-direct, whose physical addresses are in no window, so the
	 * host path refuses every DMA of the device. Said once.
	 */
	if (!IS_ENABLED(CONFIG_DMA_OPS)) {
		pci_warn_once(pdev, "dxpu: no CONFIG_DMA_OPS: DMA API not served, DMA refused\n");
		return;
	}
	slot = dxpu_slot_get(pdev, &bridge);
	/* A device found while its slot powers off: no driver binds it; refuse its DMA. */
	set_dma_ops(&pdev->dev, &dxpu_dma_gone_ops);
	if (!slot)
		return;
	d = kmemdup(&dxpu_dma_dev_init, sizeof(*d), GFP_KERNEL);
	if (!d) {
		pci_err(pdev, "dxpu: no memory for the DMA API: every mapping refused\n");
		dxpu_bridge_put(bridge);
		return;
	}
	d->pdev = pdev;
	d->bridge = bridge;
	d->bdf = slot->remote_bdf;
	spin_lock_init(&d->lock);
	d->maps = RB_ROOT;
	INIT_LIST_HEAD(&d->dead);
	INIT_WORK(&d->dead_work, dxpu_dma_dead_work);
	set_dma_ops(&pdev->dev, &d->ops);
	if (device_create_file(&pdev->dev, &dev_attr_dxpu_dma))
		pci_warn(pdev, "dxpu: no dxpu_dma file in sysfs\n");
}

/*
 * Every mapping the device's driver left: its window removed and its IOVA freed; coherent
 * pages are left allocated (the driver may still hold them; a late dma_free_coherent frees
 * them through the gone ops). Said once per device.
 */
void dxpu_dma_ops_detach(struct pci_dev *pdev)
{
	const struct dma_map_ops *ops = get_dma_ops(&pdev->dev);
	struct dxpu_dma_map *m;
	struct dxpu_dma_dev *d;
	unsigned int left = 0;
	struct rb_node *n;
	struct rb_root maps;
	unsigned long flags;

	if (!ops || ops->alloc != dxpu_dma_api_alloc) /* never served, or already gone */
		return;
	d = container_of(ops, struct dxpu_dma_dev, ops);
	device_remove_file(&pdev->dev, &dev_attr_dxpu_dma);
	set_dma_ops(&pdev->dev, &dxpu_dma_gone_ops);
	spin_lock_irqsave(&d->lock, flags);
	d->gone = true;
	maps = d->maps;
	d->maps = RB_ROOT;
	spin_unlock_irqrestore(&d->lock, flags);
	flush_work(&d->dead_work);
	while ((n = rb_first(&maps))) {
		m = rb_entry(n, struct dxpu_dma_map, node);
		rb_erase(n, &maps);
		dxpu_dma_remove_windows(d, m);
		m->coherent = false;
		dxpu_dma_release(m);
		left++;
	}
	if (left)
		pci_warn(pdev, "dxpu: %u DMA mappings left at removal: their windows removed\n",
			 left);
	dxpu_bridge_put(d->bridge);
	kfree(d);
}

/*
 * What the DMA API did for pdev, and what its bridge refused (for every device behind it).
 * Process context.
 */
int dxpu_dma_stats(struct pci_dev *pdev, struct dxpu_dma_stats *st)
{
	const struct dma_map_ops *ops = get_dma_ops(&pdev->dev);
	const struct dxpu_host_counters *c;
	struct dxpu_dma_dev *d;
	unsigned long flags;

	if (!ops || ops->alloc != dxpu_dma_api_alloc) /* not on dxpu's bus, or gone */
		return -ENODEV;
	d = dxpu_dma_dev(&pdev->dev);
	memset(st, 0, sizeof(*st));
	st->windows = READ_ONCE(d->nr_maps);
	st->mapped = atomic64_read(&d->mapped);
	st->unmapped = atomic64_read(&d->unmapped);
	st->map_errors = atomic64_read(&d->map_errors);
	spin_lock_irqsave(&d->bridge->lock, flags);
	c = dxpu_hostpath_host_counters(&d->bridge->hp);
	st->refused_reads = c->dma_refused_reads;
	st->refused_writes = c->dma_refused_writes;
	st->dma_reads = c->dma_reads;
	st->dma_writes = c->dma_writes;
	spin_unlock_irqrestore(&d->bridge->lock, flags);
	return 0;
}
EXPORT_SYMBOL_GPL(dxpu_dma_stats);
