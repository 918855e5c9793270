/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_handshake.h - the Noise IK handshake (dxfp_noise.h) in DxFP's HELLO and
 * WELCOME frames (docs/protocol.md, section 4.12):
 *
 *	HELLO:   header | HELLO | CREDIT | NOISE (msg1: e, s, timestamp) | MAC1 | MAC2 | CRC
 *	WELCOME: header | HELLO | CREDIT | NOISE (msg2: e)                            | CRC
 *	COOKIE:  header | COOKIE (nonce, the cookie sealed)                          | CRC
 *
 * The handshake covers every byte before its NOISE record (the HELLO's as the
 * prologue, the WELCOME's mixed in before msg2), the header with its final
 * Length and record count included; MAC1 covers every byte before it, MAC2
 * every byte before it (zeros until the bridge sent a cookie). The
 * caller writes the header and the clear records with dxfp_writer, then lets
 * these functions add the rest and finish the frame.
 */
#ifndef DXPU_CORE_DXFP_HANDSHAKE_H
#define DXPU_CORE_DXFP_HANDSHAKE_H

#include "dxfp_noise.h"

DXPU_EXTERN_C_BEGIN

/* Bytes the handshake adds to a HELLO and to a WELCOME (records and their headers). */
#define DXFP_HELLO_AUTH_SIZE                                                                       \
	(3u * DXFP_REC_HDR_SIZE + DXFP_NOISE_HELLO_BODY_SIZE + DXFP_MAC1_BODY_SIZE +               \
	 DXFP_MAC2_BODY_SIZE)
/* A COOKIE frame: header, its one record, CRC. */
#define DXFP_COOKIE_FRAME_SIZE                                                                     \
	(DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + DXFP_COOKIE_BODY_SIZE + DXFP_CRC_SIZE)
#define DXFP_COOKIE_SIZE 16u
#define DXFP_COOKIE_NONCE_SIZE 16u
#define DXFP_WELCOME_AUTH_SIZE (DXFP_REC_HDR_SIZE + DXFP_NOISE_WELCOME_BODY_SIZE)

/*
 * Initiator: finish the HELLO in w (header and clear records written) with the
 * first handshake message to the bridge whose static key is bridge_pub, carrying
 * timestamp (the host's wall clock, ns: the bridge takes a HELLO only above the
 * last one it took from this host), and MAC1. hs keeps the handshake for the
 * WELCOME. *len: the frame's size. DXFP_ERR_NO_SPACE: w has no room.
 */
enum dxfp_err dxfp_hello_finish(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
				const uint8_t s_secret[DXFP_KEY_SIZE],
				const uint8_t bridge_pub[DXFP_KEY_SIZE], uint64_t timestamp,
				struct dxfp_writer *w, size_t *len);

/*
 * Responder: check a HELLO (buf, len as received) and read its handshake
 * message. mac1_key: dxfp_mac1_key() of this bridge's public key. In order, so
 * that a HELLO costs the least it can: parse and CRC (their errors), then
 * DXFP_ERR_NO_AUTH (no NOISE and MAC1 records, last), DXFP_ERR_BAD_MAC1 (one
 * HMAC), DXFP_ERR_BAD_TAG (the X25519s: not from a holder of the key it names, or
 * not to us). DXFP_OK: f is the parsed frame, *timestamp the host's, hs->rs the
 * host's static key (the caller looks it up), hs ready for dxfp_welcome_finish.
 */
/*
 * Responder: the cheap half of dxfp_hello_open: parse and CRC, the handshake's
 * records present (DXFP_ERR_NO_AUTH), MAC1 (DXFP_ERR_BAD_MAC1). One HMAC, no
 * X25519: what a bridge checks before it decides whether it is under load.
 */
enum dxfp_err dxfp_hello_check_mac1(const struct dxfp_crypto_ops *ops,
				    const uint8_t mac1_key[DXFP_HASH_SIZE], const uint8_t *buf,
				    size_t len, uint32_t max_frame, struct dxfp_frame *f);

enum dxfp_err dxfp_hello_open(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			      const uint8_t s_secret[DXFP_KEY_SIZE],
			      const uint8_t mac1_key[DXFP_HASH_SIZE], const uint8_t *buf,
			      size_t len, uint32_t max_frame, struct dxfp_frame *f,
			      uint64_t *timestamp);

/*
 * Responder: finish the WELCOME in w (header and clear records written) with
 * the second message, and split: keys are the session's transport keys.
 */
enum dxfp_err dxfp_welcome_finish(struct dxfp_noise *hs, struct dxfp_writer *w, size_t *len,
				  struct dxfp_noise_keys *keys);

/*
 * Initiator: read the handshake of a WELCOME dxfp_frame_parse() accepted (buf:
 * the frame's bytes, f: its parse) and split into keys. DXFP_ERR_NO_AUTH (no
 * NOISE record, last) or DXFP_ERR_BAD_TAG (not from the bridge, or changed).
 */
enum dxfp_err dxfp_welcome_open(struct dxfp_noise *hs, const uint8_t *buf,
				const struct dxfp_frame *f, struct dxfp_noise_keys *keys);

/*
 * Cookies (WireGuard's, in DxFP: docs/protocol.md 4.12, "Under load"). A bridge
 * under load answers a HELLO whose MAC2 is not right for its source with a
 * COOKIE frame instead of doing the handshake's X25519s; the host puts the
 * cookie's MAC2 into its HELLO and sends it again. Only a sender that receives
 * at its source address gets a cookie, so a flood from forged addresses costs
 * the bridge one HMAC and one small reply per HELLO, and never a session.
 */

/* Bridge: the cookie of a source (its address's bytes) under this period's secret. */
void dxfp_cookie_make(const struct dxfp_crypto_ops *ops, const uint8_t secret[DXFP_KEY_SIZE],
		      const uint8_t *source, size_t source_len, uint8_t cookie[DXFP_COOKIE_SIZE]);

/*
 * Bridge: whether the MAC2 of a HELLO (buf: its bytes, f: its parse by
 * dxfp_hello_open or dxfp_frame_parse) is the one of cookie. Constant time.
 */
bool dxfp_hello_mac2_ok(const struct dxfp_crypto_ops *ops, const uint8_t cookie[DXFP_COOKIE_SIZE],
			const uint8_t *buf, const struct dxfp_frame *f);

/*
 * Bridge: the COOKIE frame answering a HELLO (f: its parse) into out
 * (DXFP_COOKIE_FRAME_SIZE bytes): addressed to the HELLO's session and epoch, the
 * cookie sealed with ChaCha20-Poly1305 under SHA-256("cookie--" || bridge_pub ||
 * nonce), the HELLO's MAC1 as additional data. nonce: fresh random bytes.
 */
enum dxfp_err dxfp_cookie_reply_write(const struct dxfp_crypto_ops *ops,
				      const uint8_t bridge_pub[DXFP_KEY_SIZE],
				      const uint8_t nonce[DXFP_COOKIE_NONCE_SIZE],
				      const uint8_t cookie[DXFP_COOKIE_SIZE],
				      const struct dxfp_frame *f, uint8_t *out, size_t *len);

/*
 * Host: the cookie in a COOKIE frame (f, parsed) answering our HELLO (hello,
 * hello_len: as sent). DXFP_ERR_NO_AUTH when the HELLO has no MAC1,
 * DXFP_ERR_BAD_TAG when the cookie does not open (not from the bridge, or not for
 * this HELLO).
 */
enum dxfp_err dxfp_cookie_reply_open(const struct dxfp_crypto_ops *ops,
				     const uint8_t bridge_pub[DXFP_KEY_SIZE], const uint8_t *hello,
				     size_t hello_len, const struct dxfp_frame *f,
				     uint8_t cookie[DXFP_COOKIE_SIZE]);

/* Host: a finished HELLO's MAC2 made from cookie (and its CRC again); false if no HELLO. */
bool dxfp_hello_set_mac2(const struct dxfp_crypto_ops *ops, const uint8_t cookie[DXFP_COOKIE_SIZE],
			 uint8_t *hello, size_t len);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_HANDSHAKE_H */
