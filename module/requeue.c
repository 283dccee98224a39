// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - TOFUTEX_IOC_REQUEUE: wait morphing for condition variables.
 *
 * A broadcast on a condition variable wakes every waiter, and every one of
 * them then fights for the mutex that only one can hold. REQUEUE wakes a
 * few (usually one) and moves the rest, still asleep in TOFUTEX_IOC_WAIT,
 * from the condition word's state onto the TO lock's state; each release
 * of the lock that enters the kernel then wakes one of them. A moved
 * waiter's WAIT returns 0 then, and it takes the lock as any locker does.
 *
 * Objects, lifetimes and locks
 * ----------------------------
 * A WAIT waiter (struct tofutex_word_waiter, on its task's stack) is on
 * exactly one list at a time: the waiters of its wait word's state (its
 * "home"), or the @requeued list of a LOCK state. @w->state names that
 * state. REQUEUE changes it, once, from home to a LOCK state, holding
 * both states' locks: the wait state's lock, then the lock state's with
 * spin_lock_nested(). That is the only place two state locks are held,
 * always in this order (wait word outside lock word), so it cannot
 * deadlock. Whoever else wants the waiter's list - the waiter leaving on
 * a signal or its deadline - reads @w->state, locks that state and checks
 * that @w->state did not change before it looked; once it names a LOCK
 * state it never changes again.
 *
 * A moved waiter keeps the use of its home state that its WAIT took, and
 * REQUEUE gives it a use of the lock state (tofutex_state_hold()), which
 * the waiter drops when its WAIT returns. So both states live while the
 * waiter is on either list, and every use is still taken and dropped
 * inside an ioctl: a table has no state left when its last file goes.
 *
 * The entry leaves @requeued, under the lock state's lock, by one of:
 *   - a kernel release of the lock (tofutex_requeue_release(), called by
 *     every successful TOFUTEX_IOC_UNLOCK), which takes the first moved
 *     waiter and wakes it as WAKE does (woken, then wake_up_process());
 *   - the waiter itself, on a signal or its deadline (ETIMEDOUT, EINTR);
 *   - the waiter itself when, as the poller (below), it finds the lock's
 *     owner dead, or the lock left free with nobody taking it: it marks
 *     itself woken and its WAIT returns 0, so that it goes and takes the
 *     lock as any locker would;
 *   - tofutex_requeue_flush(), which wakes them all when WAITERS cannot
 *     be kept on the word (below).
 *
 * WAITERS on the lock word
 * ------------------------
 * Moved waiters are woken only by a release that enters the kernel, so
 * while any is queued the word keeps TOFUTEX_WAITERS, and user space's
 * unlock (cmpxchg TID to 0) fails and calls UNLOCK. REQUEUE sets it,
 * under the lock state's lock, before it moves anyone. Three writers can
 * clear it again, and each puts it back under the same lock if moved
 * waiters remain:
 *   - UNLOCK releasing the word (to 0, or to a hand-off's TID):
 *     tofutex_requeue_release() re-sets it when it leaves waiters behind,
 *     also on a word that is free by then (WAITERS alone); user space
 *     takes such a word keeping the bit, as the kernel does;
 *   - the top LOCK waiter taking the word, which writes only its TID:
 *     tofutex_requeue_rearm() re-sets it before LOCK returns, so the
 *     new owner cannot unlock in user space in between;
 *   - an UNLOCK that found no state releases a word with a stale WAITERS
 *     while REQUEUE creates the state: REQUEUE's cmpxchg on the word is
 *     done even when WAITERS is set, as a compare. If it comes first, the
 *     unlock's cmpxchg and then its tofutex_requeue_release() lookup come
 *     after REQUEUE's state insertion (both cmpxchgs are fully ordered)
 *     and find the moved waiters; if the unlock's comes first, REQUEUE
 *     finds the word free and wakes instead of moving.
 * When WAITERS cannot be put back (the word's page became read-only or
 * went away, or a signal ended retries on a word that kept changing), a
 * release that may not enter the kernel would leave the moved waiters
 * asleep: they are all woken instead, and take the lock through LOCK.
 *
 * Owner death: the poller
 * -----------------------
 * A moved waiter sleeps in WAIT, not LOCK, and nobody else may be in LOCK
 * to notice that the owner died. So the last waiter on @requeued (the
 * tail, which a release reaches last) is the poller: it sleeps at most
 * owner_check_ns at a time and then checks the word, as a sleeping top
 * lock waiter does (lock.c). The tail changes only when waiters are
 * appended or the tail leaves; the new tail is then woken once (it stays
 * queued) so that it starts polling. A former poller finds out at its
 * next poll and sleeps without a timer from then on.
 *
 * The poller also goes for the lock when two polls in a row find the word
 * free and unchanged with no kernel release in between: the waiter that
 * the last release woke did not take the lock (its thread went on to do
 * something else, or exited), and no release will come to wake the rest.
 * So a moved waiter sleeps at most about 2 * owner_check_ns on a free
 * lock.
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
 * Words are read and changed under state locks only with page faults
 * disabled; on a fault every lock is dropped, the page faulted in and the
 * step retried (uaccess.c). Tasks are woken after the locks are dropped,
 * in batches as WAKE does, each pinned by a reference taken under the lock.
 */
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "tofutex.h"

/*
 * Waiters REQUEUE wakes per hold of the state locks: their tasks wait on
 * the stack until the locks are dropped, as in WAKE. Moving needs no
 * wake-up, so it is not batched.
 */
#define TOFUTEX_REQUEUE_BATCH	8

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

/* Wake a task pinned under a lock, after dropping it; NULL is a no-op. */
static void tofutex_requeue_wake(struct task_struct *task)
{
	if (!task)
		return;
	wake_up_process(task);
	put_task_struct(task);
}

/**
 * tofutex_word_set_waiters() - one attempt to add WAITERS to a lock word
 * @uaddr: the lock word
 *
 * Called under the lock state's lock; page faults disabled. One cmpxchg:
 * a word that changed under it is retried by the caller with no lock
 * held (tofutex_requeue_mark()), so that a word that keeps changing
 * cannot keep a CPU spinning with the lock held.
 *
 * Return: 0 (WAITERS is on), -EAGAIN (the word changed), -EFAULT.
 */
static int tofutex_word_set_waiters(u32 __user *uaddr)
{
	u32 word, cur;

	if (tofutex_word_read_inatomic(uaddr, &word))
		return -EFAULT;
	if (word & TOFUTEX_WAITERS)
		return 0;
	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word,
					  word | TOFUTEX_WAITERS))
		return -EFAULT;
	return cur == word ? 0 : -EAGAIN;
}

