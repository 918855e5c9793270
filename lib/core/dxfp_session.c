// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_session.c - the DxFP session state machine (see dxfp_session.h and
 * docs/protocol.md, 4.4 to 4.8).
 */
#include "dxfp_session.h"
#include "dxfp_seq.h"

/* ---- configuration and memory ---- */

void dxfp_session_config_defaults(struct dxfp_session_config *cfg)
{
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->role = DXFP_ROLE_INITIATOR;
	cfg->session_id = 1;
	cfg->epoch = 1;
	cfg->max_frame = DXFP_MAX_FRAME;
	cfg->replay_window = 1024;
	cfg->replay_bytes = 2u << 20;
	cfg->max_np = 256;
	for (i = 0; i < DXFP_CLASSES; i++) {
		cfg->rx_hdr_cap[i] = 512;
		cfg->rx_data_cap[i] = (1024u * 1024u) / DXFP_CREDIT_UNIT;
	}
	cfg->ack_delay_ns = 50 * DXFP_NS_PER_US;
	cfg->keepalive_ns = 1 * DXFP_NS_PER_MS;
	cfg->link_down_ns = 20 * DXFP_NS_PER_MS;
	cfg->initial_rto_ns = 1 * DXFP_NS_PER_MS;
	cfg->min_rto_ns = 200 * DXFP_NS_PER_US;
	cfg->max_rto_ns = 5 * DXFP_NS_PER_MS;
	cfg->timer_granularity_ns = 10 * DXFP_NS_PER_US;
}

static uint32_t round_up_pow2(uint64_t v)
{
	uint32_t p = 1;

	while (p < v && p < DXFP_MAX_REPLAY_WINDOW)
		p <<= 1;
	return p;
}

void dxfp_session_config_size_replay(struct dxfp_session_config *cfg, uint64_t bandwidth_bps,
				     uint64_t rtt_ns, uint32_t avg_tlp_bytes)
{
	/*
	 * Twice what the link carries in a round trip plus the ack delay: enough to
	 * keep it busy while acknowledgements come back, and no more, because
	 * go-back-N replays everything in flight after a loss.
	 */
	uint64_t span_ns = 2u * (rtt_ns + cfg->ack_delay_ns);
	uint64_t bytes = bandwidth_bps / 8u * span_ns / 1000000000ull;

	bytes += 2ull * cfg->max_frame;
	if (bytes < 2ull * DXFP_MAX_TLP_RECORD)
		bytes = 2ull * DXFP_MAX_TLP_RECORD;
	if (bytes > (1u << 30))
		bytes = 1u << 30;
	cfg->replay_bytes = (uint32_t)bytes;
	if (avg_tlp_bytes == 0)
		avg_tlp_bytes = 64;
	cfg->replay_window = round_up_pow2(bytes / avg_tlp_bytes + 1u);
}

static const char *auth_config_check(const struct dxfp_session_auth *a, uint32_t max_frame)
{
	const struct dxfp_crypto_ops *o = a->ops;

	if (!o)
		return NULL;
	if (!o->x25519 || !o->x25519_keypair || !o->aead_seal || !o->aead_open || !o->sha256)
		return "authentication needs every crypto primitive";
	if (max_frame < DXFP_HS_FRAME_MAX || max_frame < DXFP_MIN_SESSION_FRAME + DXFP_SEAL_GROWTH)
		return "an authenticated session needs max_frame of at least 220 bytes";
	return NULL;
}

const char *dxfp_session_config_check(const struct dxfp_session_config *cfg)
{
	int i;

	if (cfg->role != DXFP_ROLE_INITIATOR && cfg->role != DXFP_ROLE_RESPONDER)
		return "role must be initiator or responder";
	if (cfg->session_id == 0 || cfg->epoch == 0)
		return "session ID and epoch must be non-zero";
	if (cfg->max_frame < DXFP_MIN_SESSION_FRAME || cfg->max_frame > DXFP_MAX_FRAME)
		return "max_frame must be 128..9216";
	if (cfg->replay_window == 0 || cfg->replay_window > DXFP_MAX_REPLAY_WINDOW ||
	    (cfg->replay_window & (cfg->replay_window - 1)) != 0)
		return "replay_window must be a power of two, 1..2^20";
	if (cfg->replay_bytes < DXFP_MAX_TLP_RECORD || cfg->replay_bytes > (1u << 30))
		return "replay_bytes must hold one largest TLP record (4120 bytes) and be at most 1 GiB";
	if (cfg->max_np == 0 || cfg->max_np > DXFP_MAX_NP)
		return "max_np must be 1..65536";
	for (i = 0; i < DXFP_CLASSES; i++) {
		if (cfg->rx_hdr_cap[i] == 0 || cfg->rx_hdr_cap[i] > DXFP_MAX_RX_CAP ||
		    cfg->rx_data_cap[i] > DXFP_MAX_RX_CAP)
			return "receive capacities must be 1..2^30 headers and 0..2^30 data units";
		if (cfg->rx_data_cap[i] < DXPU_TLP_MAX_PAYLOAD / DXFP_CREDIT_UNIT)
			return "each class must have data credit for one largest payload (256 units)";
	}
	if (cfg->keepalive_ns == 0 || cfg->link_down_ns <= cfg->keepalive_ns)
		return "link_down_ns must exceed keepalive_ns, which must be non-zero";
	if (cfg->min_rto_ns == 0 || cfg->min_rto_ns > cfg->initial_rto_ns ||
	    cfg->initial_rto_ns > cfg->max_rto_ns)
		return "RTOs must satisfy 0 < min <= initial <= max";
	if (cfg->max_rto_ns > cfg->link_down_ns / 2)
		return "max_rto_ns must be at most half of link_down_ns, so a healed path is retried";
	return auth_config_check(&cfg->auth, cfg->max_frame);
}

static uint32_t np_slots_for(uint32_t max_np)
{
	return round_up_pow2(2ull * max_np);
}

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

size_t dxfp_session_mem_size(const struct dxfp_session_config *cfg)
{
	if (dxfp_session_config_check(cfg))
		return 0;
	return align8(sizeof(struct dxfp_replay_desc) * cfg->replay_window) +
	       align8(sizeof(struct dxfp_np_entry) * np_slots_for(cfg->max_np)) +
	       align8(sizeof(struct dxpu_tlp) * cfg->max_np) +
	       align8(sizeof(struct dxfp_np_order) * cfg->max_np) + align8(cfg->replay_bytes) +
	       (cfg->auth.ops ? 2u * align8(cfg->max_frame) : 0u);
}

bool dxfp_session_init(struct dxfp_session *s, const struct dxfp_session_config *cfg, void *mem,
		       size_t mem_size, const struct dxfp_session_ops *ops, void *ctx)
{
	size_t need = dxfp_session_mem_size(cfg);
	uint8_t *p = mem;

	if (need == 0 || mem_size < need || !mem || !ops || !ops->deliver || !ops->link_down)
		return false;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->ops = *ops;
	s->ctx = ctx;
	s->state = DXFP_STATE_IDLE;
	s->max_frame = cfg->max_frame;

	s->desc = (struct dxfp_replay_desc *)p;
	p += align8(sizeof(struct dxfp_replay_desc) * cfg->replay_window);
	s->np = (struct dxfp_np_entry *)p;
	s->np_slots = np_slots_for(cfg->max_np);
	memset(s->np, 0, sizeof(struct dxfp_np_entry) * s->np_slots);
	p += align8(sizeof(struct dxfp_np_entry) * s->np_slots);
	s->np_report = (struct dxpu_tlp *)p;
	p += align8(sizeof(struct dxpu_tlp) * cfg->max_np);
	s->np_sort = (struct dxfp_np_order *)p;
	p += align8(sizeof(struct dxfp_np_order) * cfg->max_np);
	s->ring = p;
	p += align8(cfg->replay_bytes);
	if (cfg->auth.ops) {
		s->tx_sealed = p;
		s->rx_sealed = p + align8(cfg->max_frame);
	}

	s->una = cfg->initial_seq;
	s->send_ptr = cfg->initial_seq;
	s->next_seq = cfg->initial_seq;
	dxfp_tx_credits_init(&s->tx_credits);
	dxfp_rx_credits_init(&s->rx_credits, cfg->rx_hdr_cap, cfg->rx_data_cap);
	dxfp_rx_credits_advert(&s->rx_credits, &s->advertised);
	dxfp_rtt_init(&s->rtt, cfg->initial_rto_ns, cfg->min_rto_ns, cfg->max_rto_ns,
		      cfg->timer_granularity_ns);
	s->rto_deadline = DXFP_NO_DEADLINE;
	s->ack_deadline = DXFP_NO_DEADLINE;
	s->hello_deadline = DXFP_NO_DEADLINE;
	s->credit_blocked_since = DXFP_NO_DEADLINE;
	s->probe_deadline = DXFP_NO_DEADLINE;
	return true;
}

