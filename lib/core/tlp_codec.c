// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * tlp_codec.c - strict PCIe TLP encoder and decoder (see tlp_codec.h).
 *
 * Decoding is three steps, each bounded by what was checked before it:
 * classify DW0 (Fmt/Type -> kind, header and total size), check the buffer
 * length against that size, then parse the header into the struct and run
 * dxpu_tlp_validate(), the one place the per-kind rules live.
 */
#include "tlp_codec.h"

/* ---- classification of Fmt/Type ---- */

static enum dxpu_tlp_err classify_mem(uint8_t fmt, uint8_t *kind)
{
	*kind = (fmt & DXPU_TLP_FMT_DATA_BIT) ? DXPU_TLP_MWR : DXPU_TLP_MRD;
	return DXPU_TLP_OK;
}

/* Types that only have 3DW forms: configuration and completions. */
static enum dxpu_tlp_err classify_3dw_only(uint8_t fmt, uint8_t kind_nodata, uint8_t kind_data,
					   uint8_t *kind)
{
	if (fmt & DXPU_TLP_FMT_4DW_BIT)
		return DXPU_TLP_ERR_RESERVED_TYPE;
	*kind = (fmt & DXPU_TLP_FMT_DATA_BIT) ? kind_data : kind_nodata;
	return DXPU_TLP_OK;
}

/* PCIe-defined TLPs DxPU does not carry; their reserved Fmt forms stay reserved. */
static enum dxpu_tlp_err classify_not_carried(uint8_t fmt, uint8_t type)
{
	switch (type) {
	case DXPU_TLP_TYPE_MEM_LK: /* MRdLk: 3DW/4DW without data */
		return (fmt & DXPU_TLP_FMT_DATA_BIT) ? DXPU_TLP_ERR_RESERVED_TYPE
						     : DXPU_TLP_ERR_UNSUPPORTED;
	case DXPU_TLP_TYPE_TCFG: /* TCfgRd, TCfgWr (3DW); Deferrable MWr (3DW/4DW, data) */
		return (fmt == DXPU_TLP_FMT_4DW) ? DXPU_TLP_ERR_RESERVED_TYPE
						 : DXPU_TLP_ERR_UNSUPPORTED;
	case DXPU_TLP_TYPE_IO: /* IORd/IOWr, CplLk/CplDLk: 3DW only */
	case DXPU_TLP_TYPE_CPL_LK:
		return (fmt & DXPU_TLP_FMT_4DW_BIT) ? DXPU_TLP_ERR_RESERVED_TYPE
						    : DXPU_TLP_ERR_UNSUPPORTED;
	case DXPU_TLP_TYPE_FETCHADD: /* AtomicOps: with data only */
	case DXPU_TLP_TYPE_SWAP:
	case DXPU_TLP_TYPE_CAS:
		return (fmt & DXPU_TLP_FMT_DATA_BIT) ? DXPU_TLP_ERR_UNSUPPORTED
						     : DXPU_TLP_ERR_RESERVED_TYPE;
	default:
		return DXPU_TLP_ERR_RESERVED_TYPE;
	}
}

static enum dxpu_tlp_err classify(uint8_t fmt, uint8_t type, uint8_t *kind)
{
	if (fmt > DXPU_TLP_FMT_PREFIX)
		return DXPU_TLP_ERR_RESERVED_FMT;
	if (fmt == DXPU_TLP_FMT_PREFIX)
		return DXPU_TLP_ERR_UNSUPPORTED;
	if ((type & DXPU_TLP_TYPE_MSG_MASK) == DXPU_TLP_TYPE_MSG) {
		/* Messages always use the 4DW header. */
		if (!(fmt & DXPU_TLP_FMT_4DW_BIT))
			return DXPU_TLP_ERR_RESERVED_TYPE;
		*kind = (fmt & DXPU_TLP_FMT_DATA_BIT) ? DXPU_TLP_MSGD : DXPU_TLP_MSG;
		return DXPU_TLP_OK;
	}
	switch (type) {
	case DXPU_TLP_TYPE_MEM:
		return classify_mem(fmt, kind);
	case DXPU_TLP_TYPE_CFG0:
		return classify_3dw_only(fmt, DXPU_TLP_CFGRD0, DXPU_TLP_CFGWR0, kind);
	case DXPU_TLP_TYPE_CFG1:
		return classify_3dw_only(fmt, DXPU_TLP_CFGRD1, DXPU_TLP_CFGWR1, kind);
	case DXPU_TLP_TYPE_CPL:
		return classify_3dw_only(fmt, DXPU_TLP_CPL, DXPU_TLP_CPLD, kind);
	default:
		return classify_not_carried(fmt, type);
	}
}