/**
 * tofutex_requeue_arm() - set WAITERS on an owned lock word, or find it free
 * @uaddr: the lock word
 *
 * Called under both states' locks; page faults disabled. The cmpxchg is
 * done even when WAITERS is set already: it orders this REQUEUE against an
 * UNLOCK that found no state (see the file comment). One attempt, as in
 * tofutex_word_set_waiters().
 *
 * Return: 1 when the word has an owner and now has WAITERS, 0 when it has
 * no owner, -EBUSY when it changed under the cmpxchg, -EFAULT.
 */
static int tofutex_requeue_arm(u32 __user *uaddr)
{
	u32 word, cur;

	if (tofutex_word_read_inatomic(uaddr, &word))
		return -EFAULT;
	if (!(word & TOFUTEX_TID_MASK))
		return 0;
	tofutex_debug_window(TOFUTEX_WINDOW_REQUEUE_ARM, uaddr, word);
	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word,
					  word | TOFUTEX_WAITERS))
		return -EFAULT;
	return cur == word ? 1 : -EBUSY;
}

/* Does @list hold more than @n entries? Looks at n + 1 at most. */
static bool tofutex_list_longer(struct list_head *list, u32 n)
{
	struct list_head *pos;

	list_for_each(pos, list)
		if (n-- == 0)
			return true;
	return false;
}

/* How many entries @list holds, counting to @max at most. */
static u32 tofutex_list_count(struct list_head *list, u32 max)
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
static struct task_struct *tofutex_requeue_poller(struct tofutex_state *state)
{
	struct tofutex_word_waiter *tail;

	if (list_empty(&state->requeued))
		return NULL;
	tail = list_last_entry(&state->requeued, struct tofutex_word_waiter,
			       node);
	return get_task_struct(tail->task);
}

/**
 * tofutex_requeue_unlink() - take a waiter off its state's list
 * @state: @w->state, locked
 * @w:     the waiter, not woken
 * @moved: @state is a lock state: @w is on its @requeued list
 *
 * Return: the new poller when @w was the poller, pinned, to wake once
 * after unlocking; else NULL.
 */
