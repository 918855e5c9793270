// SPDX-License-Identifier: GPL-2.0
/*
 * dma_api_check.c - dxpu_dma_api_check.ko, the kernel test of the DMA API on dxpu's bus
 * (tests/kernel/dma_api_test.sh): loaded in a guest where dxpu.ko has the model GPU (4450:0001)
 * on its bus, it uses the GPU as any driver would: the DMA masks, a GPFIFO ring, a pushbuffer
 * and a semaphore from dma_alloc_coherent, buffers through dma_map_single and dma_map_sg,
 * registers through pci_iomap and writel/readl (transparent MMIO). It copies host -> device ->
 * host and checks every byte; then has the GPU write and read where nothing is mapped for it (a
 * read-only mapping, the bytes right after a mapping, a never-mapped canary page, an unmapped
 * IOVA) and checks that the writes were dropped and the reads answered UR, both counted by
 * dxpu (dxpu_dma_stats), and the memory unchanged. Then the windows run out (mappings refused,
 * counted, a scatterlist all or nothing), maps with interrupts off, and the bandwidth of
 * host -> device and device -> host copies through a dma_alloc_coherent buffer. Reports lines
 * "DXPU-TEST: PASS|FAIL ..." on the console while it loads; unloading it does nothing but
 * leave one mapping on purpose, which dxpu removes with the device (the scenario checks it).
 *
 * The GPU's channel (docs/dxgpu.md): nothing else programs it, the GPU being bound to no
 * driver in this test (dxpu.ko binds none; dxgpu.ko is not loaded).
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "core/dxpu_host.h"
#include "dxpu/dxpu_kapi.h"
#include "test_check.h"

#define REG_GPFIFO_LO 0x10
#define REG_GPFIFO_HI 0x14
#define REG_GPFIFO_ENTRIES 0x18
#define REG_GP_PUT 0x20
#define REG_STATUS 0x30
#define REG_ERROR_CODE 0x34
#define REG_CONTROL 0x50
#define STATUS_ERROR 0x2
#define CONTROL_ENABLE 0x1
#define CONTROL_CLEAR 0x2
#define ERR_DMA_UR 4

#define OP_COPY 0x01
#define OP_SEMAPHORE 0x02
#define COPY_SRC_HOST 0x1
#define COPY_DST_HOST 0x2

#define RING_ENTRIES 256
#define PB_BYTES SZ_64K
#define SEG_COUNT 4
#define A_LEN (4 * PAGE_SIZE + 100) /* the single mapping: past a page boundary, odd length */
#define A_OFF 8			    /* ... and not page-aligned */

static unsigned int bw_bytes = SZ_4M;
module_param(bw_bytes, uint, 0444);
MODULE_PARM_DESC(bw_bytes, "bytes of each bandwidth copy (4 MiB)");
static unsigned int bw_runs = 3;
module_param(bw_runs, uint, 0444);
MODULE_PARM_DESC(bw_runs, "copies each way for the bandwidth (3)");

struct gpu {
	struct pci_dev *pdev;
	struct device *dev;
	void __iomem *regs;
	__le32 *ring;
	dma_addr_t ring_dma;
	__le32 *pb;
	dma_addr_t pb_dma;
	u32 pb_used; /* DWs of the pushbuffer taken (each submission waits: reused from 0) */
	__le32 *sem;
	dma_addr_t sem_dma;
	u32 put, seq;
};

static void pb_cmd(struct gpu *g, u8 op, const u32 *args, u16 n)
{
	u16 i;

	g->pb[g->pb_used++] = cpu_to_le32((u32)op << 24 | n);
	for (i = 0; i < n; i++)
		g->pb[g->pb_used++] = cpu_to_le32(args[i]);
}

static void pb_copy(struct gpu *g, u32 flags, u64 size, u64 src, u64 dst)
{
	u32 a[7] = { flags,
		     lower_32_bits(size),
		     upper_32_bits(size),
		     lower_32_bits(src),
		     upper_32_bits(src),
		     lower_32_bits(dst),
		     upper_32_bits(dst) };

	pb_cmd(g, OP_COPY, a, 7);
}

/*
 * The commands written since the last submission, then a semaphore release of the next
 * sequence number, as one GPFIFO entry; waits for the semaphore or the channel's error.
 * 0, the channel's ERROR_CODE (the error cleared, the channel resumed), or -ETIMEDOUT.
 */