/* What DW0 alone says about a TLP: its kind and its size on the wire. */
struct tlp_shape {
	uint8_t kind;
	bool hdr4;
	uint32_t hdr_len;
	uint32_t data_len;
	uint32_t total; /* header + payload + digest */
};

static enum dxpu_tlp_err measure(const uint8_t *buf, size_t len, struct tlp_shape *s)
{
	enum dxpu_tlp_err err;
	uint8_t fmt;

	if (len < 4)
		return DXPU_TLP_ERR_SHORT_HEADER;
	fmt = dxpu_tlp_hdr_fmt(buf);
	s->kind = DXPU_TLP_INVALID;
	err = classify(fmt, dxpu_tlp_hdr_type(buf), &s->kind);
	if (err)
		return err;
	s->hdr4 = fmt & DXPU_TLP_FMT_4DW_BIT;
	s->hdr_len = s->hdr4 ? DXPU_TLP_HDR4_SIZE : DXPU_TLP_HDR3_SIZE;
	s->data_len =
		(fmt & DXPU_TLP_FMT_DATA_BIT) ? (uint32_t)dxpu_tlp_hdr_length_dw(buf) * 4u : 0u;
	s->total =
		s->hdr_len + s->data_len + ((buf[2] & DXPU_TLP_B2_TD) ? DXPU_TLP_DIGEST_SIZE : 0u);
	return DXPU_TLP_OK;
}

enum dxpu_tlp_err dxpu_tlp_peek_size(const uint8_t *buf, size_t len, uint32_t *size)
{
	struct tlp_shape s;
	enum dxpu_tlp_err err = measure(buf, len, &s);

	if (!err)
		*size = s.total;
	return err;
}

enum dxpu_tlp_err dxpu_tlp_peek_kind(const uint8_t *buf, size_t len, uint8_t *kind,
				     uint32_t *payload)
{
	struct tlp_shape s;
	enum dxpu_tlp_err err = measure(buf, len, &s);

	if (!err) {
		*kind = s.kind;
		*payload = s.data_len;
	}
	return err;
}

/* ---- validation ---- */

static bool be_contiguous_high(uint8_t be) /* enabled bytes run to byte 3 */
{
	return be == 0xf || be == 0xe || be == 0xc || be == 0x8;
}

static bool be_contiguous_low(uint8_t be) /* enabled bytes start at byte 0 */
{
	return be == 0x1 || be == 0x3 || be == 0x7 || be == 0xf;
}

static enum dxpu_tlp_err check_byte_enables(uint16_t length_dw, uint8_t first_be, uint8_t last_be,
					    uint64_t addr)
{
	if (length_dw == 1) /* any First BE, including 0000b (zero-length) */
		return last_be ? DXPU_TLP_ERR_LAST_BE_1DW : DXPU_TLP_OK;
	if (!first_be)
		return DXPU_TLP_ERR_FIRST_BE_ZERO;
	if (!last_be)
		return DXPU_TLP_ERR_LAST_BE_ZERO;
	if (length_dw == 2 && !(addr & 0x4u)) /* QW-aligned 2 DW: any pattern */
		return DXPU_TLP_OK;
	if (!be_contiguous_high(first_be) || !be_contiguous_low(last_be))
		return DXPU_TLP_ERR_BE_NONCONTIG;
	return DXPU_TLP_OK;
}

