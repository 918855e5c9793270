// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_handshake.c - the Noise IK handshake in HELLO and WELCOME frames (see
 * dxfp_handshake.h).
 */
#include "dxfp_handshake.h"

#define TIMESTAMP_SIZE 8u

/*
 * Length and record count as they will be once `more` bytes in `more_rec`
 * records and the CRC are added: what the handshake and MAC1 cover is the
 * frame's final header.
 */
static void preset_header(struct dxfp_writer *w, size_t more, uint16_t more_rec)
{
	dxpu_put_be16(&w->buf[DXFP_OFF_LENGTH], (uint16_t)(w->len + more + DXFP_CRC_SIZE));
	dxpu_put_be16(&w->buf[DXFP_OFF_NREC], (uint16_t)(w->nrec + more_rec));
}

/* Room for `more` bytes of records before the CRC. */
static bool has_room(const struct dxfp_writer *w, size_t more)
{
	return w->len + more + DXFP_CRC_SIZE <= (w->cap & ~(size_t)3u);
}

enum dxfp_err dxfp_hello_finish(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
				const uint8_t s_secret[DXFP_KEY_SIZE],
				const uint8_t bridge_pub[DXFP_KEY_SIZE], uint64_t timestamp,
				struct dxfp_writer *w, size_t *len)
{
	uint8_t ts[TIMESTAMP_SIZE], key[DXFP_HASH_SIZE];
	uint8_t *noise = NULL, *mac = NULL;

	if (w->buf[DXFP_OFF_TYPE] != DXFP_HELLO)
		return DXFP_ERR_BAD_TYPE;
	if (!has_room(w, DXFP_HELLO_AUTH_SIZE))
		return DXFP_ERR_NO_SPACE;
	preset_header(w, DXFP_HELLO_AUTH_SIZE, 2);
	dxfp_noise_initiator_init(hs, ops, s_secret, bridge_pub, w->buf, w->len);
	if (dxfp_writer_add_record(w, DXFP_REC_NOISE, DXFP_NOISE_HELLO_BODY_SIZE, &noise))
		return DXFP_ERR_NO_SPACE;
	dxpu_put_be32(ts, (uint32_t)(timestamp >> 32));
	dxpu_put_be32(ts + 4, (uint32_t)(timestamp & 0xffffffffu));
	if (!dxfp_noise_write_msg1(hs, ts, sizeof(ts), noise))
		return DXFP_ERR_BAD_TAG; /* bridge_pub is no key (a low-order point) */
	if (dxfp_writer_add_record(w, DXFP_REC_MAC1, DXFP_MAC1_BODY_SIZE, &mac))
		return DXFP_ERR_NO_SPACE;
	dxfp_mac1_key(ops, bridge_pub, key);
	dxfp_mac1(ops, key, w->buf, (size_t)(mac - DXFP_REC_HDR_SIZE - w->buf), mac);
	dxfp_writer_finish(w, len);
	return DXFP_OK;
}

/*
 * The last record of f (and the one before it): where the handshake's records
 * must be. NULL when the frame has fewer records.
 */
static void last_records(const struct dxfp_frame *f, struct dxfp_record *prev,
			 struct dxfp_record *last, const uint8_t **prev_at, const uint8_t **last_at)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	const uint8_t *at;

	*prev_at = NULL;
	*last_at = NULL;
	dxfp_record_iter_init(&it, f);
	for (at = it.next; dxfp_record_next(&it, &r); at = it.next) {
		*prev = *last;
		*prev_at = *last_at;
		*last = r;
		*last_at = at;
	}
}

enum dxfp_err dxfp_hello_open(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			      const uint8_t s_secret[DXFP_KEY_SIZE],
			      const uint8_t mac1_key[DXFP_HASH_SIZE], const uint8_t *buf,
			      size_t len, uint32_t max_frame, struct dxfp_frame *f,
			      uint64_t *timestamp)
{
	struct dxfp_record noise = { 0 }, mac = { 0 };
	const uint8_t *noise_at, *mac_at;
	uint8_t want[DXFP_MAC1_SIZE], ts[TIMESTAMP_SIZE];
	enum dxfp_err err = dxfp_frame_parse(buf, len, max_frame, f);

	if (err)
		return err;
	if (f->hdr.type != DXFP_HELLO)
		return DXFP_ERR_BAD_TYPE;
	last_records(f, &noise, &mac, &noise_at, &mac_at);
	if (!noise_at || noise.type != DXFP_REC_NOISE || mac.type != DXFP_REC_MAC1)
		return DXFP_ERR_NO_AUTH;
	dxfp_mac1(ops, mac1_key, buf, (size_t)(mac_at - buf), want);
	if (!dxfp_equal_ct(want, mac.body, DXFP_MAC1_SIZE))
		return DXFP_ERR_BAD_MAC1;
	dxfp_noise_responder_init(hs, ops, s_secret, buf, (size_t)(noise_at - buf));
	if (!dxfp_noise_read_msg1(hs, noise.body, noise.len, ts))
		return DXFP_ERR_BAD_TAG;
	*timestamp = ((uint64_t)dxpu_get_be32(ts) << 32) | dxpu_get_be32(ts + 4);
	return DXFP_OK;
}

enum dxfp_err dxfp_welcome_finish(struct dxfp_noise *hs, struct dxfp_writer *w, size_t *len,
				  struct dxfp_noise_keys *keys)
{
	uint8_t *noise = NULL;

	if (w->buf[DXFP_OFF_TYPE] != DXFP_WELCOME)
		return DXFP_ERR_BAD_TYPE;
	if (!has_room(w, DXFP_WELCOME_AUTH_SIZE))
		return DXFP_ERR_NO_SPACE;
	preset_header(w, DXFP_WELCOME_AUTH_SIZE, 1);
	dxfp_noise_mix_hash(hs, w->buf, w->len);
	if (dxfp_writer_add_record(w, DXFP_REC_NOISE, DXFP_NOISE_WELCOME_BODY_SIZE, &noise))
		return DXFP_ERR_NO_SPACE;
	if (!dxfp_noise_write_msg2(hs, NULL, 0, noise) || !dxfp_noise_split(hs, keys))
		return DXFP_ERR_BAD_TAG; /* a handshake not at its second message */
	dxfp_writer_finish(w, len);
	return DXFP_OK;
}

enum dxfp_err dxfp_welcome_open(struct dxfp_noise *hs, const uint8_t *buf,
				const struct dxfp_frame *f, struct dxfp_noise_keys *keys)
{
	struct dxfp_record prev = { 0 }, noise = { 0 };
	const uint8_t *prev_at, *noise_at;

	if (f->hdr.type != DXFP_WELCOME)
		return DXFP_ERR_BAD_TYPE;
	last_records(f, &prev, &noise, &prev_at, &noise_at);
	if (!noise_at || noise.type != DXFP_REC_NOISE)
		return DXFP_ERR_NO_AUTH;
	dxfp_noise_mix_hash(hs, buf, (size_t)(noise_at - buf));
	if (!dxfp_noise_read_msg2(hs, noise.body, noise.len, NULL) || !dxfp_noise_split(hs, keys))
		return DXFP_ERR_BAD_TAG;
	return DXFP_OK;
}
