// SPDX-License-Identifier: GPL-2.0
/*
 * irq_check.c - dxpu_irq_check.ko, the kernel test of dxpu's MSI irq domain (tests/kernel/
 * irq_test.sh): an ordinary PCI driver for the model GPU (4450:0001) that uses only the
 * kernel's own interfaces: pcim_iomap, pci_alloc_irq_vectors(PCI_IRQ_MSIX), request_irq,
 * disable_irq/enable_irq, irq_set_affinity. The scenario binds it to the GPU on dxpu's bus
 * (driver_override); its probe runs the checks and reports "DXPU-TEST: PASS|FAIL ..." lines and
 * "dxpu_irq_check: N failures"; each vector's handled count is printed as
 * "dxpu_irq_check: vector V irq I handled N" for the scenario to compare with /proc/interrupts.
 *
 * The interrupts are made with MMIO alone (docs/dxgpu.md, "Interrupts"): a ring of 3 entries
 * (not a power of two) and a doorbell stop the channel with BAD_RING, which sets INTR_STATUS
 * bit 1; from then on each time INTR_ENABLE's bit 1 goes from 0 to 1 the GPU sends vector 1's
 * message (the status bit stays set: the handler does not clear it).
 *
 * Then through the DMA API (a ring, a pushbuffer, a semaphore and two buffers from
 * dma_alloc_coherent): rounds of INTERRUPT commands, each vector v raised v + 1 times in all and
 * never twice in one round, so that every message is one handler run; and copies into host
 * memory followed by a semaphore release that raises vector 0, whose handler checks that the
 * copy's bytes and the semaphore are already visible (PCIe's producer-consumer ordering).
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/irq.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/wait.h>

#include "test_check.h"

#define ID 0x0000
#define ID_VALUE 0x44584750u
#define GPFIFO_ENTRIES 0x0018
#define GP_PUT 0x0020
#define STATUS 0x0030
#define STATUS_ERROR BIT(1)
#define ERROR_CODE 0x0034
#define ERROR_BAD_RING 6
#define INTR_STATUS 0x0040
#define INTR_ENABLE 0x0044
#define INTR_ERROR BIT(1)
#define CONTROL 0x0050
#define CONTROL_ENABLE BIT(0)
#define CONTROL_CLEAR_ERROR BIT(1)
#define GPFIFO_LO 0x0010
#define GPFIFO_HI 0x0014
#define INTR_SEMAPHORE BIT(0)

#define OP_COPY 0x01
#define OP_SEMAPHORE_RELEASE 0x02
#define OP_INTERRUPT 0x03
#define COPY_SRC_HOST BIT(0)
#define COPY_DST_HOST BIT(1)
#define SEMAPHORE_INTERRUPT BIT(1)
#define RING_ENTRIES 64
#define PB_DWS 1024
#define DATA_BYTES SZ_64K
#define DMA_ROUNDS 20

#define MAX_VECTORS 64
#define MAX_CPUS 64

static unsigned int messages = 200;
module_param(messages, uint, 0444);
MODULE_PARM_DESC(messages, "interrupts the counting check makes (200)");

struct irq_check {
	struct pci_dev *pdev;
	void __iomem *regs;
	int nvec;
	int virq[MAX_VECTORS]; /* looked up before the handlers run (pci_irq_vector may sleep) */
	wait_queue_head_t wq;
	atomic_t handled[MAX_VECTORS];
	atomic_t on_cpu[MAX_CPUS];
	unsigned int sent; /* messages the GPU sent, by the model's rules: the scenario compares */
	atomic_t bad_context; /* a handler run in hard interrupt context, or with interrupts on */
	atomic_t bad_read;    /* a handler's read of the ID register returned something else */
	/* The DMA phase: vector 0's handler checks what the device wrote before its message. */
	bool dma_phase;
	__le32 *ring, *pb, *sem;
	u8 *src, *dst;
	dma_addr_t ring_dma, pb_dma, sem_dma, src_dma, dst_dma;
	u32 put, pb_used, seq;
	u8 pattern;
	atomic_t dma_seen,
		dma_stale; /* vector 0's handler: the copy and semaphore visible, or not */
};

static bool irq_check_dst_is(struct irq_check *ic, u8 pattern)
{
	u32 i;

	for (i = 0; i < DATA_BYTES; i++)
		if (ic->dst[i] != (u8)(pattern + i * 7))
			return false;
	return true;
}

/*
 * Vector 0 in the DMA phase follows a copy into dst and the semaphore's release: both must be
 * visible here. Clearing INTR_STATUS bit 0 lets the next release send again.
 */