static int submit(struct gpu *g, unsigned int timeout_ms)
{
	u32 a[5] = { lower_32_bits(g->sem_dma), upper_32_bits(g->sem_dma), ++g->seq, 0, 0 };
	__le32 *e = g->ring + 4 * g->put;
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	u32 code, status;

	pb_cmd(g, OP_SEMAPHORE, a, 5);
	e[0] = cpu_to_le32(lower_32_bits(g->pb_dma));
	e[1] = cpu_to_le32(upper_32_bits(g->pb_dma));
	e[2] = cpu_to_le32(g->pb_used * 4);
	e[3] = 0;
	g->pb_used = 0;
	g->put = (g->put + 1) % RING_ENTRIES;
	writel(g->put, g->regs + REG_GP_PUT); /* writel orders the ring's bytes before it */
	for (;;) {
		if (le32_to_cpu(READ_ONCE(*g->sem)) == g->seq)
			return 0;
		/*
		 * All ones: the read got no answer in time (a long copy's writes ahead of its
		 * completion on a slow link), not an error: ask again.
		 */
		status = readl(g->regs + REG_STATUS);
		if (status != ~0u && (status & STATUS_ERROR)) {
			code = readl(g->regs + REG_ERROR_CODE);
			writel(CONTROL_ENABLE | CONTROL_CLEAR, g->regs + REG_CONTROL);
			return code;
		}
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(20, 50);
	}
}

static int stats(struct gpu *g, struct dxpu_dma_stats *st)
{
	int err = dxpu_dma_stats(g->pdev, st);

	if (err)
		memset(st, 0, sizeof(*st));
	return err;
}

static void fill(u8 *p, size_t n, u8 seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = seed + i * 13 + (i >> 8);
}

static bool all(const u8 *p, size_t n, u8 v)
{
	return !memchr_inv(p, v, n);
}

static bool setup(struct gpu *g)
{
	g->ring = dma_alloc_coherent(g->dev, RING_ENTRIES * 16, &g->ring_dma, GFP_KERNEL);
	g->pb = dma_alloc_coherent(g->dev, PB_BYTES, &g->pb_dma, GFP_KERNEL);
	g->sem = dma_alloc_coherent(g->dev, 16, &g->sem_dma, GFP_KERNEL);
	check(g->ring && g->pb && g->sem, "dma_alloc_coherent: ring, pushbuffer, semaphore");
	if (!g->ring || !g->pb || !g->sem)
		return false;
	check(g->ring_dma >= SZ_4G && !(g->ring_dma & ~PAGE_MASK) && g->pb_dma >= SZ_4G,
	      "coherent IOVAs are page-aligned, in dxpu's DMA range");
	writel(0, g->regs + REG_CONTROL);
	writel(lower_32_bits(g->ring_dma), g->regs + REG_GPFIFO_LO);
	writel(upper_32_bits(g->ring_dma), g->regs + REG_GPFIFO_HI);
	writel(RING_ENTRIES, g->regs + REG_GPFIFO_ENTRIES); /* GP_GET = GP_PUT = 0 */
	writel(CONTROL_ENABLE | CONTROL_CLEAR, g->regs + REG_CONTROL);
	check(submit(g, 5000) == 0, "an empty submission completes (the ring and pushbuffer read)");
	return true;
}

static void teardown(struct gpu *g)
{
	writel(0, g->regs + REG_CONTROL);
	if (g->sem)
		dma_free_coherent(g->dev, 16, g->sem, g->sem_dma);
	if (g->pb)
		dma_free_coherent(g->dev, PB_BYTES, g->pb, g->pb_dma);
	if (g->ring)
		dma_free_coherent(g->dev, RING_ENTRIES * 16, g->ring, g->ring_dma);
}

static void check_masks(struct gpu *g)
{
	u64 required = dma_get_required_mask(g->dev);

	check(dma_set_mask(g->dev, DMA_BIT_MASK(32)) == -EIO,
	      "a 32-bit mask refused (dxpu's IOVAs lie above 4 GiB)");
	check(required > DMA_BIT_MASK(32) && required <= DMA_BIT_MASK(40),
	      "dma_get_required_mask covers the IOVA space");
	check(dma_set_mask_and_coherent(g->dev, DMA_BIT_MASK(64)) == 0,
	      "dma_set_mask_and_coherent(64 bits)");
	check(dma_set_mask_and_coherent(g->dev, required) == 0, "the required mask itself");
	dma_set_mask_and_coherent(g->dev, DMA_BIT_MASK(64));
}

