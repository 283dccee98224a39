// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - wait words: TOFUTEX_IOC_WAIT, TOFUTEX_IOC_WAKE and
 * TOFUTEX_IOC_SWAP.
 *
 * WAIT sleeps while a user word holds an expected value, WAKE wakes up to
 * a count of the word's sleepers, in arrival order, and SWAP wakes one
 * sleeper of one word and then waits on another, handing its CPU to the
 * wakee (wake_local.c). These are futex wait and wake, with the word's
 * kernel state in the caller's process table (table.c) instead of the
 * global futex hash.
 *
 * Objects, lifetimes and locks
 * ----------------------------
 * struct tofutex_word_waiter is on the waiting task's stack. It is on
 * state->waiters from the value check until it is taken off, under
 * state->lock, by exactly one of:
 *   - a waker, which then sets @woken with release semantics and from then
 *     on touches only the task, through a reference of its own; or
 *   - the waiter itself, leaving on a signal or its deadline, when it finds
 *     @woken clear under state->lock.
 * So a waiter that reads @woken set (acquire) owns its entry again and may
 * return; one that leaves otherwise checks @woken under the lock, and a
 * wake-up that raced with a signal or the deadline counts as a wake-up: it
 * is never lost.
 *
 * The state is held (a use, see table.c) by every task inside an ioctl on
 * its word, so a queued waiter keeps its state alive, and a WAKE that
 * finds no state knows that nobody waits.
 *
 * TOFUTEX_IOC_REQUEUE may move a waiter from its word's list onto a TO
 * lock's state (requeue.c): @state in the waiter says which list holds it,
 * and tofutex_requeue_leave() takes it off whichever that is. A moved
 * waiter sleeps in tofutex_requeue_sleep(), which polls the lock's owner;
 * so a SWAP moved before its first sleep wakes its wakee at once instead
 * of handing it the CPU in a sleep that would not poll.
 *
 * Tasks are woken with no lock held, as futex's wake_q does: a wakee
 * that runs at once must not find the lock still held by its waker (in an
 * emulated guest whose vCPU thread the host preempts, it would spin for a
 * host time slice). WAKE takes waiters off the queue in batches of
 * TOFUTEX_WAKE_BATCH, each under state->lock, and wakes each batch after
 * dropping it. SWAP takes its wakee off the queue first and wakes it only
 * after queueing itself, as FUTEX_SWAP did. No two state locks are
 * held at once here (REQUEUE nests two, requeue.c).
 *
 * Words are read only with page faults disabled under state->lock, and
 * faulted in with no lock held (uaccess.c).
 *
 * Signals: a signal ends a sleep with -ERESTARTSYS, so WAIT restarts under
 * SA_RESTART; the deadline is absolute and a restart does not extend it.
 * SWAP restarts only when it woke nobody: restarting it after its wake
 * half would wake a second waiter, so then it returns -EINTR.
 */
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "tofutex.h"
#include "tofutex_trace.h"

/*
 * Waiters WAKE takes off the queue per hold of state->lock: the task
 * pointers wait on the stack until the lock is dropped. One batch covers
 * the common counts (1, and "all" of a few threads) in one lock hold.
 */
#define TOFUTEX_WAKE_BATCH	8

/**
 * struct tofutex_wait_call - one WAIT, or the wait half of a SWAP
 * @table:    the caller's process table
 * @state:    the word's state, with a use held
 * @uaddr:    the wait word
 * @val:      sleep only while the word holds this
 * @deadline: when the call gives up
 * @wakee:    SWAP's wakee (a reference held), not yet woken; else NULL
 * @waiter:   the caller's queue entry
 */
struct tofutex_wait_call {
	struct tofutex_table *table;
	struct tofutex_state *state;
	u32 __user *uaddr;
	u32 val;
	struct tofutex_deadline deadline;
	struct task_struct *wakee;
	struct tofutex_word_waiter waiter;
};

