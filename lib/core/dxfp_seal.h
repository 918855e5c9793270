/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_seal.h - sealed DxFP frames: every frame after the handshake is
 * encrypted and authenticated with the session's transport keys
 * (ChaCha20-Poly1305), and a counter no frame reuses protects against replay
 * (docs/protocol.md, section 4.12).
 *
 *	header (32, clear, Flags has DXFP_F_SEALED) | counter (8, clear, big-endian)
 *	| records (encrypted) | tag (16)
 *
 * The header and the counter are the AEAD's additional data: a bridge still
 * routes by the clear session IDs, and nothing in them can be changed
 * unnoticed. The tag takes the CRC32C's place (it checks more than the CRC
 * did). Length counts the whole sealed frame, so a sealed frame is
 * DXFP_SEAL_GROWTH bytes longer than the same frame in the clear.
 *
 * The counter is the AEAD nonce: a sender never reuses one under a key (it
 * counts up from 0, one per frame, retransmissions included); a receiver takes
 * each counter at most once, and none more than DXFP_REPLAY_WINDOW below the
 * highest it has taken (frames reordered by that much are dropped as a lost
 * frame is, and retransmitted).
 */
#ifndef DXPU_CORE_DXFP_SEAL_H
#define DXPU_CORE_DXFP_SEAL_H

#include "dxfp_noise.h"

DXPU_EXTERN_C_BEGIN

#define DXFP_F_SEALED 0x04u
#define DXFP_SEAL_COUNTER_SIZE 8u
#define DXFP_SEAL_GROWTH (DXFP_SEAL_COUNTER_SIZE + DXFP_TAG_SIZE - DXFP_CRC_SIZE)
#define DXFP_MIN_SEALED_FRAME (DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE + DXFP_TAG_SIZE)
/* The last counter a key may seal: the session is rekeyed or closed before. */
#define DXFP_SEAL_COUNTER_MAX (~0ull - 1)

#define DXFP_REPLAY_WINDOW 4096u /* counters below the highest taken that are still accepted */

/* The receiver's record of the counters it has taken. Zeroed: none yet. */
struct dxfp_replay {
	uint64_t next; /* one more than the highest counter taken; 0: none */
	uint64_t bits[DXFP_REPLAY_WINDOW / 64];
};

/* Whether counter may still be taken (checked before the tag, so a flood costs no AEAD). */
bool dxfp_replay_fresh(const struct dxfp_replay *r, uint64_t counter);
/* Take counter (after its frame's tag passed). */
void dxfp_replay_take(struct dxfp_replay *r, uint64_t counter);

/*
 * Seal, in place, the finished frame in buf[0..frame_len) (header, records,
 * CRC32C, as dxfp_writer_finish() left it) under key with the given counter.
 * buf has room for cap bytes; the sealed frame needs frame_len +
 * DXFP_SEAL_GROWTH. Returns the sealed frame's length, 0 if it does not fit
 * cap or DXFP_MAX_FRAME.
 */
size_t dxfp_frame_seal(const struct dxfp_crypto_ops *ops, const struct dxfp_cipher *key,
		       uint64_t counter, uint8_t *buf, size_t frame_len, size_t cap);

/*
 * Open, in place, the sealed frame in buf[0..len) (len may include Ethernet
 * padding) and parse it as dxfp_frame_parse() would: DXFP_OK and f set, or why
 * not: DXFP_ERR_TRUNCATED, _BAD_LENGTH, _MALFORMED (not sealed), _REPLAYED
 * (checked before the tag), _BAD_TAG, then the checks of the records.
 * Only a frame whose tag passed takes its counter from the window. *counter
 * gets the frame's counter whenever it was read.
 */
enum dxfp_err dxfp_frame_open(const struct dxfp_crypto_ops *ops, const struct dxfp_cipher *key,
			      struct dxfp_replay *replay, uint8_t *buf, size_t len,
			      uint32_t max_frame, struct dxfp_frame *f, uint64_t *counter);

/* Whether the frame in buf (at least DXFP_HDR_SIZE bytes) says it is sealed. */
static inline bool dxfp_frame_is_sealed(const uint8_t *buf)
{
	return (buf[DXFP_OFF_FLAGS] & DXFP_F_SEALED) != 0;
}

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_SEAL_H */
