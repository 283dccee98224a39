// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - TOFUTEX_IOC_REQUEUE itself: one call that wakes waiters of a
 * wait word and moves others onto a TO lock's state. What happens to a
 * moved waiter afterwards (its sleep, the poller, the releases that wake
 * it) and the rules of the two lists are in requeue.c.
 *
 * Objects, lifetimes and locks
 * ----------------------------
 * struct tofutex_requeue_call lives on the caller's stack for one call. It
 * holds a use of the wait word's state and, when waiters may be moved, of
 * the lock word's state. Each step holds both state locks (wait word
 * outside, lock word nested: the only place two are held), takes waiters
 * off the wait word's list, and wakes the ones it took after dropping the
 * locks, pinned by a reference taken under them. A moved waiter gets a
 * use of the lock's state (tofutex_state_hold()).
 *
 * Bounds and retries
 * ------------------
 * REQUEUE takes at most the waiters queued on the wait word when its
 * first step looks (so waiters that keep queuing again cannot keep it in
 * the kernel, as in WAKE), steps in batches, and between steps holds no
 * lock, offers the CPU and stops on a fatal signal. Every cmpxchg on a
 * lock word under a state lock is tried once: a word that changed under
 * it is retried with the locks dropped, offering the CPU and looking for
 * a signal. Once REQUEUE has woken or moved anyone it reports success
 * (the action cannot be repeated by a caller that retries); what it can
 * then no longer move (the lock word faults for good, a signal ends the
 * retries) it wakes.
 *
 * Words are read and changed under the state locks only with page faults
 * disabled; on a fault every lock is dropped, the page faulted in and the
 * step retried (uaccess.c).
 */
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "requeue.h"
#include "tofutex_trace.h"

/**
 * struct tofutex_requeue_call - one REQUEUE in progress
 * @table:       the caller's process table
 * @cond:        the wait word's state, with a use held
 * @lock:        the lock word's state, with a use held; NULL when nothing
 *               is to be moved
 * @uaddr:       the wait word
 * @lock_uaddr:  the lock word
 * @val:         act only while the wait word holds this
 * @wake_left:   waiters still to wake
 * @move_left:   waiters still to move
 * @left:        waiters still to wake or move of those queued when the
 *               first step looked: the bound of the whole call
 * @wake_instead: wake the waiters that were to be moved: the lock word
 *               could not be marked after waiters were already taken
 * @woken:       waiters woken so far
 * @requeued:    waiters moved so far
 * @fault_uaddr: the word whose fault ended the last step
 * @fault_write: that fault needs the page writable
 * @tasks:       tasks taken off the queue, to wake after unlocking
 * @ntasks:      how many
 * @poke:        the new poller, to wake once after unlocking, or NULL
 */
struct tofutex_requeue_call {
	struct tofutex_table *table;
	struct tofutex_state *cond;
	struct tofutex_state *lock;
	u32 __user *uaddr;
	u32 __user *lock_uaddr;
	u32 val;
	u32 wake_left;
	u32 move_left;
	u32 left;
	bool wake_instead;
	u32 woken;
	u32 requeued;
	u32 __user *fault_uaddr;
	bool fault_write;
	struct task_struct *tasks[TOFUTEX_REQUEUE_BATCH];
	unsigned int ntasks;
	struct task_struct *poke;
};

/**
 * tofutex_requeue_arm() - set WAITERS on an owned lock word, or find it free
 * @uaddr: the lock word
 *
 * Called under both states' locks; page faults disabled. The cmpxchg is
 * done even when WAITERS is set already: it orders this REQUEUE against an
 * UNLOCK that found no state (see requeue.c, "WAITERS on the lock
 * word"). One attempt, as in tofutex_word_set_waiters().
 *
 * A reader/writer lock held by readers has no owner to queue behind, and
 * its RWUNLOCK would find the moved waiters' TO lock state: it is refused,
 * with or without a kernel state of its own.
 *
 * Return: 1 when the word has an owner and now has WAITERS, 0 when it has
 * no owner, -EBUSY when it changed under the cmpxchg, -EINVAL when it is
 * held by readers, -EFAULT.
 */