/**
 * tofutex_waiter_take() - take a waiter off its queue to wake it
 * @w: the first entry of state->waiters (or state->requeued), under
 *     state->lock
 *
 * From the store to @w->woken on, @w may vanish: its task may see the
 * flag and return.
 *
 * Return: the waiter's task, with a reference for the caller to drop
 * after waking it.
 */
struct task_struct *tofutex_waiter_take(struct tofutex_word_waiter *w)
{
	struct task_struct *task = w->task;

	get_task_struct(task);
	list_del(&w->node);
	/* Pairs with the acquire in tofutex_wait_sleep(): @w is free after. */
	smp_store_release(&w->woken, true);
	return task;
}

/**
 * tofutex_wait_queue() - check the word and queue the caller
 * @wc: the wait call
 *
 * Return: 0 when queued, -EAGAIN when the word does not hold @wc->val,
 * -EFAULT.
 */
static int tofutex_wait_queue(struct tofutex_wait_call *wc)
{
	struct tofutex_state *state = wc->state;
	u32 cur;
	int ret;

	for (;;) {
		spin_lock(&state->lock);
		ret = tofutex_word_read_inatomic(wc->uaddr, &cur);
		if (!ret && cur == wc->val)
			list_add_tail(&wc->waiter.node, &state->waiters);
		spin_unlock(&state->lock);

		if (!ret)
			return cur == wc->val ? 0 : -EAGAIN;
		ret = tofutex_word_fault_in_until(wc->uaddr, false,
						  &wc->deadline);
		if (ret)
			return ret;
	}
}

/* Must the sleep end without a wake-up: a signal or the deadline? */
static int tofutex_wait_interrupted(struct tofutex_wait_call *wc)
{
	return tofutex_deadline_interrupted(&wc->deadline);
}

/* Wake SWAP's wakee now, if it is not woken yet. */
static void tofutex_swap_wake_now(struct tofutex_wait_call *wc)
{
	if (!wc->wakee)
		return;
	wake_up_process(wc->wakee);
	put_task_struct(wc->wakee);
	wc->wakee = NULL;
}

/**
 * tofutex_wait_sleep() - sleep until woken, a signal or the deadline
 * @wc: the wait call, queued
 *
 * Ordering against a waker (user space changes the word, then calls WAKE
 * or SWAP; the waiter is in WAIT or SWAP):
 *
 *   waiter                                 waker
 *
 *   lock(bucket), state created or found   *uaddr = new value        (a)
 *   unlock(bucket)                         lock(bucket), state found?
 *   lock(state)                            unlock(bucket)
 *   *uaddr == val?                (b)      if found:
 *   add to state->waiters                    lock(state)
 *   unlock(state)                            take the first waiter,
 *   set_current_state(INTERRUPTIBLE) (c)     woken = true (release)  (d)
 *   woken? (acquire)              (e)        unlock(state)
 *   if not: schedule()                       wake_up_process(waiter) (f)
 *
 * - The waker finds no state: its bucket section came before the one in
 *   which the waiter created the state, and (a) precedes the waker's
 *   unlock(bucket), so (b) sees the new value: -EAGAIN, no sleep.
 * - It finds the state: the two state->lock sections are ordered. If the
 *   waker's comes first it finds no waiter, and (b) sees the new value as
 *   above. If the waiter's comes first, (d) finds it queued.
 * - Then (c) and (f) are the usual pair: set_current_state() is a full
 *   barrier before (e), try_to_wake_up() one before it reads the task
 *   state. Either (e) sees woken, or (f) sees the sleeping state and
 *   wakes the task, or makes the schedule() in progress return.
 * - The wakeup may come late, after the waiter has left on its own (it saw
 *   woken, a signal, the deadline) and went to sleep elsewhere: every
 *   sleep of the kernel, this one too, rechecks its condition in a loop,
 *   so a spurious wake-up costs a loop and nothing else.
 *
 * SWAP's wakee is handed to tofutex_wake_local() on the first sleep, after
 * the caller is queued: by the time the wakee runs and wakes the caller
 * back, the caller can be found. The CPU hand-off has its own ordering
 * argument in wake_local.c.
 *
 * Return: 0 when woken, -ERESTARTSYS or -ETIMEDOUT.
 */