/* ---- outstanding non-posted requests ---- */

static uint32_t np_key(uint16_t requester_id, uint16_t tag)
{
	return (((uint32_t)requester_id << 10) | (tag & 0x3ffu)) + 1u;
}

static uint32_t np_home(const struct dxfp_session *s, uint32_t key)
{
	return (key * 2654435761u) & (s->np_slots - 1u);
}

static struct dxfp_np_entry *np_find(struct dxfp_session *s, uint32_t key)
{
	uint32_t i = np_home(s, key);

	while (s->np[i].key != 0) {
		if (s->np[i].key == key)
			return &s->np[i];
		i = (i + 1u) & (s->np_slots - 1u);
	}
	return NULL;
}

static void np_insert(struct dxfp_session *s, const struct dxpu_tlp *t)
{
	uint32_t key = np_key(t->requester_id, t->tag);
	struct dxfp_np_entry *e = np_find(s, key);
	uint32_t i;

	if (!e) {
		i = np_home(s, key);
		while (s->np[i].key != 0)
			i = (i + 1u) & (s->np_slots - 1u);
		e = &s->np[i];
		s->np_count++;
	}
	e->key = key;
	e->order = s->np_order++;
	e->hdr = *t;
	e->hdr.payload = NULL;
}

/* Linear probing deletion by backward shift: no tombstones. */
static void np_remove(struct dxfp_session *s, struct dxfp_np_entry *e)
{
	uint32_t mask = s->np_slots - 1u;
	uint32_t hole = (uint32_t)(e - s->np);
	uint32_t i = (hole + 1u) & mask;

	while (s->np[i].key != 0) {
		uint32_t home = np_home(s, s->np[i].key);

		/* Move i into the hole unless its home lies cyclically in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			s->np[hole] = s->np[i];
			hole = i;
		}
		i = (i + 1u) & mask;
	}
	s->np[hole].key = 0;
	s->np_count--;
}

static void np_complete(struct dxfp_session *s, const struct dxpu_tlp *t)
{
	struct dxfp_np_entry *e = np_find(s, np_key(t->requester_id, t->tag));

	if (!e) {
		s->counters.unexpected_cpl++;
		return;
	}
	if (dxpu_tlp_cpl_is_final(t))
		np_remove(s, e);
}

/* ---- state changes ---- */

/*
 * Copy the unanswered requests into np_report, oldest first (a Shell sort by
 * submission order: no recursion, no allocation). Returns how many.
 */
static uint32_t collect_unanswered(struct dxfp_session *s)
{
	static const uint32_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
	struct dxfp_np_order *o = s->np_sort;
	uint32_t n = 0, i, j, g;

	for (i = 0; i < s->np_slots; i++) {
		if (s->np[i].key == 0)
			continue;
		o[n].order = s->np[i].order - s->np_order; /* oldest is smallest */
		o[n].slot = i;
		n++;
	}
	for (g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		for (i = gaps[g]; i < n; i++) {
			struct dxfp_np_order v = o[i];

			for (j = i; j >= gaps[g] && o[j - gaps[g]].order > v.order; j -= gaps[g])
				o[j] = o[j - gaps[g]];
			o[j] = v;
		}
	}
	for (i = 0; i < n; i++)
		s->np_report[i] = s->np[o[i].slot].hdr;
	return n;
}

static bool authenticated(const struct dxfp_session *s)
{
	return s->cfg.auth.ops != NULL;
}

/* The largest frame this end builds before sealing: sealing adds DXFP_SEAL_GROWTH. */
static uint32_t frame_room(const struct dxfp_session *s)
{
	return authenticated(s) ? s->max_frame - DXFP_SEAL_GROWTH : s->max_frame;
}

/* The handshake's secrets are no longer needed (it split, or failed). */
static void wipe_handshake(struct dxfp_session *s)
{
	dxfp_noise_wipe(&s->hs);
	dxpu_wipe(s->cfg.auth.static_secret, sizeof(s->cfg.auth.static_secret));
}

/* Nothing will be sealed or opened again. */
static void wipe_keys(struct dxfp_session *s)
{
	wipe_handshake(s);
	dxpu_wipe(&s->keys, sizeof(s->keys));
	s->keys_ready = false;
}

static void go_down(struct dxfp_session *s, enum dxfp_down_reason reason)
{
	uint32_t n;

	if (s->state == DXFP_STATE_DOWN)
		return;
	s->state = DXFP_STATE_DOWN;
	s->down_reason = reason;
	s->rto_deadline = DXFP_NO_DEADLINE;
	s->ack_deadline = DXFP_NO_DEADLINE;
	s->hello_deadline = DXFP_NO_DEADLINE;
	s->probe_deadline = DXFP_NO_DEADLINE;

	n = collect_unanswered(s);
	s->np_count = 0;
	s->ops.link_down(s->ctx, reason, s->np_report, n);
	/* The replay buffer and the table are dead: nothing may read them again. */
	s->ring_count = 0;
	s->una = s->send_ptr = s->next_seq;
	if (!s->close_pending)
		wipe_keys(s); /* else after the CLOSE is sealed */
}

static void become_established(struct dxfp_session *s, uint64_t now)
{
	wipe_handshake(s);
	s->state = DXFP_STATE_ESTABLISHED;
	s->last_progress = now;
	s->hello_deadline = DXFP_NO_DEADLINE;
	if (s->ops.established)
		s->ops.established(s->ctx);
}

void dxfp_session_connect(struct dxfp_session *s, uint64_t now)
{
	if (s->state != DXFP_STATE_IDLE || s->cfg.role != DXFP_ROLE_INITIATOR)
		return;
	s->state = DXFP_STATE_CONNECTING;
	s->started = now;
	s->last_progress = now;
	s->last_tx = now;
	s->hello_interval = s->cfg.initial_rto_ns;
	s->hello_deadline = now; /* send at the next poll */
}

void dxfp_session_close(struct dxfp_session *s, uint64_t now, enum dxfp_close_reason reason)
{
	(void)now;
	if (s->state == DXFP_STATE_DOWN)
		return;
	s->close_pending = s->state != DXFP_STATE_IDLE && s->peer_session != 0;
	s->peer_close_reason = (uint16_t)reason;
	go_down(s, DXFP_DOWN_LOCAL_CLOSE);
}

/* ---- replay buffer ---- */

static struct dxfp_replay_desc *desc_of(struct dxfp_session *s, uint32_t seq)
{
	return &s->desc[seq & (s->cfg.replay_window - 1u)];
}

/* Where a TLP of len bytes would go in the ring, or false if there is no room. */
static bool ring_place(const struct dxfp_session *s, uint32_t len, uint32_t *off)
{
	uint32_t cap = s->cfg.replay_bytes, head = s->ring_head, tail = s->ring_tail;

	if (s->ring_count == 0) {
		*off = 0;
		return len <= cap;
	}
	if (tail > head) {
		if (cap - tail >= len) {
			*off = tail;
			return true;
		}
		*off = 0;
		return len <= head;
	}
	if (tail < head && head - tail >= len) {
		*off = tail;
		return true;
	}
	return false; /* tail == head: full */
}

static void ring_free_acked(struct dxfp_session *s, uint32_t ack)
{
	while (s->una != ack) {
		s->una++;
		s->ring_count--;
	}
	if (s->ring_count == 0)
		s->ring_head = s->ring_tail = 0;
	else
		s->ring_head = desc_of(s, s->una)->off;
}

/* ---- sending TLPs ---- */

/* rec_len: the TLP's record, record header included (what it takes in the ring and a frame). */
static enum dxfp_send_result check_send(struct dxfp_session *s, int cls, uint32_t payload_bytes,
					uint32_t rec_len, uint32_t *off)
{
	if (s->state == DXFP_STATE_DOWN)
		return DXFP_SEND_DOWN;
	if (s->state != DXFP_STATE_ESTABLISHED)
		return DXFP_SEND_NOT_READY;
	if (rec_len + DXFP_MIN_FRAME + DXFP_REC_HDR_SIZE + DXFP_CREDIT_BODY_SIZE > frame_room(s))
		return DXFP_SEND_TOO_BIG;
	if (!dxfp_tx_credits_allow(&s->tx_credits, cls, payload_bytes))
		return DXFP_SEND_NO_CREDIT;
	if (s->next_seq - s->una >= s->cfg.replay_window || !ring_place(s, rec_len, off))
		return DXFP_SEND_REPLAY_FULL;
	if (cls == DXPU_TLP_CLASS_NON_POSTED && s->np_count >= s->cfg.max_np)
		return DXFP_SEND_NP_FULL;
	return DXFP_SEND_OK;
}

enum dxfp_send_result dxfp_session_can_send(struct dxfp_session *s, int cls, uint32_t payload_bytes,
					    uint32_t wire_len)
{
	uint32_t off;

	return check_send(s, cls, payload_bytes, DXFP_REC_HDR_SIZE + wire_len, &off);
}

enum dxfp_send_result dxfp_session_send(struct dxfp_session *s, uint64_t now,
					const struct dxpu_tlp *tlp)
{
	uint32_t wire_len, payload, off = 0;
	int cls;
	enum dxfp_send_result r;
	struct dxfp_replay_desc *d;
	size_t enc_len = 0;

	if (dxpu_tlp_validate(tlp) != DXPU_TLP_OK)
		return DXFP_SEND_INVALID;
	wire_len = dxpu_tlp_wire_len(tlp);
	payload = dxpu_tlp_payload_len(tlp);
	cls = (int)dxpu_tlp_kind_class(tlp->kind);
	r = check_send(s, cls, payload, DXFP_REC_HDR_SIZE + wire_len, &off);
	if (r != DXFP_SEND_OK) {
		if (r == DXFP_SEND_NO_CREDIT) {
			s->counters.credit_refusals++;
			if (s->credit_blocked_since == DXFP_NO_DEADLINE)
				s->credit_blocked_since = now;
		}
		return r;
	}
	/*
	 * The ring holds the TLP as the record a frame carries, so that frames
	 * can be sent straight from it. Validated, and the ring has the room at
	 * off: encoding cannot fail. TLPs are whole DWs: no padding.
	 */
	s->ring[off] = DXFP_REC_TLP;
	s->ring[off + 1] = 0;
	dxpu_put_be16(&s->ring[off + 2], (uint16_t)wire_len);
	(void)dxpu_tlp_encode_valid(tlp, &s->ring[off + DXFP_REC_HDR_SIZE], wire_len, &enc_len);
	d = desc_of(s, s->next_seq);
	d->off = off;
	d->len = (uint16_t)wire_len;
	d->retx = 0;
	d->tx_time = now;
	if (s->ring_count == 0)
		s->ring_head = off;
	s->ring_tail = off + DXFP_REC_HDR_SIZE + wire_len;
	s->ring_count++;
	s->next_seq++;
	dxfp_tx_credits_consume(&s->tx_credits, cls, payload);
	if (cls == DXPU_TLP_CLASS_NON_POSTED)
		np_insert(s, tlp);
	s->credit_blocked_since = DXFP_NO_DEADLINE;
	s->probe_deadline = DXFP_NO_DEADLINE;
	return DXFP_SEND_OK;
}

void dxfp_session_release(struct dxfp_session *s, int cls, uint32_t payload_bytes)
{
	struct dxfp_credits now;
	int i;

	dxfp_rx_credits_release(&s->rx_credits, cls, payload_bytes);
	if (cls < 0 || cls >= DXFP_CLASSES)
		return;
	/* Announce at once when a quarter of the class's buffer came free since the last advert. */
	dxfp_rx_credits_advert(&s->rx_credits, &now);
	i = cls;
	if (now.hdr[i] - s->advertised.hdr[i] >= (s->cfg.rx_hdr_cap[i] + 3u) / 4u ||
	    now.data[i] - s->advertised.data[i] >= (s->cfg.rx_data_cap[i] + 3u) / 4u)
		s->credit_now = true;
}

/* ---- receiving ---- */

static uint64_t *drop_counter(struct dxfp_session *s, enum dxfp_rx_result r)
{
	struct dxfp_session_counters *c = &s->counters;

	switch (r) {
	case DXFP_RX_BAD_CRC:
		return &c->bad_crc;
	case DXFP_RX_TRUNCATED:
		return &c->truncated;
	case DXFP_RX_BAD_LENGTH:
		return &c->bad_length;
	case DXFP_RX_BAD_VERSION:
		return &c->bad_version;
	case DXFP_RX_BAD_TYPE:
		return &c->bad_type;
	case DXFP_RX_MALFORMED:
		return &c->malformed;
	case DXFP_RX_UNKNOWN_SESSION:
		return &c->unknown_session;
	case DXFP_RX_STALE_EPOCH:
		return &c->stale_epoch;
	case DXFP_RX_UNEXPECTED:
		return &c->unexpected;
	case DXFP_RX_BAD_ACK:
		return &c->bad_ack;
	case DXFP_RX_WINDOW_VIOLATION:
		return &c->window_violation;
	case DXFP_RX_CREDIT_VIOLATION:
		return &c->credit_violation;
	case DXFP_RX_DOWN:
		return &c->rx_down;
	case DXFP_RX_BAD_TAG:
		return &c->bad_tag;
	case DXFP_RX_REPLAYED:
		return &c->replayed;
	case DXFP_RX_UNSEALED:
		return &c->unsealed;
	case DXFP_RX_NO_AUTH:
		return &c->no_auth;
	default:
		return NULL;
	}
}

static enum dxfp_rx_result count_drop(struct dxfp_session *s, enum dxfp_rx_result r)
{
	uint64_t *c = drop_counter(s, r);

	if (c)
		(*c)++;
	return r;
}

static enum dxfp_rx_result from_frame_err(enum dxfp_err e)
{
	switch (e) {
	case DXFP_OK:
		return DXFP_RX_OK;
	case DXFP_ERR_TRUNCATED:
		return DXFP_RX_TRUNCATED;
	case DXFP_ERR_BAD_LENGTH:
		return DXFP_RX_BAD_LENGTH;
	case DXFP_ERR_BAD_CRC:
		return DXFP_RX_BAD_CRC;
	case DXFP_ERR_BAD_VERSION:
		return DXFP_RX_BAD_VERSION;
	case DXFP_ERR_BAD_TYPE:
		return DXFP_RX_BAD_TYPE;
	default:
		return DXFP_RX_MALFORMED;
	}
}

/* The HELLO and CREDIT records of a HELLO or WELCOME frame. */
static bool read_hello_credits(const struct dxfp_frame *f, struct dxfp_hello *h,
			       struct dxfp_credits *c)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	bool have_hello = false, have_credit = false;

	dxfp_record_iter_init(&it, f);
	while (dxfp_record_next(&it, &r)) {
		if (r.type == DXFP_REC_HELLO && !have_hello) {
			dxfp_hello_read(r.body, h);
			have_hello = true;
		} else if (r.type == DXFP_REC_CREDIT && !have_credit) {
			dxfp_credits_read(r.body, c);
			have_credit = true;
		}
	}
	return have_hello && have_credit;
}

bool dxfp_hello_identity(const struct dxfp_frame *f, struct dxfp_hello *hello)
{
	struct dxfp_credits c;

	return f->hdr.type == DXFP_HELLO && read_hello_credits(f, hello, &c);
}

static bool hello_usable(const struct dxfp_session *s, const struct dxfp_hello *h)
{
	uint32_t min_frame = DXFP_MIN_SESSION_FRAME + (authenticated(s) ? DXFP_SEAL_GROWTH : 0u);

	return h->version_min <= DXFP_VERSION && h->version_max >= DXFP_VERSION &&
	       h->max_frame >= min_frame && h->replay_window != 0 &&
	       h->replay_window <= DXFP_MAX_REPLAY_WINDOW;
}

static void take_peer_hello(struct dxfp_session *s, const struct dxfp_hello *h,
			    const struct dxfp_credits *c)
{
	s->peer_node_id = h->node_id;
	s->peer_window = h->replay_window;
	if (h->max_frame < s->max_frame)
		s->max_frame = h->max_frame & ~3u;
	dxfp_tx_credits_update(&s->tx_credits, c);
}

static enum dxfp_rx_result accept_hello(struct dxfp_session *s, uint64_t now,
					const struct dxfp_frame *hello)
{
	struct dxfp_hello h;
	struct dxfp_credits c;

	if (s->cfg.role != DXFP_ROLE_RESPONDER || s->state != DXFP_STATE_IDLE ||
	    hello->hdr.type != DXFP_HELLO)
		return count_drop(s, DXFP_RX_UNEXPECTED);
	if (hello->hdr.src_session == 0 || hello->hdr.src_epoch == 0 ||
	    !read_hello_credits(hello, &h, &c))
		return count_drop(s, DXFP_RX_MALFORMED);
	if (!hello_usable(s, &h))
		return count_drop(s, DXFP_RX_BAD_VERSION);
	s->peer_session = hello->hdr.src_session;
	s->peer_epoch = hello->hdr.src_epoch;
	s->expected = hello->hdr.seq;
	take_peer_hello(s, &h, &c);
	s->state = DXFP_STATE_ACCEPTING;
	s->started = now;
	s->last_progress = now;
	s->last_tx = now;
	s->welcome_pending = true;
	return DXFP_RX_OK;
}

enum dxfp_rx_result dxfp_session_accept(struct dxfp_session *s, uint64_t now,
					const struct dxfp_frame *hello)
{
	s->counters.frames_rx++;
	s->counters.bytes_rx += hello->hdr.length;
	if (authenticated(s))
		return count_drop(s, DXFP_RX_NO_AUTH);
	return accept_hello(s, now, hello);
}

static void init_header(struct dxfp_session *s, struct dxfp_header *h, uint8_t type);
static bool write_hello_records(struct dxfp_session *s, struct dxfp_writer *w, uint8_t type,
				uint8_t *buf, size_t cap);

/* The WELCOME with the handshake's second message, built once: hs splits into the keys. */
static bool build_auth_welcome(struct dxfp_session *s, struct dxfp_noise *hs)
{
	struct dxfp_writer w;
	size_t len = 0;

	if (!write_hello_records(s, &w, DXFP_WELCOME, s->hs_frame, sizeof(s->hs_frame)) ||
	    dxfp_welcome_finish(hs, &w, &len, &s->keys) != DXFP_OK)
		return false;
	s->hs_len = (uint16_t)len;
	s->keys_ready = true;
	return true;
}

enum dxfp_rx_result dxfp_session_accept_auth(struct dxfp_session *s, uint64_t now,
					     const struct dxfp_frame *hello, struct dxfp_noise *hs)
{
	enum dxfp_rx_result r;

	s->counters.frames_rx++;
	s->counters.bytes_rx += hello->hdr.length;
	if (!authenticated(s)) {
		dxfp_noise_wipe(hs);
		return count_drop(s, DXFP_RX_UNEXPECTED);
	}
	r = accept_hello(s, now, hello);
	if (r == DXFP_RX_OK && !build_auth_welcome(s, hs)) {
		s->state = DXFP_STATE_IDLE; /* hs was not a handshake at its second message */
		s->welcome_pending = false;
		r = count_drop(s, DXFP_RX_NO_AUTH);
	}
	dxfp_noise_wipe(hs);
	return r;
}

/*
 * Initiator, authenticated: the WELCOME's handshake (f is parsed; its bytes
 * start DXFP_HDR_SIZE before its records). A copy of the handshake tries it, so
 * that a forged WELCOME leaves the real one's way open.
 */
static enum dxfp_rx_result open_auth_welcome(struct dxfp_session *s, const struct dxfp_frame *f)
{
	struct dxfp_noise *try = &s->hs_try;
	enum dxfp_err e;

	*try = s->hs;
	e = dxfp_welcome_open(try, f->records - DXFP_HDR_SIZE, f, &s->keys);
	if (e == DXFP_OK) {
		s->keys_ready = true;
		s->hs = *try;
	}
	dxfp_noise_wipe(try);
	if (e == DXFP_ERR_NO_AUTH)
		return DXFP_RX_NO_AUTH;
	return e == DXFP_OK ? DXFP_RX_OK : DXFP_RX_BAD_TAG;
}

static enum dxfp_rx_result on_welcome(struct dxfp_session *s, uint64_t now,
				      const struct dxfp_frame *f)
{
	struct dxfp_hello h;
	struct dxfp_credits c;

	if (s->state == DXFP_STATE_ESTABLISHED && f->hdr.src_session == s->peer_session &&
	    f->hdr.src_epoch == s->peer_epoch) {
		/* A repeated WELCOME: our first DATA was lost; answer it. */
		s->ack_now = true;
		return DXFP_RX_OK;
	}
	if (s->state != DXFP_STATE_CONNECTING)
		return DXFP_RX_UNEXPECTED;
	if (f->hdr.src_session == 0 || f->hdr.src_epoch == 0 || !read_hello_credits(f, &h, &c))
		return DXFP_RX_MALFORMED;
	if (!hello_usable(s, &h))
		return DXFP_RX_BAD_VERSION;
	if (f->hdr.ack != s->next_seq)
		return DXFP_RX_BAD_ACK;
	if (authenticated(s)) {
		enum dxfp_rx_result r = open_auth_welcome(s, f);

		if (r != DXFP_RX_OK)
			return r;
	}
	s->peer_session = f->hdr.src_session;
	s->peer_epoch = f->hdr.src_epoch;
	s->expected = f->hdr.seq;
	take_peer_hello(s, &h, &c);
	/* The handshake's round trip is the first RTT sample. */
	if (s->counters.hellos_tx == 1)
		dxfp_rtt_sample(&s->rtt, now - s->started);
	become_established(s, now);
	s->ack_now = true; /* the first DATA establishes the responder */
	return DXFP_RX_OK;
}

/*
 * Initiator, authenticated, while connecting: a bridge under load sent a cookie
 * for our HELLO. The HELLO goes again at once, the same but for its MAC2.
 */
static enum dxfp_rx_result on_cookie(struct dxfp_session *s, uint64_t now,
				     const struct dxfp_frame *f)
{
	const struct dxfp_session_auth *a = &s->cfg.auth;
	uint8_t cookie[DXFP_COOKIE_SIZE];
	enum dxfp_err e;

	if (s->cfg.role != DXFP_ROLE_INITIATOR || !authenticated(s) ||
	    s->state != DXFP_STATE_CONNECTING || s->hs_len == 0)
		return DXFP_RX_UNEXPECTED;
	e = dxfp_cookie_reply_open(a->ops, a->peer_public, s->hs_frame, s->hs_len, f, cookie);
	if (e == DXFP_OK && !dxfp_hello_set_mac2(a->ops, cookie, s->hs_frame, s->hs_len))
		e = DXFP_ERR_NO_AUTH;
	dxpu_wipe(cookie, sizeof(cookie));
	if (e != DXFP_OK)
		return e == DXFP_ERR_BAD_TAG ? DXFP_RX_BAD_TAG : DXFP_RX_MALFORMED;
	s->counters.cookies_rx++;
	s->hello_deadline = now;
	return DXFP_RX_OK;
}

static enum dxfp_rx_result on_close(struct dxfp_session *s, const struct dxfp_frame *f)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	struct dxfp_close c = { 0 };

	dxfp_record_iter_init(&it, f);
	while (dxfp_record_next(&it, &r))
		if (r.type == DXFP_REC_CLOSE)
			dxfp_close_read(r.body, &c);
	s->peer_close_reason = c.reason;
	go_down(s, DXFP_DOWN_PEER_CLOSED);
	return DXFP_RX_OK;
}

