/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_frame.h - strict parser and in-place writer of DxFP frames
 * (docs/protocol.md, section 4). Sans-IO, no allocation: the parser reads the
 * caller's buffer, the writer fills the caller's buffer.
 *
 * dxfp_frame_parse() checks a received frame completely (length, CRC32C,
 * version, type, every record's bounds, padding and body, every TLP record
 * with the strict TLP decoder) before it returns DXFP_OK, so a user that
 * walks the records afterwards never sees a frame it must partly undo.
 */
#ifndef DXPU_CORE_DXFP_FRAME_H
#define DXPU_CORE_DXFP_FRAME_H

#include <dxpu/dxfp.h>

#include "tlp_codec.h"

DXPU_EXTERN_C_BEGIN

/* Why a frame was not used; each is a drop counter of the session layer. */
enum dxfp_err {
	DXFP_OK = 0,
	DXFP_ERR_TRUNCATED,   /* fewer bytes than the minimum frame or than Length */
	DXFP_ERR_BAD_LENGTH,  /* Length below 36, above max_frame, or not a multiple of 4 */
	DXFP_ERR_BAD_CRC,     /* CRC32C mismatch */
	DXFP_ERR_BAD_VERSION, /* Version not 1 (header version and type still reported) */
	DXFP_ERR_BAD_TYPE,    /* unknown frame type */
	DXFP_ERR_MALFORMED,   /* records, padding, reserved bytes or a TLP record invalid */
	DXFP_ERR_NO_SPACE,    /* writer: the record does not fit */
	DXFP_ERR_BAD_TAG,     /* sealed frame: the AEAD tag fails (forged, corrupt, wrong key) */
	DXFP_ERR_REPLAYED,    /* sealed frame: its counter was taken already or is too old */
	DXFP_ERR_NO_AUTH,     /* a HELLO or WELCOME without the handshake's records */
	DXFP_ERR_BAD_MAC1,    /* a HELLO whose MAC1 fails: its sender does not know our key */
	DXFP_ERR_COUNT
};

struct dxfp_header {
	uint8_t version;
	uint8_t type;  /* enum dxfp_frame_type */
	uint8_t flags; /* DXFP_F_* */
	uint16_t length;
	uint16_t nrec;
	uint32_t dst_session;
	uint32_t src_session;
	uint32_t dst_epoch;
	uint32_t src_epoch;
	uint32_t seq;
	uint32_t ack;
};

/* Flow-control classes index these arrays: enum dxpu_tlp_class. */
struct dxfp_credits {
	uint32_t hdr[3];  /* cumulative header credit limit (TLPs), mod 2^32 */
	uint32_t data[3]; /* cumulative data credit limit (16-byte units), mod 2^32 */
};

struct dxfp_hello {
	uint8_t version_min;
	uint8_t version_max;
	uint16_t caps;
	uint16_t max_frame;
	uint64_t node_id;
	uint32_t replay_window; /* TLPs */
};

struct dxfp_close {
	uint16_t reason; /* enum dxfp_close_reason */
	uint8_t version_min;
	uint8_t version_max;
};

/* A parsed frame: its header and where its records are in the caller's buffer. */
struct dxfp_frame {
	struct dxfp_header hdr;
	const uint8_t *records; /* first record */
	size_t records_len;	/* bytes from the first record to the CRC */
};

struct dxfp_record {
	uint8_t type; /* enum dxfp_record_type, or one this end does not know */
	uint16_t len; /* body length, unpadded */
	const uint8_t *body;
};

struct dxfp_record_iter {
	const uint8_t *next;
	const uint8_t *end;
};

/*
 * Parse and check the frame in buf[0..len) (len may include Ethernet padding
 * after Length). max_frame: the session's limit, DXFP_MIN_FRAME..DXFP_MAX_FRAME.
 * On DXFP_ERR_BAD_VERSION, f->hdr.version and f->hdr.type are valid.
 */
enum dxfp_err dxfp_frame_parse(const uint8_t *buf, size_t len, uint32_t max_frame,
			       struct dxfp_frame *f);

/*
 * Read the header of the frame in buf[0..len) without checking the frame (a
 * sealed frame cannot be checked before its session opens it): for routing
 * only. False when len is shorter than a header.
 */
bool dxfp_header_peek(const uint8_t *buf, size_t len, struct dxfp_header *h);

