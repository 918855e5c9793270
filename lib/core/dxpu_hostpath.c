// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_hostpath.c - the host's side of one path, whole (see dxpu_hostpath.h). The session,
 * the transaction layer and the ordering queue talk to each other here through lib/core's own
 * internal operations; the caller only pulls.
 */
#include "dxpu_hostpath.h"

#include "tlp_build.h"

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

void dxpu_hostpath_config_defaults(struct dxpu_hostpath_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	dxfp_session_config_defaults(&cfg->session);
	cfg->session.role = DXFP_ROLE_INITIATOR;
	dxpu_host_config_defaults(&cfg->host);
	cfg->fabric_max_payload = 4096;
	cfg->queue_tlps = 4096;
	cfg->queue_bytes = 8u << 20;
	/* What the default session's receive credit lets arrive for peers: posted and completions. */
	cfg->peer_tlps = 2048;
	cfg->peer_bytes = 4u << 20;
}

/* Events one call can produce: a completion per tag, a TLP per 16 bytes of a frame, and DOWN. */
static uint32_t event_capacity(const struct dxpu_hostpath_config *cfg)
{
	uint32_t frame = cfg->direct ? DXFP_MAX_FRAME : cfg->session.max_frame;

	return cfg->host.max_tags + frame / 16u + 16u;
}

const char *dxpu_hostpath_config_check(const struct dxpu_hostpath_config *cfg)
{
	const char *why;

	if (!cfg->direct) {
		if (cfg->session.role != DXFP_ROLE_INITIATOR)
			return "a host path initiates its session";
		why = dxfp_session_config_check(&cfg->session);
		if (why)
			return why;
	}
	if (!cfg->queue_tlps || !cfg->peer_tlps)
		return "the ordering and peer queues need room for at least one TLP";
	if (cfg->queue_bytes < DXPU_TLP_MAX_PAYLOAD || cfg->peer_bytes < DXPU_TLP_MAX_PAYLOAD)
		return "the ordering and peer queues need room for a TLP of the largest payload";
	if (cfg->fabric_max_payload < 128 || cfg->fabric_max_payload > DXPU_TLP_MAX_PAYLOAD ||
	    (cfg->fabric_max_payload & (cfg->fabric_max_payload - 1u)))
		return "fabric_max_payload is a power of two from 128 to 4096";
	if (cfg->host.max_tags < 1 || cfg->host.max_tags > DXPU_HOST_MAX_TAGS)
		return "max_tags is 1 to 256";
	return NULL;
}

size_t dxpu_hostpath_mem_size(const struct dxpu_hostpath_config *cfg)
{
	size_t n = 0;

	if (dxpu_hostpath_config_check(cfg))
		return 0;
	if (!cfg->direct)
		n += align8(dxfp_session_mem_size(&cfg->session));
	n += align8(dxpu_txq_mem_size(cfg->queue_tlps, cfg->queue_bytes));
	n += align8(dxpu_tlp_fifo_mem_size(cfg->peer_tlps, cfg->peer_bytes));
	n += align8((size_t)event_capacity(cfg) * sizeof(struct dxpu_hostpath_event));
	return n;
}

/* ---- events ---- */

static struct dxpu_hostpath_event *ev_newest(struct dxpu_hostpath *hp)
{
	if (!hp->ev_count)
		return NULL;
	return &hp->ev[(hp->ev_head + hp->ev_count - 1u) % hp->ev_cap];
}

static void ev_push(struct dxpu_hostpath *hp, uint8_t kind, uint8_t status, uint16_t device,
		    uint32_t value, uint64_t cookie)
{
	struct dxpu_hostpath_event *e;

	if (!hp->ev || hp->ev_count == hp->ev_cap) { /* no ring before init lays it out */
		hp->counters.events_lost++;
		return;
	}
	e = &hp->ev[(hp->ev_head + hp->ev_count) % hp->ev_cap];
	e->kind = kind;
	e->status = status;
	e->device = device;
	e->value = value;
	e->cookie = cookie;
	hp->ev_count++;
	if (kind == DXPU_HP_EV_COMPLETE)
		hp->pending_completions++;
}

