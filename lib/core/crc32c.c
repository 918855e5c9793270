// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * crc32c.c - CRC32C (see crc32c.h): portable slicing-by-8 (byte loads only, so
 * no alignment or endianness assumptions), and in x86-64 userspace the SSE4.2
 * crc32 instruction when the CPU has it, in three interleaved chains, and for
 * longer buffers carry-less multiplication folding (PCLMULQDQ, or VPCLMULQDQ
 * on AVX-512) with crc32 chains beside it. All chosen at run time.
 */
#include "crc32c.h"

#if !defined(__KERNEL__) && defined(__x86_64__) && defined(__GNUC__)
#define DXPU_CRC32C_HW 1
#define DXPU_CRC32C_ZEROS_TABLES 1 /* the hardware path's tables, below */
#endif
#include "crc32c_table.h"
#ifdef DXPU_CRC32C_HW
#include <immintrin.h>
#endif

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
 * Chosen at run time; tests/core/crc32c_test.cc checks all paths agree.
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

/*
 * Carry-less multiplication folding (Intel, "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", 2009; the bit-reflected variant)
 * for long buffers where the CPU has PCLMULQDQ, four times as wide where it
 * has VPCLMULQDQ on AVX-512, with chains of the crc32 instruction beside the
 * folds.
 *
 * The register after a message M (a polynomial whose first bit is the
 * highest power) is M(x) * x^32 mod P, and the incoming register is accounted
 * for by XORing it into M's first 32 bits. So any value congruent to M modulo
 * P, placed at M's last 16 bytes, leaves the same register: the folds reduce
 * the message to one such 16-byte block, and the crc32 instruction over that
 * block (from register 0) and then over the last len % 16 bytes finishes
 * exactly; no Barrett reduction is needed.
 *
 * Bit order: a 16-byte block loaded into an XMM register holds the
 * coefficient of x^(127 - i) in bit i (the first bit of the first byte is the
 * highest power), so its low quadword H and high quadword L make the block
 * H * x^64 + L. Moving a block D bits further along the message multiplies it
 * by x^D: (H * x^64 + L) * x^D = H * x^(D + 64) + L * x^D, and modulo P the
 * powers can be replaced by their residues of 32 bits, leaving a product of
 * under 64 + 32 bits, which fits in the block it is XORed into. PCLMULQDQ
 * multiplies integers; with both factors bit-reflected (bit i of a quadword
 * holding x^(63 - i)), bit k of the product holds x^(126 - k), one power of x
 * too high for a block. So the constants are one power lower:
 *
 *   fold_D(H * x^64 + L) = clmul(H, x^(D + 63) mod P) ^ clmul(L, x^(D - 1) mod P)
 *
 * with each residue in the upper 32 bits of its quadword (bit 32 + i holding
 * x^(31 - i): the CRC register form of the residue, shifted left by 32).
 */
#define CRC32C_PCLMUL_TARGET __attribute__((target("sse4.2,pclmul")))
#define CRC32C_VPCLMUL_TARGET __attribute__((target("sse4.2,pclmul,avx512f,avx512vl,vpclmulqdq")))

/*
 * crc32c_fold_k[CRC32C_FOLD_KMAX - k] is the pair of fold constants for
 * D = 128 * k bits (k blocks of 16 bytes), k = 0 .. CRC32C_FOLD_KMAX:
 * [0] = x^(128k + 63) mod P for H, [1] = x^(128k - 1) mod P for L. For k = 0
 * the pair is x^63 and x^-1 (which exists modulo P, as P(0) = 1): the product
 * is the block itself modulo P, so a block already in place is no special
 * case. Decreasing k in memory lets a 64-byte block whose four 16-byte lanes
 * (lane 0 first) are s + 3, s + 2, s + 1 and s blocks from their destination
 * load its four lanes' constants at once (crc32c_fold_k4). The largest k
 * used is 58, in crc32c_vpclmul_mix() with kc = 64: lane 0 of z0 is 3 + 24
 * blocks before the end of an iteration, and up to 511 bytes (31 whole
 * blocks) follow the last iteration (the static assertions below
 * crc32c_vpclmul() check this and the other paths). Filled in by
 * crc32c_init() (below) before main().
 */
#define CRC32C_FOLD_KMAX 58
static uint64_t crc32c_fold_k[CRC32C_FOLD_KMAX + 1][2] __attribute__((aligned(64)));