static int tofutex_requeue_arm(u32 __user *uaddr)
{
	u32 word, cur;

	if (tofutex_word_read_inatomic(uaddr, &word))
		return -EFAULT;
	if (tofutex_word_reader_held(word))
		return -EINVAL;
	if (!(word & TOFUTEX_TID_MASK))
		return 0;
	tofutex_debug_window(TOFUTEX_WINDOW_REQUEUE_ARM, uaddr, word);
	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word,
					  word | TOFUTEX_WAITERS))
		return -EFAULT;
	return cur == word ? 1 : -EBUSY;
}

/* Take the first waiter of the wait word to wake after unlocking. */
static void tofutex_requeue_take(struct tofutex_requeue_call *rc)
{
	struct tofutex_word_waiter *w;

	w = list_first_entry(&rc->cond->waiters, struct tofutex_word_waiter,
			     node);
	rc->tasks[rc->ntasks++] = tofutex_waiter_take(w);
	rc->woken++;
	rc->left--;
}

/* Move waiters onto the lock's state, whose word has WAITERS now. */
static void tofutex_requeue_move(struct tofutex_requeue_call *rc)
{
	struct tofutex_state *lock = rc->lock;
	struct tofutex_word_waiter *w;

	while (rc->move_left && rc->left && !list_empty(&rc->cond->waiters)) {
		w = list_first_entry(&rc->cond->waiters,
				     struct tofutex_word_waiter, node);
		tofutex_state_hold(lock);
		list_move_tail(&w->node, &lock->requeued);
		WRITE_ONCE(w->state, lock);
		rc->move_left--;
		rc->left--;
		rc->requeued++;
	}
	/* The tail changed: the new one polls from its next sleep on. */
	if (rc->poke)
		put_task_struct(rc->poke);
	rc->poke = tofutex_requeue_poller(lock);
}

/*
 * The first step's look at the wait word: is it still @rc->val, and how
 * many of its waiters may the call take at most?
 */
static int tofutex_requeue_check(struct tofutex_requeue_call *rc)
{
	u64 want = (u64)rc->wake_left + rc->move_left;
	u32 cur;

	rc->fault_uaddr = rc->uaddr;
	rc->fault_write = false;
	if (tofutex_word_read_inatomic(rc->uaddr, &cur))
		return -EFAULT;
	if (cur != rc->val)
		return -EAGAIN;
	rc->left = tofutex_list_count(&rc->cond->waiters,
				      min_t(u64, want, U32_MAX));
	return 0;
}

/**
 * tofutex_requeue_locked() - one step of REQUEUE, under both state locks
 * @rc:    the call
 * @first: the first step: check the wait word's value
 *
 * Wakes up to a batch, then moves (or, onto a free lock, wakes) up to the
 * rest, never more in all than @rc->left allows. The lock word is armed
 * before anything is taken, so that a fault on it, or a change under its
 * cmpxchg, leaves the step undone and retryable.
 *
 * Return: 1 when another step is needed, 0 when done, -EAGAIN, -EBUSY
 * (the lock word changed: retry), -EINVAL (the lock word is held by
 * readers), -EFAULT (with @rc->fault_uaddr set).
 */
static int tofutex_requeue_locked(struct tofutex_requeue_call *rc, bool first)
{
	struct list_head *waiters = &rc->cond->waiters;
	int armed = -1;
	u32 nwake;

	if (first) {
		int ret = tofutex_requeue_check(rc);

		if (ret)
			return ret;
	}
	nwake = min3(rc->wake_left, rc->left, (u32)TOFUTEX_REQUEUE_BATCH);
	if (rc->lock && rc->move_left && rc->left > nwake &&
	    tofutex_list_longer(waiters, nwake)) {
		rc->fault_uaddr = rc->lock_uaddr;
		rc->fault_write = true;
		armed = rc->wake_instead ? 0 :
			tofutex_requeue_arm(rc->lock_uaddr);
		if (armed < 0)
			return armed;
	}
	while (rc->wake_left && rc->left && !list_empty(waiters) &&
	       rc->ntasks < TOFUTEX_REQUEUE_BATCH) {
		tofutex_requeue_take(rc);
		rc->wake_left--;
	}
	if (armed > 0 && !rc->wake_left)
		tofutex_requeue_move(rc);
	while (!armed && rc->move_left && rc->left && !list_empty(waiters) &&
	       rc->ntasks < TOFUTEX_REQUEUE_BATCH) {
		tofutex_requeue_take(rc);
		rc->move_left--;
	}
	return rc->left && !list_empty(waiters) &&
	       (rc->wake_left || rc->move_left);
}

