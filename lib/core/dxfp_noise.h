/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_noise.h - the DxFP handshake: Noise_IK_25519_ChaChaPoly_SHA256
 * (the Noise Protocol Framework, revision 34; docs/protocol.md, section 4.12).
 *
 * The host (initiator) knows the bridge's (responder's) static public key
 * before it starts; its first message carries its own static key, encrypted,
 * and proves that it holds the private half; the bridge's answer proves the
 * same of the bridge. After the second message both ends hold two transport
 * keys, one per direction, that nobody else can compute.
 *
 *	initiator                                responder
 *	dxfp_noise_initiator_init()              dxfp_noise_responder_init()
 *	dxfp_noise_write_msg1()  -- HELLO -->    dxfp_noise_read_msg1()
 *	                                         (look up hs->rs: may it connect?)
 *	dxfp_noise_read_msg2()   <-- WELCOME --  dxfp_noise_write_msg2()
 *	dxfp_noise_split()                       dxfp_noise_split()
 *
 * Sans-IO and kernel-safe: the primitives are the caller's (struct
 * dxfp_crypto_ops: the kernel's lib/crypto in dxpu.ko, libsodium in
 * userspace), nothing allocates, blocks or reads a clock. Secrets are wiped
 * (dxpu_wipe(), a store the compiler cannot drop).
 */
#ifndef DXPU_CORE_DXFP_NOISE_H
#define DXPU_CORE_DXFP_NOISE_H

#include "dxfp_frame.h"

DXPU_EXTERN_C_BEGIN

#define DXFP_KEY_SIZE 32u  /* X25519 keys, ChaCha20-Poly1305 keys */
#define DXFP_HASH_SIZE 32u /* SHA-256 */
#define DXFP_TAG_SIZE 16u  /* Poly1305 */
#define DXFP_MAC1_SIZE 16u

/* e, encrypted s (with its tag), then the encrypted payload's tag */
#define DXFP_NOISE_MSG1_OVERHEAD (DXFP_KEY_SIZE + DXFP_KEY_SIZE + 2u * DXFP_TAG_SIZE)
/* e, then the encrypted payload's tag */
#define DXFP_NOISE_MSG2_OVERHEAD (DXFP_KEY_SIZE + DXFP_TAG_SIZE)

/*
 * The primitives, passed in. Every buffer may overlap exactly (in place) but
 * not partly.
 */
struct dxfp_crypto_ops {
	/* out = X25519(secret, point); false when out is all zero (a low-order point). */
	bool (*x25519)(uint8_t out[DXFP_KEY_SIZE], const uint8_t secret[DXFP_KEY_SIZE],
		       const uint8_t point[DXFP_KEY_SIZE]);
	/* A new key pair from the system's random source. */
	void (*x25519_keypair)(uint8_t secret[DXFP_KEY_SIZE], uint8_t pub[DXFP_KEY_SIZE]);
	/*
	 * ChaCha20-Poly1305 (RFC 8439) with the 96-bit nonce 0^32 || le64(nonce):
	 * dst[0..len) = the ciphertext of src[0..len), dst[len..len+16) = the tag.
	 */
	void (*aead_seal)(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad,
			  size_t ad_len, uint64_t nonce, const uint8_t key[DXFP_KEY_SIZE]);
	/* The reverse: len counts the tag; false (dst unspecified) when the tag fails. */
	bool (*aead_open)(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad,
			  size_t ad_len, uint64_t nonce, const uint8_t key[DXFP_KEY_SIZE]);
	/* SHA-256 of the concatenation of n pieces. */
	void (*sha256)(uint8_t out[DXFP_HASH_SIZE], const struct dxfp_piece *parts, size_t n);
};

/* One direction's transport key after the handshake. */
struct dxfp_cipher {
	uint8_t key[DXFP_KEY_SIZE];
};

struct dxfp_noise_keys {
	struct dxfp_cipher send;
	struct dxfp_cipher recv;
	/* The handshake hash: the same at both ends, names this session (channel binding). */
	uint8_t hash[DXFP_HASH_SIZE];
};

enum dxfp_noise_step {
	DXFP_NOISE_MSG1 = 0, /* the next message is the first */
	DXFP_NOISE_MSG2,     /* the next message is the second */
	DXFP_NOISE_DONE,     /* split may be called */
	DXFP_NOISE_FAILED,   /* a message failed: the state is wiped and refuses everything */
};

