// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_mmio.c - transparent MMIO: the CPU's loads and stores to any kernel mapping of a BAR of
 * a device on dxpu's bus (pci_iomap, pcim_iomap, ioremap, ioremap_wc of its resource) become
 * memory reads and posted memory writes on the fabric, so that a driver written against the
 * ordinary kernel APIs reaches the remote device with readl() and writel().
 *
 * How (docs/kernel-module.md, "Transparent MMIO"):
 *  - ioremap() calls mmiotrace_ioremap() for every mapping it makes; an ftrace hook there sees
 *    the mappings of dxpu's memory windows and keeps their pages not present with the kernel's
 *    kmmio probes, so that every access to them faults, on every CPU. iounmap() calls
 *    mmiotrace_iounmap(), where the probe goes.
 *  - The page fault reaches kmmio_handler(). For dxpu's mappings an ftrace hook makes that call
 *    return into dxpu_mmio_fault() instead (as livepatch replaces a function), which decodes
 *    the faulting instruction (lib/core x86_mmio_insn), performs it on the device the address
 *    routes to (by the devices' BARs, lib/core dxpu_cfg_route), writes the result into the
 *    register and steps past the instruction. kmmio's own handler would make the page present
 *    and single-step the instruction: while it does, another CPU's access to that page reaches
 *    the bus unseen. Here the page is never made present, so no access is lost on SMP.
 *  - The fault runs with interrupts off, as a load from a real device stalls its CPU: the
 *    request's frames go out through netpoll and the completion is received by polling the
 *    interface (dxpu_fabric_poll), never by waiting for an interrupt, so a readl() under
 *    spin_lock_irqsave() works on one CPU too.
 * A read the device answers with UR or CA, or not at all, returns all ones, as a master abort
 * does; a write that cannot be sent is dropped; both are counted. From hard interrupt or NMI
 * context nothing is sent (this CPU may have interrupted a holder of the bridge's lock): such a
 * load returns all ones, such a store is dropped, counted as refused.
 */
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/mmiotrace.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dxpu.h"
#include "dxpu_mmio.h"
#include "core/dxpu_cfg_route.h"
#include "core/x86_mmio_insn.h"

/* One intercepted mapping: the kernel's virtual range and the bus address it starts at. */
struct dxpu_mmio_map {
	struct list_head node; /* in dxpu_mmio.maps (RCU) */
	struct kmmio_probe probe;
	unsigned long vaddr;
	unsigned long size;
	u64 bus;
	struct rcu_head rcu;
};

/* The most bytes one fault moves for a string instruction (one request's worth). */
#define DXPU_MMIO_CHUNK 4096u

static struct {
	struct dxpu_domain *domain;
	spinlock_t lock; /* the maps' changes (their readers use RCU) */
	struct list_head maps;
	int (*kmmio_init)(void);
	void (*kmmio_cleanup)(void);
	unsigned int *kmmio_count;
	struct ftrace_ops handler_ops, ioremap_ops, iounmap_ops;
	atomic64_t reads, writes, read_errors, write_errors, refused, unmapped;
} dxpu_mmio;

/* A string instruction's data on its way through this CPU (interrupts are off meanwhile). */
static DEFINE_PER_CPU(u8[DXPU_MMIO_CHUNK], dxpu_mmio_buf);

/* ---- the mappings ---- */

static bool dxpu_mmio_in(const struct resource *r, u64 start, u64 size)
{
	return r->flags && start >= r->start && size <= resource_size(r) &&
	       start - r->start <= resource_size(r) - size;
}

/* The mapping whose pages hold kernel address addr, if dxpu intercepts it. Under RCU. */
static struct dxpu_mmio_map *dxpu_mmio_find(unsigned long addr)
{
	struct dxpu_mmio_map *m;

	list_for_each_entry_rcu(m, &dxpu_mmio.maps, node)
		if (addr >= (m->vaddr & PAGE_MASK) && addr < PAGE_ALIGN(m->vaddr + m->size))
			return m;
	return NULL;
}

static void dxpu_mmio_free(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct dxpu_mmio_map, rcu));
}

