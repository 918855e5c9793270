/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_fabric.h - DxFP over raw Ethernet (EtherType 0x88B5) on one network interface: one
 * path to each bridge, keyed by the bridge's MAC address. The path is lib/core's host path
 * (dxpu_hostpath: the session, the host transaction layer, peer routing and PCIe's ordering
 * queue), of which this module is a thin driver: it moves frames, keeps the time and the
 * timer, owns the memory and wakes whoever waits. It knows nothing of GPUs or slots: those
 * register as clients (struct dxpu_fabric_client_ops) and hear of their devices' events and
 * of a path going down (docs/kernel-module.md, "Layers").
 *
 * Locking: fabric->lock (a mutex) guards the interface, the bridge list's changes and the
 * peer table, in process context (the netdevice notifier takes it under RTNL; nothing under it
 * takes RTNL); the receive path finds a bridge under RCU. Each bridge's host path (and its
 * copy of the peer table) is guarded by the bridge's spinlock, always taken with interrupts
 * off: a CPU's load or store to a BAR (dxpu_mmio.c) takes it wherever the load is, including
 * under an interrupt descriptor's lock (the PCI core writing an MSI-X table entry, masking a
 * vector), so no holder may be interrupted on its CPU by a hard interrupt that could want such
 * a descriptor. Frames arrive in softirq context and the timer runs there too. peer_lock is
 * taken the same way. Clients' operations run under the bridge's lock, in any context: they
 * only note and queue.
 *
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
#include <linux/netpoll.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "core/dxpu_hostpath.h"
#include "dxpu_keys.h"

#define ETH_P_DXFP 0x88B5

/* Devices peer to peer traffic may go to (the peer table's entries): one per slot at most. */
#define DXPU_FABRIC_MAX_PEERS 32

struct dxpu_fabric;

struct dxpu_bridge {
	struct list_head node; /* in fabric->bridges (RCU) */
	struct kref ref;
	struct dxpu_fabric *fabric;
	u8 mac[ETH_ALEN];
	struct net_device *dev;	    /* the fabric's interface; used only while !closing */
	wait_queue_head_t state_wq; /* the session established or down, writes drained */
	struct work_struct tx_work; /* sends what was queued where frames cannot be sent */
	spinlock_t lock;	    /* everything below up to peer_lock */
	struct dxpu_hostpath hp;
	void *mem;		 /* the host path's buffers */
	struct timer_list timer; /* the host path's next deadline */
	bool closing;
	bool sealed; /* an authenticated session (dxpu_keys.h) */
	/* This bridge's copy of the fabric's peer table (the host path reads it) and the bridge
	 * each entry's device is behind.
	 */
	struct dxpu_peer peers[DXPU_FABRIC_MAX_PEERS];
	struct dxpu_bridge *peer_bridge[DXPU_FABRIC_MAX_PEERS];
	/*
	 * TLPs other bridges' devices sent to this bridge's devices (peer to peer), waiting to be
	 * forwarded: queued where this bridge's lock cannot be taken (under another bridge's).
	 */
	spinlock_t peer_lock; /* the four below */
	struct list_head peer_q;
	u32 peer_bytes;
	bool peer_closed;
	u64 peer_dropped;
	struct work_struct peer_work;
	u64 rx_frames;
	bool xmit_deferred; /* frames due while this CPU polled the interface */
	/*
	 * Frames the pump built under the lock, sent once it is let go (dxpu_bridge_tx_flush): by
	 * one CPU at a time (tx_busy), in order; none once tx_stopped (the path closed).
	 */
	struct sk_buff_head tx_skbs;
	unsigned long tx_busy;
	bool tx_stopped;
	atomic64_t tx_frames, tx_errors;
	u64 cfg_write_errors;	     /* configuration writes not waited for that failed */
	atomic_t cfg_writes_pending; /* ... and not ended yet */
	u8 frame[DXFP_MAX_FRAME];    /* a frame being built for sending */
	struct rcu_head rcu;	     /* freed a grace period after the last reference */
};

/* A request issued and waited for: its cookie in the host path is the waiter's address. */
struct dxpu_waiter {
	struct completion done;
	u8 status; /* DXPU_TLP_CPL_* */
};

