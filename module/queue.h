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

struct task_struct;

/**
 * struct tofutex_queue_call - what every LOCK, RDLOCK or WRLOCK call has,
 * at the head of its own call structure (lock.h, rwlock.c)
 * @table:    the caller's process table
 * @state:    the word's state, with a use held while the call is queued
 * @uaddr:    the word
 * @deadline: when the call gives up; it also bounds every fault-in
 * @sleeps:   how often the caller slept
 * @op:       TOFUTEX_OP_LOCK, _RDLOCK or _WRLOCK, for the trace
 * @since:    when it queued, for tofutex_lock_acquired; 0 untraced
 *            (trace.c)
 */
struct tofutex_queue_call {
	struct tofutex_table *table;
	struct tofutex_state *state;
	u32 __user *uaddr;
	struct tofutex_deadline deadline;
	unsigned int sleeps;
	enum tofutex_op op;
	u64 since;
};

/**
 * struct tofutex_queue_ops - one kind of queue's part of the slow path
 * (tofutex_queue_lock()); each callback gets the call's own structure
 * @kind:    the state's kind (TOFUTEX_STATE_LOCK or _RWLOCK)
 * @join:    under state->lock: queue the caller's waiter
 * @is_top:  whether the caller may compete now (or need not: it was given
 *           the lock); takes state->lock itself
 * @given:   1 when another task gave the lock to the caller (@how set),
 *           else 0; looked at before each read of the word, so that a
 *           caller that holds the word already does not touch it (its
 *           page may have gone meanwhile), and under state->lock when
 *           the call ends
 * @compete: one pass of the top waiter on the word as just read: 1 when
 *           the caller holds the word (@how set to TOFUTEX_STATUS_*), 0
 *           to look again, TOFUTEX_QUEUE_NOT_TOP when a waiter that
 *           joined ahead of it made it wait again, else a negative error
 * @leave:   under state->lock: take the caller's waiter off the queue,
 *           the call's result @ret (> 0 holding the word, else the
 *           error); *@wake the waiter it made top (reference held), or
 *           NULL
 * @taken:   optional: after the caller left the queue holding the word
 * @gave_up: optional: after the caller left the queue without the word
 *           (@err why: -ETIMEDOUT, -ERESTARTSYS, ...); holds no lock
 */
struct tofutex_queue_ops {
	enum tofutex_state_kind kind;
	void (*join)(void *arg);
	bool (*is_top)(void *arg);
	int (*given)(void *arg, u32 *how);
	int (*compete)(void *arg, u32 word, u32 *how);
	void (*leave)(void *arg, int ret, struct task_struct **wake);
	void (*taken)(void *arg);
	void (*gave_up)(void *arg, int err);
};

/*
 * A compete pass's answer: the caller is top waiter no more, since a
 * waiter joined ahead of it (rwlock.c: a reserving writer queues ahead of
 * the readers), and waits to be top again. Neither 0 nor 1 (a pass's
 * other answers) nor rwlock.h's TOFUTEX_RW_CHANGED.
 */
#define TOFUTEX_QUEUE_NOT_TOP	3

int tofutex_queue_lock(const struct tofutex_queue_ops *ops,
		       struct tofutex_queue_call *qc, void *arg, u32 *how);

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
			u32 __user *uaddr,
			const struct tofutex_deadline *budget, u32 *woken);

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
