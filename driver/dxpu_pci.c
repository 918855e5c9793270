// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_pci.c - the virtual PCI domain: a free domain number at or above 0x10000, a root
 * bus on it with pci_ops that never sleep, scanned and added like any host bridge's.
 * Remote devices appear on it as they are attached (later: from each device's shadow
 * config space); until then every config read finds no device.
 */
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

static int dxpu_cfg_read(struct pci_bus *bus, unsigned int devfn, int where, int size, u32 *val)
{
	PCI_SET_ERROR_RESPONSE(val);
	return PCIBIOS_DEVICE_NOT_FOUND;
}

static int dxpu_cfg_write(struct pci_bus *bus, unsigned int devfn, int where, int size, u32 val)
{
	return PCIBIOS_DEVICE_NOT_FOUND;
}

static struct pci_ops dxpu_pci_ops = {
	.read = dxpu_cfg_read,
	.write = dxpu_cfg_write,
};

int dxpu_domain_create(struct dxpu_domain *d, struct device *parent)
{
	LIST_HEAD(resources);

	d->parent = parent;
	d->busn = (struct resource)DEFINE_RES_NAMED(0, 0xff, "dxpu buses", IORESOURCE_BUS);
	pci_add_resource(&resources, &d->busn);

	pci_lock_rescan_remove();
	d->sysdata.domain = dxpu_free_domain();
	d->sysdata.node = NUMA_NO_NODE;
	d->root = pci_create_root_bus(parent, 0, &dxpu_pci_ops, &d->sysdata, &resources);
	if (!d->root) {
		pci_unlock_rescan_remove();
		pci_free_resource_list(&resources);
		return -ENODEV;
	}
	pci_scan_child_bus(d->root);
	pci_bus_add_devices(d->root);
	pci_unlock_rescan_remove();
	dev_info(parent, "PCI domain %04x, root bus %02x\n", d->sysdata.domain, d->root->number);
	return 0;
}

void dxpu_domain_destroy(struct dxpu_domain *d)
{
	if (!d->root)
		return;
	pci_lock_rescan_remove();
	pci_stop_root_bus(d->root);
	pci_remove_root_bus(d->root);
	pci_unlock_rescan_remove();
	d->root = NULL;
}
