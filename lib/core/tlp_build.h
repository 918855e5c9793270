/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * tlp_build.h - the TLPs every requester and completer builds, written once: the completion
 * for a request, a configuration request, and a byte range cut into DW-aligned posted writes.
 * Used by the host path (dxpu.ko and the userspace proxy), the bridge's data plane and the
 * devices behind it. Headers only in, headers out: the caller owns every payload buffer.
 */
#ifndef DXPU_CORE_TLP_BUILD_H
#define DXPU_CORE_TLP_BUILD_H

#include "tlp_codec.h"

DXPU_EXTERN_C_BEGIN

/*
 * The completion of request req (any non-posted kind) from completer_id with status:
 *   - Requester ID, Tag, TC and Attr copied from req; Completer ID and status set;
 *   - status SC for a request that returns data (MRd, CfgRd0/1, IORd): CplD, and for the whole
 *     request in one completion (Length = req's for a memory read, 1 DW otherwise);
 *     otherwise (a write's SC, or UR/CA/CRS): Cpl, Length 0;
 *   - Byte Count and Lower Address as PCIe sets them for the first (or only) completion: a
 *     memory read's from its Length and byte enables (dxpu_tlp_read_byte_count and
 *     dxpu_tlp_read_lower_addr), a configuration or I/O request's 4 and 0.
 * Payload NULL: the caller points it at the data. A completion split at the RCB gets each
 * piece's fields with dxpu_tlp_completion_piece().
 */
void dxpu_tlp_completion_for(const struct dxpu_tlp *req, uint16_t completer_id, uint8_t status,
			     struct dxpu_tlp *out);

/* One piece of a split read completion: Length, Byte Count and Lower Address from p. */
void dxpu_tlp_completion_piece(struct dxpu_tlp *cpl, const struct dxpu_tlp_cpl_piece *p);

/*
 * A memory read answered with data, as a completer sends it: the CplDs of request mrd from
 * completer_id, cut at the Read Completion Boundary rcb and at max_payload
 * (dxpu_tlp_cpl_split), each carrying its piece of data (mrd's Length in DWs, DW-aligned as
 * the request addresses them).
 *
 *	struct dxpu_tlp_cpld_split s;
 *	if (dxpu_tlp_cpld_split_init(&s, &mrd, my_id, 64, 256) == DXPU_TLP_OK)
 *		while (dxpu_tlp_cpld_split_next(&s, data, &t))
 *			send(&t);	// t.payload points into data
 */
struct dxpu_tlp_cpld_split {
	struct dxpu_tlp_cpl_split split;
	struct dxpu_tlp whole; /* the completion for the whole request */
};

/* BAD_PARAM (or the request's error) unless mrd is a valid MRd and rcb/max_payload valid. */
enum dxpu_tlp_err dxpu_tlp_cpld_split_init(struct dxpu_tlp_cpld_split *s,
					   const struct dxpu_tlp *mrd, uint16_t completer_id,
					   uint32_t rcb, uint32_t max_payload);
bool dxpu_tlp_cpld_split_next(struct dxpu_tlp_cpld_split *s, const uint8_t *data,
			      struct dxpu_tlp *out);

/*
 * A configuration request: kind DXPU_TLP_CFGRD0/CFGWR0/CFGRD1/CFGWR1 to the function at
 * target_bdf, register reg (its DW: reg & 0xffc, up to 4 KiB of extended space), byte enables
 * first_be, Length 1. Requester ID and Tag zero (the issuer sets them); payload NULL.
 */
void dxpu_tlp_config_request(uint8_t kind, uint16_t target_bdf, uint16_t reg, uint8_t first_be,
			     struct dxpu_tlp *out);

/*
 * A byte range written as posted writes: [addr, addr + nbytes) cut at max_bytes and 4 KiB as
 * dxpu_tlp_req_split does, each piece's payload DW-aligned (its bytes at their offset within
 * the first DW, zero where the byte enables are off).
 *
 *	struct dxpu_tlp_mwr_split s;
 *	uint8_t buf[DXPU_TLP_MAX_PAYLOAD];
 *	if (dxpu_tlp_mwr_split_init(&s, addr, src, nbytes, max_bytes) == DXPU_TLP_OK)
 *		while (dxpu_tlp_mwr_split_next(&s, buf, &t))
 *			send(&t);	// t.payload == buf, valid until the next call
 */
struct dxpu_tlp_mwr_split {
	struct dxpu_tlp_req_split req;
	uint64_t addr;	    /* the range's first byte */
	const uint8_t *src; /* its nbytes bytes */
};

/* max_bytes: power of two, 128..4096; nbytes >= 1; the range must not wrap. */
enum dxpu_tlp_err dxpu_tlp_mwr_split_init(struct dxpu_tlp_mwr_split *s, uint64_t addr,
					  const uint8_t *src, uint64_t nbytes, uint32_t max_bytes);
/*
 * The next MWr: header in *out (Requester ID and Tag zero), its payload built in buf (room for
 * max_bytes bytes: a piece never leaves its naturally aligned max_bytes block) and
 * out->payload = buf. False when the range is done.
 */
bool dxpu_tlp_mwr_split_next(struct dxpu_tlp_mwr_split *s, uint8_t *buf, struct dxpu_tlp *out);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_TLP_BUILD_H */
