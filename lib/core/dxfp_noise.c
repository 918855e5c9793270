// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_noise.c - Noise_IK_25519_ChaChaPoly_SHA256 (see dxfp_noise.h). The
 * names follow the Noise specification's: MixHash, MixKey, EncryptAndHash,
 * DecryptAndHash, Split.
 */
#include "dxfp_noise.h"

/* Exactly 32 bytes, so h starts as the name itself (no hash: Noise, 5.2). */
static const char protocol_name[] = "Noise_IK_25519_ChaChaPoly_SHA256";

#define HMAC_BLOCK 64u
#define HMAC_MAX_PARTS 4u

bool dxfp_equal_ct(const uint8_t *a, const uint8_t *b, size_t len)
{
	uint8_t diff = 0;
	size_t i;

	for (i = 0; i < len; i++)
		diff |= (uint8_t)(a[i] ^ b[i]);
	return diff == 0;
}

void dxfp_hmac_sha256(const struct dxfp_crypto_ops *ops, const uint8_t key[DXFP_HASH_SIZE],
		      const struct dxfp_piece *parts, size_t n, uint8_t out[DXFP_HASH_SIZE])
{
	struct dxfp_piece p[HMAC_MAX_PARTS + 1];
	uint8_t pad[HMAC_BLOCK];
	uint8_t inner[DXFP_HASH_SIZE];
	size_t i;

	if (n > HMAC_MAX_PARTS)
		n = HMAC_MAX_PARTS; /* callers here pass at most 2 */
	memset(pad, 0x36, sizeof(pad));
	for (i = 0; i < DXFP_HASH_SIZE; i++)
		pad[i] ^= key[i];
	p[0].base = pad;
	p[0].len = HMAC_BLOCK;
	for (i = 0; i < n; i++)
		p[i + 1] = parts[i];
	ops->sha256(inner, p, n + 1);

	memset(pad, 0x5c, sizeof(pad));
	for (i = 0; i < DXFP_HASH_SIZE; i++)
		pad[i] ^= key[i];
	p[1].base = inner;
	p[1].len = sizeof(inner);
	ops->sha256(out, p, 2);
	dxpu_wipe(pad, sizeof(pad));
	dxpu_wipe(inner, sizeof(inner));
}

void dxfp_hkdf(const struct dxfp_crypto_ops *ops, const uint8_t ck[DXFP_HASH_SIZE],
	       const uint8_t *ikm, size_t ikm_len, uint8_t *out1, uint8_t *out2, uint8_t *out3)
{
	static const uint8_t one = 1, two = 2, three = 3;
	uint8_t temp[DXFP_HASH_SIZE];
	struct dxfp_piece p[2];

	p[0].base = ikm;
	p[0].len = ikm_len;
	dxfp_hmac_sha256(ops, ck, p, 1, temp);

	p[0].base = &one;
	p[0].len = 1;
	dxfp_hmac_sha256(ops, temp, p, 1, out1);
	if (out2) {
		p[0].base = out1;
		p[0].len = DXFP_HASH_SIZE;
		p[1].base = &two;
		p[1].len = 1;
		dxfp_hmac_sha256(ops, temp, p, 2, out2);
	}
	if (out2 && out3) {
		p[0].base = out2;
		p[1].base = &three;
		dxfp_hmac_sha256(ops, temp, p, 2, out3);
	}
	dxpu_wipe(temp, sizeof(temp));
}

/* h = HASH(h || data) */
void dxfp_noise_mix_hash(struct dxfp_noise *hs, const uint8_t *data, size_t len)
{
	struct dxfp_piece p[2];

	p[0].base = hs->h;
	p[0].len = DXFP_HASH_SIZE;
	p[1].base = data;
	p[1].len = len;
	hs->ops->sha256(hs->h, p, 2);
}

/* ck, k = HKDF(ck, ikm); n = 0 */
static void mix_key(struct dxfp_noise *hs, const uint8_t ikm[DXFP_KEY_SIZE])
{
	uint8_t ck[DXFP_HASH_SIZE];

	dxfp_hkdf(hs->ops, hs->ck, ikm, DXFP_KEY_SIZE, ck, hs->k, NULL);
	memcpy(hs->ck, ck, sizeof(ck));
	hs->n = 0;
	dxpu_wipe(ck, sizeof(ck));
}

/* MixKey(DH(secret, point)); false for a low-order point. */
static bool mix_dh(struct dxfp_noise *hs, const uint8_t secret[DXFP_KEY_SIZE],
		   const uint8_t point[DXFP_KEY_SIZE])
{
	uint8_t shared[DXFP_KEY_SIZE];
	bool ok = hs->ops->x25519(shared, secret, point);

	if (ok)
		mix_key(hs, shared);
	dxpu_wipe(shared, sizeof(shared));
	return ok;
}