/**
 * tofutex_requeue_step() - lock both states, do a step, wake its tasks
 * @rc:    the call
 * @first: the first step
 *
 * Return: as tofutex_requeue_locked().
 */
static int tofutex_requeue_step(struct tofutex_requeue_call *rc, bool first)
{
	unsigned int i;
	int ret;

	spin_lock(&rc->cond->lock);
	if (rc->lock)
		spin_lock_nested(&rc->lock->lock, SINGLE_DEPTH_NESTING);
	ret = tofutex_requeue_locked(rc, first);
	if (rc->lock)
		spin_unlock(&rc->lock->lock);
	spin_unlock(&rc->cond->lock);

	for (i = 0; i < rc->ntasks; i++)
		tofutex_requeue_wake(rc->tasks[i]);
	rc->ntasks = 0;
	tofutex_requeue_wake(rc->poke);
	rc->poke = NULL;
	return ret;
}

/* Has the call woken or moved anyone? Then it must report success. */
static bool tofutex_requeue_acted(const struct tofutex_requeue_call *rc)
{
	return rc->woken || rc->requeued;
}

/**
 * tofutex_requeue_retry() - deal with a step that did nothing
 * @rc:  the call
 * @ret: the step's -EFAULT, -EBUSY or -EINVAL
 *
 * A fault is faulted in; a lock word that changed under the cmpxchg is
 * retried, unless a signal is pending. Before anything was done, the call
 * then restarts after the handler (nothing is repeated), or fails with
 * -EINVAL when the lock word turned out to be held by readers; after, or
 * when the lock word cannot be written any more, the waiters still to be
 * moved are woken instead: a spurious wake-up, which every waiter
 * tolerates, and the call still reports what it did.
 *
 * Return: 0 to take the next step, or the call's error.
 */
static int tofutex_requeue_retry(struct tofutex_requeue_call *rc, int ret)
{
	if (ret == -EFAULT) {
		ret = tofutex_word_fault_in(rc->fault_uaddr, rc->fault_write);
		/*
		 * A fault-in that waited and was interrupted: restarted too.
		 * A broadcast has no EINTR (pthread_cond_broadcast() cannot
		 * return it), and nothing is repeated by the restart.
		 */
		if (ret == -ERESTARTSYS)
			ret = -ERESTARTNOINTR;
	} else if (ret == -EBUSY)
		ret = signal_pending(current) ? -ERESTARTNOINTR : 0;
	if (!ret || !tofutex_requeue_acted(rc))
		return ret;
	rc->wake_instead = true;
	return 0;
}

/**
 * tofutex_requeue_run() - REQUEUE with both states held
 * @rc: the call
 *
 * Steps until the waiters queued at the first step are all woken or
 * moved, or the counts are used up. Between steps no lock is held, the
 * CPU is offered and a fatal signal ends the call: waiters that keep
 * queuing again cannot keep the caller in the kernel.
 *
 * Return: 0, -EAGAIN, -EFAULT, -EINVAL, -ERESTARTNOINTR or -EINTR when
 * nothing was done yet; 0 once something was.
 */
static int tofutex_requeue_run(struct tofutex_requeue_call *rc)
{
	bool first = true;
	int ret;

	for (;;) {
		ret = tofutex_requeue_step(rc, first);
		if (ret == -EFAULT || ret == -EBUSY || ret == -EINVAL) {
			ret = tofutex_requeue_retry(rc, ret);
			if (ret)
				return ret;
		} else if (ret > 0) {
			first = false;
		} else {
			return ret;
		}
		if (fatal_signal_pending(current))
			return tofutex_requeue_acted(rc) ? 0 : -EINTR;
		tofutex_debug_window_now(TOFUTEX_WINDOW_REQUEUE_STEP, rc->uaddr);
		cond_resched();
	}
}