/* Acknowledgement field of a frame from the peer: frees the replay buffer. */
static void take_ack(struct dxfp_session *s, uint64_t now, uint32_t ack)
{
	struct dxfp_replay_desc *last;

	if (!dxfp_seq_before(s->una, ack))
		return;
	last = desc_of(s, ack - 1u);
	if (!last->retx && dxfp_seq_before_eq(ack, s->send_ptr))
		dxfp_rtt_sample(&s->rtt, now - last->tx_time);
	ring_free_acked(s, ack);
	if (dxfp_seq_before(s->send_ptr, s->una))
		s->send_ptr = s->una; /* acked while queued for replay */
	s->last_progress = now;
	s->rto_deadline = s->una == s->send_ptr ? DXFP_NO_DEADLINE : now + s->rtt.rto;
}

/*
 * Go back to the oldest unacknowledged TLP. A replay that starts while one is
 * running keeps the furthest end: every TLP before it has been sent before,
 * so it is a retransmission (counted as one, no RTT sample: Karn), however
 * many replays it takes.
 */
static void start_replay(struct dxfp_session *s)
{
	if (!s->replaying || dxfp_seq_before(s->replay_end, s->send_ptr))
		s->replay_end = s->send_ptr;
	s->replaying = true;
	s->send_ptr = s->una;
}

