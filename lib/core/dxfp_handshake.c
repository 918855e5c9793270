// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_handshake.c - the Noise IK handshake in HELLO and WELCOME frames (see
 * dxfp_handshake.h).
 */
#include "dxfp_handshake.h"
#include "crc32c.h"

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
	uint8_t *noise = NULL, *mac = NULL, *mac2 = NULL;

	if (w->buf[DXFP_OFF_TYPE] != DXFP_HELLO)
		return DXFP_ERR_BAD_TYPE;
	if (!has_room(w, DXFP_HELLO_AUTH_SIZE))
		return DXFP_ERR_NO_SPACE;
	preset_header(w, DXFP_HELLO_AUTH_SIZE, 3);
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
	/* No cookie yet: MAC2 zero (the writer's record is zeroed). */
	if (dxfp_writer_add_record(w, DXFP_REC_MAC2, DXFP_MAC2_BODY_SIZE, &mac2))
		return DXFP_ERR_NO_SPACE;
	dxfp_writer_finish(w, len);
	return DXFP_OK;
}

/* The last n records of f (n <= 3), oldest first, and where each starts; false if fewer. */
struct tail_records {
	struct dxfp_record rec[3];
	const uint8_t *at[3];
};

static bool last_records(const struct dxfp_frame *f, unsigned int n, struct tail_records *t)
{
	struct dxfp_record_iter it;
	struct dxfp_record r;
	const uint8_t *at;
	unsigned int seen = 0, i;

	memset(t, 0, sizeof(*t));
	dxfp_record_iter_init(&it, f);
	for (at = it.next; dxfp_record_next(&it, &r); at = it.next) {
		for (i = 0; i + 1 < n; i++) {
			t->rec[i] = t->rec[i + 1];
			t->at[i] = t->at[i + 1];
		}
		t->rec[n - 1] = r;
		t->at[n - 1] = at;
		seen++;
	}
	return seen >= n;
}

/* A HELLO's handshake records: NOISE, MAC1, MAC2, last. */
static bool hello_auth_records(const struct dxfp_frame *f, struct tail_records *t)
{
	return last_records(f, 3, t) && t->rec[0].type == DXFP_REC_NOISE &&
	       t->rec[1].type == DXFP_REC_MAC1 && t->rec[2].type == DXFP_REC_MAC2;
}

enum dxfp_err dxfp_hello_check_mac1(const struct dxfp_crypto_ops *ops,
				    const uint8_t mac1_key[DXFP_HASH_SIZE], const uint8_t *buf,
				    size_t len, uint32_t max_frame, struct dxfp_frame *f)
{
	struct tail_records t;
	uint8_t want[DXFP_MAC1_SIZE];
	enum dxfp_err err = dxfp_frame_parse(buf, len, max_frame, f);

	if (err)
		return err;
	if (f->hdr.type != DXFP_HELLO)
		return DXFP_ERR_BAD_TYPE;
	if (!hello_auth_records(f, &t))
		return DXFP_ERR_NO_AUTH;
	dxfp_mac1(ops, mac1_key, buf, (size_t)(t.at[1] - buf), want);
	if (!dxfp_equal_ct(want, t.rec[1].body, DXFP_MAC1_SIZE))
		return DXFP_ERR_BAD_MAC1;
	return DXFP_OK;
}