/* The pages of a scatterlist: allocated one at a time, every other one kept (not adjacent). */
static bool sg_pages(struct page **pages, unsigned int n)
{
	struct page *spare[SEG_COUNT];
	unsigned int i;

	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		spare[i] = alloc_page(GFP_KERNEL);
	}
	for (i = 0; i < n; i++)
		if (spare[i])
			__free_page(spare[i]);
	for (i = 0; i < n; i++)
		if (!pages[i])
			return false;
	return true;
}

struct bufs {
	u8 *a; /* A_OFF + A_LEN + slack: mapped TO_DEVICE at a + A_OFF */
	dma_addr_t a_dma;
	struct page *pages[SEG_COUNT];
	struct scatterlist sg[SEG_COUNT];
	u32 sg_total;
	struct page *canary;
};

/* host (A) -> device memory 0 -> host (the scatterlist's segments, in order). */
static void check_copies(struct gpu *g, struct bufs *b)
{
	u32 pos = 0, i;
	int n, err;
	bool ok = true;

	fill(b->a, A_OFF + A_LEN + 256, 0x21);
	b->a_dma = dma_map_single(g->dev, b->a + A_OFF, A_LEN, DMA_TO_DEVICE);
	ok = !dma_mapping_error(g->dev, b->a_dma);
	check(ok && (b->a_dma & ~PAGE_MASK) == offset_in_page(b->a + A_OFF),
	      "dma_map_single: an IOVA with the buffer's offset in its page");
	ok = true;
	sg_init_table(b->sg, SEG_COUNT);
	for (i = 0; i < SEG_COUNT; i++) {
		memset(page_address(b->pages[i]), 0xee, PAGE_SIZE);
		sg_set_page(&b->sg[i], b->pages[i], PAGE_SIZE - 64 * i, 32 * i);
		b->sg_total += PAGE_SIZE - 64 * i;
	}
	n = dma_map_sg(g->dev, b->sg, SEG_COUNT, DMA_FROM_DEVICE);
	check(n == SEG_COUNT, "dma_map_sg: four segments on non-adjacent pages");
	if (dma_mapping_error(g->dev, b->a_dma) || n != SEG_COUNT)
		return;
	pb_copy(g, COPY_SRC_HOST, A_LEN, b->a_dma, 0);
	err = submit(g, 5000);
	check(!err, "COPY host -> device from the dma_map_single buffer");
	for (i = 0; i < SEG_COUNT; i++) {
		pb_copy(g, COPY_DST_HOST, sg_dma_len(&b->sg[i]), pos, sg_dma_address(&b->sg[i]));
		pos += sg_dma_len(&b->sg[i]);
	}
	err = submit(g, 5000);
	check(!err, "COPY device -> host into each scatterlist segment");
	pos = 0;
	for (i = 0; i < SEG_COUNT; i++) {
		u8 *p = page_address(b->pages[i]);
		u32 off = b->sg[i].offset, len = b->sg[i].length;

		ok = ok && !memcmp(p + off, b->a + A_OFF + pos, len);
		ok = ok && all(p, off, 0xee) && all(p + off + len, PAGE_SIZE - off - len, 0xee);
		pos += len;
	}
	check(ok, "host -> device -> host: every byte back, nothing around the segments touched");
}

static void print_stats(const char *when, const struct dxpu_dma_stats *st)
{
	pr_info("dxpu_dma_api_check: %s: windows %llu mapped %llu unmapped %llu map_errors %llu dma_reads %llu dma_writes %llu refused_reads %llu refused_writes %llu\n",
		when, st->windows, st->mapped, st->unmapped, st->map_errors, st->dma_reads,
		st->dma_writes, st->refused_reads, st->refused_writes);
}

