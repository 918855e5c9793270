// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_fabric.c - DxFP sessions to bridges over raw Ethernet (dxpu_fabric.h). The protocol
 * is lib/core's session, sans-IO as in userspace: frames in from the packet handler, the
 * time from ktime_get_ns(), frames out through dev_queue_xmit, and a timer for the
 * session's next deadline.
 */
#include <linux/etherdevice.h>
#include <linux/jiffies.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/rculist.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "dxpu_fabric.h"
#include "dxpu_gpu.h"

static u64 dxpu_now(void)
{
	return ktime_get_ns();
}

/* One frame to the bridge; counted, never fatal (the session retransmits what is lost). */
static void dxpu_bridge_xmit(struct dxpu_bridge *b, const u8 *frame, size_t len)
{
	struct net_device *dev = b->dev;
	int head = LL_RESERVED_SPACE(dev);
	struct sk_buff *skb;

	skb = alloc_skb(head + len + dev->needed_tailroom, GFP_ATOMIC);
	if (!skb) {
		b->tx_errors++;
		return;
	}
	skb_reserve(skb, head);
	skb_reset_network_header(skb);
	skb_put_data(skb, frame, len);
	skb->dev = dev;
	skb->protocol = htons(ETH_P_DXFP);
	if (dev_hard_header(skb, dev, ETH_P_DXFP, b->mac, dev->dev_addr, skb->len) < 0) {
		kfree_skb(skb);
		b->tx_errors++;
		return;
	}
	if (dev_queue_xmit(skb) == NET_XMIT_SUCCESS)
		b->tx_frames++;
	else
		b->tx_errors++;
}

/* The timer at the session's or a request's next deadline. Caller holds b->lock. */
static void dxpu_bridge_arm(struct dxpu_bridge *b, u64 now)
{
	u64 next = min(dxfp_session_next_deadline(&b->session), dxpu_host_next_deadline(&b->host));

	if (b->closing || next == DXFP_NO_DEADLINE || next == U64_MAX)
		return;
	mod_timer(&b->timer, jiffies + 1 + nsecs_to_jiffies(next > now ? next - now : 0));
}

/* Sends every frame the session has due, then re-arms. Caller holds b->lock. */
static void dxpu_bridge_flush(struct dxpu_bridge *b, u64 now)
{
	size_t len;

	while (dxfp_session_poll(&b->session, now, b->frame, sizeof(b->frame), &len))
		dxpu_bridge_xmit(b, b->frame, len);
	dxpu_bridge_arm(b, now);
}

void dxpu_bridge_flush_locked(struct dxpu_bridge *b)
{
	dxpu_bridge_flush(b, dxpu_now());
}

static void dxpu_bridge_timer(struct timer_list *t)
{
	struct dxpu_bridge *b = from_timer(b, t, timer);

	u64 now = dxpu_now();

	spin_lock(&b->lock);
	if (!b->closing) {
		dxpu_host_expire(&b->host, now);
		dxpu_bridge_flush(b, now);
	}
	spin_unlock(&b->lock);
}

/* Sends what was queued in a context that cannot send (pci_ops, interrupts off). */
static void dxpu_bridge_tx_work(struct work_struct *work)
{
	struct dxpu_bridge *b = container_of(work, struct dxpu_bridge, tx_work);

	spin_lock_bh(&b->lock);
	if (!b->closing)
		dxpu_bridge_flush(b, dxpu_now());
	spin_unlock_bh(&b->lock);
}

/* ---- the session's callbacks, with b->lock held, in any context ---- */

/* A device's DMA outside its windows (answered UR or dropped, and counted): rate-limited. */
static void dxpu_log_refused(struct dxpu_bridge *b, const struct dxpu_tlp *tlp)
{
	u16 rid = tlp->requester_id;

	net_warn_ratelimited("dxpu: %pM: DMA %s of %u DW at 0x%llx by %02x:%02x.%x refused\n",
			     b->mac, tlp->kind == DXPU_TLP_MRD ? "read" : "write", tlp->length_dw,
			     tlp->addr, rid >> 8, PCI_SLOT(rid & 0xff), PCI_FUNC(rid & 0xff));
}

/* ---- peer to peer: TLPs for a device behind another bridge ---- */

#define DXPU_PEER_MAX_BYTES (4u << 20) /* queued per bridge, headers and payloads */

struct dxpu_peer_tlp {
	struct list_head node;
	struct dxpu_tlp t;
	u32 len;
	u8 payload[];
};

bool dxpu_bridge_queue_peer(struct dxpu_bridge *b, const struct dxpu_tlp *t)
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

