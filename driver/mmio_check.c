// SPDX-License-Identifier: GPL-2.0
/*
 * mmio_check.c - dxpu_mmio_check.ko, the kernel test of transparent MMIO (tests/kernel/
 * mmio_test.sh): loaded in a guest where dxpu.ko has the model GPU (4450:0001) on its bus, it
 * maps the GPU's BARs as any driver does (pci_iomap) and drives them with every accessor the
 * kernel has, checking each value the device returned, and what the device saw through a
 * second path that does not fault (dxpu_mmio_read/dxpu_mmio_write, the character device's
 * ioctl path). Then a read under spin_lock_irqsave(), two CPUs hammering one page at once
 * (no access may be lost), and the cost of one access each way. Reports lines
 * "DXPU-TEST: PASS|FAIL ..." on the console, all while it loads; unloading it does nothing.
 *
 * The model GPU (lib/gpu/gpu_registers.h): BAR0 register 0x0 reads "DXGP" (0x44584750), 0x4
 * the version 0x00010000; 0x10/0x14 the GPFIFO base (low: bits 3:0 read 0; high: all bits);
 * BAR2 is its memory, bytes as written.
 */
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <asm/unaligned.h>

#include "dxpu/dxpu_kapi.h"
#include "test_check.h"

#define ID 0x0
#define ID_VALUE 0x44584750u
#define VERSION_VALUE 0x00010000u
#define GPFIFO_LO 0x10
#define GPFIFO_HI 0x14
#define BAR2_MAP SZ_1M

static unsigned int hammer = 1000;
module_param(hammer, uint, 0444);
MODULE_PARM_DESC(hammer, "accesses per CPU in the two-CPU test (1000)");

/* The device's own view, through the path that does not fault. */
static u64 device_read(struct pci_dev *pdev, int bar, u64 off, u32 len)
{
	u8 bytes[8] = { 0 };

	if (dxpu_mmio_read(pdev, bar, off, bytes, len))
		return ~0ull;
	return get_unaligned_le64(bytes);
}

static void check_registers(struct pci_dev *pdev, void __iomem *r)
{
	u64 id64 = ((u64)VERSION_VALUE << 32) | ID_VALUE;
	bool ok;
	u32 v;

	check(readl(r + ID) == ID_VALUE, "readl of the ID register");
	check(readl_relaxed(r + ID) == ID_VALUE, "readl_relaxed");
	check(ioread32(r + ID) == ID_VALUE, "ioread32");
	check(readw(r + ID) == 0x4750 && readw(r + ID + 2) == 0x4458, "readw, both halves");
	check(ioread16(r + ID + 2) == 0x4458 && readw_relaxed(r + ID) == 0x4750,
	      "ioread16, readw_relaxed");
	ok = readb(r + ID) == 0x50 && readb(r + ID + 1) == 0x47 && readb(r + ID + 2) == 0x58;
	ok = ok && ioread8(r + ID + 3) == 0x44 && readb_relaxed(r + ID + 3) == 0x44;
	check(ok, "readb of each byte, ioread8, readb_relaxed");
	check(readq(r + ID) == id64 && readq_relaxed(r + ID) == id64, "readq, readq_relaxed");
	check(ioread64_lo_hi(r + ID) == id64, "ioread64_lo_hi");

	writel(0xa5a5f00d, r + GPFIFO_HI);
	ok = readl(r + GPFIFO_HI) == 0xa5a5f00d;
	check(ok && device_read(pdev, 0, GPFIFO_HI, 4) == 0xa5a5f00d,
	      "writel: read back, and the device saw it");
	writel_relaxed(0x12345678, r + GPFIFO_HI);
	iowrite32(0x9abcdef0, r + GPFIFO_LO);
	ok = readl(r + GPFIFO_HI) == 0x12345678;
	check(ok && device_read(pdev, 0, GPFIFO_LO, 4) == 0x9abcdef0, "writel_relaxed, iowrite32");
	writew(0xbeef, r + GPFIFO_HI);
	iowrite16(0xdead, r + GPFIFO_HI + 2);
	check(device_read(pdev, 0, GPFIFO_HI, 4) == 0xdeadbeef, "writew, iowrite16");
	writeb(0x11, r + GPFIFO_HI);
	iowrite8(0x22, r + GPFIFO_HI + 1);
	writeb_relaxed(0x33, r + GPFIFO_HI + 2);
	check(device_read(pdev, 0, GPFIFO_HI, 4) == 0xde332211, "writeb, iowrite8, writeb_relaxed");
	writeq(0x0123456789abcdefull, r + GPFIFO_LO);
	check(device_read(pdev, 0, GPFIFO_LO, 8) == 0x0123456789abcde0ull,
	      "writeq (the low nibble reads 0, as the register keeps it)");
	iowrite64_lo_hi(0xfedcba9876543210ull, r + GPFIFO_LO);
	writeq_relaxed(readq(r + GPFIFO_LO) + 0x10, r + GPFIFO_LO);
	v = readl(r + GPFIFO_HI);
	check(v == 0xfedcba98 && readl(r + GPFIFO_LO) == 0x76543220,
	      "iowrite64_lo_hi, writeq_relaxed after readq");
	dxpu_mmio_write(pdev, 0, GPFIFO_HI, "\x44\x33\x22\x11", 4);
	check(readl(r + GPFIFO_HI) == 0x11223344, "readl sees what the other path wrote");
}

