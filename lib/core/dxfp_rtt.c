// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_rtt.c - RFC 6298 retransmission timer arithmetic (see dxfp_rtt.h).
 */
#include "dxfp_rtt.h"

static uint64_t clamp_rto(const struct dxfp_rtt *r, uint64_t rto)
{
	if (rto < r->min_rto)
		return r->min_rto;
	if (rto > r->max_rto)
		return r->max_rto;
	return rto;
}

void dxfp_rtt_init(struct dxfp_rtt *r, uint64_t initial_rto, uint64_t min_rto, uint64_t max_rto,
		   uint64_t granularity)
{
	memset(r, 0, sizeof(*r));
	r->min_rto = min_rto;
	r->max_rto = max_rto < min_rto ? min_rto : max_rto;
	r->granularity = granularity;
	r->rto = clamp_rto(r, initial_rto);
}

void dxfp_rtt_sample(struct dxfp_rtt *r, uint64_t rtt)
{
	uint64_t var4;

	if (!r->has_sample) {
		/* (2.2) SRTT <- R, RTTVAR <- R/2 */
		r->srtt = rtt;
		r->rttvar = rtt / 2;
		r->has_sample = true;
	} else {
		/* (2.3) RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R|, then SRTT <- 7/8 SRTT + 1/8 R */
		uint64_t err = r->srtt > rtt ? r->srtt - rtt : rtt - r->srtt;

		r->rttvar = r->rttvar - r->rttvar / 4 + err / 4;
		r->srtt = r->srtt - r->srtt / 8 + rtt / 8;
	}
	/* RTO <- SRTT + max(G, 4 RTTVAR), within [min_rto, max_rto] */
	var4 = 4 * r->rttvar;
	r->rto = clamp_rto(r, r->srtt + (var4 > r->granularity ? var4 : r->granularity));
	r->backoffs = 0;
}

void dxfp_rtt_backoff(struct dxfp_rtt *r)
{
	/* (5.5) RTO <- RTO * 2, bounded by max_rto */
	r->rto = r->rto > r->max_rto / 2 ? r->max_rto : r->rto * 2;
	r->backoffs++;
}