static int tofutex_wait_sleep(struct tofutex_wait_call *wc)
{
	int ret;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE | TASK_FREEZABLE);
		/* Pairs with tofutex_waiter_take(): the waker is done with us. */
		if (smp_load_acquire(&wc->waiter.woken)) {
			ret = 0;
			break;
		}
		ret = tofutex_wait_interrupted(wc);
		if (ret)
			break;
		/*
		 * A moved waiter polls from its first sleep on, also a SWAP
		 * moved before it slept: its wakee is then woken at once,
		 * since the CPU hand-off's sleep would not poll.
		 */
		if (READ_ONCE(wc->waiter.state) != wc->state) {
			tofutex_swap_wake_now(wc);
			tofutex_requeue_sleep(&wc->waiter, &wc->deadline);
		} else {
			tofutex_wake_local(wc->wakee, &wc->deadline);
			wc->wakee = NULL;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/**
 * tofutex_wait_word() - WAIT, or the wait half of SWAP
 * @wc: the wait call, with its state held
 *
 * SWAP's wakee, if any, is woken in every case: handed the CPU by the
 * first sleep, or woken at once when the call ends before sleeping.
 *
 * Return: 0 when woken, -EAGAIN, -ETIMEDOUT, -ERESTARTSYS, -EFAULT.
 */
static int tofutex_wait_word(struct tofutex_wait_call *wc)
{
	int ret;

	wc->waiter.task = current;
	wc->waiter.state = wc->state;
	ret = tofutex_wait_queue(wc);
	if (!ret) {
		if (wc->wakee)
			tofutex_debug_window_now(TOFUTEX_WINDOW_SWAP_QUEUED,
						 wc->uaddr);
		ret = tofutex_wait_sleep(wc);
		ret = tofutex_requeue_leave(wc->table, &wc->waiter, wc->state,
					    ret);
	}
	tofutex_swap_wake_now(wc);
	return ret;
}

/**
 * tofutex_ioc_wait() - TOFUTEX_IOC_WAIT
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_wait
 *
 * Return: 0 when woken; -EAGAIN when the word did not hold the value,
 * -ETIMEDOUT, -ERESTARTSYS, -EINVAL (bad argument, or the word is in use
 * as a TO lock), -EFAULT, -ENOMEM.
 */
long tofutex_ioc_wait(struct tofutex_table *table,
		      struct tofutex_wait __user *argp)
{
	struct tofutex_wait arg;
	struct tofutex_wait_call wc = { .table = table };
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~TOFUTEX_WAIT_FLAGS) || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &wc.uaddr);
	if (ret)
		return ret;
	wc.val = arg.val;
	ret = tofutex_deadline_init(&wc.deadline,
				    arg.flags & TOFUTEX_WAIT_DEADLINE,
				    arg.flags & TOFUTEX_WAIT_CLOCK_REALTIME,
				    arg.deadline_ns);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_WAIT_CALLS);
	wc.state = tofutex_state_get(table, wc.uaddr, TOFUTEX_STATE_WAIT, true);
	if (IS_ERR(wc.state))
		return PTR_ERR(wc.state);
	ret = tofutex_wait_word(&wc);
	tofutex_state_put(table, wc.state);

	trace_tofutex_wait(wc.uaddr, wc.val, ret);
	if (ret == -ETIMEDOUT)
		tofutex_count(table, TOFUTEX_CNT_TIMEOUTS);
	return ret;
}

/**
 * tofutex_waiters_queued() - how many waiters a word has, up to a limit
 * @state: the word's state
 * @max:   stop counting here
 *
 * Return: the number of queued waiters, at most @max.
 */
static u32 tofutex_waiters_queued(struct tofutex_state *state, u32 max)
{
	struct list_head *pos;
	u32 n = 0;

	spin_lock(&state->lock);
	list_for_each(pos, &state->waiters) {
		if (n == max)
			break;
		n++;
	}
	spin_unlock(&state->lock);
	return n;
}

