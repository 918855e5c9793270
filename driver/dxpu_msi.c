// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_msi.c - the MSI irq domain of dxpu's root bus (dxpu_msi.h; docs/kernel-module.md,
 * "Interrupts").
 *
 * A vector's hwirq is its device's slot number times DXPU_MSI_VECTORS plus its MSI-X table index
 * (or its MSI vector): the message the PCI core writes into the device is the host's MSI address
 * with that index as data. When the host path reports the device's write there (the fabric's
 * interrupt operation, under the bridge's lock, in any context), the slot comes from the
 * requester: only a slot's own device can raise its vectors. The vector is marked pending (one
 * bit per hwirq: an edge, so a second message before the first is handled is one interrupt, as
 * with a real MSI) and the worker of the CPU its affinity names is queued. The worker runs
 * handle_edge_irq() through generic_handle_domain_irq_safe(): interrupts off, in a kernel thread,
 * not in hard interrupt context, so a handler that reads the device (a load that faults into
 * dxpu_mmio.c) can wait for its completion by polling the network interface.
 *
 * Ordering: the host path copies each DMA write of the device into memory before it reports a
 * later message, and queueing the worker orders those stores before the handler's loads: a
 * handler sees every DMA write the device sent before its interrupt (PCIe's producer-consumer
 * rule).
 *
 * Masking is the PCI core's (pci_msi_mask_irq: the vector control bit in the MSI-X table, a store
 * that transparent MMIO sends to the device): a masked vector is held pending by the device and
 * sent on unmask. A message that arrives while the irq is disabled is left to the core
 * (IRQS_PENDING), which resends it through dxpu_msi_retrigger when the irq is enabled again.
 */
#include <linux/bitmap.h>
#include <linux/cpumask.h>
#include <linux/irq.h>
#include <linux/irqdomain.h>
#include <linux/msi.h>
#include <linux/pci.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "dxpu.h"
#include "dxpu_fabric.h"
#include "dxpu_msi.h"

/* A CPU's delivery: the slots that have vectors pending for it. */
struct dxpu_msi_cpu {
	struct work_struct work;
	struct dxpu_msi *msi;
	unsigned long slots; /* bit n: slot n has a vector pending here */
};

struct dxpu_msi {
	struct dxpu_domain *domain;
	struct fwnode_handle *fwnode;
	struct irq_domain *irqs;
	/* The chip and the domain's info and operations (the MSI core fills in their defaults). */
	struct irq_chip chip;
	struct msi_domain_ops ops;
	struct msi_domain_info info;
	struct workqueue_struct *wq; /* per CPU: a vector's handler runs on its affinity's CPU */
	struct dxpu_msi_cpu __percpu *cpu;
	unsigned long *pending; /* one bit per hwirq: a message arrived, not yet handled */
	struct dxpu_fabric *fabric;
	struct dxpu_fabric_client client;
	atomic64_t received;  /* messages from a slot's device */
	atomic64_t delivered; /* handlers run (several messages may make one) */
	atomic64_t no_irq;    /* messages for a vector no irq of this domain is allocated to */
	atomic64_t unknown;   /* messages from no slot's device, or past DXPU_MSI_VECTORS */
};

#define DXPU_MSI_HWIRQS (DXPU_MAX_SLOTS * DXPU_MSI_VECTORS)

/* ---- the chip ---- */

static void dxpu_msi_compose_msg(struct irq_data *data, struct msi_msg *msg)
{
	msg->address_hi = 0;
	msg->address_lo = DXPU_MSI_ADDRESS;
	msg->data = irqd_to_hwirq(data) % DXPU_MSI_VECTORS;
}

