// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - throughput-optimised reader/writer locks, the release side:
 * TOFUTEX_IOC_RWUNLOCK, and the grant of the word to queued readers that
 * both it and a reader top waiter (rwlock.c) use. rwlock.c describes the
 * queue and the top waiter; rwlock.h the locking rules.
 *
 * RWUNLOCK releases the caller's write lock or one read lock. When that
 * frees the word and waiters are queued, it gives the word to the writer
 * top waiter if that starves (rwlock.c, "Writers do not starve"), or to
 * every queued reader if the top waiter is a reader, or else releases it
 * and wakes the writer top waiter, which then takes the word unless a
 * thief was faster: throughput first, as for TO locks. A word with no
 * state is released under the bucket lock (tofutex_state_get_or()), as
 * unlock.c explains. A word whose state is of another kind (a program
 * that also used it with LOCK, WAIT or as REQUEUE's lock word) has no
 * reader or writer queued either - an RWLOCK state cannot be made beside
 * it - and is released the same way, without the bucket lock: the
 * release is a cmpxchg from the value read, so a waiter that changes the
 * word first makes it look again. Refusing it would leave the caller's
 * lock held for ever, and the other kind's waiters waiting for it; a TO
 * lock state sees the release as UNLOCK's: its top waiter and one moved
 * waiter woken, the owner it remembers forgotten
 * (tofutex_lock_released()).
 *
 * Locking: the word is read and released under state->lock, so that the
 * waiters found there are the ones the release is for; user words are
 * touched there only with page faults disabled, and on a fault the lock
 * is dropped, the page faulted in (uaccess.c) and the pass done again.
 *
 * Retries and signals: a pass whose cmpxchg found the word changed, or
 * whose page was missing, did nothing and is retried by UNLOCK's loop
 * (tofutex_release_run(), queue.c), offering the CPU each time; after a
 * signal, also one that interrupted the fault-in, the call restarts
 * (-ERESTARTNOINTR: an unlock is never given up half done).
 * Granted readers are woken in batches of TOFUTEX_RW_WAKE_BATCH, with a
 * scheduling point between batches.
 */
#include <linux/err.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "lock.h"
#include "queue.h"
#include "rwlock.h"
#include "tofutex.h"
#include "tofutex_trace.h"

/* Granted readers woken per hold of state->lock, as WAKE's batches. */
#define TOFUTEX_RW_WAKE_BATCH	8

/**
 * tofutex_rw_first() - the top waiter: the first not yet given the lock
 * @state: the word's state, with state->lock held
 *
 * Return: the waiter, or NULL when every queued waiter holds the word.
 */
struct tofutex_rw_waiter *tofutex_rw_first(struct tofutex_state *state)
{
	struct tofutex_rw_waiter *w;

	lockdep_assert_held(&state->lock);
	list_for_each_entry(w, &state->waiters, node)
		if (!w->granted)
			return w;
	return NULL;
}

/* The first writer not yet given the lock, or NULL. */
struct tofutex_rw_waiter *tofutex_rw_first_writer(struct tofutex_state *state)
{
	struct tofutex_rw_waiter *w;

	list_for_each_entry(w, &state->waiters, node)
		if (w->write && !w->granted)
			return w;
	return NULL;
}

/**
 * tofutex_rw_grant_readers() - give the word to every queued reader
 * @state: the word's state, with state->lock held
 * @uaddr: the word
 * @word:  the word as read under state->lock
 * @held:  readers that keep holding it: the count of @word, or 0 when the
 *         caller's RWUNLOCK is freeing it
 * @top:   out: the writer that becomes top waiter, with a reference held
 *         for the caller to wake (tofutex_wake_task()), or NULL
 *
 * One cmpxchg adds every reader that is queued and not yet given the lock
 * to the count, those behind a writer too: queued readers enter together.
 * The first writer left in the queue becomes top waiter. If it starves
 * already, only the readers ahead of it are given the word (those behind
 * it wait for it, so that it waits only for the readers it found: the
 * bound of rwlock.c, "Writers do not starve"), and the new word has
 * RW_HANDOFF and WAITERS: readers that arrive now queue behind it, and
 * the last reader out hands it the word. Else both bits go (a stale
 * RW_HANDOFF of a writer that gave up, WAITERS that only a top waiter
 * relies on, or one that a withdrawal gave up on or user space wrote:
 * with no starving writer queued, nobody owns it): the writer sets them
 * itself as top waiter. The readers given the word go on state->to_wake,
 * in queue order; the caller wakes them with tofutex_rw_wake_granted()
 * after dropping state->lock.
 *
 * Return: 1 when given, TOFUTEX_RW_CHANGED, -EOVERFLOW when the count
 * would overflow (not -EAGAIN, which a release's retry loop would take for
 * a changed word), -EFAULT.
 */
int tofutex_rw_grant_readers(struct tofutex_state *state, u32 __user *uaddr,
			     u32 word, u32 held, struct task_struct **top)
{
	struct tofutex_rw_waiter *w, *writer, *stop = NULL;
	u32 n = 0, newval, cur;

	lockdep_assert_held(&state->lock);
	*top = NULL;
	writer = tofutex_rw_first_writer(state);
	newval = TOFUTEX_RW_SHARED;
	if (writer && tofutex_rw_waited(writer, ktime_get_ns())) {
		newval |= TOFUTEX_RW_HANDOFF | TOFUTEX_WAITERS;
		stop = writer;
	}
	list_for_each_entry(w, &state->waiters, node) {
		if (w == stop)
			break;
		if (!w->write && !w->granted)
			n++;
	}
	if (n > TOFUTEX_RW_COUNT_MASK - held)
		return -EOVERFLOW;
	newval |= held + n;
	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word, newval))
		return -EFAULT;
	if (cur != word)
		return TOFUTEX_RW_CHANGED;
	list_for_each_entry(w, &state->waiters, node) {
		if (w == stop)
			break;
		if (w->write || w->granted)
			continue;
		/* After the cmpxchg: tofutex_rw_granted() reads it unlocked. */
		smp_store_release(&w->granted, true);
		list_add_tail(&w->wake_node, &state->to_wake);
	}
	trace_tofutex_rw_grant(uaddr, n, held, NULL);
	if (writer)
		*top = get_task_struct(writer->task);
	return 1;
}

