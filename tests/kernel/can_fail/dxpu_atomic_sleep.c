// SPDX-License-Identifier: GPL-2.0
/*
 * Allocates with GFP_KERNEL (which may sleep) under a spinlock: DEBUG_ATOMIC_SLEEP must report
 * a sleeping function called from invalid context (the debug kernel's harness check), even
 * though this allocation does not happen to sleep.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

static DEFINE_SPINLOCK(lock);

static int __init atomic_sleep_init(void)
{
	void *p;

	spin_lock(&lock);
	p = kmalloc(64, GFP_KERNEL);
	spin_unlock(&lock);
	kfree(p);
	pr_info("dxpu_atomic_sleep: allocated with GFP_KERNEL under a spinlock\n");
	return 0;
}

static void __exit atomic_sleep_exit(void)
{
}

module_init(atomic_sleep_init);
module_exit(atomic_sleep_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DxPU test: a sleeping allocation in atomic context for DEBUG_ATOMIC_SLEEP");
