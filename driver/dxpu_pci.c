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
#include <linux/ioport.h>
#include <linux/pci.h>

#include "dxpu.h"

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
	spin_lock_irqsave(&s->domain->cfg_lock, flags);
	if (s->shadow)
		*val = dxpu_cfg_shadow_read(s->shadow, where, size);
	else
		ret = PCIBIOS_DEVICE_NOT_FOUND;
	spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return ret;
}

/*
 * Writes are queued to the device, in order, without waiting (interrupts may be off here),
 * and applied to the shadow as the device applies them.
 */
static int dxpu_cfg_write(struct pci_bus *bus, unsigned int devfn, int where, int size, u32 val)
{
	unsigned int shift = 8 * (where & 3);
	struct dxpu_slot *s;
	unsigned long flags;
	int ret;

	s = dxpu_cfg_slot(bus, devfn, where, size, &ret);
	if (!s)
		return ret;
	spin_lock_irqsave(&s->domain->cfg_lock, flags);
	if (!s->shadow)
		ret = PCIBIOS_DEVICE_NOT_FOUND;
	else if (dxpu_bridge_cfg_write_nowait(s->bridge, s->remote_bdf, where & ~3,
					      ((1u << size) - 1) << (where & 3), val << shift))
		ret = PCIBIOS_SET_FAILED;
	else
		dxpu_cfg_shadow_write(s->shadow, where, size, val);
	spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
	return ret;
}

static struct pci_ops dxpu_pci_ops = {
	.read = dxpu_cfg_read,
	.write = dxpu_cfg_write,
};

struct dxpu_slot *dxpu_slot_of(struct pci_dev *pdev)
{
	struct dxpu_slot *s;
	int ret;

	if (pdev->bus->ops != &dxpu_pci_ops)
		return NULL;
	s = dxpu_cfg_slot(pdev->bus, pdev->devfn, 0, 4, &ret);
	return s && s->bridge ? s : NULL;
}

/*
 * Every device added to our root bus, by attach or by a rescan, is bound only by dxpu's own
 * driver (driver_override): no other driver may bind a device whose BARs the CPU cannot reach.
 */
static int dxpu_pci_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	struct dxpu_domain *d = container_of(nb, struct dxpu_domain, pci_nb);
	struct pci_dev *pdev = to_pci_dev(data);

	if (action != BUS_NOTIFY_ADD_DEVICE || pdev->bus != d->root || pdev->driver_override)
		return NOTIFY_DONE;
	pdev->driver_override = kstrdup(KBUILD_MODNAME, GFP_KERNEL);
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
	spin_lock_init(&d->cfg_lock);
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

	d->pci_nb.notifier_call = dxpu_pci_notify;
	err = bus_register_notifier(&pci_bus_type, &d->pci_nb);
	if (err)
		goto free_mem32;
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
	pci_scan_child_bus(d->root);
	pci_bus_add_devices(d->root);
	pci_unlock_rescan_remove();
	dev_info(parent, "PCI domain %04x, root bus %02x, BAR windows %pR %pR\n", d->sysdata.domain,
		 d->root->number, &d->mem32, &d->mem64);
	return 0;

unregister_nb:
	bus_unregister_notifier(&pci_bus_type, &d->pci_nb);
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
	dxpu_window_free(&d->mem32);
	dxpu_window_free(&d->mem64);
}
