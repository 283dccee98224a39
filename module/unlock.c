// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - throughput-optimised (TO) locks, the release side:
 * TOFUTEX_IOC_UNLOCK.
 *
 * User space releases the lock word (uapi/tofutex.h) with a cmpxchg and
 * calls in here only when it finds WAITERS set. UNLOCK releases the word,
 * or hands it to a starving top waiter, and wakes the top waiter; lock.c
 * describes the queue, the top waiter and when it asks for a hand-off.
 * A top waiter woken after a release is marked (waiter->woken), so that
 * if a thief takes the word before it, it knows it lost that round.
 *
 * Locking and lifetimes
 * ---------------------
 * The word is read and released under state->lock, so that the top waiter
 * found there is the one the release is for; the waiter is pinned there
 * and woken after the lock is dropped (lock.h). User words are touched
 * under state->lock only with page faults disabled; on a fault the lock is
 * dropped, the page faulted in (uaccess.c) and the pass done again.
 *
 * UNLOCK of a word that has no state releases it under the bucket lock
 * (tofutex_state_get_or()), so that a locker that creates the state
 * meanwhile either sees the released word or is found and woken.
 *
 * Retries and signals
 * -------------------
 * A pass whose cmpxchg found the word changed, or whose page was missing,
 * did nothing and is retried; RWUNLOCK's passes are run by the same loop
 * (tofutex_release_run(), queue.c), which offers to reschedule, and after
 * a signal, also one that interrupted the fault-in, restarts the call
 * (-ERESTARTNOINTR: an unlock is never given up half done).
 *
 * Moved WAIT waiters: every successful UNLOCK also wakes one WAIT waiter
 * that TOFUTEX_IOC_REQUEUE moved onto the lock (tofutex_requeue_release(),
 * requeue.c).
 */
#include <linux/err.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "lock.h"
#include "queue.h"
#include "tofutex.h"
#include "tofutex_trace.h"

/**
 * tofutex_release_word() - release or hand off the word under state->lock
 * @uaddr:   the lock word
 * @vpid:    the unlocking task's TID
 * @word:    the word as read under state->lock
 * @top:     the top waiter, or NULL
 * @handoff: the top waiter asked for a hand-off
 *
 * The word holds either the caller's TID (it releases) or no TID (user
 * space released it already, keeping WAITERS); any other TID means the
 * lock was stolen meanwhile, or was never the caller's, and it is left
 * alone. OWNER_DIED stays in the word, released or handed off: the data
 * the lock protects stays inconsistent until the user clears the bit
 * (tofutex(3)'s tofutex_mutex_consistent()), and the next owner must be
 * told, as a take of a free word that has it tells it.
 *
 * A word held by readers of a reader/writer lock is not a TO lock word at
 * all (tofutex_word_reader_held()): -EINVAL, as LOCK on it, rather than
 * 0 as for a TO lock stolen meanwhile.
 *
 * Return: 1 when the top waiter should be woken, 0 when there is nothing
 * to do, -EAGAIN when the word changed under the cmpxchg, -EINVAL,
 * -EFAULT.
 */
static int tofutex_release_word(u32 __user *uaddr, u32 vpid, u32 word,
				struct tofutex_waiter *top, bool handoff)
{
	u32 tid = tofutex_tid(word), newval, cur;

	if (tofutex_word_reader_held(word))
		return -EINVAL;
	if (tid != vpid && tid)
		return 0;
	if (top && handoff)
		newval = top->vpid;
	else if (tid || !top)
		newval = 0;
	else
		return 1;

	newval |= word & TOFUTEX_OWNER_DIED;
	if (word == newval)
		return 0;
	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word, newval))
		return -EFAULT;
	if (cur != word)
		return -EAGAIN;
	if (top && handoff) {
		/* Read unlocked by the waiter's tofutex_given(). */
		WRITE_ONCE(top->handed_off,
			   tofutex_taken_how(newval, TOFUTEX_STATUS_HANDOFF));
		trace_tofutex_handoff(uaddr, top->task);
	}
	return top ? 1 : 0;
}

/**
 * tofutex_unlock_queued() - UNLOCK when the word has a kernel state
 * @lk:    table, uaddr and the caller's TID (in @lk->waiter.vpid)
 * @woken: out: 1 when the top waiter was woken
 *
 * The top waiter's task is pinned under state->lock, where it cannot have
 * left the queue, and woken after the lock is dropped. The owner the
 * state remembers (owner.c) is forgotten: the word is no
 * longer its.
 *
 * Return: 0, -EAGAIN when the word changed under the cmpxchg, -EINVAL (a
 * reader-held word), or -EFAULT when the page must be faulted in.
 */
static int tofutex_unlock_queued(struct tofutex_locker *lk, u32 *woken)
{
	struct tofutex_state *state = lk->q.state;
	struct task_struct *wake = NULL;
	struct tofutex_waiter *top;
	struct pid *owner = NULL;
	u32 word;
	int ret;

	spin_lock(&state->lock);
	top = list_first_entry_or_null(&state->waiters, struct tofutex_waiter,
				       node);
	ret = tofutex_word_read_inatomic(lk->q.uaddr, &word);
	if (!ret)
		ret = tofutex_release_word(lk->q.uaddr, lk->waiter.vpid, word,
					   top, state->handoff);
	if (ret >= 0)
		owner = tofutex_owner_clear(state);
	if (ret > 0) {
		top->woken = true;
		wake = get_task_struct(top->task);
		*woken = 1;
		ret = 0;
	}
	spin_unlock(&state->lock);
	put_pid(owner);
	tofutex_wake_task(wake);
	return ret;
}

