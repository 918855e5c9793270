/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu.h - the host proxy module's shared state: one virtual PCI domain whose root bus
 * carries the remote devices (docs/kernel-module.md).
 */
#ifndef DXPU_DRIVER_DXPU_H
#define DXPU_DRIVER_DXPU_H

#include <linux/device.h>
#include <linux/pci.h>

/* The virtual PCI domain: a root bus of our own, numbered above any firmware's. */
struct dxpu_domain {
	struct device *parent;	    /* /sys/devices/dxpu */
	struct pci_sysdata sysdata; /* x86: the domain number lives here */
	struct pci_bus *root;
	struct resource busn;
};

int dxpu_domain_create(struct dxpu_domain *d, struct device *parent);
void dxpu_domain_destroy(struct dxpu_domain *d);

#endif /* DXPU_DRIVER_DXPU_H */
