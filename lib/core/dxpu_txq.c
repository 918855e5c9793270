// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_txq.c - the ordering queue in front of a DxFP session (see dxpu_txq.h).
 */
#include "dxpu_txq.h"

#define TXQ_NONE (~0ull) /* the order of an empty class: later than any push */
#define TXQ_P DXPU_TLP_CLASS_POSTED
#define TXQ_NP DXPU_TLP_CLASS_NON_POSTED
#define TXQ_CPL DXPU_TLP_CLASS_COMPLETION

/* What a copied payload of no bytes points at: not NULL, so the TLP keeps its shape. */
static const uint8_t txq_empty_payload[1];

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

size_t dxpu_tlp_fifo_mem_size(uint32_t max_tlps, uint32_t max_bytes)
{
	return align8((size_t)max_tlps * sizeof(struct dxpu_txq_entry)) + align8(max_bytes);
}

void dxpu_tlp_fifo_init(struct dxpu_txq_fifo *f, uint32_t max_tlps, uint32_t max_bytes, void *mem)
{
	memset(f, 0, sizeof(*f));
	f->slot = mem;
	f->bytes = (uint8_t *)mem + align8((size_t)max_tlps * sizeof(struct dxpu_txq_entry));
	f->nslots = max_tlps;
	f->nbytes = max_bytes;
}

size_t dxpu_txq_mem_size(uint32_t max_tlps, uint32_t max_bytes)
{
	return max_tlps ? DXPU_TXQ_CLASSES * dxpu_tlp_fifo_mem_size(max_tlps, max_bytes) : 0;
}

bool dxpu_txq_init(struct dxpu_txq *q, uint32_t max_tlps, uint32_t max_bytes, void *mem,
		   size_t mem_size)
{
	size_t per_class = dxpu_tlp_fifo_mem_size(max_tlps, max_bytes);
	int cls;

	if (!max_tlps || !mem || mem_size < dxpu_txq_mem_size(max_tlps, max_bytes))
		return false;
	memset(q, 0, sizeof(*q));
	for (cls = 0; cls < DXPU_TXQ_CLASSES; cls++)
		dxpu_tlp_fifo_init(&q->fifo[cls], max_tlps, max_bytes,
				   (uint8_t *)mem + (size_t)cls * per_class);
	return true;
}

/*
 * n contiguous payload bytes at the byte ring's tail: their offset, and in *span the bytes of
 * the ring they hold (n, plus the end of the ring skipped to keep them contiguous). False when
 * they are not free.
 */
static bool fifo_take(struct dxpu_txq_fifo *f, uint32_t n, uint32_t *at, uint32_t *span)
{
	*at = 0;
	*span = 0;
	if (!n)
		return true;
	if (n > f->nbytes - f->bused)
		return false;
	if (!f->bused)
		f->bhead = f->btail = 0; /* empty: start over, so any n <= nbytes fits */
	*at = f->btail;
	*span = n;
	if (f->btail >= f->bhead) {
		/* Free: [tail, end) and [0, head). What does not fit before the end starts at 0. */
		if (f->nbytes - f->btail < n) {
			if (f->bhead < n)
				return false;
			*at = 0;
			*span = (f->nbytes - f->btail) + n;
		}
	} else if (f->bhead - f->btail < n) { /* free: [tail, head) */
		return false;
	}
	f->btail = *at + n;
	if (f->btail == f->nbytes)
		f->btail = 0;
	f->bused += *span;
	return true;
}

struct dxpu_txq_entry *dxpu_tlp_fifo_push(struct dxpu_txq_fifo *f, const struct dxpu_tlp *t,
					  uint64_t order)
{
	uint32_t len = t->payload ? dxpu_tlp_payload_len(t) : 0;
	struct dxpu_txq_entry *e;
	uint32_t at, span;

	if (f->count == f->nslots || !fifo_take(f, len, &at, &span))
		return NULL;
	e = &f->slot[(f->head + f->count) % f->nslots];
	e->tlp = *t;
	e->order = order;
	e->span = span;
	e->user = 0;
	if (t->payload) {
		if (len)
			memcpy(f->bytes + at, t->payload, len);
		e->tlp.payload = len ? f->bytes + at : txq_empty_payload;
	}
	f->count++;
	return e;
}

struct dxpu_txq_entry *dxpu_tlp_fifo_front(const struct dxpu_txq_fifo *f)
{
	return f->count ? &f->slot[f->head] : NULL;
}

void dxpu_tlp_fifo_pop(struct dxpu_txq_fifo *f)
{
	uint32_t span = f->slot[f->head].span;

	if (span) {
		f->bused -= span;
		f->bhead = (f->bhead + span) % f->nbytes;
	}
	f->head = (f->head + 1) % f->nslots;
	f->count--;
}

bool dxpu_txq_push(struct dxpu_txq *q, const struct dxpu_tlp *t)
{
	int cls = (int)dxpu_tlp_kind_class(t->kind);

	if (cls < 0 || cls >= DXPU_TXQ_CLASSES ||
	    !dxpu_tlp_fifo_push(&q->fifo[cls], t, q->next_order)) {
		q->stats.push_refused++;
		return false;
	}
	q->next_order++;
	q->stats.pushed++;
	return true;
}