/* Sends what waits for this bridge's session, in order; what finds no room waits for later. */
static void dxpu_bridge_peer_work(struct work_struct *work)
{
	struct dxpu_bridge *b = container_of(work, struct dxpu_bridge, peer_work);
	struct dxpu_peer_tlp *p;
	bool again = false;

	spin_lock_bh(&b->lock);
	spin_lock(&b->peer_lock);
	while ((p = list_first_entry_or_null(&b->peer_q, struct dxpu_peer_tlp, node))) {
		enum dxfp_send_result r = DXFP_SEND_DOWN;

		if (!b->closing)
			r = dxfp_session_send(&b->session, dxpu_now(), &p->t);
		if (r == DXFP_SEND_NO_CREDIT || r == DXFP_SEND_REPLAY_FULL ||
		    r == DXFP_SEND_NP_FULL) {
			again = true;
			break;
		}
		list_del(&p->node);
		b->peer_bytes -= sizeof(*p) + p->len;
		if (r == DXFP_SEND_OK)
			b->peer_sent++;
		else
			b->peer_dropped++;
		kfree(p);
	}
	spin_unlock(&b->peer_lock);
	if (!b->closing)
		dxpu_bridge_flush(b, dxpu_now());
	spin_unlock_bh(&b->lock);
	if (again) /* room comes as the bridge acknowledges */
		schedule_work(&b->peer_work);
}

/* Nothing more queued; what waits is dropped. */
static void dxpu_bridge_peer_close(struct dxpu_bridge *b)
{
	struct dxpu_peer_tlp *p, *tmp;
	LIST_HEAD(gone);

	spin_lock_bh(&b->peer_lock);
	b->peer_closed = true;
	list_splice_init(&b->peer_q, &gone);
	b->peer_bytes = 0;
	spin_unlock_bh(&b->peer_lock);
	cancel_work_sync(&b->peer_work);
	list_for_each_entry_safe(p, tmp, &gone, node)
		kfree(p);
}

static void dxpu_on_deliver(void *ctx, const struct dxpu_tlp *tlp)
{
	struct dxpu_bridge *b = ctx;
	const struct dxpu_host_counters *c = dxpu_host_get_counters(&b->host);
	u64 writes = c->dma_writes;
	u64 refused = c->dma_refused_reads + c->dma_refused_writes;

	/* For a device behind another bridge (peer to peer): queued there, its credit free. */
	if (dxpu_gpu_route_peer(b, tlp)) {
		dxfp_session_release(&b->session, (int)dxpu_tlp_kind_class(tlp->kind),
				     dxpu_tlp_payload_len(tlp));
		return;
	}
	/* Completions end requests; the devices' DMA is served or refused; all at once. */
	dxpu_host_receive(&b->host, tlp, dxpu_now());
	if (c->dma_writes != writes) /* host memory changed: tell its pollers */
		dxpu_gpu_event(b, tlp->requester_id, -1);
	if (c->dma_refused_reads + c->dma_refused_writes != refused)
		dxpu_log_refused(b, tlp);
	dxfp_session_release(&b->session, (int)dxpu_tlp_kind_class(tlp->kind),
			     dxpu_tlp_payload_len(tlp));
}

static void dxpu_on_link_down(void *ctx, enum dxfp_down_reason reason,
			      const struct dxpu_tlp *unanswered, size_t n)
{
	struct dxpu_bridge *b = ctx;

	netdev_info(b->dev, "dxpu: session to %pM down: %s (%zu requests unanswered)\n", b->mac,
		    dxfp_down_reason_name(reason), n);
	/* Every request waiting on it ends now (UR, all-ones data), not at its deadline. */
	dxpu_host_fail_all(&b->host, DXPU_TLP_CPL_UR);
	dxpu_gpu_bridge_down(b);
	if (b->fabric->bridge_down)
		b->fabric->bridge_down(b->fabric->bridge_down_ctx, b);
	wake_up_all(&b->state_wq);
}

static void dxpu_on_established(void *ctx)
{
	struct dxpu_bridge *b = ctx;

	u32 mps = dxfp_frame_payload_limit(b->session.max_frame, 12, DXPU_TLP_MAX_PAYLOAD);

	/* The host's completions grow to what one frame carries (docs/host-proxy.md). */
	if (mps >= 256)
		dxpu_host_set_max_payload(&b->host, mps);
	netdev_info(b->dev, "dxpu: session to %pM established\n", b->mac);
	wake_up_all(&b->state_wq);
}

static const struct dxfp_session_ops dxpu_session_ops = {
	.deliver = dxpu_on_deliver,
	.link_down = dxpu_on_link_down,
	.established = dxpu_on_established,
};

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
	spin_lock(&b->lock);
	if (!b->closing) {
		u64 now = dxpu_now();

		b->rx_frames++;
		if (dxfp_session_receive(&b->session, now, skb->data, skb->len) != DXFP_RX_OK)
			atomic64_inc(&f->rx_dropped);
		dxpu_bridge_flush(b, now);
	}
	spin_unlock(&b->lock);
	rcu_read_unlock();
	consume_skb(skb);
	return NET_RX_SUCCESS;