/*
 * The constants are computed here, not copied: in the register form, bit i
 * of a uint32_t holds x^(31 - i), so x^0 is 0x80000000, and multiplying by x
 * modulo P is one step of the bitwise CRC.
 */
static uint32_t crc32c_mulx(uint32_t a)
{
	return (a >> 1) ^ ((a & 1u) ? 0x82f63b78u : 0u);
}

/* a * b mod P: Horner's rule over a's bits, highest power (bit 0) first. */
static uint32_t crc32c_mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	int i;

	for (i = 0; i < 32; i++) {
		prod = crc32c_mulx(prod);
		if ((a >> i) & 1u)
			prod ^= b;
	}
	return prod;
}

/* x^n mod P. */
static uint32_t crc32c_xpow(unsigned int n)
{
	uint32_t r = 0x80000000u;

	while (n--)
		r = crc32c_mulx(r);
	return r;
}

/*
 * x^-1 mod P. With P = x^32 + p31 x^31 + ... + p1 x + 1,
 * x * (x^31 + p31 x^30 + ... + p1) = P + 1 = 1 mod P; in the register form
 * that quotient is the reflected polynomial shifted left by one with x^31
 * (bit 0) set, and crc32c_mulx() of it is x^0.
 */
static uint32_t crc32c_xinv(void)
{
	return (uint32_t)(0x82f63b78u << 1) | 1u;
}

static void crc32c_fold_init(void)
{
	uint32_t x128 = crc32c_xpow(128), h = crc32c_xpow(63), l = crc32c_xinv();
	unsigned int k;

	for (k = 0; k <= CRC32C_FOLD_KMAX; k++) { /* h = x^(128k + 63), l = x^(128k - 1) */
		crc32c_fold_k[CRC32C_FOLD_KMAX - k][0] = (uint64_t)h << 32;
		crc32c_fold_k[CRC32C_FOLD_KMAX - k][1] = (uint64_t)l << 32;
		h = crc32c_mulmod(h, x128);
		l = crc32c_mulmod(l, x128);
	}
}

