/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_hostpath.h - the host's side of one path to remote devices, whole and sans-IO: the DxFP
 * session to a bridge, the host transaction layer (dxpu_host.h: tags, completion matching,
 * deadlines, DMA served inside windows, MSI writes as interrupts), peer-to-peer routing
 * (dxpu_peer.h) and PCIe's ordering queue (dxpu_txq.h) behind one pull-style API. dxpu.ko and
 * the userspace host proxy (lib/host) are thin drivers of it: they move bytes, keep the time,
 * wake their waiters and own the memory; every protocol rule is here (docs/host-proxy.md).
 *
 * No I/O, no clock, no locks, no allocation, no callbacks into the caller: the caller passes
 * the time to every call and asks what to do next.
 *
 *	dxpu_hostpath_init(hp, &cfg, mem, dxpu_hostpath_mem_size(&cfg));
 *	dxpu_hostpath_connect(hp, now);
 *	on a frame from the bridge:	dxpu_hostpath_receive(hp, now, frame, len);
 *	to reach a device:		dxpu_hostpath_issue(...), dxpu_hostpath_post(...),
 *					dxpu_hostpath_write(...)
 *	when dxpu_hostpath_next_deadline() passes:
 *					dxpu_hostpath_on_timeout(hp, now);
 *	after any of these:		while (dxpu_hostpath_poll(hp, now, buf, cap, &len))
 *						transmit(buf, len);
 *					while (dxpu_hostpath_poll_event(hp, &ev))
 *						act on ev (a request ended, an interrupt, ...);
 *					while ((t = dxpu_hostpath_peer_front(hp, &to)))
 *						forward t to the path of device `to`, then
 *						dxpu_hostpath_peer_pop(hp) (or stop: it waits);
 *
 * A direct path (cfg.direct) has no session: the device sits on an ideal PCIe link that the
 * caller runs, taking the TLPs for it with dxpu_hostpath_tlp_front()/_tlp_pop() and giving
 * the device's TLPs back with dxpu_hostpath_receive_tlp(). Everything else is the same code.
 *
 * Events are kept until polled, in a ring sized so that what one call produces always fits
 * (a completion per tag, an interrupt per TLP a frame can hold); a caller that polls them after
 * every call never loses one (events_lost counts any that did not fit).
 */
#ifndef DXPU_CORE_DXPU_HOSTPATH_H
#define DXPU_CORE_DXPU_HOSTPATH_H

#include "dxfp_session.h"
#include "dxpu_host.h"
#include "dxpu_peer.h"
#include "dxpu_txq.h"

DXPU_EXTERN_C_BEGIN

struct dxpu_hostpath_config {
	/* The session to the bridge (role, node ID... are the caller's); unused when direct. */
	struct dxfp_session_config session;
	/* The transaction layer. Its max_payload is what the host's completions carry until the
	 * session is up; then they grow to the largest power of two up to fabric_max_payload that
	 * one frame of the negotiated size holds.
	 */
	struct dxpu_host_config host;
	uint32_t fabric_max_payload;
	uint32_t queue_tlps;  /* TLPs per class waiting for the session (ordering queue) */
	uint32_t queue_bytes; /* their payload bytes, per class */
	uint32_t peer_tlps;   /* TLPs from devices for other devices, waiting for the caller */
	uint32_t peer_bytes;  /* their payload bytes */
	bool direct;	      /* no session: an ideal link the caller runs */
};

/* Defaults: the session's and the host layer's, 4096-byte fabric completions, 4096 TLPs and
 * 8 MiB per class queued, 1024 TLPs and 1 MiB of peer TLPs, not direct.
 */
void dxpu_hostpath_config_defaults(struct dxpu_hostpath_config *cfg);

/*
 * What happened, in the order it happened:
 *   COMPLETE      a request ended: cookie, status, value = data bytes received
 *   INTERRUPT     a device wrote the MSI range: device, cookie = the address, value = the data
 *   DMA_WRITTEN   a device wrote host memory (one per run of writes): device
 *   DMA_REFUSED   a device's DMA outside its windows: device, cookie = the address, value = its
 *                 Length in DW, status = the request's kind (an MRd was answered UR)
 *   ESTABLISHED   the session is up: requests may be issued
 *   DOWN          the session went down (status = enum dxfp_down_reason, value = the requests it
 *                 ended: each ended with UR, as a COMPLETE before this event); the path is final
 */
enum dxpu_hostpath_event_kind {
	DXPU_HP_EV_NONE = 0,
	DXPU_HP_EV_COMPLETE,
	DXPU_HP_EV_INTERRUPT,
	DXPU_HP_EV_DMA_WRITTEN,
	DXPU_HP_EV_DMA_REFUSED,
	DXPU_HP_EV_ESTABLISHED,
	DXPU_HP_EV_DOWN,
	DXPU_HP_EV_COUNT
};

