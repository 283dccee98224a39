/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - what the queues of TO locks (lock.h) and reader/writer locks
 * (rwlock.h) share: the wait of a queued waiter until it may compete, the
 * top waiter's loop, and the retry loop of a release (queue.c); the
 * struct tofutex_lock argument and status of LOCK, RDLOCK and WRLOCK, and
 * the struct tofutex_unlock argument of UNLOCK and RWUNLOCK (lockarg.c).
 *
 * Locking and lifetimes: each queue's own header says what state->lock
 * protects; the helpers here take state->lock only through the caller's
 * callbacks, and hold no reference beyond the call.
 */
#ifndef _TOFUTEX_QUEUE_H
#define _TOFUTEX_QUEUE_H

#include <linux/types.h>

#include "tofutex.h"

/* queue.c */

/**
 * struct tofutex_queue_wait - a queued waiter's wait to become top
 * waiter, and its loop as top waiter
 * @table:    the caller's process table, for the statistics
 * @uaddr:    the word
 * @deadline: when the call gives up; it also bounds every fault-in
 * @sleeps:   the call's sleep count, counted up per sleep
 * @is_top:   whether the caller may compete now (or need not: it was
 *            given the lock); takes state->lock itself
 * @compete:  one pass of the top waiter on the word as just read: 1 when
 *            the caller holds the word (@how set to TOFUTEX_STATUS_*), 0
 *            to look again, else a negative error
 * @arg:      the argument of @is_top and @compete
 */
struct tofutex_queue_wait {
	struct tofutex_table *table;
	u32 __user *uaddr;
	const struct tofutex_deadline *deadline;
	unsigned int *sleeps;
	bool (*is_top)(void *arg);
	int (*compete)(void *arg, u32 word, u32 *how);
	void *arg;
};

int tofutex_queue_wait_and_compete(const struct tofutex_queue_wait *qw,
				   u32 *how);

/**
 * typedef tofutex_release_pass_t - one attempt of a release
 * @arg:   the release call
 * @woken: out: set to 1 when a waiter was woken
 *
 * Holds no lock when it returns. Return: 0 when done, -EAGAIN when the
 * word changed under its cmpxchg and nothing was done, -EFAULT when the
 * word's page must be faulted in (nothing was done), or an error.
 */
typedef int (*tofutex_release_pass_t)(void *arg, u32 *woken);

int tofutex_release_run(tofutex_release_pass_t pass, void *arg,
			u32 __user *uaddr, u32 *woken);

/* lockarg.c */
int tofutex_lock_arg_get(struct tofutex_lock __user *argp, u32 flags_ok,
			 u32 __user **uaddr, struct tofutex_deadline *dl,
			 u32 *flags);
void tofutex_lock_arg_put(struct tofutex_lock __user *argp, u32 status);
void tofutex_lock_result(struct tofutex_table *table, u32 __user *uaddr,
			 enum tofutex_op op, int ret, u32 how,
			 unsigned int sleeps, u64 since, u32 *status);

/**
 * typedef tofutex_release_t - UNLOCK's or RWUNLOCK's action
 * @table: the caller's process table
 * @uaddr: the word, checked by tofutex_word_check()
 * @woken: out: 1 when a waiter was woken (or handed the lock), else 0
 *
 * Return: 0 once the word is released, or an error when nothing was done.
 */
typedef int (*tofutex_release_t)(struct tofutex_table *table,
				 u32 __user *uaddr, u32 *woken);

long tofutex_unlock_call(struct tofutex_table *table,
			 struct tofutex_unlock __user *argp,
			 tofutex_release_t release, enum tofutex_op op);

#endif /* _TOFUTEX_QUEUE_H */