CRC32C_PCLMUL_TARGET static inline __m128i crc32c_load128(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* The constants that move a block k blocks of 16 bytes (D = 128 * k). */
CRC32C_PCLMUL_TARGET static inline __m128i crc32c_fold_k1(size_t k)
{
	return _mm_load_si128((const __m128i *)(const void *)crc32c_fold_k[CRC32C_FOLD_KMAX - k]);
}

/* fold_D(x), k holding D's constants: a block congruent to x * x^D. */
CRC32C_PCLMUL_TARGET static inline __m128i crc32c_fold16(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* The register r after t < 16 more bytes. */
CRC32C_HW_TARGET static inline uint64_t crc32c_hw_tail(uint64_t r, const uint8_t *p, size_t t)
{
	uint32_t v32;
	uint16_t v16;

	if (t & 8) {
		r = __builtin_ia32_crc32di(r, crc32c_load64(p));
		p += 8;
	}
	if (t & 4) {
		memcpy(&v32, p, sizeof(v32));
		r = __builtin_ia32_crc32si((uint32_t)r, v32);
		p += 4;
	}
	if (t & 2) {
		memcpy(&v16, p, sizeof(v16));
		r = __builtin_ia32_crc32hi((uint32_t)r, v16);
		p += 2;
	}
	if (t & 1)
		r = __builtin_ia32_crc32qi((uint32_t)r, *p);
	return r;
}

/*
 * Folding alone keeps the carry-less multiplier busy and leaves the crc32
 * instruction's unit idle, so the loops for long buffers feed both: an
 * iteration lays out four crc32 chains of kc bytes and the blocks of four
 * accumulators as C0 A0 C1 A1 C2 A2 C3 A3, and each chain (from register 0,
 * or the caller's register for the very first) XORs its register into the
 * first 4 bytes of the block after it, which is how a register carries over
 * to the bytes that follow. No chain waits for an accumulator, so the chains
 * run beside the folds. The chain length kc (32 or 64: a multiple of 16, so
 * that blocks stay whole distances apart) was measured on AMD EPYC (Zen 5),
 * where crc32 issued more than once per cycle and (V)PCLMULQDQ about every
 * other cycle.
 */

/*
 * The register c after the kc bytes at p, kc 32 or 64. Written out: at -O2
 * (the release preset) GCC keeps a loop here, and the four chains of an
 * iteration then no longer overlap (half the speed).
 */
CRC32C_HW_TARGET static inline uint64_t crc32c_mix_chain(uint64_t c, const uint8_t *p, size_t kc)
{
	c = __builtin_ia32_crc32di(c, crc32c_load64(p));
	c = __builtin_ia32_crc32di(c, crc32c_load64(p + 8));
	c = __builtin_ia32_crc32di(c, crc32c_load64(p + 16));
	c = __builtin_ia32_crc32di(c, crc32c_load64(p + 24));
	if (kc == 64) {
		c = __builtin_ia32_crc32di(c, crc32c_load64(p + 32));
		c = __builtin_ia32_crc32di(c, crc32c_load64(p + 40));
		c = __builtin_ia32_crc32di(c, crc32c_load64(p + 48));
		c = __builtin_ia32_crc32di(c, crc32c_load64(p + 56));
	}
	return c;
}

/* The 16-byte block after the chain of kc bytes at p, with its register XORed in. */
CRC32C_PCLMUL_TARGET static inline __m128i crc32c_mix16(uint64_t c, const uint8_t *p, size_t kc)
{
	return _mm_xor_si128(crc32c_load128(p + kc),
			     _mm_cvtsi32_si128((int)crc32c_mix_chain(c, p, kc)));
}

/*
 * The end of both fold paths. acc: congruent to everything before p (with
 * the caller's register, unless that is still in init), placed at the last
 * whole block of the len bytes at p, m = len / 16 blocks on. The m blocks go
 * straight there too, each its own distance (independent multiplies, not a
 * chain of folds); then the register over that block and the len % 16 bytes
 * after it. The API's crc.
 */
CRC32C_PCLMUL_TARGET static inline uint32_t crc32c_fold_end(__m128i acc, __m128i init,
							    const uint8_t *p, size_t len)
{
	size_t m = len / 16, c;
	uint64_t r;

	for (c = 1; c <= m; c++, p += 16) { /* block c of m: m - c blocks to go */
		__m128i x = _mm_xor_si128(crc32c_load128(p), init);

		init = _mm_setzero_si128();
		acc = _mm_xor_si128(acc, c == m ? x : crc32c_fold16(x, crc32c_fold_k1(m - c)));
	}
	/* reg(0, acc) = acc * x^32 mod P: the register after all before p. */
	r = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(acc));
	r = __builtin_ia32_crc32di(r, (uint64_t)_mm_extract_epi64(acc, 1));
	return ~(uint32_t)crc32c_hw_tail(r, p, len % 16);
}

/* crc32c_pclmul()'s chains and iteration (4 * (64 + 16) = 320 bytes, D = 2560). */
#define CRC32C_PCLMUL_KC ((size_t)64)
#define CRC32C_PCLMUL_N (4 * (CRC32C_PCLMUL_KC + 16))

/*
 * PCLMULQDQ: four 16-byte accumulators beside four crc32 chains, all moving
 * CRC32C_PCLMUL_N bytes per iteration while that many remain; then the
 * accumulators and the whole blocks left go straight to the last whole block.
 * Any len (under 16 bytes, the crc32 instruction alone); under
 * CRC32C_PCLMUL_N bytes, it is only the independent folds of
 * crc32c_fold_end().
 */
CRC32C_PCLMUL_TARGET static uint32_t crc32c_pclmul(uint32_t crc, const uint8_t *p, size_t len)
{
	const size_t kc = CRC32C_PCLMUL_KC, n = CRC32C_PCLMUL_N;
	__m128i init, acc, x0, x1, x2, x3, k;
	size_t m;

	if (len < 16)
		return ~(uint32_t)crc32c_hw_tail((uint32_t)~crc, p, len);
	init = _mm_cvtsi32_si128((int)~crc);
	acc = _mm_setzero_si128();
	if (len >= n) {
		/* C0 x0 C1 x1 C2 x2 C3 x3, n / 4 bytes each. */
		x0 = crc32c_mix16((uint32_t)~crc, p, kc);
		x1 = crc32c_mix16(0, p + n / 4, kc);
		x2 = crc32c_mix16(0, p + n / 2, kc);
		x3 = crc32c_mix16(0, p + n / 4 * 3, kc);
		init = _mm_setzero_si128();
		p += n;
		len -= n;
		k = crc32c_fold_k1(n / 16);
		for (; len >= n; p += n, len -= n) {
			x0 = _mm_xor_si128(crc32c_fold16(x0, k), crc32c_mix16(0, p, kc));
			x1 = _mm_xor_si128(crc32c_fold16(x1, k), crc32c_mix16(0, p + n / 4, kc));
			x2 = _mm_xor_si128(crc32c_fold16(x2, k), crc32c_mix16(0, p + n / 2, kc));
			x3 = _mm_xor_si128(crc32c_fold16(x3, k),
					   crc32c_mix16(0, p + n / 4 * 3, kc));
		}
		/* x3 is m blocks before the last whole block, x2 n / 64 more, ... */
		m = len / 16;
		acc = _mm_xor_si128(crc32c_fold16(x0, crc32c_fold_k1(m + n / 64 * 3)),
				    crc32c_fold16(x1, crc32c_fold_k1(m + n / 64 * 2)));
		acc = _mm_xor_si128(acc, crc32c_fold16(x2, crc32c_fold_k1(m + n / 64)));
		acc = _mm_xor_si128(acc, crc32c_fold16(x3, crc32c_fold_k1(m)));
	}
	return crc32c_fold_end(acc, init, p, len);
}

CRC32C_VPCLMUL_TARGET static inline __m512i crc32c_load512(const uint8_t *p)
{
	return _mm512_loadu_si512((const void *)p);
}

/*
 * The constants for a 64-byte block whose lanes 0, 1, 2, 3 move s + 3, s + 2,
 * s + 1 and s blocks of 16 bytes.
 */
CRC32C_VPCLMUL_TARGET static inline __m512i crc32c_fold_k4(size_t s)
{
	return _mm512_loadu_si512((const void *)crc32c_fold_k[CRC32C_FOLD_KMAX - s - 3]);
}

/* Each lane of x folded with its lane of k, XORed with d (0x96: a ^ b ^ c). */
CRC32C_VPCLMUL_TARGET static inline __m512i crc32c_fold64(__m512i x, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
					 _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96);
}