static enum dxpu_tlp_err validate_mem(const struct dxpu_tlp *t)
{
	enum dxpu_tlp_err err;

	if (t->at == DXPU_TLP_AT_RESERVED)
		return DXPU_TLP_ERR_RESERVED_AT;
	err = check_byte_enables(t->length_dw, t->first_be, t->last_be, t->addr);
	if (err)
		return err;
	if ((t->addr & (DXPU_TLP_PAGE_SIZE - 1u)) + (uint64_t)t->length_dw * 4u >
	    DXPU_TLP_PAGE_SIZE)
		return DXPU_TLP_ERR_CROSSES_4K;
	return DXPU_TLP_OK;
}

static enum dxpu_tlp_err validate_cfg(const struct dxpu_tlp *t)
{
	if (t->length_dw != 1)
		return DXPU_TLP_ERR_CFG_LENGTH;
	if (t->tc || (t->attr & (DXPU_TLP_ATTR_RO | DXPU_TLP_ATTR_NS)))
		return DXPU_TLP_ERR_CFG_ATTR;
	return check_byte_enables(t->length_dw, t->first_be, t->last_be, 0);
}

static bool cpl_status_defined(uint8_t status)
{
	return status == DXPU_TLP_CPL_SC || status == DXPU_TLP_CPL_UR ||
	       status == DXPU_TLP_CPL_CRS || status == DXPU_TLP_CPL_CA;
}

/*
 * A CplD's payload starts at the DW holding Lower Address and spans Length DW.
 * If Byte Count fits in it, this is the last completion and Length must be
 * exactly the DWs those bytes touch. Otherwise more completions follow and
 * this one must end on a Read Completion Boundary (64 bytes at least).
 */
static enum dxpu_tlp_err validate_cpld_counts(const struct dxpu_tlp *t)
{
	uint32_t lead = t->lower_addr & 0x3u;
	uint32_t covered = (uint32_t)t->length_dw * 4u - lead;

	if (t->flags & DXPU_TLP_F_BCM) /* PCI-X: Byte Count is this completion's only */
		return t->byte_count <= covered ? DXPU_TLP_OK : DXPU_TLP_ERR_CPL_BYTE_COUNT;
	if (t->byte_count <= covered) {
		if ((lead + t->byte_count + 3u) / 4u != t->length_dw)
			return DXPU_TLP_ERR_CPL_BYTE_COUNT;
		return DXPU_TLP_OK;
	}
	if (((t->lower_addr & ~0x3u) + (uint32_t)t->length_dw * 4u) % DXPU_TLP_MIN_RCB)
		return DXPU_TLP_ERR_CPL_SPLIT_ALIGN;
	return DXPU_TLP_OK;
}

static enum dxpu_tlp_err validate_cpl(const struct dxpu_tlp *t)
{
	if (!cpl_status_defined(t->cpl_status))
		return DXPU_TLP_ERR_RESERVED_STATUS;
	if (t->kind == DXPU_TLP_CPL)
		return DXPU_TLP_OK;
	if (t->cpl_status != DXPU_TLP_CPL_SC)
		return DXPU_TLP_ERR_CPLD_STATUS;
	return validate_cpld_counts(t);
}

static enum dxpu_tlp_err validate_msg(const struct dxpu_tlp *t)
{
	uint8_t r = t->msg_routing;