/* ioremap() mapped [phys, phys + size) at vaddr: intercepted if it is inside dxpu's windows. */
static void dxpu_mmio_add(u64 phys, unsigned long size, unsigned long vaddr)
{
	struct dxpu_domain *d = dxpu_mmio.domain;
	struct dxpu_mmio_map *m;
	unsigned long flags;

	if (!size || (!dxpu_mmio_in(&d->mem32, phys, size) && !dxpu_mmio_in(&d->mem64, phys, size)))
		return;
	m = kzalloc(sizeof(*m), GFP_ATOMIC);
	if (!m)
		goto lost;
	m->vaddr = vaddr;
	m->size = size;
	m->bus = phys; /* dxpu's root bus has no address translation */
	m->probe.addr = vaddr;
	m->probe.len = size;
	if (register_kmmio_probe(&m->probe)) {
		kfree(m);
		goto lost;
	}
	spin_lock_irqsave(&dxpu_mmio.lock, flags);
	list_add_tail_rcu(&m->node, &dxpu_mmio.maps);
	spin_unlock_irqrestore(&dxpu_mmio.lock, flags);
	return;
lost:
	atomic64_inc(&dxpu_mmio.unmapped);
	pr_err("dxpu: the mapping of %#llx (%lu bytes) cannot be intercepted: its accesses will not reach the device\n",
	       phys, size);
}

/* The mapping at vaddr goes: no fault of it is ours from here. */
static void dxpu_mmio_remove(struct dxpu_mmio_map *m)
{
	unsigned long flags;

	spin_lock_irqsave(&dxpu_mmio.lock, flags);
	list_del_rcu(&m->node);
	spin_unlock_irqrestore(&dxpu_mmio.lock, flags);
	unregister_kmmio_probe(&m->probe);
	call_rcu(&m->rcu, dxpu_mmio_free); /* kmmio and our faults read it under RCU */
}

/* ---- the device an access is for ---- */

/*
 * The slot whose device claims [bus, bus + len), as the devices' BARs route it, with its bridge
 * in *b; NULL when none does (a read is answered as a master abort). The configuration writes
 * queued for that device before now are handed to the bridge first, so that the request comes
 * after them (a driver that turns memory decoding on and then reads). The caller stays in an
 * RCU read-side critical section while it uses the bridge (dxpu_bridge_release waits for it).
 */
static struct dxpu_slot *dxpu_mmio_route(u64 bus, u32 len, struct dxpu_bridge **b)
{
	struct dxpu_domain *d = dxpu_mmio.domain;
	struct dxpu_slot *found = NULL;
	unsigned int i;

	raw_spin_lock(&d->cfg_lock);
	for (i = 0; i < d->nr_slots && !found; i++) {
		struct dxpu_slot *s = &d->slots[i];

		/*
		 * A slot's bridge is set while its shadow is: from power-on until the device is
		 * off the bus. Not only while it is bindable: a driver's remove, which runs after
		 * the slot stopped being bindable, still talks to its device (virtio_pci resets
		 * it and polls its status until it reads 0).
		 */
		if (s->shadow && dxpu_cfg_claims_mem(s->shadow, bus, len, NULL)) {
			found = s;
			*b = s->bridge;
		}
	}
	raw_spin_unlock(&d->cfg_lock);
	if (found)
		dxpu_slot_cfg_flush_atomic(found);
	return found;
}

/* len bytes of the mapping at kernel address addr into buf; all ones where nothing came. */
static void dxpu_mmio_read(struct dxpu_mmio_map *m, unsigned long addr, u8 *buf, u32 len)
{
	u64 bus = m->bus + (addr - m->vaddr);

	while (len) {
		/* One request at most 4 KiB, never across a 4 KiB boundary (PCIe). */
		u32 n = min_t(u32, len, SZ_4K - (bus & (SZ_4K - 1)));
		struct dxpu_bridge *b = NULL;
		u8 status = DXPU_TLP_CPL_UR;

		if (!dxpu_mmio_route(bus, n, &b) ||
		    dxpu_bridge_mem_read_atomic(b, bus, buf, n, &status) ||
		    status != DXPU_TLP_CPL_SC) {
			memset(buf, 0xff, n);
			atomic64_inc(&dxpu_mmio.read_errors);
		}
		atomic64_inc(&dxpu_mmio.reads);
		bus += n;
		buf += n;
		len -= n;
	}
}

/* len bytes from buf to the mapping at kernel address addr: posted, in this CPU's order. */
static void dxpu_mmio_write(struct dxpu_mmio_map *m, unsigned long addr, const u8 *buf, u32 len)
{
	u64 bus = m->bus + (addr - m->vaddr);
	struct dxpu_bridge *b = NULL;

	if (!dxpu_mmio_route(bus, len, &b) || dxpu_bridge_mem_write_atomic(b, bus, buf, len))
		atomic64_inc(&dxpu_mmio.write_errors);
	atomic64_inc(&dxpu_mmio.writes);
}

/* ---- the faulting instruction ---- */

