// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxfp_frame.c - DxFP frame parser and writer (see dxfp_frame.h).
 */
#include "dxfp_frame.h"
#include "crc32c.h"

static size_t pad4(size_t n)
{
	return (n + 3u) & ~(size_t)3u;
}

/* Body length a known record must have (0: any), and the frames it may appear in. */
static bool record_allowed(uint8_t rec_type, uint8_t frame_type, size_t *body_len)
{
	*body_len = 0;
	switch (rec_type) {
	case DXFP_REC_TLP:
		return frame_type == DXFP_DATA;
	case DXFP_REC_CREDIT:
		*body_len = DXFP_CREDIT_BODY_SIZE;
		return frame_type == DXFP_HELLO || frame_type == DXFP_WELCOME ||
		       frame_type == DXFP_DATA;
	case DXFP_REC_HELLO:
		*body_len = DXFP_HELLO_BODY_SIZE;
		return frame_type == DXFP_HELLO || frame_type == DXFP_WELCOME;
	case DXFP_REC_CLOSE:
		*body_len = DXFP_CLOSE_BODY_SIZE;
		return frame_type == DXFP_CLOSE;
	case DXFP_REC_NOISE:
		*body_len = frame_type == DXFP_HELLO ? DXFP_NOISE_HELLO_BODY_SIZE
						     : DXFP_NOISE_WELCOME_BODY_SIZE;
		return frame_type == DXFP_HELLO || frame_type == DXFP_WELCOME;
	case DXFP_REC_MAC1: /* MAC1 and MAC2: the same size, HELLO only */
	case DXFP_REC_MAC2:
		*body_len = DXFP_MAC1_BODY_SIZE;
		return frame_type == DXFP_HELLO;
	case DXFP_REC_COOKIE:
		*body_len = DXFP_COOKIE_BODY_SIZE;
		return frame_type == DXFP_COOKIE;
	default:
		return true; /* unknown records are skipped */
	}
}

static void read_header(const uint8_t *b, struct dxfp_header *h)
{
	h->version = b[DXFP_OFF_VERSION];
	h->type = b[DXFP_OFF_TYPE];
	h->flags = b[DXFP_OFF_FLAGS];
	h->length = dxpu_get_be16(&b[DXFP_OFF_LENGTH]);
	h->nrec = dxpu_get_be16(&b[DXFP_OFF_NREC]);
	h->dst_session = dxpu_get_be32(&b[DXFP_OFF_DST_SESSION]);
	h->src_session = dxpu_get_be32(&b[DXFP_OFF_SRC_SESSION]);
	h->dst_epoch = dxpu_get_be32(&b[DXFP_OFF_DST_EPOCH]);
	h->src_epoch = dxpu_get_be32(&b[DXFP_OFF_SRC_EPOCH]);
	h->seq = dxpu_get_be32(&b[DXFP_OFF_SEQ]);
	h->ack = dxpu_get_be32(&b[DXFP_OFF_ACK]);
}

bool dxfp_header_peek(const uint8_t *buf, size_t len, struct dxfp_header *h)
{
	if (len < DXFP_HDR_SIZE)
		return false;
	read_header(buf, h);
	return true;
}

/* One record at p (before end): bounds, padding, known body. Returns the next record. */
static const uint8_t *check_record(const uint8_t *p, const uint8_t *end, uint8_t frame_type)
{
	struct dxpu_tlp tlp;
	size_t body_len, padded, want;

	if ((size_t)(end - p) < DXFP_REC_HDR_SIZE || p[1])
		return NULL;
	body_len = dxpu_get_be16(&p[2]);
	padded = pad4(body_len);
	if ((size_t)(end - p) - DXFP_REC_HDR_SIZE < padded)
		return NULL;
	if (!dxpu_all_zero(&p[DXFP_REC_HDR_SIZE + body_len], padded - body_len))
		return NULL;
	if (!record_allowed(p[0], frame_type, &want) || (want && body_len != want))
		return NULL;
	if (p[0] == DXFP_REC_TLP &&
	    dxpu_tlp_decode(&p[DXFP_REC_HDR_SIZE], body_len, &tlp) != DXPU_TLP_OK)
		return NULL;
	return p + DXFP_REC_HDR_SIZE + padded;
}

