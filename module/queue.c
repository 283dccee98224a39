// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - what the lock and release paths of TO locks (lock.c,
 * unlock.c) and reader/writer locks (rwlock.c, rwunlock.c) share: the
 * slow path of a lock call (its state, joining and leaving the queue,
 * the wait of a queued waiter until it may compete, the top waiter's loop
 * around its queue's own pass, forgetting the remembered owner), and the
 * retry loop of a release with its rule for signals.
 *
 * Lifetimes and locking: nothing here outlives the call; the caller's
 * queue entry and the state it is queued on are the caller's (lock.h,
 * rwlock.h), the state's use taken and dropped here. The join and leave
 * callbacks run under state->lock, taken here (no other lock is taken
 * under it); the top-waiter test, the competing pass and the release pass
 * take state->lock themselves and are called with no lock held.
 */
#include <linux/errno.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>

#include "lock.h"
#include "queue.h"
#include "tofutex.h"

/**
 * tofutex_queue_wait_for_top() - sleep until the caller may compete
 * @ops: the queue's callbacks
 * @qc:  the call
 * @arg: the call's own structure
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
static int tofutex_queue_wait_for_top(const struct tofutex_queue_ops *ops,
				      struct tofutex_queue_call *qc,
				      void *arg)
{
	int ret;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (ops->is_top(arg))
			break;
		ret = tofutex_deadline_interrupted(&qc->deadline);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			return ret;
		}
		tofutex_count(qc->table, TOFUTEX_CNT_SLEEPS);
		qc->sleeps++;
		tofutex_schedule_until(&qc->deadline);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/**
 * tofutex_queue_compete() - the top waiter's loop
 * @ops: the queue's callbacks
 * @qc:  the call
 * @arg: the call's own structure
 * @how: out: TOFUTEX_STATUS_* when the word is taken
 *
 * Every decision of a pass is re-checked by the cmpxchg that acts on it,
 * so the word is simply read again after each pass. Every read, and so
 * every fault-in of the word's page, ends at the deadline and on a
 * signal. Before another pass the caller looks for a signal and its
 * deadline and offers the CPU, so that a word that keeps changing cannot
 * keep it in the kernel.
 *
 * Return: 1 when the caller holds the word, TOFUTEX_QUEUE_NOT_TOP, else a
 * negative error.
 */
static int tofutex_queue_compete(const struct tofutex_queue_ops *ops,
				 struct tofutex_queue_call *qc, void *arg,
				 u32 *how)
{
	u32 word;
	int ret;

	for (;;) {
		ret = ops->given ? ops->given(arg, how) : 0;
		if (ret) {
			tofutex_debug_window_now(TOFUTEX_WINDOW_GIVEN,
						 qc->uaddr);
			return ret;
		}
		ret = tofutex_word_read_until(qc->uaddr, &word, &qc->deadline);
		if (ret)
			return ret;
		ret = ops->compete(arg, word, how);
		if (ret)
			return ret;
		ret = tofutex_deadline_interrupted(&qc->deadline);
		if (ret)
			return ret;
		cond_resched();
	}
}

/**
 * tofutex_queue_lock() - the slow path of LOCK, RDLOCK and WRLOCK
 * @ops: the queue's callbacks
 * @qc:  the call, with @table, @uaddr and @deadline set; @state is set
 *       here, and its use dropped before the return
 * @arg: the call's own structure, which @qc heads, for the callbacks
 * @how: out: TOFUTEX_STATUS_* when the word is taken
 *
 * Find or create the word's state, join its queue, wait until top
 * waiter, compete until the word is the caller's or the call ends, and
 * leave the queue; the lock given to the caller (a hand-off or grant)
 * is never lost, however the call ended. The owner the state remembers
 * (owner.c) is forgotten in the same hold of state->lock as a leave that
 * holds the word: the word changed hands in the kernel. The waiter that the leave made top
 * is woken after state->lock is dropped; it cannot be lost, as
 * tofutex_queue_wait_for_top() explains.
 *
 * Return: 0 when the caller holds the word, else a negative error
 * (-ENOMEM, -EINVAL for a state of another kind, -ERESTARTSYS,
 * -ETIMEDOUT, or one of @ops->compete or of the fault-in).
 */