static void irq_check_dma_seen(struct irq_check *ic)
{
	if (le32_to_cpu(READ_ONCE(*ic->sem)) == READ_ONCE(ic->seq) &&
	    irq_check_dst_is(ic, READ_ONCE(ic->pattern)))
		atomic_inc(&ic->dma_seen);
	else
		atomic_inc(&ic->dma_stale);
	writel(INTR_SEMAPHORE, ic->regs + INTR_STATUS);
}

/* Each vector's handler: counts, notes where it ran, and reads the device (MMIO from a handler). */
static irqreturn_t irq_check_handler(int irq, void *data)
{
	struct irq_check *ic = data;
	int v;

	for (v = 0; v < ic->nvec; v++)
		if (ic->virq[v] == irq)
			break;
	if (v == ic->nvec)
		return IRQ_NONE;
	if (in_hardirq() || !irqs_disabled())
		atomic_inc(&ic->bad_context);
	if (readl(ic->regs + ID) != ID_VALUE)
		atomic_inc(&ic->bad_read);
	if (v == 0 && READ_ONCE(ic->dma_phase))
		irq_check_dma_seen(ic);
	if (smp_processor_id() < MAX_CPUS)
		atomic_inc(&ic->on_cpu[smp_processor_id()]);
	atomic_inc(&ic->handled[v]);
	wake_up(&ic->wq);
	return IRQ_HANDLED;
}

/*
 * One message on vector 1 (INTR_STATUS bit 1 is set): INTR_ENABLE bit 1 from 0 to 1. sent counts
 * it unless the vector is masked (then the device holds one message pending, sent on unmask).
 */
static void irq_check_pulse(struct irq_check *ic, bool masked)
{
	writel(0, ic->regs + INTR_ENABLE);
	writel(INTR_ERROR, ic->regs + INTR_ENABLE);
	if (!masked)
		ic->sent++;
}

/* Waits until vector v was handled want times (up to 10 s); the count then. */
static int irq_check_wait(struct irq_check *ic, int v, int want)
{
	wait_event_timeout(ic->wq, atomic_read(&ic->handled[v]) >= want, 10 * HZ);
	return atomic_read(&ic->handled[v]);
}

/*
 * The channel stopped with BAD_RING: INTR_STATUS bit 1 set, no message yet (not enabled). The
 * GPU acts on the doorbell when it next runs, which may be after the read that follows it.
 */
static bool irq_check_stop_channel(struct irq_check *ic)
{
	u32 status = 0, code = 0, intr = 0;
	int i;

	writel(0, ic->regs + INTR_ENABLE);
	writel(CONTROL_ENABLE, ic->regs + CONTROL);
	writel(3, ic->regs + GPFIFO_ENTRIES);
	writel(1, ic->regs + GP_PUT);
	for (i = 0; i < 100; i++) {
		status = readl(ic->regs + STATUS);
		code = readl(ic->regs + ERROR_CODE);
		intr = readl(ic->regs + INTR_STATUS);
		if (status == STATUS_ERROR && code == ERROR_BAD_RING && (intr & INTR_ERROR))
			return true;
		usleep_range(1000, 2000);
	}
	pr_err("dxpu_irq_check: STATUS %#x ERROR_CODE %u INTR_STATUS %#x\n", status, code, intr);
	return false;
}

/* The MSI-X PBA's DW holding vector v's pending bit, through BAR0 (where the model keeps it). */
static u32 irq_check_pba(struct irq_check *ic, int v)
{
	int cap = ic->pdev->msix_cap;
	u32 pba;

	pci_read_config_dword(ic->pdev, cap + PCI_MSIX_PBA, &pba);
	if ((pba & PCI_MSIX_PBA_BIR) != 0)
		return ~0u;
	return readl(ic->regs + (pba & PCI_MSIX_PBA_OFFSET) + 4 * (v / 32));
}

/*
 * Paced (each handled before the next is made): every message is one handler run, so
 * /proc/interrupts must count exactly the messages. Then a burst, unpaced: messages that arrive
 * before the last is handled are one interrupt (an edge), so at least one run and at most one
 * per message.
 */