	if (r > DXPU_TLP_ROUTE_GATHER)
		return DXPU_TLP_ERR_RESERVED_ROUTING;
	if (dxpu_tlp_msg_is_intx(t->msg_code)) {
		if (t->kind != DXPU_TLP_MSG || r != DXPU_TLP_ROUTE_LOCAL || t->tc)
			return DXPU_TLP_ERR_MSG_FORM;
	} else if (t->msg_code == DXPU_TLP_MSG_VENDOR_TYPE0 ||
		   t->msg_code == DXPU_TLP_MSG_VENDOR_TYPE1) {
		if (r != DXPU_TLP_ROUTE_TO_RC && r != DXPU_TLP_ROUTE_BY_ID &&
		    r != DXPU_TLP_ROUTE_BROADCAST && r != DXPU_TLP_ROUTE_LOCAL)
			return DXPU_TLP_ERR_MSG_FORM;
	}
	return DXPU_TLP_OK;
}

/* With TH, ST[7:0] displaces Tag[7:0] (MWr) or the byte enables (MRd). */
static bool th_fields_consistent(const struct dxpu_tlp *t)
{
	if (t->kind == DXPU_TLP_MWR)
		return !(t->tag & 0xffu);
	return t->first_be == 0xfu && t->last_be == (t->length_dw > 1 ? 0xfu : 0u);
}

/*
 * Fields outside their range, or set on a kind they do not apply to. The
 * decoder never produces these; they catch a caller building a bad struct,
 * and keep decode(encode(t)) == t for every t that validates.
 */
static bool fields_in_range(const struct dxpu_tlp *t)
{
	uint8_t k = t->kind;
	bool mem = dxpu_tlp_kind_is_mem(k), cfg = dxpu_tlp_kind_is_cfg(k);
	bool cpl = dxpu_tlp_kind_is_cpl(k), msg = dxpu_tlp_kind_is_msg(k);
	uint8_t only_mem = DXPU_TLP_F_TH, mem_or_cpl = DXPU_TLP_F_LN;
	bool has_len = k != DXPU_TLP_CPL && k != DXPU_TLP_MSG;

	if (k == DXPU_TLP_INVALID || k >= DXPU_TLP_KIND_COUNT)
		return false;
	if (t->tc > 7 || t->attr > 7 || t->at > 3 || t->ph > 3 || t->tag > 0x3ff ||
	    (t->flags & ~DXPU_TLP_F_ALL) || t->first_be > 0xf || t->last_be > 0xf)
		return false;
	if (has_len ? (t->length_dw < 1 || t->length_dw > DXPU_TLP_MAX_LENGTH_DW) : t->length_dw)
		return false;
	if (dxpu_tlp_kind_has_data(k) != (t->payload != NULL))
		return false;
	if (!(t->flags & DXPU_TLP_F_TD) && t->digest)
		return false;
	if (!mem && (t->at || t->ph || t->st || t->addr || (t->flags & only_mem)))
		return false;
	if (!(t->flags & DXPU_TLP_F_TH) && (t->ph || t->st))
		return false;
	if ((t->flags & DXPU_TLP_F_TH) && !th_fields_consistent(t))
		return false;
	if (!mem && !cpl && (t->flags & mem_or_cpl))
		return false;
	if (mem && (t->addr & 0x3u))
		return false;
	if ((cpl || msg) && (t->first_be || t->last_be))
		return false;
	if (!cfg && (t->cfg_target || t->cfg_reg))
		return false;
	if (cfg && (t->cfg_reg & ~0xffcu))
		return false;
	if (!cpl && (t->completer_id || t->byte_count || t->cpl_status || t->lower_addr ||
		     (t->flags & DXPU_TLP_F_BCM)))
		return false;
	if (cpl && (t->byte_count < 1 || t->byte_count > 4096 || t->lower_addr > 0x7f ||
		    t->cpl_status > 7))
		return false;
	if (!msg &&
	    (t->msg_code || t->msg_routing || !dxpu_all_zero(t->msg_hdr, sizeof(t->msg_hdr))))
		return false;
	return true;
}