static uint64_t head_order(const struct dxpu_txq *q, int cls)
{
	const struct dxpu_txq_fifo *f = &q->fifo[cls];

	return f->count ? f->slot[f->head].order : TXQ_NONE;
}

void dxpu_txq_drain_begin(struct dxpu_txq *q, struct dxpu_txq_drain *d)
{
	memset(d, 0, sizeof(*d));
	d->stop = DXFP_SEND_OK;
	q->stats.drains++;
}

int dxpu_txq_pick(const struct dxpu_txq *q, const struct dxpu_txq_drain *d)
{
	uint64_t order[DXPU_TXQ_CLASSES], best_order = TXQ_NONE;
	bool may[DXPU_TXQ_CLASSES];
	int cls, best = -1;

	order[TXQ_P] = head_order(q, TXQ_P);
	order[TXQ_NP] = head_order(q, TXQ_NP);
	order[TXQ_CPL] = head_order(q, TXQ_CPL);
	/*
	 * Which heads the rules let go, whether or not an older head of another class is blocked:
	 * posted always; a completion unless an older posted TLP waits; a non-posted request
	 * unless an older posted TLP or completion waits (an empty class is never "older").
	 */
	may[TXQ_P] = order[TXQ_P] != TXQ_NONE;
	may[TXQ_CPL] = order[TXQ_CPL] != TXQ_NONE && order[TXQ_P] > order[TXQ_CPL];
	may[TXQ_NP] = order[TXQ_NP] != TXQ_NONE && order[TXQ_P] > order[TXQ_NP] &&
		      order[TXQ_CPL] > order[TXQ_NP];
	for (cls = 0; cls < DXPU_TXQ_CLASSES; cls++) {
		if (may[cls] && !d->blocked[cls] && order[cls] < best_order) {
			best = cls;
			best_order = order[cls];
		}
	}
	return best;
}

const struct dxpu_tlp *dxpu_txq_front(const struct dxpu_txq *q, int cls)
{
	const struct dxpu_txq_fifo *f = &q->fifo[cls];

	return &f->slot[f->head].tlp;
}

void dxpu_txq_pop(struct dxpu_txq *q, int cls)
{
	dxpu_tlp_fifo_pop(&q->fifo[cls]);
}

static void count_passing(struct dxpu_txq *q, int cls)
{
	uint64_t order = head_order(q, cls);

	if (cls == TXQ_P) {
		if (head_order(q, TXQ_NP) < order)
			q->stats.posted_passed_np++;
		if (head_order(q, TXQ_CPL) < order)
			q->stats.posted_passed_cpl++;
	} else if (cls == TXQ_CPL && head_order(q, TXQ_NP) < order) {
		q->stats.cpl_passed_np++;
	}
}

bool dxpu_txq_apply(struct dxpu_txq *q, struct dxpu_txq_drain *d, int cls, int result)
{
	switch (result) {
	case DXFP_SEND_OK:
		count_passing(q, cls);
		dxpu_txq_pop(q, cls);
		d->sent++;
		q->stats.sent++;
		return true;
	case DXFP_SEND_NO_CREDIT:
		q->stats.no_credit[cls]++;
		d->blocked[cls] = true;
		return true;
	case DXFP_SEND_NP_FULL:
		/*
		 * Only non-posted requests take request-table entries; blocking the class that was
		 * refused (not always non-posted) keeps the drain finite whatever the sender says.
		 */
		q->stats.np_full++;
		d->blocked[cls] = true;
		return true;
	case DXFP_SEND_TOO_BIG:
	case DXFP_SEND_INVALID:
		if (result == DXFP_SEND_TOO_BIG)
			q->stats.dropped_too_big++;
		else
			q->stats.dropped_invalid++;
		dxpu_txq_pop(q, cls);
		d->dropped++;
		return true;
	case DXFP_SEND_REPLAY_FULL:
		q->stats.replay_full++;
		break;
	case DXFP_SEND_NOT_READY:
		q->stats.not_ready++;
		break;
	case DXFP_SEND_DOWN:
		q->stats.down++;
		break;
	default:
		q->stats.unknown_result++;
		break;
	}
	d->stop = result;
	return false;
}

void dxpu_txq_drain_end(struct dxpu_txq *q, struct dxpu_txq_drain *d)
{
	if (d->stop == DXFP_SEND_OK && !d->blocked[TXQ_P] && q->fifo[TXQ_P].count) {
		d->posted_stranded = true;
		q->stats.posted_stranded++;
	}
}

int dxpu_txq_oldest(const struct dxpu_txq *q)
{
	uint64_t best_order = TXQ_NONE;
	int cls, best = -1;

	for (cls = 0; cls < DXPU_TXQ_CLASSES; cls++) {
		if (head_order(q, cls) < best_order) {
			best = cls;
			best_order = head_order(q, cls);
		}
	}
	return best;
}
