// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_fabric.c - paths to bridges over raw Ethernet (dxpu_fabric.h). The protocol is
 * lib/core's host path, sans-IO as in userspace: frames in from the packet handler, the time
 * from ktime_get_ns(), frames out through dev_queue_xmit, a timer for the path's next
 * deadline; after every call the frames due are sent, the TLPs held for other bridges' devices
 * copied to them, and the events dispatched (waiters woken, clients told).
 */
#include <linux/etherdevice.h>
#include <linux/jiffies.h>
#include <linux/netpoll.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/rculist.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "dxpu_fabric.h"

static u64 dxpu_now(void)
{
	return ktime_get_ns();
}

/*
 * Frames are built under the bridge's lock, which is taken with interrupts off, and sent once
 * it is let go (dxpu_bridge_unlock): with interrupts on through dev_queue_xmit, whose qdisc
 * holds what the device's queue has no room for yet; with interrupts still off (the fault path
 * of a CPU's load or store, dxpu_mmio.c; a hard interrupt) straight to the driver, as netpoll
 * sends, but without netpoll's queue (its work item cannot run while this CPU waits with
 * interrupts off) and without its waits: a frame that finds the device's queue taken or full
 * stays first in line for the next try (the fault path's next poll, or the send work).
 */
/* The device's queue txq is ours (its _xmit_lock held, as __netif_tx_trylock() takes it). */
static netdev_tx_t dxpu_xmit_locked(struct net_device *dev, struct sk_buff *skb,
				    struct netdev_queue *txq)
{
	netdev_tx_t rc = NETDEV_TX_BUSY;

	WRITE_ONCE(txq->xmit_lock_owner, smp_processor_id());
	if (!netif_xmit_frozen_or_stopped(txq))
		rc = netdev_start_xmit(skb, dev, txq, false);
	WRITE_ONCE(txq->xmit_lock_owner, -1);
	return rc;
}

/* skb to the driver with interrupts off; false (skb still the caller's) when its queue is busy. */
static bool dxpu_xmit_irqs_off(struct net_device *dev, struct sk_buff *skb)
{
	u16 q = netdev_pick_tx(dev, skb, NULL);
	struct netdev_queue *txq = netdev_get_tx_queue(dev, q);
	netdev_tx_t rc;

	skb_set_queue_mapping(skb, q);
	if (!spin_trylock(&txq->_xmit_lock))
		return false;
	rc = dxpu_xmit_locked(dev, skb, txq);
	spin_unlock(&txq->_xmit_lock);
	return dev_xmit_complete(rc);
}

/* One frame to the bridge, queued for dxpu_bridge_tx_flush; counted, never fatal. */
static void dxpu_bridge_xmit(struct dxpu_bridge *b, const u8 *frame, size_t len)
{
	struct net_device *dev = b->dev;
	int head = LL_RESERVED_SPACE(dev);
	struct sk_buff *skb;

	skb = alloc_skb(head + len + dev->needed_tailroom, GFP_ATOMIC);
	if (!skb) {
		atomic64_inc(&b->tx_errors);
		return;
	}
	skb_reserve(skb, head);
	skb_reset_network_header(skb);
	skb_put_data(skb, frame, len);
	skb->dev = dev;
	skb->protocol = htons(ETH_P_DXFP);
	if (dev_hard_header(skb, dev, ETH_P_DXFP, b->mac, dev->dev_addr, skb->len) < 0) {
		kfree_skb(skb);
		atomic64_inc(&b->tx_errors);
		return;
	}
	skb_queue_tail(&b->tx_skbs, skb);
}

/* skb sent (or lost, counted): true; false when it must wait (interrupts off, queue busy). */
static bool dxpu_bridge_send(struct dxpu_bridge *b, struct sk_buff *skb)
{
	bool sent;

	if (READ_ONCE(b->tx_stopped)) {
		kfree_skb(skb);
		return true;
	}
	if (!irqs_disabled()) {
		sent = dev_queue_xmit(skb) == NET_XMIT_SUCCESS;
	} else if (!b->fabric->np_ready) {
		kfree_skb(skb);
		sent = false;
	} else if (dxpu_xmit_irqs_off(b->dev, skb)) {
		sent = true;
	} else {
		return false;
	}
	atomic64_inc(sent ? &b->tx_frames : &b->tx_errors);
	return true;
}

/*
 * Whether this CPU is inside dxpu_fabric_poll()'s NAPI poll: netpoll would only queue what is
 * sent from there (for a work item that cannot run while this CPU waits with interrupts off),
 * so frames stay in the host path until the poll ends.
 */
static DEFINE_PER_CPU(bool, dxpu_in_poll);

/*
 * Frames one flush sends at most. A receive in softirq context that keeps finding more to send
 * (a peer's frames making the pump queue more, a NIC that always has room) could otherwise
 * loop there: an RCU stall in dxpu_fabric_rcv -> dxpu_bridge_tx_flush on the debug lane's
 * kernel under load. The send work takes the rest.
 */
#define DXPU_TX_BUDGET 64

/*
 * Sends what the pump queued, in order: one CPU at a time; another that finds it busy leaves
 * its frames to that one, which looks at the queue again once it is done. Not under b->lock,
 * not inside the NAPI poll (dxpu_fabric_poll flushes after it). A frame that must wait stays
 * first in the queue, and the send work will try it if nobody else does sooner.
 */
