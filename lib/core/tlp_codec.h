/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * tlp_codec.h - strict encoder and decoder for the PCIe TLPs DxPU carries,
 * and the splitting helpers a requester and a completer need.
 *
 * Part of the sans-IO protocol core: no allocation, no I/O, no clock, no
 * global state. The same object code runs in dxpu.ko and in userspace.
 *
 * Decoding takes untrusted bytes. Every rule a TLP can break has its own
 * error code (enum dxpu_tlp_err); no input makes the decoder read outside
 * [buf, buf + len) or write outside *out. A decoded TLP points into the
 * caller's buffer for its payload (zero copy).
 *
 * Carried: MRd, MWr (3DW and 4DW), CfgRd0/CfgWr0/CfgRd1/CfgWr1, Cpl/CplD with
 * every completion status, Msg/MsgD. Not carried (DXPU_TLP_ERR_UNSUPPORTED):
 * I/O, locked, AtomicOp, deprecated TCfg, TLP Prefixes.
 */
#ifndef DXPU_CORE_TLP_CODEC_H
#define DXPU_CORE_TLP_CODEC_H

#include <dxpu/tlp.h>

DXPU_EXTERN_C_BEGIN

enum dxpu_tlp_kind {
	DXPU_TLP_INVALID = 0,
	DXPU_TLP_MRD,	 /* Memory Read Request (3DW or 4DW) */
	DXPU_TLP_MWR,	 /* Memory Write Request (3DW or 4DW) */
	DXPU_TLP_CFGRD0, /* Configuration Read Type 0 */
	DXPU_TLP_CFGWR0, /* Configuration Write Type 0 */
	DXPU_TLP_CFGRD1, /* Configuration Read Type 1 */
	DXPU_TLP_CFGWR1, /* Configuration Write Type 1 */
	DXPU_TLP_CPL,	 /* Completion without data */
	DXPU_TLP_CPLD,	 /* Completion with data */
	DXPU_TLP_MSG,	 /* Message without data */
	DXPU_TLP_MSGD,	 /* Message with data */
	DXPU_TLP_KIND_COUNT
};

/* Flow-control class: PCIe's ordering and credit classes. */
enum dxpu_tlp_class {
	DXPU_TLP_CLASS_POSTED = 0,     /* MWr, Msg, MsgD */
	DXPU_TLP_CLASS_NON_POSTED = 1, /* MRd, Cfg* */
	DXPU_TLP_CLASS_COMPLETION = 2, /* Cpl, CplD */
};