static void take_nak(struct dxfp_session *s, uint64_t now, uint32_t ack)
{
	s->counters.naks_rx++;
	if (ack != s->una || s->una == s->send_ptr)
		return; /* stale, or nothing in flight to replay */
	if (s->nak_acted && s->last_nak_seq == ack && now < s->last_nak_time + s->rtt.rto)
		return; /* already replaying from there */
	s->nak_acted = true;
	s->last_nak_seq = ack;
	s->last_nak_time = now;
	start_replay(s);
}

/* Class and payload of a TLP record, from its DW0 (the parser has checked the TLP whole). */
static void tlp_class_payload(const struct dxfp_record *r, int *cls, uint32_t *payload)
{
	uint8_t kind = DXPU_TLP_INVALID;

	*payload = 0;
	(void)dxpu_tlp_peek_kind(r->body, r->len, &kind, payload);
	*cls = (int)dxpu_tlp_kind_class(kind);
}

static enum dxfp_rx_result deliver_tlps(struct dxfp_session *s, uint64_t now,
					const struct dxfp_frame *f, uint32_t ntlp)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	struct dxfp_rx_credits check = s->rx_credits;
	uint32_t seq = f->hdr.seq, first_new, n = 0;
	struct dxpu_tlp t;

	first_new = dxfp_seq_before(seq, s->expected) ? s->expected : seq;
	if (dxfp_seq_before(s->expected, seq)) {
		/* A gap: something before this frame was lost. */
		if (dxfp_seq_distance(s->expected, seq) >= s->peer_window)
			return DXFP_RX_WINDOW_VIOLATION;
		s->counters.gap += ntlp;
		if (!s->nak_outstanding || s->nak_seq != s->expected ||
		    now >= s->nak_time + s->rtt.rto) {
			s->nak_pending = true;
			s->nak_outstanding = true;
			s->nak_seq = s->expected;
			s->nak_time = now;
		}
		return DXFP_RX_OK;
	}
	if (dxfp_seq_distance(s->expected, seq + ntlp) > s->peer_window &&
	    dxfp_seq_before(s->expected, seq + ntlp))
		return DXFP_RX_WINDOW_VIOLATION;

	/* Check every new TLP's credit before delivering any. */
	dxfp_record_iter_init(&it, f);
	while (dxfp_record_next(&it, &r)) {
		int cls;
		uint32_t payload;

		if (r.type != DXFP_REC_TLP)
			continue;
		if (dxfp_seq_before_eq(first_new, seq + n)) {
			tlp_class_payload(&r, &cls, &payload);
			if (!dxfp_rx_credits_accept(&check, cls, payload))
				return DXFP_RX_CREDIT_VIOLATION;
		}
		n++;
	}

	n = 0;
	dxfp_record_iter_init(&it, f);
	while (dxfp_record_next(&it, &r)) {
		if (r.type != DXFP_REC_TLP)
			continue;
		if (dxfp_seq_before(seq + n, first_new)) {
			s->counters.duplicate++;
			s->ack_now = true;
			n++;
			continue;
		}
		n++;
		/* The frame's parse checked every TLP of it: fields only, no rules again. */
		dxpu_tlp_decode_valid(r.body, r.len, &t);
		(void)dxfp_rx_credits_accept(&s->rx_credits, (int)dxpu_tlp_kind_class(t.kind),
					     dxpu_tlp_payload_len(&t));
		if (dxpu_tlp_kind_is_cpl(t.kind))
			np_complete(s, &t);
		s->expected++;
		s->nak_outstanding = false;
		s->counters.tlps_delivered++;
		s->rx_unacked_tlps++;
		if (!s->ack_pending) {
			s->ack_pending = true;
			s->ack_deadline = now + s->cfg.ack_delay_ns;
		}
		s->ops.deliver(s->ctx, &t);
		if (s->state == DXFP_STATE_DOWN)
			return DXFP_RX_OK; /* the user closed the session from the callback */
	}
	/* Keep the peer's window open: acknowledge a quarter window at once. */
	if (s->rx_unacked_tlps >= (s->peer_window + 3u) / 4u)
		s->ack_now = true;
	return DXFP_RX_OK;
}