void dxpu_bridge_tx_flush(struct dxpu_bridge *b)
{
	unsigned int budget = DXPU_TX_BUDGET;
	struct sk_buff *skb;
	bool waiting = false;

	if (this_cpu_read(dxpu_in_poll))
		return;
	while (!waiting && budget && !skb_queue_empty_lockless(&b->tx_skbs)) {
		if (test_and_set_bit(0, &b->tx_busy))
			return;
		rcu_read_lock(); /* dxpu_bridge_close waits for senders: b->dev stays */
		while (!waiting && budget && (skb = skb_dequeue(&b->tx_skbs))) {
			if (!dxpu_bridge_send(b, skb)) {
				skb_queue_head(&b->tx_skbs, skb);
				waiting = true;
			} else {
				budget--;
			}
		}
		if (!budget && !skb_queue_empty_lockless(&b->tx_skbs))
			waiting = true; /* the rest to the send work, in process context */
		/* inside the read section: once closed, no work is queued after close cancels it */
		if (waiting && !READ_ONCE(b->tx_stopped))
			schedule_work(&b->tx_work);
		rcu_read_unlock();
		clear_bit_unlock(0, &b->tx_busy);
		smp_mb__after_atomic(); /* the queue read again after the bit is seen clear */
	}
}

/* b's lock let go (taken with spin_lock_irqsave) and what its pump queued sent. */
void dxpu_bridge_unlock_irqrestore(struct dxpu_bridge *b, unsigned long flags) __releases(&b->lock)
{
	spin_unlock_irqrestore(&b->lock, flags);
	dxpu_bridge_tx_flush(b);
}

/* ---- peer to peer: TLPs for a device behind another bridge ---- */

#define DXPU_PEER_MAX_BYTES (4u << 20) /* queued per bridge, headers and payloads */

struct dxpu_peer_tlp {
	struct list_head node;
	struct dxpu_tlp t;
	u32 len;
	u8 payload[];
};

/*
 * A copy of t (a device's request into a device behind b, or a completion for one) queued to
 * be forwarded on b's path; any context. False (counted on b) when b's queue is full or b is
 * closed: the TLP is lost, as on a congested link.
 */
static bool dxpu_bridge_queue_peer(struct dxpu_bridge *b, const struct dxpu_tlp *t)
{
	u32 len = dxpu_tlp_kind_has_data(t->kind) ? (u32)t->length_dw * 4 : 0;
	struct dxpu_peer_tlp *p;
	unsigned long flags;
	bool queued = false;

	p = kmalloc(struct_size(p, payload, len), GFP_ATOMIC);
	spin_lock_irqsave(&b->peer_lock, flags);
	if (p && !b->peer_closed && b->peer_bytes + sizeof(*p) + len <= DXPU_PEER_MAX_BYTES) {
		p->t = *t;
		p->len = len;
		memcpy(p->payload, t->payload, len);
		p->t.payload = len ? p->payload : NULL;
		list_add_tail(&p->node, &b->peer_q);
		b->peer_bytes += sizeof(*p) + len;
		queued = true;
	} else {
		b->peer_dropped++;
	}
	spin_unlock_irqrestore(&b->peer_lock, flags);
	if (!queued) {
		kfree(p);
		return false;
	}
	schedule_work(&b->peer_work);
	return true;
}

/*
 * What the host path holds for other devices, copied to their bridges' queues and popped (its
 * receive credit freed). The bridges' locks never nest: the target's peer_lock is taken inside
 * this one's lock, and the target forwards from its own work.
 */
static void dxpu_bridge_route_peers(struct dxpu_bridge *b)
{
	const struct dxpu_tlp *t;
	int target;

	while ((t = dxpu_hostpath_peer_front(&b->hp, &target))) {
		if (target >= 0 && target < DXPU_FABRIC_MAX_PEERS && b->peer_bridge[target])
			dxpu_bridge_queue_peer(b->peer_bridge[target], t);
		dxpu_hostpath_peer_pop(&b->hp);
	}
}

/* Forwards what waits for this bridge's path, in order; what finds no room waits for later. */
static void dxpu_bridge_peer_work(struct work_struct *work)
{
	unsigned long flags;
	struct dxpu_bridge *b = container_of(work, struct dxpu_bridge, peer_work);
	struct dxpu_peer_tlp *p;
	bool again = false;
	u64 now = dxpu_now();

	spin_lock_irqsave(&b->lock, flags);
	spin_lock(&b->peer_lock);
	while ((p = list_first_entry_or_null(&b->peer_q, struct dxpu_peer_tlp, node))) {
		bool up = !b->closing && dxpu_hostpath_is_up(&b->hp);

		if (up && !dxpu_hostpath_forward(&b->hp, &p->t, now)) {
			again = true; /* the ordering queue is full: room comes as it drains */
			break;
		}
		list_del(&p->node);
		b->peer_bytes -= sizeof(*p) + p->len;
		if (!up)
			b->peer_dropped++;
		kfree(p);
	}
	spin_unlock(&b->peer_lock);
	if (!b->closing)
		dxpu_bridge_pump_locked(b, now);
	dxpu_bridge_unlock_irqrestore(b, flags);
	if (again)
		schedule_work(&b->peer_work);
}

/* Nothing more queued; what waits is dropped. */
static void dxpu_bridge_peer_close(struct dxpu_bridge *b)
{
	unsigned long flags;
	struct dxpu_peer_tlp *p, *tmp;
	LIST_HEAD(gone);

	spin_lock_irqsave(&b->peer_lock, flags);
	b->peer_closed = true;
	list_splice_init(&b->peer_q, &gone);
	b->peer_bytes = 0;
	spin_unlock_irqrestore(&b->peer_lock, flags);
	cancel_work_sync(&b->peer_work);
	list_for_each_entry_safe(p, tmp, &gone, node)
		kfree(p);
}

