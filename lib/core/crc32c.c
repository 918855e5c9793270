// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * crc32c.c - portable slicing-by-8 CRC32C (see crc32c.h). Byte loads only, so
 * no alignment or endianness assumptions; compilers fuse them into one load.
 */
#include "crc32c.h"
#include "crc32c_table.h"

uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = (const uint8_t *)data;
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