/* Each rule a TLP can break. Stable numbers: they appear in counters. */
enum dxpu_tlp_err {
	DXPU_TLP_OK = 0,
	DXPU_TLP_ERR_SHORT_HEADER,     /* buffer ends inside the header */
	DXPU_TLP_ERR_SHORT_PAYLOAD,    /* buffer ends inside the payload or digest */
	DXPU_TLP_ERR_LENGTH_MISMATCH,  /* bytes left after header + Length DW + digest */
	DXPU_TLP_ERR_RESERVED_FMT,     /* Fmt 101b, 110b, 111b */
	DXPU_TLP_ERR_RESERVED_TYPE,    /* Fmt/Type combination the spec reserves */
	DXPU_TLP_ERR_UNSUPPORTED,      /* defined by PCIe, not carried by DxPU */
	DXPU_TLP_ERR_RESERVED_AT,      /* memory request with AT = 11b */
	DXPU_TLP_ERR_ADDR64_BELOW_4G,  /* 4DW memory header with an address < 4 GiB */
	DXPU_TLP_ERR_LAST_BE_1DW,      /* 1-DW request with Last DW BE != 0000b */
	DXPU_TLP_ERR_FIRST_BE_ZERO,    /* multi-DW request with First DW BE 0000b */
	DXPU_TLP_ERR_LAST_BE_ZERO,     /* multi-DW request with Last DW BE 0000b */
	DXPU_TLP_ERR_BE_NONCONTIG,     /* non-contiguous BE where not permitted */
	DXPU_TLP_ERR_CROSSES_4K,       /* memory request crossing a 4 KiB boundary */
	DXPU_TLP_ERR_CFG_LENGTH,       /* configuration request with Length != 1 */
	DXPU_TLP_ERR_CFG_ATTR,	       /* configuration request with TC != 0 or RO/NS set */
	DXPU_TLP_ERR_RESERVED_STATUS,  /* status 011b, 101b..111b: CplD, or encoding any */
	DXPU_TLP_ERR_CPLD_STATUS,      /* completion with data and status other than SC */
	DXPU_TLP_ERR_CPL_BYTE_COUNT,   /* Byte Count / Lower Address disagree with Length */
	DXPU_TLP_ERR_CPL_SPLIT_ALIGN,  /* partial completion not ending on an RCB boundary */
	DXPU_TLP_ERR_RESERVED_ROUTING, /* message routing 110b, 111b */
	DXPU_TLP_ERR_MSG_FORM,	       /* known message code with wrong routing, data or TC */
	DXPU_TLP_ERR_FIELD_RANGE,      /* encoder: a field outside its range */
	DXPU_TLP_ERR_NO_SPACE,	       /* encoder: output buffer too small */
	DXPU_TLP_ERR_BAD_PARAM,	       /* helper: invalid MPS, MRRS, RCB or range */
	DXPU_TLP_ERR_COUNT
};

/* Header flag bits (struct dxpu_tlp.flags) */
#define DXPU_TLP_F_TD 0x01u  /* TLP digest (ECRC) present */
#define DXPU_TLP_F_EP 0x02u  /* poisoned */
#define DXPU_TLP_F_TH 0x04u  /* TLP processing hints present (memory requests) */
#define DXPU_TLP_F_LN 0x08u  /* lightweight notification (memory requests, completions) */
#define DXPU_TLP_F_BCM 0x10u /* Byte Count Modified (completions) */
#define DXPU_TLP_F_ALL 0x1fu

/*
 * A decoded TLP. Fields that do not apply to its kind are zero after decode
 * and must be zero for encode. Reserved header bits are not represented: the
 * decoder ignores them, as the specification requires of a receiver, and the
 * encoder writes them as zero.
 *
 * TLP Processing Hints (TH set): the Steering Tag ST[7:0] takes the place of
 * Tag[7:0] in a memory write (tag then keeps only T9/T8, and its low byte is
 * zero) and of the byte-enable byte in a memory read, whose byte enables are
 * then implied: first_be 1111b, last_be 1111b (0000b for a 1-DW read).
 */
struct dxpu_tlp {
	uint8_t kind;	       /* enum dxpu_tlp_kind */
	uint8_t tc;	       /* Traffic Class 0..7 */
	uint8_t attr;	       /* DXPU_TLP_ATTR_* */
	uint8_t at;	       /* Address Type (memory requests) */
	uint8_t flags;	       /* DXPU_TLP_F_* */
	uint8_t ph;	       /* Processing Hint (memory requests with TH) */
	uint8_t st;	       /* Steering Tag[7:0] (memory requests with TH), see above */
	uint16_t length_dw;    /* 1..1024; 0 for Cpl and Msg, whose Length is reserved */
	uint16_t requester_id; /* requests and completions */
	uint16_t tag;	       /* 10-bit tag (T9, T8, Tag[7:0]) */
	uint8_t first_be;      /* requests */
	uint8_t last_be;       /* requests */

	uint64_t addr; /* memory requests: DW-aligned address */

	uint16_t cfg_target; /* configuration: completer Bus/Device/Function */
	uint16_t cfg_reg;    /* configuration: byte offset 0..0xffc (Ext:Register:00) */

	uint16_t completer_id; /* completions */
	uint16_t byte_count;   /* completions: 1..4096 */
	uint8_t cpl_status;    /* completions: enum dxpu_tlp_cpl_status */
	uint8_t lower_addr;    /* completions: 0..127 */

