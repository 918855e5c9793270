/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_handshake.h - the Noise IK handshake (dxfp_noise.h) in DxFP's HELLO and
 * WELCOME frames (docs/protocol.md, section 4.12):
 *
 *	HELLO:   header | HELLO | CREDIT | NOISE (msg1: e, s, timestamp) | MAC1 | CRC
 *	WELCOME: header | HELLO | CREDIT | NOISE (msg2: e)                     | CRC
 *
 * The handshake covers every byte before its NOISE record (the HELLO's as the
 * prologue, the WELCOME's mixed in before msg2), the header with its final
 * Length and record count included; MAC1 covers every byte before it. The
 * caller writes the header and the clear records with dxfp_writer, then lets
 * these functions add the rest and finish the frame.
 */
#ifndef DXPU_CORE_DXFP_HANDSHAKE_H
#define DXPU_CORE_DXFP_HANDSHAKE_H

#include "dxfp_noise.h"

DXPU_EXTERN_C_BEGIN

/* Bytes the handshake adds to a HELLO and to a WELCOME (records and their headers). */
#define DXFP_HELLO_AUTH_SIZE                                                                       \
	(2u * DXFP_REC_HDR_SIZE + DXFP_NOISE_HELLO_BODY_SIZE + DXFP_MAC1_BODY_SIZE)
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

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_HANDSHAKE_H */