/* The 64-byte block after the chain of kc bytes at p, with its register XORed in. */
CRC32C_VPCLMUL_TARGET static inline __m512i crc32c_mix64(uint64_t c, const uint8_t *p, size_t kc)
{
	return _mm512_xor_si512(crc32c_load512(p + kc), _mm512_zextsi128_si512(_mm_cvtsi32_si128(
								(int)crc32c_mix_chain(c, p, kc))));
}

/*
 * crc32c_vpclmul()'s loop, with chains of kc bytes: four 64-byte
 * accumulators (16 lanes of 16 bytes) beside four crc32 chains, all moving
 * n = 4 * (kc + 64) bytes (D = 8 * n) per iteration while n bytes remain,
 * from the caller's register crc. Returns the accumulators moved to the last
 * whole block of the bytes left (*pp and *plen on return), every lane its
 * own distance, and added. len >= n. Inlined with kc a constant.
 */
CRC32C_VPCLMUL_TARGET static inline __attribute__((always_inline)) __m512i
crc32c_vpclmul_mix(uint32_t crc, const uint8_t **pp, size_t *plen, size_t kc)
{
	const size_t n = 4 * (kc + 64);
	const uint8_t *p = *pp;
	size_t len = *plen, s;
	__m512i z0, z1, z2, z3, k, sum;

	/* C0 z0 C1 z1 C2 z2 C3 z3, n / 4 bytes each. */
	z0 = crc32c_mix64((uint32_t)~crc, p, kc);
	z1 = crc32c_mix64(0, p + n / 4, kc);
	z2 = crc32c_mix64(0, p + n / 2, kc);
	z3 = crc32c_mix64(0, p + n / 4 * 3, kc);
	p += n;
	len -= n;
	k = _mm512_broadcast_i32x4(crc32c_fold_k1(n / 16));
	for (; len >= n; p += n, len -= n) {
		z0 = crc32c_fold64(z0, k, crc32c_mix64(0, p, kc));
		z1 = crc32c_fold64(z1, k, crc32c_mix64(0, p + n / 4, kc));
		z2 = crc32c_fold64(z2, k, crc32c_mix64(0, p + n / 2, kc));
		z3 = crc32c_fold64(z3, k, crc32c_mix64(0, p + n / 4 * 3, kc));
	}
	/* z3's last lane is s blocks before the last whole block, z2's n / 64 more, ... */
	s = len / 16;
	sum = crc32c_fold64(
		z0, crc32c_fold_k4(s + n / 64 * 3),
		crc32c_fold64(z1, crc32c_fold_k4(s + n / 64 * 2), _mm512_setzero_si512()));
	sum = crc32c_fold64(z2, crc32c_fold_k4(s + n / 64),
			    crc32c_fold64(z3, crc32c_fold_k4(s), sum));
	*pp = p;
	*plen = len;
	return sum;
}