/* The GPU writes and reads outside what is mapped for it (and where it may only read). */
static void check_refused(struct gpu *g, struct bufs *b)
{
	struct dxpu_dma_stats s0, s1;
	u64 canary = page_to_phys(b->canary);
	u8 *before = kmemdup(b->a, A_OFF + A_LEN + 256, GFP_KERNEL);
	bool ok;
	int err;

	if (!before) {
		check(false, "memory for the refusal checks");
		return;
	}
	memset(page_address(b->canary), 0xc5, PAGE_SIZE);

	/* Writes: into the read-only mapping, right after it, and into the canary page. */
	stats(g, &s0);
	pb_copy(g, COPY_DST_HOST, 64, 0, b->a_dma);
	pb_copy(g, COPY_DST_HOST, 32, 0, b->a_dma + A_LEN);
	err = submit(g, 5000);
	stats(g, &s1);
	check(!err && s1.refused_writes >= s0.refused_writes + 2,
	      "device writes into a DMA_TO_DEVICE mapping and past its end: dropped, counted");
	check(!memcmp(before, b->a, A_OFF + A_LEN + 256),
	      "the mapped buffer and the bytes after it unchanged");
	print_stats("after writes near a mapping", &s1);

	s0 = s1;
	pb_copy(g, COPY_DST_HOST, PAGE_SIZE, 0, canary);
	err = submit(g, 5000);
	stats(g, &s1);
	check(!err && s1.refused_writes > s0.refused_writes,
	      "a device write to the never-mapped canary page's bus address: dropped, counted");
	check(all(page_address(b->canary), PAGE_SIZE, 0xc5), "the canary page unchanged");

	/* Reads: the canary page, and past a mapping's end. */
	s0 = s1;
	pb_copy(g, COPY_SRC_HOST, PAGE_SIZE, canary, SZ_1M);
	err = submit(g, 5000);
	stats(g, &s1);
	check(err == ERR_DMA_UR && s1.refused_reads > s0.refused_reads,
	      "a device read of the canary page: UR (the copy fails with DMA_UR), counted");
	s0 = s1;
	pb_copy(g, COPY_SRC_HOST, 16, b->a_dma + A_LEN, SZ_1M);
	err = submit(g, 5000);
	stats(g, &s1);
	check(err == ERR_DMA_UR && s1.refused_reads > s0.refused_reads,
	      "a device read right after a mapping: UR, counted");
	/* A scatterlist mapped DMA_FROM_DEVICE is not readable. */
	s0 = s1;
	pb_copy(g, COPY_SRC_HOST, 16, sg_dma_address(&b->sg[0]), SZ_1M);
	err = submit(g, 5000);
	stats(g, &s1);
	check(err == ERR_DMA_UR && s1.refused_reads > s0.refused_reads,
	      "a device read of a DMA_FROM_DEVICE segment: UR, counted");

	/* Unmapped: the old IOVAs refused both ways. */
	dma_unmap_single(g->dev, b->a_dma, A_LEN, DMA_TO_DEVICE);
	dma_unmap_sg(g->dev, b->sg, SEG_COUNT, DMA_FROM_DEVICE);
	memset(page_address(b->pages[0]), 0xee, PAGE_SIZE);
	s0 = s1;
	pb_copy(g, COPY_SRC_HOST, 64, b->a_dma, SZ_1M);
	err = submit(g, 5000);
	stats(g, &s1);
	check(err == ERR_DMA_UR && s1.refused_reads > s0.refused_reads,
	      "after dma_unmap_single: a device read of the old IOVA is UR, counted");
	s0 = s1;
	pb_copy(g, COPY_DST_HOST, 64, 0, sg_dma_address(&b->sg[0]));
	err = submit(g, 5000);
	stats(g, &s1);
	ok = all(page_address(b->pages[0]), PAGE_SIZE, 0xee);
	check(!err && s1.refused_writes > s0.refused_writes && ok,
	      "after dma_unmap_sg: a device write to the old IOVA dropped, counted, the page unchanged");
	print_stats("after the refusals", &s1);
	kfree(before);
}

