/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_peer.h - peer-to-peer routing between the devices a host has attached, as a root
 * complex routes between its ports (docs/host-proxy.md, "Peer to peer"): a device's memory
 * request whose range lies inside another device's memory window goes to that device; a
 * completion whose Requester ID is an attached device's (not the host's own) goes back to
 * that device. Sans-IO: the caller keeps the table and sends the TLP where this says.
 */
#ifndef DXPU_CORE_DXPU_PEER_H
#define DXPU_CORE_DXPU_PEER_H

#include "tlp_codec.h"

DXPU_EXTERN_C_BEGIN

struct dxpu_peer {
	uint64_t window;      /* bus address of its memory window (a BAR) on this host */
	uint64_t window_size; /* 0: no window (requests never route to it) */
	uint16_t bdf;	      /* its Requester ID on this host */
	uint8_t in_use;	      /* 0: a free slot of the table */
};

#define DXPU_PEER_NONE (-1)

/*
 * The table index t goes to, or DXPU_PEER_NONE: not a peer's (the host's own transaction
 * layer takes it), or a completion whose Requester ID two attached devices share (devices
 * behind different bridges need distinct BDFs to be peers). host_requester_id: the host's
 * own Requester ID (its requests' completions are not routed). from: the table index of the
 * device that sent t, never its own target (-1 when unknown).
 */
int dxpu_peer_route(const struct dxpu_peer *table, size_t n, const struct dxpu_tlp *t,
		    uint16_t host_requester_id, int from);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_PEER_H */