/* This bridge's copy of the peer table, given to its host path. Caller holds b->lock. */
static void dxpu_bridge_share_peers(struct dxpu_bridge *b)
{
	unsigned int i, n = 0;

	for (i = 0; i < DXPU_FABRIC_MAX_PEERS; i++)
		n += b->peers[i].in_use;
	/* Every device DMA passes the routing: with fewer than two devices there is no peer. */
	dxpu_hostpath_set_peers(&b->hp, b->peers, n >= 2 ? DXPU_FABRIC_MAX_PEERS : 0);
}

/* Entry idx of b's copy set to the fabric's. Caller holds f->lock. */
static void dxpu_bridge_copy_peer(struct dxpu_fabric *f, struct dxpu_bridge *b, unsigned int idx)
{
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	b->peers[idx] = f->peers[idx];
	b->peer_bridge[idx] = f->peer_bridge[idx];
	dxpu_bridge_share_peers(b);
	spin_unlock_irqrestore(&b->lock, flags);
}

static void dxpu_fabric_update_peer(struct dxpu_fabric *f, unsigned int idx)
{
	struct dxpu_bridge *b;

	lockdep_assert_held(&f->lock);
	list_for_each_entry(b, &f->bridges, node)
		dxpu_bridge_copy_peer(f, b, idx);
}

void dxpu_fabric_set_peer(struct dxpu_fabric *f, unsigned int idx, struct dxpu_bridge *b, u16 bdf,
			  u64 window, u64 size)
{
	struct dxpu_bridge *old;

	if (idx >= DXPU_FABRIC_MAX_PEERS)
		return;
	dxpu_bridge_get(b);
	mutex_lock(&f->lock);
	old = f->peer_bridge[idx];
	f->peers[idx] = (struct dxpu_peer){
		.window = window, .window_size = size, .bdf = bdf, .in_use = 1
	};
	f->peer_bridge[idx] = b;
	dxpu_fabric_update_peer(f, idx);
	mutex_unlock(&f->lock);
	if (old)
		dxpu_bridge_put(old);
}

void dxpu_fabric_clear_peer(struct dxpu_fabric *f, unsigned int idx)
{
	struct dxpu_bridge *old;

	if (idx >= DXPU_FABRIC_MAX_PEERS)
		return;
	mutex_lock(&f->lock);
	old = f->peer_bridge[idx];
	f->peers[idx] = (struct dxpu_peer){};
	f->peer_bridge[idx] = NULL;
	dxpu_fabric_update_peer(f, idx);
	mutex_unlock(&f->lock);
	/* No listed bridge's copy names old any more (one off the list is closed): let it go. */
	if (old)
		dxpu_bridge_put(old);
}

/* ---- the host path's events, dispatched with b->lock held, in any context ---- */

/* A device's DMA outside its windows (answered UR or dropped, and counted): rate-limited. */
static void dxpu_log_refused(struct dxpu_bridge *b, const struct dxpu_hostpath_event *ev)
{
	u16 rid = ev->device;

	net_warn_ratelimited("dxpu: %pM: DMA %s of %u DW at 0x%llx by %02x:%02x.%x refused\n",
			     b->mac, ev->status == DXPU_TLP_MRD ? "read" : "write", ev->value,
			     ev->cookie, rid >> 8, PCI_SLOT(rid & 0xff), PCI_FUNC(rid & 0xff));
}

/* A request ended: its waiter wakes; a configuration write nobody waits for is counted. */
static void dxpu_bridge_complete(struct dxpu_bridge *b, const struct dxpu_hostpath_event *ev)
{
	struct dxpu_waiter *w = (struct dxpu_waiter *)(uintptr_t)ev->cookie;

	if (!w) {
		if (atomic_dec_and_test(&b->cfg_writes_pending))
			wake_up_all(&b->state_wq);
		if (ev->status != DXPU_TLP_CPL_SC) {
			b->cfg_write_errors++;
			pr_warn_ratelimited("dxpu: %pM: a configuration write ended with %s\n",
					    b->mac, dxpu_tlp_cpl_status_name(ev->status));
		}
		return;
	}
	w->status = ev->status;
	complete(&w->done);
}

static void dxpu_bridge_dispatch(struct dxpu_bridge *b)
{
	struct dxpu_fabric *f = b->fabric;
	struct dxpu_hostpath_event ev;
	struct dxpu_fabric_client *c;

	while (dxpu_hostpath_poll_event(&b->hp, &ev)) {
		switch (ev.kind) {
		case DXPU_HP_EV_COMPLETE:
			dxpu_bridge_complete(b, &ev);
			break;
		case DXPU_HP_EV_INTERRUPT:
			rcu_read_lock();
			list_for_each_entry_rcu(c, &f->clients, node)
				if (c->ops->interrupt)
					c->ops->interrupt(c->ctx, b, ev.device, ev.value);
			rcu_read_unlock();
			break;
		case DXPU_HP_EV_DMA_REFUSED:
			dxpu_log_refused(b, &ev);
			break;
		case DXPU_HP_EV_ESTABLISHED:
			netdev_info(b->dev, "dxpu: session to %pM established\n", b->mac);
			wake_up_all(&b->state_wq);
			break;
		case DXPU_HP_EV_DOWN:
			/* The requests it ended came just before, as COMPLETE events with UR. */
			netdev_info(b->dev,
				    "dxpu: session to %pM down: %s (%u requests unanswered)\n",
				    b->mac, dxfp_down_reason_name(ev.status), ev.value);
			rcu_read_lock();
			list_for_each_entry_rcu(c, &f->clients, node)
				if (c->ops->link_down)
					c->ops->link_down(c->ctx, b);
			rcu_read_unlock();
			wake_up_all(&b->state_wq);
			break;
		default:
			break;
		}
	}
}