int tofutex_queue_lock(const struct tofutex_queue_ops *ops,
		       struct tofutex_queue_call *qc, void *arg, u32 *how)
{
	struct task_struct *wake = NULL;
	struct tofutex_state *state;
	struct pid *old = NULL;
	int ret;

	state = tofutex_state_get(qc->table, qc->uaddr, ops->kind, true);
	if (IS_ERR(state))
		return PTR_ERR(state);
	qc->state = state;
	qc->since = tofutex_trace_contended(qc->uaddr, qc->op);
	spin_lock(&state->lock);
	ops->join(arg);
	spin_unlock(&state->lock);

	/*
	 * A waiter that joins ahead of the caller makes it wait again; each
	 * wait ends on a signal and at the deadline.
	 */
	do {
		ret = tofutex_queue_wait_for_top(ops, qc, arg);
		if (!ret)
			ret = tofutex_queue_compete(ops, qc, arg, how);
	} while (ret == TOFUTEX_QUEUE_NOT_TOP);

	spin_lock(&state->lock);
	/* A hand-off or grant that raced with the end of the call holds. */
	if (ret < 0 && ops->given && ops->given(arg, how))
		ret = 1;
	ops->leave(arg, ret, &wake);
	if (ret > 0)
		old = tofutex_owner_clear(state);
	spin_unlock(&state->lock);
	put_pid(old);
	tofutex_wake_task(wake);
	if (ret > 0 && ops->taken)
		ops->taken(arg);
	else if (ret < 0 && ops->gave_up)
		ops->gave_up(arg, ret);
	tofutex_state_put(qc->table, state);
	return ret < 0 ? ret : 0;
}

/*
 * Fault in the word of a release pass that found its page missing. The
 * pass did nothing, so the call can be done again from the start: after
 * a signal handler it is restarted (-ERESTARTNOINTR, also without
 * SA_RESTART), never ended with EINTR, which would tell the caller that
 * it still holds a lock it may no longer be able to release. A fault-in
 * that must wait for its page ends at @budget, when there is one.
 */
static int tofutex_release_fault_in(u32 __user *uaddr,
				    const struct tofutex_deadline *budget)
{
	int ret = tofutex_word_fault_in_until(uaddr, true, budget);

	if (!ret)
		return -EAGAIN;
	return ret == -ERESTARTSYS ? -ERESTARTNOINTR : ret;
}

/**
 * tofutex_release_run() - run a release until a pass acts or fails
 * @pass:   one attempt (UNLOCK's or RWUNLOCK's, or a withdrawal's)
 * @arg:    its argument
 * @uaddr:  the word, faulted in here when a pass found its page missing
 * @budget: NULL for a release; for a withdrawal (rwlock.c), which may be
 *          given up and left to the slow path, when it is given up
 * @woken:  out: 1 when a pass woke a waiter, else 0
 *
 * A pass that found the word changed under its cmpxchg, or its page
 * missing, did nothing and is done again. A word that keeps changing (a
 * buggy program) must not keep the caller in the kernel: every retry
 * offers to reschedule and looks for a signal, after which the call is
 * restarted (-ERESTARTNOINTR): a release is never given up half done. A
 * fatal signal ends the fault-in with -EINTR. A withdrawal ends instead
 * at @budget, also in a fault-in that must wait for its page
 * (-ETIMEDOUT): it is done for a caller that is leaving, whose signal
 * must not end it at the first retry, and whose deadline may have passed.
 *
 * Return: 0, -ERESTARTNOINTR, -EINTR, -ETIMEDOUT, or the pass's or the
 * fault-in's error.
 */
int tofutex_release_run(tofutex_release_pass_t pass, void *arg,
			u32 __user *uaddr,
			const struct tofutex_deadline *budget, u32 *woken)
{
	int ret;

	*woken = 0;
	for (;;) {
		ret = pass(arg, woken);
		if (ret == -EFAULT)
			ret = tofutex_release_fault_in(uaddr, budget);
		if (ret != -EAGAIN)
			return ret;
		if (budget && tofutex_deadline_passed(budget))
			return -ETIMEDOUT;
		if (!budget && signal_pending(current))
			return -ERESTARTNOINTR;
		cond_resched();
	}
}
