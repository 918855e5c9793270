// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_txn.c - transactions on a bridge's session: configuration and memory requests this
 * host issues to the devices behind the bridge, through lib/core's host transaction layer
 * (dxpu_host) under the bridge's lock. A request is ended by its completion, its deadline
 * (the bridge's timer), the session going down or the bridge closing: whoever waits for one
 * always wakes.
 */
#include <linux/delay.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>

#include "dxpu_fabric.h"
#include "dxpu_gpu.h"

/* How long a request may wait for a free tag or room in the session before -EBUSY. */
#define DXPU_ISSUE_PATIENCE_MS 2000

/* ---- the host layer's operations, called with b->lock held ---- */

static bool dxpu_host_send(void *ctx, const struct dxpu_tlp *t)
{
	struct dxpu_bridge *b = ctx;

	return dxfp_session_send(&b->session, ktime_get_ns(), t) == DXFP_SEND_OK;
}

static void dxpu_host_complete(void *ctx, u64 cookie, u8 status, u32 received)
{
	struct dxpu_bridge *b = ctx;
	struct dxpu_waiter *w = (struct dxpu_waiter *)(uintptr_t)cookie;

	if (!w) { /* a configuration write nobody waits for */
		if (atomic_dec_and_test(&b->cfg_writes_pending))
			wake_up_all(&b->state_wq);
		if (status != DXPU_TLP_CPL_SC) {
			b->cfg_write_errors++;
			pr_warn_ratelimited("dxpu: %pM: a configuration write ended with %s\n",
					    b->mac, dxpu_tlp_cpl_status_name(status));
		}
		return;
	}
	w->status = status;
	complete(&w->done);
}

/* A device wrote to the MSI range: an interrupt, its vector the data (dxpu_gpu.c's setup). */
static void dxpu_host_interrupt(void *ctx, u16 device, u64 addr, u32 data)
{
	dxpu_gpu_event(ctx, device, (int)(data % DXPU_MAX_VECTORS));
}

const struct dxpu_host_ops dxpu_bridge_host_ops = {
	.send = dxpu_host_send,
	.complete = dxpu_host_complete,
	.interrupt = dxpu_host_interrupt,
};

/* ---- issuing ---- */

static bool dxpu_bridge_up(struct dxpu_bridge *b)
{
	return !b->closing && dxfp_session_get_state(&b->session) == DXFP_STATE_ESTABLISHED;
}

/* Issues t; w is completed when it ends (bounded: its deadline, the session or the bridge). */
static int dxpu_bridge_issue(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len,
			     struct dxpu_waiter *w)
{
	unsigned long give_up = jiffies + msecs_to_jiffies(DXPU_ISSUE_PATIENCE_MS);
	enum dxpu_host_err err;

	might_sleep();
	init_completion(&w->done);
	for (;;) {
		spin_lock_bh(&b->lock);
		if (!dxpu_bridge_up(b)) {
			spin_unlock_bh(&b->lock);
			return -ENOLINK;
		}
		err = dxpu_host_issue(&b->host, t, buf, len, (u64)(uintptr_t)w, ktime_get_ns(),
				      NULL);
		if (err == DXPU_HOST_OK)
			dxpu_bridge_flush_locked(b); /* now, not at the next timer tick */
		spin_unlock_bh(&b->lock);
		if (err == DXPU_HOST_OK)
			return 0;
		if (err == DXPU_HOST_BAD_REQUEST || err == DXPU_HOST_BAD_ARGUMENT)
			return -EINVAL;
		/* No tag, or the session's queue is full: room comes as completions arrive. */
		if (time_after(jiffies, give_up))
			return -EBUSY;
		usleep_range(200, 1000);
	}
}

int dxpu_bridge_transact(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len, u8 *status)
{
	struct dxpu_waiter w;
	int err = dxpu_bridge_issue(b, t, buf, len, &w);

	if (err)
		return err;
	wait_for_completion(&w.done);
	*status = w.status;
	return 0;
}

static void dxpu_cfg_request(struct dxpu_tlp *t, u8 kind, u16 bdf, u16 reg, u8 be)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->length_dw = 1;
	t->first_be = be;
	t->cfg_target = bdf;
	t->cfg_reg = reg & 0xffc;
}

int dxpu_bridge_cfg_read(struct dxpu_bridge *b, u16 bdf, u16 reg, u32 *val)
{
	struct dxpu_tlp t;
	__le32 data = cpu_to_le32(~0u);
	u8 status;
	int err;

	dxpu_cfg_request(&t, DXPU_TLP_CFGRD0, bdf, reg, 0xf);
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
			out[base + i] = cpu_to_le32(~0u);
			dxpu_cfg_request(&t, DXPU_TLP_CFGRD0, bdf, reg + 4 * (base + i), 0xf);
			err = dxpu_bridge_issue(b, &t, (u8 *)&out[base + i], sizeof(out[0]), &w[i]);
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

	dxpu_cfg_request(&t, DXPU_TLP_CFGWR0, bdf, reg, be);
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

	dxpu_cfg_request(&t, DXPU_TLP_CFGWR0, bdf, reg, be);
	t.payload = (const u8 *)&data;
	spin_lock_irqsave(&b->lock, flags);
	if (!dxpu_bridge_up(b)) {
		spin_unlock_irqrestore(&b->lock, flags);
		return -ENOLINK;
	}
	err = dxpu_host_issue(&b->host, &t, NULL, 0, 0, ktime_get_ns(), NULL);
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
			   msecs_to_jiffies(DXPU_ISSUE_PATIENCE_MS));
}

/* Post t, retrying while the session has no room, until give_up. */
static int dxpu_bridge_post(struct dxpu_bridge *b, struct dxpu_tlp *t, unsigned long give_up)
{
	enum dxpu_host_err err;

	for (;;) {
		spin_lock_bh(&b->lock);
		if (!dxpu_bridge_up(b)) {
			spin_unlock_bh(&b->lock);
			return -ENOLINK;
		}
		err = dxpu_host_post(&b->host, t);
		if (err == DXPU_HOST_OK)
			dxpu_bridge_flush_locked(b);
		spin_unlock_bh(&b->lock);
		if (err == DXPU_HOST_OK)
			return 0;
		if (err != DXPU_HOST_SEND_FAILED)
			return -EINVAL;
		if (time_after(jiffies, give_up))
			return -EBUSY;
		usleep_range(200, 1000);
	}
}

int dxpu_bridge_mem_read(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status)
{
	struct dxpu_tlp t;

	if (!dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, len, &t))
		return -EINVAL;
	memset(buf, 0xff, len);
	return dxpu_bridge_transact(b, &t, buf, len, status);
}

int dxpu_bridge_mem_write(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len)
{
	unsigned long give_up = jiffies + msecs_to_jiffies(DXPU_ISSUE_PATIENCE_MS);
	u8 small[72], *payload = small;
	struct dxpu_tlp t;
	int err;

	if (!dxpu_tlp_mem_request(DXPU_TLP_MWR, addr, len, &t))
		return -EINVAL;
	if ((size_t)t.length_dw * 4 > sizeof(small)) {
		payload = kmalloc((size_t)t.length_dw * 4, GFP_KERNEL);
		if (!payload)
			return -ENOMEM;
	}
	/* The payload is whole DWs: the bytes sit at their offset in the first one. */
	memset(payload, 0, (size_t)t.length_dw * 4);
	memcpy(payload + (addr & 3), buf, len);
	t.payload = payload;
	err = dxpu_bridge_post(b, &t, give_up);
	if (payload != small)
		kfree(payload);
	return err;
}
