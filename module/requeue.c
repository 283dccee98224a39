// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - TOFUTEX_IOC_REQUEUE: wait morphing for condition variables;
 * here the moved waiters (their lists, sleep, poller and releases), and
 * in requeue_call.c the call that moves them.
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
 * Words are read and changed under state locks only with page faults
 * disabled; on a fault every lock is dropped, the page faulted in and the
 * step retried (uaccess.c). Tasks are woken after the locks are dropped,
 * in batches as WAKE does, each pinned by a reference taken under the lock.
 */
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "requeue.h"

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
static bool tofutex_requeue_owner_gone(struct tofutex_state *state)
{
	struct task_struct *owner;
	u32 word;

	if (tofutex_word_read(state->uaddr, &word))
		return true;
	if (!(word & TOFUTEX_TID_MASK))
		return false;
	owner = tofutex_owner_get(state, word);
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
	    (!tofutex_requeue_owner_gone(state) &&
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
