// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the arguments of the lock calls: struct tofutex_lock of
 * TOFUTEX_IOC_LOCK (lock.c), RDLOCK and WRLOCK (rwlock.c), read and
 * checked, and its status written back; struct tofutex_unlock of
 * TOFUTEX_IOC_UNLOCK (unlock.c) and RWUNLOCK (rwunlock.c), the whole
 * ioctl around the release.
 *
 * The rule of both: a write-back after the action never turns success
 * into an error. The lock status is written once before locking, so that
 * an argument that cannot take it fails before anything is locked. Once
 * the word is taken the call succeeds: if the argument was unmapped or
 * made read-only meanwhile, the status is lost, but the caller owns the
 * lock and must know it (a lock word itself still shows OWNER_DIED).
 * Once a release acted, likewise, a lost "woken" is only lost: an error
 * would tell the caller that nothing happened, and its retry would
 * release a lock that may belong to somebody else by then.
 *
 * Lifetimes and locking: nothing here outlives the call or takes a lock.
 */
#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/uaccess.h>

#include "queue.h"
#include "tofutex.h"
#include "tofutex_trace.h"

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
 * tofutex_lock_result() - count and trace a lock call's outcome, and its
 * status
 * @table:  the caller's process table
 * @uaddr:  the word
 * @op:     the call, for the trace
 * @ret:    the call's result: 0 when it took the word
 * @how:    TOFUTEX_STATUS_* of the take
 * @sleeps: how often the caller slept
 * @since:  when it queued (tofutex_trace_contended()), 0 when it did not
 *          or nobody traced it then
 * @status: out: @how and the sleep count, when @ret is 0
 */
void tofutex_lock_result(struct tofutex_table *table, u32 __user *uaddr,
			 enum tofutex_op op, int ret, u32 how,
			 unsigned int sleeps, u64 since, u32 *status)
{
	if (!ret) {
		trace_tofutex_lock_acquired(uaddr, op, how, sleeps, since);
		tofutex_count_taken(table, how);
		*status = how | (min_t(u32, sleeps, TOFUTEX_STATUS_SLEEPS_MAX)
				 << TOFUTEX_STATUS_SLEEPS_SHIFT);
	} else if (ret == -ETIMEDOUT) {
		tofutex_count(table, TOFUTEX_CNT_TIMEOUTS);
	}
}

/**
 * tofutex_unlock_call() - TOFUTEX_IOC_UNLOCK and TOFUTEX_IOC_RWUNLOCK
 * @table:   the caller's process table
 * @argp:    user pointer to struct tofutex_unlock
 * @release: the call's action
 * @op:      TOFUTEX_OP_UNLOCK or TOFUTEX_OP_RWUNLOCK, for the trace
 *
 * Reads and checks the argument, runs @release and writes @woken back
 * when it succeeded; a write-back that fails then is ignored (see the
 * file's head).
 *
 * Return: 0, -EFAULT or -EINVAL for the argument, or @release's error.
 */
long tofutex_unlock_call(struct tofutex_table *table,
			 struct tofutex_unlock __user *argp,
			 tofutex_release_t release, enum tofutex_op op)
{
	struct tofutex_unlock arg;
	u32 __user *uaddr;
	u32 woken;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &uaddr);
	if (ret)
		return ret;

	ret = release(table, uaddr, &woken);
	/* A restarted call counts once, when it ends. */
	if (ret != -ERESTARTNOINTR)
		tofutex_count(table, TOFUTEX_CNT_UNLOCK_CALLS);
	if (!ret && woken)
		trace_tofutex_release_woke(uaddr, op);
	if (!ret && put_user(woken, &argp->woken))
		pr_debug("tofutex: unlock woken lost: argument not writable\n");
	return ret;
}