/*
 * What a client (the MSI domain, the slots) hears from the fabric. Each runs with the bridge's
 * lock held, in any context (softirq, a timer, interrupts off): it notes and queues, never
 * sleeps, never calls back into the fabric for that bridge.
 */
struct dxpu_fabric_client_ops {
	/* The device at requester behind b wrote the host's MSI range: data is the message. */
	void (*interrupt)(void *ctx, struct dxpu_bridge *b, u16 requester, u32 data);
	/* b's session went down: every request on it has ended (UR); the path is final. */
	void (*link_down)(void *ctx, struct dxpu_bridge *b);
};

struct dxpu_fabric_client {
	struct list_head node; /* in fabric->clients (RCU) */
	const struct dxpu_fabric_client_ops *ops;
	void *ctx;
};

struct dxpu_fabric {
	struct mutex lock;	/* dev, the bridges' changes and the peer table */
	struct net_device *dev; /* held while DxFP runs on it; NULL when it does not */
	struct packet_type pt;
	u64 node_id;
	struct dxpu_keys keys; /* for the sessions opened from now on */
	struct list_head bridges;
	struct list_head clients;	 /* struct dxpu_fabric_client (RCU; changes under lock) */
	struct notifier_block netdev_nb; /* the interface going away */
	/* The devices peer to peer traffic may reach, and the bridge each is behind (a reference
	 * while set); each bridge reads its own copy.
	 */
	struct dxpu_peer peers[DXPU_FABRIC_MAX_PEERS];
	struct dxpu_bridge *peer_bridge[DXPU_FABRIC_MAX_PEERS];
	u64 link_down_ns;	/* a session is down after this long without progress */
	u64 request_timeout_ns; /* a request unanswered this long ends with UR */
	/*
	 * With interrupts off (a CPU's load from a BAR, dxpu_mmio.c) frames go straight to the
	 * driver and come in by polling the interface's NAPI instances (poll_dev, under RCU);
	 * netpoll set up on the interface makes every other poller take NAPI's poll_owner lock.
	 */
	struct netpoll np;
	bool np_ready;
	struct net_device __rcu *poll_dev;
	atomic64_t rx_unknown; /* frames from no bridge of ours */
	atomic64_t rx_dropped; /* frames the session refused, or unreadable */
};

/* At load: the lock, the lists, and the notifier that lets an interface go. */
int dxpu_fabric_init(struct dxpu_fabric *f);
/* At unload: every session closed, the interface let go. */
void dxpu_fabric_exit(struct dxpu_fabric *f);
/* A client hears of every bridge's events from now on; until unregistered (which waits for
 * operations in flight). Process context.
 */
void dxpu_fabric_register_client(struct dxpu_fabric *f, struct dxpu_fabric_client *c);
void dxpu_fabric_unregister_client(struct dxpu_fabric *f, struct dxpu_fabric_client *c);
/* DxFP on ifname (one interface at a time: EBUSY while one is in use). */
int dxpu_fabric_open(struct dxpu_fabric *f, const char *ifname, u64 node_id);
int dxpu_fabric_connect(struct dxpu_fabric *f, const u8 *mac);
/* The bridge at mac with a reference, its session started if there was none (connect). */
struct dxpu_bridge *dxpu_fabric_get_bridge(struct dxpu_fabric *f, const u8 *mac);
void dxpu_bridge_get(struct dxpu_bridge *b);
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
/* The fabric keys (dxpu_keys.h) under the fabric's lock: /sys/devices/dxpu/key, bridge_keys. */
int dxpu_fabric_set_key(struct dxpu_fabric *f, const char *buf, size_t len);
ssize_t dxpu_fabric_show_key(struct dxpu_fabric *f, char *buf);
int dxpu_fabric_set_bridge_key(struct dxpu_fabric *f, const char *buf, size_t len);
ssize_t dxpu_fabric_show_bridge_keys(struct dxpu_fabric *f, char *buf);

/*
 * Peer to peer: entry idx of the peer table is the device at bdf behind b, whose memory window
 * is [window, window + size): other devices' requests there, and the completions of its reads,
 * are forwarded to b's session. Every bridge's copy is updated under its lock. Process context.
 */
