// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_host.c - the host proxy's transaction layer (see dxpu_host.h).
 *
 * Requests the host issues live in a table indexed by their tag. A read's
 * completions must arrive in address order (PCIe requires it of a completer,
 * and the session delivers in order), so each one continues where the last
 * stopped: its Byte Count must equal the bytes still missing and, for a memory
 * read, its Lower Address the address of the next byte. Whatever does not fit
 * is dropped and counted; the request stays and may still complete or expire.
 *
 * A request is ended by copying what the callback needs, freeing its slot and
 * only then calling ops->complete, so the callback may issue again at once.
 */
#include "dxpu_host.h"

#include "tlp_build.h"

#define HOST_NO_DEADLINE (~(uint64_t)0)
#define HOST_WIN_FLAGS (DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE)

/* A set of tags, for ending requests without visiting ones issued meanwhile. */
struct tag_set {
	uint32_t bits[DXPU_HOST_MAX_TAGS / 32u];
};

static bool is_pow2_between(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1u));
}

static uint32_t be_count(uint8_t be)
{
	return (be & 1u) + ((be >> 1) & 1u) + ((be >> 2) & 1u) + ((be >> 3) & 1u);
}

/* Bytes a memory request enables (0 for a zero-length read). */
static uint32_t enabled_bytes(const struct dxpu_tlp *t)
{
	if (t->length_dw == 1)
		return be_count(t->first_be);
	return be_count(t->first_be) + be_count(t->last_be) + 4u * ((uint32_t)t->length_dw - 2u);
}

/*
 * The bytes a memory request's byte enables select, from t->addr: [*first, *first + *n). A
 * zero-length read (First BE 0, one DW) selects its DW: it is answered with the DW, as a
 * completer does.
 */
static void enabled_span(const struct dxpu_tlp *t, uint32_t *first, uint32_t *n)
{
	uint32_t len = (uint32_t)t->length_dw * 4u;
	uint8_t last = t->length_dw == 1 ? t->first_be : t->last_be;
	uint32_t lead = 0, trail = 0;

	if (!t->first_be) {
		*first = 0;
		*n = len;
		return;
	}
	while (!((t->first_be >> lead) & 1u))
		lead++;
	while (!((last >> (3u - trail)) & 1u))
		trail++;
	*first = lead;
	*n = len - lead - trail;
}

const char *dxpu_host_err_name(enum dxpu_host_err err)
{
	static const char *const names[DXPU_HOST_ERR_COUNT] = {
		[DXPU_HOST_OK] = "ok",
		[DXPU_HOST_NO_TAG] = "no-tag",
		[DXPU_HOST_BAD_REQUEST] = "bad-request",
		[DXPU_HOST_SEND_FAILED] = "send-failed",
		[DXPU_HOST_TABLE_FULL] = "table-full",
		[DXPU_HOST_OVERLAP] = "overlap",
		[DXPU_HOST_BAD_ARGUMENT] = "bad-argument",
		[DXPU_HOST_NOT_FOUND] = "not-found",
	};

	return (unsigned int)err < DXPU_HOST_ERR_COUNT ? names[err] : "unknown";
}

void dxpu_host_config_defaults(struct dxpu_host_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->requester_id = 0;
	cfg->max_tags = DXPU_HOST_MAX_TAGS;
	cfg->rcb = 64;
	cfg->max_payload = 256;
	cfg->request_timeout = 50000000; /* 50 ms */
	cfg->msi_base = 0xfee00000u;
	cfg->msi_size = 0x100000u;
}

static bool config_valid(const struct dxpu_host_config *cfg)
{
	if (cfg->max_tags < 1 || cfg->max_tags > DXPU_HOST_MAX_TAGS)
		return false;
	if ((cfg->rcb != 64 && cfg->rcb != 128) ||
	    !is_pow2_between(cfg->max_payload, 128, DXPU_TLP_MAX_PAYLOAD) ||
	    cfg->max_payload < cfg->rcb)
		return false;
	/* The MSI range must not wrap (it may end at the top of memory). */
	if (cfg->msi_size && cfg->msi_size - 1u > HOST_NO_DEADLINE - cfg->msi_base)
		return false;
	return true;
}

