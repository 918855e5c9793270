// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_slot.c - hot-plug slots on the virtual root bus, one per device number, registered
 * with the PCI hotplug core: /sys/bus/pci/slots/dxpuN/power powers a slot on (attach: read
 * the remote device's configuration space over its bridge's session into a shadow, size its
 * BARs, then let the PCI core enumerate it) and off (the PCI core removes the device, the
 * shadow and the bridge reference go). A slot is bound first to a remote device: a bridge's
 * MAC address and the BDF the bridge assigned the device to this host at.
 *
 * One state machine per slot, as pciehp keeps: every change of state happens in one event
 * handler, dxpu_slot_handle_event(), under the slot's mutex, in process context. Sysfs and the
 * hotplug core call it for power requests (and hear its errno); what comes from below (the
 * fabric: a bridge's session went down) is only queued, and the slot's work handles it.
 */
#include <asm/unaligned.h>
#include <linux/etherdevice.h>
#include <linux/slab.h>

#include "dxpu.h"

/* How long power-on waits for the session to the slot's bridge to come up. */
#define DXPU_ATTACH_SESSION_MS 5000

static struct dxpu_slot *to_dxpu_slot(struct hotplug_slot *hp)
{
	return container_of(hp, struct dxpu_slot, hp);
}

static void dxpu_bdf_str(u16 bdf, char *out, size_t len)
{
	snprintf(out, len, "%02x:%02x.%x", bdf >> 8, PCI_SLOT(bdf & 0xff), PCI_FUNC(bdf & 0xff));
}

/* ---- attach: the remote device's configuration space into a shadow ---- */

/* What the function at bdf answers: its space (256 or 4096 bytes), its BARs' read-backs. */
struct dxpu_remote_config {
	union {
		u8 space[DXPU_CFG_SPACE_SIZE];
		__le32 dw[DXPU_CFG_SPACE_SIZE / 4];
	};
	u32 size;
	u32 bar_readback[DXPU_CFG_BARS];
	u32 rom_readback;
};

static int dxpu_read_space(struct dxpu_bridge *b, u16 bdf, struct dxpu_remote_config *rc)
{
	__le32 *space = rc->dw;
	u32 ext;
	int err;

	/* The IDs alone first: where no function answers, nothing more is asked. */
	err = dxpu_bridge_cfg_read_block(b, bdf, 0, 1, space);
	if (err)
		return err;
	if (space[0] == cpu_to_le32(~0u) || !space[0])
		return -ENODEV;
	err = dxpu_bridge_cfg_read_block(b, bdf, 4, DXPU_CFG_LEGACY_SIZE / 4 - 1, space + 1);
	if (err)
		return err;
	/* A UR for the first extended DW: a PCI (not PCIe) function, 256 bytes. */
	err = dxpu_bridge_cfg_read(b, bdf, DXPU_CFG_LEGACY_SIZE, &ext);
	if (err == -EIO) {
		rc->size = DXPU_CFG_LEGACY_SIZE;
		return 0;
	}
	if (err)
		return err;
	space[DXPU_CFG_LEGACY_SIZE / 4] = cpu_to_le32(ext);
	rc->size = DXPU_CFG_SPACE_SIZE;
	return dxpu_bridge_cfg_read_block(b, bdf, DXPU_CFG_LEGACY_SIZE + 4,
					  (DXPU_CFG_SPACE_SIZE - DXPU_CFG_LEGACY_SIZE) / 4 - 1,
					  space + DXPU_CFG_LEGACY_SIZE / 4 + 1);
}

/* All-ones, read back, restore: the bridge's copy of the BARs answers like the real ones. */
static int dxpu_size_register(struct dxpu_bridge *b, u16 bdf, u16 reg, u32 ones, u32 saved,
			      u32 *readback)
{
	int err = dxpu_bridge_cfg_write(b, bdf, reg, 0xf, ones);

	if (!err)
		err = dxpu_bridge_cfg_read(b, bdf, reg, readback);
	if (!err)
		err = dxpu_bridge_cfg_write(b, bdf, reg, 0xf, saved);
	return err;
}

static int dxpu_size_bars(struct dxpu_bridge *b, u16 bdf, struct dxpu_remote_config *rc)
{
	unsigned int i;
	int err;

	for (i = 0; i < DXPU_CFG_BARS; i++) {
		u16 reg = PCI_BASE_ADDRESS_0 + 4 * i;

		err = dxpu_size_register(b, bdf, reg, 0xffffffff,
					 get_unaligned_le32(&rc->space[reg]), &rc->bar_readback[i]);
		if (err)
			return err;
	}
	return dxpu_size_register(b, bdf, PCI_ROM_ADDRESS, PCI_ROM_ADDRESS_MASK,
				  get_unaligned_le32(&rc->space[PCI_ROM_ADDRESS]),
				  &rc->rom_readback);
}

static struct dxpu_cfg_shadow *dxpu_fetch_shadow(struct dxpu_slot *s, struct dxpu_bridge *b)
{
	struct dxpu_remote_config *rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	struct dxpu_cfg_shadow *sh = NULL;
	char bdf[16];
	ktime_t start;
	int err;

	if (!rc)
		return ERR_PTR(-ENOMEM);
	dxpu_bdf_str(s->remote_bdf, bdf, sizeof(bdf));
	start = ktime_get();
	err = dxpu_read_space(b, s->remote_bdf, rc);
	if (err == -EIO || err == -ENODEV) {
		pr_err("dxpu: %s: no device answers at %s behind %pM: is it assigned to this host's node?\n",
		       s->name, bdf, s->mac);
		err = -ENODEV;
		goto out;
	}
	if (!err)
		err = dxpu_size_bars(b, s->remote_bdf, rc);
	if (!err)
		pr_info("dxpu: %s: %u bytes of configuration space from %s behind %pM in %lld us\n",
			s->name, rc->size, bdf, s->mac, ktime_us_delta(ktime_get(), start));
	if (err) {
		pr_err("dxpu: %s: reading the configuration space of %s behind %pM failed: %d\n",
		       s->name, bdf, s->mac, err);
		goto out;
	}
	sh = kzalloc(sizeof(*sh), GFP_KERNEL);
	if (!sh) {
		err = -ENOMEM;
		goto out;
	}
	if (!dxpu_cfg_shadow_init(sh, rc->space, rc->size, rc->bar_readback, rc->rom_readback))
		err = -EINVAL;
out:
	kfree(rc);
	if (err) {
		kfree(sh);
		return ERR_PTR(err);
	}
	return sh;
}

/* ---- power ---- */

/*
 * A userspace mapping of a BAR (its resourceN file in sysfs) would reach the window's bare
 * physical range, not the device: transparent MMIO serves the kernel's mappings only
 * (dxpu_mmio.c). Refused, and said so, instead of reading all ones.
 */
static int dxpu_slot_refuse_mmap(struct file *file, struct kobject *kobj,
				 struct bin_attribute *attr, struct vm_area_struct *vma)
{
	struct pci_dev *pdev = to_pci_dev(kobj_to_dev(kobj));

	pci_info_ratelimited(pdev, "%s: a remote device's BAR cannot be mapped from userspace\n",
			     attr->attr.name);
	return -EOPNOTSUPP;
}

static void dxpu_slot_refuse_user_maps(struct pci_dev *pdev)
{
	int i;

	for (i = 0; i < PCI_STD_NUM_BARS; i++) {
		if (pdev->res_attr[i])
			pdev->res_attr[i]->mmap = dxpu_slot_refuse_mmap;
		if (pdev->res_attr_wc[i])
			pdev->res_attr_wc[i]->mmap = dxpu_slot_refuse_mmap;
	}
}

/*
 * Peer to peer: other devices reach this one's memory at its largest 64-bit prefetchable BAR
 * but BAR0 (as the userspace proxy picks it), entry nr of the fabric's peer table. Transport:
 * it holds whichever driver binds the device.
 */
static void dxpu_slot_peer_add(struct dxpu_slot *s, struct pci_dev *pdev)
{
	u64 base = 0, size = 0;
	int i;

	for (i = 1; i < PCI_STD_NUM_BARS; i++) {
		unsigned long f = pci_resource_flags(pdev, i);

		if ((f & IORESOURCE_MEM) && (f & IORESOURCE_MEM_64) && (f & IORESOURCE_PREFETCH) &&
		    pci_resource_len(pdev, i) > size) {
			base = pci_bus_address(pdev, i);
			size = pci_resource_len(pdev, i);
		}
	}
	dxpu_fabric_set_peer(s->domain->fabric, s->nr, s->bridge, s->remote_bdf, base, size);
}

/* The PCI core enumerates the device the shadow now describes and places its BARs. */
static int dxpu_slot_enumerate(struct dxpu_slot *s)
{
	struct pci_bus *bus = s->domain->root;
	struct pci_dev *pdev;
	int i;

	pci_lock_rescan_remove();
	pdev = pci_scan_single_device(bus, PCI_DEVFN(s->nr, 0));
	if (!pdev) {
		pci_unlock_rescan_remove();
		return -ENODEV;
	}
	pci_assign_unassigned_bus_resources(bus);
	dxpu_slot_peer_add(s, pdev); /* before any driver can bind it */
	/* A rescan since the shadow was set may have added it: the bus's, not the device's call. */
	pci_bus_add_devices(bus); /* a driver may bind it from here on */
	dxpu_slot_refuse_user_maps(pdev);
	for (i = 0; i < PCI_STD_NUM_BARS; i++) {
		struct resource *r = &pdev->resource[i];

		if (r->flags && (r->flags & IORESOURCE_UNSET || !r->parent))
			pci_warn(pdev, "BAR %d %pR not placed: the BAR window is too small\n", i,
				 r);
	}
	pci_info(pdev, "attached: slot %s, bridge %pM\n", s->name, s->mac);
	pci_unlock_rescan_remove();
	return 0;
}

/*
 * The device's driver lets go of it, outside pci_lock_rescan_remove(): its remove waits for
 * the calls in flight on the device, which may wait for the network (each bounded by its
 * request's deadline). Nothing binds it again: the slot is no longer bindable.
 */
static void dxpu_slot_release_driver(struct dxpu_slot *s)
{
	struct pci_dev *pdev = pci_get_slot(s->domain->root, PCI_DEVFN(s->nr, 0));

	if (pdev) {
		device_release_driver(&pdev->dev);
		pci_dev_put(pdev);
	}
}

/*
 * Removes whatever pci_dev the slot has now (the one attach enumerated may have been removed
 * through sysfs and a rescan made another from the shadow) and takes the shadow away in the
 * same hold of pci_lock_rescan_remove(), so that no rescan finds the device again. Returns the
 * shadow.
 */
static struct dxpu_cfg_shadow *dxpu_slot_remove_device(struct dxpu_slot *s)
{
	struct dxpu_cfg_shadow *sh = s->shadow;
	struct pci_dev *pdev;

	pci_lock_rescan_remove();
	pdev = pci_get_slot(s->domain->root, PCI_DEVFN(s->nr, 0));
	if (pdev) {
		pci_stop_and_remove_bus_device(pdev);
		pci_dev_put(pdev);
	}
	dxpu_slot_set_shadow(s, NULL, false);
	pci_unlock_rescan_remove();
	return sh;
}

/*
 * With the device off the bus and its shadow gone: its last configuration writes reach it
 * (the device's removal wrote some), then the bridge reference goes.
 */
static void dxpu_slot_detach(struct dxpu_slot *s, struct dxpu_cfg_shadow *sh)
{
	dxpu_fabric_clear_peer(s->domain->fabric, s->nr);
	dxpu_slot_cfg_stop(s);
	dxpu_bridge_drain(s->bridge);
	kfree(sh);
	dxpu_bridge_put(s->bridge);
	s->bridge = NULL;
	s->state = DXPU_SLOT_OFF;
}

/* OFF -> POWERING_ON -> ON, or back to OFF with the errno. */
static int dxpu_slot_power_on(struct dxpu_slot *s)
{
	struct dxpu_cfg_shadow *sh;
	struct dxpu_bridge *b;
	int err;

	if (!s->bound)
		return -ENXIO;
	s->state = DXPU_SLOT_POWERING_ON;
	b = dxpu_fabric_get_bridge(s->domain->fabric, s->mac);
	if (IS_ERR(b)) {
		err = PTR_ERR(b);
		goto off;
	}
	err = dxpu_bridge_wait_established(b, DXPU_ATTACH_SESSION_MS);
	if (err) {
		pr_err("dxpu: %s: no session to bridge %pM: %d\n", s->name, s->mac, err);
		goto put;
	}
	sh = dxpu_fetch_shadow(s, b);
	if (IS_ERR(sh)) {
		err = PTR_ERR(sh);
		goto put;
	}
	s->bridge = b;
	dxpu_slot_set_shadow(s, sh, true);
	err = dxpu_slot_enumerate(s);
	if (err) {
		dxpu_slot_set_shadow(s, NULL, false);
		dxpu_slot_detach(s, sh);
		return err;
	}
	s->state = DXPU_SLOT_ON;
	return 0;
put:
	dxpu_bridge_put(b);
off:
	s->state = DXPU_SLOT_OFF;
	return err;
}

/*
 * A surprise removal, as pciehp marks one before it unconfigures the slot: the device is gone
 * (pci_dev_is_disconnected()), so the PCI core answers its drivers' configuration accesses
 * all-ones without asking the device, and a driver that checks pci_device_is_present() in its
 * remove (virtio_pci) knows it cannot talk to the device. pci_dev_set_disconnected() is the
 * PCI core's own (drivers/pci/pci.h); this is what it does.
 */
static void dxpu_slot_mark_disconnected(struct dxpu_slot *s)
{
	struct pci_dev *pdev = pci_get_slot(s->domain->root, PCI_DEVFN(s->nr, 0));

	if (pdev) {
		xchg(&pdev->error_state, pci_channel_io_perm_failure);
		pci_dev_put(pdev);
	}
}

/*
 * ON -> POWERING_OFF -> OFF, as pciehp's slot state machine: the slot's mutex is held
 * throughout; pci_lock_rescan_remove() only while the PCI core removes the device (whose
 * driver has let go of it already) and the shadow goes with it, never while waiting for the
 * network.
 */
static void dxpu_slot_power_off(struct dxpu_slot *s)
{
	s->state = DXPU_SLOT_POWERING_OFF;
	dxpu_slot_set_shadow(s, s->shadow, false); /* no driver binds it from now on */
	dxpu_slot_release_driver(s);
	dxpu_slot_detach(s, dxpu_slot_remove_device(s));
	pr_info("dxpu: %s: powered off\n", s->name);
}

/* What a slot is asked to do, or told happened. */
enum dxpu_slot_event {
	DXPU_SLOT_POWER_ON,  /* power 1 */
	DXPU_SLOT_POWER_OFF, /* power 0, or unload */
	DXPU_SLOT_LINK_DOWN, /* a bridge's session went down (queued by the fabric's client) */
};

/*
 * The slot's one event handler (pciehp's pciehp_handle_presence_or_link_change()): the only
 * place its state changes. 0 or the errno the requester hears. Caller holds s->lock.
 */
static int dxpu_slot_handle_event(struct dxpu_slot *s, enum dxpu_slot_event ev)
{
	lockdep_assert_held(&s->lock);
	switch (s->state) {
	case DXPU_SLOT_OFF:
		if (ev == DXPU_SLOT_POWER_ON)
			return dxpu_slot_power_on(s);
		return ev == DXPU_SLOT_POWER_OFF ? -ENODEV : 0;
	case DXPU_SLOT_ON:
		if (ev == DXPU_SLOT_POWER_ON)
			return -EBUSY;
		/*
		 * Surprise removal: the devices behind the bridge are lost already (every request
		 * ended all-ones, every call on their files ENODEV); the PCI core removes them
		 * here. The binding stays: powering the slot on again opens a new session.
		 */
		if (ev == DXPU_SLOT_LINK_DOWN) {
			if (dxpu_bridge_alive(s->bridge))
				return 0; /* another bridge's, or one that went before this one */
			pr_warn("dxpu: %s: session to bridge %pM down: surprise removal\n", s->name,
				s->mac);
			dxpu_slot_mark_disconnected(s);
		}
		dxpu_slot_power_off(s);
		return 0;
	default: /* transitional: never seen outside the handler */
		WARN_ON_ONCE(1);
		return -EBUSY;
	}
}

static void dxpu_slot_work(struct work_struct *work)
{
	struct dxpu_slot *s = container_of(work, struct dxpu_slot, work);

	mutex_lock(&s->lock);
	if (test_and_clear_bit(DXPU_SLOT_EV_LINK_DOWN, &s->pending))
		dxpu_slot_handle_event(s, DXPU_SLOT_LINK_DOWN);
	mutex_unlock(&s->lock);
}

/* ---- the hotplug core's operations ---- */

static int dxpu_slot_request(struct hotplug_slot *hp, enum dxpu_slot_event ev)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);
	int err;

	mutex_lock(&s->lock);
	err = dxpu_slot_handle_event(s, ev);
	mutex_unlock(&s->lock);
	return err;
}