/* The timer at the host path's next deadline. Caller holds b->lock. */
static void dxpu_bridge_arm(struct dxpu_bridge *b, u64 now)
{
	u64 next = dxpu_hostpath_next_deadline(&b->hp);

	if (b->closing || next == DXFP_NO_DEADLINE || next == U64_MAX)
		return;
	mod_timer(&b->timer, jiffies + 1 + nsecs_to_jiffies(next > now ? next - now : 0));
}

void dxpu_bridge_pump_locked(struct dxpu_bridge *b, u64 now)
{
	size_t len;

	lockdep_assert_held(&b->lock);
	b->xmit_deferred = this_cpu_read(dxpu_in_poll);
	while (!b->xmit_deferred &&
	       dxpu_hostpath_poll(&b->hp, now, b->frame, sizeof(b->frame), &len))
		dxpu_bridge_xmit(b, b->frame, len);
	dxpu_bridge_route_peers(b);
	dxpu_bridge_dispatch(b);
	dxpu_bridge_arm(b, now);
}

static void dxpu_bridge_timer(struct timer_list *t)
{
	unsigned long flags;
	struct dxpu_bridge *b = from_timer(b, t, timer);
	u64 now = dxpu_now();

	spin_lock_irqsave(&b->lock, flags);
	if (!b->closing) {
		dxpu_hostpath_on_timeout(&b->hp, now);
		dxpu_bridge_pump_locked(b, now);
	}
	dxpu_bridge_unlock_irqrestore(b, flags);
}

/* Sends what was queued in a context that cannot send (pci_ops, interrupts off). */
static void dxpu_bridge_tx_work(struct work_struct *work)
{
	unsigned long flags;
	struct dxpu_bridge *b = container_of(work, struct dxpu_bridge, tx_work);

	spin_lock_irqsave(&b->lock, flags);
	if (!b->closing)
		dxpu_bridge_pump_locked(b, dxpu_now());
	dxpu_bridge_unlock_irqrestore(b, flags);
}

/* ---- receiving with interrupts off ---- */

#define DXPU_POLL_BUDGET 64

/*
 * A NIC driver's poll is written for softirq context with interrupts on, and may turn them on
 * (virtio-net's does, seen on Debian's 6.1): they go off again here, so that nothing after it
 * runs with them on. Softirqs cannot run in that moment (bottom halves are off); a hard
 * interrupt handler can. Counted (/sys/devices/dxpu/counters, irqs_reenabled).
 */
static atomic64_t dxpu_irqs_reenabled = ATOMIC64_INIT(0);

static void dxpu_irqs_off_again(void)
{
	if (irqs_disabled())
		return;
	local_irq_disable();
	atomic64_inc(&dxpu_irqs_reenabled);
}

/* What NAPI's GRO layer batched for the stack (its rx_list), delivered now. */
static void dxpu_napi_flush(struct napi_struct *napi)
{
	LIST_HEAD(list);

	if (!napi->rx_count)
		return;
	list_splice_init(&napi->rx_list, &list);
	napi->rx_count = 0;
	netif_receive_skb_list(&list);
}

/*
 * One NAPI instance polled here, as netpoll polls it (the poll_owner lock, which every poller
 * takes while netpoll is set up on the interface, and NPSVC, so the driver does not complete
 * it from here), with a budget, as busy polling does. An instance nobody had scheduled is
 * claimed first and handed to the softirq afterwards, which completes it and re-arms the
 * device's interrupt.
 */
static void dxpu_poll_napi(struct napi_struct *napi)
{
	unsigned long val;
	bool claimed = false;

	if (cmpxchg(&napi->poll_owner, -1, smp_processor_id()) != -1)
		return; /* another CPU polls it: it delivers what we wait for */
	val = READ_ONCE(napi->state);
	if (val & (NAPIF_STATE_DISABLE | NAPIF_STATE_NPSVC | NAPIF_STATE_IN_BUSY_POLL))
		goto out;
	if (!(val & NAPIF_STATE_SCHED)) {
		if (cmpxchg(&napi->state, val, val | NAPIF_STATE_SCHED) != val)
			goto out;
		claimed = true;
	}
	set_bit(NAPI_STATE_NPSVC, &napi->state);
	napi->poll(napi, DXPU_POLL_BUDGET);
	dxpu_irqs_off_again();
	clear_bit(NAPI_STATE_NPSVC, &napi->state);
	dxpu_napi_flush(napi);
	dxpu_irqs_off_again();
	if (claimed)
		__napi_schedule(napi);
out:
	/* Releases poll_owner after our poll's stores, as netpoll_poll_unlock() does. */
	smp_store_release(&napi->poll_owner, -1);
}