/* Take a CREDIT record; true if it raised a limit. */
static bool credits_raise(struct dxfp_session *s, const struct dxfp_credits *adv)
{
	struct dxfp_credits before = s->tx_credits.limit;

	dxfp_tx_credits_update(&s->tx_credits, adv);
	return memcmp(&before, &s->tx_credits.limit, sizeof(before)) != 0;
}

static enum dxfp_rx_result on_data(struct dxfp_session *s, uint64_t now, const struct dxfp_frame *f)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	struct dxfp_credits credits;
	bool have_credit = false;
	uint32_t ntlp = 0;
	enum dxfp_rx_result res;

	if (s->state != DXFP_STATE_ESTABLISHED && s->state != DXFP_STATE_ACCEPTING)
		return DXFP_RX_UNEXPECTED;
	/* The acknowledgement may not name a TLP never sent. */
	if (dxfp_seq_before(s->next_seq, f->hdr.ack))
		return DXFP_RX_BAD_ACK;
	dxfp_record_iter_init(&it, f);
	while (dxfp_record_next(&it, &r)) {
		if (r.type == DXFP_REC_TLP) {
			ntlp++;
		} else if (r.type == DXFP_REC_CREDIT) {
			dxfp_credits_read(r.body, &credits);
			have_credit = true;
		}
	}
	if (s->state == DXFP_STATE_ACCEPTING) {
		s->welcome_pending = false;
		become_established(s, now);
	}
	if (s->una == s->send_ptr)
		s->last_progress = now; /* nothing in flight: any valid frame is progress */
	if (have_credit && credits_raise(s, &credits)) {
		s->credit_blocked_since = DXFP_NO_DEADLINE;
		s->probe_deadline = DXFP_NO_DEADLINE;
	}
	take_ack(s, now, f->hdr.ack);
	if (f->hdr.flags & DXFP_F_NAK)
		take_nak(s, now, f->hdr.ack);
	if (f->hdr.flags & DXFP_F_ACK_REQ)
		s->ack_now = true;
	if (!ntlp)
		return DXFP_RX_OK;
	res = deliver_tlps(s, now, f, ntlp);
	return res;
}

/* A frame addressed to this session from its peer (checked before anything is opened). */
static enum dxfp_rx_result check_route(const struct dxfp_session *s, const struct dxfp_header *h)
{
	if (h->dst_session != s->cfg.session_id)
		return DXFP_RX_UNKNOWN_SESSION;
	if (h->dst_epoch != s->cfg.epoch || h->src_session != s->peer_session ||
	    h->src_epoch != s->peer_epoch)
		return DXFP_RX_STALE_EPOCH;
	return DXFP_RX_OK;
}

/*
 * A sealed frame: routed, its counter checked and its tag opened into
 * rx_sealed, then taken as a DATA or CLOSE. Only the peer can seal, so a
 * sealed CLOSE's source is checked as any other frame's.
 */
static enum dxfp_rx_result receive_sealed(struct dxfp_session *s, uint64_t now, const uint8_t *buf,
					  size_t len)
{
	struct dxfp_header h;
	struct dxfp_frame f;
	enum dxfp_rx_result r;
	enum dxfp_err e;
	uint64_t counter;
	size_t n = len < s->cfg.max_frame ? len : s->cfg.max_frame;

	s->counters.frames_rx++;
	s->counters.bytes_rx += len;
	if (s->state == DXFP_STATE_DOWN)
		return count_drop(s, DXFP_RX_DOWN);
	if (!s->keys_ready)
		return count_drop(s, DXFP_RX_UNEXPECTED);
	if (!dxfp_header_peek(buf, len, &h))
		return count_drop(s, DXFP_RX_TRUNCATED);
	r = check_route(s, &h);
	if (r != DXFP_RX_OK)
		return count_drop(s, r);
	memcpy(s->rx_sealed, buf, n);
	e = dxfp_frame_open(s->cfg.auth.ops, &s->keys.recv, &s->replay, s->rx_sealed, n,
			    s->cfg.max_frame, &f, &counter);
	if (e == DXFP_ERR_BAD_TAG)
		return count_drop(s, DXFP_RX_BAD_TAG);
	if (e == DXFP_ERR_REPLAYED)
		return count_drop(s, DXFP_RX_REPLAYED);
	if (e != DXFP_OK)
		return count_drop(s, from_frame_err(e));
	if (f.hdr.type == DXFP_CLOSE)
		return on_close(s, &f);
	if (f.hdr.type != DXFP_DATA)
		return count_drop(s, DXFP_RX_UNEXPECTED);
	return count_drop(s, on_data(s, now, &f));
}