struct dxfp_noise {
	const struct dxfp_crypto_ops *ops;
	bool initiator;
	enum dxfp_noise_step step;
	/* the symmetric state */
	uint8_t ck[DXFP_HASH_SIZE];
	uint8_t h[DXFP_HASH_SIZE];
	uint8_t k[DXFP_KEY_SIZE];
	uint64_t n;
	/* the key pairs */
	uint8_t s_secret[DXFP_KEY_SIZE];
	uint8_t s_pub[DXFP_KEY_SIZE];
	uint8_t e_secret[DXFP_KEY_SIZE];
	uint8_t e_pub[DXFP_KEY_SIZE];
	uint8_t rs[DXFP_KEY_SIZE]; /* the peer's static key: known, or learnt from msg1 */
	uint8_t re[DXFP_KEY_SIZE];
};

/*
 * Start a handshake. The prologue (may be empty) is data both ends must agree
 * on, checked by the handshake: DxFP passes the clear part of the HELLO frame.
 */
void dxfp_noise_initiator_init(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			       const uint8_t s_secret[DXFP_KEY_SIZE],
			       const uint8_t rs_pub[DXFP_KEY_SIZE], const uint8_t *prologue,
			       size_t prologue_len);
void dxfp_noise_responder_init(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			       const uint8_t s_secret[DXFP_KEY_SIZE], const uint8_t *prologue,
			       size_t prologue_len);

/*
 * Bind more clear data into the handshake (MixHash): both ends must call it
 * with the same bytes at the same point; DxFP binds the clear records of the
 * WELCOME frame before the second message.
 */
void dxfp_noise_mix_hash(struct dxfp_noise *hs, const uint8_t *data, size_t len);

/*
 * Messages. write: out has room for the overhead plus payload_len; returns the
 * message's size (0: wrong step). read: msg_len is the whole message; payload
 * gets msg_len minus the overhead bytes (payload may be NULL when that is 0);
 * false: refused (wrong step, too short, a tag or a key that fails); a refusal
 * wipes the state.
 */
size_t dxfp_noise_write_msg1(struct dxfp_noise *hs, const uint8_t *payload, size_t payload_len,
			     uint8_t *out);
bool dxfp_noise_read_msg1(struct dxfp_noise *hs, const uint8_t *msg, size_t msg_len,
			  uint8_t *payload);
size_t dxfp_noise_write_msg2(struct dxfp_noise *hs, const uint8_t *payload, size_t payload_len,
			     uint8_t *out);
bool dxfp_noise_read_msg2(struct dxfp_noise *hs, const uint8_t *msg, size_t msg_len,
			  uint8_t *payload);

/* After the second message: this end's transport keys; wipes the handshake state. */
bool dxfp_noise_split(struct dxfp_noise *hs, struct dxfp_noise_keys *keys);

/* Zero every secret of the state (a store the compiler keeps). */
void dxfp_noise_wipe(struct dxfp_noise *hs);

/*
 * A cheap proof that a HELLO's sender knows the responder's public key, checked
 * before any X25519 (as WireGuard's mac1): the first 16 bytes of
 * HMAC-SHA256(SHA-256("mac1----" || responder_pub), msg). Its key depends only on
 * the responder's key: dxfp_mac1_key() once, dxfp_mac1() per message.
 */
void dxfp_mac1_key(const struct dxfp_crypto_ops *ops, const uint8_t responder_pub[DXFP_KEY_SIZE],
		   uint8_t key[DXFP_HASH_SIZE]);
void dxfp_mac1(const struct dxfp_crypto_ops *ops, const uint8_t key[DXFP_HASH_SIZE],
	       const uint8_t *msg, size_t len, uint8_t mac[DXFP_MAC1_SIZE]);

/* Constant-time comparison of len bytes: true when equal. */
bool dxfp_equal_ct(const uint8_t *a, const uint8_t *b, size_t len);

/*
 * HMAC-SHA256 (RFC 2104) of the concatenation of n pieces, and HKDF's expand
 * as Noise uses it (outputs 1..3 of 32 bytes from a chaining key and input).
 */
void dxfp_hmac_sha256(const struct dxfp_crypto_ops *ops, const uint8_t key[DXFP_HASH_SIZE],
		      const struct dxfp_piece *parts, size_t n, uint8_t out[DXFP_HASH_SIZE]);
void dxfp_hkdf(const struct dxfp_crypto_ops *ops, const uint8_t ck[DXFP_HASH_SIZE],
	       const uint8_t *ikm, size_t ikm_len, uint8_t *out1, uint8_t *out2, uint8_t *out3);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_NOISE_H */