static int dxpu_enable_slot(struct hotplug_slot *hp)
{
	return dxpu_slot_request(hp, DXPU_SLOT_POWER_ON);
}

static int dxpu_disable_slot(struct hotplug_slot *hp)
{
	return dxpu_slot_request(hp, DXPU_SLOT_POWER_OFF);
}

static int dxpu_get_power_status(struct hotplug_slot *hp, u8 *value)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);

	mutex_lock(&s->lock);
	*value = s->state == DXPU_SLOT_ON;
	mutex_unlock(&s->lock);
	return 0;
}

/* "Adapter present": the slot is bound to a remote device. */
static int dxpu_get_adapter_status(struct hotplug_slot *hp, u8 *value)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);

	mutex_lock(&s->lock);
	*value = s->bound;
	mutex_unlock(&s->lock);
	return 0;
}

static const struct hotplug_slot_ops dxpu_slot_ops = {
	.enable_slot = dxpu_enable_slot,
	.disable_slot = dxpu_disable_slot,
	.get_power_status = dxpu_get_power_status,
	.get_adapter_status = dxpu_get_adapter_status,
};

/*
 * The fabric's client operation, with the bridge's lock held, in any context: only queued.
 * Every slot hears it (one still powering on may not have its bridge set yet); the handler
 * acts on those whose bridge is the one down.
 */