void dxpu_fabric_set_peer(struct dxpu_fabric *f, unsigned int idx, struct dxpu_bridge *b, u16 bdf,
			  u64 window, u64 size);
void dxpu_fabric_clear_peer(struct dxpu_fabric *f, unsigned int idx);

/*
 * Queues every frame due for sending, dispatches the host path's events, re-arms the timer.
 * Holds b->lock; the frames go out once it is let go: dxpu_bridge_unlock_irqrestore, or
 * dxpu_bridge_tx_flush after another unlock.
 */
void dxpu_bridge_pump_locked(struct dxpu_bridge *b, u64 now);
void dxpu_bridge_tx_flush(struct dxpu_bridge *b);
void dxpu_bridge_unlock_irqrestore(struct dxpu_bridge *b, unsigned long flags) __releases(&b->lock);

/*
 * Interrupts off, not in hard interrupt context (the fault path of transparent MMIO): receives
 * what the interface holds by polling its NAPI instances here, as netpoll does, so that a
 * completion arrives without this CPU taking an interrupt; then sends what that made due.
 */
void dxpu_fabric_poll(struct dxpu_fabric *f);
/* The same, then what b's timer would do now if it is due. */
void dxpu_bridge_service(struct dxpu_bridge *b);

/* ---- transactions (dxpu_txn.c) ---- */

/*
 * Issue the non-posted request t (buf receives up to len bytes of its data) and wait for it
 * to end, which its deadline bounds (the host layer's request timeout). Process context.
 * 0 with *status the completion status; -ENOLINK when the session is not up; -EBUSY when no
 * tag or no room came free within DXPU_HOSTPATH_ISSUE_PATIENCE_NS.
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
/*
 * Queue a configuration write without waiting: any context, interrupts off included. It waits
 * in the host path's ordering queue while the bridge gives no credit (later posted writes
 * pass it, as PCIe lets them); -EBUSY only when no tag or no room is left.
 */
int dxpu_bridge_cfg_write_nowait(struct dxpu_bridge *b, u16 bdf, u16 reg, u8 be, u32 val);
/*
 * A memory read of len bytes at bus address addr (one TLP: len <= 4096, no 4 KiB crossing);
 * buf is all-ones where no data came. 0 with *status the completion status.
 */
int dxpu_bridge_mem_read(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status);
/* Posted memory writes of len bytes at addr (cut at the Max Payload Size, DW-aligned). */
int dxpu_bridge_mem_write(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len);
/*
 * The two above with interrupts off and without sleeping (a CPU's load or store that
 * faulted, dxpu_mmio.c): the caller's CPU receives by polling (dxpu_bridge_service) while it
 * waits for a completion or for room. Not in hard interrupt context. The caller keeps b from
 * being freed by staying in an RCU read-side critical section (bridges are freed after a
 * grace period).
 */
int dxpu_bridge_mem_read_atomic(struct dxpu_bridge *b, u64 addr, void *buf, u32 len, u8 *status);
int dxpu_bridge_mem_write_atomic(struct dxpu_bridge *b, u64 addr, const void *buf, u32 len);
/* Waits (up to 2 s) until every write queued without waiting has ended. Process context. */
void dxpu_bridge_drain(struct dxpu_bridge *b);
/*
 * The device at bdf behind b may DMA [iova, iova + size) of host memory mem, as flags let it
 * (DXPU_HOST_WIN_READ, _WRITE). Any context but NMI (the DMA API's): in hard interrupt context
 * only when the lock is free, else -EBUSY. -ENOSPC: the bridge's table is full; -EEXIST: it
 * overlaps a window of that device.
 */
int dxpu_bridge_add_window(struct dxpu_bridge *b, u16 bdf, u64 iova, u64 size, u8 *mem, u16 flags);
/* The same contexts; -EBUSY as above (nothing removed), else 0. */
int dxpu_bridge_remove_window(struct dxpu_bridge *b, u16 bdf, u64 iova);

#endif /* DXPU_DRIVER_DXPU_FABRIC_H */