static struct task_struct *tofutex_requeue_unlink(struct tofutex_state *state,
						  struct tofutex_word_waiter *w,
						  bool moved)
{
	bool was_poller = moved && list_is_last(&w->node, &state->requeued);

	list_del(&w->node);
	return was_poller ? tofutex_requeue_poller(state) : NULL;
}

/* Lock @w->state, following a REQUEUE that moves @w meanwhile. */
static struct tofutex_state *tofutex_waiter_lock(struct tofutex_word_waiter *w)
{
	struct tofutex_state *state;

	for (;;) {
		state = READ_ONCE(w->state);
		spin_lock(&state->lock);
		if (state == READ_ONCE(w->state))
			return state;
		spin_unlock(&state->lock);
	}
}

/**
 * tofutex_requeue_leave() - end a WAIT: leave the list, drop the lock state
 * @table: the caller's process table
 * @w:     the caller's entry
 * @home:  the wait word's state, which the caller holds and puts itself
 * @ret:   the sleep's result: 0 when woken, else why it ended
 *
 * Return: @ret, or 0 when a waker took the caller off its list meanwhile:
 * a wake-up that races with a signal or the deadline is never lost.
 */
int tofutex_requeue_leave(struct tofutex_table *table,
			  struct tofutex_word_waiter *w,
			  struct tofutex_state *home, int ret)
{
	struct task_struct *poke = NULL;
	struct tofutex_state *state;

	if (ret) {
		state = tofutex_waiter_lock(w);
		if (w->woken)
			ret = 0;
		else
			poke = tofutex_requeue_unlink(state, w, state != home);
		spin_unlock(&state->lock);
		tofutex_requeue_wake(poke);
	}
	/* Stable now: only REQUEUE writes it, and only while @w is queued. */
	if (w->state != home)
		tofutex_state_put(table, w->state);
	return ret;
}

/*
 * Does the lock word name an owner that is gone? Then a moved waiter must
 * go and take the lock over. A free word is not a reason: the waiter a
 * release woke is on its way to it, and the next release wakes another.
 * A word that cannot be read any more, or that names no owner of this
 * process, sends the waiter to LOCK, which reports the error.
 */
static bool tofutex_requeue_owner_gone(u32 __user *uaddr)
{
	struct task_struct *owner;
	u32 word;

	if (tofutex_word_read(uaddr, &word))
		return true;
	if (!(word & TOFUTEX_TID_MASK))
		return false;
	owner = tofutex_owner_get(word & TOFUTEX_TID_MASK);
	if (IS_ERR_OR_NULL(owner))
		return true;
	put_task_struct(owner);
	return false;
}

/**
 * tofutex_requeue_stalled() - is the lock left free with nobody coming?
 * @state: the lock word's state
 * @w:     the poller
 *
 * A release wakes one moved waiter and leaves the word free for it. A
 * waiter that then never takes the lock (its thread does something else,
 * or exits) would leave the others asleep on a free lock, with no release
 * to come. So the poller compares each look with its previous one: a word
 * with no owner, unchanged, and no release in between (@state->releases)
 * means that nobody took the lock for a whole owner_check_ns, and the
 * poller goes for it itself. At worst that is one early contender.
 *
 * Return: true when the poller should go and take the lock.
 */
static bool tofutex_requeue_stalled(struct tofutex_state *state,
				    struct tofutex_word_waiter *w)
{
	u32 releases = READ_ONCE(state->releases);
	bool stalled;
	u32 word;

	if (tofutex_word_read(state->uaddr, &word))
		return true;
	stalled = w->polled && !(word & TOFUTEX_TID_MASK) &&
		  word == w->poll_word && releases == w->poll_releases;
	w->polled = true;
	w->poll_word = word;
	w->poll_releases = releases;
	return stalled;
}

/**
 * tofutex_requeue_sleep() - one sleep of a moved waiter
 * @w:  the waiter, on a lock state's @requeued list
 * @dl: its WAIT's deadline
 *
 * The caller has set its task state and checked @w->woken, signals and
 * the deadline, as for any WAIT sleep; this returns with the task
 * running. The poller sleeps at most owner_check_ns and then looks at the
 * lock word; finding its owner dead, or the word left free
 * (tofutex_requeue_stalled()), it takes itself off the list as woken, so
 * that its WAIT returns 0 and it goes for the lock.
 */
