/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_seq.h - serial-number arithmetic for DxFP's 32-bit sequence numbers
 * and credit counters (RFC 1982): a is before b when b - a, modulo 2^32, is
 * in 1 .. 2^31 - 1. Two numbers exactly 2^31 apart are unordered; DxFP keeps
 * every window far below that (docs/protocol.md, 4.5 and 4.6).
 */
#ifndef DXPU_CORE_DXFP_SEQ_H
#define DXPU_CORE_DXFP_SEQ_H

#include <dxpu/compat.h>

DXPU_EXTERN_C_BEGIN

static inline bool dxfp_seq_before(uint32_t a, uint32_t b)
{
	uint32_t d = b - a;

	return d != 0 && d < 0x80000000u;
}

static inline bool dxfp_seq_before_eq(uint32_t a, uint32_t b)
{
	return a == b || dxfp_seq_before(a, b);
}

/* b - a, for a not after b. */
static inline uint32_t dxfp_seq_distance(uint32_t a, uint32_t b)
{
	return b - a;
}

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_SEQ_H */
