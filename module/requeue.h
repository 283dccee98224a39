/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - what requeue.c (the moved waiters: poller, releases, re-arm)
 * and requeue_call.c (TOFUTEX_IOC_REQUEUE itself) share; no other file
 * uses it. The objects, lifetimes and locks are described in requeue.c.
 */
#ifndef _TOFUTEX_REQUEUE_H
#define _TOFUTEX_REQUEUE_H

#include <linux/list.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/types.h>

#include "tofutex.h"

/*
 * Waiters REQUEUE wakes per hold of the state locks: their tasks wait on
 * the stack until the locks are dropped, as in WAKE. Moving needs no
 * wake-up, so it is not batched.
 */
#define TOFUTEX_REQUEUE_BATCH	8

/* Wake a task pinned under a lock, after dropping it; NULL is a no-op. */
static inline void tofutex_requeue_wake(struct task_struct *task)
{
	if (!task)
		return;
	wake_up_process(task);
	put_task_struct(task);
}

/* Does @list hold more than @n entries? Looks at n + 1 at most. */
static inline bool tofutex_list_longer(struct list_head *list, u32 n)
{
	struct list_head *pos;

	list_for_each(pos, list)
		if (n-- == 0)
			return true;
	return false;
}

/* How many entries @list holds, counting to @max at most. */
static inline u32 tofutex_list_count(struct list_head *list, u32 max)
{
	struct list_head *pos;
	u32 n = 0;

	list_for_each(pos, list) {
		if (n == max)
			break;
		n++;
	}
	return n;
}

/* The poller of @state: its last moved waiter, pinned; under its lock. */
static inline struct task_struct *
tofutex_requeue_poller(struct tofutex_state *state)
{
	struct tofutex_word_waiter *tail;

	if (list_empty(&state->requeued))
		return NULL;
	tail = list_last_entry(&state->requeued, struct tofutex_word_waiter,
			       node);
	return get_task_struct(tail->task);
}

#endif /* _TOFUTEX_REQUEUE_H */
