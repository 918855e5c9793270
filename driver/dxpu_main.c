// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_main.c - dxpu.ko: remote GPUs as local PCIe endpoints. Loading it creates the
 * virtual PCI domain under /sys/devices/dxpu and, when `ifname` names a network interface,
 * the DxFP fabric on it; sysfs there connects to bridges and lists them
 * (Documentation/ABI/testing/sysfs-devices-dxpu). Unloading closes every session and
 * removes the domain and all on it.
 */
#include <linux/device.h>
#include <linux/etherdevice.h>
#include <linux/module.h>

#include "dxpu.h"
#include "dxpu_fabric.h"
#include "dxpu_iova.h"
#include "dxpu_mmio.h"
#include "dxpu_msi.h"

static char *ifname;
module_param(ifname, charp, 0444);
MODULE_PARM_DESC(ifname, "network interface DxFP runs on (raw Ethernet, EtherType 0x88B5)");

static unsigned long long node_id;
module_param(node_id, ullong, 0444);
MODULE_PARM_DESC(node_id, "this host's DxFP node ID (default: the interface's MAC address)");

static unsigned int slots = 8;
module_param(slots, uint, 0444);
MODULE_PARM_DESC(slots, "hot-plug slots on the virtual root bus (1..32, default 8)");

static unsigned int mmio32_mib = 256;
module_param(mmio32_mib, uint, 0444);
MODULE_PARM_DESC(mmio32_mib, "MiB below 4 GiB for 32-bit BARs (a power of two, default 256)");

static unsigned int mmio64_gib = 256;
module_param(mmio64_gib, uint, 0444);
MODULE_PARM_DESC(mmio64_gib, "GiB for 64-bit BARs (a power of two, default 256)");

static unsigned int link_down_ms = 2000;
module_param(link_down_ms, uint, 0444);
MODULE_PARM_DESC(link_down_ms, "session down, devices removed after ms without progress (2000)");

static unsigned int request_timeout_ms = 1000;
module_param(request_timeout_ms, uint, 0444);
MODULE_PARM_DESC(request_timeout_ms,
		 "a request unanswered for ms ends with UR: reads all ones (1000, 10..60000)");

/* The host's DMA range runs from 4 GiB to 256 GiB (docs/host-proxy.md): 252 GiB of IOVAs. */
#define DXPU_DMA_MIB_MAX (252u << 10)

static unsigned int dma_mib = DXPU_DMA_MIB_MAX;
module_param(dma_mib, uint, 0444);
MODULE_PARM_DESC(dma_mib,
		 "MiB of IOVA space for DMA mappings, from 4 GiB (at most and default 258048)");

static bool transparent_mmio = true;
module_param(transparent_mmio, bool, 0444);
MODULE_PARM_DESC(transparent_mmio,
		 "the CPU's loads and stores to mappings of the devices' BARs reach them (on)");

static struct device *dxpu_root;
static struct dxpu_domain dxpu_domain;
static struct dxpu_fabric dxpu_fabric;

static ssize_t interface_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_fabric_show_interface(&dxpu_fabric, buf);
}

/*
 * DxFP on the interface named, when it runs on none (at load without ifname, or since the
 * one it ran on went away).
 */
static ssize_t interface_store(struct device *dev, struct device_attribute *attr, const char *buf,
			       size_t count)
{
	char name[IFNAMSIZ], extra;
	int err;

	if (sscanf(buf, "%15s %c", name, &extra) != 1)
		return -EINVAL;
	err = dxpu_fabric_open(&dxpu_fabric, name, node_id);
	return err ? err : count;
}
static DEVICE_ATTR_RW(interface);

static ssize_t connect_store(struct device *dev, struct device_attribute *attr, const char *buf,
			     size_t count)
{
	u8 mac[ETH_ALEN];
	int err;

	if (!mac_pton(buf, mac))
		return -EINVAL;
	err = dxpu_fabric_connect(&dxpu_fabric, mac);
	return err ? err : count;
}
static DEVICE_ATTR_WO(connect);

/* This host's fabric key: a `dxpu keygen` .key file written in; its public key read back. */
static ssize_t key_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_fabric_show_key(&dxpu_fabric, buf);
}

static ssize_t key_store(struct device *dev, struct device_attribute *attr, const char *buf,
			 size_t count)
{
	int err = dxpu_fabric_set_key(&dxpu_fabric, buf, count);

	return err ? err : count;
}
static DEVICE_ATTR_RW(key);

/* "<bridge MAC> <its .pub line>" (or "<MAC> none") per write; one line per bridge read. */
static ssize_t bridge_keys_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_fabric_show_bridge_keys(&dxpu_fabric, buf);
}

static ssize_t bridge_keys_store(struct device *dev, struct device_attribute *attr, const char *buf,
				 size_t count)
{
	int err = dxpu_fabric_set_bridge_key(&dxpu_fabric, buf, count);

	return err ? err : count;
}
static DEVICE_ATTR_RW(bridge_keys);

static ssize_t bridges_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_fabric_show_bridges(&dxpu_fabric, buf);
}
static DEVICE_ATTR_RO(bridges);

static ssize_t counters_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_fabric_show_counters(&dxpu_fabric, buf);
}
static DEVICE_ATTR_RO(counters);