/**
 * tofutex_rw_wake_granted() - wake the readers given the lock
 * @state: the word's state, with a use held and state->lock not held
 *
 * Takes at most a batch of waiters per hold of state->lock off the head
 * of state->to_wake and wakes them after dropping it, with a scheduling
 * point between batches: each granted waiter is on that list once, and
 * is taken off by whichever waker comes first (or by itself, leaving), so
 * the work is linear in the readers given the word. A granted waiter
 * holds the lock and must be woken whatever happens to the caller, so a
 * fatal signal does not end the loop; it ends when the list is empty,
 * which bounds it by the waiting threads of the caller's own process.
 */
void tofutex_rw_wake_granted(struct tofutex_state *state)
{
	struct task_struct *tasks[TOFUTEX_RW_WAKE_BATCH];
	struct tofutex_rw_waiter *w;
	unsigned int n, i;

	do {
		n = 0;
		spin_lock(&state->lock);
		while (n < TOFUTEX_RW_WAKE_BATCH &&
		       !list_empty(&state->to_wake)) {
			w = list_first_entry(&state->to_wake,
					     struct tofutex_rw_waiter,
					     wake_node);
			list_del_init(&w->wake_node);
			if (w->task != current)
				tasks[n++] = get_task_struct(w->task);
		}
		spin_unlock(&state->lock);
		for (i = 0; i < n; i++)
			tofutex_wake_task(tasks[i]);
		if (n == TOFUTEX_RW_WAKE_BATCH)
			cond_resched();
	} while (n == TOFUTEX_RW_WAKE_BATCH);
}

/**
 * struct tofutex_rw_unlocker - one RWUNLOCK call, on the caller's stack
 * @table: the caller's process table
 * @uaddr: the word
 * @vpid:  the caller's TID
 * @wake:  a writer to wake after dropping state->lock, or the writer
 *         that readers given the word leave top waiter; reference held
 * @wake_top: after a hand-off to a writer, the waiter it leaves top
 */
