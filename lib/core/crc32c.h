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
 * Which implementation dxpu_crc32c() uses for long buffers on this CPU:
 * "vpclmulqdq-avx512", "pclmulqdq" (carry-less multiplication folding; short
 * buffers and the last bytes still take the CRC32C instruction),
 * "sse4.2-3way" (the CRC32C instruction alone) or "portable".
 */
const char *dxpu_crc32c_impl_name(void);

/*
 * For comparison only (bench/tlp_bench.cc, the tests): the previous hardware
 * paths. dxpu_crc32c_hw_single(): one dependent chain of the CRC32C
 * instruction. dxpu_crc32c_hw_3way(): three interleaved chains, what
 * dxpu_crc32c() used before folding, about 3 times dxpu_crc32c_hw_single().
 * Where the instruction is not available, the portable implementation. Same
 * result as dxpu_crc32c().
 */
uint32_t dxpu_crc32c_hw_single(uint32_t crc, const void *data, size_t len);
uint32_t dxpu_crc32c_hw_3way(uint32_t crc, const void *data, size_t len);

/*
 * For the tests and benchmarks: one folding implementation forced, whatever
 * the length (dxpu_crc32c() takes it only from a length threshold up, and
 * only the widest the CPU has). Where the CPU (or the build: kernel, non-x86)
 * lacks it (the _available() function says), the same result by
 * dxpu_crc32c().
 */
bool dxpu_crc32c_pclmul_available(void);
uint32_t dxpu_crc32c_pclmul(uint32_t crc, const void *data, size_t len);
bool dxpu_crc32c_vpclmul_available(void);
uint32_t dxpu_crc32c_vpclmul(uint32_t crc, const void *data, size_t len);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_CRC32C_H */
