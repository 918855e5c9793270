// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * crc32c.c - CRC32C (see crc32c.h): portable slicing-by-8 (byte loads only, so
 * no alignment or endianness assumptions), and in x86-64 userspace the SSE4.2
 * crc32 instruction when the CPU has it.
 */
#include "crc32c.h"
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

#if !defined(__KERNEL__) && defined(__x86_64__) && defined(__GNUC__)
/*
 * Userspace on x86-64: the SSE4.2 crc32 instruction computes the same CRC32C
 * (same polynomial, reflected, same register semantics), 8 bytes at a time.
 * Chosen at run time; tests/core/crc32c_test.cc checks both paths agree.
 */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
							    size_t len)
{
	uint64_t c = ~crc;
	uint64_t v;

	while (len >= 8) {
		memcpy(&v, p, sizeof(v)); /* little-endian load, as the instruction expects */
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
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
#else
bool dxpu_crc32c_hw_available(void)
{
	return false;
}

uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
#endif

uint32_t dxpu_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, (const uint8_t *)data, len);
}
