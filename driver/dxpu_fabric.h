/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_fabric.h - DxFP over raw Ethernet (EtherType 0x88B5) on one network interface: one
 * lib/core session per bridge, keyed by the bridge's MAC address.
 *
 * Locking: fabric->lock (a mutex) guards the interface and the bridge list's changes, in
 * process context (the netdevice notifier takes it under RTNL; nothing under it takes RTNL);
 * the receive path finds a bridge under RCU. Each bridge's session is guarded by its own
 * spinlock, taken with bottom halves off in process context: frames arrive in softirq
 * context and the session's timer runs there too (and with interrupts off from pci_ops, which
 * only queue: frames are sent by tx_work then). The session never sleeps.
 *
 * Each bridge also carries lib/core's host transaction layer (dxpu_host) under the same lock:
 * the requests this host issues to devices behind the bridge and the DMA those devices do.
 * A bridge is reference counted: the fabric's list holds one reference, each attached device
 * another, so a device keeps its bridge (closed, every request failing) after the fabric
 * let it go.
 */
#ifndef DXPU_DRIVER_DXPU_FABRIC_H
#define DXPU_DRIVER_DXPU_FABRIC_H

#include <linux/completion.h>
#include <linux/if_ether.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "core/dxfp_session.h"
#include "core/dxpu_host.h"

#define ETH_P_DXFP 0x88B5

struct dxpu_fabric;

struct dxpu_bridge {
	struct list_head node; /* in fabric->bridges (RCU) */
	struct kref ref;
	struct dxpu_fabric *fabric;
	u8 mac[ETH_ALEN];
	struct net_device *dev;	    /* the fabric's interface; used only while !closing */
	wait_queue_head_t state_wq; /* the session established or down */
	struct work_struct tx_work; /* sends what was queued where frames cannot be sent */
	spinlock_t lock;	    /* everything below */
	struct dxfp_session session;
	void *mem;		 /* the session's buffers */
	struct timer_list timer; /* the session's or a request's next deadline */
	bool closing;
	struct dxpu_host host; /* requests to the bridge's devices, their DMA */
	struct list_head gpus; /* struct dxpu_gpu bound behind this bridge (dxpu_gpu.c) */
	/*
	 * TLPs other devices sent to this bridge's devices (peer to peer), waiting to be sent:
	 * queued where this bridge's lock cannot be taken (under another bridge's).
	 */
	spinlock_t peer_lock; /* the three below */
	struct list_head peer_q;
	u32 peer_bytes;
	bool peer_closed;
	struct work_struct peer_work;
	u64 peer_sent, peer_dropped;
	u64 rx_frames, tx_frames, tx_errors;
	u64 cfg_write_errors; /* configuration writes forwarded without waiting that failed */
	atomic_t cfg_writes_pending; /* ... and not ended yet */
	u8 frame[DXFP_MAX_FRAME];    /* a frame being built for sending */
};

/* A request issued and waited for. */
struct dxpu_waiter {
	struct completion done;
	u8 status; /* DXPU_TLP_CPL_* */
};

struct dxpu_fabric {
	struct mutex lock;	/* dev and the bridges' changes */
	struct net_device *dev; /* held while DxFP runs on it; NULL when it does not */
	struct packet_type pt;
	u64 node_id;
	struct list_head bridges;
	struct notifier_block netdev_nb; /* the interface going away */
	/* A session went down (any context, the bridge's lock held): its devices are lost. */
	void (*bridge_down)(void *ctx, struct dxpu_bridge *b);
	void *bridge_down_ctx;
	u64 link_down_ns;      /* a session is down after this long without progress */
	atomic64_t rx_unknown; /* frames from no bridge of ours */
	atomic64_t rx_dropped; /* frames the session refused, or unreadable */
};