void dxpu_fabric_poll(struct dxpu_fabric *f)
{
	struct napi_struct *napi;
	struct net_device *dev;
	struct dxpu_bridge *b;

	lockdep_assert_irqs_disabled();
	rcu_read_lock();
	dev = rcu_dereference(f->poll_dev);
	if (dev) {
		local_bh_disable();
		this_cpu_write(dxpu_in_poll, true);
		list_for_each_entry_rcu(napi, &dev->napi_list, dev_list)
			dxpu_poll_napi(napi);
		this_cpu_write(dxpu_in_poll, false);
		_local_bh_enable(); /* pending softirqs run at the next chance, not here */
	}
	list_for_each_entry_rcu(b, &f->bridges, node) {
		if (!READ_ONCE(b->xmit_deferred))
			continue;
		spin_lock(&b->lock);
		if (!b->closing)
			dxpu_bridge_pump_locked(b, dxpu_now());
		spin_unlock(&b->lock);
		dxpu_bridge_tx_flush(b);
	}
	rcu_read_unlock();
}

void dxpu_bridge_service(struct dxpu_bridge *b)
{
	unsigned long flags;
	u64 now;

	dxpu_fabric_poll(b->fabric);
	now = dxpu_now();
	spin_lock_irqsave(&b->lock, flags);
	if (!b->closing && dxpu_hostpath_next_deadline(&b->hp) <= now) {
		dxpu_hostpath_on_timeout(&b->hp, now);
		dxpu_bridge_pump_locked(b, now);
	}
	dxpu_bridge_unlock_irqrestore(b, flags);
}

/* ---- receiving ---- */

static struct dxpu_bridge *dxpu_fabric_find(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_bridge *b;

	list_for_each_entry_rcu(b, &f->bridges, node, lockdep_is_held(&f->lock))
		if (ether_addr_equal(b->mac, mac))
			return b;
	return NULL;
}

static int dxpu_fabric_rcv(struct sk_buff *skb, struct net_device *dev, struct packet_type *pt,
			   struct net_device *orig_dev)
{
	unsigned long flags;
	struct dxpu_fabric *f = container_of(pt, struct dxpu_fabric, pt);
	struct dxpu_bridge *b;

	if (skb->pkt_type == PACKET_OTHERHOST || skb->pkt_type == PACKET_OUTGOING)
		goto drop;
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	if (skb_linearize(skb)) {
		atomic64_inc(&f->rx_dropped);
		goto drop;
	}
	rcu_read_lock();
	b = dxpu_fabric_find(f, eth_hdr(skb)->h_source);
	if (!b) {
		rcu_read_unlock();
		atomic64_inc(&f->rx_unknown);
		goto drop;
	}
	spin_lock_irqsave(&b->lock, flags);
	if (!b->closing) {
		u64 now = dxpu_now();

		b->rx_frames++;
		if (dxpu_hostpath_receive(&b->hp, now, skb->data, skb->len) != DXFP_RX_OK)
			atomic64_inc(&f->rx_dropped);
		dxpu_bridge_pump_locked(b, now);
	}
	dxpu_bridge_unlock_irqrestore(b, flags);
	rcu_read_unlock();
	consume_skb(skb);
	return NET_RX_SUCCESS;
drop:
	kfree_skb(skb);
	return NET_RX_DROP;
}

/* ---- the fabric ---- */

/*
 * A bridge's host path: the session's timers set above the jiffy, requests ended by 1 s at the
 * latest. The ordering queue holds what waits for the bridge's credit: the non-posted requests
 * (at most one per tag, 256), and the posted writes and forwarded peer TLPs behind them; each
 * kernel issuer waits for its own request and retries when the queue is full, as for a tag, so
 * a few hundred TLPs and 256 KiB of payload per class (64 writes of the largest) are enough,
 * not the megabytes a userspace proxy queues for a whole process. The peer queue holds what
 * one received frame carries for other devices: it is copied to their bridges at once.
 */
static void dxpu_bridge_config(struct dxpu_fabric *f, struct dxpu_hostpath_config *cfg)
{
	struct dxfp_session_config *s = &cfg->session;

	dxpu_hostpath_config_defaults(cfg);
	s->role = DXFP_ROLE_INITIATOR;
	s->node_id = f->node_id;
	s->session_id = get_random_u32() | 1;
	s->epoch = get_random_u32() | 1;
	s->initial_seq = get_random_u32();
	s->max_frame = min_t(u32, f->dev->mtu, DXFP_MAX_FRAME) & ~3u;
	/* The timer ticks in jiffies: times well above a tick. */
	s->timer_granularity_ns = TICK_NSEC;
	s->initial_rto_ns = 20 * NSEC_PER_MSEC;
	s->min_rto_ns = 2 * TICK_NSEC;
	s->max_rto_ns = 500 * NSEC_PER_MSEC;
	s->keepalive_ns = 100 * NSEC_PER_MSEC;
	s->link_down_ns = f->link_down_ns;
	cfg->host.request_timeout = f->request_timeout_ns;
	cfg->fabric_max_payload = DXPU_TLP_MAX_PAYLOAD;
	cfg->queue_tlps = 384;
	cfg->queue_bytes = 256u << 10;
	cfg->peer_tlps = 512;
	cfg->peer_bytes = 64u << 10;
}