static unsigned long *dxpu_mmio_reg(struct pt_regs *regs, unsigned int n)
{
	switch (n) {
	case DXPU_X86_RAX:
		return &regs->ax;
	case DXPU_X86_RCX:
		return &regs->cx;
	case DXPU_X86_RDX:
		return &regs->dx;
	case DXPU_X86_RBX:
		return &regs->bx;
	case DXPU_X86_RSP:
		return &regs->sp;
	case DXPU_X86_RBP:
		return &regs->bp;
	case DXPU_X86_RSI:
		return &regs->si;
	case DXPU_X86_RDI:
		return &regs->di;
	case DXPU_X86_R8:
		return &regs->r8;
	case DXPU_X86_R9:
		return &regs->r9;
	case DXPU_X86_R10:
		return &regs->r10;
	case DXPU_X86_R11:
		return &regs->r11;
	case DXPU_X86_R12:
		return &regs->r12;
	case DXPU_X86_R13:
		return &regs->r13;
	case DXPU_X86_R14:
		return &regs->r14;
	default:
		return &regs->r15;
	}
}

static bool dxpu_mmio_decode(struct pt_regs *regs, struct dxpu_x86_mmio_insn *insn)
{
	u8 code[DXPU_X86_INSN_MAX];
	size_t avail = sizeof(code);
	enum dxpu_x86_decode_err err;

	/* The instruction may end just before an unmapped page: read only up to it then. */
	if (copy_from_kernel_nofault(code, (void *)regs->ip, avail)) {
		avail = PAGE_SIZE - offset_in_page(regs->ip);
		if (avail >= sizeof(code) ||
		    copy_from_kernel_nofault(code, (void *)regs->ip, avail))
			return false;
	}
	err = dxpu_x86_mmio_decode(code, avail, insn);
	if (err != DXPU_X86_DECODE_OK) {
		pr_err("dxpu: %pS: an instruction that cannot be performed on a device's BAR (%*ph)\n",
		       (void *)regs->ip, (int)avail, code);
		return false;
	}
	return true;
}

/* A load or store of one register or immediate at addr. */
static void dxpu_mmio_single(struct pt_regs *regs, const struct dxpu_x86_mmio_insn *insn,
			     struct dxpu_mmio_map *m, unsigned long addr, bool perform)
{
	unsigned long *reg = dxpu_mmio_reg(regs, insn->reg);
	__le64 data = cpu_to_le64(~0ull);
	u64 v;

	switch (insn->kind) {
	case DXPU_X86_MMIO_STORE:
	case DXPU_X86_MMIO_STORE_IMM:
		v = insn->kind == DXPU_X86_MMIO_STORE ? dxpu_x86_mmio_store_value(insn, *reg)
						      : insn->imm;
		data = cpu_to_le64(v);
		if (perform)
			dxpu_mmio_write(m, addr, (u8 *)&data, insn->size);
		break;
	default:
		if (perform)
			dxpu_mmio_read(m, addr, (u8 *)&data, insn->size);
		*reg = dxpu_x86_mmio_load_result(insn, *reg, le64_to_cpu(data));
		break;
	}
	regs->ip += insn->len;
}

/* A string instruction's kernel-memory destination; false where it cannot be written. */
static bool dxpu_mmio_to_kernel(u8 *dst, const u8 *src, unsigned long bytes)
{
	unsigned long i;

	for (i = 0; i < bytes; i++)
		__put_kernel_nofault(dst + i, src + i, u8, fault);
	return true;
fault:
	return false;
}

/*
 * MOVS or STOS with at least one side in a mapping: up to a chunk of elements moved at once
 * (one request each way, not one per element, as a memcpy_fromio need not keep the widths),
 * the registers advanced as the CPU would; the instruction runs again for the rest.
 */