/**
 * tofutex_wake_batch() - take up to a batch of waiters off the queue
 * @state: the word's state
 * @max:   take at most this many
 * @tasks: out: their tasks, each with a reference
 *
 * Return: how many were taken; fewer than a batch and fewer than @max
 * when the queue ran empty.
 */
static unsigned int tofutex_wake_batch(struct tofutex_state *state, u32 max,
				       struct task_struct **tasks)
{
	struct tofutex_word_waiter *w;
	unsigned int n = 0;

	max = min_t(u32, max, TOFUTEX_WAKE_BATCH);
	spin_lock(&state->lock);
	while (n < max) {
		w = list_first_entry_or_null(&state->waiters,
					     struct tofutex_word_waiter, node);
		if (!w)
			break;
		tasks[n++] = tofutex_waiter_take(w);
	}
	spin_unlock(&state->lock);
	return n;
}

/**
 * tofutex_wake_queued() - WAKE on a word that has a state
 * @state: the word's state, with a use held
 * @uaddr: the word
 * @count: wake at most this many
 *
 * WAKE wakes at most as many waiters as were queued when it began, so
 * that waiters that keep coming back cannot keep it in the kernel, and
 * offers the CPU between batches. Waiters that queue while it runs may be
 * woken in place of ones that left; they queued after the word changed,
 * so for them it is a spurious wake-up, which every futex-style waiter
 * tolerates.
 *
 * Return: the number of waiters woken.
 */
static u32 tofutex_wake_queued(struct tofutex_state *state,
			       u32 __user *uaddr, u32 count)
{
	struct task_struct *tasks[TOFUTEX_WAKE_BATCH];
	u32 woken = 0, limit;
	unsigned int n, i;

	limit = tofutex_waiters_queued(state, count);
	while (woken < limit) {
		n = tofutex_wake_batch(state, limit - woken, tasks);
		for (i = 0; i < n; i++) {
			wake_up_process(tasks[i]);
			put_task_struct(tasks[i]);
		}
		woken += n;
		if (n < TOFUTEX_WAKE_BATCH || fatal_signal_pending(current))
			break;
		tofutex_debug_window_now(TOFUTEX_WINDOW_WAKE_BATCH, uaddr);
		cond_resched();
	}
	return woken;
}

/**
 * tofutex_ioc_wake() - TOFUTEX_IOC_WAKE
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_wake
 *
 * A word without a state has nobody to wake; else tofutex_wake_queued().
 *
 * Return: the number of waiters woken, or -EINVAL (bad argument, or the
 * word is in use as a TO lock), -EFAULT.
 */
long tofutex_ioc_wake(struct tofutex_table *table,
		      struct tofutex_wake __user *argp)
{
	struct tofutex_state *state;
	struct tofutex_wake arg;
	u32 __user *uaddr;
	u32 woken = 0;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &uaddr);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_WAKE_CALLS);
	state = tofutex_state_get(table, uaddr, TOFUTEX_STATE_WAIT, false);
	if (IS_ERR(state))
		return PTR_ERR(state);
	if (state) {
		woken = tofutex_wake_queued(state, uaddr, arg.count);
		tofutex_state_put(table, state);
	}
	trace_tofutex_wake(uaddr, arg.count, woken);
	return woken;
}

/**
 * tofutex_swap_take_wakee() - SWAP's wake half: take one waiter
 * @table: the caller's process table
 * @uaddr: the word whose first waiter is taken
 * @wakee: out: its task with a reference held, or NULL when none waits
 *
 * The waiter is taken off the queue now and woken later, by
 * tofutex_wait_word(); it counts as woken from here on.
 *
 * Return: 0, or -EINVAL when the word is in use as a TO lock.
 */
static int tofutex_swap_take_wakee(struct tofutex_table *table,
				   u32 __user *uaddr,
				   struct task_struct **wakee)
{
	struct tofutex_word_waiter *w;
	struct tofutex_state *state;

	*wakee = NULL;
	state = tofutex_state_get(table, uaddr, TOFUTEX_STATE_WAIT, false);
	if (IS_ERR_OR_NULL(state))
		return PTR_ERR_OR_ZERO(state);

