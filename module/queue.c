// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - what the lock and release paths of TO locks (lock.c,
 * unlock.c) and reader/writer locks (rwlock.c, rwunlock.c) share: the
 * wait of a queued lock waiter until it may compete, the top waiter's
 * loop around its queue's own pass, and the retry loop of a release with
 * its rule for signals.
 *
 * Lifetimes and locking: nothing here outlives the call; the caller's
 * queue entry and the state it is queued on are the caller's (lock.h,
 * rwlock.h). The top-waiter test and the release pass are the caller's
 * and take state->lock themselves; neither is called with a lock held.
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>

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
static int tofutex_queue_wait_for_top(const struct tofutex_queue_wait *qw)
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

/**
 * tofutex_queue_compete() - the top waiter's loop
 * @qw:  the wait
 * @how: out: TOFUTEX_STATUS_* when the word is taken
 *
 * Every decision of a pass is re-checked by the cmpxchg that acts on it,
 * so the word is simply read again after each pass. Every read, and so
 * every fault-in of the word's page, ends at the deadline and on a
 * signal. Before another pass the caller looks for a signal and its
 * deadline and offers the CPU, so that a word that keeps changing cannot
 * keep it in the kernel.
 *
 * Return: 1 when the caller holds the word, else a negative error.
 */
static int tofutex_queue_compete(const struct tofutex_queue_wait *qw,
				 u32 *how)
{
	u32 word;
	int ret;

	for (;;) {
		ret = qw->given ? qw->given(qw->arg, how) : 0;
		if (ret)
			return ret;
		ret = tofutex_word_read_until(qw->uaddr, &word, qw->deadline);
		if (ret)
			return ret;
		ret = qw->compete(qw->arg, word, how);
		if (ret)
			return ret;
		ret = tofutex_deadline_interrupted(qw->deadline);
		if (ret)
			return ret;
		cond_resched();
	}
}

/**
 * tofutex_queue_wait_and_compete() - a queued lock call, from the queue
 * to the word
 * @qw:  the wait
 * @how: out: TOFUTEX_STATUS_* when the word is taken
 *
 * LOCK's, RDLOCK's and WRLOCK's path between queuing and leaving the
 * queue: wait until top waiter, then compete until the word is the
 * caller's or the call ends.
 *
 * Return: 1 when the caller holds the word, else a negative error
 * (-ERESTARTSYS, -ETIMEDOUT, or one of @qw->compete or of the fault-in).
 */
int tofutex_queue_wait_and_compete(const struct tofutex_queue_wait *qw,
				   u32 *how)
{
	int ret = tofutex_queue_wait_for_top(qw);

	return ret ? ret : tofutex_queue_compete(qw, how);
}

/*
 * Fault in the word of a release pass that found its page missing. The
 * pass did nothing, so the call can be done again from the start: after
 * a signal handler it is restarted (-ERESTARTNOINTR, also without
 * SA_RESTART), never ended with EINTR, which would tell the caller that
 * it still holds a lock it may no longer be able to release.
 */
static int tofutex_release_fault_in(u32 __user *uaddr)
{
	int ret = tofutex_word_fault_in(uaddr, true);

	if (!ret)
		return -EAGAIN;
	return ret == -ERESTARTSYS ? -ERESTARTNOINTR : ret;
}

/**
 * tofutex_release_run() - run a release until a pass acts or fails
 * @pass:  one attempt (UNLOCK's or RWUNLOCK's)
 * @arg:   its argument
 * @uaddr: the word, faulted in here when a pass found its page missing
 * @woken: out: 1 when a pass woke a waiter, else 0
 *
 * A pass that found the word changed under its cmpxchg, or its page
 * missing, did nothing and is done again. A word that keeps changing (a
 * buggy program) must not keep the caller in the kernel: every retry
 * offers to reschedule and looks for a signal, after which the call is
 * restarted (-ERESTARTNOINTR): a release is never given up half done. A
 * fatal signal ends the fault-in with -EINTR.
 *
 * Return: 0, -ERESTARTNOINTR, -EINTR, or the pass's or the fault-in's
 * error.
 */
int tofutex_release_run(tofutex_release_pass_t pass, void *arg,
			u32 __user *uaddr, u32 *woken)
{
	int ret;

	*woken = 0;
	for (;;) {
		ret = pass(arg, woken);
		if (ret == -EFAULT)
			ret = tofutex_release_fault_in(uaddr);
		if (ret != -EAGAIN)
			return ret;
		if (signal_pending(current))
			return -ERESTARTNOINTR;
		cond_resched();
	}
}