static bool dxpu_mmio_string(struct pt_regs *regs, const struct dxpu_x86_mmio_insn *insn,
			     bool perform)
{
	u8 *buf = *this_cpu_ptr(&dxpu_mmio_buf);
	unsigned long count = insn->rep ? regs->cx : 1;
	struct dxpu_mmio_map *src = NULL, *dst;
	unsigned long bytes, i;

	if (regs->flags & X86_EFLAGS_DF)
		return false; /* backwards: the kernel's string helpers never are */
	if (!count) {
		regs->ip += insn->len;
		return true;
	}
	dst = dxpu_mmio_find(regs->di);
	if (insn->kind == DXPU_X86_MMIO_MOVS)
		src = dxpu_mmio_find(regs->si);
	bytes = min_t(unsigned long, count * insn->size, DXPU_MMIO_CHUNK);
	/* Each mapped side ends the chunk at its mapping's end. */
	if (dst)
		bytes = min(bytes, dst->vaddr + dst->size - regs->di);
	if (src)
		bytes = min(bytes, src->vaddr + src->size - regs->si);
	bytes = max_t(unsigned long, bytes - bytes % insn->size, insn->size);
	if (insn->kind == DXPU_X86_MMIO_STOS) {
		for (i = 0; i < bytes; i++)
			buf[i] = regs->ax >> (8 * (i % insn->size));
	} else if (!src) {
		if (copy_from_kernel_nofault(buf, (void *)regs->si, bytes))
			return false;
	} else if (perform) {
		dxpu_mmio_read(src, regs->si, buf, bytes);
	} else {
		memset(buf, 0xff, bytes);
	}
	if (!dst) {
		if (!dxpu_mmio_to_kernel((u8 *)regs->di, buf, bytes))
			return false;
	} else if (perform) {
		dxpu_mmio_write(dst, regs->di, buf, bytes);
	}
	regs->di += bytes;
	if (insn->kind == DXPU_X86_MMIO_MOVS)
		regs->si += bytes;
	if (insn->rep)
		regs->cx -= bytes / insn->size;
	if (!insn->rep || !regs->cx)
		regs->ip += insn->len;
	return true;
}

/*
 * kmmio_handler()'s replacement for faults on dxpu's mappings (see the top of the file): 1 when
 * the instruction was performed and stepped over; 0 lets the kernel's fault path report it
 * (an instruction this cannot perform is a bug worth an oops that names it).
 */
static int dxpu_mmio_fault(struct pt_regs *regs, unsigned long addr)
{
	struct dxpu_x86_mmio_insn insn;
	struct dxpu_mmio_map *m;
	bool perform = !in_nmi() && !in_hardirq();
	int handled = 0;

	rcu_read_lock();
	m = dxpu_mmio_find(addr);
	if (!m || user_mode(regs) || !dxpu_mmio_decode(regs, &insn))
		goto out;
	if (!perform) {
		atomic64_inc(&dxpu_mmio.refused);
		pr_warn_ratelimited("dxpu: %pS: BAR access in hard IRQ context not done\n",
				    (void *)regs->ip);
	}
	if (insn.kind == DXPU_X86_MMIO_MOVS || insn.kind == DXPU_X86_MMIO_STOS) {
		handled = dxpu_mmio_string(regs, &insn, perform);
	} else {
		dxpu_mmio_single(regs, &insn, m, addr, perform);
		handled = 1;
	}
out:
	rcu_read_unlock();
	return handled;
}

/* ---- the hooks ---- */

/* kmmio_handler(regs, addr): for an address of ours, the call goes to dxpu_mmio_fault. */
static void notrace dxpu_mmio_on_fault(unsigned long ip, unsigned long parent_ip,
				       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs = ftrace_get_regs(fregs);

	rcu_read_lock();
	if (dxpu_mmio_find(regs->si))
		regs->ip = (unsigned long)dxpu_mmio_fault;
	rcu_read_unlock();
}

/* mmiotrace_ioremap(phys, size, vaddr): ioremap() made a mapping. */
static void notrace dxpu_mmio_on_ioremap(unsigned long ip, unsigned long parent_ip,
					 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs = ftrace_get_regs(fregs);

	dxpu_mmio_add(regs->di, regs->si, regs->dx);
}

/* mmiotrace_iounmap(vaddr): iounmap() is about to remove the mapping vaddr is in. */
static void notrace dxpu_mmio_on_iounmap(unsigned long ip, unsigned long parent_ip,
					 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct pt_regs *regs = ftrace_get_regs(fregs);
	struct dxpu_mmio_map *m;

	rcu_read_lock();
	list_for_each_entry_rcu(m, &dxpu_mmio.maps, node) {
		if ((m->vaddr & PAGE_MASK) == (regs->di & PAGE_MASK)) {
			dxpu_mmio_remove(m);
			break;
		}
	}
	rcu_read_unlock();
}

static int dxpu_mmio_hook(struct ftrace_ops *ops, ftrace_func_t func, const char *name,
			  unsigned long flags)
{
	int err;

	ops->func = func;
	ops->flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_RECURSION | flags;
	err = ftrace_set_filter(ops, (unsigned char *)name, strlen(name), 0);
	if (!err)
		err = register_ftrace_function(ops);
	if (err) {
		ftrace_free_filter(ops);
		pr_err("dxpu: cannot hook %s (%d): no transparent MMIO\n", name, err);
	}
	return err;
}

static void dxpu_mmio_unhook(struct ftrace_ops *ops)
{
	unregister_ftrace_function(ops);
	ftrace_free_filter(ops);
}

