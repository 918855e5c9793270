// SPDX-License-Identifier: GPL-2.0
/*
 * Reads a byte of a kmalloc'd buffer after kfree: KASAN must report a use-after-free (the
 * debug kernel's harness check). OPTIMIZER_HIDE_VAR keeps the compiler from seeing that the
 * pointer is the freed one, so it keeps the access.
 */
#include <linux/module.h>
#include <linux/slab.h>

static int __init uaf_init(void)
{
	char *p = kmalloc(64, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	p[0] = 1;
	kfree(p);
	OPTIMIZER_HIDE_VAR(p);
	pr_info("dxpu_uaf: read %d from a freed buffer\n", READ_ONCE(p[8]));
	return 0;
}

static void __exit uaf_exit(void)
{
}

module_init(uaf_init);
module_exit(uaf_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DxPU test: a use after free for KASAN to report");