/* The per-kind rules of the specification, on a struct whose fields are in range. */
static enum dxpu_tlp_err check_rules(const struct dxpu_tlp *t)
{
	if (dxpu_tlp_kind_is_mem(t->kind))
		return validate_mem(t);
	if (dxpu_tlp_kind_is_cfg(t->kind))
		return validate_cfg(t);
	if (dxpu_tlp_kind_is_cpl(t->kind))
		return validate_cpl(t);
	return validate_msg(t);
}

enum dxpu_tlp_err dxpu_tlp_validate(const struct dxpu_tlp *t)
{
	if (!fields_in_range(t))
		return DXPU_TLP_ERR_FIELD_RANGE;
	return check_rules(t);
}

/* ---- decode ---- */

static void parse_request_dw1(const uint8_t *h, struct dxpu_tlp *t)
{
	t->requester_id = dxpu_get_be16(&h[4]);
	t->tag = dxpu_tlp_hdr_tag10(h, h[6]);
	t->first_be = h[7] & 0xfu;
	t->last_be = (uint8_t)(h[7] >> 4);
}

static void parse_mem(const uint8_t *h, bool hdr4, struct dxpu_tlp *t)
{
	const uint8_t *lo = hdr4 ? &h[12] : &h[8];

	parse_request_dw1(h, t);
	t->at = dxpu_tlp_hdr_at(h);
	if (h[1] & DXPU_TLP_B1_TH) {
		t->flags |= DXPU_TLP_F_TH;
		t->ph = lo[3] & 0x3u;
		if (t->kind == DXPU_TLP_MWR) {
			t->st = h[6];
			t->tag &= 0x300u;
		} else {
			t->st = h[7];
			t->first_be = 0xfu;
			t->last_be = t->length_dw > 1 ? 0xfu : 0u;
		}
	}
	if (h[1] & DXPU_TLP_B1_LN)
		t->flags |= DXPU_TLP_F_LN;
	t->addr = dxpu_get_be32(lo) & ~(uint32_t)0x3u;
	if (hdr4)
		t->addr |= (uint64_t)dxpu_get_be32(&h[8]) << 32;
}

static void parse_cfg(const uint8_t *h, struct dxpu_tlp *t)
{
	parse_request_dw1(h, t);
	t->cfg_target = dxpu_get_be16(&h[8]);
	t->cfg_reg = (uint16_t)(((h[10] & 0xfu) << 8) | (h[11] & 0xfcu));
}

static void parse_cpl(const uint8_t *h, struct dxpu_tlp *t)
{
	uint16_t bc = (uint16_t)(((h[6] & 0xfu) << 8) | h[7]);

	t->completer_id = dxpu_get_be16(&h[4]);
	t->cpl_status = (uint8_t)(h[6] >> 5);
	if (h[6] & 0x10u)
		t->flags |= DXPU_TLP_F_BCM;
	if (h[1] & DXPU_TLP_B1_LN)
		t->flags |= DXPU_TLP_F_LN;
	t->byte_count = bc ? bc : 4096;
	t->requester_id = dxpu_get_be16(&h[8]);
	t->tag = dxpu_tlp_hdr_tag10(h, h[10]);
	t->lower_addr = h[11] & 0x7fu;
}

static void parse_msg(const uint8_t *h, struct dxpu_tlp *t)
{
	t->requester_id = dxpu_get_be16(&h[4]);
	t->tag = dxpu_tlp_hdr_tag10(h, h[6]);
	t->msg_code = h[7];
	t->msg_routing = dxpu_tlp_hdr_type(h) & DXPU_TLP_TYPE_ROUTING_MASK;
	memcpy(t->msg_hdr, &h[8], sizeof(t->msg_hdr));
}

/* The fields of the TLP in buf, and the errors its shape has; not the per-kind rules. */
static enum dxpu_tlp_err decode_fields(const uint8_t *buf, size_t len, struct dxpu_tlp *out)
{
	struct tlp_shape s;
	enum dxpu_tlp_err err = measure(buf, len, &s);