drop:
	kfree_skb(skb);
	return NET_RX_DROP;
}

/* ---- the fabric ---- */

static void dxpu_bridge_config(struct dxpu_fabric *f, struct dxfp_session_config *cfg)
{
	dxfp_session_config_defaults(cfg);
	cfg->role = DXFP_ROLE_INITIATOR;
	cfg->node_id = f->node_id;
	cfg->session_id = get_random_u32() | 1;
	cfg->epoch = get_random_u32() | 1;
	cfg->initial_seq = get_random_u32();
	cfg->max_frame = min_t(u32, f->dev->mtu, DXFP_MAX_FRAME) & ~3u;
	/* The timer ticks in jiffies: times well above a tick. */
	cfg->timer_granularity_ns = TICK_NSEC;
	cfg->initial_rto_ns = 20 * NSEC_PER_MSEC;
	cfg->min_rto_ns = 2 * TICK_NSEC;
	cfg->max_rto_ns = 500 * NSEC_PER_MSEC;
	cfg->keepalive_ns = 100 * NSEC_PER_MSEC;
	cfg->link_down_ns = f->link_down_ns;
}

/* The host's transaction layer on a bridge: 256 tags, requests end by 1 s at the latest. */
static void dxpu_bridge_host_config(struct dxpu_host_config *cfg)
{
	dxpu_host_config_defaults(cfg);
	cfg->request_timeout = NSEC_PER_SEC;
}

