// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * crc32c.c - CRC32C (see crc32c.h): portable slicing-by-8 (byte loads only, so
 * no alignment or endianness assumptions), and in x86-64 userspace the SSE4.2
 * crc32 instruction when the CPU has it, in three interleaved chains.
 */
#include "crc32c.h"

#if !defined(__KERNEL__) && defined(__x86_64__) && defined(__GNUC__)
#define DXPU_CRC32C_HW 1
#define DXPU_CRC32C_ZEROS_TABLES 1 /* the hardware path's tables, below */
#endif
#include "crc32c_table.h"

/* Portable slicing-by-8: the reference, and the only path in the kernel build. */
static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	const uint32_t(*t)[256] = dxpu_crc32c_table;

	crc = ~crc;
	while (len >= 8) {
		crc ^= (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
		       ((uint32_t)p[3] << 24);
		crc = t[7][crc & 0xffu] ^ t[6][(crc >> 8) & 0xffu] ^ t[5][(crc >> 16) & 0xffu] ^
		      t[4][crc >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = t[0][(crc ^ *p++) & 0xffu] ^ (crc >> 8);
	return ~crc;
}

#ifdef DXPU_CRC32C_HW
/*
 * Userspace on x86-64: the SSE4.2 crc32 instruction computes the same CRC32C
 * (same polynomial, reflected, same register semantics), 8 bytes at a time.
 * Chosen at run time; tests/core/crc32c_test.cc checks both paths agree.
 *
 * Below, "register" is the CRC state the instruction updates: the API's crc
 * with the pre/post inversion removed (~crc). The instruction has a latency of
 * 3 cycles and a throughput of at least 1 per cycle, so one dependent chain
 * (crc32c_hw_chain) runs at a third of what the CPU can do. crc32c_hw() runs
 * three independent chains over three equal blocks A, B, C instead and joins
 * them with the register's linearity:
 *
 *   reg(r, X || Y) = zeros_len(Y)(reg(r, X)) ^ reg(0, Y)
 *
 * where zeros_n is "feed n zero bytes", a linear map of the 32-bit register
 * looked up in the generated dxpu_crc32c_zeros_n tables (crc32c_table.h).
 */
#define CRC32C_HW_TARGET __attribute__((target("sse4.2")))

static inline uint64_t crc32c_load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v)); /* little-endian load, as the instruction expects */
	return v;
}

/* One dependent chain: the register c after len more bytes. */
CRC32C_HW_TARGET static inline uint64_t crc32c_hw_chain(uint64_t c, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		c = __builtin_ia32_crc32di(c, crc32c_load64(p));
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return c;
}

/* zeros_n(x), where z is dxpu_crc32c_zeros_n. */
static inline uint32_t crc32c_zeros(const uint32_t (*z)[256], uint32_t x)
{
	return z[0][x & 0xffu] ^ z[1][(x >> 8) & 0xffu] ^ z[2][(x >> 16) & 0xffu] ^ z[3][x >> 24];
}

/*
 * The register r after the 3 * n bytes at p, as blocks A, B, C of n bytes
 * each, all three chains from 0 (z is dxpu_crc32c_zeros_n):
 *   reg(r, A || B || C) = zeros_n(zeros_n(zeros_n(r) ^ a) ^ b) ^ c.
 * No chain waits for r, so the chains of the next group need not wait for
 * this group's join: the joins (table lookups) overlap the next group's
 * crc32 instructions instead of delaying them.
 */
CRC32C_HW_TARGET static inline __attribute__((always_inline)) uint64_t
crc32c_hw_group(uint64_t r, const uint8_t *p, size_t n, const uint32_t (*z)[256])
{
	uint64_t a = 0, b = 0, c = 0;
	uint32_t j;
	size_t i;

	for (i = 0; i < n; i += 8) {
		a = __builtin_ia32_crc32di(a, crc32c_load64(p + i));
		b = __builtin_ia32_crc32di(b, crc32c_load64(p + n + i));
		c = __builtin_ia32_crc32di(c, crc32c_load64(p + 2 * n + i));
	}
	j = crc32c_zeros(z, (uint32_t)r) ^ (uint32_t)a; /* reg(r, A) */
	j = crc32c_zeros(z, j) ^ (uint32_t)b;		/* reg(r, A || B) */
	return crc32c_zeros(z, j) ^ c;
}

/*
 * Block sizes, largest first; each group (3 blocks) of one size is a whole
 * number of groups of the next, so whatever the length, what the groups do
 * not cover is len % (3 * CRC32C_HW_B3) bytes. Those go first, on one chain
 * from the caller's register, while the groups' chains (from 0) run beside
 * it; the groups then take the rest, largest first, at most
 * (1024 / 256) - 1 = 3 groups of 256, 1 of 128 and 1 of 64. Chosen by
 * measuring other sets over frames of 64..9216 bytes: fewer sizes leave more
 * small groups, and blocks under 64 bytes do not pay for their join.
 * tools/gen-crc32c-table.py generates the tables for exactly these sizes.
 */
#define CRC32C_HW_B0 ((size_t)1024)
#define CRC32C_HW_B1 ((size_t)256)
#define CRC32C_HW_B2 ((size_t)128)
#define CRC32C_HW_B3 ((size_t)64)

CRC32C_HW_TARGET static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t r = ~crc;
	size_t head, n0, n1, n2, n3;

	if (len < 3 * CRC32C_HW_B3)
		return ~(uint32_t)crc32c_hw_chain(r, p, len);
	head = len % (3 * CRC32C_HW_B3);
	n0 = len / (3 * CRC32C_HW_B0);
	n1 = len % (3 * CRC32C_HW_B0) / (3 * CRC32C_HW_B1);
	n2 = len % (3 * CRC32C_HW_B1) / (3 * CRC32C_HW_B2);
	n3 = len % (3 * CRC32C_HW_B2) / (3 * CRC32C_HW_B3);
	r = crc32c_hw_chain(r, p, head);
	p += head;
	for (; n0; n0--, p += 3 * CRC32C_HW_B0)
		r = crc32c_hw_group(r, p, CRC32C_HW_B0, dxpu_crc32c_zeros_1024);
	for (; n1; n1--, p += 3 * CRC32C_HW_B1)
		r = crc32c_hw_group(r, p, CRC32C_HW_B1, dxpu_crc32c_zeros_256);
	if (n2) {
		r = crc32c_hw_group(r, p, CRC32C_HW_B2, dxpu_crc32c_zeros_128);
		p += 3 * CRC32C_HW_B2;
	}
	if (n3)
		r = crc32c_hw_group(r, p, CRC32C_HW_B3, dxpu_crc32c_zeros_64);
	return ~(uint32_t)r;
}

/* The previous hardware path, one chain; kept only for comparison (crc32c.h). */
CRC32C_HW_TARGET static uint32_t crc32c_hw_single(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~(uint32_t)crc32c_hw_chain((uint32_t)~crc, p, len);
}

bool dxpu_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len)
{
	/* One load of the CPU model libgcc filled in at start-up: no state of our own. */
	if (dxpu_crc32c_hw_available())
		return crc32c_hw(crc, (const uint8_t *)data, len);
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

uint32_t dxpu_crc32c_hw_single(uint32_t crc, const void *data, size_t len)
{
	if (dxpu_crc32c_hw_available())
		return crc32c_hw_single(crc, (const uint8_t *)data, len);
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
#else
bool dxpu_crc32c_hw_available(void)
{
	return false;
}

uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

uint32_t dxpu_crc32c_hw_single(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
#endif

uint32_t dxpu_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