static void irq_check_counting(struct irq_check *ic)
{
	int before = atomic_read(&ic->handled[1]), i, v, got;
	char what[128];
	ktime_t start = ktime_get();
	s64 us;

	writel(INTR_ERROR, ic->regs + INTR_ENABLE); /* the first message */
	ic->sent++;
	irq_check_wait(ic, 1, before + 1);
	for (i = 1; i < messages; i++) {
		irq_check_pulse(ic, false);
		if (irq_check_wait(ic, 1, before + i + 1) != before + i + 1)
			break;
	}
	us = ktime_us_delta(ktime_get(), start);
	got = atomic_read(&ic->handled[1]) - before;
	snprintf(what, sizeof(what), "paced: vector 1 handled %d times for %u messages", got,
		 messages);
	check(got == messages, what);
	/* Each: two posted writes, the message, the handler (a readl), the wake-up. */
	pr_info("dxpu_irq_check: paced: %d interrupts in %lld us: %lld per second\n", got, us,
		us ? got * USEC_PER_SEC / us : 0);
	before = atomic_read(&ic->handled[1]);
	for (i = 0; i < 50; i++)
		irq_check_pulse(ic, false);
	/* Messages coalesce: wait for the first, then until 200 ms pass with no more. */
	irq_check_wait(ic, 1, before + 1);
	do {
		got = atomic_read(&ic->handled[1]);
		msleep(200);
	} while (atomic_read(&ic->handled[1]) != got);
	got -= before;
	snprintf(what, sizeof(what), "burst: vector 1 handled %d times for 50 messages (1..50)",
		 got);
	check(got >= 1 && got <= 50, what);
	for (v = 0; v < ic->nvec; v++)
		if (v != 1)
			check(atomic_read(&ic->handled[v]) == 0, "no other vector handled");
	check(!atomic_read(&ic->bad_context), "handlers run with interrupts off, not in hard IRQ");
	check(!atomic_read(&ic->bad_read), "a handler's readl returns the device's register");
}

/* Masked (at once: unlazy), the device holds the message pending; unmasked, it sends it. */
static void irq_check_masking(struct irq_check *ic)
{
	int irq = pci_irq_vector(ic->pdev, 1), before, i;

	irq_set_status_flags(irq, IRQ_DISABLE_UNLAZY);
	disable_irq(irq);
	before = atomic_read(&ic->handled[1]);
	for (i = 0; i < 5; i++)
		irq_check_pulse(ic, true);
	check(readl(ic->regs + ID) == ID_VALUE && atomic_read(&ic->handled[1]) == before,
	      "a masked vector is not handled");
	check(irq_check_pba(ic, 1) & BIT(1), "the device holds the masked vector pending (PBA)");
	enable_irq(irq);
	ic->sent++;
	check(irq_check_wait(ic, 1, before + 1) == before + 1,
	      "unmasked, the pending message is handled once");
	msleep(100);
	check(atomic_read(&ic->handled[1]) == before + 1, "... and only once");
	check(!(irq_check_pba(ic, 1) & BIT(1)), "the PBA bit is clear after delivery");
	irq_clear_status_flags(irq, IRQ_DISABLE_UNLAZY);
}

/* The handler runs on the CPU the affinity names. */
static void irq_check_affinity(struct irq_check *ic)
{
	int irq = pci_irq_vector(ic->pdev, 1), cpu, before, i;
	char what[96];

	if (num_online_cpus() < 2) {
		pr_info("dxpu_irq_check: one CPU online: no affinity test\n");
		return;
	}
	for_each_online_cpu(cpu) {
		int on_before = atomic_read(&ic->on_cpu[cpu]), on_cpu;

		if (irq_set_affinity(irq, cpumask_of(cpu))) {
			check(false, "irq_set_affinity");
			return;
		}
		before = atomic_read(&ic->handled[1]);
		for (i = 0; i < 10; i++) {
			irq_check_pulse(ic, false);
			irq_check_wait(ic, 1, before + i + 1);
		}
		snprintf(what, sizeof(what), "affinity CPU %d: 10 of 10 handled there", cpu);
		on_cpu = atomic_read(&ic->on_cpu[cpu]) - on_before;
		check(atomic_read(&ic->handled[1]) == before + 10 && on_cpu == 10, what);
	}
}

/* ---- the DMA phase ---- */

static void irq_check_cmd(struct irq_check *ic, u8 op, const u32 *args, u16 n)
{
	u16 i;

	ic->pb[ic->pb_used++] = cpu_to_le32((u32)op << 24 | n);
	for (i = 0; i < n; i++)
		ic->pb[ic->pb_used++] = cpu_to_le32(args[i]);
}

static void irq_check_copy(struct irq_check *ic, u32 flags, u64 src, u64 dst)
{
	u32 a[7] = { flags,
		     DATA_BYTES,
		     0,
		     lower_32_bits(src),
		     upper_32_bits(src),
		     lower_32_bits(dst),
		     upper_32_bits(dst) };

	irq_check_cmd(ic, OP_COPY, a, 7);
}