void tofutex_requeue_sleep(struct tofutex_word_waiter *w,
			   const struct tofutex_deadline *dl)
{
	struct tofutex_state *state = READ_ONCE(w->state);
	struct task_struct *poke = NULL;
	bool poller;

	spin_lock(&state->lock);
	poller = !w->woken && list_is_last(&w->node, &state->requeued);
	spin_unlock(&state->lock);
	if (!poller) {
		w->polled = false;
		tofutex_schedule_until(dl);
		return;
	}
	tofutex_schedule_poll(dl, tofutex_owner_check_ns());
	/* Pairs with tofutex_waiter_take(): a waker is done with @w. */
	if (smp_load_acquire(&w->woken) ||
	    (!tofutex_requeue_owner_gone(state->uaddr) &&
	     !tofutex_requeue_stalled(state, w)))
		return;

	spin_lock(&state->lock);
	if (!w->woken) {
		poke = tofutex_requeue_unlink(state, w, true);
		w->woken = true;
	}
	spin_unlock(&state->lock);
	tofutex_requeue_wake(poke);
}

/**
 * tofutex_requeue_mark() - keep WAITERS on a lock word with moved waiters
 * @state: the lock word's state, held
 * @uaddr: the lock word
 * @spare: how many moved waiters need no mark (the caller takes them)
 *
 * A word that changed under the cmpxchg is retried with no lock held,
 * offering the CPU; a fault is faulted in. Only a signal or a word that
 * cannot be written ends the retries: a word that keeps changing is a
 * program's bug, and the signal is how its user stops it.
 *
 * Return: 0 with @state->lock held and WAITERS on the word when more than
 * @spare moved waiters are queued; else an error, with the lock dropped,
 * and then the caller must wake the moved waiters (tofutex_requeue_flush())
 * so that none sleeps on a word whose releases may not enter the kernel.
 */
static int tofutex_requeue_mark(struct tofutex_state *state,
				u32 __user *uaddr, u32 spare)
{
	int ret;

	for (;;) {
		spin_lock(&state->lock);
		if (!tofutex_list_longer(&state->requeued, spare))
			return 0;
		ret = tofutex_word_set_waiters(uaddr);
		if (!ret)
			return 0;
		spin_unlock(&state->lock);
		if (ret == -EFAULT)
			ret = tofutex_word_fault_in(uaddr, true);
		else if (signal_pending(current))
			ret = -EINTR;
		else
			ret = 0;
		if (ret)
			return ret;
		cond_resched();
	}
}

/**
 * tofutex_requeue_flush() - wake every moved waiter of a lock
 * @state: the lock word's state, held, not locked
 *
 * For when WAITERS cannot be kept on the word: each woken waiter's WAIT
 * returns 0 and it takes the lock through LOCK, which queues it there (or
 * reports the word's fault). At most the waiters queued on entry are
 * woken, in batches, with the CPU offered between them.
 *
 * Return: how many were woken.
 */
static u32 tofutex_requeue_flush(struct tofutex_state *state)
{
	struct task_struct *tasks[TOFUTEX_REQUEUE_BATCH];
	struct tofutex_word_waiter *w;
	u32 left, woken = 0;
	unsigned int n, i;

	spin_lock(&state->lock);
	left = tofutex_list_count(&state->requeued, U32_MAX);
	spin_unlock(&state->lock);
	while (left) {
		n = 0;
		spin_lock(&state->lock);
		while (n < min_t(u32, left, TOFUTEX_REQUEUE_BATCH)) {
			w = list_first_entry_or_null(&state->requeued,
						     struct tofutex_word_waiter,
						     node);
			if (!w)
				break;
			tasks[n++] = tofutex_waiter_take(w);
		}
		spin_unlock(&state->lock);
		for (i = 0; i < n; i++)
			tofutex_requeue_wake(tasks[i]);
		woken += n;
		left = n < TOFUTEX_REQUEUE_BATCH ? 0 : left - n;
		if (left)
			cond_resched();
	}
	return woken;
}

/**
 * tofutex_requeue_release() - a kernel release: wake one moved waiter
 * @table: the caller's process table
 * @uaddr: the lock word, just released by TOFUTEX_IOC_UNLOCK
 *
 * The first moved waiter is taken and woken. When others remain, WAITERS
 * is put back on the word first (the release may have cleared it), so
 * that the next release enters the kernel too; when that cannot be done,
 * they are all woken instead.
 *
 * Return: 1 when a waiter was woken, else 0 (UNLOCK's @woken).
 */