enum dxpu_host_err dxpu_host_set_max_payload(struct dxpu_host *h, uint32_t max_payload)
{
	struct dxpu_host_config cfg = h->cfg;

	cfg.max_payload = max_payload;
	if (!config_valid(&cfg))
		return DXPU_HOST_BAD_ARGUMENT;
	h->cfg.max_payload = max_payload;
	return DXPU_HOST_OK;
}

enum dxpu_host_err dxpu_host_init(struct dxpu_host *h, const struct dxpu_host_config *cfg,
				  const struct dxpu_host_ops *ops, void *ctx)
{
	if (!h || !cfg || !ops || !ops->send || !ops->complete || !config_valid(cfg))
		return DXPU_HOST_BAD_ARGUMENT;
	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	h->ops = *ops;
	h->ctx = ctx;
	return DXPU_HOST_OK;
}

/* ---- requests the host issues ---- */

static bool issuable_kind(uint8_t kind)
{
	return kind == DXPU_TLP_MRD || dxpu_tlp_kind_is_cfg(kind);
}

/* Data bytes a valid request of an issuable kind asks for. */
static uint32_t request_expect(const struct dxpu_tlp *t)
{
	if (t->kind == DXPU_TLP_MRD)
		return dxpu_tlp_read_byte_count(t->length_dw, t->first_be, t->last_be);
	if (t->kind == DXPU_TLP_CFGRD0 || t->kind == DXPU_TLP_CFGRD1)
		return 4;
	return 0;
}

/* The first free tag at or after next_tag, round robin; -1 when none. */
static int find_free_tag(const struct dxpu_host *h)
{
	uint32_t n = h->cfg.max_tags, i, tag;

	for (i = 0; i < n; i++) {
		tag = (h->next_tag + i) % n;
		if (!h->req[tag].in_use)
			return (int)tag;
	}
	return -1;
}

enum dxpu_host_err dxpu_host_issue(struct dxpu_host *h, struct dxpu_tlp *t, uint8_t *buf,
				   uint32_t buf_len, uint64_t cookie, uint64_t now,
				   uint16_t *tag_out)
{
	struct dxpu_tlp req;
	struct dxpu_host_request *r;
	uint32_t expect;
	uint64_t timeout = h->cfg.request_timeout;
	int tag;

	if (!t || !issuable_kind(t->kind))
		return DXPU_HOST_BAD_REQUEST;
	req = *t;
	req.requester_id = h->cfg.requester_id;
	req.tag = 0;
	if (dxpu_tlp_validate(&req) != DXPU_TLP_OK)
		return DXPU_HOST_BAD_REQUEST;
	expect = request_expect(&req);
	if (expect && (!buf || buf_len < expect))
		return DXPU_HOST_BAD_ARGUMENT;
	tag = find_free_tag(h);
	if (tag < 0) {
		h->counters.no_tag++;
		return DXPU_HOST_NO_TAG;
	}
	req.tag = (uint16_t)tag;

	/* Registered before the send: an ideal link may answer inside it. */
	r = &h->req[tag];
	memset(r, 0, sizeof(*r));
	r->in_use = 1;
	r->kind = req.kind;
	r->status = DXPU_TLP_CPL_SC;
	r->lower_addr =
		req.kind == DXPU_TLP_MRD ? dxpu_tlp_read_lower_addr(req.addr, req.first_be) : 0u;
	r->expect = expect;
	r->buf = expect ? buf : NULL;
	r->deadline =
		(!timeout || timeout > HOST_NO_DEADLINE - now) ? HOST_NO_DEADLINE : now + timeout;
	r->cookie = cookie;
	h->outstanding++;
	h->next_tag = (uint16_t)(((uint32_t)tag + 1u) % h->cfg.max_tags);

	if (!h->ops.send(h->ctx, &req)) {
		/* Nothing went out: the slot is free again, as if never taken. */
		if (r->in_use && r->cookie == cookie) {
			memset(r, 0, sizeof(*r));
			h->outstanding--;
		}
		return DXPU_HOST_SEND_FAILED;
	}
	h->counters.requests++;
	t->requester_id = req.requester_id;
	t->tag = req.tag;
	if (tag_out)
		*tag_out = req.tag;
	return DXPU_HOST_OK;
}

