/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_msi.h - the MSI irq domain of dxpu's root bus (docs/kernel-module.md, "Interrupts"):
 * pci_alloc_irq_vectors() and request_irq() work for the devices on it, as for a device on any
 * host bridge with an MSI controller (drivers/pci/controller/vmd.c and pci-hyperv.c have one
 * each). The controller is the fabric: a device's MSI or MSI-X message is a memory write to the
 * host's MSI range, which the host path reports as an interrupt (the fabric's client operation);
 * the vector is found from the requester's slot and the message's data, and its handler runs on
 * the CPU of its affinity, in a kernel worker with interrupts off (not in hard interrupt context,
 * so that the handler's own MMIO can poll the network for its completion: dxpu_mmio.c).
 *
 * The domain is the root of its hierarchy (no parent): no CPU vector is allocated; a message
 * never reaches the local APIC, only the fabric.
 */
#ifndef DXPU_DRIVER_DXPU_MSI_H
#define DXPU_DRIVER_DXPU_MSI_H

#include <linux/types.h>

struct dxpu_domain;
struct dxpu_fabric;

/* The host's MSI range's base (dxpu_host_config's msi_base): the address of every message. */
#define DXPU_MSI_ADDRESS 0xfee00000u

/* MSI-X's largest table: a device's vectors are its slot's hwirqs [slot * N, slot * N + N). */
#define DXPU_MSI_VECTORS 2048

/* The irq domain, before the root bus is created (dxpu_msi_set_bus then gives it the bus). */
int dxpu_msi_create(struct dxpu_domain *d);
void dxpu_msi_set_bus(struct dxpu_domain *d);
/* The fabric's interrupts delivered from now on (process context). */
void dxpu_msi_start(struct dxpu_domain *d, struct dxpu_fabric *f);
/* After the root bus is gone: no interrupt delivered, the domain removed. */
void dxpu_msi_destroy(struct dxpu_domain *d);
/* "received N delivered N no_irq N unknown N" (PAGE_SIZE). */
ssize_t dxpu_msi_show_counters(struct dxpu_domain *d, char *buf);

#endif /* DXPU_DRIVER_DXPU_MSI_H */