struct dxpu_hostpath_event {
	uint8_t kind;	 /* enum dxpu_hostpath_event_kind */
	uint8_t status;	 /* COMPLETE: DXPU_TLP_CPL_*; DOWN: enum dxfp_down_reason */
	uint16_t device; /* the device's Requester ID */
	uint32_t value;
	uint64_t cookie; /* COMPLETE: the request's; INTERRUPT, DMA_REFUSED: the address */
};

/* The path's own counters (the session's and the transaction layer's have their own). */
struct dxpu_hostpath_counters {
	uint64_t events_lost;	 /* events that found the ring full (never, if polled) */
	uint64_t queue_refused;	 /* TLPs the ordering queue had no room for */
	uint64_t peer_tlps;	 /* device TLPs held for another device */
	uint64_t peer_dropped;	 /* ... that found the peer queue full: lost, as on a link */
	uint64_t peer_forwarded; /* TLPs from other paths' devices queued here */
};

struct dxpu_hostpath {
	struct dxpu_hostpath_config cfg;
	struct dxpu_host host;
	struct dxfp_session session;
	struct dxpu_txq txq;
	struct dxpu_txq_fifo peer_q; /* entry.user: the target's index in the peer table */
	struct dxpu_hostpath_counters counters;
	const struct dxpu_peer *peers; /* the caller's table of every device, all paths */
	size_t npeers;
	struct dxpu_hostpath_event *ev; /* ring */
	uint32_t ev_cap, ev_head, ev_count;
	uint32_t pending_completions; /* COMPLETE events not polled yet */
	uint64_t now;		      /* of the call in progress */
	bool up;		      /* established and not down */
	bool down;
	uint8_t write_buf[DXPU_TLP_MAX_PAYLOAD]; /* dxpu_hostpath_write's piece being built */
};

/* Bytes of memory (8-byte aligned) a path of this configuration needs; 0 if invalid. */
size_t dxpu_hostpath_mem_size(const struct dxpu_hostpath_config *cfg);
/* 0 when the configuration is valid, else a static sentence saying what is wrong. */
const char *dxpu_hostpath_config_check(const struct dxpu_hostpath_config *cfg);
/* False when cfg is invalid or mem_size too small. The session starts idle (direct: up). */
bool dxpu_hostpath_init(struct dxpu_hostpath *hp, const struct dxpu_hostpath_config *cfg, void *mem,
			size_t mem_size);

/* Start the handshake (the next poll sends HELLO). Direct: nothing to do. */
void dxpu_hostpath_connect(struct dxpu_hostpath *hp, uint64_t now);
/* Close the session (CLOSE at the next poll); every request ends with UR; DOWN follows. */
void dxpu_hostpath_close(struct dxpu_hostpath *hp, uint64_t now, enum dxfp_close_reason reason);

/* A frame from the bridge. The result says what the session did with it (counted there). */
enum dxfp_rx_result dxpu_hostpath_receive(struct dxpu_hostpath *hp, uint64_t now,
					  const uint8_t *frame, size_t len);
/* Direct: a TLP the device sent (validated here, as a decoder would have). */
void dxpu_hostpath_receive_tlp(struct dxpu_hostpath *hp, uint64_t now, const struct dxpu_tlp *t);

/*
 * Issue a non-posted request (see dxpu_host_issue): data it returns lands in buf, which stays
 * the caller's until the request's COMPLETE event. NO_TAG also while as many COMPLETE events
 * wait to be polled as there are tags; SEND_FAILED when the session is not up or its queue is
 * full (retry once completions or acknowledgements came).
 */
enum dxpu_host_err dxpu_hostpath_issue(struct dxpu_hostpath *hp, struct dxpu_tlp *t, uint8_t *buf,
				       uint32_t buf_len, uint64_t cookie, uint64_t now,
				       uint16_t *tag_out);
/* A posted memory write (Requester ID set here); SEND_FAILED as for issue. */
enum dxpu_host_err dxpu_hostpath_post(struct dxpu_hostpath *hp, struct dxpu_tlp *t, uint64_t now);
/*
 * [addr, addr + len) written as posted writes cut at 4 KiB and at the host's Max Payload Size
 * (cfg.host.max_payload: the size a device takes; only completions grow on the fabric), in
 * order. *done (may be NULL): the bytes queued, whole writes only. OK when all were;
 * SEND_FAILED when the queue filled first: continue from addr + *done once the path moved.
 */
