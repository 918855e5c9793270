// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_txn.c - transactions on a bridge's path: configuration and memory requests this host
 * issues to the devices behind the bridge, through lib/core's host path under the bridge's
 * lock. A request is ended by its completion, its deadline (the bridge's timer), the session
 * going down or the bridge closing: whoever waits for one always wakes (the COMPLETE event
 * carries the waiter's address as its cookie). What the bridge has no credit for waits in the
 * host path's ordering queue, where later posted writes pass it (PCIe's ordering rules).
 */
#include <linux/delay.h>
#include <linux/hardirq.h>
#include <linux/slab.h>

#include "dxpu_fabric.h"
#include "core/tlp_build.h"

/* Whether requests may be issued now. Caller holds b->lock. */
static bool dxpu_bridge_up(struct dxpu_bridge *b)
{
	return !b->closing && dxpu_hostpath_is_up(&b->hp);
}

/*
 * What an issuing error becomes: 1 to try again (no tag or no room, the path up, patience
 * left), else the errno.
 */
static int dxpu_issue_verdict(struct dxpu_bridge *b, enum dxpu_host_err err, u64 give_up)
{
	if (err == DXPU_HOST_OK)
		return 0;
	if (err == DXPU_HOST_BAD_REQUEST || err == DXPU_HOST_BAD_ARGUMENT)
		return -EINVAL;
	if (!dxpu_hostpath_retryable(&b->hp, err))
		return -ENOLINK;
	return ktime_get_ns() < give_up ? 1 : -EBUSY;
}

/*
 * How a caller takes b->lock (always with interrupts off: dxpu_fabric.h) and waits: in process
 * context, sleeping between tries; with interrupts already off (a CPU's load or store,
 * dxpu_mmio.c) by spinning, receiving by polling.
 */
static void dxpu_bridge_lock(struct dxpu_bridge *b, bool atomic) __acquires(&b->lock)
{
	if (atomic)
		spin_lock(&b->lock);
	else
		spin_lock_irq(&b->lock);
}

static void dxpu_bridge_unlock(struct dxpu_bridge *b, bool atomic) __releases(&b->lock)
{
	if (atomic)
		spin_unlock(&b->lock);
	else
		spin_unlock_irq(&b->lock);
	dxpu_bridge_tx_flush(b);
}

/* No tag, or no room: room comes as completions and acknowledgements arrive. */
static void dxpu_bridge_backoff(struct dxpu_bridge *b, bool atomic)
{
	if (atomic)
		dxpu_bridge_service(b);
	else
		usleep_range(200, 1000);
}

/* Issues t; w is completed when it ends (bounded: its deadline, the session or the bridge). */
static int dxpu_bridge_issue(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len,
			     struct dxpu_waiter *w, bool atomic)
{
	u64 give_up = ktime_get_ns() + DXPU_HOSTPATH_ISSUE_PATIENCE_NS;
	enum dxpu_host_err err;
	int ret;

	if (atomic)
		lockdep_assert_irqs_disabled();
	else
		might_sleep();
	init_completion(&w->done);
	for (;;) {
		u64 now = ktime_get_ns();

		dxpu_bridge_lock(b, atomic);
		if (!dxpu_bridge_up(b)) {
			dxpu_bridge_unlock(b, atomic);
			return -ENOLINK;
		}
		err = dxpu_hostpath_issue(&b->hp, t, buf, len, (u64)(uintptr_t)w, now, NULL);
		ret = dxpu_issue_verdict(b, err, give_up);
		if (!ret)
			dxpu_bridge_pump_locked(b, now); /* now, not at the next timer tick */
		dxpu_bridge_unlock(b, atomic);
		if (ret <= 0)
			return ret;
		dxpu_bridge_backoff(b, atomic);
	}
}

/* Issues t and waits until it ends (its deadline bounds that); *status its completion status. */
static int dxpu_bridge_transact_as(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len,
				   u8 *status, bool atomic)
{
	struct dxpu_waiter w;
	int err = dxpu_bridge_issue(b, t, buf, len, &w, atomic);

	if (err)
		return err;
	if (atomic) {
		/* The bridge's timer cannot run here: its deadlines are served in the loop. */
		while (!try_wait_for_completion(&w.done))
			dxpu_bridge_service(b);
	} else {
		wait_for_completion(&w.done);
	}
	*status = w.status;
	return 0;
}

int dxpu_bridge_transact(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len, u8 *status)
{
	return dxpu_bridge_transact_as(b, t, buf, len, status, false);
}

int dxpu_bridge_cfg_read(struct dxpu_bridge *b, u16 bdf, u16 reg, u32 *val)
{
	struct dxpu_tlp t;
	__le32 data = cpu_to_le32(~0u);
	u8 status;
	int err;

	dxpu_tlp_config_request(DXPU_TLP_CFGRD0, bdf, reg, 0xf, &t);
	err = dxpu_bridge_transact(b, &t, (u8 *)&data, sizeof(data), &status);
	*val = le32_to_cpu(data);
	if (err)
		return err;
	return status == DXPU_TLP_CPL_SC ? 0 : -EIO;
}

int dxpu_bridge_cfg_read_block(struct dxpu_bridge *b, u16 bdf, u16 reg, unsigned int count,
			       __le32 *out)
{
	struct dxpu_waiter *w;
	unsigned int base, n, i;
	struct dxpu_tlp t;
	int first = 0, err;

	w = kcalloc(DXPU_CFG_PIPELINE, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	for (base = 0; base < count && !first; base += n) {
		n = min_t(unsigned int, count - base, DXPU_CFG_PIPELINE);
		for (i = 0; i < n; i++) {
			u16 at = reg + 4 * (base + i);

			out[base + i] = cpu_to_le32(~0u);
			dxpu_tlp_config_request(DXPU_TLP_CFGRD0, bdf, at, 0xf, &t);
			err = dxpu_bridge_issue(b, &t, (u8 *)&out[base + i], sizeof(out[0]), &w[i],
						false);
			if (err) {
				first = first ?: err;
				n = i; /* wait for those issued, then stop */
				break;
			}
		}
		for (i = 0; i < n; i++) {
			wait_for_completion(&w[i].done);
			if (w[i].status != DXPU_TLP_CPL_SC)
				first = first ?: -EIO;
		}
	}
	kfree(w);
	return first;
}

int dxpu_bridge_cfg_write(struct dxpu_bridge *b, u16 bdf, u16 reg, u8 be, u32 val)
{
	__le32 data = cpu_to_le32(val);
	struct dxpu_tlp t;
	u8 status;
	int err;

	dxpu_tlp_config_request(DXPU_TLP_CFGWR0, bdf, reg, be, &t);
	t.payload = (const u8 *)&data;
	err = dxpu_bridge_transact(b, &t, NULL, 0, &status);
	if (err)
		return err;
	return status == DXPU_TLP_CPL_SC ? 0 : -EIO;
}

int dxpu_bridge_cfg_write_nowait(struct dxpu_bridge *b, u16 bdf, u16 reg, u8 be, u32 val)
{
	__le32 data = cpu_to_le32(val);
	enum dxpu_host_err err;
	struct dxpu_tlp t;
	unsigned long flags;

	dxpu_tlp_config_request(DXPU_TLP_CFGWR0, bdf, reg, be, &t);
	t.payload = (const u8 *)&data;
	spin_lock_irqsave(&b->lock, flags);
	if (!dxpu_bridge_up(b)) {
		spin_unlock_irqrestore(&b->lock, flags);
		return -ENOLINK;
	}
	/* Cookie 0: nobody waits; its COMPLETE event only counts it (dxpu_fabric.c). */
	err = dxpu_hostpath_issue(&b->hp, &t, NULL, 0, 0, ktime_get_ns(), NULL);
	if (err == DXPU_HOST_OK)
		atomic_inc(&b->cfg_writes_pending);
	spin_unlock_irqrestore(&b->lock, flags);
	if (err != DXPU_HOST_OK)
		return -EBUSY;
	/* Frames go out from process context: here interrupts may be off. */
	schedule_work(&b->tx_work);
	return 0;
}

void dxpu_bridge_drain(struct dxpu_bridge *b)
{
	flush_work(&b->tx_work);
	wait_event_timeout(b->state_wq, !atomic_read(&b->cfg_writes_pending) || b->closing,
			   nsecs_to_jiffies(DXPU_HOSTPATH_ISSUE_PATIENCE_NS));
}

static int dxpu_bridge_mem_read_as(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status,
				   bool atomic)
{
	struct dxpu_tlp t;

	if (!dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, len, &t))
		return -EINVAL;
	memset(buf, 0xff, len);
	return dxpu_bridge_transact_as(b, &t, buf, len, status, atomic);
}

int dxpu_bridge_mem_read(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status)
{
	return dxpu_bridge_mem_read_as(b, addr, buf, len, status, false);
}

int dxpu_bridge_mem_read_atomic(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status)
{
	return dxpu_bridge_mem_read_as(b, addr, buf, len, status, true);
}

static int dxpu_bridge_mem_write_as(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len,
				    bool atomic)
{
	u64 give_up = ktime_get_ns() + DXPU_HOSTPATH_ISSUE_PATIENCE_NS;
	const u8 *src = buf;
	enum dxpu_host_err err;
	u32 done;
	int ret;

	if (!len)
		return -EINVAL;
	if (atomic)
		lockdep_assert_irqs_disabled();
	else
		might_sleep();
	for (;;) {
		u64 now = ktime_get_ns();

		dxpu_bridge_lock(b, atomic);
		if (!dxpu_bridge_up(b)) {
			dxpu_bridge_unlock(b, atomic);
			return -ENOLINK;
		}
		/* Cut at the Max Payload Size, DW-aligned; done: the bytes queued, whole writes. */
		err = dxpu_hostpath_write(&b->hp, addr, src, len, now, &done);
		ret = dxpu_issue_verdict(b, err, give_up);
		if (done || !ret)
			dxpu_bridge_pump_locked(b, now);
		dxpu_bridge_unlock(b, atomic);
		if (ret <= 0)
			return ret;
		/* Continue after what was queued: a retry never repeats a write. */
		addr += done;
		src += done;
		len -= done;
		dxpu_bridge_backoff(b, atomic);
	}
}

int dxpu_bridge_mem_write(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len)
{
	return dxpu_bridge_mem_write_as(b, addr, buf, len, false);
}

int dxpu_bridge_mem_write_atomic(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len)
{
	return dxpu_bridge_mem_write_as(b, addr, buf, len, true);
}

/*
 * DMA windows change from any context but NMI (the DMA API maps and unmaps wherever a driver
 * calls it): under the bridge's lock with interrupts off, which keeps out the softirqs that
 * take it too. In hard interrupt context the code interrupted may hold this very lock: only a
 * try, and the caller fails (a mapping) or retries later (an unmapping) rather than spin on its
 * own CPU's lock. Adds the window when size is not 0, else removes the one at iova.
 */
static int dxpu_bridge_change_window(struct dxpu_bridge *b, u16 bdf, u64 iova, u64 size, u8 *mem,
				     u16 flags)
{
	enum dxpu_host_err err = DXPU_HOST_OK;
	unsigned long irqflags;

	if (in_hardirq()) {
		if (!spin_trylock_irqsave(&b->lock, irqflags))
			return -EBUSY;
	} else {
		spin_lock_irqsave(&b->lock, irqflags);
	}
	if (size)
		err = dxpu_hostpath_add_window(&b->hp, bdf, iova, size, mem, flags);
	else
		dxpu_hostpath_remove_window(&b->hp, bdf, iova);
	spin_unlock_irqrestore(&b->lock, irqflags);
	if (err == DXPU_HOST_TABLE_FULL)
		return -ENOSPC;
	if (err == DXPU_HOST_OVERLAP)
		return -EEXIST;
	return err ? -EINVAL : 0;
}

int dxpu_bridge_add_window(struct dxpu_bridge *b, u16 bdf, u64 iova, u64 size, u8 *mem, u16 flags)
{
	return size ? dxpu_bridge_change_window(b, bdf, iova, size, mem, flags) : -EINVAL;
}

int dxpu_bridge_remove_window(struct dxpu_bridge *b, u16 bdf, u64 iova)
{
	return dxpu_bridge_change_window(b, bdf, iova, 0, NULL, 0);
}
