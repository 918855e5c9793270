// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_main.c - dxpu.ko: remote GPUs as local PCIe endpoints. Loading it creates the
 * virtual PCI domain under /sys/devices/dxpu; unloading removes it and all on it.
 */
#include <linux/device.h>
#include <linux/module.h>

#include "dxpu.h"

static struct device *dxpu_root;
static struct dxpu_domain dxpu_domain;

static int __init dxpu_init(void)
{
	int err;

	dxpu_root = root_device_register("dxpu");
	if (IS_ERR(dxpu_root))
		return PTR_ERR(dxpu_root);
	err = dxpu_domain_create(&dxpu_domain, dxpu_root);
	if (err) {
		root_device_unregister(dxpu_root);
		return err;
	}
	return 0;
}

static void __exit dxpu_exit(void)
{
	dxpu_domain_destroy(&dxpu_domain);
	root_device_unregister(dxpu_root);
}

module_init(dxpu_init);
module_exit(dxpu_exit);
MODULE_DESCRIPTION("DxPU host proxy: remote GPUs as local PCIe endpoints over DxFP");
MODULE_LICENSE("Dual MIT/GPL");