/*
 * VPCLMULQDQ on AVX-512, crc32c_pclmul() four times as wide. From 768 bytes,
 * crc32c_vpclmul_mix() with chains of 32 bytes (384-byte iterations), and
 * from 1536 bytes with chains of 64 (512-byte iterations; faster per
 * iteration but coarser); below 768 bytes the loop's start and end cost more
 * than its chains save. Then each whole 64-byte block left (at most 11) and
 * (in crc32c_fold_end) each whole 16-byte block left goes straight to the
 * last whole block too, every lane its own distance, and the four lanes of
 * the sum are XORed together. Any len.
 */
#define CRC32C_MIX32_MIN ((size_t)768)
#define CRC32C_MIX64_MIN ((size_t)1536)

CRC32C_VPCLMUL_TARGET static uint32_t crc32c_vpclmul(uint32_t crc, const uint8_t *p, size_t len)
{
	__m512i z, sum;
	__m256i y;
	__m128i init;
	size_t q, b;

	if (len < 16)
		return ~(uint32_t)crc32c_hw_tail((uint32_t)~crc, p, len);
	init = _mm_cvtsi32_si128((int)~crc);
	sum = _mm512_setzero_si512();
	if (len >= CRC32C_MIX64_MIN) {
		sum = crc32c_vpclmul_mix(crc, &p, &len, 64);
		init = _mm_setzero_si128();
	} else if (len >= CRC32C_MIX32_MIN) {
		sum = crc32c_vpclmul_mix(crc, &p, &len, 32);
		init = _mm_setzero_si128();
	}
	/* The q < 12 whole 64-byte blocks left: block b has 4 (q - b) + len % 64 / 16 after it. */
	q = len / 64;
	for (b = 1; b <= q; b++, p += 64) {
		z = _mm512_xor_si512(crc32c_load512(p), _mm512_zextsi128_si512(init));
		init = _mm_setzero_si128();
		sum = crc32c_fold64(z, crc32c_fold_k4(4 * (q - b) + len % 64 / 16), sum);
	}
	y = _mm256_xor_si256(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
	return crc32c_fold_end(
		_mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1)), init, p,
		len % 64);
}

/*
 * No distance beyond crc32c_fold_k[]: the first lane of the first
 * accumulator after crc32c_vpclmul_mix() (n = 4 * (kc + 64) bytes per
 * iteration, under n bytes after the last), that of the first 64-byte block
 * of crc32c_vpclmul() without the loop, and the first accumulator of
 * crc32c_pclmul().
 */
#define CRC32C_MIX_DIST(n) (((n)-1) / 16 + (n) / 64 * 3 + 3)
_Static_assert(CRC32C_MIX_DIST(4 * (64 + 64)) <= CRC32C_FOLD_KMAX, "crc32c_fold_k too short");
_Static_assert(CRC32C_MIX_DIST(4 * (32 + 64)) <= CRC32C_FOLD_KMAX, "crc32c_fold_k too short");
_Static_assert(((CRC32C_MIX32_MIN - 1) / 64 - 1) * 4 + 3 + 3 <= CRC32C_FOLD_KMAX,
	       "crc32c_fold_k too short");
_Static_assert((CRC32C_PCLMUL_N - 1) / 16 + CRC32C_PCLMUL_N / 64 * 3 <= CRC32C_FOLD_KMAX,
	       "crc32c_fold_k too short");

/*
 * The implementation dxpu_crc32c() uses. crc32c_init() writes it and
 * crc32c_fold_k[] once, as a constructor: before main() (or, in a shared
 * object, before dlopen() returns), so before any thread can call in; after
 * that they are only read, and no lazy initialisation races. Still
 * CRC32C_IMPL_UNSET only in a call from another constructor that ran first:
 * that call takes the crc32 instruction alone, as before folding.
 */
enum crc32c_impl {
	CRC32C_IMPL_UNSET,
	CRC32C_IMPL_PORTABLE,
	CRC32C_IMPL_HW,
	CRC32C_IMPL_PCLMUL,
	CRC32C_IMPL_VPCLMUL,
};
static enum crc32c_impl crc32c_impl;

