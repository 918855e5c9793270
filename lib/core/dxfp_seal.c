// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_seal.c - sealed DxFP frames and the replay window (see dxfp_seal.h).
 */
#include "dxfp_seal.h"

#define AD_SIZE (DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE)
#define WORDS (DXFP_REPLAY_WINDOW / 64u)

static void put_be64(uint8_t *p, uint64_t v)
{
	dxpu_put_be32(p, (uint32_t)(v >> 32));
	dxpu_put_be32(p + 4, (uint32_t)(v & 0xffffffffu));
}

static uint64_t get_be64(const uint8_t *p)
{
	return ((uint64_t)dxpu_get_be32(p) << 32) | dxpu_get_be32(p + 4);
}

/* The window's bit for counter c: a ring of DXFP_REPLAY_WINDOW bits indexed by c. */
static uint64_t *word_of(struct dxfp_replay *r, uint64_t c)
{
	return &r->bits[(c / 64u) % WORDS];
}

bool dxfp_replay_fresh(const struct dxfp_replay *r, uint64_t counter)
{
	if (counter > DXFP_SEAL_COUNTER_MAX)
		return false;
	if (counter >= r->next)
		return true;
	if (r->next - counter > DXFP_REPLAY_WINDOW - 64u)
		return false; /* the ring keeps whole words: the oldest one is being reused */
	return !(r->bits[(counter / 64u) % WORDS] & (1ull << (counter % 64u)));
}

void dxfp_replay_take(struct dxfp_replay *r, uint64_t counter)
{
	uint64_t w;

	if (counter >= r->next) {
		/* Clear the words the window moves over (all of them after a long jump). */
		uint64_t from = r->next / 64u + (r->next % 64u ? 1u : 0u);
		uint64_t to = counter / 64u;

		if (r->next == 0)
			from = 0;
		if (to - from + 1 >= WORDS || r->next == 0) {
			memset(r->bits, 0, sizeof(r->bits));
		} else {
			for (w = from; w <= to; w++)
				r->bits[w % WORDS] = 0;
		}
		r->next = counter + 1;
	}
	*word_of(r, counter) |= 1ull << (counter % 64u);
}

size_t dxfp_frame_seal(const struct dxfp_crypto_ops *ops, const struct dxfp_cipher *key,
		       uint64_t counter, uint8_t *buf, size_t frame_len, size_t cap)
{
	size_t records_len, sealed_len;
	uint8_t *records;

	if (frame_len < DXFP_MIN_FRAME || counter > DXFP_SEAL_COUNTER_MAX)
		return 0;
	records_len = frame_len - DXFP_HDR_SIZE - DXFP_CRC_SIZE;
	sealed_len = frame_len + DXFP_SEAL_GROWTH;
	if (sealed_len > cap || sealed_len > DXFP_MAX_FRAME)
		return 0;
	records = buf + AD_SIZE;
	memmove(records, buf + DXFP_HDR_SIZE, records_len);
	buf[DXFP_OFF_FLAGS] |= DXFP_F_SEALED;
	dxpu_put_be16(&buf[DXFP_OFF_LENGTH], (uint16_t)sealed_len);
	put_be64(&buf[DXFP_HDR_SIZE], counter);
	ops->aead_seal(records, records, records_len, buf, AD_SIZE, counter, key->key);
	return sealed_len;
}

enum dxfp_err dxfp_frame_open(const struct dxfp_crypto_ops *ops, const struct dxfp_cipher *key,
			      struct dxfp_replay *replay, uint8_t *buf, size_t len,
			      uint32_t max_frame, struct dxfp_frame *f, uint64_t *counter)
{
	size_t flen, sealed_len;
	uint64_t c;

	if (len < DXFP_MIN_SEALED_FRAME)
		return DXFP_ERR_TRUNCATED;
	flen = dxpu_get_be16(&buf[DXFP_OFF_LENGTH]);
	if (flen < DXFP_MIN_SEALED_FRAME || flen > max_frame || flen > DXFP_MAX_FRAME ||
	    (flen & 3u))
		return DXFP_ERR_BAD_LENGTH;
	if (flen > len)
		return DXFP_ERR_TRUNCATED;
	if (!dxfp_frame_is_sealed(buf))
		return DXFP_ERR_MALFORMED;
	c = get_be64(&buf[DXFP_HDR_SIZE]);
	*counter = c;
	if (!dxfp_replay_fresh(replay, c))
		return DXFP_ERR_REPLAYED;
	sealed_len = flen - AD_SIZE;
	if (!ops->aead_open(buf + AD_SIZE, buf + AD_SIZE, sealed_len, buf, AD_SIZE, c, key->key))
		return DXFP_ERR_BAD_TAG;
	dxfp_replay_take(replay, c);
	return dxfp_frame_parse_body(buf, buf + AD_SIZE, sealed_len - DXFP_TAG_SIZE, DXFP_F_SEALED,
				     f);
}