enum dxpu_host_err dxpu_host_post(struct dxpu_host *h, struct dxpu_tlp *t)
{
	if (!t || t->kind != DXPU_TLP_MWR)
		return DXPU_HOST_BAD_REQUEST;
	t->requester_id = h->cfg.requester_id;
	if (dxpu_tlp_validate(t) != DXPU_TLP_OK)
		return DXPU_HOST_BAD_REQUEST;
	if (!h->ops.send(h->ctx, t))
		return DXPU_HOST_SEND_FAILED;
	h->counters.posted++;
	return DXPU_HOST_OK;
}

/*
 * End request tag with status: bytes that never arrived read all-ones, the
 * slot is freed, then the caller hears of it (and may reuse the slot).
 */
static void end_request(struct dxpu_host *h, uint16_t tag, uint8_t status)
{
	struct dxpu_host_request *r = &h->req[tag];
	uint64_t cookie = r->cookie;
	uint32_t received = r->received;

	if (r->buf && received < r->expect)
		memset(r->buf + received, 0xff, r->expect - received);
	memset(r, 0, sizeof(*r));
	h->outstanding--;
	h->ops.complete(h->ctx, cookie, status, received);
}

/* A CplD with SC for a read: place its data after what arrived; false if it does not fit. */
static bool place_data(struct dxpu_host_request *r, const struct dxpu_tlp *t)
{
	uint32_t remaining = r->expect - r->received;
	uint32_t first = t->lower_addr & 3u;
	uint32_t avail = (uint32_t)t->length_dw * 4u - first;
	uint32_t carried;

	if (!r->expect || t->byte_count != remaining)
		return false;
	if (r->kind == DXPU_TLP_MRD && t->lower_addr != ((r->lower_addr + r->received) & 0x7fu))
		return false;
	carried = t->byte_count <= avail ? t->byte_count : avail;
	memcpy(r->buf + r->received, t->payload + first, carried);
	r->received += carried;
	return true;
}

static void receive_completion(struct dxpu_host *h, const struct dxpu_tlp *t)
{
	struct dxpu_host_request *r;
	uint16_t tag = t->tag;

	if (t->requester_id != h->cfg.requester_id || tag >= h->cfg.max_tags ||
	    !h->req[tag].in_use) {
		h->counters.unexpected_cpl++;
		return;
	}
	r = &h->req[tag];
	if (t->cpl_status != DXPU_TLP_CPL_SC) { /* UR, CA, CRS: the request ends */
		h->counters.completions++;
		h->counters.completed_error++;
		end_request(h, tag, t->cpl_status);
		return;
	}
	if (t->flags & DXPU_TLP_F_EP) { /* poisoned: its data must not be used */
		h->counters.completions++;
		h->counters.completed_error++;
		end_request(h, tag, DXPU_TLP_CPL_CA);
		return;
	}
	if (t->kind == DXPU_TLP_CPL) { /* SC without data: only a write's */
		if (r->expect) {
			h->counters.bad_cpl++;
			return;
		}
	} else if (!place_data(r, t)) {
		h->counters.bad_cpl++;
		return;
	}
	h->counters.completions++;
	if (r->received == r->expect) {
		h->counters.completed_ok++;
		end_request(h, tag, DXPU_TLP_CPL_SC);
	}
}

static void tag_set_outstanding(const struct dxpu_host *h, struct tag_set *s)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < h->cfg.max_tags; i++)
		if (h->req[i].in_use)
			s->bits[i / 32u] |= 1u << (i % 32u);
}

static bool tag_set_has(const struct tag_set *s, uint32_t tag)
{
	return (s->bits[tag / 32u] >> (tag % 32u)) & 1u;
}

void dxpu_host_expire(struct dxpu_host *h, uint64_t now)
{
	struct tag_set s;
	uint32_t i;

	tag_set_outstanding(h, &s);
	for (i = 0; i < h->cfg.max_tags; i++) {
		if (!tag_set_has(&s, i) || !h->req[i].in_use || h->req[i].deadline > now ||
		    h->req[i].deadline == HOST_NO_DEADLINE)
			continue;
		h->counters.timeouts++;
		end_request(h, (uint16_t)i, DXPU_TLP_CPL_UR);
	}
}

