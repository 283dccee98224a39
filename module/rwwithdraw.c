// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - a reader/writer lock waiter that leaves RDLOCK or WRLOCK
 * without the word (its deadline, a signal): the withdrawal of the
 * reservation (RW_HANDOFF) it would else leave behind, and of WAITERS
 * when nobody is left queued. rwlock.c, "Writers do not starve", says
 * when a reservation goes and when it stays.
 *
 * Lifetimes and locking: runs in the leaving call (queue.c's gave_up),
 * after it left the queue, with the state's use still held. Each pass
 * reads and writes the word under state->lock with page faults disabled,
 * so that the queue it looks at is the one the word goes with; the page
 * is faulted in between passes with no lock held, within the
 * withdrawal's budget. The waiter it wakes is pinned under state->lock
 * and woken after it is dropped (lock.h).
 */
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>

#include "lock.h"
#include "queue.h"
#include "rwlock.h"
#include "tofutex.h"

/**
 * tofutex_rw_withdraw_pass() - one attempt to withdraw a writer's bits
 * @arg:   the call, a struct tofutex_rw_call, no longer queued
 * @woken: unused (a release pass's signature, queue.h)
 *
 * Under state->lock, so the queue looked at is the one the word goes with.
 * RW_HANDOFF stays on a word that a writer holds (it is the writer's
 * business), and whenever the first writer still queued starves: it is
 * that writer's now, as a grant would keep it (rwunlock.c). Else it goes
 * if the caller owned it (it left as the starving top writer, @owner,
 * whoever raised the bit), or if the caller is the last one out of a free
 * word: nobody left in the kernel would clear it. WAITERS goes only with
 * an empty queue, since every queued waiter may sleep relying on it. The
 * top waiter left is woken: it may sleep on the reservation withdrawn (a
 * reader queued behind the writer), and the caller's leave woke it before
 * this ran (queue.c).
 *
 * Return: 0 when done or nothing to do, -EAGAIN when the word changed
 * under the cmpxchg, -EFAULT when its page must be faulted in.
 */
static int tofutex_rw_withdraw_pass(void *arg, u32 *woken)
{
	struct tofutex_rw_call *c = arg;
	struct tofutex_state *state = c->q.state;
	struct tofutex_rw_waiter *top, *writer;
	struct task_struct *wake = NULL;
	u32 word, newval, cur;
	bool last;
	int ret;

	spin_lock(&state->lock);
	ret = tofutex_word_read_inatomic(c->q.uaddr, &word);
	if (ret || tofutex_rw_tid(word) || !(word & TOFUTEX_RW_HANDOFF))
		goto out;
	/* The last one out of a free word: nobody else would clear it. */
	last = tofutex_rw_free(word) && list_empty(&state->waiters);
	if (!last && !c->owner)
		goto out;
	writer = tofutex_rw_first_writer(state);
	if (writer && tofutex_rw_waited(writer, ktime_get_ns()))
		goto out;
	top = tofutex_rw_first(state);
	tofutex_debug_window(TOFUTEX_WINDOW_RW_WITHDRAW, c->q.uaddr, word);
	newval = word & ~TOFUTEX_RW_HANDOFF;
	if (list_empty(&state->waiters))
		newval &= ~TOFUTEX_WAITERS;
	/* A free word left with RW_SHARED alone is 0, as a release leaves it. */
	if (newval == TOFUTEX_RW_SHARED)
		newval = 0;
	ret = tofutex_word_cmpxchg_inatomic(c->q.uaddr, &cur, word, newval);
	if (!ret && cur != word)
		ret = -EAGAIN;
	if (!ret) {
		/* It may sleep on the reservation just withdrawn. */
		if (top)
			wake = get_task_struct(top->task);
	}
out:
	spin_unlock(&state->lock);
	tofutex_wake_task(wake);
	return ret;
}

/**
 * tofutex_rw_withdraw() - a waiter left without the word (queue.c)
 * @arg: the call, a struct tofutex_rw_call
 * @err: why it left
 *
 * Only the starving top writer's RW_HANDOFF is its own, whoever raised it
 * (rwlock.c, "Writers do not starve"); a waiter that leaves otherwise
 * takes back only a reservation on a free word it leaves with nobody
 * queued (tofutex_rw_withdraw_pass()). Readers move the count under every
 * cmpxchg, so a pass that found the word changed is done again, as a
 * release's is (tofutex_release_run(): a fault-in between passes, a
 * scheduling point on each), for at most TOFUTEX_RW_RETRY_NS, a fault-in
 * that must wait for its page included: the caller is leaving, its
 * deadline may have passed already, and the signal it may be leaving for
 * must not end the withdrawal at its first retry (a fault-in that must
 * wait for its page ends on it all the same, as every fault-in does). One
 * given up leaves the bits to the slow path, where the first reader to
 * block takes the word. Whatever ends the call, a signal whose handler
 * runs before it is restarted or retried too: the reservation lives while
 * its writer is queued (rwlock.c, "Writers do not starve").
 */
void tofutex_rw_withdraw(void *arg, int err)
{
	struct tofutex_rw_call *c = arg;
	struct tofutex_deadline budget;
	u32 woken;

	budget.clock = CLOCK_MONOTONIC;
	budget.expires = ktime_add_ns(ktime_get(), TOFUTEX_RW_RETRY_NS);
	tofutex_release_run(tofutex_rw_withdraw_pass, c, c->q.uaddr, &budget,
			    &woken);
}
