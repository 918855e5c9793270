/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * compat.h - the few definitions that let include/dxpu and lib/core compile
 * unchanged in the Linux kernel (Kbuild, -std=gnu11) and in userspace (C11 and
 * C++20). Only fixed-width integers, bool, size_t, memcpy/memset and snprintf
 * are used by the shared code; nothing here allocates, sleeps or does I/O.
 */
#ifndef DXPU_COMPAT_H
#define DXPU_COMPAT_H

#ifdef __KERNEL__
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/types.h>
#elif defined(__cplusplus)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#endif

#ifdef __cplusplus
#define DXPU_EXTERN_C_BEGIN extern "C" {
#define DXPU_EXTERN_C_END }
#else
#define DXPU_EXTERN_C_BEGIN
#define DXPU_EXTERN_C_END
#endif

/* Zero a secret going out of scope: a store the compiler keeps (the kernel's memzero_explicit). */
#ifdef __KERNEL__
#define dxpu_wipe(p, n) memzero_explicit((p), (n))
#else
static inline void dxpu_wipe(void *p, size_t n)
{
	memset(p, 0, n);
	__asm__ __volatile__("" : : "r"(p) : "memory");
}
#endif

/*
 * Big-endian (network order) loads and stores, byte by byte: no alignment or
 * host-endianness assumptions, identical in kernel and userspace.
 */
static inline uint16_t dxpu_get_be16(const uint8_t *p)
{
	return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}

static inline uint32_t dxpu_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Each byte masked before its cast, so that sparse sees no bits dropped from a constant. */
static inline void dxpu_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)((v >> 8) & 0xffu);
	p[1] = (uint8_t)(v & 0xffu);
}

static inline void dxpu_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)((v >> 24) & 0xffu);
	p[1] = (uint8_t)((v >> 16) & 0xffu);
	p[2] = (uint8_t)((v >> 8) & 0xffu);
	p[3] = (uint8_t)(v & 0xffu);
}

/*
 * Whether p[0..n) are all zero (reserved fields and padding must be). Every byte is
 * looked at, without a branch per byte: the fields are short and nearly always zero, and
 * the loop compiles to a few wide ORs.
 */
static inline bool dxpu_all_zero(const uint8_t *p, size_t n)
{
	uint8_t any = 0;
	size_t i;

	for (i = 0; i < n; i++)
		any |= p[i];
	return any == 0;
}

#endif /* DXPU_COMPAT_H */