bool dxpu_hostpath_poll_event(struct dxpu_hostpath *hp, struct dxpu_hostpath_event *ev)
{
	if (!hp->ev_count)
		return false;
	*ev = hp->ev[hp->ev_head];
	hp->ev_head = (hp->ev_head + 1u) % hp->ev_cap;
	hp->ev_count--;
	if (ev->kind == DXPU_HP_EV_COMPLETE)
		hp->pending_completions--;
	return true;
}

/* ---- what the transaction layer sends, and what it reports ---- */

/* Hands t to the session at once when nothing waits before it, else queues it (in order). */
static bool submit(struct dxpu_hostpath *hp, const struct dxpu_tlp *t)
{
	if (hp->down)
		return false;
	if (!hp->cfg.direct && dxpu_txq_size(&hp->txq) == 0 && hp->up &&
	    dxfp_session_send(&hp->session, hp->now, t) == DXFP_SEND_OK)
		return true;
	/* Refused (no credit, no room, not a TLP the session sends): the queue keeps it, and the
	 * next poll offers it again or drops and counts it.
	 */
	if (dxpu_txq_push(&hp->txq, t))
		return true;
	hp->counters.queue_refused++;
	return false;
}

static bool host_send(void *ctx, const struct dxpu_tlp *t)
{
	return submit(ctx, t);
}

static void host_complete(void *ctx, uint64_t cookie, uint8_t status, uint32_t received)
{
	ev_push(ctx, DXPU_HP_EV_COMPLETE, status, 0, received, cookie);
}

static void host_interrupt(void *ctx, uint16_t device, uint64_t addr, uint32_t data)
{
	ev_push(ctx, DXPU_HP_EV_INTERRUPT, 0, device, data, addr);
}

static const struct dxpu_host_ops hostpath_host_ops = {
	.send = host_send,
	.complete = host_complete,
	.interrupt = host_interrupt,
};

/* ---- what the devices send ---- */

/* A device's TLP for the host: a peer's, held for the caller, or the transaction layer's. */
static void from_device(struct dxpu_hostpath *hp, const struct dxpu_tlp *t)
{
	const struct dxpu_host_counters *c = &hp->host.counters;
	uint64_t writes = c->dma_writes;
	uint64_t refused = c->dma_refused_reads + c->dma_refused_writes;
	struct dxpu_hostpath_event *last;
	struct dxpu_txq_entry *e;
	int target = DXPU_PEER_NONE;

	if (hp->peers)
		target = dxpu_peer_route(hp->peers, hp->npeers, t, hp->cfg.host.requester_id,
					 DXPU_PEER_NONE);
	if (target != DXPU_PEER_NONE) {
		e = dxpu_tlp_fifo_push(&hp->peer_q, t, 0);
		if (e) {
			e->user = (uint32_t)target;
			hp->counters.peer_tlps++;
			return; /* its credit is freed when the caller pops it */
		}
		hp->counters.peer_dropped++;
	} else {
		/* From the session's decoder: validated there. A direct device's is not. */
		if (hp->cfg.direct)
			dxpu_host_receive(&hp->host, t, hp->now);
		else
			dxpu_host_receive_decoded(&hp->host, t, hp->now);
		if (c->dma_writes != writes) {
			last = ev_newest(hp);
			if (!last || last->kind != DXPU_HP_EV_DMA_WRITTEN ||
			    last->device != t->requester_id)
				ev_push(hp, DXPU_HP_EV_DMA_WRITTEN, 0, t->requester_id, 0, 0);
		}
		if (c->dma_refused_reads + c->dma_refused_writes != refused)
			ev_push(hp, DXPU_HP_EV_DMA_REFUSED, t->kind, t->requester_id, t->length_dw,
				t->addr);
	}
	if (!hp->cfg.direct)
		dxfp_session_release(&hp->session, (int)dxpu_tlp_kind_class(t->kind),
				     dxpu_tlp_payload_len(t));
}