	uint8_t msg_code;    /* messages */
	uint8_t msg_routing; /* messages: enum dxpu_tlp_msg_routing */
	uint8_t msg_hdr[8];  /* messages: header bytes 8..15, as on the wire */

	uint32_t digest;	/* ECRC when DXPU_TLP_F_TD (carried, not checked) */
	const uint8_t *payload; /* length_dw * 4 bytes for kinds with data, else NULL */
};

/* ---- properties of a kind ---- */

static inline bool dxpu_tlp_kind_has_data(uint8_t kind)
{
	return kind == DXPU_TLP_MWR || kind == DXPU_TLP_CFGWR0 || kind == DXPU_TLP_CFGWR1 ||
	       kind == DXPU_TLP_CPLD || kind == DXPU_TLP_MSGD;
}

static inline bool dxpu_tlp_kind_is_cfg(uint8_t kind)
{
	return kind >= DXPU_TLP_CFGRD0 && kind <= DXPU_TLP_CFGWR1;
}

static inline bool dxpu_tlp_kind_is_mem(uint8_t kind)
{
	return kind == DXPU_TLP_MRD || kind == DXPU_TLP_MWR;
}

static inline bool dxpu_tlp_kind_is_cpl(uint8_t kind)
{
	return kind == DXPU_TLP_CPL || kind == DXPU_TLP_CPLD;
}

static inline bool dxpu_tlp_kind_is_msg(uint8_t kind)
{
	return kind == DXPU_TLP_MSG || kind == DXPU_TLP_MSGD;
}

static inline enum dxpu_tlp_class dxpu_tlp_kind_class(uint8_t kind)
{
	if (dxpu_tlp_kind_is_cpl(kind))
		return DXPU_TLP_CLASS_COMPLETION;
	if (kind == DXPU_TLP_MWR || dxpu_tlp_kind_is_msg(kind))
		return DXPU_TLP_CLASS_POSTED;
	return DXPU_TLP_CLASS_NON_POSTED;
}

/* Payload bytes on the wire (0 for kinds without data). */
static inline uint32_t dxpu_tlp_payload_len(const struct dxpu_tlp *t)
{
	return dxpu_tlp_kind_has_data(t->kind) ? (uint32_t)t->length_dw * 4u : 0u;
}

/* Header size on the wire: 16 for messages and memory addresses >= 4 GiB. */
static inline uint32_t dxpu_tlp_header_len(const struct dxpu_tlp *t)
{
	if (dxpu_tlp_kind_is_msg(t->kind) || (dxpu_tlp_kind_is_mem(t->kind) && (t->addr >> 32)))
		return DXPU_TLP_HDR4_SIZE;
	return DXPU_TLP_HDR3_SIZE;
}

/*
 * Whether a completion is the last one for its request: a Cpl, or any status
 * but SC, ends it; a CplD ends it when its Byte Count (the bytes left,
 * including these) is no more than the bytes it carries.
 */
static inline bool dxpu_tlp_cpl_is_final(const struct dxpu_tlp *t)
{
	uint32_t bytes;

	if (t->kind != DXPU_TLP_CPLD || t->cpl_status != DXPU_TLP_CPL_SC)
		return true;
	bytes = (uint32_t)t->length_dw * 4u - (t->lower_addr & 3u);
	return t->byte_count <= bytes;
}

/* Header + payload + digest. */
static inline uint32_t dxpu_tlp_wire_len(const struct dxpu_tlp *t)
{
	return dxpu_tlp_header_len(t) + dxpu_tlp_payload_len(t) +
	       ((t->flags & DXPU_TLP_F_TD) ? DXPU_TLP_DIGEST_SIZE : 0u);
}

/* ---- codec ---- */

/*
 * Total size (header, payload, digest) of the TLP whose DW0 starts buf, from
 * DW0 alone: lets a stream be cut into TLPs. Checks Fmt/Type and that 4 bytes
 * are there, nothing else.
 */