static enum dxfp_err check_records(const struct dxfp_frame *f)
{
	const uint8_t *p = f->records, *end = f->records + f->records_len;
	uint32_t n = 0;

	while (p < end) {
		p = check_record(p, end, f->hdr.type);
		if (!p)
			return DXFP_ERR_MALFORMED;
		n++;
	}
	return n == f->hdr.nrec ? DXFP_OK : DXFP_ERR_MALFORMED;
}

enum dxfp_err dxfp_frame_parse(const uint8_t *buf, size_t len, uint32_t max_frame,
			       struct dxfp_frame *f)
{
	uint16_t flen;

	if (len < DXFP_MIN_FRAME)
		return DXFP_ERR_TRUNCATED;
	flen = dxpu_get_be16(&buf[DXFP_OFF_LENGTH]);
	if (flen < DXFP_MIN_FRAME || flen > max_frame || flen > DXFP_MAX_FRAME || (flen & 3u))
		return DXFP_ERR_BAD_LENGTH;
	if (flen > len)
		return DXFP_ERR_TRUNCATED;
	if (dxpu_crc32c(0, buf, flen - DXFP_CRC_SIZE) != dxpu_get_be32(&buf[flen - DXFP_CRC_SIZE]))
		return DXFP_ERR_BAD_CRC;
	return dxfp_frame_parse_body(buf, &buf[DXFP_HDR_SIZE], flen - DXFP_HDR_SIZE - DXFP_CRC_SIZE,
				     0, f);
}

enum dxfp_err dxfp_frame_parse_body(const uint8_t *hdr, const uint8_t *records, size_t records_len,
				    uint8_t extra_flags, struct dxfp_frame *f)
{
	read_header(hdr, &f->hdr);
	if (f->hdr.version != DXFP_VERSION)
		return DXFP_ERR_BAD_VERSION;
	if (f->hdr.type < DXFP_HELLO || f->hdr.type > DXFP_COOKIE)
		return DXFP_ERR_BAD_TYPE;
	if (hdr[DXFP_OFF_RSVD] || (f->hdr.flags & ~(DXFP_F_ALL | extra_flags)))
		return DXFP_ERR_MALFORMED;
	f->records = records;
	f->records_len = records_len;
	return check_records(f);
}

void dxfp_record_iter_init(struct dxfp_record_iter *it, const struct dxfp_frame *f)
{
	it->next = f->records;
	it->end = f->records + f->records_len;
}

bool dxfp_record_next(struct dxfp_record_iter *it, struct dxfp_record *r)
{
	if ((size_t)(it->end - it->next) < DXFP_REC_HDR_SIZE)
		return false;
	r->type = it->next[0];
	r->len = dxpu_get_be16(&it->next[2]);
	r->body = &it->next[DXFP_REC_HDR_SIZE];
	it->next += DXFP_REC_HDR_SIZE + pad4(r->len);
	return true;
}

void dxfp_credits_read(const uint8_t *body, struct dxfp_credits *c)
{
	size_t i;

	for (i = 0; i < 3; i++) {
		c->hdr[i] = dxpu_get_be32(&body[8 * i]);
		c->data[i] = dxpu_get_be32(&body[8 * i + 4]);
	}
}

void dxfp_hello_read(const uint8_t *body, struct dxfp_hello *h)
{
	h->version_min = body[0];
	h->version_max = body[1];
	h->caps = dxpu_get_be16(&body[2]);
	h->max_frame = dxpu_get_be16(&body[4]);
	h->node_id = ((uint64_t)dxpu_get_be32(&body[8]) << 32) | dxpu_get_be32(&body[12]);
	h->replay_window = dxpu_get_be32(&body[16]);
}

void dxfp_close_read(const uint8_t *body, struct dxfp_close *c)
{
	c->reason = dxpu_get_be16(&body[0]);
	c->version_min = body[4];
	c->version_max = body[5];
}

/* ---- writer ---- */