/* At load: the lock, the list, and the notifier that lets an interface go. */
int dxpu_fabric_init(struct dxpu_fabric *f);
/* At unload: every session closed, the interface let go. */
void dxpu_fabric_exit(struct dxpu_fabric *f);
/* DxFP on ifname (one interface at a time: EBUSY while one is in use). */
int dxpu_fabric_open(struct dxpu_fabric *f, const char *ifname, u64 node_id);
int dxpu_fabric_connect(struct dxpu_fabric *f, const u8 *mac);
/* The bridge at mac with a reference, its session started if there was none (connect). */
struct dxpu_bridge *dxpu_fabric_get_bridge(struct dxpu_fabric *f, const u8 *mac);
void dxpu_bridge_put(struct dxpu_bridge *b);
/* Whether the session is up or still connecting (not down, not closed). */
bool dxpu_bridge_alive(struct dxpu_bridge *b);
/* Waits up to timeout_ms for the session to be established: 0, -ETIMEDOUT or -ENOLINK. */
int dxpu_bridge_wait_established(struct dxpu_bridge *b, unsigned int timeout_ms);
ssize_t dxpu_fabric_show_interface(struct dxpu_fabric *f, char *buf);
/* The frames the handler dropped before any session: "rx_unknown N rx_dropped N". */
ssize_t dxpu_fabric_show_counters(struct dxpu_fabric *f, char *buf);
/* One line per bridge into buf (PAGE_SIZE): MAC, session state, frames in/out. */
ssize_t dxpu_fabric_show_bridges(struct dxpu_fabric *f, char *buf);

/* ---- transactions (dxpu_txn.c) ---- */

/*
 * Issue the non-posted request t (buf receives up to len bytes of its data) and wait for it
 * to end, which its deadline bounds (the host layer's request timeout). Process context.
 * 0 with *status the completion status; -ENOLINK when the session is not up; -EBUSY when no
 * tag or no room came free within 2 s.
 */
int dxpu_bridge_transact(struct dxpu_bridge *b, struct dxpu_tlp *t, u8 *buf, u32 len, u8 *status);
/* One DW of configuration space of the function at bdf (behind the bridge). -EIO: not SC. */
int dxpu_bridge_cfg_read(struct dxpu_bridge *b, u16 bdf, u16 reg, u32 *val);
/*
 * Reads count DWs of bdf's configuration space from reg on into out (as the function lays them
 * out: little-endian), up to DXPU_CFG_PIPELINE requests in flight (a configuration read has
 * no side effects, so their order does not matter). 0, or the first error: -EIO for a
 * completion other than SC (its DW reads all-ones), an issuing error (-ENOLINK, -EBUSY), or
 * -ENOMEM. Sleeps.
 */
#define DXPU_CFG_PIPELINE 32
int dxpu_bridge_cfg_read_block(struct dxpu_bridge *b, u16 bdf, u16 reg, unsigned int count,
			       __le32 *out);
int dxpu_bridge_cfg_write(struct dxpu_bridge *b, u16 bdf, u16 reg, u8 be, u32 val);
/* Queue a configuration write without waiting: any context, interrupts off included. */
int dxpu_bridge_cfg_write_nowait(struct dxpu_bridge *b, u16 bdf, u16 reg, u8 be, u32 val);
/*
 * A memory read of len bytes at bus address addr (one TLP: len <= 4096, no 4 KiB crossing);
 * buf is all-ones where no data came. 0 with *status the completion status.
 */
int dxpu_bridge_mem_read(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status);
/* A posted memory write of len bytes (one TLP, as for reads). */
int dxpu_bridge_mem_write(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len);
/* Waits (up to 2 s) until every write queued without waiting has ended. Process context. */
void dxpu_bridge_drain(struct dxpu_bridge *b);

/*
 * Queue a copy of t (a device's request into a device behind b, or a completion for one) to
 * be sent on b's session. Any context; false (counted on b) when b's queue is full or b is
 * closed: the TLP is lost, as on a congested link.
 */
bool dxpu_bridge_queue_peer(struct dxpu_bridge *b, const struct dxpu_tlp *t);

/* Send every frame the session has due and re-arm its timer. Caller holds b->lock. */
void dxpu_bridge_flush_locked(struct dxpu_bridge *b);

/* Called by dxpu_fabric.c: the host layer's operations, and its requests ended at close. */
extern const struct dxpu_host_ops dxpu_bridge_host_ops;

#endif /* DXPU_DRIVER_DXPU_FABRIC_H */
