/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - the TO lock's queue, shared by lock.c (TOFUTEX_IOC_LOCK) and
 * unlock.c (TOFUTEX_IOC_UNLOCK); no other file uses it.
 *
 * Locking and lifetimes: state->lock protects state->waiters,
 * state->handoff and every waiter's @top_since, @handed_off and @woken. A waiter
 * is on the list only while its task is inside LOCK holding a use of the
 * state, so an unlocker that finds it under state->lock may take a
 * reference on its task, to wake it after dropping the lock. A struct
 * tofutex_locker lives on the stack of one LOCK or UNLOCK call.
 */
#ifndef _TOFUTEX_LOCK_H
#define _TOFUTEX_LOCK_H

#include <linux/list.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/types.h>

#include "queue.h"
#include "tofutex.h"

/**
 * struct tofutex_waiter - a task inside TOFUTEX_IOC_LOCK
 * @node:       entry in state->waiters
 * @task:       the waiting task
 * @vpid:       its TID, as written into the word on a hand-off
 * @top_since:  when it became top waiter (ns, monotonic)
 * @handed_off: 0, or the status to report when an unlocker gave it the
 *              lock (it owns the word now): TOFUTEX_STATUS_HANDOFF, or
 *              TOFUTEX_STATUS_OWNER_DIED when the word kept OWNER_DIED
 * @woken:      an unlocker released the word and woke it as top waiter: if
 *              it finds the word taken again, a thief beat it to it
 */
struct tofutex_waiter {
	struct list_head node;
	struct task_struct *task;
	u32 vpid;
	u64 top_since;
	u32 handed_off;
	bool woken;
};

/**
 * struct tofutex_locker - one LOCK or UNLOCK call in progress
 * @q:        the table, state, word, deadline and sleep count (queue.h;
 *            UNLOCK uses table, state and word only)
 * @waiter:   the caller's queue entry (UNLOCK uses only its @vpid)
 * @no_owner_poll: LOCK's TOFUTEX_LOCK_NO_OWNER_POLL
 */
struct tofutex_locker {
	struct tofutex_queue_call q;
	struct tofutex_waiter waiter;
	bool no_owner_poll;
};

/* The owner's TID in a lock word, without the WAITERS and OWNER_DIED bits. */
static inline u32 tofutex_tid(u32 word)
{
	return word & TOFUTEX_TID_MASK;
}

/*
 * How a take of a word that held @old went: a word with OWNER_DIED is
 * reported as taken from a dead owner, whoever set the bit, so that the
 * new owner knows that the data may be inconsistent.
 */
static inline u32 tofutex_taken_how(u32 old, u32 how)
{
	return (old & TOFUTEX_OWNER_DIED) ? TOFUTEX_STATUS_OWNER_DIED : how;
}

/**
 * tofutex_wake_task() - wake a task pinned under a lock, after dropping it
 * @task: the task with a reference held, or NULL
 *
 * Waking outside state->lock keeps its hold time short, as futex's wake_q
 * does (wake_q_add() is not exported). The task may have stopped waiting
 * meanwhile; the wake-up is then spurious, which every sleep loop here
 * tolerates by re-checking its condition.
 */
static inline void tofutex_wake_task(struct task_struct *task)
{
	if (!task)
		return;
	wake_up_process(task);
	put_task_struct(task);
}

#endif /* _TOFUTEX_LOCK_H */
