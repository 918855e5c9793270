/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_rtt.h - round-trip time estimate and retransmission timeout for a DxFP
 * session, as RFC 6298 computes them, in integer nanoseconds (no floating
 * point: this runs in the kernel too). The caller applies Karn's rule: it
 * samples only frames that were not retransmitted.
 */
#ifndef DXPU_CORE_DXFP_RTT_H
#define DXPU_CORE_DXFP_RTT_H

#include <dxpu/compat.h>

DXPU_EXTERN_C_BEGIN

struct dxfp_rtt {
	uint64_t srtt;	 /* smoothed RTT, 0 before the first sample */
	uint64_t rttvar; /* RTT variation */
	uint64_t rto;	 /* current timeout, backoff included */
	uint64_t min_rto;
	uint64_t max_rto;
	uint64_t granularity; /* G of RFC 6298: the timer's resolution */
	uint32_t backoffs;    /* expiries since the last sample */
	bool has_sample;
};

/* initial_rto is used until the first sample; min_rto <= initial_rto <= max_rto. */
void dxfp_rtt_init(struct dxfp_rtt *r, uint64_t initial_rto, uint64_t min_rto, uint64_t max_rto,
		   uint64_t granularity);

/* A measured round trip (ns): updates SRTT, RTTVAR and RTO, and ends any backoff. */
void dxfp_rtt_sample(struct dxfp_rtt *r, uint64_t rtt);

/* The retransmission timer expired: RTO doubles, up to max_rto. */
void dxfp_rtt_backoff(struct dxfp_rtt *r);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_RTT_H */