static void dxpu_slots_link_down(void *ctx, struct dxpu_bridge *b)
{
	struct dxpu_domain *d = ctx;
	unsigned int i;

	for (i = 0; i < d->nr_slots; i++) {
		set_bit(DXPU_SLOT_EV_LINK_DOWN, &d->slots[i].pending);
		schedule_work(&d->slots[i].work);
	}
}

static const struct dxpu_fabric_client_ops dxpu_slots_client_ops = {
	.link_down = dxpu_slots_link_down,
};

void dxpu_slots_quiesce(struct dxpu_domain *d)
{
	unsigned int i;

	if (!d->fabric) /* dxpu_slots_create never ran, or failed before the slots existed */
		return;
	dxpu_fabric_unregister_client(d->fabric, &d->client);
	for (i = 0; i < d->nr_slots; i++) {
		cancel_work_sync(&d->slots[i].work);
		dxpu_slot_cfg_free(&d->slots[i]);
	}
}

/* Slot nr's locks, works and queue: everything dxpu_slots_destroy and _quiesce touch. */
static int dxpu_slot_init(struct dxpu_domain *d, unsigned int nr)
{
	struct dxpu_slot *s = &d->slots[nr];

	s->domain = d;
	s->nr = nr;
	snprintf(s->name, sizeof(s->name), "dxpu%u", nr);
	mutex_init(&s->lock);
	INIT_WORK(&s->work, dxpu_slot_work);
	return dxpu_slot_cfg_init(s);
}