static struct dxpu_bridge *dxpu_bridge_alloc(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_host_config host_cfg;
	struct dxfp_session_config cfg;
	struct dxpu_bridge *b;
	const char *why;
	size_t size;

	dxpu_bridge_config(f, &cfg);
	why = dxfp_session_config_check(&cfg);
	if (why) {
		netdev_err(f->dev, "dxpu: session configuration refused: %s\n", why);
		return ERR_PTR(-EINVAL);
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	size = dxfp_session_mem_size(&cfg);
	b->mem = kvzalloc(size, GFP_KERNEL);
	if (!b->mem) {
		kfree(b);
		return ERR_PTR(-ENOMEM);
	}
	b->fabric = f;
	b->dev = f->dev;
	kref_init(&b->ref);
	ether_addr_copy(b->mac, mac);
	init_waitqueue_head(&b->state_wq);
	INIT_WORK(&b->tx_work, dxpu_bridge_tx_work);
	spin_lock_init(&b->lock);
	INIT_LIST_HEAD(&b->gpus);
	spin_lock_init(&b->peer_lock);
	INIT_LIST_HEAD(&b->peer_q);
	INIT_WORK(&b->peer_work, dxpu_bridge_peer_work);
	timer_setup(&b->timer, dxpu_bridge_timer, 0);
	/* Cannot fail: the configurations are the module's own, checked, the memory sized. */
	dxfp_session_init(&b->session, &cfg, b->mem, size, &dxpu_session_ops, b);
	dxpu_bridge_host_config(&host_cfg);
	dxpu_host_init(&b->host, &host_cfg, &dxpu_bridge_host_ops, b);
	return b;
}

static void dxpu_bridge_release(struct kref *ref)
{
	struct dxpu_bridge *b = container_of(ref, struct dxpu_bridge, ref);

	kvfree(b->mem);
	kfree(b);
}

void dxpu_bridge_put(struct dxpu_bridge *b)
{
	kref_put(&b->ref, dxpu_bridge_release);
}

/*
 * Closes the session (the bridge hears a CLOSE if the interface still carries it), ends
 * every request with UR, and stops the timer and the send work: from here on the bridge
 * sends nothing and the interface may go. Its memory lives until the last reference goes.
 */
static void dxpu_bridge_close(struct dxpu_bridge *b)
{
	spin_lock_bh(&b->lock);
	if (dxfp_session_get_state(&b->session) != DXFP_STATE_DOWN) {
		dxfp_session_close(&b->session, dxpu_now(), DXFP_CLOSE_SHUTDOWN);
		dxpu_bridge_flush(b, dxpu_now());
	}
	b->closing = true;
	dxpu_host_fail_all(&b->host, DXPU_TLP_CPL_UR);
	spin_unlock_bh(&b->lock);
	wake_up_all(&b->state_wq);
	del_timer_sync(&b->timer);
	cancel_work_sync(&b->tx_work);
	dxpu_bridge_peer_close(b);
}

/* Every session closed, the handler removed, the interface let go. Caller holds f->lock. */
static void dxpu_fabric_stop(struct dxpu_fabric *f)
{
	struct dxpu_bridge *b, *tmp;

	if (!f->dev)
		return;
	dev_remove_pack(&f->pt); /* waits for receivers in flight */
	list_for_each_entry_safe(b, tmp, &f->bridges, node) {
		list_del_rcu(&b->node);
		dxpu_bridge_close(b); /* no reader left: the packet handler is gone */
		dxpu_bridge_put(b);
	}
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
	atomic64_set(&f->rx_unknown, 0);
	atomic64_set(&f->rx_dropped, 0);
	f->netdev_nb.notifier_call = dxpu_fabric_netdev_event;
	return register_netdevice_notifier(&f->netdev_nb);
}

void dxpu_fabric_exit(struct dxpu_fabric *f)
{
	unregister_netdevice_notifier(&f->netdev_nb);
	mutex_lock(&f->lock);
	dxpu_fabric_stop(f);
	mutex_unlock(&f->lock);
}

int dxpu_fabric_open(struct dxpu_fabric *f, const char *ifname, u64 node_id)
{
	struct net_device *dev = dev_get_by_name(&init_net, ifname);

	if (!dev)
		return -ENODEV;
	mutex_lock(&f->lock);
	if (f->dev) {
		mutex_unlock(&f->lock);
		dev_put(dev);
		return -EBUSY;
	}
	f->dev = dev;
	/* By default the node ID is the interface's MAC: stable across loads. */
	f->node_id = node_id ? node_id : ether_addr_to_u64(dev->dev_addr);
	f->pt.type = htons(ETH_P_DXFP);
	f->pt.dev = dev;
	f->pt.func = dxpu_fabric_rcv;
	dev_add_pack(&f->pt);
	mutex_unlock(&f->lock);
	netdev_info(dev, "dxpu: DxFP on %s, node %016llx\n", ifname, f->node_id);
	return 0;
}

/* A new bridge in the list, its session started. Caller holds f->lock, f->dev is set. */
static struct dxpu_bridge *dxpu_fabric_add(struct dxpu_fabric *f, const u8 *mac)
{
	struct dxpu_bridge *b = dxpu_bridge_alloc(f, mac);

	if (IS_ERR(b))
		return b;
	list_add_tail_rcu(&b->node, &f->bridges);
	spin_lock_bh(&b->lock);
	dxfp_session_connect(&b->session, dxpu_now());
	dxpu_bridge_flush(b, dxpu_now());
	spin_unlock_bh(&b->lock);
	return b;
}

bool dxpu_bridge_alive(struct dxpu_bridge *b)
{
	bool alive;

	spin_lock_bh(&b->lock);
	alive = !b->closing && dxfp_session_get_state(&b->session) != DXFP_STATE_DOWN;
	spin_unlock_bh(&b->lock);
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
		kref_get(&b->ref);
unlock:
	mutex_unlock(&f->lock);
	return b;
}

static bool dxpu_bridge_settled(struct dxpu_bridge *b, int *err)
{
	enum dxfp_session_state st;

	spin_lock_bh(&b->lock);
	st = dxfp_session_get_state(&b->session);
	spin_unlock_bh(&b->lock);
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
	return sysfs_emit(buf, "rx_unknown %lld rx_dropped %lld\n", atomic64_read(&f->rx_unknown),
			  atomic64_read(&f->rx_dropped));
}

ssize_t dxpu_fabric_show_bridges(struct dxpu_fabric *f, char *buf)
{
	struct dxpu_bridge *b;
	int n = 0;

	mutex_lock(&f->lock);
	list_for_each_entry(b, &f->bridges, node) {
		const struct dxpu_host_counters *c = dxpu_host_get_counters(&b->host);

		spin_lock_bh(&b->lock);
		n += sysfs_emit_at(buf, n, "%pM %s rx %llu tx %llu tx_errors %llu", b->mac,
				   dxfp_session_state_name(dxfp_session_get_state(&b->session)),
				   b->rx_frames, b->tx_frames, b->tx_errors);
		n += sysfs_emit_at(buf, n, " requests %llu timeouts %llu unexpected_cpl %llu",
				   c->requests, c->timeouts, c->unexpected_cpl);
		n += sysfs_emit_at(buf, n, " dma_reads %llu dma_writes %llu", c->dma_reads,
				   c->dma_writes);
		n += sysfs_emit_at(buf, n, " dma_refused_reads %llu dma_refused_writes %llu",
				   c->dma_refused_reads, c->dma_refused_writes);
		n += sysfs_emit_at(buf, n, " interrupts %llu", c->interrupts);
		spin_lock(&b->peer_lock);
		n += sysfs_emit_at(buf, n, " peer_sent %llu peer_dropped %llu\n", b->peer_sent,
				   b->peer_dropped);
		spin_unlock(&b->peer_lock);
		spin_unlock_bh(&b->lock);
	}
	mutex_unlock(&f->lock);
	return n;
}