static ssize_t bind_store(struct device *dev, struct device_attribute *attr, const char *buf,
			  size_t count)
{
	int err = dxpu_slot_bind(&dxpu_domain, buf);

	return err ? err : count;
}
static DEVICE_ATTR_WO(bind);

static ssize_t unbind_store(struct device *dev, struct device_attribute *attr, const char *buf,
			    size_t count)
{
	int err = dxpu_slot_unbind(&dxpu_domain, buf);

	return err ? err : count;
}
static DEVICE_ATTR_WO(unbind);

static ssize_t mmio_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_mmio_show_counters(buf);
}
static DEVICE_ATTR_RO(mmio);

static ssize_t msi_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_msi_show_counters(&dxpu_domain, buf);
}
static DEVICE_ATTR_RO(msi);

static ssize_t slots_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return dxpu_slots_show(&dxpu_domain, buf);
}
static DEVICE_ATTR_RO(slots);

static struct attribute *dxpu_attrs[] = {
	&dev_attr_interface.attr, &dev_attr_connect.attr,     &dev_attr_bridges.attr,
	&dev_attr_counters.attr,  &dev_attr_bind.attr,	      &dev_attr_unbind.attr,
	&dev_attr_slots.attr,	  &dev_attr_mmio.attr,	      &dev_attr_msi.attr,
	&dev_attr_key.attr,	  &dev_attr_bridge_keys.attr, NULL,
};

static const struct attribute_group dxpu_group = { .attrs = dxpu_attrs };

static int __init dxpu_init(void)
{
	int err;

	if (!slots || slots > DXPU_MAX_SLOTS) {
		pr_err("dxpu: slots=%u: 1..%d\n", slots, DXPU_MAX_SLOTS);
		return -EINVAL;
	}
	if (link_down_ms < 100 || link_down_ms > 60000) {
		pr_err("dxpu: link_down_ms=%u: 100..60000\n", link_down_ms);
		return -EINVAL;
	}
	if (request_timeout_ms < 10 || request_timeout_ms > 60000) {
		pr_err("dxpu: request_timeout_ms=%u: 10..60000\n", request_timeout_ms);
		return -EINVAL;
	}
	if (!dma_mib || dma_mib > DXPU_DMA_MIB_MAX || dxpu_iova_init((u64)dma_mib << 20)) {
		pr_err("dxpu: dma_mib=%u: 1..%u\n", dma_mib, DXPU_DMA_MIB_MAX);
		return -EINVAL;
	}
	dxpu_root = root_device_register("dxpu");
	if (IS_ERR(dxpu_root))
		return PTR_ERR(dxpu_root);
	dxpu_fabric.link_down_ns = (u64)link_down_ms * NSEC_PER_MSEC;
	dxpu_fabric.request_timeout_ns = (u64)request_timeout_ms * NSEC_PER_MSEC;
	err = dxpu_fabric_init(&dxpu_fabric);
	if (err)
		goto unregister;
	if (ifname) {
		err = dxpu_fabric_open(&dxpu_fabric, ifname, node_id);
		if (err) {
			pr_err("dxpu: no network interface %s\n", ifname);
			goto exit_fabric;
		}
	}
	err = dxpu_domain_create(&dxpu_domain, dxpu_root, (u64)mmio32_mib << 20,
				 (u64)mmio64_gib << 30);
	if (err)
		goto exit_fabric;
	dxpu_msi_start(&dxpu_domain, &dxpu_fabric);
	if (transparent_mmio) {
		err = dxpu_mmio_init(&dxpu_domain);
		if (err) {
			pr_err("dxpu: transparent MMIO unavailable (load with transparent_mmio=0 to go without: drivers' BAR mappings then reach nothing)\n");
			goto destroy_domain;
		}
	}
	err = dxpu_slots_create(&dxpu_domain, &dxpu_fabric, slots);
	if (err)
		goto exit_mmio;
	err = sysfs_create_group(&dxpu_root->kobj, &dxpu_group);
	if (err)
		goto destroy_slots;
	return 0;

destroy_slots:
	dxpu_slots_destroy(&dxpu_domain);
exit_mmio:
	if (transparent_mmio)
		dxpu_mmio_exit();
destroy_domain:
	dxpu_domain_destroy(&dxpu_domain);
exit_fabric:
	dxpu_fabric_exit(&dxpu_fabric);
	dxpu_slots_quiesce(&dxpu_domain);
unregister:
	root_device_unregister(dxpu_root);
	return err;
}

static void __exit dxpu_exit(void)
{
	sysfs_remove_group(&dxpu_root->kobj, &dxpu_group);
	dxpu_slots_destroy(&dxpu_domain);
	if (transparent_mmio)
		dxpu_mmio_exit();
	dxpu_domain_destroy(&dxpu_domain);
	dxpu_fabric_exit(&dxpu_fabric);
	dxpu_slots_quiesce(&dxpu_domain);
	root_device_unregister(dxpu_root);
	dxpu_iova_exit();
}

module_init(dxpu_init);
module_exit(dxpu_exit);
MODULE_DESCRIPTION("DxPU host proxy: remote GPUs as local PCIe endpoints over DxFP");
MODULE_LICENSE("Dual MIT/GPL");
