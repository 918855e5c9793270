// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_credit.c - DxFP end-to-end credit accounting (see dxfp_credit.h).
 */
#include "dxfp_credit.h"
#include "dxfp_seq.h"

void dxfp_tx_credits_init(struct dxfp_tx_credits *c)
{
	memset(c, 0, sizeof(*c));
}

void dxfp_tx_credits_update(struct dxfp_tx_credits *c, const struct dxfp_credits *adv)
{
	int i;

	for (i = 0; i < DXFP_CLASSES; i++) {
		if (dxfp_seq_before(c->limit.hdr[i], adv->hdr[i]))
			c->limit.hdr[i] = adv->hdr[i];
		if (dxfp_seq_before(c->limit.data[i], adv->data[i]))
			c->limit.data[i] = adv->data[i];
	}
}

bool dxfp_tx_credits_allow(const struct dxfp_tx_credits *c, int cls, uint32_t payload_bytes)
{
	if (cls < 0 || cls >= DXFP_CLASSES)
		return false;
	return dxfp_seq_before_eq(c->hdr_used[cls] + 1u, c->limit.hdr[cls]) &&
	       dxfp_seq_before_eq(c->data_used[cls] + dxfp_data_credits(payload_bytes),
				  c->limit.data[cls]);
}

void dxfp_tx_credits_consume(struct dxfp_tx_credits *c, int cls, uint32_t payload_bytes)
{
	if (cls < 0 || cls >= DXFP_CLASSES)
		return;
	c->hdr_used[cls] += 1u;
	c->data_used[cls] += dxfp_data_credits(payload_bytes);
}

void dxfp_rx_credits_init(struct dxfp_rx_credits *c, const uint32_t hdr_cap[DXFP_CLASSES],
			  const uint32_t data_cap[DXFP_CLASSES])
{
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < DXFP_CLASSES; i++) {
		c->hdr_cap[i] = hdr_cap[i];
		c->data_cap[i] = data_cap[i];
	}
}

bool dxfp_rx_credits_accept(struct dxfp_rx_credits *c, int cls, uint32_t payload_bytes)
{
	uint32_t hdr, data;

	if (cls < 0 || cls >= DXFP_CLASSES)
		return false;
	hdr = c->hdr_rcvd[cls] + 1u;
	data = c->data_rcvd[cls] + dxfp_data_credits(payload_bytes);
	if (!dxfp_seq_before_eq(hdr, c->hdr_freed[cls] + c->hdr_cap[cls]) ||
	    !dxfp_seq_before_eq(data, c->data_freed[cls] + c->data_cap[cls]))
		return false;
	c->hdr_rcvd[cls] = hdr;
	c->data_rcvd[cls] = data;
	return true;
}

void dxfp_rx_credits_release(struct dxfp_rx_credits *c, int cls, uint32_t payload_bytes)
{
	if (cls < 0 || cls >= DXFP_CLASSES)
		return;
	c->hdr_freed[cls] += 1u;
	c->data_freed[cls] += dxfp_data_credits(payload_bytes);
}

void dxfp_rx_credits_advert(const struct dxfp_rx_credits *c, struct dxfp_credits *out)
{
	int i;

	for (i = 0; i < DXFP_CLASSES; i++) {
		out->hdr[i] = c->hdr_freed[i] + c->hdr_cap[i];
		out->data[i] = c->data_freed[i] + c->data_cap[i];
	}
}