/**
 * tofutex_unlock_unqueued() - UNLOCK when the word has no kernel state
 * @arg: the UNLOCK call, a struct tofutex_locker (uaddr and the caller's
 *       TID)
 *
 * Called by tofutex_state_get_or() under the bucket lock, after its lookup
 * found no state: nobody sleeps on the word, so there is no one to wake,
 * only a word to release; its WAITERS bit is stale (its waiter timed out
 * or was signalled). A locker sleeps only after creating the word's state
 * under the same bucket lock and then setting WAITERS with a cmpxchg. So
 * either its state was created first, and the lookup found it, or this
 * release comes first, and the locker's cmpxchg sees the released word
 * instead of sleeping.
 *
 * Return: 0, -EAGAIN when the word changed under the cmpxchg, or -EFAULT
 * when the page must be faulted in.
 */
static int tofutex_unlock_unqueued(void *arg)
{
	struct tofutex_locker *lk = arg;
	u32 word;

	if (tofutex_word_read_inatomic(lk->q.uaddr, &word))
		return -EFAULT;
	tofutex_debug_window(TOFUTEX_WINDOW_UNLOCK_UNQUEUED, lk->q.uaddr, word);
	return tofutex_release_word(lk->q.uaddr, lk->waiter.vpid, word, NULL,
				    false);
}

/**
 * tofutex_lock_released() - what UNLOCK does after its release, for RWUNLOCK
 * @table: the caller's process table
 * @uaddr: the word, just released by RWUNLOCK (rwunlock.c)
 *
 * A reader/writer word that a writer holds looks like a TO lock word, so
 * a thread may LOCK it, or REQUEUE onto it (against the ABI), and sleep on
 * a TO lock state. The writer's RWUNLOCK releases the word, and the TO
 * lock state must see that release as UNLOCK's: its top waiter woken,
 * since one that does not look at the owner (TOFUTEX_LOCK_NO_OWNER_POLL)
 * would else sleep until its deadline; the owner it remembers forgotten
 * (owner.c: a remembered owner is one that holds the word, and a thread
 * given its TID later must not be taken for it); one moved waiter woken
 * (requeue.c). The waiter joined the queue before it set WAITERS and
 * slept, so either the release came first and its cmpxchg fails, or it
 * is found here.
 *
 * Return: 1 when a waiter was woken, else 0.
 */
u32 tofutex_lock_released(struct tofutex_table *table, u32 __user *uaddr)
{
	struct task_struct *wake = NULL;
	struct tofutex_state *state;
	struct tofutex_waiter *top;
	struct pid *owner = NULL;
	u32 woken = 0;

	state = tofutex_state_get(table, uaddr, TOFUTEX_STATE_LOCK, false);
	if (!IS_ERR_OR_NULL(state)) {
		spin_lock(&state->lock);
		top = list_first_entry_or_null(&state->waiters,
					       struct tofutex_waiter, node);
		if (top) {
			top->woken = true;
			wake = get_task_struct(top->task);
			woken = 1;
		}
		owner = tofutex_owner_clear(state);
		spin_unlock(&state->lock);
		put_pid(owner);
		tofutex_state_put(table, state);
		tofutex_wake_task(wake);
	}
	return woken | tofutex_requeue_release(table, uaddr);
}

/**
 * tofutex_unlock_pass() - look the word's state up and release the word
 * @arg:   the UNLOCK call: a struct tofutex_locker with table, uaddr and
 *         the caller's TID
 * @woken: out: 1 when the top waiter was woken
 *
 * Return: as a tofutex_release_pass_t: 0, -EAGAIN, -EFAULT, -EINVAL (a
 * wait word).
 */
static int tofutex_unlock_pass(void *arg, u32 *woken)
{
	struct tofutex_locker *lk = arg;
	int ret;

	lk->q.state = tofutex_state_get_or(lk->q.table, lk->q.uaddr,
					 TOFUTEX_STATE_LOCK,
					 tofutex_unlock_unqueued, lk);
	if (IS_ERR_OR_NULL(lk->q.state))
		return PTR_ERR_OR_ZERO(lk->q.state);
	ret = tofutex_unlock_queued(lk, woken);
	tofutex_state_put(lk->q.table, lk->q.state);
	return ret;
}

/**
 * tofutex_unlock() - release a TO lock and wake its top waiter
 * @table: the caller's process table
 * @uaddr: the lock word, checked by tofutex_word_check()
 * @woken: out: 1 when a waiter was woken or handed the lock
 *
 * The passes, their retries and the restart after a signal are
 * tofutex_release_run()'s (queue.c).
 *
 * Return: 0, -EFAULT, -EINVAL when the word is in use as a wait word or
 * held by readers of a reader/writer lock, -EINTR, -ERESTARTNOINTR.
 */
static int tofutex_unlock(struct tofutex_table *table, u32 __user *uaddr,
			  u32 *woken)
{
	struct tofutex_locker lk = {
		.q.table = table,
		.q.uaddr = uaddr,
		.waiter.vpid = task_pid_vnr(current),
	};
	int ret;

	ret = tofutex_release_run(tofutex_unlock_pass, &lk, uaddr, NULL, woken);
	if (!ret)
		*woken |= tofutex_requeue_release(table, uaddr);
	return ret;
}

/**
 * tofutex_ioc_unlock() - TOFUTEX_IOC_UNLOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_unlock
 *
 * The argument, and a write-back of @woken that never fails a release
 * that acted, as lockarg.c says.
 *
 * Return: 0 or a negative error, see tofutex_unlock().
 */
long tofutex_ioc_unlock(struct tofutex_table *table,
			struct tofutex_unlock __user *argp)
{
	return tofutex_unlock_call(table, argp, tofutex_unlock,
				   TOFUTEX_OP_UNLOCK);
}