static void fill(u8 *p, size_t n, u8 seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = seed + i * 7;
}

static void check_memory(struct pci_dev *pdev, void __iomem *m)
{
	u8 *a = kmalloc(2 * SZ_8K, GFP_KERNEL);
	u8 *b = a ? a + SZ_8K : NULL;
	u32 dw[64];
	unsigned int i;
	bool ok;

	if (!a) {
		check(false, "memory for the string checks");
		return;
	}
	writeb(0x5a, m + 1);
	writew(0x1234, m + 2);
	writel(0xcafef00d, m + 4);
	writeq(0x0102030405060708ull, m + 8);
	ok = readb(m + 1) == 0x5a && readw(m + 2) == 0x1234 && readl(m + 4) == 0xcafef00d;
	check(ok && readq(m + 8) == 0x0102030405060708ull, "BAR2: each width written, read back");
	ok = device_read(pdev, 2, 2, 2) == 0x1234 && device_read(pdev, 2, 4, 4) == 0xcafef00d;
	check(ok && device_read(pdev, 2, 8, 8) == 0x0102030405060708ull,
	      "BAR2: the device holds what was written");

	/* memcpy_toio and memcpy_fromio at odd offsets and lengths, across a 4 KiB page. */
	fill(a, 5000, 3);
	memcpy_toio(m + 4093, a, 5000);
	memset(b, 0, 5000);
	memcpy_fromio(b, m + 4093, 5000);
	check(!memcmp(a, b, 5000), "memcpy_toio then memcpy_fromio, 5000 bytes from offset 4093");
	ok = device_read(pdev, 2, 4096, 4) == (a[3] | a[4] << 8 | a[5] << 16 | (u32)a[6] << 24);
	check(ok, "the device holds memcpy_toio's bytes where they belong");

	memset_io(m + 20001, 0xc3, 777);
	memcpy_fromio(b, m + 20000, 779);
	ok = b[0] != 0xc3 && b[778] != 0xc3;
	for (i = 1; i <= 777; i++)
		ok = ok && b[i] == 0xc3;
	check(ok, "memset_io of 777 bytes, nothing around them touched");

	for (i = 0; i < ARRAY_SIZE(dw); i++)
		dw[i] = 0x01010101u * i ^ 0x80402010u;
	iowrite32_rep(m + 0x8000, dw, ARRAY_SIZE(dw)); /* 64 stores to the same address */
	check(readl(m + 0x8000) == dw[63], "iowrite32_rep: the last one stays");
	ioread32_rep(m + 0x8000, dw, 4);
	check(dw[0] == dw[3] && dw[0] == (0x01010101u * 63 ^ 0x80402010u), "ioread32_rep");
	writel(0x44332211, m + 0x9000);
	ioread8_rep(m + 0x9000, a, 3);
	ioread16_rep(m + 0x9000, b, 2);
	check(a[0] == 0x11 && a[2] == 0x11 && ((u16 *)b)[1] == 0x2211, "ioread8_rep, ioread16_rep");
	a[0] = 0x77;
	a[1] = 0x88;
	iowrite8_rep(m + 0x9000, a, 2);
	((u16 *)b)[0] = 0xabcd;
	iowrite16_rep(m + 0x9002, b, 1);
	check(device_read(pdev, 2, 0x9000, 4) == 0xabcd2288, "iowrite8_rep, iowrite16_rep");
	kfree(a);
}

/*
 * With memory decoding off the device claims nothing: a load reads all ones and is counted, as
 * a master abort. Turned on again, the next load must come after that configuration write.
 */
