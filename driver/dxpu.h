/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu.h - the host proxy module's shared state: one virtual PCI domain whose root bus
 * carries the remote devices, one hot-plug slot per device number on it
 * (docs/kernel-module.md).
 *
 * This layer sits on the fabric (dxpu_fabric.h), which it calls; the fabric calls it back only
 * through the client operations the slots register (a bridge's session went down). Above both
 * sit the services every device on the bus gets, whatever its driver: the DMA API
 * (dxpu_iova.h), MSI (dxpu_msi.h), transparent MMIO (dxpu_mmio.h), BAR access for other
 * modules (dxpu_kapi.c). dxpu.ko binds no device: it is transport only.
 *
 * Locking (docs/kernel-module.md, "Lock order"): a slot's mutex guards its binding and its state
 * (process context: sysfs, the hotplug core, the slot's work, unload); power on and off hold it
 * throughout, and take pci_lock_rescan_remove() only around the PCI core's scan and removal, never
 * while waiting for the network. domain->cfg_lock (a raw spinlock, interrupts off: pci_ops run
 * under the PCI core's raw pci_lock, where no spinlock_t may be taken) guards what pci_ops use of a
 * slot: its shadow, its queue of writes, which DWs were written; nothing is taken inside it. A
 * slot's issue_lock (a spinlock, interrupts off) lets one caller at a time hand the queued writes
 * to the bridge, whose lock is taken inside it.
 */
#ifndef DXPU_DRIVER_DXPU_H
#define DXPU_DRIVER_DXPU_H

#include <linux/device.h>
#include <linux/if_ether.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci_hotplug.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "core/dxpu_cfg_shadow.h"
#include "dxpu_fabric.h"

#define DXPU_MAX_SLOTS 32

struct dxpu_domain;
struct dxpu_msi;

/*
 * A slot's state, as pciehp keeps its own: it changes only in dxpu_slot_handle_event(), under
 * the slot's mutex. The two transitional states are held while power-on or power-off runs.
 */
enum dxpu_slot_state {
	DXPU_SLOT_OFF,		/* no device on the bus; the binding may change */
	DXPU_SLOT_POWERING_ON,	/* the session, the configuration space, the PCI core's scan */
	DXPU_SLOT_ON,		/* the device is on the bus, its bridge referenced */
	DXPU_SLOT_POWERING_OFF, /* the PCI core removes the device, its last writes drain */
};

/*
 * Configuration writes pci_ops queue for the device (they may not take the bridge's lock, a
 * spinlock_t): handed to the bridge in order by the slot's issue work, or by whoever must
 * order a request after them (dxpu_slot_cfg_flush). A power of two.
 */
#define DXPU_CFG_QUEUE 512
#define DXPU_CFG_DWS (DXPU_CFG_SPACE_SIZE / 4)

struct dxpu_cfg_write {
	u16 reg; /* the DW's offset */
	u8 be;	 /* byte enables */
	u32 val; /* the DW, shifted to the enabled bytes */
};

/* Events queued to a slot from any context (bits of pending), handled by its work. */
enum {
	DXPU_SLOT_EV_LINK_DOWN, /* a bridge's session went down: its devices are gone */
};

struct dxpu_slot {
	struct hotplug_slot hp;
	struct dxpu_domain *domain;
	u8 nr;	       /* its device number on the root bus */
	char name[16]; /* /sys/bus/pci/slots/<name> */
	bool registered;
	struct mutex lock; /* the binding and the state below */
	bool bound;
	u8 mac[ETH_ALEN]; /* the bridge */
	u16 remote_bdf;	  /* the device behind it: the BDF the bridge assigned it to us at */
	enum dxpu_slot_state state;
	struct dxpu_bridge *bridge; /* a reference while not off */
	unsigned long pending;	    /* DXPU_SLOT_EV_* queued for the work */
	struct work_struct work;    /* handles them in process context */
	/* What pci_ops use, under domain->cfg_lock. */
	struct dxpu_cfg_shadow *shadow; /* while the device may be on the bus (and s->bridge set) */
	bool bindable;			/* a driver may bind it: on (or powering on), not going */
	struct dxpu_cfg_write *queue;	/* DXPU_CFG_QUEUE writes on their way to the device */
	u32 q_head, q_tail;		/* free-running: queue[q_head % N] is the oldest */
	DECLARE_BITMAP(dirty, DXPU_CFG_DWS); /* DWs written since read back from the device */
	/* The queue's one consumer at a time; the works run while the shadow is set. */
	spinlock_t issue_lock;
	struct work_struct issue_work; /* hands the queue to the bridge */
	struct work_struct sync_work;  /* reads written DWs back from the device into the shadow */
};

/* The virtual PCI domain: a root bus of our own, numbered above any firmware's. */
struct dxpu_domain {
	struct device *parent;	    /* /sys/devices/dxpu */
	struct pci_sysdata sysdata; /* x86: the domain number lives here */
	struct pci_bus *root;
	struct resource busn;
	struct resource mem32;	      /* the window 32-bit BARs are placed in (below 4 GiB) */
	struct resource mem64;	      /* the window 64-bit prefetchable BARs are placed in */
	struct notifier_block pci_nb; /* devices added to our bus: DMA API ops */
	raw_spinlock_t cfg_lock;
	struct dxpu_msi *msi;	/* the root bus's MSI irq domain (dxpu_msi.c) */
	struct mutex bind_lock; /* bindings change one at a time: no remote device bound twice */
	struct dxpu_fabric_client client; /* the slots hear of sessions going down */
	struct dxpu_fabric *fabric;
	unsigned int nr_slots;
	struct dxpu_slot slots[DXPU_MAX_SLOTS];
};

/* The domain, its root bus with windows of mem32_size and mem64_size bytes (powers of two). */
int dxpu_domain_create(struct dxpu_domain *d, struct device *parent, u64 mem32_size,
		       u64 mem64_size);
void dxpu_domain_destroy(struct dxpu_domain *d);
/*
 * The slot a device of dxpu's bus sits in, while a driver may bind it (on or powering on, not
 * powering off); *bridge then holds a reference to its bridge. NULL otherwise. Any context.
 */
struct dxpu_slot *dxpu_slot_get(struct pci_dev *pdev, struct dxpu_bridge **bridge);
/* The shadow pci_ops serve (NULL: none) and whether a driver may bind the device. */
void dxpu_slot_set_shadow(struct dxpu_slot *s, struct dxpu_cfg_shadow *sh, bool bindable);
/*
 * Every configuration write queued so far handed to the slot's bridge, in order, so that a
 * request issued next comes after them: before every MMIO. Process context.
 */
void dxpu_slot_cfg_flush(struct dxpu_slot *s);
/*
 * The same with interrupts off (a CPU's load or store, dxpu_mmio.c), while s's bridge is set
 * (s bindable, read under domain->cfg_lock); the caller stays in an RCU read-side section.
 */
void dxpu_slot_cfg_flush_atomic(struct dxpu_slot *s);
/* After the shadow is cleared: the queue handed over, the slot's works ended. */
void dxpu_slot_cfg_stop(struct dxpu_slot *s);
/* The queue (at slot creation) and its works; dxpu_slot_cfg_free undoes it. */
int dxpu_slot_cfg_init(struct dxpu_slot *s);
void dxpu_slot_cfg_free(struct dxpu_slot *s);
/* ---- slots (dxpu_slot.c) ---- */

/* nr_slots hot-plug slots on the root bus, registered with the PCI hotplug core. */
int dxpu_slots_create(struct dxpu_domain *d, struct dxpu_fabric *f, unsigned int nr_slots);
/* Every slot powered off, then unregistered. */
void dxpu_slots_destroy(struct dxpu_domain *d);
/* After the fabric is gone: the slots' client unregistered, no event still pending. */
void dxpu_slots_quiesce(struct dxpu_domain *d);
/* "SLOT MAC BB:DD.F": binds the slot to that remote device. */
int dxpu_slot_bind(struct dxpu_domain *d, const char *buf);
/* "SLOT": forgets its binding (it must be powered off). */
int dxpu_slot_unbind(struct dxpu_domain *d, const char *buf);
/* One line per slot into buf (PAGE_SIZE). */
ssize_t dxpu_slots_show(struct dxpu_domain *d, char *buf);

#endif /* DXPU_DRIVER_DXPU_H */