/* ---- the session's operations ---- */

static void on_deliver(void *ctx, const struct dxpu_tlp *t)
{
	from_device(ctx, t);
}

static void go_down(struct dxpu_hostpath *hp, uint8_t reason)
{
	unsigned int ended;
	int cls;

	if (hp->down)
		return;
	hp->down = true;
	hp->up = false;
	/* Every request waiting ends now (UR, all-ones), not at its deadline. What was queued
	 * and never sent goes too: the requests among it end with the rest.
	 */
	ended = hp->host.outstanding;
	for (cls = dxpu_txq_oldest(&hp->txq); cls >= 0; cls = dxpu_txq_oldest(&hp->txq))
		dxpu_txq_pop(&hp->txq, cls);
	dxpu_host_fail_all(&hp->host, DXPU_TLP_CPL_UR);
	ev_push(hp, DXPU_HP_EV_DOWN, reason, 0, ended, 0);
}

static void on_link_down(void *ctx, enum dxfp_down_reason reason, const struct dxpu_tlp *unanswered,
			 size_t n)
{
	(void)unanswered;
	(void)n; /* the transaction layer knows its requests: it ends them all */
	go_down(ctx, (uint8_t)reason);
}

static void on_established(void *ctx)
{
	struct dxpu_hostpath *hp = ctx;
	uint32_t mps =
		dxfp_frame_payload_limit(hp->session.max_frame, 12, hp->cfg.fabric_max_payload);

	/* The host's completions grow to what one frame carries (docs/host-proxy.md). */
	if (mps > hp->host.cfg.max_payload)
		(void)dxpu_host_set_max_payload(&hp->host, mps);
	hp->up = true;
	ev_push(hp, DXPU_HP_EV_ESTABLISHED, 0, 0, 0, 0);
}

static const struct dxfp_session_ops hostpath_session_ops = {
	.deliver = on_deliver,
	.link_down = on_link_down,
	.established = on_established,
};

/* ---- set-up ---- */

bool dxpu_hostpath_init(struct dxpu_hostpath *hp, const struct dxpu_hostpath_config *cfg, void *mem,
			size_t mem_size)
{
	size_t need = dxpu_hostpath_mem_size(cfg), part;
	uint8_t *p = mem;

	if (!need || !mem || mem_size < need)
		return false;
	memset(hp, 0, sizeof(*hp));
	hp->cfg = *cfg;
	/* The session keeps the host's static key as long as its handshake needs it; no copy. */
	dxpu_wipe(hp->cfg.session.auth.static_secret, sizeof(hp->cfg.session.auth.static_secret));
	if (dxpu_host_init(&hp->host, &cfg->host, &hostpath_host_ops, hp) != DXPU_HOST_OK)
		return false;
	if (!cfg->direct) {
		part = dxfp_session_mem_size(&cfg->session);
		if (!dxfp_session_init(&hp->session, &cfg->session, p, part, &hostpath_session_ops,
				       hp))
			return false;
		p += align8(part);
	}
	part = dxpu_txq_mem_size(cfg->queue_tlps, cfg->queue_bytes);
	if (!dxpu_txq_init(&hp->txq, cfg->queue_tlps, cfg->queue_bytes, p, part))
		return false;
	p += align8(part);
	dxpu_tlp_fifo_init(&hp->peer_q, cfg->peer_tlps, cfg->peer_bytes, p);
	p += align8(dxpu_tlp_fifo_mem_size(cfg->peer_tlps, cfg->peer_bytes));
	hp->ev = (struct dxpu_hostpath_event *)(void *)p;
	hp->ev_cap = event_capacity(cfg);
	hp->up = cfg->direct;
	return true;
}

void dxpu_hostpath_connect(struct dxpu_hostpath *hp, uint64_t now)
{
	hp->now = now;
	if (!hp->cfg.direct)
		dxfp_session_connect(&hp->session, now);
}