/*
 * A semaphore release of the next number (raising vector 0 if intr), the commands before it
 * one GPFIFO entry; waits for the semaphore (5 s).
 */
static bool irq_check_submit(struct irq_check *ic, bool intr)
{
	u32 seq = ic->seq + 1;
	u32 a[5] = { lower_32_bits(ic->sem_dma), upper_32_bits(ic->sem_dma), seq, 0,
		     intr ? SEMAPHORE_INTERRUPT : 0 };
	__le32 *e = ic->ring + 4 * ic->put;
	unsigned long end = jiffies + 5 * HZ;

	irq_check_cmd(ic, OP_SEMAPHORE_RELEASE, a, 5);
	WRITE_ONCE(ic->seq, seq); /* before the doorbell: the handler compares with it */
	e[0] = cpu_to_le32(lower_32_bits(ic->pb_dma));
	e[1] = cpu_to_le32(upper_32_bits(ic->pb_dma));
	e[2] = cpu_to_le32(ic->pb_used * 4);
	e[3] = 0;
	ic->pb_used = 0;
	ic->put = (ic->put + 1) % RING_ENTRIES;
	writel(ic->put, ic->regs + GP_PUT);
	while (le32_to_cpu(READ_ONCE(*ic->sem)) != seq) {
		if (time_after(jiffies, end) || readl(ic->regs + STATUS) == STATUS_ERROR)
			return false;
		usleep_range(50, 100);
	}
	return true;
}

static bool irq_check_dma_setup(struct irq_check *ic)
{
	struct device *dev = &ic->pdev->dev;

	if (dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64)))
		return false;
	ic->ring = dmam_alloc_coherent(dev, RING_ENTRIES * 16, &ic->ring_dma, GFP_KERNEL);
	ic->pb = dmam_alloc_coherent(dev, PB_DWS * 4, &ic->pb_dma, GFP_KERNEL);
	ic->sem = dmam_alloc_coherent(dev, 16, &ic->sem_dma, GFP_KERNEL);
	ic->src = dmam_alloc_coherent(dev, DATA_BYTES, &ic->src_dma, GFP_KERNEL);
	ic->dst = dmam_alloc_coherent(dev, DATA_BYTES, &ic->dst_dma, GFP_KERNEL);
	if (!ic->ring || !ic->pb || !ic->sem || !ic->src || !ic->dst)
		return false;
	/* The channel out of its BAD_RING error, on a real ring; no interrupt enabled yet. */
	writel(0, ic->regs + INTR_ENABLE);
	writel(0, ic->regs + CONTROL);
	writel(lower_32_bits(ic->ring_dma), ic->regs + GPFIFO_LO);
	writel(upper_32_bits(ic->ring_dma), ic->regs + GPFIFO_HI);
	writel(RING_ENTRIES, ic->regs + GPFIFO_ENTRIES);
	writel(CONTROL_ENABLE | CONTROL_CLEAR_ERROR, ic->regs + CONTROL);
	writel(INTR_ERROR | INTR_SEMAPHORE, ic->regs + INTR_STATUS);
	return irq_check_submit(ic, false);
}

/* Round r raises every vector v >= r once: v is raised v + 1 times in all, once per round. */
static void irq_check_vectors(struct irq_check *ic)
{
	int base[MAX_VECTORS], r, v, bad = 0;
	char what[96];

	for (v = 0; v < ic->nvec; v++)
		base[v] = atomic_read(&ic->handled[v]);
	for (r = 0; r < ic->nvec; r++) {
		for (v = r; v < ic->nvec; v++) {
			u32 a = v;

			irq_check_cmd(ic, OP_INTERRUPT, &a, 1);
			ic->sent++;
		}
		if (!irq_check_submit(ic, false)) {
			check(false, "a round of INTERRUPT commands completes");
			return;
		}
		for (v = r; v < ic->nvec; v++)
			irq_check_wait(ic, v, base[v] + r + 1);
	}
	msleep(100);
	for (v = 0; v < ic->nvec; v++)
		if (atomic_read(&ic->handled[v]) - base[v] != v + 1)
			bad++;
	snprintf(what, sizeof(what), "INTERRUPT commands: each of %d vectors handled v + 1 times",
		 ic->nvec);
	check(!bad, what);
}

