/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_credit.h - DxFP end-to-end credits per flow-control class
 * (docs/protocol.md, 4.6), kept as PCIe keeps link credits: cumulative
 * counters modulo 2^32, compared with serial-number arithmetic, so a lost or
 * reordered CREDIT record never loses or invents credit. Header credits count
 * TLPs; data credits count 16-byte units of payload. Classes are indexed by
 * enum dxpu_tlp_class.
 */
#ifndef DXPU_CORE_DXFP_CREDIT_H
#define DXPU_CORE_DXFP_CREDIT_H

#include "dxfp_frame.h"

DXPU_EXTERN_C_BEGIN

#define DXFP_CREDIT_UNIT 16u
#define DXFP_CLASSES 3

/* Data credits a payload of n bytes takes. */
static inline uint32_t dxfp_data_credits(uint32_t payload_bytes)
{
	return (payload_bytes + DXFP_CREDIT_UNIT - 1u) / DXFP_CREDIT_UNIT;
}

/* The sending side: what the peer has granted and what this end has used. */
struct dxfp_tx_credits {
	struct dxfp_credits limit; /* latest limits the peer advertised */
	uint32_t hdr_used[DXFP_CLASSES];
	uint32_t data_used[DXFP_CLASSES];
};

/* Before the peer's first CREDIT record nothing may be sent. */
void dxfp_tx_credits_init(struct dxfp_tx_credits *c);

/* Take an advertisement; per counter, only a limit ahead of the current one counts. */
void dxfp_tx_credits_update(struct dxfp_tx_credits *c, const struct dxfp_credits *adv);

/* Whether one TLP of this class with payload_bytes of data fits in the credit left. */
bool dxfp_tx_credits_allow(const struct dxfp_tx_credits *c, int cls, uint32_t payload_bytes);

/* Count a TLP as sent (call only after allow). */
void dxfp_tx_credits_consume(struct dxfp_tx_credits *c, int cls, uint32_t payload_bytes);

/* The receiving side: the buffers this end has per class, and their use. */
struct dxfp_rx_credits {
	uint32_t hdr_cap[DXFP_CLASSES];	 /* TLPs this end can hold per class */
	uint32_t data_cap[DXFP_CLASSES]; /* 16-byte units it can hold per class */
	uint32_t hdr_rcvd[DXFP_CLASSES];
	uint32_t data_rcvd[DXFP_CLASSES];
	uint32_t hdr_freed[DXFP_CLASSES];
	uint32_t data_freed[DXFP_CLASSES];
};

void dxfp_rx_credits_init(struct dxfp_rx_credits *c, const uint32_t hdr_cap[DXFP_CLASSES],
			  const uint32_t data_cap[DXFP_CLASSES]);

/*
 * A TLP arrived. False, and nothing counted, when it exceeds what this end
 * advertised: a credit violation by the peer.
 */
bool dxfp_rx_credits_accept(struct dxfp_rx_credits *c, int cls, uint32_t payload_bytes);

/* The user took a TLP of this class: its buffer is free again. */
void dxfp_rx_credits_release(struct dxfp_rx_credits *c, int cls, uint32_t payload_bytes);

/* The limits to advertise now: what was freed plus the buffers. */
void dxfp_rx_credits_advert(const struct dxfp_rx_credits *c, struct dxfp_credits *out);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_CREDIT_H */