static struct dxpu_bridge *dxpu_bridge_alloc(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_hostpath_config cfg;
	struct dxpu_bridge *b;
	const char *why;
	unsigned int i;
	size_t size;

	dxpu_bridge_config(f, &cfg);
	if (dxpu_keys_session_auth(&f->keys, mac, &cfg.session.auth)) {
		netdev_err(f->dev, "dxpu: bridge %pM has no key in bridge_keys\n", mac);
		return ERR_PTR(-ENOKEY);
	}
	why = dxpu_hostpath_config_check(&cfg);
	if (why) {
		netdev_err(f->dev, "dxpu: host path configuration refused: %s\n", why);
		b = ERR_PTR(-EINVAL);
		goto wipe;
	}
	b = kvzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		b = ERR_PTR(-ENOMEM);
		goto wipe;
	}
	size = dxpu_hostpath_mem_size(&cfg);
	b->mem = kvzalloc(size, GFP_KERNEL);
	if (!b->mem) {
		kvfree(b);
		b = ERR_PTR(-ENOMEM);
		goto wipe;
	}
	b->sealed = cfg.session.auth.ops;
	b->fabric = f;
	b->dev = f->dev;
	kref_init(&b->ref);
	ether_addr_copy(b->mac, mac);
	init_waitqueue_head(&b->state_wq);
	INIT_WORK(&b->tx_work, dxpu_bridge_tx_work);
	skb_queue_head_init(&b->tx_skbs);
	spin_lock_init(&b->lock);
	spin_lock_init(&b->peer_lock);
	INIT_LIST_HEAD(&b->peer_q);
	INIT_WORK(&b->peer_work, dxpu_bridge_peer_work);
	timer_setup(&b->timer, dxpu_bridge_timer, 0);
	/* Cannot fail: the configuration is the module's own, checked, the memory sized. */
	dxpu_hostpath_init(&b->hp, &cfg, b->mem, size);
	for (i = 0; i < DXPU_FABRIC_MAX_PEERS; i++) {
		b->peers[i] = f->peers[i];
		b->peer_bridge[i] = f->peer_bridge[i];
	}
	dxpu_bridge_share_peers(b);
wipe:
	memzero_explicit(&cfg.session.auth, sizeof(cfg.session.auth));
	return b;
}

static void dxpu_bridge_free(struct rcu_head *rcu)
{
	struct dxpu_bridge *b = container_of(rcu, struct dxpu_bridge, rcu);

	kvfree(b->mem);
	memzero_explicit(&b->hp, sizeof(b->hp)); /* the session's keys, if it never went down */
	kvfree(b);
}

/* Freed a grace period later: a CPU's load that found b under RCU may still be using it. */
static void dxpu_bridge_release(struct kref *ref)
{
	struct dxpu_bridge *b = container_of(ref, struct dxpu_bridge, ref);

	call_rcu(&b->rcu, dxpu_bridge_free);
}

void dxpu_bridge_get(struct dxpu_bridge *b)
{
	kref_get(&b->ref);
}

void dxpu_bridge_put(struct dxpu_bridge *b)
{
	kref_put(&b->ref, dxpu_bridge_release);
}

/*
 * Closes the path (the bridge hears a CLOSE if the interface still carries it; every request
 * ends with UR; the clients hear it went down), and stops the timer and the send work: from
 * here on the bridge sends nothing and the interface may go. Its memory lives until the last
 * reference goes.
 */
static void dxpu_bridge_close(struct dxpu_bridge *b)
{
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	if (!dxpu_hostpath_is_down(&b->hp)) {
		dxpu_hostpath_close(&b->hp, dxpu_now(), DXFP_CLOSE_SHUTDOWN);
		dxpu_bridge_pump_locked(b, dxpu_now());
	}
	b->closing = true;
	dxpu_bridge_unlock_irqrestore(b, flags); /* the CLOSE out, unless a sender has it */
	wake_up_all(&b->state_wq);
	del_timer_sync(&b->timer);
	dxpu_bridge_tx_flush(b); /* what a sender left waiting */
	WRITE_ONCE(b->tx_stopped, true);
	synchronize_net(); /* no sender is inside dxpu_bridge_tx_flush's read section any more */
	cancel_work_sync(&b->tx_work); /* nor queues the send work again: it is ended */
	skb_queue_purge(&b->tx_skbs);
	dxpu_bridge_peer_close(b);
}

/*
 * Every session closed, the handler removed, the interface let go. Caller holds RTNL (netpoll's
 * cleanup needs it) and f->lock.
 */
static void dxpu_fabric_stop(struct dxpu_fabric *f)
{
	struct dxpu_bridge *b, *tmp;

	if (!f->dev)
		return;
	RCU_INIT_POINTER(f->poll_dev, NULL);
	dev_remove_pack(&f->pt); /* waits for receivers in flight, pollers too */
	list_for_each_entry_safe(b, tmp, &f->bridges, node) {
		list_del_rcu(&b->node);
		dxpu_bridge_close(b); /* no reader left: the packet handler is gone */
		dxpu_bridge_put(b);
	}
	if (f->np_ready)
		__netpoll_cleanup(&f->np);
	f->np_ready = false;
	netdev_info(f->dev, "dxpu: DxFP on %s stopped\n", netdev_name(f->dev));
	dev_put(f->dev);
	f->dev = NULL;
}

/* The interface is going away: stop using it, or its unregistration would wait for us. */
static int dxpu_fabric_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct dxpu_fabric *f = container_of(nb, struct dxpu_fabric, netdev_nb);
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&f->lock);
	if (f->dev == dev)
		dxpu_fabric_stop(f);
	mutex_unlock(&f->lock);
	return NOTIFY_DONE;
}

int dxpu_fabric_init(struct dxpu_fabric *f)
{
	mutex_init(&f->lock);
	INIT_LIST_HEAD(&f->bridges);
	INIT_LIST_HEAD(&f->clients);
	atomic64_set(&f->rx_unknown, 0);
	atomic64_set(&f->rx_dropped, 0);
	f->netdev_nb.notifier_call = dxpu_fabric_netdev_event;
	return register_netdevice_notifier(&f->netdev_nb);
}

