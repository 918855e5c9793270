// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_crypto.c - struct dxfp_crypto_ops on the kernel's lib/crypto. Every
 * function may run in atomic context: none sleeps (curve25519_generate_secret
 * would wait for the RNG to be seeded; get_random_bytes does not, and dxpu's
 * first handshake comes long after boot).
 */
#include <crypto/chacha20poly1305.h>
#include <crypto/curve25519.h>
#include <crypto/sha2.h>
#include <linux/random.h>

#include "dxpu_crypto.h"

static bool dxpu_x25519(u8 out[DXFP_KEY_SIZE], const u8 secret[DXFP_KEY_SIZE],
			const u8 point[DXFP_KEY_SIZE])
{
	return curve25519(out, secret, point);
}

static void dxpu_x25519_keypair(u8 secret[DXFP_KEY_SIZE], u8 pub[DXFP_KEY_SIZE])
{
	do {
		get_random_bytes(secret, DXFP_KEY_SIZE);
		curve25519_clamp_secret(secret);
	} while (!curve25519_generate_public(pub, secret));
}

static void dxpu_aead_seal(u8 *dst, const u8 *src, size_t len, const u8 *ad, size_t ad_len,
			   u64 nonce, const u8 key[DXFP_KEY_SIZE])
{
	chacha20poly1305_encrypt(dst, src, len, ad, ad_len, nonce, key);
}

static bool dxpu_aead_open(u8 *dst, const u8 *src, size_t len, const u8 *ad, size_t ad_len,
			   u64 nonce, const u8 key[DXFP_KEY_SIZE])
{
	return chacha20poly1305_decrypt(dst, src, len, ad, ad_len, nonce, key);
}

static void dxpu_sha256(u8 out[DXFP_HASH_SIZE], const struct dxfp_piece *parts, size_t n)
{
	struct sha256_state st;
	size_t i;

	sha256_init(&st);
	for (i = 0; i < n; i++)
		sha256_update(&st, parts[i].base, parts[i].len);
	sha256_final(&st, out);
}

const struct dxfp_crypto_ops dxpu_crypto_ops = {
	.x25519 = dxpu_x25519,
	.x25519_keypair = dxpu_x25519_keypair,
	.aead_seal = dxpu_aead_seal,
	.aead_open = dxpu_aead_open,
	.sha256 = dxpu_sha256,
};