void dxpu_hostpath_close(struct dxpu_hostpath *hp, uint64_t now, enum dxfp_close_reason reason)
{
	hp->now = now;
	if (!hp->cfg.direct && dxfp_session_get_state(&hp->session) != DXFP_STATE_DOWN)
		dxfp_session_close(&hp->session, now, reason); /* reports link down: go_down */
	go_down(hp, DXFP_DOWN_LOCAL_CLOSE);
}

void dxpu_hostpath_set_peers(struct dxpu_hostpath *hp, const struct dxpu_peer *table, size_t n)
{
	hp->peers = n ? table : NULL;
	hp->npeers = n;
}

/* ---- input ---- */

enum dxfp_rx_result dxpu_hostpath_receive(struct dxpu_hostpath *hp, uint64_t now,
					  const uint8_t *frame, size_t len)
{
	hp->now = now;
	if (hp->cfg.direct)
		return DXFP_RX_UNEXPECTED;
	return dxfp_session_receive(&hp->session, now, frame, len);
}

void dxpu_hostpath_receive_tlp(struct dxpu_hostpath *hp, uint64_t now, const struct dxpu_tlp *t)
{
	hp->now = now;
	if (hp->cfg.direct && !hp->down)
		from_device(hp, t);
}

/* ---- requests ---- */

enum dxpu_host_err dxpu_hostpath_issue(struct dxpu_hostpath *hp, struct dxpu_tlp *t, uint8_t *buf,
				       uint32_t buf_len, uint64_t cookie, uint64_t now,
				       uint16_t *tag_out)
{
	hp->now = now;
	if (!hp->up)
		return DXPU_HOST_SEND_FAILED;
	/* A tag is not used again before the event that ended its request was polled. */
	if (hp->host.outstanding + hp->pending_completions >= hp->host.cfg.max_tags) {
		hp->host.counters.no_tag++;
		return DXPU_HOST_NO_TAG;
	}
	return dxpu_host_issue(&hp->host, t, buf, buf_len, cookie, now, tag_out);
}

enum dxpu_host_err dxpu_hostpath_post(struct dxpu_hostpath *hp, struct dxpu_tlp *t, uint64_t now)
{
	hp->now = now;
	if (!hp->up)
		return DXPU_HOST_SEND_FAILED;
	return dxpu_host_post(&hp->host, t);
}

enum dxpu_host_err dxpu_hostpath_write(struct dxpu_hostpath *hp, uint64_t addr, const uint8_t *src,
				       uint32_t len, uint64_t now, uint32_t *done)
{
	struct dxpu_tlp_mwr_split split;
	enum dxpu_host_err err;
	struct dxpu_tlp t;

	if (done)
		*done = 0;
	if (!len || !src)
		return DXPU_HOST_BAD_ARGUMENT;
	if (dxpu_tlp_mwr_split_init(&split, addr, src, len, hp->cfg.host.max_payload) !=
	    DXPU_TLP_OK)
		return DXPU_HOST_BAD_ARGUMENT;
	while (dxpu_tlp_mwr_split_next(&split, hp->write_buf, &t)) {
		err = dxpu_hostpath_post(hp, &t, now);
		if (err != DXPU_HOST_OK)
			return err;
		if (done) /* whole writes: up to the first byte not yet cut */
			*done = (uint32_t)(split.req.next - split.req.start);
	}
	return DXPU_HOST_OK;
}

/* ---- timers and output ---- */

void dxpu_hostpath_on_timeout(struct dxpu_hostpath *hp, uint64_t now)
{
	hp->now = now;
	dxpu_host_expire(&hp->host, now);
}

uint64_t dxpu_hostpath_next_deadline(const struct dxpu_hostpath *hp)
{
	uint64_t next = dxpu_host_next_deadline(&hp->host);
	uint64_t s;

	if (!hp->cfg.direct && !hp->down) {
		s = dxfp_session_next_deadline(&hp->session);
		if (s < next)
			next = s;
	}
	return next;
}