enum dxfp_rx_result dxfp_session_receive_frame(struct dxfp_session *s, uint64_t now,
					       const struct dxfp_frame *f)
{
	const struct dxfp_header *h = &f->hdr;
	enum dxfp_rx_result res;

	s->counters.frames_rx++;
	s->counters.bytes_rx += h->length;
	if (s->state == DXFP_STATE_DOWN)
		return count_drop(s, DXFP_RX_DOWN);
	if (s->state == DXFP_STATE_IDLE)
		return count_drop(s, DXFP_RX_UNEXPECTED);
	if (h->type == DXFP_HELLO) {
		/* A repeated HELLO for this session: WELCOME again. */
		if (s->cfg.role != DXFP_ROLE_RESPONDER)
			return count_drop(s, DXFP_RX_UNEXPECTED);
		if (h->src_session != s->peer_session || h->src_epoch != s->peer_epoch)
			return count_drop(s, DXFP_RX_STALE_EPOCH);
		s->welcome_pending = true;
		return DXFP_RX_OK;
	}
	if (h->dst_session != s->cfg.session_id)
		return count_drop(s, DXFP_RX_UNKNOWN_SESSION);
	if (h->dst_epoch != s->cfg.epoch)
		return count_drop(s, DXFP_RX_STALE_EPOCH);
	if (h->type == DXFP_COOKIE)
		return count_drop(s, on_cookie(s, now, f));
	if (authenticated(s) && h->type != DXFP_WELCOME)
		return count_drop(s, DXFP_RX_UNSEALED); /* only the handshake is in the clear */
	if (h->type == DXFP_CLOSE) {
		/* A CLOSE may come from a peer that lost our session: only its target is checked. */
		return on_close(s, f);
	}
	if (h->type == DXFP_WELCOME) {
		if (s->cfg.role != DXFP_ROLE_INITIATOR)
			return count_drop(s, DXFP_RX_UNEXPECTED);
		return count_drop(s, on_welcome(s, now, f));
	}
	if (h->src_session != s->peer_session || h->src_epoch != s->peer_epoch)
		return count_drop(s, DXFP_RX_STALE_EPOCH);
	res = on_data(s, now, f);
	return count_drop(s, res);
}

enum dxfp_rx_result dxfp_session_receive(struct dxfp_session *s, uint64_t now, const uint8_t *buf,
					 size_t len)
{
	struct dxfp_frame f;
	enum dxfp_err err;

	if (authenticated(s) && len >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(buf))
		return receive_sealed(s, now, buf, len);
	err = dxfp_frame_parse(buf, len, s->max_frame, &f);

	if (err != DXFP_OK) {
		s->counters.frames_rx++;
		s->counters.bytes_rx += len;
		return count_drop(s, from_frame_err(err));
	}
	return dxfp_session_receive_frame(s, now, &f);
}

/* ---- timers ---- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t link_down_deadline(const struct dxfp_session *s)
{
	return s->last_progress + s->cfg.link_down_ns;
}

static uint64_t keepalive_deadline(const struct dxfp_session *s)
{
	return s->last_tx + s->cfg.keepalive_ns;
}

uint64_t dxfp_session_next_deadline(const struct dxfp_session *s)
{
	uint64_t d;

	switch (s->state) {
	case DXFP_STATE_CONNECTING:
		return min_u64(s->hello_deadline, link_down_deadline(s));
	case DXFP_STATE_ACCEPTING:
		return link_down_deadline(s);
	case DXFP_STATE_ESTABLISHED:
		d = min_u64(link_down_deadline(s), keepalive_deadline(s));
		d = min_u64(d, s->rto_deadline);
		if (s->ack_pending)
			d = min_u64(d, s->ack_deadline);
		d = min_u64(d, s->probe_deadline);
		return d;
	default:
		return DXFP_NO_DEADLINE;
	}
}

static void run_timers(struct dxfp_session *s, uint64_t now)
{
	if (s->state == DXFP_STATE_CONNECTING || s->state == DXFP_STATE_ACCEPTING) {
		if (now >= link_down_deadline(s))
			go_down(s, DXFP_DOWN_HANDSHAKE_TIMEOUT);
		return;
	}
	if (s->state != DXFP_STATE_ESTABLISHED)
		return;
	if (now >= link_down_deadline(s)) {
		/* Tell the peer, in case only the other direction failed. */
		s->close_pending = true;
		s->peer_close_reason = DXFP_CLOSE_LINK_TIMEOUT;
		go_down(s, DXFP_DOWN_NO_PROGRESS);
		return;
	}
	if (now >= s->rto_deadline) {
		/* Retransmission timeout: go back to the oldest unacknowledged TLP. */
		s->counters.rto_expiries++;
		dxfp_rtt_backoff(&s->rtt);
		start_replay(s);
		s->rto_deadline = now + s->rtt.rto;
	}
	if (s->ack_pending && now >= s->ack_deadline)
		s->ack_now = true;
	if (s->credit_blocked_since != DXFP_NO_DEADLINE && s->una == s->send_ptr &&
	    s->probe_deadline == DXFP_NO_DEADLINE)
		s->probe_deadline = s->credit_blocked_since + s->rtt.rto;
	if (now >= s->probe_deadline) {
		/* Blocked on credit with nothing in flight: ask the peer for its limits. */
		s->probe_now = true;
		s->probe_deadline = now + s->rtt.rto;
	}
	if (now >= keepalive_deadline(s))
		s->probe_now = true;
}

/* ---- building frames ---- */

static void init_header(struct dxfp_session *s, struct dxfp_header *h, uint8_t type)
{
	memset(h, 0, sizeof(*h));
	h->version = DXFP_VERSION;
	h->type = type;
	h->dst_session = s->peer_session;
	h->src_session = s->cfg.session_id;
	h->dst_epoch = s->peer_epoch;
	h->src_epoch = s->cfg.epoch;
	h->seq = s->send_ptr;
	h->ack = s->expected;
}

static void my_hello(const struct dxfp_session *s, struct dxfp_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->version_min = DXFP_VERSION;
	h->version_max = DXFP_VERSION;
	h->max_frame = (uint16_t)s->cfg.max_frame;
	h->node_id = s->cfg.node_id;
	h->replay_window = s->cfg.replay_window;
}

/*
 * Finish the frame in out: w's buffer is its head, out->piece[1..np) are runs
 * of TLP records (ntlp of them) in the replay ring; the CRC goes last.
 */
static size_t finish_frame(struct dxfp_session *s, uint64_t now, struct dxfp_writer *w,
			   struct dxfp_frame_out *out, size_t np, uint16_t ntlp)
{
	size_t len = 0;

	if (authenticated(s)) /* sealed next: the tag takes the CRC's place */
		dxfp_writer_finish_header(w, &out->piece[1], np - 1, ntlp, &len);
	else
		dxfp_writer_finish_pieces(w, &out->piece[1], np - 1, ntlp, out->crc, &len);
	out->piece[0].base = out->head;
	out->piece[0].len = w->len;
	out->piece[np].base = out->crc;
	out->piece[np].len = DXFP_CRC_SIZE;
	out->npieces = np + 1;
	out->len = len;
	s->counters.frames_tx++;
	s->counters.bytes_tx += len;
	s->last_tx = now;
	return len;
}

/* The header, HELLO and CREDIT records of a HELLO or WELCOME, into buf. */
static bool write_hello_records(struct dxfp_session *s, struct dxfp_writer *w, uint8_t type,
				uint8_t *buf, size_t cap)
{
	struct dxfp_header h;
	struct dxfp_hello hello;

	init_header(s, &h, type);
	if (type == DXFP_HELLO) {
		h.dst_session = 0;
		h.dst_epoch = 0;
		h.ack = 0;
	}
	if (dxfp_writer_init(w, buf, cap, &h) != DXFP_OK)
		return false;
	my_hello(s, &hello);
	dxfp_rx_credits_advert(&s->rx_credits, &s->advertised);
	return dxfp_writer_add_hello(w, &hello) == DXFP_OK &&
	       dxfp_writer_add_credits(w, &s->advertised) == DXFP_OK;
}

/* Authenticated: the HELLO with the handshake's first message, built at the first send. */
static bool build_auth_hello(struct dxfp_session *s, uint64_t now)
{
	const struct dxfp_session_auth *a = &s->cfg.auth;
	struct dxfp_writer w;
	size_t len = 0;

	if (!write_hello_records(s, &w, DXFP_HELLO, s->hs_frame, sizeof(s->hs_frame)) ||
	    dxfp_hello_finish(&s->hs, a->ops, a->static_secret, a->peer_public,
			      now + a->wall_clock_offset_ns, &w, &len) != DXFP_OK)
		return false;
	s->hs_len = (uint16_t)len;
	return true;
}

/* The frame in hs_frame, as it was first sent. */
static size_t resend_handshake(struct dxfp_session *s, uint64_t now, struct dxfp_frame_out *out)
{
	if (s->hs_len == 0)
		return 0;
	out->piece[0].base = s->hs_frame;
	out->piece[0].len = s->hs_len;
	out->npieces = 1;
	out->len = s->hs_len;
	s->counters.frames_tx++;
	s->counters.bytes_tx += s->hs_len;
	s->last_tx = now;
	return s->hs_len;
}