/* Map pages until refused: a clean error, counted; a scatterlist longer than what is left. */
static void check_exhaustion(struct gpu *g)
{
	enum {
		MAX_TRY = 2 * DXPU_HOST_MAX_WINDOWS /* more than a bridge's host path holds */
	};
	dma_addr_t *addrs = kcalloc(MAX_TRY, sizeof(*addrs), GFP_KERNEL);
	struct page *page = alloc_page(GFP_KERNEL);
	struct dxpu_dma_stats s0, s1;
	struct scatterlist sg[8];
	struct sg_table sgt = { .sgl = sg, .orig_nents = 8, .nents = 8 };
	unsigned int n = 0, i;
	int ret;

	if (!addrs || !page) {
		check(false, "memory for the exhaustion check");
		goto out;
	}
	stats(g, &s0);
	while (n < MAX_TRY) {
		addrs[n] = dma_map_page(g->dev, page, 64 * (n % 32), 64, DMA_BIDIRECTIONAL);
		if (dma_mapping_error(g->dev, addrs[n]))
			break;
		n++;
	}
	stats(g, &s1);
	pr_info("dxpu_dma_api_check: %u more streaming mappings taken before one was refused\n", n);
	check(n > 0 && n < MAX_TRY && s1.map_errors == s0.map_errors + 1,
	      "mapping past the bridge's windows: DMA_MAPPING_ERROR, counted");
	/* Three windows free again; eight segments do not fit: none stays mapped. */
	for (i = 0; i < 3 && n; i++)
		dma_unmap_page(g->dev, addrs[--n], 64, DMA_BIDIRECTIONAL);
	sg_init_table(sg, 8);
	for (i = 0; i < 8; i++)
		sg_set_page(&sg[i], page, 64, 64 * i);
	stats(g, &s0);
	ret = dma_map_sg(g->dev, sg, 8, DMA_TO_DEVICE);
	stats(g, &s1);
	check(ret == 0 && s1.windows == s0.windows,
	      "dma_map_sg with more segments than windows left: 0, nothing left mapped");
	ret = dma_map_sgtable(g->dev, &sgt, DMA_TO_DEVICE, 0);
	check(ret == -ENOMEM, "dma_map_sgtable then: -ENOMEM");
	ret = dma_map_sg(g->dev, sg, 3, DMA_TO_DEVICE);
	check(ret == 3, "three segments fit the three windows left");
	if (ret == 3)
		dma_unmap_sg(g->dev, sg, 3, DMA_TO_DEVICE);
	while (n)
		dma_unmap_page(g->dev, addrs[--n], 64, DMA_BIDIRECTIONAL);
	stats(g, &s1);
	print_stats("after the exhaustion", &s1);
out:
	if (page)
		__free_page(page);
	kfree(addrs);
}

/* dma_map_single and unmap with interrupts off and in a bottom-half-disabled section. */
static void check_atomic(struct gpu *g)
{
	static DEFINE_SPINLOCK(lock);
	u8 *buf = kmalloc(256, GFP_KERNEL);
	dma_addr_t a1 = DMA_MAPPING_ERROR, a2 = DMA_MAPPING_ERROR;
	unsigned long flags;

	if (!buf) {
		check(false, "memory for the atomic check");
		return;
	}
	spin_lock_irqsave(&lock, flags);
	a1 = dma_map_single(g->dev, buf, 128, DMA_TO_DEVICE);
	if (!dma_mapping_error(g->dev, a1))
		dma_unmap_single(g->dev, a1, 128, DMA_TO_DEVICE);
	spin_unlock_irqrestore(&lock, flags);
	local_bh_disable();
	a2 = dma_map_single(g->dev, buf + 128, 128, DMA_FROM_DEVICE);
	if (!dma_mapping_error(g->dev, a2))
		dma_unmap_single(g->dev, a2, 128, DMA_FROM_DEVICE);
	local_bh_enable();
	check(!dma_mapping_error(g->dev, a1) && !dma_mapping_error(g->dev, a2),
	      "dma_map_single/unmap under spin_lock_irqsave and with bottom halves off");
	kfree(buf);
}

static u64 mbps(u64 bytes, u64 ns)
{
	return ns ? div64_u64(bytes * 1000, ns) : 0;
}