enum dxpu_tlp_err dxpu_tlp_peek_size(const uint8_t *buf, size_t len, uint32_t *size);

/*
 * Kind and payload bytes of the TLP whose DW0 starts buf, from DW0 alone (for
 * a TLP already checked whole, e.g. in a frame the parser accepted): as
 * dxpu_tlp_peek_size(), without decoding the rest of the header.
 */
enum dxpu_tlp_err dxpu_tlp_peek_kind(const uint8_t *buf, size_t len, uint8_t *kind,
				     uint32_t *payload);

/*
 * Decode exactly one TLP occupying buf[0..len). On success *out is filled and
 * out->payload points into buf. On error *out is unspecified. A Cpl with a
 * reserved Completion Status decodes as UR (PCIe: treated as Unsupported
 * Request), so that the request it answers ends; validate and encode refuse
 * reserved statuses (nothing here sends one).
 */
enum dxpu_tlp_err dxpu_tlp_decode(const uint8_t *buf, size_t len, struct dxpu_tlp *out);
/*
 * The fields of bytes dxpu_tlp_decode already accepted (a TLP record of a frame
 * dxfp_frame_parse accepted), without checking the rules again.
 */
void dxpu_tlp_decode_valid(const uint8_t *buf, size_t len, struct dxpu_tlp *out);

/* Check a TLP struct against every rule of its kind (decode and encode use it). */
enum dxpu_tlp_err dxpu_tlp_validate(const struct dxpu_tlp *t);

/*
 * Encode a TLP into buf[0..cap). Validates first: nothing is written for an
 * invalid TLP. On success *len is dxpu_tlp_wire_len(t).
 */
enum dxpu_tlp_err dxpu_tlp_encode(const struct dxpu_tlp *t, uint8_t *buf, size_t cap, size_t *len);
/* The same for a TLP that passed dxpu_tlp_validate (the caller just checked it): not again. */
enum dxpu_tlp_err dxpu_tlp_encode_valid(const struct dxpu_tlp *t, uint8_t *buf, size_t cap,
					size_t *len);

/* Short stable identifier ("short-header") and a sentence for an error code. */
const char *dxpu_tlp_err_name(enum dxpu_tlp_err err);
const char *dxpu_tlp_err_text(enum dxpu_tlp_err err);

/* "MRd", "CplD", ... ("?" for an invalid kind). */
const char *dxpu_tlp_kind_name(uint8_t kind);

/* "SC", "UR", "CRS", "CA" ("reserved" otherwise). */
const char *dxpu_tlp_cpl_status_name(uint8_t status);

/* "to-rc", "by-address", "by-id", "broadcast", "local", "gather" ("reserved" otherwise). */
const char *dxpu_tlp_routing_name(uint8_t routing);

/* One-line human description; returns what snprintf returns. */
int dxpu_tlp_format(const struct dxpu_tlp *t, char *buf, size_t size);

/* ---- message helpers (header bytes 8..15) ---- */

static inline uint16_t dxpu_tlp_msg_target_id(const struct dxpu_tlp *t)
{
	return dxpu_get_be16(&t->msg_hdr[0]);
}

static inline uint16_t dxpu_tlp_msg_vendor_id(const struct dxpu_tlp *t)
{
	return dxpu_get_be16(&t->msg_hdr[2]);
}

static inline bool dxpu_tlp_msg_is_intx(uint8_t code)
{
	return code >= DXPU_TLP_MSG_ASSERT_INTA && code <= DXPU_TLP_MSG_DEASSERT_INTD;
}

/* ---- completer helpers ---- */

/*
 * Byte Count of the first (or only) completion of a memory read, from the
 * request's Length and byte enables: the span from the first enabled byte to
 * the last. A zero-length read (Length 1, First BE 0000b) counts 1.
 */
uint32_t dxpu_tlp_read_byte_count(uint16_t length_dw, uint8_t first_be, uint8_t last_be);