/* Copies into dst, then a release that raises vector 0: its handler sees both. */
static void irq_check_ordering(struct irq_check *ic)
{
	int i, before = atomic_read(&ic->handled[0]);
	char what[112];
	u32 j;

	writel(INTR_SEMAPHORE, ic->regs + INTR_STATUS); /* set by the INTERRUPT commands */
	WRITE_ONCE(ic->dma_phase, true);
	writel(INTR_SEMAPHORE, ic->regs + INTR_ENABLE);
	for (i = 0; i < DMA_ROUNDS; i++) {
		u8 pattern = 0x11 * (i + 1);

		for (j = 0; j < DATA_BYTES; j++)
			ic->src[j] = pattern + j * 7;
		WRITE_ONCE(ic->pattern, pattern);
		irq_check_copy(ic, COPY_SRC_HOST, ic->src_dma, 0);
		irq_check_copy(ic, COPY_DST_HOST, 0, ic->dst_dma);
		ic->sent++;
		if (!irq_check_submit(ic, true))
			break;
		if (irq_check_wait(ic, 0, before + i + 1) != before + i + 1)
			break;
	}
	writel(0, ic->regs + INTR_ENABLE);
	WRITE_ONCE(ic->dma_phase, false);
	snprintf(what, sizeof(what),
		 "DMA then interrupt: %d of %d handlers saw the copy and the semaphore (%d stale)",
		 atomic_read(&ic->dma_seen), DMA_ROUNDS, atomic_read(&ic->dma_stale));
	check(atomic_read(&ic->dma_seen) == DMA_ROUNDS && !atomic_read(&ic->dma_stale), what);
}

static int irq_check_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct irq_check *ic;
	bool dma_ok;
	int err, v;

	ic = devm_kzalloc(&pdev->dev, sizeof(*ic), GFP_KERNEL);
	if (!ic)
		return -ENOMEM;
	ic->pdev = pdev;
	init_waitqueue_head(&ic->wq);
	err = pcim_enable_device(pdev);
	if (err)
		return err;
	pci_set_master(pdev);
	ic->regs = pcim_iomap(pdev, 0, 0);
	if (!ic->regs)
		return -ENOMEM;
	check(readl(ic->regs + ID) == ID_VALUE, "BAR0 reads the GPU's ID");
	ic->nvec = pci_alloc_irq_vectors(pdev, 2, min(pci_msix_vec_count(pdev), MAX_VECTORS),
					 PCI_IRQ_MSIX);
	check(ic->nvec >= 2, "pci_alloc_irq_vectors(PCI_IRQ_MSIX) gives the vectors");
	if (ic->nvec < 2)
		goto out;
	check(pdev->msix_enabled, "MSI-X enabled");
	for (v = 0; v < ic->nvec; v++)
		ic->virq[v] = pci_irq_vector(pdev, v);
	for (v = 0; v < ic->nvec; v++) {
		err = devm_request_irq(&pdev->dev, ic->virq[v], irq_check_handler, 0,
				       "dxpu_irq_check", ic);
		if (err) {
			check(false, "request_irq");
			goto out;
		}
	}
	check(irq_check_stop_channel(ic), "the channel stops with BAD_RING, INTR_STATUS bit 1 set");
	irq_check_counting(ic);
	irq_check_masking(ic);
	irq_check_affinity(ic);
	dma_ok = irq_check_dma_setup(ic);
	check(dma_ok, "the DMA API: ring, pushbuffer, semaphore, buffers; the channel runs");
	if (dma_ok) {
		irq_check_vectors(ic);
		irq_check_ordering(ic);
	}
	writel(0, ic->regs + INTR_ENABLE);
	writel(CONTROL_CLEAR_ERROR, ic->regs + CONTROL);
	pr_info("dxpu_irq_check: messages sent %u\n", ic->sent);
	for (v = 0; v < ic->nvec; v++)
		pr_info("dxpu_irq_check: vector %d irq %d handled %d\n", v, pci_irq_vector(pdev, v),
			atomic_read(&ic->handled[v]));
out:
	pr_info("dxpu_irq_check: %d failures\n", failures);
	pci_set_drvdata(pdev, ic);
	return 0; /* stays bound: the scenario checks /proc/interrupts, then removes it */
}

static void irq_check_remove(struct pci_dev *pdev)
{
	pr_info("dxpu_irq_check: remove\n"); /* the vectors and irqs are freed by devres */
}

static const struct pci_device_id irq_check_ids[] = { { PCI_DEVICE(0x4450, 0x0001) }, {} };
MODULE_DEVICE_TABLE(pci, irq_check_ids);

static struct pci_driver irq_check_driver = {
	.name = "dxpu_irq_check",
	.id_table = irq_check_ids,
	.probe = irq_check_probe,
	.remove = irq_check_remove,
};
module_pci_driver(irq_check_driver);

MODULE_DESCRIPTION("dxpu's MSI irq domain, driven by an ordinary PCI driver (a test)");
MODULE_LICENSE("GPL");
