// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_pci.c - the virtual PCI domain: a free domain number at or above 0x10000, a root
 * bus on it with pci_ops that never sleep, scanned and added like any host bridge's.
 * Its two windows, taken from the iomem tree so that nothing else is placed there, are
 * where the PCI core puts the remote devices' BARs: 32-bit BARs below 4 GiB, 64-bit
 * prefetchable ones above. Nothing on the CPU's side decodes these addresses; the devices'
 * MMIO goes over the fabric through the module's accessors.
 *
 * Remote devices appear on the bus as their slots are powered (dxpu_slot.c); configuration
 * reads come from each device's shadow, writes go to the device and into the shadow.
 */
#include <asm/unaligned.h>
#include <linux/delay.h>
#include <linux/ioport.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "dxpu.h"
#include "dxpu_msi.h"
#include "dxpu_iova.h"

#define DXPU_FIRST_DOMAIN 0x10000

/* One past the highest domain in use, and never below DXPU_FIRST_DOMAIN. */
static int dxpu_free_domain(void)
{
	struct pci_bus *bus = NULL;
	int domain = DXPU_FIRST_DOMAIN - 1;

	while ((bus = pci_find_next_bus(bus)) != NULL)
		domain = max(domain, pci_domain_nr(bus));
	return domain + 1;
}

static struct dxpu_domain *dxpu_bus_domain(struct pci_bus *bus)
{
	return container_of((struct pci_sysdata *)bus->sysdata, struct dxpu_domain, sysdata);
}

/* The slot an access at devfn/where/size goes to, or NULL and *ret the PCIBIOS error. */
static struct dxpu_slot *dxpu_cfg_slot(struct pci_bus *bus, unsigned int devfn, int where, int size,
				       int *ret)
{
	struct dxpu_domain *d = dxpu_bus_domain(bus);
	unsigned int nr = PCI_SLOT(devfn);

	*ret = PCIBIOS_DEVICE_NOT_FOUND;
	if (!pci_is_root_bus(bus) || PCI_FUNC(devfn) != 0 || nr >= d->nr_slots)
		return NULL;
	*ret = PCIBIOS_BAD_REGISTER_NUMBER;
	if (!dxpu_cfg_access_ok(where, size))
		return NULL;
	*ret = PCIBIOS_SUCCESSFUL;
	return &d->slots[nr];
}

/* Reads come from the attached device's shadow: they never wait for the network. */
static int dxpu_cfg_read(struct pci_bus *bus, unsigned int devfn, int where, int size, u32 *val)
{
	struct dxpu_slot *s;
	unsigned long flags;
	int ret;

	PCI_SET_ERROR_RESPONSE(val);
	s = dxpu_cfg_slot(bus, devfn, where, size, &ret);
	if (!s)
		return ret;
	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	if (s->shadow)
		*val = dxpu_cfg_shadow_read(s->shadow, where, size);
	else
		ret = PCIBIOS_DEVICE_NOT_FOUND;
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return ret;
}

/*
 * A write is applied to the shadow as the device applies it, and queued for the device: the
 * bridge's lock is a spinlock_t, which pci_ops (under the raw pci_lock) may not take, so the
 * slot's issue work hands it over. Its DW is read back from the device after (sync_work): a
 * write the device refuses or ignores does not leave the shadow diverged. Caller holds
 * cfg_lock. False when the queue is full.
 */
static bool dxpu_cfg_queue_write(struct dxpu_slot *s, int where, int size, u32 val)
{
	struct dxpu_cfg_write *w;

	if (s->q_tail - s->q_head >= DXPU_CFG_QUEUE)
		return false;
	w = &s->queue[s->q_tail++ % DXPU_CFG_QUEUE];
	w->reg = where & ~3;
	w->be = ((1u << size) - 1) << (where & 3);
	w->val = val << (8 * (where & 3));
	dxpu_cfg_shadow_write(s->shadow, where, size, val);
	if (where < s->shadow->size)
		__set_bit(where / 4, s->dirty);
	return true;
}

static int dxpu_cfg_write(struct pci_bus *bus, unsigned int devfn, int where, int size, u32 val)
{
	struct dxpu_slot *s;
	unsigned long flags;
	int ret;

	s = dxpu_cfg_slot(bus, devfn, where, size, &ret);
	if (!s)
		return ret;
	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	if (!s->shadow)
		ret = PCIBIOS_DEVICE_NOT_FOUND;
	else if (!dxpu_cfg_queue_write(s, where, size, val))
		ret = PCIBIOS_SET_FAILED;
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	if (ret == PCIBIOS_SUCCESSFUL)
		schedule_work(&s->issue_work); /* queue_work takes only raw locks: any context */
	return ret;
}