/* Lower Address of the first completion: Address[6:2] and the first enabled byte. */
uint8_t dxpu_tlp_read_lower_addr(uint64_t addr, uint8_t first_be);

/*
 * Splitting a read's data into completions. Every completion but the last
 * ends on a naturally aligned RCB boundary and carries at most max_payload
 * bytes (the completer's Max Payload Size).
 */
struct dxpu_tlp_cpl_split {
	uint64_t next;	    /* byte address of the next byte to complete */
	uint64_t end;	    /* byte address one past the last enabled byte */
	uint64_t dw_base;   /* DW-aligned address of the request */
	uint32_t remaining; /* bytes still to complete */
	uint32_t rcb;
	uint32_t max_payload;
};

struct dxpu_tlp_cpl_piece {
	uint16_t offset_dw;  /* index of the first payload DW within the request */
	uint16_t length_dw;  /* payload DWs of this completion */
	uint16_t byte_count; /* Byte Count field: bytes remaining, this one's included */
	uint8_t lower_addr;  /* Lower Address field */
};

/*
 * rcb: 64 or 128. max_payload: power of two, 128..4096, >= rcb. The request
 * must itself be valid (length_dw 1..1024, byte enables, no 4 KiB crossing).
 */
enum dxpu_tlp_err dxpu_tlp_cpl_split_init(struct dxpu_tlp_cpl_split *s, uint64_t addr,
					  uint16_t length_dw, uint8_t first_be, uint8_t last_be,
					  uint32_t rcb, uint32_t max_payload);
bool dxpu_tlp_cpl_split_next(struct dxpu_tlp_cpl_split *s, struct dxpu_tlp_cpl_piece *p);

/* ---- requester helpers ---- */

/*
 * Splitting a byte range [addr, addr + nbytes) into memory requests of at
 * most max_bytes each that never cross a 4 KiB boundary: a write at Max
 * Payload Size, a read at Max Read Request Size. Pieces end on naturally
 * aligned max_bytes boundaries, so a long aligned transfer uses full-size
 * requests.
 */
struct dxpu_tlp_req_split {
	uint64_t start; /* first byte of the transfer */
	uint64_t next;	/* first byte not yet covered */
	uint64_t end;	/* one past the last byte */
	uint32_t max_bytes;
};

struct dxpu_tlp_req_piece {
	uint64_t addr;	    /* DW-aligned request address */
	uint64_t offset;    /* offset of the piece's first byte within the transfer */
	uint32_t nbytes;    /* enabled bytes in this piece */
	uint16_t length_dw; /* Length field */
	uint8_t first_be;
	uint8_t last_be;
};

/* max_bytes: power of two, 128..4096. nbytes >= 1; the range must not wrap. */
enum dxpu_tlp_err dxpu_tlp_req_split_init(struct dxpu_tlp_req_split *s, uint64_t addr,
					  uint64_t nbytes, uint32_t max_bytes);
bool dxpu_tlp_req_split_next(struct dxpu_tlp_req_split *s, struct dxpu_tlp_req_piece *p);

/*
 * The memory request (kind DXPU_TLP_MRD or DXPU_TLP_MWR) a piece stands for:
 * kind, address, Length and byte enables set, every other field zero. The
 * caller adds the requester, the tag and, for a write, the payload.
 */
void dxpu_tlp_req_piece_header(const struct dxpu_tlp_req_piece *p, uint8_t kind,
			       struct dxpu_tlp *out);

/*
 * The single memory request covering [addr, addr + nbytes) exactly, as
 * dxpu_tlp_req_piece_header() fills it. False, and *out untouched, when that
 * takes more than one TLP: nbytes 0 or over 4096, or a 4 KiB crossing.
 */
bool dxpu_tlp_mem_request(uint8_t kind, uint64_t addr, uint32_t nbytes, struct dxpu_tlp *out);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_TLP_CODEC_H */
