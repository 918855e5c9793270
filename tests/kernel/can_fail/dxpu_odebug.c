// SPDX-License-Identifier: GPL-2.0
/*
 * Frees a timer that is still pending: DEBUG_OBJECTS must report freeing an active object (the
 * debug kernel's harness check). Its fixup deletes the timer before the memory goes, so the
 * kernel stays sound.
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timer.h>

static void odebug_timer_fn(struct timer_list *t)
{
}

static int __init odebug_init(void)
{
	struct timer_list *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return -ENOMEM;
	timer_setup(t, odebug_timer_fn, 0);
	mod_timer(t, jiffies + 60 * HZ);
	kfree(t);
	pr_info("dxpu_odebug: freed a pending timer\n");
	return 0;
}

static void __exit odebug_exit(void)
{
}

module_init(odebug_init);
module_exit(odebug_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("DxPU test: a pending timer freed, for DEBUG_OBJECTS to report");
