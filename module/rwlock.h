/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - the reader/writer lock's queue, word and call, shared by
 * rwlock.c (TOFUTEX_IOC_RDLOCK, WRLOCK), rwwithdraw.c (a call that leaves
 * without the word) and rwunlock.c (TOFUTEX_IOC_RWUNLOCK); no other file
 * uses it.
 *
 * Locking and lifetimes: state->lock protects state->waiters,
 * state->to_wake and every waiter's @granted and @wake_node. A waiter is on the list only while
 * its task is inside RDLOCK or WRLOCK holding a use of the state, so
 * whoever finds it there under state->lock may take a reference on its
 * task and wake it after dropping the lock (lock.h's tofutex_wake_task()).
 * @granted only ever goes from false to true, under state->lock, after
 * the cmpxchg that gave the waiter the word; the waiter reads it with an
 * acquire. The word is touched under state->lock only with page faults
 * disabled.
 *
 * The top waiter is the first waiter not yet given the lock
 * (tofutex_rw_first()): granted readers may still be on the list, leaving,
 * while the writer behind them competes already. Whoever makes a waiter
 * top wakes it: the top waiter that leaves wakes the next, and a grant
 * wakes the waiter it leaves first.
 */
#ifndef _TOFUTEX_RWLOCK_H
#define _TOFUTEX_RWLOCK_H

#include <linux/list.h>
#include <linux/sched.h>
#include <linux/types.h>

#include "queue.h"
#include "tofutex.h"

/* A cmpxchg found the word changed: look again. */
#define TOFUTEX_RW_CHANGED	2

/**
 * struct tofutex_rw_waiter - a task inside RDLOCK or WRLOCK
 * @node:       entry in state->waiters
 * @task:       the waiting task
 * @vpid:       its TID, as written into the word for a writer
 * @write:      it wants the word for writing
 * @wake_node:  entry in state->to_wake from the grant until a waker takes
 *              it (or the waiter leaves first); empty otherwise
 * @granted:    the lock was given to it: it holds the word now
 * @reserve:    a writer that starves as soon as it queues
 *              (TOFUTEX_LOCK_RW_RESERVE)
 * @since:      when it queued (ns, monotonic)
 */
struct tofutex_rw_waiter {
	struct list_head node;
	struct list_head wake_node;
	struct task_struct *task;
	u32 vpid;
	bool write;
	bool granted;
	bool reserve;
	u64 since;
};

/* The writer's TID, 0 when the word is free or reader-owned. */
static inline u32 tofutex_rw_tid(u32 word)
{
	return (word & TOFUTEX_RW_SHARED) ? 0 : word & TOFUTEX_RW_COUNT_MASK;
}

/*
 * A word no lock call takes: bit 30 set, or RW_HANDOFF beside a writer's
 * TID, which the kernel never writes (a writer takes the word without
 * it) and which would make the TID read as a TO lock's (owner.c) name no
 * thread, and a live writer look dead.
 */
static inline bool tofutex_rw_malformed(u32 word)
{
	return (word & TOFUTEX_RW_RESERVED) ||
	       ((word & TOFUTEX_RW_HANDOFF) && tofutex_rw_tid(word));
}

/* The reader count, 0 when the word is free or writer-owned. */
static inline u32 tofutex_rw_readers(u32 word)
{
	return (word & TOFUTEX_RW_SHARED) ? word & TOFUTEX_RW_COUNT_MASK : 0;
}

/* Neither a writer nor a reader holds it. */
static inline bool tofutex_rw_free(u32 word)
{
	return !(word & TOFUTEX_RW_COUNT_MASK);
}

/**
 * tofutex_rw_starve_at() - when @w starves (ns, monotonic)
 * @w: a queued waiter
 *
 * A writer that starves has the word handed to it when the readers drain,
 * and new readers queue behind it. Its clock runs from the time it queued,
 * also while other waiters are ahead of it: it starves handoff_ns later,
 * or at once when it reserves the lock (TOFUTEX_LOCK_RW_RESERVE).
 *
 * Return: the time.
 */
static inline u64 tofutex_rw_starve_at(const struct tofutex_rw_waiter *w)
{
	return w->reserve ? w->since : w->since + tofutex_handoff_ns();
}

/**
 * tofutex_rw_waited() - does @w starve (tofutex_rw_starve_at())?
 * @w:   a queued waiter
 * @now: ktime_get_ns()
 *
 * Return: true when it does.
 */
static inline bool tofutex_rw_waited(const struct tofutex_rw_waiter *w,
				     u64 now)
{
	return now >= tofutex_rw_starve_at(w);
}

/*
 * A writer that could not put its bits into a reader-owned word within
 * its spin budget (readers moving the count under every cmpxchg) sleeps
 * this long, unwoken, and tries again with a new budget: the CPU it
 * burns is bounded by the budget per sleep, and it loses at most this
 * much against readers that would let it in earlier.
 */
#define TOFUTEX_RW_RETRY_NS	NSEC_PER_MSEC

/**
 * struct tofutex_rw_call - one RDLOCK or WRLOCK call, on the caller's stack
 * @q:          the table, state, word, deadline and sleep count (queue.h)
 * @waiter:     the caller's queue entry
 * @spin_end:   when the caller's spin on readers, and its retries to put
 *              RW_HANDOFF into their word, must end (ns, monotonic), set
 *              by the first of them after a sleep; 0: not set
 * @owner:      the caller left as the starving top writer: the RW_HANDOFF
 *              in the word is its own (set by its leave)
 */
struct tofutex_rw_call {
	struct tofutex_queue_call q;
	struct tofutex_rw_waiter waiter;
	u64 spin_end;
	bool owner;
};

struct tofutex_rw_waiter *tofutex_rw_first(struct tofutex_state *state);
struct tofutex_rw_waiter *tofutex_rw_first_writer(struct tofutex_state *state);
int tofutex_rw_grant_readers(struct tofutex_state *state, u32 __user *uaddr,
			     u32 word, u32 held, struct task_struct **top);
void tofutex_rw_wake_granted(struct tofutex_state *state);
void tofutex_rw_withdraw(void *arg, int err);

#endif /* _TOFUTEX_RWLOCK_H */