static void check_decoding(struct pci_dev *pdev, void __iomem *r)
{
	u16 cmd;

	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	pci_write_config_word(pdev, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
	check(readl(r + ID) == 0xffffffff, "memory decoding off: readl returns all ones");
	pci_write_config_word(pdev, PCI_COMMAND, cmd);
	check(readl(r + ID) == ID_VALUE, "memory decoding on again: the next readl reaches it");
}

static DEFINE_SPINLOCK(irqs_off_lock);

/* A load with interrupts off: its completion must come without this CPU taking one. */
static void check_irqs_off(void __iomem *r)
{
	unsigned long flags;
	u32 v[16];
	unsigned int i;
	bool ok = true;

	spin_lock_irqsave(&irqs_off_lock, flags);
	for (i = 0; i < ARRAY_SIZE(v); i++)
		v[i] = readl(r + ID);
	spin_unlock_irqrestore(&irqs_off_lock, flags);
	for (i = 0; i < ARRAY_SIZE(v); i++)
		ok = ok && v[i] == ID_VALUE;
	check(ok, "readl under spin_lock_irqsave, 16 times");
}

struct hammer_ctx {
	void __iomem *page;
	unsigned int cpu;
	unsigned int lost;
	struct completion done;
};

/* One CPU's share of the page: write a value, read it back, read the other CPU's word. */
static int hammer_fn(void *arg)
{
	struct hammer_ctx *h = arg;
	void __iomem *mine = h->page + 64 * h->cpu;
	unsigned int i;

	for (i = 0; i < hammer; i++) {
		u32 want = (h->cpu << 24) ^ i ^ 0x5a5a00;

		writel(want, mine);
		if (readl(mine) != want)
			h->lost++;
		if (readl(h->page + 0x800) != 0xfeedc0de)
			h->lost++;
		cond_resched();
	}
	complete(&h->done);
	return 0;
}

static void check_two_cpus(void __iomem *m)
{
	struct hammer_ctx h[2];
	char what[96];
	unsigned int i;

	if (num_online_cpus() < 2) {
		pr_info("dxpu_mmio_check: one CPU online: no two-CPU test\n");
		return;
	}
	writel(0xfeedc0de, m + 0x800);
	for (i = 0; i < 2; i++) {
		struct task_struct *t;

		h[i] = (struct hammer_ctx){ .page = m, .cpu = i };
		init_completion(&h[i].done);
		t = kthread_create(hammer_fn, &h[i], "dxpu_hammer/%u", i);
		if (IS_ERR(t)) {
			check(false, "two-CPU test: a thread");
			return;
		}
		kthread_bind(t, i);
		wake_up_process(t);
	}
	for (i = 0; i < 2; i++)
		wait_for_completion(&h[i].done);
	snprintf(what, sizeof(what), "two CPUs, one page, %u accesses each: %u and %u lost",
		 3 * hammer, h[0].lost, h[1].lost);
	check(!h[0].lost && !h[1].lost, what);
}

#define SAMPLES 200

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* The median of SAMPLES timings of op (which the caller's switch names). */
static u64 median_ns(struct pci_dev *pdev, void __iomem *r, int op, u64 *t)
{
	unsigned int i;
	u32 v;

	for (i = 0; i < SAMPLES; i++) {
		u64 t0 = ktime_get_ns();

		if (op == 0)
			readl(r + ID);
		else if (op == 1)
			writel(i, r + GPFIFO_HI);
		else
			dxpu_mmio_read(pdev, 0, ID, &v, 4);
		t[i] = ktime_get_ns() - t0;
	}
	sort(t, SAMPLES, sizeof(*t), cmp_u64, NULL);
	return t[SAMPLES / 2];
}

/* What one access costs, through the fault and through the character device's path. */
static void measure(struct pci_dev *pdev, void __iomem *r)
{
	u64 *t = kcalloc(SAMPLES, sizeof(*t), GFP_KERNEL);
	u64 rd, wr, ioctl_rd;

	if (!t)
		return;
	rd = median_ns(pdev, r, 0, t);
	wr = median_ns(pdev, r, 1, t);
	ioctl_rd = median_ns(pdev, r, 2, t);
	pr_info("dxpu_mmio_check: median of %u: readl %llu ns, writel %llu ns, dxpu_mmio_read (the character device's path) %llu ns\n",
		SAMPLES, rd, wr, ioctl_rd);
	kfree(t);
}

static int __init dxpu_mmio_check_init(void)
{
	struct pci_dev *pdev = pci_get_device(0x4450, 0x0001, NULL);
	void __iomem *r, *m;

	if (!pdev) {
		pr_err("DXPU-TEST: FAIL no model GPU on any bus\n");
		return -ENODEV;
	}
	/* No driver has it (dxpu.ko binds none): its memory decoding is this module's. */
	check(!pci_enable_device_mem(pdev), "pci_enable_device_mem");
	r = pci_iomap(pdev, 0, SZ_4K);
	m = pci_iomap(pdev, 2, BAR2_MAP);
	if (!r || !m) {
		check(false, "pci_iomap of BAR0 and BAR2");
	} else {
		check_registers(pdev, r);
		check_memory(pdev, m);
		check_irqs_off(r);
		check_decoding(pdev, r);
		check_two_cpus(m);
		measure(pdev, r);
	}
	if (m)
		pci_iounmap(pdev, m);
	if (r)
		pci_iounmap(pdev, r);
	if (pci_is_enabled(pdev))
		pci_disable_device(pdev);
	pci_dev_put(pdev);
	pr_info("dxpu_mmio_check: %d failures\n", failures);
	return 0;
}

static void __exit dxpu_mmio_check_exit(void)
{
}

module_init(dxpu_mmio_check_init);
module_exit(dxpu_mmio_check_exit);
MODULE_DESCRIPTION("DxPU: transparent MMIO checked with every accessor (a test module)");
MODULE_LICENSE("Dual MIT/GPL");
