// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_peer.c - peer-to-peer routing between attached devices (see dxpu_peer.h).
 */
#include "dxpu_peer.h"

static bool in_window(const struct dxpu_peer *p, uint64_t addr, uint64_t len)
{
	return p->in_use && len <= p->window_size && addr >= p->window &&
	       addr - p->window <= p->window_size - len;
}

int dxpu_peer_route(const struct dxpu_peer *table, size_t n, const struct dxpu_tlp *t,
		    uint16_t host_requester_id, int from)
{
	int target = DXPU_PEER_NONE;
	size_t i;

	if (t->kind == DXPU_TLP_MRD || t->kind == DXPU_TLP_MWR) {
		uint64_t len = (uint64_t)t->length_dw * 4u;

		for (i = 0; i < n; i++)
			if ((int)i != from && in_window(&table[i], t->addr, len))
				return (int)i;
		return DXPU_PEER_NONE;
	}
	if ((t->kind != DXPU_TLP_CPL && t->kind != DXPU_TLP_CPLD) ||
	    t->requester_id == host_requester_id)
		return DXPU_PEER_NONE;
	/* The answer to a peer's read: for the one device presented at that Requester ID. */
	for (i = 0; i < n; i++) {
		if (!table[i].in_use || table[i].bdf != t->requester_id)
			continue;
		if (target != DXPU_PEER_NONE)
			return DXPU_PEER_NONE; /* ambiguous */
		target = (int)i;
	}
	return target == from ? DXPU_PEER_NONE : target;
}
