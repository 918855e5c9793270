// SPDX-License-Identifier: GPL-2.0
/*
 * Takes two mutexes in one order, then in the other, in one thread: no deadlock happens, but
 * lockdep must report the possible circular dependency (the debug kernel's harness check).
 */
#include <linux/module.h>
#include <linux/mutex.h>

static DEFINE_MUTEX(lock_a);
static DEFINE_MUTEX(lock_b);

static int __init lockorder_init(void)
{
	mutex_lock(&lock_a);
	mutex_lock(&lock_b);
	mutex_unlock(&lock_b);
	mutex_unlock(&lock_a);

	mutex_lock(&lock_b);
	mutex_lock(&lock_a);
	mutex_unlock(&lock_a);
	mutex_unlock(&lock_b);
	pr_info("dxpu_lockorder: took a then b, then b then a\n");
	return 0;
}

static void __exit lockorder_exit(void)
{
}

module_init(lockorder_init);
module_exit(lockorder_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DxPU test: a lock-order inversion for lockdep to report");