int dxpu_slots_create(struct dxpu_domain *d, struct dxpu_fabric *f, unsigned int nr_slots)
{
	unsigned int i, n = min_t(unsigned int, nr_slots, DXPU_MAX_SLOTS);
	int err;

	mutex_init(&d->bind_lock);
	for (i = 0; i < n; i++) {
		err = dxpu_slot_init(d, i);
		if (err) {
			while (i--)
				dxpu_slot_cfg_free(&d->slots[i]);
			return err;
		}
	}
	/* Only slots initialised in full are ever seen, by the error path below and by unload. */
	d->nr_slots = n;
	d->fabric = f;
	d->client.ops = &dxpu_slots_client_ops;
	d->client.ctx = d;
	dxpu_fabric_register_client(f, &d->client);
	for (i = 0; i < d->nr_slots; i++) {
		struct dxpu_slot *s = &d->slots[i];

		s->hp.ops = &dxpu_slot_ops;
		err = pci_hp_register(&s->hp, d->root, i, s->name);
		if (err) {
			dev_err(d->parent, "slot %s not registered: %d\n", s->name, err);
			dxpu_slots_destroy(d);
			return err;
		}
		s->registered = true;
	}
	return 0;
}

void dxpu_slots_destroy(struct dxpu_domain *d)
{
	unsigned int i;

	for (i = 0; i < d->nr_slots; i++) {
		struct dxpu_slot *s = &d->slots[i];

		mutex_lock(&s->lock);
		dxpu_slot_handle_event(s, DXPU_SLOT_POWER_OFF);
		mutex_unlock(&s->lock);
		if (s->registered)
			pci_hp_deregister(&s->hp);
		s->registered = false;
	}
}