enum dxfp_err dxfp_writer_init(struct dxfp_writer *w, uint8_t *buf, size_t cap,
			       const struct dxfp_header *h)
{
	if (cap < DXFP_MIN_FRAME)
		return DXFP_ERR_NO_SPACE;
	if (h->type < DXFP_HELLO || h->type > DXFP_COOKIE || (h->flags & ~DXFP_F_ALL))
		return DXFP_ERR_BAD_TYPE;
	w->buf = buf;
	w->cap = cap > DXFP_MAX_FRAME ? DXFP_MAX_FRAME : cap;
	w->len = DXFP_HDR_SIZE;
	w->nrec = 0;
	memset(buf, 0, DXFP_HDR_SIZE);
	buf[DXFP_OFF_VERSION] = DXFP_VERSION;
	buf[DXFP_OFF_TYPE] = h->type;
	buf[DXFP_OFF_FLAGS] = h->flags;
	dxpu_put_be32(&buf[DXFP_OFF_DST_SESSION], h->dst_session);
	dxpu_put_be32(&buf[DXFP_OFF_SRC_SESSION], h->src_session);
	dxpu_put_be32(&buf[DXFP_OFF_DST_EPOCH], h->dst_epoch);
	dxpu_put_be32(&buf[DXFP_OFF_SRC_EPOCH], h->src_epoch);
	dxpu_put_be32(&buf[DXFP_OFF_SEQ], h->seq);
	dxpu_put_be32(&buf[DXFP_OFF_ACK], h->ack);
	return DXFP_OK;
}

/* Bytes left for a record body, after its header and before the CRC. */
static size_t body_room(const struct dxfp_writer *w)
{
	size_t used = w->len + DXFP_REC_HDR_SIZE + DXFP_CRC_SIZE;

	return (w->cap & ~(size_t)3u) > used && w->nrec < 0xffffu ? (w->cap & ~(size_t)3u) - used
								  : 0u;
}

size_t dxfp_writer_tlp_room(const struct dxfp_writer *w)
{
	size_t want;

	if (!record_allowed(DXFP_REC_TLP, w->buf[DXFP_OFF_TYPE], &want))
		return 0;
	return body_room(w);
}

/*
 * Reserve a record of body_len bytes: *body points at it, zero-padded.
 * DXFP_ERR_BAD_TYPE if this frame type cannot carry the record.
 */
enum dxfp_err dxfp_writer_add_record(struct dxfp_writer *w, uint8_t type, size_t body_len,
				     uint8_t **body)
{
	size_t want;
	uint8_t *rec;

	if (!record_allowed(type, w->buf[DXFP_OFF_TYPE], &want))
		return DXFP_ERR_BAD_TYPE;
	if (pad4(body_len) > body_room(w))
		return DXFP_ERR_NO_SPACE;
	rec = &w->buf[w->len];
	rec[0] = type;
	rec[1] = 0;
	dxpu_put_be16(&rec[2], (uint16_t)body_len);
	memset(&rec[DXFP_REC_HDR_SIZE], 0, pad4(body_len));
	w->len += DXFP_REC_HDR_SIZE + pad4(body_len);
	w->nrec++;
	*body = &rec[DXFP_REC_HDR_SIZE];
	return DXFP_OK;
}

enum dxfp_err dxfp_writer_add_tlp(struct dxfp_writer *w, const struct dxpu_tlp *t)
{
	size_t tlp_len = 0;
	uint8_t *body = NULL;
	enum dxfp_err err;

	if (dxpu_tlp_validate(t) != DXPU_TLP_OK)
		return DXFP_ERR_MALFORMED;
	err = dxfp_writer_add_record(w, DXFP_REC_TLP, dxpu_tlp_wire_len(t), &body);
	if (err)
		return err;
	/* Cannot fail: validated, and the record has exactly wire_len bytes. */
	(void)dxpu_tlp_encode_valid(t, body, dxpu_tlp_wire_len(t), &tlp_len);
	return DXFP_OK;
}

enum dxfp_err dxfp_writer_add_credits(struct dxfp_writer *w, const struct dxfp_credits *c)
{
	uint8_t *b = NULL;
	enum dxfp_err err = dxfp_writer_add_record(w, DXFP_REC_CREDIT, DXFP_CREDIT_BODY_SIZE, &b);
	size_t i;