static size_t build_handshake(struct dxfp_session *s, uint64_t now, struct dxfp_frame_out *out,
			      uint8_t type)
{
	struct dxfp_writer w;

	if (authenticated(s)) {
		if (type == DXFP_HELLO && s->hs_len == 0 && !build_auth_hello(s, now))
			return 0;
		return resend_handshake(s, now, out);
	}
	if (!write_hello_records(s, &w, type, out->head, sizeof(out->head)))
		return 0;
	return finish_frame(s, now, &w, out, 1, 0);
}

/*
 * Authenticated: the frame in out's pieces, gathered into tx_sealed and sealed
 * there under the next counter; out becomes that one piece. 0 when the counter
 * is spent (the session must end: a key seals at most 2^64 - 1 frames).
 */
static size_t seal_out(struct dxfp_session *s, struct dxfp_frame_out *out)
{
	size_t i, at = 0, n;

	for (i = 0; i < out->npieces; i++) {
		memcpy(&s->tx_sealed[at], out->piece[i].base, out->piece[i].len);
		at += out->piece[i].len;
	}
	n = dxfp_frame_seal(s->cfg.auth.ops, &s->keys.send, s->seal_counter, s->tx_sealed, at,
			    s->cfg.max_frame);
	if (n == 0)
		return 0;
	s->seal_counter++;
	s->counters.bytes_tx += n - at;
	out->piece[0].base = s->tx_sealed;
	out->piece[0].len = n;
	out->npieces = 1;
	out->len = n;
	return n;
}

static size_t build_close(struct dxfp_session *s, uint64_t now, struct dxfp_frame_out *out)
{
	struct dxfp_header h;
	struct dxfp_writer w;
	struct dxfp_close c = { .reason = s->peer_close_reason,
				.version_min = DXFP_VERSION,
				.version_max = DXFP_VERSION };

	init_header(s, &h, DXFP_CLOSE);
	if (dxfp_writer_init(&w, out->head, sizeof(out->head), &h) != DXFP_OK ||
	    dxfp_writer_add_close(&w, &c) != DXFP_OK)
		return 0;
	return finish_frame(s, now, &w, out, 1, 0);
}

/*
 * Add the record at rec (rec_len bytes in the ring) to the frame's pieces:
 * it extends the last run when it follows it in the ring (it does except
 * where the ring wraps). False when no piece is left for a new run (one
 * stays for the CRC).
 */
static bool add_record(struct dxfp_frame_out *out, size_t *np, const uint8_t *rec, size_t rec_len)
{
	struct dxfp_piece *last = &out->piece[*np - 1];

	if (*np > 1 && last->base + last->len == rec) {
		last->len += rec_len;
		return true;
	}
	if (*np + 1 >= DXFP_OUT_PIECES)
		return false;
	out->piece[*np].base = rec;
	out->piece[*np].len = rec_len;
	(*np)++;
	return true;
}

static size_t build_data(struct dxfp_session *s, uint64_t now, size_t cap,
			 struct dxfp_frame_out *out)
{
	struct dxfp_header h;
	struct dxfp_writer w;
	bool any_retx = false;
	uint16_t ntlp = 0;
	size_t np = 1, room;

	init_header(s, &h, DXFP_DATA);
	if (s->nak_pending)
		h.flags |= DXFP_F_NAK;
	if (s->probe_now)
		h.flags |= DXFP_F_ACK_REQ;
	if (dxfp_writer_init(&w, out->head, sizeof(out->head), &h) != DXFP_OK)
		return 0;
	dxfp_rx_credits_advert(&s->rx_credits, &s->advertised);
	if (dxfp_writer_add_credits(&w, &s->advertised) != DXFP_OK)
		return 0;
	room = cap - w.len - DXFP_CRC_SIZE; /* cap >= DXFP_MIN_SESSION_FRAME > w.len + CRC */
	while (s->send_ptr != s->next_seq) {
		struct dxfp_replay_desc *d = desc_of(s, s->send_ptr);
		size_t rec_len = DXFP_REC_HDR_SIZE + d->len;

		if (rec_len > room || !add_record(out, &np, &s->ring[d->off], rec_len))
			break;
		room -= rec_len;
		if (dxfp_seq_before(s->send_ptr, s->replay_end) && s->replaying) {
			d->retx = 1;
			any_retx = true;
			s->counters.tlps_retx++;
		} else {
			d->tx_time = now;
			s->counters.tlps_tx++;
		}
		s->send_ptr++;
		ntlp++;
	}
	if (s->replaying && !dxfp_seq_before(s->send_ptr, s->replay_end)) {
		s->replaying = false;
		if (any_retx)
			w.buf[DXFP_OFF_FLAGS] |= DXFP_F_ACK_REQ; /* the last frame of a replay */
	}
	if (ntlp && s->rto_deadline == DXFP_NO_DEADLINE)
		s->rto_deadline = now + s->rtt.rto;
	if (!ntlp) {
		if (s->probe_now)
			s->counters.keepalives_tx++;
		else
			s->counters.acks_tx++;
	}
	if (s->nak_pending)
		s->counters.naks_tx++;
	s->nak_pending = false;
	s->ack_now = false;
	s->ack_pending = false;
	s->ack_deadline = DXFP_NO_DEADLINE;
	s->credit_now = false;
	s->probe_now = false;
	s->rx_unacked_tlps = 0;
	return finish_frame(s, now, &w, out, np, ntlp);
}

bool dxfp_session_poll_pieces(struct dxfp_session *s, uint64_t now, size_t cap,
			      struct dxfp_frame_out *out)
{
	size_t n = 0;

	out->npieces = 0;
	out->len = 0;
	if (cap > s->max_frame)
		cap = s->max_frame;
	if (authenticated(s))
		cap -= cap >= DXFP_SEAL_GROWTH ? DXFP_SEAL_GROWTH : cap; /* room for sealing */
	if (cap < DXFP_MIN_SESSION_FRAME)
		return false; /* smaller than any frame the session may need to send */
	run_timers(s, now);
	switch (s->state) {
	case DXFP_STATE_DOWN:
		if (s->close_pending) {
			s->close_pending = false;
			if (!authenticated(s) || s->keys_ready)
				n = build_close(s, now, out);
			if (n && authenticated(s))
				n = seal_out(s, out);
			wipe_keys(s);
		}
		break;
	case DXFP_STATE_CONNECTING:
		if (now >= s->hello_deadline) {
			n = build_handshake(s, now, out, DXFP_HELLO);
			s->counters.hellos_tx++;
			s->hello_deadline = now + s->hello_interval;
			s->hello_interval = min_u64(2 * s->hello_interval, s->cfg.max_rto_ns);
		}
		break;
	case DXFP_STATE_ACCEPTING:
		if (s->welcome_pending) {
			s->welcome_pending = false;
			n = build_handshake(s, now, out, DXFP_WELCOME);
			s->counters.welcomes_tx++;
		}
		break;
	case DXFP_STATE_ESTABLISHED:
		if (s->welcome_pending) {
			s->welcome_pending = false;
			n = build_handshake(s, now, out, DXFP_WELCOME);
			s->counters.welcomes_tx++;
			break;
		}
		if (s->send_ptr != s->next_seq || s->nak_pending || s->ack_now || s->credit_now ||
		    s->probe_now)
			n = build_data(s, now, cap, out);
		if (n && authenticated(s))
			n = seal_out(s, out);
		break;
	default:
		break;
	}
	return n != 0;
}

bool dxfp_session_poll(struct dxfp_session *s, uint64_t now, uint8_t *buf, size_t cap, size_t *len)
{
	struct dxfp_frame_out out;
	size_t i, at = 0;

	if (dxfp_session_poll_pieces(s, now, cap, &out)) {
		for (i = 0; i < out.npieces; i++) {
			memcpy(&buf[at], out.piece[i].base, out.piece[i].len);
			at += out.piece[i].len;
		}
	}
	*len = at;
	return at != 0;
}

/* ---- an offloaded data path ---- */

bool dxfp_session_offload_begin(struct dxfp_session *s, uint64_t now)
{
	if (s->state != DXFP_STATE_ACCEPTING)
		return false;
	s->welcome_pending = false;
	become_established(s, now);
	return true;
}

bool dxfp_session_offload_keys(const struct dxfp_session *s, struct dxfp_offload_keys *k)
{
	if (!authenticated(s) || !s->keys_ready)
		return false;
	k->send = s->keys.send;
	k->recv = s->keys.recv;
	k->send_counter = s->seal_counter;
	return true;
}