enum dxfp_err dxfp_hello_open(struct dxfp_noise *hs, const struct dxfp_crypto_ops *ops,
			      const uint8_t s_secret[DXFP_KEY_SIZE],
			      const uint8_t mac1_key[DXFP_HASH_SIZE], const uint8_t *buf,
			      size_t len, uint32_t max_frame, struct dxfp_frame *f,
			      uint64_t *timestamp)
{
	struct tail_records t;
	uint8_t ts[TIMESTAMP_SIZE];
	enum dxfp_err err = dxfp_hello_check_mac1(ops, mac1_key, buf, len, max_frame, f);

	if (err)
		return err;
	hello_auth_records(f, &t);
	dxfp_noise_responder_init(hs, ops, s_secret, buf, (size_t)(t.at[0] - buf));
	if (!dxfp_noise_read_msg1(hs, t.rec[0].body, t.rec[0].len, ts))
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
	struct tail_records t;

	if (f->hdr.type != DXFP_WELCOME)
		return DXFP_ERR_BAD_TYPE;
	if (!last_records(f, 1, &t) || t.rec[0].type != DXFP_REC_NOISE)
		return DXFP_ERR_NO_AUTH;
	dxfp_noise_mix_hash(hs, buf, (size_t)(t.at[0] - buf));
	if (!dxfp_noise_read_msg2(hs, t.rec[0].body, t.rec[0].len, NULL) ||
	    !dxfp_noise_split(hs, keys))
		return DXFP_ERR_BAD_TAG;
	return DXFP_OK;
}

/* ---- cookies ---- */

/* A 16-byte MAC key as HMAC-SHA256's 32: HMAC pads a short key with zeros, so it is the same. */
static void mac_key_of(const uint8_t cookie[DXFP_COOKIE_SIZE], uint8_t key[DXFP_HASH_SIZE])
{
	memset(key, 0, DXFP_HASH_SIZE);
	memcpy(key, cookie, DXFP_COOKIE_SIZE);
}

void dxfp_cookie_make(const struct dxfp_crypto_ops *ops, const uint8_t secret[DXFP_KEY_SIZE],
		      const uint8_t *source, size_t source_len, uint8_t cookie[DXFP_COOKIE_SIZE])
{
	dxfp_mac1(ops, secret, source, source_len, cookie);
}

/* MAC2 of a HELLO whose MAC2 record starts at mac2_at. */
static void hello_mac2(const struct dxfp_crypto_ops *ops, const uint8_t cookie[DXFP_COOKIE_SIZE],
		       const uint8_t *buf, const uint8_t *mac2_at, uint8_t out[DXFP_MAC2_BODY_SIZE])
{
	uint8_t key[DXFP_HASH_SIZE];

	mac_key_of(cookie, key);
	dxfp_mac1(ops, key, buf, (size_t)(mac2_at - buf), out);
	dxpu_wipe(key, sizeof(key));
}

bool dxfp_hello_mac2_ok(const struct dxfp_crypto_ops *ops, const uint8_t cookie[DXFP_COOKIE_SIZE],
			const uint8_t *buf, const struct dxfp_frame *f)
{
	struct tail_records t;
	uint8_t want[DXFP_MAC2_BODY_SIZE];

	if (f->hdr.type != DXFP_HELLO || !hello_auth_records(f, &t))
		return false;
	hello_mac2(ops, cookie, buf, t.at[2], want);
	return dxfp_equal_ct(want, t.rec[2].body, DXFP_MAC2_BODY_SIZE);
}

/* The key a cookie is sealed under: SHA-256("cookie--" || bridge_pub || nonce). */
static void cookie_seal_key(const struct dxfp_crypto_ops *ops,
			    const uint8_t bridge_pub[DXFP_KEY_SIZE],
			    const uint8_t nonce[DXFP_COOKIE_NONCE_SIZE], uint8_t key[DXFP_KEY_SIZE])
{
	static const uint8_t label[8] = { 'c', 'o', 'o', 'k', 'i', 'e', '-', '-' };
	struct dxfp_piece p[3];

	p[0].base = label;
	p[0].len = sizeof(label);
	p[1].base = bridge_pub;
	p[1].len = DXFP_KEY_SIZE;
	p[2].base = nonce;
	p[2].len = DXFP_COOKIE_NONCE_SIZE;
	ops->sha256(key, p, 3);
}