/*
 * Read a word before anything was done: a fault-in that waited and was
 * interrupted restarts the call, as in tofutex_requeue_retry().
 */
static int tofutex_requeue_read(u32 __user *uaddr, u32 *val)
{
	int ret = tofutex_word_read(uaddr, val);

	return ret == -ERESTARTSYS ? -ERESTARTNOINTR : ret;
}

/**
 * tofutex_requeue() - look the states up and run REQUEUE
 * @rc: the call, with its arguments set
 *
 * No state for the wait word means nobody waits: only the value is
 * checked. The lock's state is created only when waiters may be moved.
 * A lock word held by readers is refused first, however many wait (a
 * later change to it is caught by tofutex_requeue_arm()).
 *
 * Return: 0, -EAGAIN, -EFAULT, -ENOMEM, or -EINVAL when a word is in use
 * as the other kind (the lock word also when readers hold it).
 */
static int tofutex_requeue(struct tofutex_requeue_call *rc)
{
	u32 cur;
	int ret;

	/* Whether or not anyone waits, as tofutex_requeue_arm() would. */
	if (rc->move_left) {
		ret = tofutex_requeue_read(rc->lock_uaddr, &cur);
		if (ret)
			return ret;
		if (tofutex_word_reader_held(cur))
			return -EINVAL;
	}
	rc->cond = tofutex_state_get(rc->table, rc->uaddr, TOFUTEX_STATE_WAIT,
				     false);
	if (IS_ERR(rc->cond))
		return PTR_ERR(rc->cond);
	if (!rc->cond) {
		ret = tofutex_requeue_read(rc->uaddr, &cur);
		return ret ? ret : cur == rc->val ? 0 : -EAGAIN;
	}
	if (rc->move_left) {
		rc->lock = tofutex_state_get(rc->table, rc->lock_uaddr,
					     TOFUTEX_STATE_LOCK, true);
		if (IS_ERR(rc->lock)) {
			tofutex_state_put(rc->table, rc->cond);
			return PTR_ERR(rc->lock);
		}
	}
	ret = tofutex_requeue_run(rc);
	if (rc->lock)
		tofutex_state_put(rc->table, rc->lock);
	tofutex_state_put(rc->table, rc->cond);
	return ret;
}

/**
 * tofutex_ioc_requeue() - TOFUTEX_IOC_REQUEUE
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_requeue
 *
 * @woken and @requeued are written back on every return once the
 * arguments are valid. Errors come only before anyone was woken or
 * moved; after, the call returns 0 even when the write-back fails.
 *
 * Return: 0; -EAGAIN when the wait word does not hold the value; -EINVAL
 * (bad argument, the two words the same, or a word in use as the other
 * kind), -EFAULT, -ENOMEM; -ERESTARTNOINTR (a signal while retrying on a
 * lock word that kept changing: the call is restarted after the handler).
 */
long tofutex_ioc_requeue(struct tofutex_table *table,
			 struct tofutex_requeue __user *argp)
{
	struct tofutex_requeue_call rc = { .table = table };
	struct tofutex_requeue arg;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &rc.uaddr);
	if (!ret)
		ret = tofutex_word_check(arg.lock_uaddr, &rc.lock_uaddr);
	if (ret)
		return ret;
	if (rc.uaddr == rc.lock_uaddr)
		return -EINVAL;
	rc.val = arg.val;
	rc.wake_left = arg.wake_count;
	rc.move_left = arg.requeue_count;

	tofutex_count(table, TOFUTEX_CNT_REQUEUE_CALLS);
	ret = tofutex_requeue(&rc);
	trace_tofutex_requeue(rc.uaddr, rc.lock_uaddr, rc.woken, rc.requeued,
			      ret);
	tofutex_debug_window_now(TOFUTEX_WINDOW_REQUEUE_RESULT, rc.uaddr);
	/* What was done cannot be undone, nor repeated by a caller's retry. */
	if ((put_user(rc.woken, &argp->woken) ||
	     put_user(rc.requeued, &argp->requeued)) &&
	    !tofutex_requeue_acted(&rc))
		return -EFAULT;
	return ret;
}