void dxpu_fabric_exit(struct dxpu_fabric *f)
{
	unregister_netdevice_notifier(&f->netdev_nb);
	rtnl_lock();
	mutex_lock(&f->lock);
	dxpu_fabric_stop(f);
	dxpu_keys_wipe(&f->keys);
	mutex_unlock(&f->lock);
	rtnl_unlock();
	rcu_barrier(); /* every bridge freed (dxpu_bridge_release) before the module goes */
}

void dxpu_fabric_register_client(struct dxpu_fabric *f, struct dxpu_fabric_client *c)
{
	mutex_lock(&f->lock);
	list_add_tail_rcu(&c->node, &f->clients);
	mutex_unlock(&f->lock);
}

void dxpu_fabric_unregister_client(struct dxpu_fabric *f, struct dxpu_fabric_client *c)
{
	mutex_lock(&f->lock);
	list_del_rcu(&c->node);
	mutex_unlock(&f->lock);
	synchronize_rcu(); /* no operation of c still running */
}

/*
 * netpoll on dev, so that frames can go out with interrupts off (a CPU's load from a BAR); the
 * interface is polled from there too (poll_dev). Without it, transparent MMIO cannot work on
 * this interface (dxpu_mmio.c says so). Caller holds RTNL and f->lock.
 */
static void dxpu_fabric_netpoll(struct dxpu_fabric *f, struct net_device *dev)
{
	memset(&f->np, 0, sizeof(f->np));
	f->np.name = "dxpu";
	f->np_ready = !__netpoll_setup(&f->np, dev);
	if (!f->np_ready)
		netdev_warn(dev, "dxpu: %s cannot be polled (netpoll): no transparent MMIO\n",
			    netdev_name(dev));
	rcu_assign_pointer(f->poll_dev, dev);
}

int dxpu_fabric_open(struct dxpu_fabric *f, const char *ifname, u64 node_id)
{
	struct net_device *dev = dev_get_by_name(&init_net, ifname);

	if (!dev)
		return -ENODEV;
	rtnl_lock(); /* before f->lock, as the netdevice notifier takes them */
	mutex_lock(&f->lock);
	if (f->dev) {
		mutex_unlock(&f->lock);
		rtnl_unlock();
		dev_put(dev);
		return -EBUSY;
	}
	f->dev = dev;
	dxpu_fabric_netpoll(f, dev);
	/* By default the node ID is the interface's MAC: stable across loads. */
	f->node_id = node_id ? node_id : ether_addr_to_u64(dev->dev_addr);
	f->pt.type = htons(ETH_P_DXFP);
	f->pt.dev = dev;
	f->pt.func = dxpu_fabric_rcv;
	dev_add_pack(&f->pt);
	mutex_unlock(&f->lock);
	rtnl_unlock();
	netdev_info(dev, "dxpu: DxFP on %s, node %016llx\n", ifname, f->node_id);
	return 0;
}

/* A new bridge in the list, its session started. Caller holds f->lock, f->dev is set. */
static struct dxpu_bridge *dxpu_fabric_add(struct dxpu_fabric *f, const u8 *mac)
{
	unsigned long flags;
	struct dxpu_bridge *b = dxpu_bridge_alloc(f, mac);

	if (IS_ERR(b))
		return b;
	list_add_tail_rcu(&b->node, &f->bridges);
	spin_lock_irqsave(&b->lock, flags);
	dxpu_hostpath_connect(&b->hp, dxpu_now());
	dxpu_bridge_pump_locked(b, dxpu_now());
	dxpu_bridge_unlock_irqrestore(b, flags);
	return b;
}

bool dxpu_bridge_alive(struct dxpu_bridge *b)
{
	unsigned long flags;
	bool alive;

	spin_lock_irqsave(&b->lock, flags);
	alive = !b->closing && !dxpu_hostpath_is_down(&b->hp);
	spin_unlock_irqrestore(&b->lock, flags);
	return alive;
}

/*
 * The live bridge at mac, or NULL: one whose session went down is taken off the list and
 * closed first (its devices keep their references until they are removed), so that a new
 * session can replace it. Caller holds f->lock.
 */
static struct dxpu_bridge *dxpu_fabric_find_alive(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_bridge *b = dxpu_fabric_find(f, mac);

	if (!b || dxpu_bridge_alive(b))
		return b;
	list_del_rcu(&b->node);
	synchronize_net(); /* no packet handler still sees it */
	dxpu_bridge_close(b);
	dxpu_bridge_put(b);
	return NULL;
}

int dxpu_fabric_connect(struct dxpu_fabric *f, const u8 *mac)
{
	int err = 0;

	if (!is_valid_ether_addr(mac))
		return -EINVAL;
	mutex_lock(&f->lock);
	if (!f->dev)
		err = -ENETDOWN;
	else if (dxpu_fabric_find_alive(f, mac))
		err = -EEXIST;
	else
		err = PTR_ERR_OR_ZERO(dxpu_fabric_add(f, mac));
	mutex_unlock(&f->lock);
	return err;
}

