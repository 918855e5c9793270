// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_kapi.c - what dxpu.ko exports to other kernel code (include/dxpu/dxpu_kapi.h): a
 * device's BARs over the fabric without the CPU's loads and stores (no fault, no transparent
 * MMIO: a test compares the two paths, mmio_check.c), whichever driver has the device.
 */
#include <linux/module.h>
#include <linux/pci.h>

#include <dxpu/dxpu_kapi.h>

#include "dxpu.h"
#include "dxpu_fabric.h"

/* The bus address of [offset, offset + len) in a memory BAR of pdev, or 0 when it is not one. */
static u64 dxpu_bar_addr(struct pci_dev *pdev, int bar, u64 offset, u32 len)
{
	if (bar < 0 || bar >= PCI_STD_NUM_BARS || !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM))
		return 0;
	if (!len || offset >= pci_resource_len(pdev, bar) ||
	    len > pci_resource_len(pdev, bar) - offset)
		return 0;
	return pci_bus_address(pdev, bar) + offset;
}

/**
 * dxpu_mmio_read - read from a BAR of a device on dxpu's bus over the fabric
 * @pdev: a device on dxpu's bus, bound to any driver or none
 * @bar: a memory BAR it implements
 * @offset: from the BAR's start
 * @buf: receives @len bytes (all-ones where the device did not answer)
 * @len: 1..4096, not crossing a 4 KiB boundary of the bus address
 *
 * Sleeps until the completion arrives or the request times out (request_timeout_ms).
 * Return: 0; -EIO when the device answered UR or CA or did not answer; -EINVAL for a range
 * outside the BAR; -ENODEV for a device not on dxpu's bus or whose slot powers off;
 * -ENOLINK or -EBUSY from the session.
 */
int dxpu_mmio_read(struct pci_dev *pdev, int bar, u64 offset, void *buf, u32 len)
{
	u64 addr = dxpu_bar_addr(pdev, bar, offset, len);
	struct dxpu_bridge *b;
	u8 status;
	int err;

	if (!addr)
		return -EINVAL;
	if (!dxpu_slot_get(pdev, &b))
		return -ENODEV;
	err = dxpu_bridge_mem_read(b, addr, buf, len, &status);
	dxpu_bridge_put(b);
	if (!err && status != DXPU_TLP_CPL_SC)
		err = -EIO;
	return err;
}
EXPORT_SYMBOL_GPL(dxpu_mmio_read);

/**
 * dxpu_mmio_write - post a write to a BAR of a device on dxpu's bus over the fabric
 * @pdev: as for dxpu_mmio_read
 * @bar: a memory BAR it implements
 * @offset: from the BAR's start
 * @buf: @len bytes
 * @len: as for dxpu_mmio_read
 *
 * Returns once the write is queued on the session; writes to a device arrive in order, and a
 * later read of it does not pass them.
 * Return: 0, or the errors of dxpu_mmio_read but -EIO.
 */
int dxpu_mmio_write(struct pci_dev *pdev, int bar, u64 offset, const void *buf, u32 len)
{
	u64 addr = dxpu_bar_addr(pdev, bar, offset, len);
	struct dxpu_bridge *b;
	int err;

	if (!addr)
		return -EINVAL;
	if (!dxpu_slot_get(pdev, &b))
		return -ENODEV;
	err = dxpu_bridge_mem_write(b, addr, buf, len);
	dxpu_bridge_put(b);
	return err;
}
EXPORT_SYMBOL_GPL(dxpu_mmio_write);