	spin_lock(&state->lock);
	w = list_first_entry_or_null(&state->waiters,
				     struct tofutex_word_waiter, node);
	if (w)
		*wakee = tofutex_waiter_take(w);
	spin_unlock(&state->lock);

	tofutex_state_put(table, state);
	return 0;
}

/**
 * tofutex_swap() - wake one waiter of a word, then wait on another
 * @wc:         the wait call for the wait half, state not yet held
 * @wake_uaddr: the word whose first waiter is woken
 * @woken:      out: 1 when a waiter was woken
 *
 * The states are looked up, and the wait word is read once, before
 * anything is woken, so that a word in use as a TO lock, an unreadable
 * wait word or an allocation failure wakes nobody. After that the wake
 * happens whatever the wait half returns.
 *
 * Return: as tofutex_ioc_swap().
 */
static int tofutex_swap(struct tofutex_wait_call *wc, u32 __user *wake_uaddr,
			u32 *woken)
{
	u32 cur;
	int ret;

	wc->state = tofutex_state_get(wc->table, wc->uaddr, TOFUTEX_STATE_WAIT,
				      true);
	if (IS_ERR(wc->state))
		return PTR_ERR(wc->state);

	ret = tofutex_word_read(wc->uaddr, &cur);
	if (!ret)
		ret = tofutex_swap_take_wakee(wc->table, wake_uaddr,
					      &wc->wakee);
	if (!ret) {
		*woken = wc->wakee ? 1 : 0;
		ret = tofutex_wait_word(wc);
	}
	tofutex_state_put(wc->table, wc->state);

	/* A restart would repeat the wake half: only without one. */
	if (ret == -ERESTARTSYS && *woken)
		ret = -EINTR;
	/*
	 * The wait word was readable before the wake half; a fault now means
	 * another thread unmapped it meanwhile. The wake happened: report a
	 * spurious wake-up of the wait half, never a failure of the call.
	 */
	if (ret == -EFAULT && *woken)
		ret = 0;
	return ret;
}

/**
 * tofutex_ioc_swap() - TOFUTEX_IOC_SWAP
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_swap
 *
 * @woken is written back on every return once the arguments are valid.
 * -EFAULT comes only when nobody was woken: once the wake half happened,
 * a failed write-back or a wait word unmapped meanwhile is not an error.
 *
 * Return: 0 when woken; -EAGAIN when the wait word did not hold the value
 * (the wake half happened all the same), -ETIMEDOUT, -ERESTARTSYS when
 * nobody was woken, -EINTR when a waiter was, -EINVAL (bad argument, or a
 * word in use as a TO lock), -EFAULT, -ENOMEM.
 */
long tofutex_ioc_swap(struct tofutex_table *table,
		      struct tofutex_swap __user *argp)
{
	struct tofutex_wait_call wc = { .table = table };
	struct tofutex_swap arg;
	u32 __user *wake_uaddr;
	u32 woken = 0;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~TOFUTEX_WAIT_FLAGS) || arg.pad || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.wait_uaddr, &wc.uaddr);
	if (!ret)
		ret = tofutex_word_check(arg.wake_uaddr, &wake_uaddr);
	if (ret)
		return ret;
	wc.val = arg.val;
	ret = tofutex_deadline_init(&wc.deadline,
				    arg.flags & TOFUTEX_WAIT_DEADLINE,
				    arg.flags & TOFUTEX_WAIT_CLOCK_REALTIME,
				    arg.deadline_ns);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_SWAP_CALLS);
	ret = tofutex_swap(&wc, wake_uaddr, &woken);
	trace_tofutex_swap(wc.uaddr, wake_uaddr, woken, ret);
	if (ret == -ETIMEDOUT)
		tofutex_count(table, TOFUTEX_CNT_TIMEOUTS);
	/* A wake that happened cannot be undone, nor repeated by a retry. */
	if (put_user(woken, &argp->woken) && !woken)
		return -EFAULT;
	return ret;
}
