/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_host.h - the host proxy's transaction layer, sans-IO: what every host
 * proxy (dxpu.ko, the userspace proxy in lib/host) does with the TLPs of one
 * session to a bridge (docs/host-proxy.md). No I/O, no locks, no clock, no
 * allocation: the caller owns the struct, passes the time, and serialises the
 * calls (dxpu.ko under a spinlock, userspace under a mutex).
 *
 * Requests the host issues (configuration, memory reads, non-posted writes):
 *   tags from a table of up to 256; completions matched by tag and
 *   reassembled into the caller's buffer (a read may take many); a deadline
 *   per request, after which it completes with UR and its buffer all-ones; a
 *   completion for no outstanding tag is dropped and counted.
 * Requests the devices issue (DMA):
 *   served only inside a DMA window registered for that device (by its
 *   Requester ID, the host BDF it is presented at): reads answered with CplDs
 *   split at the RCB and MPS, writes applied with their byte enables. Anything
 *   else: UR for a read, a counted drop for a write. A write into the MSI range
 *   is an interrupt, reported through ops->interrupt and not stored.
 */
#ifndef DXPU_CORE_DXPU_HOST_H
#define DXPU_CORE_DXPU_HOST_H

#include "tlp_codec.h"

DXPU_EXTERN_C_BEGIN

#define DXPU_HOST_MAX_TAGS 256u
/*
 * DMA windows per host (a path to one bridge, for all its devices): one per buffer a DMA API
 * maps (docs/kernel-module.md, "The DMA API"). Kept sorted, so finding a TLP's window is a
 * binary search.
 */
#define DXPU_HOST_MAX_WINDOWS 4096u

enum dxpu_host_err {
	DXPU_HOST_OK = 0,
	DXPU_HOST_NO_TAG,	/* every tag is outstanding */
	DXPU_HOST_BAD_REQUEST,	/* not a request this layer issues, or fails validation */
	DXPU_HOST_SEND_FAILED,	/* ops->send refused it (queue full, session down) */
	DXPU_HOST_TABLE_FULL,	/* no free DMA window slot */
	DXPU_HOST_OVERLAP,	/* the window overlaps one of the same device */
	DXPU_HOST_BAD_ARGUMENT, /* zero size, a wrapping range, a null pointer */
	DXPU_HOST_NOT_FOUND,	/* no such window */
	DXPU_HOST_ERR_COUNT
};

const char *dxpu_host_err_name(enum dxpu_host_err err);

/* A window's access rights. */
#define DXPU_HOST_WIN_READ 0x1u	 /* the device may read it */
#define DXPU_HOST_WIN_WRITE 0x2u /* the device may write it */

struct dxpu_host_window {
	uint16_t device; /* the device's Requester ID (host BDF) */
	uint16_t flags;	 /* DXPU_HOST_WIN_*; 0: slot free */
	uint64_t iova;	 /* the bus address the device uses */
	uint64_t size;
	uint8_t *mem; /* host memory: iova maps to mem[0] */
};

struct dxpu_host_request {
	uint8_t in_use;
	uint8_t kind;	    /* DXPU_TLP_* of the request */
	uint8_t status;	    /* DXPU_TLP_CPL_*: the first non-SC status seen, else SC */
	uint8_t lower_addr; /* MRd: Lower Address of its first completion */
	uint32_t expect;    /* data bytes the request asks for (0: none) */
	uint32_t received;  /* data bytes completed so far */
	uint8_t *buf;	    /* expect bytes, the caller's; NULL when expect is 0 */
	uint64_t deadline;
	uint64_t cookie; /* the caller's */
};

struct dxpu_host_config {
	/* the host's root port: Requester ID of its requests, Completer ID of its completions */
	uint16_t requester_id;
	uint16_t max_tags;	  /* 1..256: tags 0..max_tags-1 */
	uint32_t rcb;		  /* 64 or 128: the host's Read Completion Boundary */
	uint32_t max_payload;	  /* 128..4096: the most data one of its CplDs carries */
	uint64_t request_timeout; /* ns from issue to UR; 0: never */
	uint64_t msi_base;	  /* writes to [msi_base, msi_base + msi_size) are interrupts */
	uint64_t msi_size;
};

void dxpu_host_config_defaults(struct dxpu_host_config *cfg);

struct dxpu_host_counters {
	uint64_t requests;	  /* non-posted requests issued */
	uint64_t posted;	  /* posted writes sent */
	uint64_t completions;	  /* completions matched to a request */
	uint64_t completed_ok;	  /* requests ended with SC */
	uint64_t completed_error; /* requests ended with UR/CA/CRS (from the device) */
	uint64_t timeouts;	  /* requests ended by their deadline */
	uint64_t failed;	  /* requests ended by dxpu_host_fail_all */
	uint64_t unexpected_cpl;  /* a completion for no outstanding tag (late, unknown) */
	uint64_t bad_cpl;	  /* a completion that does not fit its request: dropped */
	uint64_t no_tag;	  /* issue refused: every tag outstanding */
	uint64_t dma_reads;	  /* device reads served */
	uint64_t dma_read_bytes;
	uint64_t dma_writes; /* device writes applied */
	uint64_t dma_write_bytes;
	uint64_t dma_refused_reads;  /* answered UR: outside the device's windows */
	uint64_t dma_refused_writes; /* dropped: outside the device's windows */
	uint64_t interrupts;	     /* writes into the MSI range */
	uint64_t unexpected;	     /* TLPs of other kinds (messages, config to the host...) */
	uint64_t send_failed;	     /* a completion ops->send refused (the device will time out) */
};