uint64_t dxpu_host_next_deadline(const struct dxpu_host *h)
{
	uint64_t best = HOST_NO_DEADLINE;
	uint32_t i;

	for (i = 0; i < h->cfg.max_tags; i++)
		if (h->req[i].in_use && h->req[i].deadline < best)
			best = h->req[i].deadline;
	return best;
}

void dxpu_host_fail_all(struct dxpu_host *h, uint8_t status)
{
	struct tag_set s;
	uint32_t i;

	/* Only the requests outstanding now: the callbacks may issue new ones. */
	tag_set_outstanding(h, &s);
	for (i = 0; i < h->cfg.max_tags; i++) {
		if (!tag_set_has(&s, i) || !h->req[i].in_use)
			continue;
		h->counters.failed++;
		end_request(h, (uint16_t)i, status);
	}
}

/* ---- requests the devices issue ---- */

/* Whether window w sorts before (device, iova): by device, then by IOVA. */
static bool win_before(const struct dxpu_host_window *w, uint16_t device, uint64_t iova)
{
	return w->device < device || (w->device == device && w->iova < iova);
}

/* The first position of win_order whose window does not sort before (device, iova). */
static uint32_t win_lower_bound(const struct dxpu_host *h, uint16_t device, uint64_t iova)
{
	uint32_t lo = 0, hi = h->win_count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2u;
		if (win_before(&h->win[h->win_order[mid]], device, iova))
			lo = mid + 1u;
		else
			hi = mid;
	}
	return lo;
}

const struct dxpu_host_window *dxpu_host_find_window(const struct dxpu_host *h, uint16_t device,
						     uint64_t addr, uint64_t len, uint16_t need)
{
	const struct dxpu_host_window *w;
	uint32_t pos = win_lower_bound(h, device, addr);
	uint64_t off;

	/* The window starting at addr, or else the last one of device starting below it. */
	if (pos < h->win_count && h->win[h->win_order[pos]].device == device &&
	    h->win[h->win_order[pos]].iova == addr)
		w = &h->win[h->win_order[pos]];
	else if (pos > 0)
		w = &h->win[h->win_order[pos - 1u]];
	else
		return NULL;
	if (w->device != device || addr < w->iova)
		return NULL;
	off = addr - w->iova;
	if (off >= w->size || len > w->size - off)
		return NULL;
	return (w->flags & need) ? w : NULL; /* windows of a device never overlap */
}

static void send_completion(struct dxpu_host *h, const struct dxpu_tlp *c)
{
	if (!h->ops.send(h->ctx, c))
		h->counters.send_failed++;
}

/* The completion without data for request t (UR) from the host's root port. */
static void send_cpl(struct dxpu_host *h, const struct dxpu_tlp *t, uint8_t status)
{
	struct dxpu_tlp c;

	dxpu_tlp_completion_for(t, h->cfg.requester_id, status, &c);
	send_completion(h, &c);
}

static void refuse_read(struct dxpu_host *h, const struct dxpu_tlp *t)
{
	h->counters.dma_refused_reads++;
	send_cpl(h, t, DXPU_TLP_CPL_UR);
}

/*
 * The window holding the bytes t's byte enables select (a mapping need not start or end on a
 * DW: a driver maps a 1-byte status, and the device writes it with one DW and First BE 0001).
 */
static const struct dxpu_host_window *find_enabled(const struct dxpu_host *h,
						   const struct dxpu_tlp *t, uint16_t need)
{
	uint32_t first, n;

	if (t->at != DXPU_TLP_AT_UNTRANSLATED)
		return NULL;
	enabled_span(t, &first, &n);
	return dxpu_host_find_window(h, t->requester_id, t->addr + first, n, need);
}