/*
 * Shorter buffers take crc32c_hw(): below these lengths it was as fast or
 * faster, measured on AMD EPYC (Zen 5) over 64..9216 bytes in steps of 8 to
 * 32. crc32c_pclmul() was measured there too, although that CPU takes
 * crc32c_vpclmul(): its XMM folds alone are slower than three crc32 chains,
 * and it pays only once its crc32 chains run beside them.
 */
#define CRC32C_PCLMUL_MIN ((size_t)640)
#define CRC32C_VPCLMUL_MIN ((size_t)112)

__attribute__((constructor)) static void crc32c_init(void)
{
	__builtin_cpu_init(); /* needed in a constructor */
	crc32c_fold_init();
	if (!__builtin_cpu_supports("sse4.2"))
		crc32c_impl = CRC32C_IMPL_PORTABLE;
	else if (!__builtin_cpu_supports("pclmul"))
		crc32c_impl = CRC32C_IMPL_HW;
	else if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl") ||
		 !__builtin_cpu_supports("vpclmulqdq"))
		crc32c_impl = CRC32C_IMPL_PCLMUL;
	else
		crc32c_impl = CRC32C_IMPL_VPCLMUL;
}

bool dxpu_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = (const uint8_t *)data;

	switch (crc32c_impl) {
	case CRC32C_IMPL_VPCLMUL:
		if (len >= CRC32C_VPCLMUL_MIN)
			return crc32c_vpclmul(crc, p, len);
		return crc32c_hw(crc, p, len);
	case CRC32C_IMPL_PCLMUL:
		if (len >= CRC32C_PCLMUL_MIN)
			return crc32c_pclmul(crc, p, len);
		return crc32c_hw(crc, p, len);
	case CRC32C_IMPL_HW:
		return crc32c_hw(crc, p, len);
	case CRC32C_IMPL_PORTABLE:
		return crc32c_sw(crc, p, len);
	case CRC32C_IMPL_UNSET:
	default:
		break;
	}
	if (dxpu_crc32c_hw_available())
		return crc32c_hw(crc, p, len);
	return crc32c_sw(crc, p, len);
}

uint32_t dxpu_crc32c_hw_single(uint32_t crc, const void *data, size_t len)
{
	if (dxpu_crc32c_hw_available())
		return crc32c_hw_single(crc, (const uint8_t *)data, len);
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

uint32_t dxpu_crc32c_hw_3way(uint32_t crc, const void *data, size_t len)
{
	if (dxpu_crc32c_hw_available())
		return crc32c_hw(crc, (const uint8_t *)data, len);
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

bool dxpu_crc32c_pclmul_available(void)
{
	return crc32c_impl >= CRC32C_IMPL_PCLMUL;
}

bool dxpu_crc32c_vpclmul_available(void)
{
	return crc32c_impl >= CRC32C_IMPL_VPCLMUL;
}

uint32_t dxpu_crc32c_pclmul(uint32_t crc, const void *data, size_t len)
{
	if (dxpu_crc32c_pclmul_available())
		return crc32c_pclmul(crc, (const uint8_t *)data, len);
	return dxpu_crc32c(crc, data, len);
}

uint32_t dxpu_crc32c_vpclmul(uint32_t crc, const void *data, size_t len)
{
	if (dxpu_crc32c_vpclmul_available())
		return crc32c_vpclmul(crc, (const uint8_t *)data, len);
	return dxpu_crc32c(crc, data, len);
}

const char *dxpu_crc32c_impl_name(void)
{
	switch (crc32c_impl) {
	case CRC32C_IMPL_VPCLMUL:
		return "vpclmulqdq-avx512";
	case CRC32C_IMPL_PCLMUL:
		return "pclmulqdq";
	case CRC32C_IMPL_HW:
		return "sse4.2-3way";
	case CRC32C_IMPL_PORTABLE:
	case CRC32C_IMPL_UNSET:
	default:
		break;
	}
	return dxpu_crc32c_hw_available() ? "sse4.2-3way" : "portable";
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

uint32_t dxpu_crc32c_hw_3way(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

bool dxpu_crc32c_pclmul_available(void)
{
	return false;
}

bool dxpu_crc32c_vpclmul_available(void)
{
	return false;
}

uint32_t dxpu_crc32c_pclmul(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

uint32_t dxpu_crc32c_vpclmul(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}

const char *dxpu_crc32c_impl_name(void)
{
	return "portable";
}
#endif

uint32_t dxpu_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
