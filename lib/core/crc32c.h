/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * crc32c.h - CRC32C (Castagnoli; polynomial 0x1EDC6F41, reflected 0x82F63B78,
 * initial value and final XOR 0xFFFFFFFF), as iSCSI (RFC 3720), SCTP and
 * ext4 use it. DxFP protects every frame with it.
 */
#ifndef DXPU_CORE_CRC32C_H
#define DXPU_CORE_CRC32C_H

#include <dxpu/compat.h>

DXPU_EXTERN_C_BEGIN

/*
 * Continue a CRC32C over len more bytes. Start with crc = 0; the result of
 * one call is the crc argument of the next, so
 * dxpu_crc32c(dxpu_crc32c(0, a, n), b, m) is the CRC of a followed by b.
 * dxpu_crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t dxpu_crc32c(uint32_t crc, const void *data, size_t len);

/* The portable implementation alone (the reference the fast path is tested against). */
uint32_t dxpu_crc32c_portable(uint32_t crc, const void *data, size_t len);

/* Whether dxpu_crc32c() uses the CPU's CRC32C instruction (never in the kernel build). */
bool dxpu_crc32c_hw_available(void);

/*
 * For comparison only (bench/tlp_bench.cc, the tests): the previous hardware
 * path, one dependent chain of the CRC32C instruction, about a third of the
 * speed of dxpu_crc32c() on large buffers. Where the instruction is not
 * available, the portable implementation. Same result as dxpu_crc32c().
 */
uint32_t dxpu_crc32c_hw_single(uint32_t crc, const void *data, size_t len);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_CRC32C_H */