/* out = ENCRYPT(k, n++, h, plain); h = HASH(h || out). Keys are always set here. */
static size_t encrypt_and_hash(struct dxfp_noise *hs, const uint8_t *plain, size_t len,
			       uint8_t *out)
{
	hs->ops->aead_seal(out, plain, len, hs->h, DXFP_HASH_SIZE, hs->n++, hs->k);
	dxfp_noise_mix_hash(hs, out, len + DXFP_TAG_SIZE);
	return len + DXFP_TAG_SIZE;
}

static bool decrypt_and_hash(struct dxfp_noise *hs, const uint8_t *cipher, size_t len,
			     uint8_t *plain)
{
	uint8_t h[DXFP_HASH_SIZE];

	memcpy(h, hs->h, sizeof(h));
	dxfp_noise_mix_hash(hs, cipher, len); /* before plain may overwrite cipher */
	return hs->ops->aead_open(plain, cipher, len, h, sizeof(h), hs->n++, hs->k);
}

static void init_symmetric(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops, bool initiator,
			   const uint8_t s_secret[DXFP_KEY_SIZE], const uint8_t *prologue,
			   size_t prologue_len)
{
	static const uint8_t basepoint[DXFP_KEY_SIZE] = { 9 };

	memset(hs, 0, sizeof(*hs));
	hs->ops = ops;
	hs->initiator = initiator;
	hs->step = DXFP_NOISE_MSG1;
	memcpy(hs->h, protocol_name, DXFP_HASH_SIZE);
	memcpy(hs->ck, hs->h, DXFP_HASH_SIZE);
	dxfp_noise_mix_hash(hs, prologue, prologue_len);
	memcpy(hs->s_secret, s_secret, DXFP_KEY_SIZE);
	if (!ops->x25519(hs->s_pub, s_secret, basepoint))
		hs->step = DXFP_NOISE_FAILED; /* an all-zero public key: not a key */
}

void dxfp_noise_initiator_init(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			       const uint8_t s_secret[DXFP_KEY_SIZE],
			       const uint8_t rs_pub[DXFP_KEY_SIZE], const uint8_t *prologue,
			       size_t prologue_len)
{
	init_symmetric(hs, ops, true, s_secret, prologue, prologue_len);
	memcpy(hs->rs, rs_pub, DXFP_KEY_SIZE);
	dxfp_noise_mix_hash(hs, hs->rs, DXFP_KEY_SIZE); /* the pre-message: <- s */
}

void dxfp_noise_responder_init(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			       const uint8_t s_secret[DXFP_KEY_SIZE], const uint8_t *prologue,
			       size_t prologue_len)
{
	init_symmetric(hs, ops, false, s_secret, prologue, prologue_len);
	dxfp_noise_mix_hash(hs, hs->s_pub, DXFP_KEY_SIZE); /* the pre-message: <- s */
}

void dxfp_noise_wipe(struct dxfp_noise *hs)
{
	const struct dxfp_crypto_ops *ops = hs->ops;
	bool initiator = hs->initiator;

	dxpu_wipe(hs, sizeof(*hs));
	hs->ops = ops;
	hs->initiator = initiator;
	hs->step = DXFP_NOISE_FAILED;
}

static bool fail(struct dxfp_noise *hs)
{
	dxfp_noise_wipe(hs);
	return false;
}

/* -> e, es, s, ss, payload */
size_t dxfp_noise_write_msg1(struct dxfp_noise *hs, const uint8_t *payload, size_t payload_len,
			     uint8_t *out)
{
	size_t off = 0;

	if (!hs->initiator || hs->step != DXFP_NOISE_MSG1)
		return 0;
	hs->ops->x25519_keypair(hs->e_secret, hs->e_pub);
	memcpy(out, hs->e_pub, DXFP_KEY_SIZE);
	off += DXFP_KEY_SIZE;
	dxfp_noise_mix_hash(hs, hs->e_pub, DXFP_KEY_SIZE);
	if (!mix_dh(hs, hs->e_secret, hs->rs))
		return (size_t)fail(hs);
	off += encrypt_and_hash(hs, hs->s_pub, DXFP_KEY_SIZE, out + off);
	if (!mix_dh(hs, hs->s_secret, hs->rs))
		return (size_t)fail(hs);
	off += encrypt_and_hash(hs, payload, payload_len, out + off);
	hs->step = DXFP_NOISE_MSG2;
	return off;
}