static struct pci_ops dxpu_pci_ops = {
	.read = dxpu_cfg_read,
	.write = dxpu_cfg_write,
};

struct dxpu_slot *dxpu_slot_get(struct pci_dev *pdev, struct dxpu_bridge **bridge)
{
	struct dxpu_slot *s;
	unsigned long flags;
	bool bindable;
	int ret;

	if (pdev->bus->ops != &dxpu_pci_ops)
		return NULL;
	s = dxpu_cfg_slot(pdev->bus, pdev->devfn, 0, 4, &ret);
	if (!s)
		return NULL;
	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	bindable = s->bindable;
	if (bindable) {
		*bridge = s->bridge; /* set before bindable, cleared after it */
		dxpu_bridge_get(*bridge);
	}
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return bindable ? s : NULL;
}

void dxpu_slot_set_shadow(struct dxpu_slot *s, struct dxpu_cfg_shadow *sh, bool bindable)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	if (sh && !s->shadow)
		bitmap_zero(s->dirty, DXPU_CFG_DWS);
	s->shadow = sh;
	s->bindable = bindable;
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
}

/* ---- the queue of configuration writes, handed to the bridge outside pci_ops ---- */

/* The oldest write queued before until, if any. */
static bool dxpu_cfg_peek(struct dxpu_slot *s, u32 until, struct dxpu_cfg_write *w)
{
	unsigned long flags;
	bool any;

	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	any = (s32)(until - s->q_head) > 0;
	if (any)
		*w = s->queue[s->q_head % DXPU_CFG_QUEUE];
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return any;
}

/* The oldest write is gone; failed: it did not reach the device, so its DW is read back. */
static void dxpu_cfg_pop(struct dxpu_slot *s, bool failed)
{
	struct dxpu_cfg_write *w;
	unsigned long flags;

	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	w = &s->queue[s->q_head++ % DXPU_CFG_QUEUE];
	if (failed && s->shadow && w->reg < s->shadow->size)
		__set_bit(w->reg / 4, s->dirty);
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
}

/*
 * Hands the writes queued before until to the bridge, oldest first: 0 once none is left, or
 * -EBUSY when the bridge has no room for the oldest now (it stays first in the queue). A
 * write the session refuses (it is down) is dropped. *sent: whether any went. Any context.
 */
static int dxpu_cfg_issue(struct dxpu_slot *s, u32 until, bool *sent)
{
	struct dxpu_cfg_write w;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&s->issue_lock, flags);
	while (dxpu_cfg_peek(s, until, &w)) {
		err = dxpu_bridge_cfg_write_nowait(s->bridge, s->remote_bdf, w.reg, w.be, w.val);
		if (err == -EBUSY)
			break;
		if (err && err != -ENOLINK) /* not when the session is down: all is lost then */
			pr_warn_ratelimited("dxpu: %s: configuration write to 0x%x lost: %d\n",
					    s->name, w.reg, err);
		dxpu_cfg_pop(s, err != 0);
		*sent = true;
		err = 0;
	}
	spin_unlock_irqrestore(&s->issue_lock, flags);
	return err;
}

/* Writes before until that found no room in time: dropped, their DWs read back later. */
static void dxpu_cfg_drop(struct dxpu_slot *s, u32 until)
{
	struct dxpu_cfg_write w;
	unsigned long flags;

	spin_lock_irqsave(&s->issue_lock, flags);
	while (dxpu_cfg_peek(s, until, &w)) {
		pr_warn_ratelimited("dxpu: %s: a configuration write to 0x%x found no room\n",
				    s->name, w.reg);
		dxpu_cfg_pop(s, true);
	}
	spin_unlock_irqrestore(&s->issue_lock, flags);
}

/*
 * Waits for room as requests do (dxpu_txn.c): up to DXPU_HOSTPATH_ISSUE_PATIENCE_NS, sleeping,
 * or with interrupts off (atomic) receiving by polling meanwhile.
 */
static void dxpu_slot_cfg_flush_as(struct dxpu_slot *s, bool atomic)
{
	u64 give_up = ktime_get_ns() + DXPU_HOSTPATH_ISSUE_PATIENCE_NS;
	unsigned long flags;
	bool sent = false;
	u32 until;

	if (atomic)
		lockdep_assert_irqs_disabled();
	else
		might_sleep();
	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	until = s->q_tail;
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	while (dxpu_cfg_issue(s, until, &sent) == -EBUSY) {
		if (ktime_get_ns() >= give_up) {
			dxpu_cfg_drop(s, until);
			sent = true; /* their DWs are read back */
			break;
		}
		if (atomic)
			dxpu_bridge_service(s->bridge);
		else
			usleep_range(200, 1000);
	}
	if (sent)
		schedule_work(&s->sync_work);
}