enum dxpu_host_err dxpu_hostpath_write(struct dxpu_hostpath *hp, uint64_t addr, const uint8_t *src,
				       uint32_t len, uint64_t now, uint32_t *done);

/*
 * How long an issuer keeps retrying a request the path refused for want of room (NO_TAG,
 * SEND_FAILED while up) before it gives up (-EBUSY in dxpu.ko, a timeout in userspace).
 */
#define DXPU_HOSTPATH_ISSUE_PATIENCE_NS (2000ull * DXFP_NS_PER_MS)

/* Whether err (from issue, post or write) may succeed later: no tag or no room, path up. */
static inline bool dxpu_hostpath_retryable(const struct dxpu_hostpath *hp, enum dxpu_host_err err)
{
	return hp->up && (err == DXPU_HOST_NO_TAG || err == DXPU_HOST_SEND_FAILED);
}

/* Timers: requests past their deadline end (UR). The session's own run in poll. */
void dxpu_hostpath_on_timeout(struct dxpu_hostpath *hp, uint64_t now);
/* The earliest time on_timeout or poll has something to do; UINT64_MAX: none. */
uint64_t dxpu_hostpath_next_deadline(const struct dxpu_hostpath *hp);

/* The next frame to send (queued TLPs offered in PCIe order first). Not for a direct path. */
bool dxpu_hostpath_poll(struct dxpu_hostpath *hp, uint64_t now, uint8_t *buf, size_t cap,
			size_t *len);
bool dxpu_hostpath_poll_pieces(struct dxpu_hostpath *hp, uint64_t now, size_t cap,
			       struct dxfp_frame_out *out);
/* The next event; false when there is none. */
bool dxpu_hostpath_poll_event(struct dxpu_hostpath *hp, struct dxpu_hostpath_event *ev);

/* Direct: the oldest TLP for the device (valid until popped), NULL when none; then pop it. */
const struct dxpu_tlp *dxpu_hostpath_tlp_front(const struct dxpu_hostpath *hp);
void dxpu_hostpath_tlp_pop(struct dxpu_hostpath *hp);

/*
 * Peer to peer. The caller's table of every device it has attached, on every path (the same
 * table for all of them; call again when it moves). A device's request into another device's
 * memory window, or the completion of a peer's read, is held for the caller: the oldest with
 * its target's index (valid until popped), NULL when none. A path's held TLPs keep the
 * session's receive credit until popped, so a slow target slows its source, never loses data.
 */
void dxpu_hostpath_set_peers(struct dxpu_hostpath *hp, const struct dxpu_peer *table, size_t n);
const struct dxpu_tlp *dxpu_hostpath_peer_front(const struct dxpu_hostpath *hp, int *target);
void dxpu_hostpath_peer_pop(struct dxpu_hostpath *hp);
/*
 * A TLP from another path's device for a device on this one: queued in order. False when the
 * path is not up (dxpu_hostpath_is_up) or its queue is full (try again once it moved).
 */
bool dxpu_hostpath_forward(struct dxpu_hostpath *hp, const struct dxpu_tlp *t, uint64_t now);

/* DMA windows, as dxpu_host_add_window / _remove_window / _remove_device. */
enum dxpu_host_err dxpu_hostpath_add_window(struct dxpu_hostpath *hp, uint16_t device,
					    uint64_t iova, uint64_t size, uint8_t *mem,
					    uint16_t flags);
enum dxpu_host_err dxpu_hostpath_remove_window(struct dxpu_hostpath *hp, uint16_t device,
					       uint64_t iova);
unsigned int dxpu_hostpath_remove_device(struct dxpu_hostpath *hp, uint16_t device);

/* Established and not down (a direct path always is). */
static inline bool dxpu_hostpath_is_up(const struct dxpu_hostpath *hp)
{
	return hp->up;
}

static inline bool dxpu_hostpath_is_down(const struct dxpu_hostpath *hp)
{
	return hp->down;
}

static inline enum dxfp_session_state dxpu_hostpath_state(const struct dxpu_hostpath *hp)
{
	if (hp->cfg.direct)
		return hp->down ? DXFP_STATE_DOWN : DXFP_STATE_ESTABLISHED;
	return dxfp_session_get_state(&hp->session);
}

static inline const struct dxpu_host_counters *
dxpu_hostpath_host_counters(const struct dxpu_hostpath *hp)
{
	return &hp->host.counters;
}

static inline const struct dxpu_hostpath_counters *
dxpu_hostpath_get_counters(const struct dxpu_hostpath *hp)
{
	return &hp->counters;
}

static inline const struct dxfp_session_counters *
dxpu_hostpath_session_counters(const struct dxpu_hostpath *hp)
{
	return &hp->session.counters;
}

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_HOSTPATH_H */