	if (err)
		return err;
	if (len < s.hdr_len)
		return DXPU_TLP_ERR_SHORT_HEADER;
	if (len < s.total)
		return DXPU_TLP_ERR_SHORT_PAYLOAD;
	if (len > s.total)
		return DXPU_TLP_ERR_LENGTH_MISMATCH;

	memset(out, 0, sizeof(*out));
	out->kind = s.kind;
	out->tc = dxpu_tlp_hdr_tc(buf);
	out->attr = dxpu_tlp_hdr_attr(buf);
	if (buf[2] & DXPU_TLP_B2_TD) {
		out->flags |= DXPU_TLP_F_TD;
		out->digest = dxpu_get_be32(&buf[s.hdr_len + s.data_len]);
	}
	if (buf[2] & DXPU_TLP_B2_EP)
		out->flags |= DXPU_TLP_F_EP;
	if (s.kind != DXPU_TLP_CPL && s.kind != DXPU_TLP_MSG) /* Length reserved there */
		out->length_dw = dxpu_tlp_hdr_length_dw(buf);
	if (s.data_len)
		out->payload = &buf[s.hdr_len];

	if (dxpu_tlp_kind_is_mem(s.kind)) {
		parse_mem(buf, s.hdr4, out);
		if (s.hdr4 && !(out->addr >> 32))
			return DXPU_TLP_ERR_ADDR64_BELOW_4G;
	} else if (dxpu_tlp_kind_is_cfg(s.kind)) {
		parse_cfg(buf, out);
	} else if (dxpu_tlp_kind_is_cpl(s.kind)) {
		parse_cpl(buf, out);
		/*
		 * PCIe: a Completion with a reserved Completion Status is
		 * handled as if it were Unsupported Request. A Cpl so received
		 * decodes as UR, so the request it answers ends at once; a CplD
		 * (data needs SC) stays refused with DXPU_TLP_ERR_RESERVED_STATUS.
		 */
		if (s.kind == DXPU_TLP_CPL && !cpl_status_defined(out->cpl_status))
			out->cpl_status = DXPU_TLP_CPL_UR;
	} else {
		parse_msg(buf, out);
	}
	return DXPU_TLP_OK;
}

enum dxpu_tlp_err dxpu_tlp_decode(const uint8_t *buf, size_t len, struct dxpu_tlp *out)
{
	enum dxpu_tlp_err err = decode_fields(buf, len, out);

	if (err)
		return err;
	/* Parsing only produces in-range fields (the round-trip tests hold it to that). */
	return check_rules(out);
}

void dxpu_tlp_decode_valid(const uint8_t *buf, size_t len, struct dxpu_tlp *out)
{
	(void)decode_fields(buf, len, out);
}

/* ---- encode ---- */

static uint8_t kind_fmt(const struct dxpu_tlp *t)
{
	uint8_t fmt = dxpu_tlp_header_len(t) == DXPU_TLP_HDR4_SIZE ? DXPU_TLP_FMT_4DW_BIT : 0u;

	return (uint8_t)(fmt | (dxpu_tlp_kind_has_data(t->kind) ? DXPU_TLP_FMT_DATA_BIT : 0u));
}

static uint8_t kind_type(const struct dxpu_tlp *t)
{
	switch (t->kind) {
	case DXPU_TLP_MRD:
	case DXPU_TLP_MWR:
		return DXPU_TLP_TYPE_MEM;
	case DXPU_TLP_CFGRD0:
	case DXPU_TLP_CFGWR0:
		return DXPU_TLP_TYPE_CFG0;
	case DXPU_TLP_CFGRD1:
	case DXPU_TLP_CFGWR1:
		return DXPU_TLP_TYPE_CFG1;
	case DXPU_TLP_CPL:
	case DXPU_TLP_CPLD:
		return DXPU_TLP_TYPE_CPL;
	default:
		return (uint8_t)(DXPU_TLP_TYPE_MSG | t->msg_routing);
	}
}