void dxpu_slot_cfg_flush(struct dxpu_slot *s)
{
	dxpu_slot_cfg_flush_as(s, false);
}

void dxpu_slot_cfg_flush_atomic(struct dxpu_slot *s)
{
	dxpu_slot_cfg_flush_as(s, true);
}

static void dxpu_slot_issue_work(struct work_struct *work)
{
	dxpu_slot_cfg_flush(container_of(work, struct dxpu_slot, issue_work));
}

/*
 * The DW at dw read from the device becomes the shadow's, unless it was written again since
 * (then it is read again later). False once the slot has no shadow.
 */
static bool dxpu_cfg_sync_dw(struct dxpu_slot *s, unsigned int dw)
{
	unsigned long flags;
	bool live;
	u32 val;
	int err;

	err = dxpu_bridge_cfg_read(s->bridge, s->remote_bdf, dw * 4, &val);
	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	live = s->shadow;
	if (live && !err && !test_bit(dw, s->dirty))
		put_unaligned_le32(val, &s->shadow->space[dw * 4]);
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return live;
}

/*
 * The DWs written since they were last read back are read from the device, after the writes
 * (configuration requests reach the device in the order they are issued): the shadow holds
 * what the device holds, also where it refused a write or ignored part of it.
 */
static void dxpu_slot_sync_work(struct work_struct *work)
{
	struct dxpu_slot *s = container_of(work, struct dxpu_slot, sync_work);
	DECLARE_BITMAP(todo, DXPU_CFG_DWS);
	unsigned long flags;
	unsigned int dw;

	raw_spin_lock_irqsave(&s->domain->cfg_lock, flags);
	bitmap_copy(todo, s->dirty, DXPU_CFG_DWS);
	bitmap_zero(s->dirty, DXPU_CFG_DWS);
	raw_spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	dxpu_slot_cfg_flush(s); /* every write to these DWs issued before they are read */
	for (dw = find_first_bit(todo, DXPU_CFG_DWS); dw < DXPU_CFG_DWS;
	     dw = find_next_bit(todo, DXPU_CFG_DWS, dw + 1))
		if (!dxpu_cfg_sync_dw(s, dw))
			return;
}

void dxpu_slot_cfg_stop(struct dxpu_slot *s)
{
	dxpu_slot_cfg_flush(s); /* nothing is queued after this: the shadow is gone */
	cancel_work_sync(&s->issue_work);
	cancel_work_sync(&s->sync_work);
}

int dxpu_slot_cfg_init(struct dxpu_slot *s)
{
	s->queue = kcalloc(DXPU_CFG_QUEUE, sizeof(*s->queue), GFP_KERNEL);
	if (!s->queue)
		return -ENOMEM;
	spin_lock_init(&s->issue_lock);
	INIT_WORK(&s->issue_work, dxpu_slot_issue_work);
	INIT_WORK(&s->sync_work, dxpu_slot_sync_work);
	return 0;
}

void dxpu_slot_cfg_free(struct dxpu_slot *s)
{
	kfree(s->queue);
	s->queue = NULL;
}

/*
 * Every device added to our root bus, by attach or by a rescan, gets dxpu's DMA API here:
 * BUS_NOTIFY_ADD_DEVICE comes from device_add(), before pci_bus_add_device() lets any driver
 * probe it, and BUS_NOTIFY_DEL_DEVICE from device_del(), after its driver's remove (the
 * earliest and the latest a driver can map anything). Which driver binds is the PCI core's
 * business (id_table, or driver_override written by an administrator).
 */
static int dxpu_pci_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	struct dxpu_domain *d = container_of(nb, struct dxpu_domain, pci_nb);
	struct pci_dev *pdev = to_pci_dev(data);

	if (pdev->bus != d->root)
		return NOTIFY_DONE;
	if (action == BUS_NOTIFY_DEL_DEVICE) {
		dxpu_dma_ops_detach(pdev);
		return NOTIFY_OK;
	}
	if (action != BUS_NOTIFY_ADD_DEVICE)
		return NOTIFY_DONE;
	dxpu_dma_ops_attach(pdev);
	return NOTIFY_OK;
}

/* A window of size bytes (a power of two, so aligned to its size) in [min, max] of iomem. */
static int dxpu_window_alloc(struct resource *r, const char *name, unsigned long flags, u64 size,
			     u64 min, u64 max)
{
	*r = (struct resource)DEFINE_RES_NAMED(0, 0, name, flags);
	if (!size || !is_power_of_2(size))
		return -EINVAL;
	return allocate_resource(&iomem_resource, r, size, min, max, size, NULL, NULL);
}