/* Offers the queued TLPs to the session in PCIe order. */
static void drain(struct dxpu_hostpath *hp, uint64_t now)
{
	struct dxpu_txq_drain d;
	int cls, r;

	if (!hp->up || dxpu_txq_size(&hp->txq) == 0)
		return;
	dxpu_txq_drain_begin(&hp->txq, &d);
	for (cls = dxpu_txq_pick(&hp->txq, &d); cls >= 0; cls = dxpu_txq_pick(&hp->txq, &d)) {
		r = dxfp_session_send(&hp->session, now, dxpu_txq_front(&hp->txq, cls));
		if (!dxpu_txq_apply(&hp->txq, &d, cls, r))
			break;
	}
	dxpu_txq_drain_end(&hp->txq, &d);
}

bool dxpu_hostpath_poll(struct dxpu_hostpath *hp, uint64_t now, uint8_t *buf, size_t cap,
			size_t *len)
{
	hp->now = now;
	if (hp->cfg.direct)
		return false;
	drain(hp, now);
	return dxfp_session_poll(&hp->session, now, buf, cap, len);
}

bool dxpu_hostpath_poll_pieces(struct dxpu_hostpath *hp, uint64_t now, size_t cap,
			       struct dxfp_frame_out *out)
{
	hp->now = now;
	if (hp->cfg.direct)
		return false;
	drain(hp, now);
	return dxfp_session_poll_pieces(&hp->session, now, cap, out);
}

const struct dxpu_tlp *dxpu_hostpath_tlp_front(const struct dxpu_hostpath *hp)
{
	int cls;

	if (!hp->cfg.direct)
		return NULL;
	cls = dxpu_txq_oldest(&hp->txq);
	return cls >= 0 ? dxpu_txq_front(&hp->txq, cls) : NULL;
}

void dxpu_hostpath_tlp_pop(struct dxpu_hostpath *hp)
{
	int cls = dxpu_txq_oldest(&hp->txq);

	if (hp->cfg.direct && cls >= 0)
		dxpu_txq_pop(&hp->txq, cls);
}

/* ---- peer to peer ---- */

const struct dxpu_tlp *dxpu_hostpath_peer_front(const struct dxpu_hostpath *hp, int *target)
{
	const struct dxpu_txq_entry *e = dxpu_tlp_fifo_front(&hp->peer_q);

	if (!e)
		return NULL;
	if (target)
		*target = (int)e->user;
	return &e->tlp;
}

void dxpu_hostpath_peer_pop(struct dxpu_hostpath *hp)
{
	const struct dxpu_txq_entry *e = dxpu_tlp_fifo_front(&hp->peer_q);
	int cls;
	uint32_t bytes;

	if (!e)
		return;
	cls = (int)dxpu_tlp_kind_class(e->tlp.kind);
	bytes = dxpu_tlp_payload_len(&e->tlp);
	dxpu_tlp_fifo_pop(&hp->peer_q);
	if (!hp->cfg.direct && !hp->down)
		dxfp_session_release(&hp->session, cls, bytes);
}

bool dxpu_hostpath_forward(struct dxpu_hostpath *hp, const struct dxpu_tlp *t, uint64_t now)
{
	hp->now = now;
	if (!hp->up || !submit(hp, t))
		return false;
	hp->counters.peer_forwarded++;
	return true;
}

/* ---- DMA windows ---- */

enum dxpu_host_err dxpu_hostpath_add_window(struct dxpu_hostpath *hp, uint16_t device,
					    uint64_t iova, uint64_t size, uint8_t *mem,
					    uint16_t flags)
{
	return dxpu_host_add_window(&hp->host, device, iova, size, mem, flags);
}

enum dxpu_host_err dxpu_hostpath_remove_window(struct dxpu_hostpath *hp, uint16_t device,
					       uint64_t iova)
{
	return dxpu_host_remove_window(&hp->host, device, iova);
}

unsigned int dxpu_hostpath_remove_device(struct dxpu_hostpath *hp, uint16_t device)
{
	return dxpu_host_remove_device(&hp->host, device);
}