enum dxfp_err dxfp_cookie_reply_write(const struct dxfp_crypto_ops *ops,
				      const uint8_t bridge_pub[DXFP_KEY_SIZE],
				      const uint8_t nonce[DXFP_COOKIE_NONCE_SIZE],
				      const uint8_t cookie[DXFP_COOKIE_SIZE],
				      const struct dxfp_frame *f, uint8_t *out, size_t *len)
{
	struct dxfp_header h = { 0 };
	struct dxfp_writer w;
	struct tail_records t;
	uint8_t key[DXFP_KEY_SIZE], *body = NULL;

	if (f->hdr.type != DXFP_HELLO || !hello_auth_records(f, &t))
		return DXFP_ERR_NO_AUTH;
	h.type = DXFP_COOKIE;
	h.dst_session = f->hdr.src_session;
	h.dst_epoch = f->hdr.src_epoch;
	if (dxfp_writer_init(&w, out, DXFP_COOKIE_FRAME_SIZE, &h) ||
	    dxfp_writer_add_record(&w, DXFP_REC_COOKIE, DXFP_COOKIE_BODY_SIZE, &body))
		return DXFP_ERR_NO_SPACE;
	memcpy(body, nonce, DXFP_COOKIE_NONCE_SIZE);
	cookie_seal_key(ops, bridge_pub, nonce, key);
	ops->aead_seal(body + DXFP_COOKIE_NONCE_SIZE, cookie, DXFP_COOKIE_SIZE, t.rec[1].body,
		       DXFP_MAC1_BODY_SIZE, 0, key);
	dxpu_wipe(key, sizeof(key));
	dxfp_writer_finish(&w, len);
	return DXFP_OK;
}

enum dxfp_err dxfp_cookie_reply_open(const struct dxfp_crypto_ops *ops,
				     const uint8_t bridge_pub[DXFP_KEY_SIZE], const uint8_t *hello,
				     size_t hello_len, const struct dxfp_frame *f,
				     uint8_t cookie[DXFP_COOKIE_SIZE])
{
	struct dxfp_frame hf;
	struct tail_records t, c;
	uint8_t key[DXFP_KEY_SIZE];
	bool ok;

	if (f->hdr.type != DXFP_COOKIE || !last_records(f, 1, &c) ||
	    c.rec[0].type != DXFP_REC_COOKIE)
		return DXFP_ERR_MALFORMED;
	if (dxfp_frame_parse(hello, hello_len, DXFP_MAX_FRAME, &hf) != DXFP_OK ||
	    !hello_auth_records(&hf, &t))
		return DXFP_ERR_NO_AUTH;
	cookie_seal_key(ops, bridge_pub, c.rec[0].body, key);
	ok = ops->aead_open(cookie, c.rec[0].body + DXFP_COOKIE_NONCE_SIZE,
			    DXFP_COOKIE_SIZE + DXFP_TAG_SIZE, t.rec[1].body, DXFP_MAC1_BODY_SIZE, 0,
			    key);
	dxpu_wipe(key, sizeof(key));
	return ok ? DXFP_OK : DXFP_ERR_BAD_TAG;
}

bool dxfp_hello_set_mac2(const struct dxfp_crypto_ops *ops, const uint8_t cookie[DXFP_COOKIE_SIZE],
			 uint8_t *hello, size_t len)
{
	struct dxfp_frame f;
	struct tail_records t;
	uint8_t *mac2;

	if (dxfp_frame_parse(hello, len, DXFP_MAX_FRAME, &f) != DXFP_OK ||
	    !hello_auth_records(&f, &t))
		return false;
	mac2 = hello + (t.at[2] - hello) + DXFP_REC_HDR_SIZE;
	hello_mac2(ops, cookie, hello, t.at[2], mac2);
	dxpu_put_be32(&hello[f.hdr.length - DXFP_CRC_SIZE],
		      dxpu_crc32c(0, hello, f.hdr.length - DXFP_CRC_SIZE));
	return true;
}
