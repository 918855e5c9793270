/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_fabric.h - DxFP over raw Ethernet (EtherType 0x88B5) on one network interface: one
 * lib/core session per bridge, keyed by the bridge's MAC address.
 *
 * Locking: fabric->lock (a mutex) guards the interface and the bridge list's changes, in
 * process context (the netdevice notifier takes it under RTNL; nothing under it takes RTNL);
 * the receive path finds a bridge under RCU. Each bridge's session is guarded by its own
 * spinlock, taken with bottom halves off in process context: frames arrive in softirq
 * context and the session's timer runs there too. The session never sleeps.
 */
#ifndef DXPU_DRIVER_DXPU_FABRIC_H
#define DXPU_DRIVER_DXPU_FABRIC_H

#include <linux/if_ether.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/timer.h>

#include "core/dxfp_session.h"

#define ETH_P_DXFP 0x88B5

struct dxpu_fabric;

struct dxpu_bridge {
	struct list_head node; /* in fabric->bridges (RCU) */
	struct rcu_head rcu;
	struct dxpu_fabric *fabric;
	u8 mac[ETH_ALEN];
	spinlock_t lock; /* everything below */
	struct dxfp_session session;
	void *mem;		 /* the session's buffers */
	struct timer_list timer; /* the session's next deadline */
	bool closing;
	u64 rx_frames, tx_frames, tx_errors;
	u8 frame[DXFP_MAX_FRAME]; /* a frame being built for sending */
};

struct dxpu_fabric {
	struct mutex lock;	/* dev and the bridges' changes */
	struct net_device *dev; /* held while DxFP runs on it; NULL when it does not */
	struct packet_type pt;
	u64 node_id;
	struct list_head bridges;
	struct notifier_block netdev_nb; /* the interface going away */
	atomic64_t rx_unknown;		 /* frames from no bridge of ours */
	atomic64_t rx_dropped;		 /* frames the session refused, or unreadable */
};

/* At load: the lock, the list, and the notifier that lets an interface go. */
int dxpu_fabric_init(struct dxpu_fabric *f);
/* At unload: every session closed, the interface let go. */
void dxpu_fabric_exit(struct dxpu_fabric *f);
/* DxFP on ifname (one interface at a time: EBUSY while one is in use). */
int dxpu_fabric_open(struct dxpu_fabric *f, const char *ifname, u64 node_id);
int dxpu_fabric_connect(struct dxpu_fabric *f, const u8 *mac);
ssize_t dxpu_fabric_show_interface(struct dxpu_fabric *f, char *buf);
/* One line per bridge into buf (PAGE_SIZE): MAC, session state, frames in/out. */
ssize_t dxpu_fabric_show_bridges(struct dxpu_fabric *f, char *buf);

#endif /* DXPU_DRIVER_DXPU_FABRIC_H */