struct tofutex_rw_unlocker {
	struct tofutex_table *table;
	u32 __user *uaddr;
	u32 vpid;
	struct task_struct *wake;
	struct task_struct *wake_top;
};

/**
 * tofutex_rw_release() - the word after the caller's release
 * @word:  the word as read
 * @vpid:  the caller's TID
 * @freed: out: no writer or reader holds it any more
 *
 * Return: the new word (WAITERS kept while a reader still holds it),
 * -EPERM when the caller holds neither the write lock nor, as far as a
 * count can tell, a read lock, -EINVAL for bit 30.
 */
static s64 tofutex_rw_release(u32 word, u32 vpid, bool *freed)
{
	u32 readers = tofutex_rw_readers(word);

	if (word & TOFUTEX_RW_RESERVED)
		return -EINVAL;
	*freed = true;
	if (readers > 1) {
		*freed = false;
		return word - 1;
	}
	if (readers == 1 || (tofutex_rw_tid(word) == vpid && vpid))
		return 0;
	return -EPERM;
}

/**
 * tofutex_rw_unlock_unqueued() - RWUNLOCK when the word has no state
 * @arg: the struct tofutex_rw_unlocker
 *
 * Under the bucket lock, as unlock.c's tofutex_unlock_unqueued(): nobody
 * waits, so the release is all. RW_HANDOFF there is stale, since only a
 * starving writer that is queued owns it: the release that frees the
 * word clears it.
 *
 * Return: 0, -EAGAIN when the word changed, -EPERM, -EINVAL, -EFAULT.
 */
static int tofutex_rw_unlock_unqueued(void *arg)
{
	struct tofutex_rw_unlocker *u = arg;
	u32 word, cur;
	bool freed;
	s64 newval;

	if (tofutex_word_read_inatomic(u->uaddr, &word))
		return -EFAULT;
	newval = tofutex_rw_release(word, u->vpid, &freed);
	if (newval < 0)
		return newval;
	if (tofutex_word_cmpxchg_inatomic(u->uaddr, &cur, word, newval))
		return -EFAULT;
	return cur == word ? 0 : -EAGAIN;
}

/**
 * tofutex_rw_handoff() - the word a freeing RWUNLOCK hands to a writer
 * @state: the word's state, with state->lock held
 * @top:   the top waiter, a writer that starves
 *
 * WAITERS stays when others wait behind it, so that its unlock comes here
 * and gives the word on at once rather than freeing it for whoever is
 * fastest while the next top waiter is still being woken.
 *
 * Return: the new word.
 */
static u32 tofutex_rw_handoff(struct tofutex_state *state,
			      struct tofutex_rw_waiter *top)
{
	struct tofutex_rw_waiter *w = top;

	list_for_each_entry_continue(w, &state->waiters, node)
		if (!w->granted)
			return top->vpid | TOFUTEX_WAITERS;
	return top->vpid;
}

/**
 * tofutex_rw_unlock_queued() - RWUNLOCK when the word has a state
 * @u:     the call
 * @state: the word's state, with a use held
 *
 * Under state->lock: release, and when that frees the word, give it to
 * the waiters or wake the top waiter (see the file's head). A writer top
 * waiter starves by its own clock here, whether or not it has run since
 * it began to starve.
 *
 * Return: 1 when readers were given the word (the caller wakes them), 0,
 * -EAGAIN when the word changed, -EPERM, -EINVAL, -EFAULT.
 */
static int tofutex_rw_unlock_queued(struct tofutex_rw_unlocker *u,
				    struct tofutex_state *state)
{
	struct tofutex_rw_waiter *top, *next;
	bool handoff, freed;
	u32 word, cur;
	s64 newval;
	int ret;