static void serve_read(struct dxpu_host *h, const struct dxpu_tlp *t)
{
	const struct dxpu_host_window *w = find_enabled(h, t, DXPU_HOST_WIN_READ);
	uint32_t len = (uint32_t)t->length_dw * 4u, first, n;
	struct dxpu_tlp_cpld_split split;
	uint8_t bounce[8] = { 0 };
	const uint8_t *src;
	struct dxpu_tlp c;

	if (!w || dxpu_tlp_cpld_split_init(&split, t, h->cfg.requester_id, h->cfg.rcb,
					   h->cfg.max_payload) != DXPU_TLP_OK) {
		refuse_read(h, t);
		return;
	}
	enabled_span(t, &first, &n);
	if (t->addr >= w->iova && len <= w->size - (t->addr - w->iova)) {
		src = w->mem + (t->addr - w->iova); /* the whole DW range is mapped */
	} else if (len <= sizeof(bounce)) {
		/* Only the selected bytes are the window's; the others read as zero. */
		memcpy(bounce + first, w->mem + (t->addr + first - w->iova), n);
		src = bounce;
	} else {
		refuse_read(h, t); /* a longer read must cover whole DWs of one window */
		return;
	}
	while (dxpu_tlp_cpld_split_next(&split, src, &c)) {
		if (!h->ops.send(h->ctx, &c)) {
			h->counters.send_failed++;
			return;
		}
	}
	h->counters.dma_reads++;
	h->counters.dma_read_bytes += enabled_bytes(t);
}

static void apply_write(struct dxpu_host *h, const struct dxpu_tlp *t)
{
	const struct dxpu_host_window *w = NULL;
	uint32_t len = (uint32_t)t->length_dw * 4u, i, first, n;
	uint8_t *dst, be;

	if (!(t->flags & DXPU_TLP_F_EP) && t->at == DXPU_TLP_AT_UNTRANSLATED) {
		if (h->cfg.msi_size && t->addr >= h->cfg.msi_base &&
		    t->addr - h->cfg.msi_base < h->cfg.msi_size) {
			h->counters.interrupts++;
			if (h->ops.interrupt)
				h->ops.interrupt(h->ctx, t->requester_id, t->addr,
						 (uint32_t)t->payload[0] |
							 ((uint32_t)t->payload[1] << 8) |
							 ((uint32_t)t->payload[2] << 16) |
							 ((uint32_t)t->payload[3] << 24));
			return;
		}
		w = find_enabled(h, t, DXPU_HOST_WIN_WRITE);
	}
	if (!w) { /* outside the device's windows, poisoned, or not an untranslated address */
		h->counters.dma_refused_writes++;
		return;
	}
	/*
	 * dst is the first selected byte: the bytes before it in its DW may lie outside the window
	 * (a mapping that does not start on a DW), and are not written.
	 */
	enabled_span(t, &first, &n);
	dst = w->mem + (t->addr + first - w->iova);
	/* The first and last DW by their byte enables, the DWs between them whole. */
	for (i = first; i < 4u; i++)
		if ((t->first_be >> i) & 1u)
			dst[i - first] = t->payload[i];
	if (len > 4u) {
		if (len > 8u)
			memcpy(dst + 4u - first, t->payload + 4, len - 8u);
		for (i = 0; i < 4u; i++) {
			be = t->last_be;
			if ((be >> i) & 1u)
				dst[len - 4u + i - first] = t->payload[len - 4u + i];
		}
	}
	h->counters.dma_writes++;
	h->counters.dma_write_bytes += enabled_bytes(t);
}

void dxpu_host_receive(struct dxpu_host *h, const struct dxpu_tlp *t, uint64_t now)
{
	if (dxpu_tlp_validate(t) != DXPU_TLP_OK) { /* not from the decoder: never trusted */
		if (dxpu_tlp_kind_is_cpl(t->kind))
			h->counters.bad_cpl++;
		else
			h->counters.unexpected++;
		return;
	}
	dxpu_host_receive_decoded(h, t, now);
}

void dxpu_host_receive_decoded(struct dxpu_host *h, const struct dxpu_tlp *t, uint64_t now)
{
	(void)now;
	switch (t->kind) {
	case DXPU_TLP_CPL:
	case DXPU_TLP_CPLD:
		receive_completion(h, t);
		return;
	case DXPU_TLP_MRD:
		serve_read(h, t);
		return;
	case DXPU_TLP_MWR:
		apply_write(h, t);
		return;
	default:
		h->counters.unexpected++;
		/* A configuration request to the host: nothing here to configure. */
		if (dxpu_tlp_kind_class(t->kind) == DXPU_TLP_CLASS_NON_POSTED)
			send_cpl(h, t, DXPU_TLP_CPL_UR);
		return;
	}
}