bool dxfp_noise_read_msg1(struct dxfp_noise *hs, const uint8_t *msg, size_t msg_len,
			  uint8_t *payload)
{
	const uint8_t *p = msg;

	if (hs->initiator || hs->step != DXFP_NOISE_MSG1 || msg_len < DXFP_NOISE_MSG1_OVERHEAD)
		return fail(hs);
	memcpy(hs->re, p, DXFP_KEY_SIZE);
	p += DXFP_KEY_SIZE;
	dxfp_noise_mix_hash(hs, hs->re, DXFP_KEY_SIZE);
	if (!mix_dh(hs, hs->s_secret, hs->re))
		return fail(hs);
	if (!decrypt_and_hash(hs, p, DXFP_KEY_SIZE + DXFP_TAG_SIZE, hs->rs))
		return fail(hs);
	p += DXFP_KEY_SIZE + DXFP_TAG_SIZE;
	if (!mix_dh(hs, hs->s_secret, hs->rs))
		return fail(hs);
	if (!decrypt_and_hash(hs, p, msg_len - (size_t)(p - msg), payload))
		return fail(hs);
	hs->step = DXFP_NOISE_MSG2;
	return true;
}

/* <- e, ee, se, payload */
size_t dxfp_noise_write_msg2(struct dxfp_noise *hs, const uint8_t *payload, size_t payload_len,
			     uint8_t *out)
{
	size_t off = 0;

	if (hs->initiator || hs->step != DXFP_NOISE_MSG2)
		return 0;
	hs->ops->x25519_keypair(hs->e_secret, hs->e_pub);
	memcpy(out, hs->e_pub, DXFP_KEY_SIZE);
	off += DXFP_KEY_SIZE;
	dxfp_noise_mix_hash(hs, hs->e_pub, DXFP_KEY_SIZE);
	if (!mix_dh(hs, hs->e_secret, hs->re) || !mix_dh(hs, hs->e_secret, hs->rs))
		return (size_t)fail(hs);
	off += encrypt_and_hash(hs, payload, payload_len, out + off);
	hs->step = DXFP_NOISE_DONE;
	return off;
}

bool dxfp_noise_read_msg2(struct dxfp_noise *hs, const uint8_t *msg, size_t msg_len,
			  uint8_t *payload)
{
	if (!hs->initiator || hs->step != DXFP_NOISE_MSG2 || msg_len < DXFP_NOISE_MSG2_OVERHEAD)
		return fail(hs);
	memcpy(hs->re, msg, DXFP_KEY_SIZE);
	dxfp_noise_mix_hash(hs, hs->re, DXFP_KEY_SIZE);
	if (!mix_dh(hs, hs->e_secret, hs->re) || !mix_dh(hs, hs->s_secret, hs->re))
		return fail(hs);
	if (!decrypt_and_hash(hs, msg + DXFP_KEY_SIZE, msg_len - DXFP_KEY_SIZE, payload))
		return fail(hs);
	hs->step = DXFP_NOISE_DONE;
	return true;
}

bool dxfp_noise_split(struct dxfp_noise *hs, struct dxfp_noise_keys *keys)
{
	uint8_t k1[DXFP_HASH_SIZE], k2[DXFP_HASH_SIZE];

	if (hs->step != DXFP_NOISE_DONE)
		return false;
	dxfp_hkdf(hs->ops, hs->ck, NULL, 0, k1, k2, NULL);
	memcpy(keys->send.key, hs->initiator ? k1 : k2, DXFP_KEY_SIZE);
	memcpy(keys->recv.key, hs->initiator ? k2 : k1, DXFP_KEY_SIZE);
	memcpy(keys->hash, hs->h, DXFP_HASH_SIZE);
	dxpu_wipe(k1, sizeof(k1));
	dxpu_wipe(k2, sizeof(k2));
	dxfp_noise_wipe(hs);
	return true;
}

void dxfp_mac1_key(const struct dxfp_crypto_ops *ops, const uint8_t responder_pub[DXFP_KEY_SIZE],
		   uint8_t key[DXFP_HASH_SIZE])
{
	static const uint8_t label[8] = { 'm', 'a', 'c', '1', '-', '-', '-', '-' };
	struct dxfp_piece p[2];

	p[0].base = label;
	p[0].len = sizeof(label);
	p[1].base = responder_pub;
	p[1].len = DXFP_KEY_SIZE;
	ops->sha256(key, p, 2);
}

void dxfp_mac1(const struct dxfp_crypto_ops *ops, const uint8_t key[DXFP_HASH_SIZE],
	       const uint8_t *msg, size_t len, uint8_t mac[DXFP_MAC1_SIZE])
{
	uint8_t full[DXFP_HASH_SIZE];
	struct dxfp_piece p;

	p.base = msg;
	p.len = len;
	dxfp_hmac_sha256(ops, key, &p, 1, full);
	memcpy(mac, full, DXFP_MAC1_SIZE);
}