/*
 * The 32-bit window: free iomem below 4 GiB, or else a piece of a firmware root bus's 32-bit
 * memory window (below 4 GiB all of the address space past RAM is usually claimed by those
 * windows); taken from it as a busy child, so the PCI core places nothing else there.
 */
static int dxpu_window32_alloc(struct resource *r, u64 size)
{
	struct pci_bus *bus = NULL;
	struct resource *win;
	int err, i;

	err = dxpu_window_alloc(r, "dxpu 32-bit BARs", IORESOURCE_MEM, size, PCIBIOS_MIN_MEM,
				SZ_4G - 1);
	if (err != -EBUSY)
		return err;
	while ((bus = pci_find_next_bus(bus)) != NULL) {
		pci_bus_for_each_resource(bus, win, i) {
			if (!win || resource_type(win) != IORESOURCE_MEM ||
			    (win->flags & IORESOURCE_PREFETCH) || win->end >= SZ_4G)
				continue;
			if (!allocate_resource(win, r, size,
					       max_t(u64, win->start, PCIBIOS_MIN_MEM), win->end,
					       size, NULL, NULL))
				return 0;
		}
	}
	return -EBUSY;
}

static void dxpu_window_free(struct resource *r)
{
	if (r->parent)
		release_resource(r);
}

int dxpu_domain_create(struct dxpu_domain *d, struct device *parent, u64 mem32_size, u64 mem64_size)
{
	LIST_HEAD(resources);
	int err;

	d->parent = parent;
	raw_spin_lock_init(&d->cfg_lock);
	err = dxpu_window_alloc(&d->mem64, "dxpu 64-bit BARs",
				IORESOURCE_MEM | IORESOURCE_MEM_64 | IORESOURCE_PREFETCH,
				mem64_size, SZ_4G, iomem_resource.end);
	if (err) {
		dev_err(parent, "no free %llu GiB for the 64-bit BAR window (mmio64_gib): %d\n",
			mem64_size >> 30, err);
		return err;
	}
	err = dxpu_window32_alloc(&d->mem32, mem32_size);
	if (err) {
		dev_err(parent,
			"no free %llu MiB below 4 GiB for the 32-bit BAR window (mmio32_mib): %d\n",
			mem32_size >> 20, err);
		goto free_mem64;
	}
	d->busn = (struct resource)DEFINE_RES_NAMED(0, 0xff, "dxpu buses", IORESOURCE_BUS);
	pci_add_resource(&resources, &d->busn);
	pci_add_resource(&resources, &d->mem32);
	pci_add_resource(&resources, &d->mem64);

	err = dxpu_msi_create(d);
	if (err)
		goto free_mem32;
	d->pci_nb.notifier_call = dxpu_pci_notify;
	err = bus_register_notifier(&pci_bus_type, &d->pci_nb);
	if (err)
		goto destroy_msi;
	pci_lock_rescan_remove();
	d->sysdata.domain = dxpu_free_domain();
	d->sysdata.node = NUMA_NO_NODE;
	d->root = pci_create_root_bus(parent, 0, &dxpu_pci_ops, &d->sysdata, &resources);
	if (!d->root) {
		pci_unlock_rescan_remove();
		pci_free_resource_list(&resources);
		err = -ENODEV;
		goto unregister_nb;
	}
	dxpu_msi_set_bus(d);
	pci_scan_child_bus(d->root);
	pci_bus_add_devices(d->root);
	pci_unlock_rescan_remove();
	dev_info(parent, "PCI domain %04x, root bus %02x, BAR windows %pR %pR\n", d->sysdata.domain,
		 d->root->number, &d->mem32, &d->mem64);
	return 0;

unregister_nb:
	bus_unregister_notifier(&pci_bus_type, &d->pci_nb);
destroy_msi:
	dxpu_msi_destroy(d);
free_mem32:
	dxpu_window_free(&d->mem32);
free_mem64:
	dxpu_window_free(&d->mem64);
	return err;
}

void dxpu_domain_destroy(struct dxpu_domain *d)
{
	struct pci_host_bridge *bridge;

	if (!d->root)
		return;
	bridge = to_pci_host_bridge(d->root->bridge);
	pci_lock_rescan_remove();
	pci_stop_root_bus(d->root);
	pci_remove_root_bus(d->root);
	pci_unlock_rescan_remove();
	/*
	 * pci_remove_root_bus() only deletes the host bridge device: the
	 * reference pci_create_root_bus() gave us frees it (and its window list).
	 */
	put_device(&bridge->dev);
	d->root = NULL;
	bus_unregister_notifier(&pci_bus_type, &d->pci_nb);
	dxpu_msi_destroy(d);
	dxpu_window_free(&d->mem32);
	dxpu_window_free(&d->mem64);
}
