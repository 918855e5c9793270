/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_keys.h - this host's fabric key and the public keys of the bridges it may reach
 * (docs/kernel-module.md, "Fabric keys"; docs/protocol.md 4.12). An administrator writes them
 * through /sys/devices/dxpu/key and /sys/devices/dxpu/bridge_keys in the formats of
 * `dxpu keygen`'s files. With a host key set, every new session is authenticated (a Noise IK
 * handshake, then sealed frames) and a bridge without a known public key is refused; without
 * one, sessions are plaintext. A session keeps the keys it started with: a change applies to
 * the next session.
 *
 * Locking: the caller's (the fabric's mutex); nothing here sleeps or allocates.
 */
#ifndef DXPU_DRIVER_DXPU_KEYS_H
#define DXPU_DRIVER_DXPU_KEYS_H

#include <linux/if_ether.h>
#include <linux/types.h>

#include "core/dxfp_session.h"

/* Bridges whose public keys a host may hold. */
#define DXPU_MAX_BRIDGE_KEYS 64

struct dxpu_bridge_key {
	u8 mac[ETH_ALEN];
	u8 pub[DXFP_KEY_SIZE];
};

struct dxpu_keys {
	bool have_secret;
	u8 secret[DXFP_KEY_SIZE];
	u8 pub[DXFP_KEY_SIZE];
	unsigned int nbridges;
	struct dxpu_bridge_key bridge[DXPU_MAX_BRIDGE_KEYS];
};

/*
 * "DXPU-FABRIC-SECRET-KEY-V1 <64 hex digits>" (a .key file) or the 64 digits alone: the host's
 * key from now on; "none" forgets it. -EINVAL for anything else.
 */
int dxpu_keys_set_secret(struct dxpu_keys *k, const char *buf, size_t len);
/* "DXPU-FABRIC-PUBLIC-KEY-V1 <hex>" of the host's key, or "none". */
ssize_t dxpu_keys_show_public(const struct dxpu_keys *k, char *buf);
/*
 * "<MAC> <public key>" (a .pub line or 64 hex digits) sets that bridge's key; "<MAC> none"
 * forgets it. -EINVAL for anything else, -ENOSPC with DXPU_MAX_BRIDGE_KEYS bridges known.
 */
int dxpu_keys_set_bridge(struct dxpu_keys *k, const char *buf, size_t len);
/* One "<MAC> <public key hex>" line per bridge. */
ssize_t dxpu_keys_show_bridges(const struct dxpu_keys *k, char *buf);
/*
 * The authentication of a new session to the bridge at mac: 0 with auth filled (the host's
 * key, the bridge's, the wall clock's offset from ktime_get_ns()), or with auth zeroed when
 * the host has no key (plaintext); -ENOKEY when the host has a key and the bridge none.
 */
int dxpu_keys_session_auth(const struct dxpu_keys *k, const u8 *mac,
			   struct dxfp_session_auth *auth);
/* Every secret wiped (at unload). */
void dxpu_keys_wipe(struct dxpu_keys *k);

#endif /* DXPU_DRIVER_DXPU_KEYS_H */
