// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the wait of a queued lock waiter until it may compete, shared
 * by TO locks (lock.c) and reader/writer locks (rwlock.c).
 *
 * Lifetimes and locking: nothing here outlives the call; the caller's
 * queue entry and the state it is queued on are the caller's (lock.h,
 * rwlock.h). The top-waiter test is the caller's and takes state->lock.
 */
#include <linux/sched.h>

#include "queue.h"
#include "tofutex.h"

/**
 * tofutex_queue_wait_for_top() - sleep until the caller may compete
 * @qw: the wait
 *
 * The task state is set before the top-waiter test, and whoever makes the
 * caller top waiter (or gives it the lock) does so under state->lock and
 * wakes it after dropping that lock, so a promotion between the test and
 * schedule() makes schedule() return at once instead of being lost. Each
 * sleep counts in the status and the statistics like a sleep as top
 * waiter: the caller did go to sleep.
 *
 * Return: 0 when the caller may compete, -ERESTARTSYS or -ETIMEDOUT.
 */
int tofutex_queue_wait_for_top(const struct tofutex_queue_wait *qw)
{
	int ret;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (qw->is_top(qw->arg))
			break;
		ret = tofutex_deadline_interrupted(qw->deadline);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			return ret;
		}
		tofutex_count(qw->table, TOFUTEX_CNT_SLEEPS);
		(*qw->sleeps)++;
		tofutex_schedule_until(qw->deadline);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}
