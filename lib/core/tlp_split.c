// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * tlp_split.c - the arithmetic a requester and a completer share: Byte Count
 * and Lower Address of read completions, completions split at the Read
 * Completion Boundary, writes split at Max Payload Size and reads at Max Read
 * Request Size. Iterators, so nothing is allocated.
 */
#include "tlp_codec.h"

/* Index of the lowest / highest enabled byte of a non-zero 4-bit mask. */
static uint32_t be_lowest(uint8_t be)
{
	uint32_t i = 0;

	while (i < 3 && !(be & (1u << i)))
		i++;
	return i;
}

static uint32_t be_highest(uint8_t be)
{
	uint32_t i = 3;

	while (i > 0 && !(be & (1u << i)))
		i--;
	return i;
}

static bool is_pow2_between(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1u));
}

uint32_t dxpu_tlp_read_byte_count(uint16_t length_dw, uint8_t first_be, uint8_t last_be)
{
	if (length_dw == 1)
		return first_be ? be_highest(first_be) - be_lowest(first_be) + 1u : 1u;
	return (uint32_t)length_dw * 4u - be_lowest(first_be) - (3u - be_highest(last_be));
}

uint8_t dxpu_tlp_read_lower_addr(uint64_t addr, uint8_t first_be)
{
	return (uint8_t)((addr & 0x7cu) | (first_be ? be_lowest(first_be) : 0u));
}

enum dxpu_tlp_err dxpu_tlp_cpl_split_init(struct dxpu_tlp_cpl_split *s, uint64_t addr,
					  uint16_t length_dw, uint8_t first_be, uint8_t last_be,
					  uint32_t rcb, uint32_t max_payload)
{
	struct dxpu_tlp req;
	uint32_t lead;

	if ((rcb != 64 && rcb != 128) || !is_pow2_between(max_payload, 128, 4096) ||
	    max_payload < rcb)
		return DXPU_TLP_ERR_BAD_PARAM;
	/* The request must be a valid memory read: same rules as on the wire. */
	memset(&req, 0, sizeof(req));
	req.kind = DXPU_TLP_MRD;
	req.length_dw = length_dw;
	req.first_be = first_be;
	req.last_be = last_be;
	req.addr = addr;
	if (dxpu_tlp_validate(&req))
		return DXPU_TLP_ERR_BAD_PARAM;

	lead = first_be ? be_lowest(first_be) : 0u;
	s->dw_base = addr;
	s->next = addr + lead;
	s->remaining = dxpu_tlp_read_byte_count(length_dw, first_be, last_be);
	s->end = s->next + s->remaining;
	s->rcb = rcb;
	s->max_payload = max_payload;
	return DXPU_TLP_OK;
}

bool dxpu_tlp_cpl_split_next(struct dxpu_tlp_cpl_split *s, struct dxpu_tlp_cpl_piece *p)
{
	uint64_t dw_start, piece_end;

	if (!s->remaining)
		return false;
	dw_start = s->next & ~(uint64_t)0x3u;
	if (s->end - dw_start <= s->max_payload)
		piece_end = s->end; /* the rest fits: last completion */
	else			    /* end on the last RCB boundary this completion's MPS reaches */
		piece_end = (dw_start + s->max_payload) & ~(uint64_t)(s->rcb - 1u);

	p->offset_dw = (uint16_t)((dw_start - s->dw_base) / 4u);
	p->length_dw = (uint16_t)((piece_end - dw_start + 3u) / 4u);
	p->byte_count = (uint16_t)s->remaining;
	p->lower_addr = (uint8_t)(s->next & 0x7fu);
	s->remaining -= (uint32_t)(piece_end - s->next);
	s->next = piece_end;
	return true;
}

enum dxpu_tlp_err dxpu_tlp_req_split_init(struct dxpu_tlp_req_split *s, uint64_t addr,
					  uint64_t nbytes, uint32_t max_bytes)
{
	if (!is_pow2_between(max_bytes, 128, 4096) || !nbytes || nbytes > ~(uint64_t)0 - addr)
		return DXPU_TLP_ERR_BAD_PARAM;
	s->start = addr;
	s->next = addr;
	s->end = addr + nbytes;
	s->max_bytes = max_bytes;
	return DXPU_TLP_OK;
}

bool dxpu_tlp_req_split_next(struct dxpu_tlp_req_split *s, struct dxpu_tlp_req_piece *p)
{
	uint64_t boundary, piece_end, dw_start;
	uint8_t lo_mask, hi_mask;

	if (s->next >= s->end)
		return false;
	/* Next naturally aligned max_bytes boundary; it may wrap at the top of memory. */
	boundary = (s->next & ~(uint64_t)(s->max_bytes - 1u)) + s->max_bytes;
	piece_end = (boundary > s->next && boundary < s->end) ? boundary : s->end;
	dw_start = s->next & ~(uint64_t)0x3u;

	lo_mask = (uint8_t)((0xfu << (s->next & 0x3u)) & 0xfu);
	hi_mask = (uint8_t)(0xfu >> (3u - ((piece_end - 1u) & 0x3u)));
	p->addr = dw_start;
	p->offset = s->next - s->start;
	p->nbytes = (uint32_t)(piece_end - s->next);
	p->length_dw = (uint16_t)((piece_end - dw_start + 3u) / 4u);
	if (p->length_dw == 1) {
		p->first_be = lo_mask & hi_mask;
		p->last_be = 0;
	} else {
		p->first_be = lo_mask;
		p->last_be = hi_mask;
	}
	s->next = piece_end;
	return true;
}

void dxpu_tlp_req_piece_header(const struct dxpu_tlp_req_piece *p, uint8_t kind,
			       struct dxpu_tlp *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->addr = p->addr;
	out->length_dw = p->length_dw;
	out->first_be = p->first_be;
	out->last_be = p->last_be;
}

bool dxpu_tlp_mem_request(uint8_t kind, uint64_t addr, uint32_t nbytes, struct dxpu_tlp *out)
{
	struct dxpu_tlp_req_split split;
	struct dxpu_tlp_req_piece piece;

	if (dxpu_tlp_req_split_init(&split, addr, nbytes, 4096) != DXPU_TLP_OK ||
	    !dxpu_tlp_req_split_next(&split, &piece) || piece.nbytes != nbytes)
		return false;
	dxpu_tlp_req_piece_header(&piece, kind, out);
	return true;
}