u32 tofutex_requeue_release(struct tofutex_table *table, u32 __user *uaddr)
{
	struct task_struct *task = NULL;
	struct tofutex_word_waiter *w;
	struct tofutex_state *state;
	u32 woken;

	state = tofutex_state_get(table, uaddr, TOFUTEX_STATE_LOCK, false);
	if (IS_ERR_OR_NULL(state))
		return 0;
	tofutex_debug_window_now(TOFUTEX_WINDOW_REQUEUE_RELEASE, uaddr);
	if (tofutex_requeue_mark(state, uaddr, 1)) {
		woken = tofutex_requeue_flush(state) ? 1 : 0;
	} else {
		w = list_first_entry_or_null(&state->requeued,
					     struct tofutex_word_waiter, node);
		if (w)
			task = tofutex_waiter_take(w);
		WRITE_ONCE(state->releases, state->releases + 1);
		spin_unlock(&state->lock);
		tofutex_requeue_wake(task);
		woken = task ? 1 : 0;
	}
	tofutex_state_put(table, state);
	return woken;
}

/**
 * tofutex_requeue_rearm() - a LOCK waiter took the word: keep WAITERS
 * @state: the lock word's state, held by the caller
 * @uaddr: the lock word, now owned by the caller
 *
 * The top waiter takes the word writing only its TID; with moved waiters
 * queued, WAITERS goes back on before the new owner returns to user space
 * and could unlock there. When it cannot, the moved waiters are woken.
 */
void tofutex_requeue_rearm(struct tofutex_state *state, u32 __user *uaddr)
{
	if (tofutex_requeue_mark(state, uaddr, 0))
		tofutex_requeue_flush(state);
	else
		spin_unlock(&state->lock);
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
 * (the lock word changed: retry), -EFAULT (with @rc->fault_uaddr set).
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
 * @ret: the step's -EFAULT or -EBUSY
 *
 * A fault is faulted in; a lock word that changed under the cmpxchg is
 * retried, unless a signal is pending. Before anything was done, the call
 * then restarts after the handler (nothing is repeated); after, or when
 * the lock word cannot be written any more, the waiters still to be moved
 * are woken instead: a spurious wake-up, which every waiter tolerates,
 * and the call still reports what it did.
 *
 * Return: 0 to take the next step, or the call's error.
 */
static int tofutex_requeue_retry(struct tofutex_requeue_call *rc, int ret)
{
	if (ret == -EFAULT)
		ret = tofutex_word_fault_in(rc->fault_uaddr, rc->fault_write);
	else if (signal_pending(current))
		ret = -ERESTARTNOINTR;
	else
		ret = 0;
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
 * Return: 0, -EAGAIN, -EFAULT, -ERESTARTNOINTR or -EINTR when nothing was
 * done yet; 0 once something was.
 */
static int tofutex_requeue_run(struct tofutex_requeue_call *rc)
{
	bool first = true;
	int ret;

	for (;;) {
		ret = tofutex_requeue_step(rc, first);
		if (ret == -EFAULT || ret == -EBUSY) {
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

/**
 * tofutex_requeue() - look the states up and run REQUEUE
 * @rc: the call, with its arguments set
 *
 * No state for the wait word means nobody waits: only the value is
 * checked. The lock's state is created only when waiters may be moved.
 *
 * Return: 0, -EAGAIN, -EFAULT, -ENOMEM, or -EINVAL when a word is in use
 * as the other kind.
 */
static int tofutex_requeue(struct tofutex_requeue_call *rc)
{
	u32 cur;
	int ret;

	rc->cond = tofutex_state_get(rc->table, rc->uaddr, TOFUTEX_STATE_WAIT,
				     false);
	if (IS_ERR(rc->cond))
		return PTR_ERR(rc->cond);
	if (!rc->cond) {
		ret = tofutex_word_read(rc->uaddr, &cur);
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
	tofutex_debug_window_now(TOFUTEX_WINDOW_REQUEUE_RESULT, rc.uaddr);
	/* What was done cannot be undone, nor repeated by a caller's retry. */
	if ((put_user(rc.woken, &argp->woken) ||
	     put_user(rc.requeued, &argp->requeued)) &&
	    !tofutex_requeue_acted(&rc))
		return -EFAULT;
	return ret;
}
