// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * tlp_build.c - the TLPs every requester and completer builds (tlp_build.h):
 * the completion of a request, a configuration request, and a byte range as
 * DW-aligned posted writes. Headers only; the caller owns every payload.
 */
#include "tlp_build.h"

static bool returns_data(uint8_t kind)
{
	return kind == DXPU_TLP_MRD || kind == DXPU_TLP_CFGRD0 || kind == DXPU_TLP_CFGRD1;
}

void dxpu_tlp_completion_for(const struct dxpu_tlp *req, uint16_t completer_id, uint8_t status,
			     struct dxpu_tlp *out)
{
	memset(out, 0, sizeof(*out));
	out->requester_id = req->requester_id;
	out->tag = req->tag;
	out->tc = req->tc;
	out->attr = req->attr;
	out->completer_id = completer_id;
	out->cpl_status = status;
	if (status == DXPU_TLP_CPL_SC && returns_data(req->kind)) {
		out->kind = DXPU_TLP_CPLD;
		out->length_dw = req->kind == DXPU_TLP_MRD ? req->length_dw : 1u;
	} else {
		out->kind = DXPU_TLP_CPL;
	}
	if (req->kind == DXPU_TLP_MRD) {
		out->byte_count = (uint16_t)dxpu_tlp_read_byte_count(req->length_dw, req->first_be,
								     req->last_be);
		out->lower_addr = dxpu_tlp_read_lower_addr(req->addr, req->first_be);
	} else {
		out->byte_count = 4; /* a configuration request's one DW, Lower Address 0 */
	}
}

void dxpu_tlp_completion_piece(struct dxpu_tlp *cpl, const struct dxpu_tlp_cpl_piece *p)
{
	cpl->length_dw = p->length_dw;
	cpl->byte_count = p->byte_count;
	cpl->lower_addr = p->lower_addr;
}

enum dxpu_tlp_err dxpu_tlp_cpld_split_init(struct dxpu_tlp_cpld_split *s,
					   const struct dxpu_tlp *mrd, uint16_t completer_id,
					   uint32_t rcb, uint32_t max_payload)
{
	if (mrd->kind != DXPU_TLP_MRD)
		return DXPU_TLP_ERR_BAD_PARAM;
	dxpu_tlp_completion_for(mrd, completer_id, DXPU_TLP_CPL_SC, &s->whole);
	return dxpu_tlp_cpl_split_init(&s->split, mrd->addr, mrd->length_dw, mrd->first_be,
				       mrd->last_be, rcb, max_payload);
}

bool dxpu_tlp_cpld_split_next(struct dxpu_tlp_cpld_split *s, const uint8_t *data,
			      struct dxpu_tlp *out)
{
	struct dxpu_tlp_cpl_piece piece;

	if (!dxpu_tlp_cpl_split_next(&s->split, &piece))
		return false;
	*out = s->whole;
	dxpu_tlp_completion_piece(out, &piece);
	out->payload = data + (size_t)piece.offset_dw * 4u;
	return true;
}

void dxpu_tlp_config_request(uint8_t kind, uint16_t target_bdf, uint16_t reg, uint8_t first_be,
			     struct dxpu_tlp *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->length_dw = 1;
	out->first_be = first_be;
	out->cfg_target = target_bdf;
	out->cfg_reg = (uint16_t)(reg & 0xffcu);
}

enum dxpu_tlp_err dxpu_tlp_mwr_split_init(struct dxpu_tlp_mwr_split *s, uint64_t addr,
					  const uint8_t *src, uint64_t nbytes, uint32_t max_bytes)
{
	enum dxpu_tlp_err err;

	if (!src)
		return DXPU_TLP_ERR_BAD_PARAM;
	err = dxpu_tlp_req_split_init(&s->req, addr, nbytes, max_bytes);
	if (err)
		return err;
	s->addr = addr;
	s->src = src;
	return DXPU_TLP_OK;
}

bool dxpu_tlp_mwr_split_next(struct dxpu_tlp_mwr_split *s, uint8_t *buf, struct dxpu_tlp *out)
{
	struct dxpu_tlp_req_piece p;
	uint32_t len, lead;

	if (!dxpu_tlp_req_split_next(&s->req, &p))
		return false;
	len = (uint32_t)p.length_dw * 4u;
	lead = (uint32_t)(s->addr + p.offset - p.addr); /* 0..3: the bytes before the first */
	/* Only the first and the last DW have bytes whose enables are off. */
	memset(buf, 0, 4);
	memset(buf + len - 4u, 0, 4);
	memcpy(buf + lead, s->src + p.offset, p.nbytes);
	dxpu_tlp_req_piece_header(&p, DXPU_TLP_MWR, out);
	out->payload = buf;
	return true;
}