/* ---- bindings (sysfs) ---- */

static struct dxpu_slot *dxpu_slot_by_name(struct dxpu_domain *d, const char *name)
{
	unsigned int i;

	for (i = 0; i < d->nr_slots; i++)
		if (!strcmp(d->slots[i].name, name))
			return &d->slots[i];
	return NULL;
}

static int dxpu_parse_bdf(const char *str, u16 *bdf)
{
	unsigned int bus, dev, fn;
	char end;

	if (sscanf(str, "%2x:%2x.%1x%c", &bus, &dev, &fn, &end) != 3)
		return -EINVAL;
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	*bdf = (u16)(bus << 8 | PCI_DEVFN(dev, fn));
	return 0;
}

/* Whether another slot is bound to the same remote device. Caller holds d->bind_lock. */
static bool dxpu_remote_taken(struct dxpu_domain *d, struct dxpu_slot *self, const u8 *mac, u16 bdf)
{
	unsigned int i;
	bool taken = false;

	for (i = 0; i < d->nr_slots && !taken; i++) {
		struct dxpu_slot *s = &d->slots[i];

		if (s == self)
			continue;
		mutex_lock(&s->lock);
		taken = s->bound && ether_addr_equal(s->mac, mac) && s->remote_bdf == bdf;
		mutex_unlock(&s->lock);
	}
	return taken;
}