/* Host -> device and device -> host through one coherent buffer, each copy timed. */
static void check_bandwidth(struct gpu *g)
{
	dma_addr_t dma;
	u8 *buf = dma_alloc_coherent(g->dev, bw_bytes, &dma, GFP_KERNEL);
	u64 best_h2d = 0, best_d2h = 0, ns, t;
	unsigned int r;
	bool ok = true;
	int err = 0;

	check(buf, "dma_alloc_coherent of the bandwidth buffer");
	if (!buf)
		return;
	for (r = 0; r < bw_runs && !err; r++) {
		fill(buf, bw_bytes, r);
		pb_copy(g, COPY_SRC_HOST, bw_bytes, dma, SZ_4M);
		t = ktime_get_ns();
		err = submit(g, 60000);
		ns = ktime_get_ns() - t;
		pr_info("dxpu_dma_api_check: bandwidth host -> device %u bytes: %llu ns, %llu MB/s\n",
			bw_bytes, ns, mbps(bw_bytes, ns));
		best_h2d = max(best_h2d, mbps(bw_bytes, ns));
		memset(buf, 0, bw_bytes);
		pb_copy(g, COPY_DST_HOST, bw_bytes, SZ_4M, dma);
		t = ktime_get_ns();
		err = err ?: submit(g, 60000);
		ns = ktime_get_ns() - t;
		pr_info("dxpu_dma_api_check: bandwidth device -> host %u bytes: %llu ns, %llu MB/s\n",
			bw_bytes, ns, mbps(bw_bytes, ns));
		best_d2h = max(best_d2h, mbps(bw_bytes, ns));
		if (!err) {
			u8 *want = kvmalloc(bw_bytes, GFP_KERNEL);

			if (want) {
				fill(want, bw_bytes, r);
				ok = ok && !memcmp(want, buf, bw_bytes);
				kvfree(want);
			}
		}
	}
	check(!err && ok, "the bandwidth copies came back intact");
	if (err)
		pr_err("dxpu_dma_api_check: a bandwidth copy ended with %d\n", err);
	pr_info("dxpu_dma_api_check: bandwidth best of %u: host -> device %llu MB/s, device -> host %llu MB/s\n",
		bw_runs, best_h2d, best_d2h);
	dma_free_coherent(g->dev, bw_bytes, buf, dma);
}

/* One mapping left for the device's removal to take away (the scenario powers the slot off). */
static void leave_one(struct gpu *g)
{
	u8 *left = kmalloc(64, GFP_KERNEL);
	dma_addr_t a;

	if (!left)
		return;
	a = dma_map_single(g->dev, left, 64, DMA_FROM_DEVICE);
	check(!dma_mapping_error(g->dev, a), "one mapping left for the device's removal");
	/* left and its mapping stay: dxpu removes the window when the device goes */
}

static void run(struct gpu *g)
{
	struct dxpu_dma_stats st;
	struct bufs b = {};

	check_masks(g);
	check(stats(g, &st) == 0 && st.windows == 0,
	      "dxpu serves the GPU's DMA API, nothing mapped");
	if (!setup(g))
		goto out;
	stats(g, &st);
	check(st.windows == 3, "three coherent allocations: three windows");
	b.a = kmalloc(A_OFF + A_LEN + 256, GFP_KERNEL);
	b.canary = alloc_page(GFP_KERNEL);
	if (!b.a || !b.canary || !sg_pages(b.pages, SEG_COUNT)) {
		check(false, "memory for the buffers");
		goto out;
	}
	check_copies(g, &b);
	check_refused(g, &b);
	stats(g, &st);
	check(st.windows == 3, "after the unmaps: the three coherent windows only");
	check_exhaustion(g);
	check_atomic(g);
	check_bandwidth(g);
out:
	teardown(g);
	stats(g, &st);
	check(st.windows == 0 && st.mapped == st.unmapped, "everything unmapped: no window left");
	print_stats("at the end", &st);
	leave_one(g);
	kfree(b.a);
	if (b.canary)
		__free_page(b.canary);
	for (st.windows = 0; st.windows < SEG_COUNT; st.windows++)
		if (b.pages[st.windows])
			__free_page(b.pages[st.windows]);
}

static int __init dma_api_check_init(void)
{
	struct gpu g = {};

	g.pdev = pci_get_device(0x4450, 0x0001, NULL);
	check(g.pdev, "the model GPU is on a PCI bus");
	if (!g.pdev)
		goto out;
	g.dev = &g.pdev->dev;
	/* No driver has it (dxpu.ko binds none): decoding and bus mastering are this module's. */
	check(!pci_enable_device_mem(g.pdev), "pci_enable_device_mem");
	pci_set_master(g.pdev);
	g.regs = pci_iomap(g.pdev, 0, SZ_4K);
	check(g.regs, "pci_iomap of BAR0");
	if (g.regs) {
		run(&g);
		pci_iounmap(g.pdev, g.regs);
	}
	if (pci_is_enabled(g.pdev))
		pci_disable_device(g.pdev);
	pci_dev_put(g.pdev);
out:
	pr_info("dxpu_dma_api_check: %d failures\n", failures);
	return 0;
}

static void __exit dma_api_check_exit(void)
{
}

module_init(dma_api_check_init);
module_exit(dma_api_check_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("dxpu: the DMA API on the model GPU, checked");