/*
 * kallsyms_lookup_name is not exported; a kprobe on it says where it is. Registered disabled,
 * it is never armed: no ftrace trampoline or instruction slot is made for it (which kprobes
 * would keep after it goes).
 */
static unsigned long dxpu_mmio_symbol(const char *name)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name", .flags = KPROBE_FLAG_DISABLED };
	unsigned long (*lookup)(const char *name);

	if (register_kprobe(&kp))
		return 0;
	lookup = (unsigned long (*)(const char *))kp.addr;
	unregister_kprobe(&kp);
	return lookup(name);
}

/* kmmio's own set-up, which only the mmiotrace tracer calls, is not exported either. */
static int dxpu_mmio_find_kmmio(void)
{
	dxpu_mmio.kmmio_init = (int (*)(void))dxpu_mmio_symbol("kmmio_init");
	dxpu_mmio.kmmio_cleanup = (void (*)(void))dxpu_mmio_symbol("kmmio_cleanup");
	dxpu_mmio.kmmio_count = (unsigned int *)dxpu_mmio_symbol("kmmio_count");
	if (!dxpu_mmio.kmmio_init || !dxpu_mmio.kmmio_cleanup || !dxpu_mmio.kmmio_count) {
		pr_err("dxpu: this kernel has no kmmio (CONFIG_MMIOTRACE): no transparent MMIO\n");
		return -EOPNOTSUPP;
	}
	if (READ_ONCE(*dxpu_mmio.kmmio_count)) {
		pr_err("dxpu: kmmio is in use (the mmiotrace tracer?): no transparent MMIO\n");
		return -EBUSY;
	}
	return 0;
}

int dxpu_mmio_init(struct dxpu_domain *d)
{
	int err;

	dxpu_mmio.domain = d;
	spin_lock_init(&dxpu_mmio.lock);
	INIT_LIST_HEAD(&dxpu_mmio.maps);
	err = dxpu_mmio_find_kmmio();
	if (err)
		return err;
	err = dxpu_mmio.kmmio_init();
	if (err)
		return err;
	err = dxpu_mmio_hook(&dxpu_mmio.handler_ops, dxpu_mmio_on_fault, "kmmio_handler",
			     FTRACE_OPS_FL_IPMODIFY);
	if (err)
		goto cleanup_kmmio;
	err = dxpu_mmio_hook(&dxpu_mmio.iounmap_ops, dxpu_mmio_on_iounmap, "mmiotrace_iounmap", 0);
	if (err)
		goto unhook_handler;
	err = dxpu_mmio_hook(&dxpu_mmio.ioremap_ops, dxpu_mmio_on_ioremap, "mmiotrace_ioremap", 0);
	if (err)
		goto unhook_iounmap;
	return 0;

unhook_iounmap:
	dxpu_mmio_unhook(&dxpu_mmio.iounmap_ops);
unhook_handler:
	dxpu_mmio_unhook(&dxpu_mmio.handler_ops);
cleanup_kmmio:
	dxpu_mmio.kmmio_cleanup();
	return err;
}

void dxpu_mmio_exit(void)
{
	struct dxpu_mmio_map *m;

	dxpu_mmio_unhook(&dxpu_mmio.ioremap_ops);
	dxpu_mmio_unhook(&dxpu_mmio.iounmap_ops);
	/* A mapping its driver never unmapped: its pages present again, reaching nothing. */
	rcu_read_lock();
	list_for_each_entry_rcu(m, &dxpu_mmio.maps, node) {
		pr_warn("dxpu: a mapping of %#llx was never unmapped\n", m->bus);
		dxpu_mmio_remove(m);
	}
	rcu_read_unlock();
	/* kmmio frees its pages and our maps after grace periods; then the handler may go. */
	synchronize_rcu();
	rcu_barrier();
	dxpu_mmio_unhook(&dxpu_mmio.handler_ops);
	dxpu_mmio.kmmio_cleanup();
}

ssize_t dxpu_mmio_show_counters(char *buf)
{
	int n;

	n = sysfs_emit(buf, "reads %lld writes %lld ", atomic64_read(&dxpu_mmio.reads),
		       atomic64_read(&dxpu_mmio.writes));
	n += sysfs_emit_at(buf, n, "read_errors %lld write_errors %lld ",
			   atomic64_read(&dxpu_mmio.read_errors),
			   atomic64_read(&dxpu_mmio.write_errors));
	n += sysfs_emit_at(buf, n, "refused %lld unmapped %lld\n",
			   atomic64_read(&dxpu_mmio.refused), atomic64_read(&dxpu_mmio.unmapped));
	return n;
}