int dxpu_slot_bind(struct dxpu_domain *d, const char *buf)
{
	char name[16], mac_str[18], bdf_str[8], extra;
	struct dxpu_slot *s;
	u8 mac[ETH_ALEN];
	u16 bdf;
	int err = 0;

	if (sscanf(buf, "%15s %17s %7s %c", name, mac_str, bdf_str, &extra) != 3)
		return -EINVAL;
	if (!mac_pton(mac_str, mac) || !is_valid_ether_addr(mac) || dxpu_parse_bdf(bdf_str, &bdf))
		return -EINVAL;
	s = dxpu_slot_by_name(d, name);
	if (!s)
		return -ENODEV;
	mutex_lock(&d->bind_lock);
	if (dxpu_remote_taken(d, s, mac, bdf)) {
		err = -EEXIST;
		goto unlock;
	}
	mutex_lock(&s->lock);
	if (s->state != DXPU_SLOT_OFF) {
		err = -EBUSY;
	} else {
		ether_addr_copy(s->mac, mac);
		s->remote_bdf = bdf;
		s->bound = true;
	}
	mutex_unlock(&s->lock);
unlock:
	mutex_unlock(&d->bind_lock);
	return err;
}

int dxpu_slot_unbind(struct dxpu_domain *d, const char *buf)
{
	char name[16], extra;
	struct dxpu_slot *s;
	int err = 0;

	if (sscanf(buf, "%15s %c", name, &extra) != 1)
		return -EINVAL;
	s = dxpu_slot_by_name(d, name);
	if (!s)
		return -ENODEV;
	mutex_lock(&s->lock);
	if (s->state != DXPU_SLOT_OFF)
		err = -EBUSY;
	else if (!s->bound)
		err = -ENXIO;
	else
		s->bound = false;
	mutex_unlock(&s->lock);
	return err;
}

ssize_t dxpu_slots_show(struct dxpu_domain *d, char *buf)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < d->nr_slots; i++) {
		struct dxpu_slot *s = &d->slots[i];
		char bdf[16];

		mutex_lock(&s->lock);
		if (!s->bound) {
			n += sysfs_emit_at(buf, n, "%s unbound\n", s->name);
		} else {
			dxpu_bdf_str(s->remote_bdf, bdf, sizeof(bdf));
			n += sysfs_emit_at(buf, n, "%s %pM %s %s\n", s->name, s->mac, bdf,
					   s->state == DXPU_SLOT_ON ? "on" : "off");
		}
		mutex_unlock(&s->lock);
	}
	return n;
}