/*
 * The checks of dxfp_frame_parse() after the length and the CRC: the 32-byte
 * header at hdr, records_len bytes of records at records. extra_flags: flag
 * bits allowed beyond DXFP_F_ALL (the sealed-frame code passes DXFP_F_SEALED).
 */
enum dxfp_err dxfp_frame_parse_body(const uint8_t *hdr, const uint8_t *records, size_t records_len,
				    uint8_t extra_flags, struct dxfp_frame *f);

/* Walk the records of a frame dxfp_frame_parse() accepted. */
void dxfp_record_iter_init(struct dxfp_record_iter *it, const struct dxfp_frame *f);
bool dxfp_record_next(struct dxfp_record_iter *it, struct dxfp_record *r);

/* Record bodies (the parser has already checked their lengths). */
void dxfp_credits_read(const uint8_t *body, struct dxfp_credits *c);
void dxfp_hello_read(const uint8_t *body, struct dxfp_hello *h);
void dxfp_close_read(const uint8_t *body, struct dxfp_close *c);

/* Building a frame in place: init, add records, finish. */
struct dxfp_writer {
	uint8_t *buf;
	size_t cap; /* usable bytes, CRC included: min(buffer size, max_frame) */
	size_t len; /* bytes written so far, CRC excluded */
	uint16_t nrec;
};

/* cap: bytes the frame may take, CRC included (DXFP_MIN_FRAME..DXFP_MAX_FRAME). */
enum dxfp_err dxfp_writer_init(struct dxfp_writer *w, uint8_t *buf, size_t cap,
			       const struct dxfp_header *h);

/* Largest TLP (header + payload + digest) that still fits as a record. */
size_t dxfp_writer_tlp_room(const struct dxfp_writer *w);

/*
 * Add records. DXFP_ERR_NO_SPACE: it does not fit; DXFP_ERR_BAD_TYPE: this frame
 * type does not carry it; add_tlp also DXFP_ERR_MALFORMED: the TLP does not
 * validate. The TLP is encoded straight into the frame.
 */
enum dxfp_err dxfp_writer_add_tlp(struct dxfp_writer *w, const struct dxpu_tlp *t);
enum dxfp_err dxfp_writer_add_credits(struct dxfp_writer *w, const struct dxfp_credits *c);
enum dxfp_err dxfp_writer_add_hello(struct dxfp_writer *w, const struct dxfp_hello *h);
enum dxfp_err dxfp_writer_add_close(struct dxfp_writer *w, const struct dxfp_close *c);

/*
 * Add a record of this type with a body of body_len bytes (zeroed, padding
 * included) and point *body at it for the caller to fill: for records the
 * functions above do not write (the handshake's, dxfp_handshake.c).
 */
enum dxfp_err dxfp_writer_add_record(struct dxfp_writer *w, uint8_t type, size_t body_len,
				     uint8_t **body);

/* Set Length and the record count, append the CRC32C; *len = frame size. */
void dxfp_writer_finish(struct dxfp_writer *w, size_t *len);

/* Some bytes of a frame that lie outside the writer's buffer (scatter-gather). */
struct dxfp_piece {
	const uint8_t *base;
	size_t len;
};

/*
 * dxfp_writer_finish_pieces() without the CRC: Length (counting the CRC's
 * place) and the record count only, for a frame that will be sealed
 * (dxfp_seal.h: the tag takes the CRC's place, so the CRC is never computed).
 */
void dxfp_writer_finish_header(struct dxfp_writer *w, const struct dxfp_piece *more, size_t n,
			       uint16_t more_nrec, size_t *len);

/*
 * Finish a frame whose records go on past the writer's buffer: the n pieces
 * (whole encoded records, more_nrec of them, directly after w's bytes on the
 * wire) and then the CRC32C, which is written to crc and covers w's bytes and
 * the pieces in order. Sets Length and the record count in w's header;
 * *len = frame size. The caller has checked that the frame fits its cap.
 */
void dxfp_writer_finish_pieces(struct dxfp_writer *w, const struct dxfp_piece *more, size_t n,
			       uint16_t more_nrec, uint8_t crc[DXFP_CRC_SIZE], size_t *len);

/*
 * The largest power-of-two payload, up to cap, of a TLP with a header_bytes header that one
 * frame of max_frame bytes carries alone (frame header, record header, TLP, CRC); 0 when not
 * even 1 byte fits.
 */
uint32_t dxfp_frame_payload_limit(uint32_t max_frame, uint32_t header_bytes, uint32_t cap);

const char *dxfp_err_name(enum dxfp_err err);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_FRAME_H */
