// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_keys.c - see dxpu_keys.h. The formats are those of `dxpu keygen`
 * (lib/crypto/fabric_keys.cc): a tag, one space, 64 hexadecimal digits.
 */
#include <crypto/curve25519.h>
#include <linux/etherdevice.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "dxpu_crypto.h"
#include "dxpu_keys.h"

#define DXPU_SECRET_TAG "DXPU-FABRIC-SECRET-KEY-V1"
#define DXPU_PUBLIC_TAG "DXPU-FABRIC-PUBLIC-KEY-V1"

/* buf without leading and trailing blanks (a newline from echo or a file). */
static void dxpu_keys_trim(const char **buf, size_t *len)
{
	while (*len && isspace((*buf)[0])) {
		(*buf)++;
		(*len)--;
	}
	while (*len && isspace((*buf)[*len - 1]))
		(*len)--;
}

static bool dxpu_keys_is(const char *buf, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(buf, word, len);
}

/* "[TAG ]<64 hex digits>" into key; false for anything else. */
static bool dxpu_keys_parse(const char *buf, size_t len, const char *tag, u8 key[DXFP_KEY_SIZE])
{
	size_t tag_len = strlen(tag);

	if (len > tag_len && !memcmp(buf, tag, tag_len) && buf[tag_len] == ' ') {
		buf += tag_len + 1;
		len -= tag_len + 1;
	}
	return len == 2 * DXFP_KEY_SIZE && !hex2bin(key, buf, DXFP_KEY_SIZE);
}

int dxpu_keys_set_secret(struct dxpu_keys *k, const char *buf, size_t len)
{
	u8 secret[DXFP_KEY_SIZE], pub[DXFP_KEY_SIZE];
	int err = -EINVAL;

	dxpu_keys_trim(&buf, &len);
	if (dxpu_keys_is(buf, len, "none")) {
		memzero_explicit(k->secret, sizeof(k->secret));
		k->have_secret = false;
		return 0;
	}
	if (dxpu_keys_parse(buf, len, DXPU_SECRET_TAG, secret) &&
	    curve25519_generate_public(pub, secret)) {
		memcpy(k->secret, secret, sizeof(secret));
		memcpy(k->pub, pub, sizeof(pub));
		k->have_secret = true;
		err = 0;
	}
	memzero_explicit(secret, sizeof(secret));
	return err;
}

ssize_t dxpu_keys_show_public(const struct dxpu_keys *k, char *buf)
{
	if (!k->have_secret)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, DXPU_PUBLIC_TAG " %*phN\n", DXFP_KEY_SIZE, k->pub);
}

/* The index of the bridge at mac, or nbridges. */
static unsigned int dxpu_keys_find(const struct dxpu_keys *k, const u8 *mac)
{
	unsigned int i;

	for (i = 0; i < k->nbridges; i++)
		if (ether_addr_equal(k->bridge[i].mac, mac))
			break;
	return i;
}

int dxpu_keys_set_bridge(struct dxpu_keys *k, const char *buf, size_t len)
{
	u8 mac[ETH_ALEN], pub[DXFP_KEY_SIZE];
	size_t mac_len = 3 * ETH_ALEN - 1;
	unsigned int i;

	dxpu_keys_trim(&buf, &len);
	if (len <= mac_len || buf[mac_len] != ' ' || !mac_pton(buf, mac) ||
	    !is_valid_ether_addr(mac))
		return -EINVAL;
	buf += mac_len;
	len -= mac_len;
	dxpu_keys_trim(&buf, &len);
	i = dxpu_keys_find(k, mac);
	if (dxpu_keys_is(buf, len, "none")) {
		if (i < k->nbridges)
			k->bridge[i] = k->bridge[--k->nbridges];
		return 0;
	}
	if (!dxpu_keys_parse(buf, len, DXPU_PUBLIC_TAG, pub))
		return -EINVAL;
	if (i == k->nbridges) {
		if (k->nbridges == DXPU_MAX_BRIDGE_KEYS)
			return -ENOSPC;
		ether_addr_copy(k->bridge[k->nbridges++].mac, mac);
	}
	memcpy(k->bridge[i].pub, pub, sizeof(pub));
	return 0;
}

ssize_t dxpu_keys_show_bridges(const struct dxpu_keys *k, char *buf)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < k->nbridges; i++)
		n += sysfs_emit_at(buf, n, "%pM %*phN\n", k->bridge[i].mac, DXFP_KEY_SIZE,
				   k->bridge[i].pub);
	return n;
}

int dxpu_keys_session_auth(const struct dxpu_keys *k, const u8 *mac, struct dxfp_session_auth *auth)
{
	unsigned int i = dxpu_keys_find(k, mac);

	memset(auth, 0, sizeof(*auth));
	if (!k->have_secret)
		return 0;
	if (i == k->nbridges)
		return -ENOKEY;
	auth->ops = &dxpu_crypto_ops;
	memcpy(auth->static_secret, k->secret, sizeof(k->secret));
	memcpy(auth->peer_public, k->bridge[i].pub, sizeof(k->bridge[i].pub));
	/* The HELLO's timestamp is the wall clock: it must grow across reloads and reboots. */
	auth->wall_clock_offset_ns = ktime_get_real_ns() - ktime_get_ns();
	return 0;
}

void dxpu_keys_wipe(struct dxpu_keys *k)
{
	memzero_explicit(k, sizeof(*k));
}