static void put_request_dw1(uint8_t *h, const struct dxpu_tlp *t)
{
	dxpu_put_be16(&h[4], t->requester_id);
	h[6] = (uint8_t)t->tag;
	h[7] = (uint8_t)((t->last_be << 4) | t->first_be);
}

static void put_mem(uint8_t *h, const struct dxpu_tlp *t)
{
	uint8_t *lo = (t->addr >> 32) ? &h[12] : &h[8];

	put_request_dw1(h, t);
	if (t->flags & DXPU_TLP_F_TH)
		h[t->kind == DXPU_TLP_MWR ? 6 : 7] = t->st;
	if (t->addr >> 32)
		dxpu_put_be32(&h[8], (uint32_t)(t->addr >> 32));
	dxpu_put_be32(lo, (uint32_t)t->addr | t->ph);
}

static void put_cfg(uint8_t *h, const struct dxpu_tlp *t)
{
	put_request_dw1(h, t);
	dxpu_put_be16(&h[8], t->cfg_target);
	h[10] = (uint8_t)(t->cfg_reg >> 8);
	h[11] = (uint8_t)(t->cfg_reg & 0xfcu);
}

static void put_cpl(uint8_t *h, const struct dxpu_tlp *t)
{
	uint16_t bc = (uint16_t)(t->byte_count & 0xfffu); /* 4096 -> 0 */

	dxpu_put_be16(&h[4], t->completer_id);
	h[6] = (uint8_t)((t->cpl_status << 5) | ((t->flags & DXPU_TLP_F_BCM) ? 0x10u : 0u) |
			 (bc >> 8));
	h[7] = (uint8_t)bc;
	dxpu_put_be16(&h[8], t->requester_id);
	h[10] = (uint8_t)t->tag;
	h[11] = t->lower_addr;
}

static void put_msg(uint8_t *h, const struct dxpu_tlp *t)
{
	dxpu_put_be16(&h[4], t->requester_id);
	h[6] = (uint8_t)t->tag;
	h[7] = t->msg_code;
	memcpy(&h[8], t->msg_hdr, sizeof(t->msg_hdr));
}

enum dxpu_tlp_err dxpu_tlp_encode(const struct dxpu_tlp *t, uint8_t *buf, size_t cap, size_t *len)
{
	enum dxpu_tlp_err err = dxpu_tlp_validate(t);

	if (err)
		return err;
	return dxpu_tlp_encode_valid(t, buf, cap, len);
}

enum dxpu_tlp_err dxpu_tlp_encode_valid(const struct dxpu_tlp *t, uint8_t *buf, size_t cap,
					size_t *len)
{
	uint32_t hdr_len, data_len, total;
	uint8_t *h = buf;

	hdr_len = dxpu_tlp_header_len(t);
	data_len = dxpu_tlp_payload_len(t);
	total = dxpu_tlp_wire_len(t);
	if (cap < total)
		return DXPU_TLP_ERR_NO_SPACE;

	memset(h, 0, hdr_len);
	dxpu_tlp_hdr_put_dw0(h, kind_fmt(t), kind_type(t), t->tc, t->tag, t->attr,
			     t->flags & DXPU_TLP_F_LN, t->flags & DXPU_TLP_F_TH,
			     t->flags & DXPU_TLP_F_TD, t->flags & DXPU_TLP_F_EP, t->at,
			     t->length_dw);
	if (dxpu_tlp_kind_is_mem(t->kind))
		put_mem(h, t);
	else if (dxpu_tlp_kind_is_cfg(t->kind))
		put_cfg(h, t);
	else if (dxpu_tlp_kind_is_cpl(t->kind))
		put_cpl(h, t);
	else
		put_msg(h, t);
	if (data_len)
		memcpy(&buf[hdr_len], t->payload, data_len);
	if (t->flags & DXPU_TLP_F_TD)
		dxpu_put_be32(&buf[hdr_len + data_len], t->digest);
	*len = total;
	return DXPU_TLP_OK;
}