bool dxfp_session_offload_confirm(struct dxfp_session *s, const uint8_t *buf, size_t len)
{
	struct dxfp_frame f;
	uint64_t counter;
	size_t n = len < s->cfg.max_frame ? len : s->cfg.max_frame;

	if (!authenticated(s) || !s->keys_ready || s->state != DXFP_STATE_ACCEPTING ||
	    len < DXFP_HDR_SIZE || !dxfp_frame_is_sealed(buf))
		return false;
	memcpy(s->rx_sealed, buf, n);
	return dxfp_frame_open(s->cfg.auth.ops, &s->keys.recv, &s->replay, s->rx_sealed, n,
			       s->cfg.max_frame, &f, &counter) == DXFP_OK &&
	       f.hdr.type == DXFP_DATA;
}

void dxfp_session_offload_sealed(struct dxfp_session *s, uint64_t next_counter)
{
	if (next_counter > s->seal_counter)
		s->seal_counter = next_counter;
}

enum dxfp_send_result dxfp_session_offload_admit(const struct dxfp_session *s,
						 const struct dxpu_tlp *tlp)
{
	if (s->state == DXFP_STATE_DOWN)
		return DXFP_SEND_DOWN;
	if (s->state != DXFP_STATE_ESTABLISHED)
		return DXFP_SEND_NOT_READY;
	if (dxpu_tlp_validate(tlp) != DXPU_TLP_OK)
		return DXFP_SEND_INVALID;
	if (dxpu_tlp_kind_class(tlp->kind) == DXPU_TLP_CLASS_NON_POSTED &&
	    s->np_count >= s->cfg.max_np)
		return DXFP_SEND_NP_FULL;
	return DXFP_SEND_OK;
}

void dxfp_session_offload_sent(struct dxfp_session *s, const struct dxpu_tlp *tlp)
{
	s->counters.tlps_tx++;
	if (dxpu_tlp_kind_class(tlp->kind) == DXPU_TLP_CLASS_NON_POSTED &&
	    s->np_count < s->cfg.max_np)
		np_insert(s, tlp);
}

bool dxfp_session_offload_delivered(struct dxfp_session *s, const struct dxpu_tlp *tlp)
{
	int cls = (int)dxpu_tlp_kind_class(tlp->kind);

	if (!dxfp_rx_credits_accept(&s->rx_credits, cls, dxpu_tlp_payload_len(tlp))) {
		s->counters.credit_violation++;
		return false;
	}
	s->counters.tlps_delivered++;
	if (cls == DXPU_TLP_CLASS_COMPLETION)
		np_complete(s, tlp);
	return true;
}

void dxfp_session_offload_advert(const struct dxfp_session *s, struct dxfp_credits *limits)
{
	dxfp_rx_credits_advert(&s->rx_credits, limits);
}

void dxfp_session_offload_progress(struct dxfp_session *s, uint64_t now)
{
	if (s->state == DXFP_STATE_ESTABLISHED)
		s->last_progress = now;
}

uint64_t dxfp_session_offload_timers(struct dxfp_session *s, uint64_t now)
{
	if (s->state != DXFP_STATE_ESTABLISHED)
		return DXFP_NO_DEADLINE;
	if (now >= link_down_deadline(s)) {
		s->close_pending = true;
		s->peer_close_reason = DXFP_CLOSE_LINK_TIMEOUT;
		go_down(s, DXFP_DOWN_NO_PROGRESS);
		return DXFP_NO_DEADLINE;
	}
	return link_down_deadline(s);
}

size_t dxfp_write_close(uint8_t *buf, size_t cap, const struct dxfp_header *cause,
			uint32_t my_epoch, enum dxfp_close_reason reason)
{
	struct dxfp_header h;
	struct dxfp_writer w;
	struct dxfp_close c = { .reason = (uint16_t)reason,
				.version_min = DXFP_VERSION,
				.version_max = DXFP_VERSION };
	size_t len = 0;

	memset(&h, 0, sizeof(h));
	h.version = DXFP_VERSION;
	h.type = DXFP_CLOSE;
	h.dst_session = cause->src_session;
	h.dst_epoch = cause->src_epoch;
	h.src_session = cause->dst_session;
	h.src_epoch = my_epoch;
	h.ack = cause->seq;
	if (dxfp_writer_init(&w, buf, cap, &h) != DXFP_OK ||
	    dxfp_writer_add_close(&w, &c) != DXFP_OK)
		return 0;
	dxfp_writer_finish(&w, &len);
	return len;
}

/* ---- names ---- */

const char *dxfp_session_state_name(enum dxfp_session_state st)
{
	static const char *const names[DXFP_STATE_COUNT] = {
		[DXFP_STATE_IDLE] = "idle",	      [DXFP_STATE_CONNECTING] = "connecting",
		[DXFP_STATE_ACCEPTING] = "accepting", [DXFP_STATE_ESTABLISHED] = "established",
		[DXFP_STATE_DOWN] = "down",
	};

	return (unsigned int)st < DXFP_STATE_COUNT ? names[st] : "unknown";
}

const char *dxfp_down_reason_name(enum dxfp_down_reason r)
{
	static const char *const names[DXFP_DOWN_COUNT] = {
		[DXFP_DOWN_NONE] = "none",
		[DXFP_DOWN_NO_PROGRESS] = "no-progress",
		[DXFP_DOWN_HANDSHAKE_TIMEOUT] = "handshake-timeout",
		[DXFP_DOWN_PEER_CLOSED] = "peer-closed",
		[DXFP_DOWN_LOCAL_CLOSE] = "local-close",
	};

	return (unsigned int)r < DXFP_DOWN_COUNT ? names[r] : "unknown";
}

const char *dxfp_send_result_name(enum dxfp_send_result r)
{
	static const char *const names[DXFP_SEND_COUNT] = {
		[DXFP_SEND_OK] = "ok",
		[DXFP_SEND_NOT_READY] = "not-ready",
		[DXFP_SEND_DOWN] = "down",
		[DXFP_SEND_NO_CREDIT] = "no-credit",
		[DXFP_SEND_REPLAY_FULL] = "replay-full",
		[DXFP_SEND_NP_FULL] = "np-full",
		[DXFP_SEND_TOO_BIG] = "too-big",
		[DXFP_SEND_INVALID] = "invalid",
	};

	return (unsigned int)r < DXFP_SEND_COUNT ? names[r] : "unknown";
}

const char *dxfp_rx_result_name(enum dxfp_rx_result r)
{
	static const char *const names[DXFP_RX_COUNT] = {
		[DXFP_RX_OK] = "ok",
		[DXFP_RX_BAD_CRC] = "bad-crc",
		[DXFP_RX_TRUNCATED] = "truncated",
		[DXFP_RX_BAD_LENGTH] = "bad-length",
		[DXFP_RX_BAD_VERSION] = "bad-version",
		[DXFP_RX_BAD_TYPE] = "bad-type",
		[DXFP_RX_MALFORMED] = "malformed",
		[DXFP_RX_UNKNOWN_SESSION] = "unknown-session",
		[DXFP_RX_STALE_EPOCH] = "stale-epoch",
		[DXFP_RX_UNEXPECTED] = "unexpected",
		[DXFP_RX_BAD_ACK] = "bad-ack",
		[DXFP_RX_WINDOW_VIOLATION] = "window-violation",
		[DXFP_RX_CREDIT_VIOLATION] = "credit-violation",
		[DXFP_RX_DOWN] = "down",
		[DXFP_RX_BAD_TAG] = "bad-tag",
		[DXFP_RX_REPLAYED] = "replayed",
		[DXFP_RX_UNSEALED] = "unsealed",
		[DXFP_RX_NO_AUTH] = "no-auth",
	};

	return (unsigned int)r < DXFP_RX_COUNT ? names[r] : "unknown";
}

const char *dxfp_session_counter_name(size_t i)
{
	static const char *const names[] = {
		"frames-tx",	    "bytes-tx",	   "frames-rx",	      "bytes-rx",
		"tlps-tx",	    "tlps-retx",   "tlps-delivered",  "acks-tx",
		"keepalives-tx",    "naks-tx",	   "naks-rx",	      "rto-expiries",
		"hellos-tx",	    "welcomes-tx", "credit-refusals", "unexpected-cpl",
		"cookies-rx",	    "bad-crc",	   "truncated",	      "bad-length",
		"bad-version",	    "bad-type",	   "malformed",	      "unknown-session",
		"stale-epoch",	    "unexpected",  "bad-ack",	      "window-violation",
		"credit-violation", "rx-down",	   "bad-tag",	      "replayed",
		"unsealed",	    "no-auth",	   "duplicate",	      "gap",
	};

	return i < sizeof(names) / sizeof(names[0]) ? names[i] : NULL;
}
