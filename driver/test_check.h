/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_check.h - what the kernel test modules (mmio_check.c, dma_api_check.c, irq_check.c)
 * share: one "DXPU-TEST: PASS|FAIL <what>" console line per check, which the kernel tests'
 * harness (tests/kernel/guest.sh) counts, and the module's count of failures.
 */
#ifndef DXPU_DRIVER_TEST_CHECK_H
#define DXPU_DRIVER_TEST_CHECK_H

#include <linux/printk.h>
#include <linux/types.h>

static int failures;

static void check(bool ok, const char *what)
{
	if (ok) {
		pr_info("DXPU-TEST: PASS %s\n", what);
	} else {
		pr_err("DXPU-TEST: FAIL %s\n", what);
		failures++;
	}
}

#endif /* DXPU_DRIVER_TEST_CHECK_H */