/* The CPU the vector's handler runs on: the first online CPU of the mask. */
static int dxpu_msi_set_affinity(struct irq_data *data, const struct cpumask *mask, bool force)
{
	unsigned int cpu = force ? cpumask_first(mask) : cpumask_first_and(mask, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	irq_data_update_effective_affinity(data, cpumask_of(cpu));
	/* The message names no CPU: nothing to write to the device. */
	return IRQ_SET_MASK_OK_DONE;
}

/* handle_edge_irq acknowledges each message: a message needs no acknowledging. */
static void dxpu_msi_ack(struct irq_data *data)
{
}

/* Marks hwirq pending and queues the worker of the CPU its handler runs on. Any context. */
static void dxpu_msi_raise(struct dxpu_msi *m, irq_hw_number_t hwirq, struct irq_data *data)
{
	unsigned int cpu = cpumask_first(irq_data_get_effective_affinity_mask(data));
	unsigned int slot = hwirq / DXPU_MSI_VECTORS;
	struct dxpu_msi_cpu *c;

	set_bit(hwirq, m->pending);
	if (cpu >= nr_cpu_ids || !cpu_online(cpu))
		cpu = raw_smp_processor_id();
	c = per_cpu_ptr(m->cpu, cpu);
	smp_mb__before_atomic(); /* the vector's bit before its slot's: the worker reads them so */
	set_bit(slot, &c->slots);
	queue_work_on(cpu, m->wq, &c->work);
}

/* The core resends a message that came while the irq was disabled: raise it again. */
static int dxpu_msi_retrigger(struct irq_data *data)
{
	dxpu_msi_raise(irq_data_get_irq_chip_data(data), irqd_to_hwirq(data), data);
	return 1;
}

/* ---- the domain's operations ---- */

/* The vector's hwirq: its slot's range, at its MSI-X table index (MSI: its first vector). */
static void dxpu_msi_set_desc(msi_alloc_info_t *arg, struct msi_desc *desc)
{
	struct pci_dev *pdev = msi_desc_to_pci_dev(desc);

	arg->desc = desc;
	arg->hwirq = PCI_SLOT(pdev->devfn) * DXPU_MSI_VECTORS + desc->msi_index;
}

/* Only the slots' devices, one function each (a slot is a device number), and every vector. */
static int dxpu_msi_check(struct irq_domain *domain, struct msi_domain_info *info,
			  struct device *dev)
{
	struct pci_dev *pdev = to_pci_dev(dev);
	struct msi_desc *desc;

	if (PCI_FUNC(pdev->devfn) || PCI_SLOT(pdev->devfn) >= DXPU_MAX_SLOTS)
		return -EINVAL;
	msi_for_each_desc(desc, dev, MSI_DESC_ALL)
		if (desc->msi_index + desc->nvec_used > DXPU_MSI_VECTORS)
			return -EINVAL;
	return 0;
}

/*
 * This domain's descriptors are never locked in hard interrupt context: delivery is the
 * worker's. Their lockdep class is their own, so that what is taken under one (the bridge's and
 * the NIC's locks, when the PCI core writes an MSI-X entry through transparent MMIO) is not
 * judged as if a hard interrupt could want it (lockdep on the debug lane: HARDIRQ-safe ->
 * HARDIRQ-unsafe, irq_desc -> the NIC's _xmit_ETHER lock).
 */
static struct lock_class_key dxpu_msi_lock_class, dxpu_msi_request_class;

/*
 * The vector's chip and handler, as the MSI core's default; and its affinity may change from
 * process context (irq_set_affinity), as nothing of the message depends on the CPU. Without
 * that, x86 (GENERIC_PENDING_IRQ) would defer each move to an interrupt that never comes.
 */
static int dxpu_msi_init(struct irq_domain *domain, struct msi_domain_info *info, unsigned int virq,
			 irq_hw_number_t hwirq, msi_alloc_info_t *arg)
{
	irq_domain_set_info(domain, virq, hwirq, info->chip, info->chip_data, handle_edge_irq, NULL,
			    "edge");
	irq_set_status_flags(virq, IRQ_MOVE_PCNTXT);
	irq_set_lockdep_class(virq, &dxpu_msi_lock_class, &dxpu_msi_request_class);
	return 0;
}

/* A vector going away: a message still pending for it is forgotten. */
static void dxpu_msi_free(struct irq_domain *domain, struct msi_domain_info *info,
			  unsigned int virq)
{
	struct dxpu_msi *m = info->chip_data;

	clear_bit(irqd_to_hwirq(irq_get_irq_data(virq)), m->pending);
}

/* ---- delivery ---- */

/* Runs the handler of every vector pending in the slots queued to this CPU. */
static void dxpu_msi_deliver(struct work_struct *work)
{
	struct dxpu_msi_cpu *c = container_of(work, struct dxpu_msi_cpu, work);
	struct dxpu_msi *m = c->msi;
	unsigned long slots = xchg(&c->slots, 0);
	unsigned int slot, vec;

	for_each_set_bit(slot, &slots, DXPU_MAX_SLOTS) {
		unsigned long *bits = m->pending + BIT_WORD(slot * DXPU_MSI_VECTORS);

		for_each_set_bit(vec, bits, DXPU_MSI_VECTORS) {
			if (!test_and_clear_bit(vec, bits))
				continue; /* another CPU's worker took it */
			if (generic_handle_domain_irq_safe(m->irqs, slot * DXPU_MSI_VECTORS + vec))
				atomic64_inc(&m->no_irq); /* freed since it was raised */
			else
				atomic64_inc(&m->delivered);
		}
	}
}

/* The slot whose device is requester behind b, or -1. Compares pointers only: any context. */
static int dxpu_msi_slot_of(struct dxpu_domain *d, struct dxpu_bridge *b, u16 requester)
{
	unsigned int i;

	for (i = 0; i < d->nr_slots; i++)
		if (READ_ONCE(d->slots[i].bridge) == b && d->slots[i].remote_bdf == requester)
			return d->slots[i].nr;
	return -1;
}

/* The fabric's interrupt operation: b's lock held, any context; it only marks and queues. */
static void dxpu_msi_interrupt(void *ctx, struct dxpu_bridge *b, u16 requester, u32 data)
{
	struct dxpu_msi *m = ctx;
	int slot = dxpu_msi_slot_of(m->domain, b, requester);
	irq_hw_number_t hwirq;
	unsigned int virq;

	if (slot < 0 || data >= DXPU_MSI_VECTORS) {
		atomic64_inc(&m->unknown);
		return;
	}
	hwirq = slot * DXPU_MSI_VECTORS + data;
	virq = irq_find_mapping(m->irqs, hwirq);
	if (!virq) { /* a vector no driver allocated (its table written by hand) */
		atomic64_inc(&m->no_irq);
		return;
	}
	atomic64_inc(&m->received);
	dxpu_msi_raise(m, hwirq, irq_get_irq_data(virq));
}

static const struct dxpu_fabric_client_ops dxpu_msi_client_ops = {
	.interrupt = dxpu_msi_interrupt,
};

/* ---- lifetime ---- */

static void dxpu_msi_init_info(struct dxpu_msi *m)
{
	m->chip = (struct irq_chip){
		.name = "dxpu-msi",
		.irq_ack = dxpu_msi_ack,
		.irq_compose_msi_msg = dxpu_msi_compose_msg,
		.irq_set_affinity = dxpu_msi_set_affinity,
		.irq_retrigger = dxpu_msi_retrigger,
	};
	m->ops = (struct msi_domain_ops){
		.set_desc = dxpu_msi_set_desc,
		.msi_check = dxpu_msi_check,
		.msi_init = dxpu_msi_init,
		.msi_free = dxpu_msi_free,
	};
	m->info = (struct msi_domain_info){
		.flags = MSI_FLAG_USE_DEF_DOM_OPS | MSI_FLAG_USE_DEF_CHIP_OPS |
			 MSI_FLAG_MULTI_PCI_MSI | MSI_FLAG_PCI_MSIX,
		.ops = &m->ops,
		.chip = &m->chip,
		.chip_data = m,
	};
}

static void dxpu_msi_free_state(struct dxpu_msi *m)
{
	if (m->wq)
		destroy_workqueue(m->wq);
	free_percpu(m->cpu);
	bitmap_free(m->pending);
	kfree(m);
}

int dxpu_msi_create(struct dxpu_domain *d)
{
	struct dxpu_msi *m = kzalloc(sizeof(*m), GFP_KERNEL);
	unsigned int cpu;

	if (!m)
		return -ENOMEM;
	m->domain = d;
	m->pending = bitmap_zalloc(DXPU_MSI_HWIRQS, GFP_KERNEL);
	m->cpu = alloc_percpu(struct dxpu_msi_cpu);
	m->wq = alloc_workqueue("dxpu_msi", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!m->pending || !m->cpu || !m->wq)
		goto nomem;
	for_each_possible_cpu(cpu) {
		struct dxpu_msi_cpu *c = per_cpu_ptr(m->cpu, cpu);

		INIT_WORK(&c->work, dxpu_msi_deliver);
		c->msi = m;
	}
	dxpu_msi_init_info(m);
	m->fwnode = irq_domain_alloc_named_fwnode("dxpu-msi");
	if (!m->fwnode)
		goto nomem;
	m->irqs = pci_msi_create_irq_domain(m->fwnode, &m->info, NULL);
	if (!m->irqs) {
		irq_domain_free_fwnode(m->fwnode);
		goto nomem;
	}
	m->client.ops = &dxpu_msi_client_ops;
	m->client.ctx = m;
	d->msi = m;
	return 0;
nomem:
	dxpu_msi_free_state(m);
	return -ENOMEM;
}

/* Every device the bus finds from now on allocates its vectors here (x86's pcibios_device_add). */
void dxpu_msi_set_bus(struct dxpu_domain *d)
{
	dev_set_msi_domain(&d->root->dev, d->msi->irqs);
}

void dxpu_msi_start(struct dxpu_domain *d, struct dxpu_fabric *f)
{
	d->msi->fabric = f;
	dxpu_fabric_register_client(f, &d->msi->client);
}

void dxpu_msi_destroy(struct dxpu_domain *d)
{
	struct dxpu_msi *m = d->msi;

	if (!m)
		return;
	if (m->fabric)
		dxpu_fabric_unregister_client(m->fabric, &m->client); /* no message queued after */
	drain_workqueue(m->wq);
	irq_domain_remove(m->irqs);
	irq_domain_free_fwnode(m->fwnode);
	dxpu_msi_free_state(m);
	d->msi = NULL;
}

ssize_t dxpu_msi_show_counters(struct dxpu_domain *d, char *buf)
{
	struct dxpu_msi *m = d->msi;

	return sysfs_emit(buf, "received %lld delivered %lld no_irq %lld unknown %lld\n",
			  atomic64_read(&m->received), atomic64_read(&m->delivered),
			  atomic64_read(&m->no_irq), atomic64_read(&m->unknown));
}
