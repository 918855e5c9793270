// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_slot.c - hot-plug slots on the virtual root bus, one per device number, registered
 * with the PCI hotplug core: /sys/bus/pci/slots/dxpuN/power powers a slot on (attach: read
 * the remote device's configuration space over its bridge's session into a shadow, size its
 * BARs, then let the PCI core enumerate it) and off (the PCI core removes the device, the
 * shadow and the bridge reference go). A slot is bound first to a remote device: a bridge's
 * MAC address and the BDF the bridge assigned the device to this host at.
 */
#include <asm/unaligned.h>
#include <linux/etherdevice.h>
#include <linux/slab.h>

#include "dxpu.h"
#include "dxpu_fabric.h"

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
	pci_bus_add_device(pdev); /* only dxpu's own driver binds it: dxpu_pci.c */
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
 * Removes whatever pci_dev the slot has now: the one attach enumerated may have been removed
 * through sysfs and a rescan made another from the shadow.
 */
static void dxpu_slot_remove_device(struct dxpu_slot *s)
{
	struct pci_dev *pdev;

	pci_lock_rescan_remove();
	pdev = pci_get_slot(s->domain->root, PCI_DEVFN(s->nr, 0));
	if (pdev) {
		pci_stop_and_remove_bus_device(pdev);
		pci_dev_put(pdev);
	}
	pci_unlock_rescan_remove();
}

static void dxpu_slot_set_shadow(struct dxpu_slot *s, struct dxpu_cfg_shadow *sh)
{
	unsigned long flags;

	spin_lock_irqsave(&s->domain->cfg_lock, flags);
	s->shadow = sh;
	spin_unlock_irqrestore(&s->domain->cfg_lock, flags);
}

static int dxpu_slot_power_on(struct dxpu_slot *s)
{
	struct dxpu_cfg_shadow *sh;
	struct dxpu_bridge *b;
	int err;

	if (s->powered)
		return -EBUSY;
	if (!s->bound)
		return -ENXIO;
	b = dxpu_fabric_get_bridge(s->domain->fabric, s->mac);
	if (IS_ERR(b))
		return PTR_ERR(b);
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
	dxpu_slot_set_shadow(s, sh);
	err = dxpu_slot_enumerate(s);
	if (err) {
		dxpu_slot_set_shadow(s, NULL);
		s->bridge = NULL;
		kfree(sh);
		goto put;
	}
	s->powered = true;
	return 0;
put:
	dxpu_bridge_put(b);
	return err;
}

static void dxpu_slot_power_off(struct dxpu_slot *s)
{
	struct dxpu_cfg_shadow *sh = s->shadow;

	dxpu_slot_remove_device(s);
	/* The configuration writes of the device's removal reach it before the bridge goes. */
	dxpu_bridge_drain(s->bridge);
	dxpu_slot_set_shadow(s, NULL);
	kfree(sh);
	dxpu_bridge_put(s->bridge);
	s->bridge = NULL;
	s->powered = false;
	pr_info("dxpu: %s: powered off\n", s->name);
}

/* ---- the hotplug core's operations ---- */

static int dxpu_enable_slot(struct hotplug_slot *hp)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);
	int err;

	mutex_lock(&s->lock);
	err = dxpu_slot_power_on(s);
	mutex_unlock(&s->lock);
	return err;
}

static int dxpu_disable_slot(struct hotplug_slot *hp)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);
	int err = 0;

	mutex_lock(&s->lock);
	if (s->powered)
		dxpu_slot_power_off(s);
	else
		err = -ENODEV;
	mutex_unlock(&s->lock);
	return err;
}

static int dxpu_get_power_status(struct hotplug_slot *hp, u8 *value)
{
	struct dxpu_slot *s = to_dxpu_slot(hp);

	mutex_lock(&s->lock);
	*value = s->powered;
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
 * Surprise removal: a bridge's session went down (its link-down time passed without
 * progress, the bridge closed it, or the interface went away). Its devices are lost already
 * (every request ended with all-ones, every call on their files ENODEV); here the PCI core
 * removes them. The bindings stay: powering a slot on again opens a new session.
 */
static void dxpu_slots_reap(struct work_struct *work)
{
	struct dxpu_domain *d = container_of(work, struct dxpu_domain, reap_work);
	unsigned int i;

	for (i = 0; i < d->nr_slots; i++) {
		struct dxpu_slot *s = &d->slots[i];

		mutex_lock(&s->lock);
		if (s->powered && !dxpu_bridge_alive(s->bridge)) {
			pr_warn("dxpu: %s: session to bridge %pM down: surprise removal\n", s->name,
				s->mac);
			dxpu_slot_power_off(s);
		}
		mutex_unlock(&s->lock);
	}
}

/* From the session's link-down callback: any context, the bridge's lock held. */
static void dxpu_slots_bridge_down(void *ctx, struct dxpu_bridge *b)
{
	struct dxpu_domain *d = ctx;

	schedule_work(&d->reap_work);
}

void dxpu_slots_quiesce(struct dxpu_domain *d)
{
	if (d->fabric) /* the work exists once dxpu_slots_create ran */
		cancel_work_sync(&d->reap_work);
}

int dxpu_slots_create(struct dxpu_domain *d, struct dxpu_fabric *f, unsigned int nr_slots)
{
	unsigned int i;
	int err;

	INIT_WORK(&d->reap_work, dxpu_slots_reap);
	d->fabric = f;
	f->bridge_down_ctx = d;
	f->bridge_down = dxpu_slots_bridge_down;
	mutex_init(&d->bind_lock);
	d->nr_slots = min_t(unsigned int, nr_slots, DXPU_MAX_SLOTS);
	for (i = 0; i < d->nr_slots; i++) {
		struct dxpu_slot *s = &d->slots[i];

		s->domain = d;
		s->nr = i;
		mutex_init(&s->lock);
		snprintf(s->name, sizeof(s->name), "dxpu%u", i);
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
		if (s->powered)
			dxpu_slot_power_off(s);
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
	if (s->powered) {
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
	if (s->powered)
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
					   s->powered ? "on" : "off");
		}
		mutex_unlock(&s->lock);
	}
	return n;
}