	lockdep_assert_held(&state->lock);
	if (tofutex_word_read_inatomic(u->uaddr, &word))
		return -EFAULT;
	/* A dead writer's lock is not the thread's given its TID. */
	if (tofutex_owner_reused(state, word))
		return -EPERM;
	newval = tofutex_rw_release(word, u->vpid, &freed);
	if (newval < 0)
		return newval;
	top = freed ? tofutex_rw_first(state) : NULL;
	if (top && !top->write) {
		ret = tofutex_rw_grant_readers(state, u->uaddr, word, 0,
					       &u->wake);
		return ret == TOFUTEX_RW_CHANGED ? -EAGAIN : ret;
	}
	handoff = top && top->write && tofutex_rw_waited(top, ktime_get_ns());
	if (handoff)
		newval = tofutex_rw_handoff(state, top);
	if (tofutex_word_cmpxchg_inatomic(u->uaddr, &cur, word, newval))
		return -EFAULT;
	if (cur != word)
		return -EAGAIN;
	if (!top)
		return 0;
	u->wake = get_task_struct(top->task);
	if (handoff) {
		/* After the cmpxchg, as tofutex_rw_grant_readers(). */
		smp_store_release(&top->granted, true);
		trace_tofutex_rw_grant(u->uaddr, 0, 0, top->task);
		/* The next waiter is top now. */
		next = tofutex_rw_first(state);
		if (next)
			u->wake_top = get_task_struct(next->task);
	}
	return 0;
}

/**
 * tofutex_rw_unlock_pass() - look the state up and release the word once
 * @arg:   the call, a struct tofutex_rw_unlocker
 * @woken: out: 1 when a waiter was woken
 *
 * Return: as a tofutex_release_pass_t: 0, -EAGAIN, -EFAULT, -EPERM,
 * -EINVAL (bit 30), -EOVERFLOW.
 */
static int tofutex_rw_unlock_pass(void *arg, u32 *woken)
{
	struct tofutex_rw_unlocker *u = arg;
	struct tofutex_state *state;
	struct pid *old = NULL;
	int ret;

	state = tofutex_state_get_or(u->table, u->uaddr, TOFUTEX_STATE_RWLOCK,
				     tofutex_rw_unlock_unqueued, u);
	/* A state of another kind: no reader or writer waits (file head). */
	if (state == ERR_PTR(-EINVAL)) {
		ret = tofutex_rw_unlock_unqueued(u);
		if (!ret)
			*woken = tofutex_lock_released(u->table, u->uaddr);
		return ret;
	}
	if (IS_ERR_OR_NULL(state))
		return PTR_ERR_OR_ZERO(state);
	spin_lock(&state->lock);
	ret = tofutex_rw_unlock_queued(u, state);
	/* Released: the writer the state remembers has it no more. */
	if (ret >= 0)
		old = tofutex_owner_clear(state);
	spin_unlock(&state->lock);
	put_pid(old);
	if (ret == 1)
		tofutex_rw_wake_granted(state);
	if (ret == 1 || u->wake)
		*woken = 1;
	tofutex_wake_task(u->wake);
	tofutex_wake_task(u->wake_top);
	u->wake = NULL;
	u->wake_top = NULL;
	tofutex_state_put(u->table, state);
	return ret == 1 ? 0 : ret;
}

/**
 * tofutex_rw_unlock() - release the caller's write lock or one read lock
 * @table: the caller's process table
 * @uaddr: the word, checked by tofutex_word_check()
 * @woken: out: 1 when a waiter was woken or given the word
 *
 * The passes, their retries and the restart after a signal are
 * tofutex_release_run()'s (queue.c), as for UNLOCK.
 *
 * Return: 0, -EPERM, -EINVAL, -EFAULT, -EINTR, -ERESTARTNOINTR.
 */
static int tofutex_rw_unlock(struct tofutex_table *table, u32 __user *uaddr,
			     u32 *woken)
{
	struct tofutex_rw_unlocker u = {
		.table = table,
		.uaddr = uaddr,
		.vpid = task_pid_vnr(current),
	};

	return tofutex_release_run(tofutex_rw_unlock_pass, &u, uaddr, NULL,
				   woken);
}

/**
 * tofutex_ioc_rwunlock() - TOFUTEX_IOC_RWUNLOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_unlock
 *
 * The argument, and a write-back of @woken that never fails a release
 * that acted, as lockarg.c says.
 *
 * Return: 0 or a negative error, see tofutex_rw_unlock().
 */
long tofutex_ioc_rwunlock(struct tofutex_table *table,
			  struct tofutex_unlock __user *argp)
{
	return tofutex_unlock_call(table, argp, tofutex_rw_unlock,
				   TOFUTEX_OP_RWUNLOCK);
}