struct dxpu_bridge *dxpu_fabric_get_bridge(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_bridge *b;

	if (!is_valid_ether_addr(mac))
		return ERR_PTR(-EINVAL);
	mutex_lock(&f->lock);
	if (!f->dev) {
		b = ERR_PTR(-ENETDOWN);
		goto unlock;
	}
	b = dxpu_fabric_find_alive(f, mac);
	if (!b)
		b = dxpu_fabric_add(f, mac);
	if (!IS_ERR(b))
		dxpu_bridge_get(b);
unlock:
	mutex_unlock(&f->lock);
	return b;
}

static bool dxpu_bridge_settled(struct dxpu_bridge *b, int *err)
{
	unsigned long flags;
	enum dxfp_session_state st;

	spin_lock_irqsave(&b->lock, flags);
	st = dxpu_hostpath_state(&b->hp);
	spin_unlock_irqrestore(&b->lock, flags);
	if (b->closing || st == DXFP_STATE_DOWN)
		*err = -ENOLINK;
	else if (st == DXFP_STATE_ESTABLISHED)
		*err = 0;
	else
		return false;
	return true;
}

int dxpu_bridge_wait_established(struct dxpu_bridge *b, unsigned int timeout_ms)
{
	int err = -ETIMEDOUT;

	wait_event_timeout(b->state_wq, dxpu_bridge_settled(b, &err), msecs_to_jiffies(timeout_ms));
	return err;
}

ssize_t dxpu_fabric_show_interface(struct dxpu_fabric *f, char *buf)
{
	ssize_t n;

	mutex_lock(&f->lock);
	n = sysfs_emit(buf, "%s\n", f->dev ? netdev_name(f->dev) : "");
	mutex_unlock(&f->lock);
	return n;
}

ssize_t dxpu_fabric_show_counters(struct dxpu_fabric *f, char *buf)
{
	return sysfs_emit(buf, "rx_unknown %lld rx_dropped %lld irqs_reenabled %lld\n",
			  atomic64_read(&f->rx_unknown), atomic64_read(&f->rx_dropped),
			  atomic64_read(&dxpu_irqs_reenabled));
}

/* " sealed 0|1" and the session's drops of forged or replayed frames; b->lock held. */
static int dxpu_bridge_show_auth(struct dxpu_bridge *b, char *buf, int at)
{
	const struct dxfp_session_counters *c = dxpu_hostpath_session_counters(&b->hp);

	return sysfs_emit_at(buf, at, " sealed %d bad_tag %llu replayed %llu unsealed %llu\n",
			     b->sealed, c->bad_tag, c->replayed, c->unsealed);
}

ssize_t dxpu_fabric_show_bridges(struct dxpu_fabric *f, char *buf)
{
	unsigned long flags;
	struct dxpu_bridge *b;
	int n = 0;

	mutex_lock(&f->lock);
	list_for_each_entry(b, &f->bridges, node) {
		const struct dxpu_host_counters *c = dxpu_hostpath_host_counters(&b->hp);
		u64 peer_dropped;

		spin_lock_irqsave(&b->lock, flags);
		n += sysfs_emit_at(buf, n, "%pM %s rx %llu tx %llu tx_errors %llu", b->mac,
				   dxfp_session_state_name(dxpu_hostpath_state(&b->hp)),
				   b->rx_frames, atomic64_read(&b->tx_frames),
				   atomic64_read(&b->tx_errors));
		n += sysfs_emit_at(buf, n, " requests %llu timeouts %llu unexpected_cpl %llu",
				   c->requests, c->timeouts, c->unexpected_cpl);
		n += sysfs_emit_at(buf, n, " dma_reads %llu dma_writes %llu", c->dma_reads,
				   c->dma_writes);
		n += sysfs_emit_at(buf, n, " dma_refused_reads %llu dma_refused_writes %llu",
				   c->dma_refused_reads, c->dma_refused_writes);
		n += sysfs_emit_at(buf, n, " interrupts %llu", c->interrupts);
		spin_lock(&b->peer_lock);
		peer_dropped = b->peer_dropped + dxpu_hostpath_get_counters(&b->hp)->peer_dropped;
		spin_unlock(&b->peer_lock);
		n += sysfs_emit_at(buf, n, " peer_sent %llu peer_dropped %llu",
				   dxpu_hostpath_get_counters(&b->hp)->peer_forwarded,
				   peer_dropped);
		n += dxpu_bridge_show_auth(b, buf, n);
		spin_unlock_irqrestore(&b->lock, flags);
	}
	mutex_unlock(&f->lock);
	return n;
}

int dxpu_fabric_set_key(struct dxpu_fabric *f, const char *buf, size_t len)
{
	int err;

	mutex_lock(&f->lock);
	err = dxpu_keys_set_secret(&f->keys, buf, len);
	mutex_unlock(&f->lock);
	return err;
}

ssize_t dxpu_fabric_show_key(struct dxpu_fabric *f, char *buf)
{
	ssize_t n;

	mutex_lock(&f->lock);
	n = dxpu_keys_show_public(&f->keys, buf);
	mutex_unlock(&f->lock);
	return n;
}

int dxpu_fabric_set_bridge_key(struct dxpu_fabric *f, const char *buf, size_t len)
{
	int err;

	mutex_lock(&f->lock);
	err = dxpu_keys_set_bridge(&f->keys, buf, len);
	mutex_unlock(&f->lock);
	return err;
}

ssize_t dxpu_fabric_show_bridge_keys(struct dxpu_fabric *f, char *buf)
{
	ssize_t n;

	mutex_lock(&f->lock);
	n = dxpu_keys_show_bridges(&f->keys, buf);
	mutex_unlock(&f->lock);
	return n;
}