	if (err)
		return err;
	for (i = 0; i < 3; i++) {
		dxpu_put_be32(&b[8 * i], c->hdr[i]);
		dxpu_put_be32(&b[8 * i + 4], c->data[i]);
	}
	return DXFP_OK;
}

enum dxfp_err dxfp_writer_add_hello(struct dxfp_writer *w, const struct dxfp_hello *h)
{
	uint8_t *b = NULL;
	enum dxfp_err err = dxfp_writer_add_record(w, DXFP_REC_HELLO, DXFP_HELLO_BODY_SIZE, &b);

	if (err)
		return err;
	b[0] = h->version_min;
	b[1] = h->version_max;
	dxpu_put_be16(&b[2], h->caps);
	dxpu_put_be16(&b[4], h->max_frame);
	dxpu_put_be32(&b[8], (uint32_t)(h->node_id >> 32));
	dxpu_put_be32(&b[12], (uint32_t)h->node_id);
	dxpu_put_be32(&b[16], h->replay_window);
	return DXFP_OK;
}

enum dxfp_err dxfp_writer_add_close(struct dxfp_writer *w, const struct dxfp_close *c)
{
	uint8_t *b = NULL;
	enum dxfp_err err = dxfp_writer_add_record(w, DXFP_REC_CLOSE, DXFP_CLOSE_BODY_SIZE, &b);

	if (err)
		return err;
	dxpu_put_be16(&b[0], c->reason);
	b[4] = c->version_min;
	b[5] = c->version_max;
	return DXFP_OK;
}

void dxfp_writer_finish_header(struct dxfp_writer *w, const struct dxfp_piece *more, size_t n,
			       uint16_t more_nrec, size_t *len)
{
	size_t total = w->len + DXFP_CRC_SIZE, i;

	for (i = 0; i < n; i++)
		total += more[i].len;
	dxpu_put_be16(&w->buf[DXFP_OFF_LENGTH], (uint16_t)total);
	dxpu_put_be16(&w->buf[DXFP_OFF_NREC], (uint16_t)(w->nrec + more_nrec));
	*len = total;
}

void dxfp_writer_finish_pieces(struct dxfp_writer *w, const struct dxfp_piece *more, size_t n,
			       uint16_t more_nrec, uint8_t crc[DXFP_CRC_SIZE], size_t *len)
{
	size_t i;
	uint32_t c;

	dxfp_writer_finish_header(w, more, n, more_nrec, len);
	c = dxpu_crc32c(0, w->buf, w->len);
	for (i = 0; i < n; i++)
		c = dxpu_crc32c(c, more[i].base, more[i].len);
	dxpu_put_be32(crc, c);
}

void dxfp_writer_finish(struct dxfp_writer *w, size_t *len)
{
	dxfp_writer_finish_pieces(w, NULL, 0, 0, &w->buf[w->len], len);
}

uint32_t dxfp_frame_payload_limit(uint32_t max_frame, uint32_t header_bytes, uint32_t cap)
{
	const uint32_t overhead = DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + header_bytes + DXFP_CRC_SIZE;

	while (cap > 0 && cap + overhead > max_frame)
		cap /= 2;
	return cap;
}

const char *dxfp_err_name(enum dxfp_err err)
{
	static const char *const names[DXFP_ERR_COUNT] = {
		[DXFP_OK] = "ok",
		[DXFP_ERR_TRUNCATED] = "truncated",
		[DXFP_ERR_BAD_LENGTH] = "bad-length",
		[DXFP_ERR_BAD_CRC] = "bad-crc",
		[DXFP_ERR_BAD_VERSION] = "bad-version",
		[DXFP_ERR_BAD_TYPE] = "bad-type",
		[DXFP_ERR_MALFORMED] = "malformed",
		[DXFP_ERR_NO_SPACE] = "no-space",
		[DXFP_ERR_BAD_TAG] = "bad-tag",
		[DXFP_ERR_REPLAYED] = "replayed",
		[DXFP_ERR_NO_AUTH] = "no-auth",
		[DXFP_ERR_BAD_MAC1] = "bad-mac1",
	};

	return (unsigned int)err < DXFP_ERR_COUNT ? names[err] : "unknown";
}
