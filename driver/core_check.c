// SPDX-License-Identifier: GPL-2.0
/*
 * core_check.c - a module that carries lib/core and runs a known-answer
 * self-test of it at load: CRC32C's check value, a TLP decoded, re-encoded
 * and compared byte for byte, and the handshake and sealed frames on the
 * kernel's crypto against known answers (core_check_noise.c). Fails to load
 * if any is wrong.
 */
#include <linux/module.h>
#include <linux/printk.h>

#include "core/crc32c.h"
#include "core/tlp_codec.h"
#include "core_check.h"

/* MRd, 3DW, Length 1, requester 01:00.0, tag 7, First BE 1111b, address 0xf0000010. */
static const u8 known_mrd[12] = {
	0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x07, 0x0f, 0xf0, 0x00, 0x00, 0x10,
};

static int __init dxpu_core_check_init(void)
{
	struct dxpu_tlp t;
	u8 out[sizeof(known_mrd)];
	size_t len = 0;
	enum dxpu_tlp_err err;

	if (dxpu_crc32c(0, "123456789", 9) != 0xe3069283u) {
		pr_err("dxpu_core_check: CRC32C check value wrong\n");
		return -EINVAL;
	}
	err = dxpu_tlp_decode(known_mrd, sizeof(known_mrd), &t);
	if (err == DXPU_TLP_OK)
		err = dxpu_tlp_encode(&t, out, sizeof(out), &len);
	if (err != DXPU_TLP_OK || len != sizeof(known_mrd) ||
	    memcmp(out, known_mrd, sizeof(known_mrd)) != 0 || t.addr != 0xf0000010u) {
		pr_err("dxpu_core_check: TLP round trip failed: %s\n", dxpu_tlp_err_name(err));
		return -EINVAL;
	}
	if (dxpu_core_check_noise())
		return -EINVAL;
	pr_info("dxpu_core_check: lib/core self-test passed\n");
	return 0;
}

static void __exit dxpu_core_check_exit(void)
{
}

module_init(dxpu_core_check_init);
module_exit(dxpu_core_check_exit);
MODULE_DESCRIPTION("DxPU protocol core: kernel build check and self-test");
MODULE_LICENSE("Dual MIT/GPL");
