/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_txq.h - the ordering queue in front of a DxFP session (docs/protocol.md, 4.6): PCIe's
 * passing rules, written once for every sender (the host path in dxpu_hostpath.h, the bridge's
 * endpoints through lib/fabric's TxQueue).
 *
 * dxfp_session_send() refuses a TLP whose class lacks credit (DXFP_SEND_NO_CREDIT) without side
 * effects. The queue keeps what was pushed, one FIFO per class (copies of the TLPs and their
 * payloads), and offers TLPs in the order they were pushed, except that
 *   - a posted TLP may pass a non-posted request or a completion that is waiting, and
 *   - a completion may pass a non-posted request that is waiting;
 * nothing passes a posted TLP, and a non-posted request passes nothing. So a posted write never
 * waits on non-posted or completion credit (PCIe's deadlock rule), and a completion never
 * passes a posted write (the producer/consumer rule: data before the flag that announces it).
 *
 * Sans-IO and pull-style: the caller asks which class goes next and tells the queue what the
 * session said:
 *
 *	struct dxpu_txq_drain d;
 *	dxpu_txq_drain_begin(q, &d);
 *	for (cls = dxpu_txq_pick(q, &d); cls >= 0; cls = dxpu_txq_pick(q, &d))
 *		if (!dxpu_txq_apply(q, &d, cls, dxfp_session_send(s, now, dxpu_txq_front(q, cls))))
 *			break;
 *	dxpu_txq_drain_end(q, &d);
 *
 * No allocation: the caller gives it dxpu_txq_mem_size() bytes, 8-byte aligned.
 */
#ifndef DXPU_CORE_DXPU_TXQ_H
#define DXPU_CORE_DXPU_TXQ_H

#include "dxfp_session.h"
#include "tlp_codec.h"

DXPU_EXTERN_C_BEGIN

#define DXPU_TXQ_CLASSES 3 /* enum dxpu_tlp_class: posted, non-posted, completion */

/* A queued TLP (internal). tlp.payload points into the class's byte ring. */
struct dxpu_txq_entry {
	struct dxpu_tlp tlp;
	uint64_t order; /* push number */
	uint32_t span;	/* bytes of the byte ring it holds (its payload and any skipped tail) */
	uint32_t user;	/* the FIFO's user's word (the host path: a peer TLP's target) */
};

/* A FIFO of TLP copies: a ring of entries and a ring of payload bytes (one per class here). */
struct dxpu_txq_fifo {
	struct dxpu_txq_entry *slot;
	uint8_t *bytes;
	uint32_t nslots, head, count;
	uint32_t nbytes, bhead, btail, bused;
};

/* Counters since init. */
struct dxpu_txq_stats {
	uint64_t pushed;
	uint64_t push_refused; /* no slot or payload space */
	uint64_t sent;
	uint64_t dropped_too_big;
	uint64_t dropped_invalid;
	uint64_t no_credit[DXPU_TXQ_CLASSES]; /* NO_CREDIT refusals per class */
	uint64_t np_full;
	uint64_t replay_full;
	uint64_t not_ready;
	uint64_t down;
	uint64_t unknown_result; /* a value outside enum dxfp_send_result */
	/* TLPs sent while an older TLP of the named class was still queued */
	uint64_t posted_passed_np;
	uint64_t posted_passed_cpl;
	uint64_t cpl_passed_np;
	uint64_t drains;
	uint64_t posted_stranded; /* drains with dxpu_txq_drain.posted_stranded: always 0 */
};

/* What one drain did. */
struct dxpu_txq_drain {
	uint32_t sent;	  /* accepted by the session */
	uint32_t dropped; /* refused TOO_BIG or INVALID, and removed */
	/*
	 * What ended the drain: DXFP_SEND_OK when no TLP was left that the rules let go (the queue
	 * is empty or every class left is blocked), else the refusal that stops every class
	 * (REPLAY_FULL, NOT_READY, DOWN, or a value the session never returns).
	 */
	int stop;
	bool blocked[DXPU_TXQ_CLASSES]; /* classes refused for this drain (NO_CREDIT, NP_FULL) */
	/*
	 * A posted TLP was left queued although no posted TLP was refused and nothing stopped the
	 * drain: a posted TLP waited on another class. Never true; tests assert it.
	 */
	bool posted_stranded;
};

/* Bytes of memory one FIFO of max_tlps TLPs and max_bytes payload bytes needs. */
size_t dxpu_tlp_fifo_mem_size(uint32_t max_tlps, uint32_t max_bytes);
/* Lays the FIFO out in mem (dxpu_tlp_fifo_mem_size() bytes, 8-byte aligned); max_tlps >= 1. */
void dxpu_tlp_fifo_init(struct dxpu_txq_fifo *f, uint32_t max_tlps, uint32_t max_bytes, void *mem);
/* Copies t and its payload in as the newest entry; NULL (nothing changed) when full. */
struct dxpu_txq_entry *dxpu_tlp_fifo_push(struct dxpu_txq_fifo *f, const struct dxpu_tlp *t,
					  uint64_t order);
/* The oldest entry; NULL when empty. */
struct dxpu_txq_entry *dxpu_tlp_fifo_front(const struct dxpu_txq_fifo *f);
void dxpu_tlp_fifo_pop(struct dxpu_txq_fifo *f);

struct dxpu_txq {
	struct dxpu_txq_fifo fifo[DXPU_TXQ_CLASSES];
	uint64_t next_order;
	struct dxpu_txq_stats stats;
};

/* Bytes of memory a queue of max_tlps TLPs and max_bytes payload bytes per class needs. */
size_t dxpu_txq_mem_size(uint32_t max_tlps, uint32_t max_bytes);
/* False when max_tlps is 0 or mem_size is too small. */
bool dxpu_txq_init(struct dxpu_txq *q, uint32_t max_tlps, uint32_t max_bytes, void *mem,
		   size_t mem_size);

/*
 * Copies t (and its dxpu_tlp_payload_len() bytes when t->payload is set) into the FIFO of its
 * class. False, nothing changed, when that FIFO has no slot or no contiguous payload space.
 */
bool dxpu_txq_push(struct dxpu_txq *q, const struct dxpu_tlp *t);

void dxpu_txq_drain_begin(struct dxpu_txq *q, struct dxpu_txq_drain *d);
/* The class whose head goes next under the ordering rules and d's blocked classes; -1: none. */
int dxpu_txq_pick(const struct dxpu_txq *q, const struct dxpu_txq_drain *d);
/* The oldest TLP of a class that is not empty. Valid until it is popped. */
const struct dxpu_tlp *dxpu_txq_front(const struct dxpu_txq *q, int cls);
/*
 * The session's answer (enum dxfp_send_result) for the head of cls: OK pops it; NO_CREDIT and
 * NP_FULL block the class for this drain; TOO_BIG and INVALID drop it (counted); REPLAY_FULL,
 * NOT_READY, DOWN (and anything else) stop the drain: false.
 */
bool dxpu_txq_apply(struct dxpu_txq *q, struct dxpu_txq_drain *d, int cls, int result);
void dxpu_txq_drain_end(struct dxpu_txq *q, struct dxpu_txq_drain *d);

/* The oldest TLP of any class (to empty the queue on link down, oldest first); -1: empty. */
int dxpu_txq_oldest(const struct dxpu_txq *q);
/* Removes the head of cls (not empty). */
void dxpu_txq_pop(struct dxpu_txq *q, int cls);

static inline uint32_t dxpu_txq_count(const struct dxpu_txq *q, int cls)
{
	return q->fifo[cls].count;
}

static inline uint32_t dxpu_txq_size(const struct dxpu_txq *q)
{
	return q->fifo[0].count + q->fifo[1].count + q->fifo[2].count;
}

static inline uint32_t dxpu_txq_bytes_used(const struct dxpu_txq *q, int cls)
{
	return q->fifo[cls].bused;
}

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_TXQ_H */