struct dxpu_host_ops {
	/* Send one TLP (payload valid during the call only). False: not queued.
	 * It may deliver the answer at once (dxpu_host_receive from inside it):
	 * a request is registered before it is sent.
	 */
	bool (*send)(void *ctx, const struct dxpu_tlp *t);
	/* A request ended: status DXPU_TLP_CPL_* (UR after a timeout or fail_all);
	 * received: data bytes that arrived (a read's buffer is all-ones where none did).
	 */
	void (*complete)(void *ctx, uint64_t cookie, uint8_t status, uint32_t received);
	/* A device wrote data to MSI address addr. May be NULL. */
	void (*interrupt)(void *ctx, uint16_t device, uint64_t addr, uint32_t data);
};

struct dxpu_host {
	struct dxpu_host_config cfg;
	struct dxpu_host_ops ops;
	void *ctx;
	struct dxpu_host_counters counters;
	uint16_t next_tag;
	uint16_t outstanding;
	struct dxpu_host_request req[DXPU_HOST_MAX_TAGS];
	/* The windows in use are win[0 .. win_count); win_order lists them by (device, iova). */
	uint16_t win_count;
	uint16_t win_order[DXPU_HOST_MAX_WINDOWS];
	struct dxpu_host_window win[DXPU_HOST_MAX_WINDOWS];
};

/* BAD_ARGUMENT for a configuration out of range or ops without send/complete. */
enum dxpu_host_err dxpu_host_init(struct dxpu_host *h, const struct dxpu_host_config *cfg,
				  const struct dxpu_host_ops *ops, void *ctx);

/*
 * The most data one of its completions carries from now on (a path's limit learnt once its
 * session is up: what a frame of the negotiated size holds). BAD_ARGUMENT, and nothing
 * changed, unless a power of two in 128..4096 and at least the RCB.
 */
enum dxpu_host_err dxpu_host_set_max_payload(struct dxpu_host *h, uint32_t max_payload);

/*
 * Issue a non-posted request: t's kind (CfgRd0/CfgWr0/CfgRd1/CfgWr1/MRd/MRd
 * locked excluded) and fields; Requester ID and tag are set here. A request
 * with data to return writes it to buf, which must hold buf_len >= the bytes
 * asked for and stay valid until ops->complete for this cookie. *tag_out
 * (may be NULL) gets the tag. On any error nothing was sent and no tag is held.
 */
enum dxpu_host_err dxpu_host_issue(struct dxpu_host *h, struct dxpu_tlp *t, uint8_t *buf,
				   uint32_t buf_len, uint64_t cookie, uint64_t now,
				   uint16_t *tag_out);

/* Send a posted memory write (Requester ID set here). */
enum dxpu_host_err dxpu_host_post(struct dxpu_host *h, struct dxpu_tlp *t);

/* A TLP from the session (in order). Completions end requests (a poisoned one
 * with CA); device memory requests are served or refused; anything else is
 * counted (a non-posted one answered UR).
 */
void dxpu_host_receive(struct dxpu_host *h, const struct dxpu_tlp *t, uint64_t now);
/* The same for a TLP the decoder produced (it passed dxpu_tlp_validate there): not checked again. */
void dxpu_host_receive_decoded(struct dxpu_host *h, const struct dxpu_tlp *t, uint64_t now);

/* End every request whose deadline is <= now with UR (UINT64_MAX: none). */
void dxpu_host_expire(struct dxpu_host *h, uint64_t now);
/* The earliest deadline of an outstanding request; UINT64_MAX when none. */
uint64_t dxpu_host_next_deadline(const struct dxpu_host *h);
/* End every outstanding request with status (the session went down). */
void dxpu_host_fail_all(struct dxpu_host *h, uint8_t status);

/* DMA windows. */
enum dxpu_host_err dxpu_host_add_window(struct dxpu_host *h, uint16_t device, uint64_t iova,
					uint64_t size, uint8_t *mem, uint16_t flags);
enum dxpu_host_err dxpu_host_remove_window(struct dxpu_host *h, uint16_t device, uint64_t iova);
/* Remove every window of a device; returns how many. */
unsigned int dxpu_host_remove_device(struct dxpu_host *h, uint16_t device);
/*
 * The window of device holding [addr, addr + len) whole, if it grants every right in need;
 * NULL otherwise. What a device's DMA is served against (O(log n)).
 */
const struct dxpu_host_window *dxpu_host_find_window(const struct dxpu_host *h, uint16_t device,
						     uint64_t addr, uint64_t len, uint16_t need);

static inline const struct dxpu_host_counters *dxpu_host_get_counters(const struct dxpu_host *h)
{
	return &h->counters;
}

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_HOST_H */
