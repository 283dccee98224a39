// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the struct tofutex_lock argument of TOFUTEX_IOC_LOCK (lock.c),
 * RDLOCK and WRLOCK (rwlock.c): reading and checking it, and writing the
 * status back.
 *
 * The status is written once before locking, so that an argument that
 * cannot take it fails before anything is locked. Once the word is taken
 * the call succeeds: if the argument was unmapped or made read-only
 * meanwhile, the status is lost, but the caller owns the lock and must
 * know it (a lock word itself still shows OWNER_DIED).
 *
 * Lifetimes and locking: nothing here outlives the call or takes a lock.
 */
#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/uaccess.h>

#include "queue.h"
#include "tofutex.h"

/**
 * tofutex_lock_arg_get() - read and check a struct tofutex_lock
 * @argp:     user pointer to it
 * @flags_ok: the TOFUTEX_LOCK_* flags the call takes
 * @uaddr:    out: the word, checked by tofutex_word_check()
 * @dl:       out: the deadline
 * @flags:    out: the call's flags
 *
 * Return: 0, -EFAULT (also when the status cannot be written), -EINVAL.
 */
int tofutex_lock_arg_get(struct tofutex_lock __user *argp, u32 flags_ok,
			 u32 __user **uaddr, struct tofutex_deadline *dl,
			 u32 *flags)
{
	struct tofutex_lock arg;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~flags_ok) || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, uaddr);
	if (!ret)
		ret = tofutex_deadline_init(dl, arg.flags & TOFUTEX_LOCK_DEADLINE,
					    arg.flags & TOFUTEX_LOCK_CLOCK_REALTIME,
					    arg.deadline_ns);
	if (ret)
		return ret;
	*flags = arg.flags;
	return put_user(0, &argp->status) ? -EFAULT : 0;
}

/**
 * tofutex_lock_arg_put() - write the status of a call that took the word
 * @argp:   user pointer to the struct tofutex_lock
 * @status: TOFUTEX_STATUS_* and sleep count
 */
void tofutex_lock_arg_put(struct tofutex_lock __user *argp, u32 status)
{
	if (put_user(status, &argp->status))
		pr_debug("tofutex: lock status lost: argument not writable\n");
}

/**
 * tofutex_lock_result() - count a lock call's outcome, and its status
 * @table:  the caller's process table
 * @ret:    the call's result: 0 when it took the word
 * @how:    TOFUTEX_STATUS_* of the take
 * @sleeps: how often the caller slept
 * @status: out: @how and the sleep count, when @ret is 0
 */
void tofutex_lock_result(struct tofutex_table *table, int ret, u32 how,
			 unsigned int sleeps, u32 *status)
{
	if (!ret) {
		tofutex_count_taken(table, how);
		*status = how | (min_t(u32, sleeps, TOFUTEX_STATUS_SLEEPS_MAX)
				 << TOFUTEX_STATUS_SLEEPS_SHIFT);
	} else if (ret == -ETIMEDOUT) {
		tofutex_count(table, TOFUTEX_CNT_TIMEOUTS);
	}
}