/* ---- DMA windows ---- */

/*
 * The windows in use fill win[0 .. win_count) (a removal moves the last one into its slot);
 * win_order holds their slots sorted by (device, iova), so a lookup, an insertion's overlap
 * check and a removal's search are binary searches, and only the order array (2 bytes an
 * entry) moves.
 */

/* Whether window w of the same device overlaps [iova, last]. */
static bool win_overlaps(const struct dxpu_host_window *w, uint64_t iova, uint64_t last)
{
	return iova <= w->iova + (w->size - 1u) && w->iova <= last;
}

enum dxpu_host_err dxpu_host_add_window(struct dxpu_host *h, uint16_t device, uint64_t iova,
					uint64_t size, uint8_t *mem, uint16_t flags)
{
	const struct dxpu_host_window *w;
	struct dxpu_host_window *slot;
	uint64_t last;
	uint32_t pos;

	if (!mem || !size || !flags || (flags & ~HOST_WIN_FLAGS) ||
	    size - 1u > HOST_NO_DEADLINE - iova)
		return DXPU_HOST_BAD_ARGUMENT;
	last = iova + (size - 1u);
	/* Windows of a device do not overlap: only the neighbours in order can overlap this one. */
	pos = win_lower_bound(h, device, iova);
	if (pos > 0) {
		w = &h->win[h->win_order[pos - 1u]];
		if (w->device == device && win_overlaps(w, iova, last))
			return DXPU_HOST_OVERLAP;
	}
	if (pos < h->win_count) {
		w = &h->win[h->win_order[pos]];
		if (w->device == device && win_overlaps(w, iova, last))
			return DXPU_HOST_OVERLAP;
	}
	if (h->win_count == DXPU_HOST_MAX_WINDOWS)
		return DXPU_HOST_TABLE_FULL;
	slot = &h->win[h->win_count];
	slot->device = device;
	slot->flags = flags;
	slot->iova = iova;
	slot->size = size;
	slot->mem = mem;
	memmove(&h->win_order[pos + 1u], &h->win_order[pos],
		(h->win_count - pos) * sizeof(h->win_order[0]));
	h->win_order[pos] = h->win_count;
	h->win_count++;
	return DXPU_HOST_OK;
}

/* Removes the window at position pos of win_order; the last slot moves into its slot. */
static void win_remove_at(struct dxpu_host *h, uint32_t pos)
{
	uint16_t slot = h->win_order[pos], moved = (uint16_t)(h->win_count - 1u);
	const struct dxpu_host_window *m;
	uint32_t at;

	memmove(&h->win_order[pos], &h->win_order[pos + 1u],
		(h->win_count - 1u - pos) * sizeof(h->win_order[0]));
	h->win_count--;
	if (slot != moved) {
		m = &h->win[moved];
		at = win_lower_bound(h, m->device, m->iova); /* (device, iova) is unique */
		h->win_order[at] = slot;
		h->win[slot] = *m;
	}
	memset(&h->win[moved], 0, sizeof(h->win[moved]));
}

enum dxpu_host_err dxpu_host_remove_window(struct dxpu_host *h, uint16_t device, uint64_t iova)
{
	uint32_t pos = win_lower_bound(h, device, iova);
	const struct dxpu_host_window *w;

	if (pos == h->win_count)
		return DXPU_HOST_NOT_FOUND;
	w = &h->win[h->win_order[pos]];
	if (w->device != device || w->iova != iova)
		return DXPU_HOST_NOT_FOUND;
	win_remove_at(h, pos);
	return DXPU_HOST_OK;
}

unsigned int dxpu_host_remove_device(struct dxpu_host *h, uint16_t device)
{
	uint32_t pos = win_lower_bound(h, device, 0);
	unsigned int n = 0;

	while (pos < h->win_count && h->win[h->win_order[pos]].device == device) {
		win_remove_at(h, pos);
		n++;
	}
	return n;
}
