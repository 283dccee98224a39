// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - throughput-optimised (TO) locks: TOFUTEX_IOC_LOCK. The
 * release side, TOFUTEX_IOC_UNLOCK, is unlock.c; the queue both use is
 * lock.h.
 *
 * The lock is a user word (uapi/tofutex.h): 0 when free, else the owner's
 * TID plus the WAITERS and OWNER_DIED bits. User space takes and releases
 * it with cmpxchg and calls in here only under contention.
 *
 * Waiters and the top waiter
 * --------------------------
 * Every task in LOCK queues a struct tofutex_waiter (on its stack) on the
 * word's state (table.c) in arrival order. Only the first one, the top
 * waiter, competes for the word; the others sleep until the top waiter
 * leaves the queue and promotes the next. So at most one task per lock
 * spins. The spin itself takes no lock; each pass of the top waiter's
 * loop takes state->lock once, briefly, to see whether it starves
 * (tofutex_starving()).
 *
 * The top waiter spins while the owner thread is running on a CPU,
 * without setting WAITERS, so that the owner's unlock stays in user space
 * and any thread may steal the lock meanwhile: throughput first. It stops
 * spinning when the owner leaves the CPU, when it needs to reschedule or
 * has a signal, or when the spin budget (spin_ns) is used up; then it sets
 * WAITERS and sleeps until an unlock wakes it, its deadline passes, a
 * signal arrives, or the periodic owner check (below) is due.
 *
 * Hand-off
 * --------
 * Stealing can starve the top waiter. It asks for a hand-off, setting
 * state->handoff and WAITERS, when it is starving:
 *
 * - an UNLOCK released the word for it and woke it (waiter->woken), and
 *   when it looked, a thief had the word already. A thread that relocks
 *   right after its unlock, or holds the lock across a sched_yield(),
 *   beats every woken waiter, each of whose rounds costs a wake-up and an
 *   UNLOCK call; the kernel's mutex hands off after one such lost round
 *   too (its first waiter sets MUTEX_FLAG_HANDOFF when a trylock after a
 *   wake-up fails). Off by default (handoff_lost): in bench_lock's
 *   blocks the lost rounds are rare, and where they are common, an owner
 *   that sleeps inside its critical section, handing the word to a waiter
 *   that must first be woken left it idle for that wake-up and cost 5-18 %
 *   of the throughput (loop+sleep, 2-16 threads, side by side in one boot:
 *   bench/lock.md) while stealing kept every thread within 0.8 of the
 *   mean; sysbench's threads test did not gain either.
 * - it has been top waiter for longer than handoff_ns, whatever happened:
 *   a spinning top waiter that thieves beat without its ever being woken.
 *
 * The next UNLOCK then writes the top waiter's TID into the word instead
 * of 0 (the word never passes through "free", so nobody can steal it, in
 * the kernel or in user space) and wakes it, if it is not spinning
 * already. The waiter keeps spinning on a running owner meanwhile: the
 * hand-off then costs no wake-up. Hand-off is the exception, not the
 * rule: a woken waiter that does get the word, or is not beaten to it,
 * never asks; forcing a hand-off on every contended unlock made the
 * kernel mutex markedly slower on sched-messaging, while allowing steals
 * until the woken waiter runs did not (K Prateek Nayak, "mutex: steal vs.
 * hand-off experiments", proxy-exec thread on LKML).
 *
 * Owner death
 * -----------
 * A module cannot hook thread exit with exported symbols, so the top
 * waiter checks the owner itself: on every pass of its loop and at least
 * every owner_check_ns while asleep. A TID that names no thread, or an
 * exiting thread of the caller's process, is dead; the waiter then takes
 * the word over with a cmpxchg from the exact value it judged, sets
 * OWNER_DIED and reports TOFUTEX_STATUS_OWNER_DIED. A TID that names a
 * thread of another process (the word is shared with it, against the ABI,
 * or the owner is a clone(CLONE_VM) child that is not a thread) is never
 * taken over: LOCK fails with -EPERM.
 *
 * TIDs are reused (pid_max wraps on a busy host, PID namespaces start
 * small), so "the thread this TID names now" is not "the owner": a dead
 * owner's TID given to a new thread would keep the waiters waiting for
 * that thread, and given to another process's thread would fail LOCK with
 * -EPERM. So the word's state remembers the owner's struct pid, with a
 * reference, from the moment a waiter sets WAITERS on a word naming it,
 * and later checks of that TID look at that pid's task: gone or exiting
 * means dead, whatever the TID names now (owner.c, which also says when
 * the memory is sound and when it is forgotten). A struct pid, unlike a
 * TID or a task_struct pointer, is never reused while a reference is
 * held; a start time would need the task, which is what is gone; and a
 * reference on the owner's task_struct would pin a whole task per
 * contended lock where a struct pid is small. The thread given the dead
 * owner's TID finds its own TID in the word when it calls LOCK: with the
 * dead owner remembered, it takes the word over too instead of failing
 * with -EDEADLK (tofutex_owner_take_reused()). What remains: an owner that
 * died, and whose TID was reused, before any waiter saw it with WAITERS
 * set - nothing then tells its TID from the new thread's - is waited for
 * as that thread.
 *
 * Loops and signals
 * -----------------
 * The top waiter's loop goes round again whenever the word changed under
 * it. A word that keeps changing (a buggy program) must not keep the
 * caller in the kernel: every pass checks for a signal and the deadline
 * and offers to reschedule.
 *
 * Locking and lifetimes
 * ---------------------
 * The queue's locking rules are in lock.h, the remembered owner's in
 * owner.c. The owner's task_struct is looked at only with a reference
 * held, and the word is re-checked after.
 *
 * Moved WAIT waiters
 * ------------------
 * TOFUTEX_IOC_REQUEUE may queue WAIT waiters on a lock's state too
 * (state->requeued, requeue.c); UNLOCK wakes them one at a time. A LOCK
 * that took the word in the top waiter's loop, which writes only its TID,
 * puts WAITERS back while any are queued (tofutex_requeue_rearm()).
 *
 * Sleeping: LOCK sleeps in TASK_INTERRUPTIBLE with a timer; a signal ends
 * it with -ERESTARTSYS, which restarts the ioctl under SA_RESTART (the
 * deadline is absolute, so a restart does not extend it). A fault-in of
 * the word's page that must wait (userfaultfd) ends the same way, and at
 * the deadline (uaccess.c): every user access here passes lk->q.deadline.
 *
 * Module parameters: spin_ns, handoff_ns, owner_check_ns (each refused
 * outside its range with -EINVAL, see struct tofutex_ns_param) and the
 * switch handoff_lost.
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "lock.h"
#include "queue.h"
#include "tofutex.h"

/*
 * Spinning costs a CPU; sleeping costs a block + wake-up round trip. By the
 * ski-rental argument, spinning for as long as that round trip would take
 * is never worse than twice the optimum. A round trip costs a few us on
 * bare metal and tens of us in an emulated guest, so the default covers
 * both without burning a CPU for long. A time, not a loop count: a loop
 * count means something different on every CPU. 0 turns spinning off; the
 * maximum, 10 ms, is far beyond any round trip, and keeps the spin's end
 * time from overflowing.
 */
static struct tofutex_ns_param spin_ns = {
	.val = 50 * NSEC_PER_USEC,
	.min = 0,
	.max = 10 * NSEC_PER_MSEC,
};
module_param_cb(spin_ns, &tofutex_ns_param_ops, &spin_ns, 0644);
MODULE_PARM_DESC(spin_ns, "Time budget for a top waiter's spin on a running owner, in ns, 0 to 10000000");

/*
 * Prior art: the TP futex series handed off after 5 ms, the rwsem after
 * 4 ms; both bounded starvation without measurable throughput loss. 0
 * hands off at the first contended unlock; the maximum, 1 s, still bounds
 * starvation.
 */
static struct tofutex_ns_param handoff_ns = {
	.val = 4 * NSEC_PER_MSEC,
	.min = 0,
	.max = NSEC_PER_SEC,
};
module_param_cb(handoff_ns, &tofutex_ns_param_ops, &handoff_ns, 0644);
MODULE_PARM_DESC(handoff_ns, "Top-waiter wait after which the next unlock hands the lock over, in ns, 0 to 1000000000");

/*
 * Hand off as soon as a woken top waiter lost the word to a thief (see
 * "Hand-off" above, and why it is off). A switch, not a tunable: it is
 * there so that the two policies can be measured side by side
 * (bench_lock --spin).
 */
static bool handoff_lost;
module_param(handoff_lost, bool, 0644);
MODULE_PARM_DESC(handoff_lost, "Hand the lock to a woken top waiter at the next unlock once a thief beat it to the word (Y, or N, the default)");

/*
 * The ABI promises that a waiter gets a dead owner's lock within 100 ms.
 * Checking four times as often keeps that promise even when timers run
 * late under load, at a cost of 40 wake-ups a second for a sleeping top
 * waiter only. The maximum is the promise itself; below the minimum, 1 ms,
 * a sleeping top waiter would wake more than a thousand times a second.
 */
static struct tofutex_ns_param owner_check_ns = {
	.val = 25 * NSEC_PER_MSEC,
	.min = NSEC_PER_MSEC,
	.max = 100 * NSEC_PER_MSEC,
};
module_param_cb(owner_check_ns, &tofutex_ns_param_ops, &owner_check_ns,
		0644);
MODULE_PARM_DESC(owner_check_ns, "Interval of a sleeping top waiter's owner liveness check, in ns, 1000000 to 100000000");

/**
 * tofutex_owner_check_ns() - the owner liveness check interval now
 *
 * For the other sleepers that watch an owner (requeue.c).
 *
 * Return: owner_check_ns, in ns.
 */
u64 tofutex_owner_check_ns(void)
{
	return READ_ONCE(owner_check_ns.val);
}

/**
 * tofutex_spin_ns() - the top waiter's spin budget now
 *
 * For the other top waiters that spin (rwlock.c).
 *
 * Return: spin_ns, in ns.
 */
u64 tofutex_spin_ns(void)
{
	return READ_ONCE(spin_ns.val);
}

/**
 * tofutex_handoff_ns() - the wait after which a top waiter starves now
 *
 * For the other top waiters that ask for a hand-off (rwlock.c).
 *
 * Return: handoff_ns, in ns.
 */
u64 tofutex_handoff_ns(void)
{
	return READ_ONCE(handoff_ns.val);
}

/**
 * tofutex_try_take() - take the word if it is free
 * @uaddr: the lock word
 * @vpid:  the caller's TID
 * @keep:  bits of the old word to keep (WAITERS, when somebody else may be
 *         asleep waiting for this lock's unlock)
 * @word:  in: the value last read; out: the value found, or on success
 *         the value replaced
 * @dl:    the caller's deadline, bounding a fault-in
 *
 * A free word's OWNER_DIED bit is always kept, as the library's user-space
 * take keeps it: the data the lock protects is still inconsistent. One
 * attempt only, so that a word that keeps changing sends the caller back
 * to a loop that checks for signals.
 *
 * May sleep (faults in the page).
 *
 * Return: 1 when taken, 0 when owned by another task, -EAGAIN when the
 * word changed under the cmpxchg, -EDEADLK when owned by the caller,
 * -EINVAL when it is a reader/writer lock held by readers (its "TID" is
 * none: tofutex_word_reader_held()), or an error of the fault-in (-EFAULT,
 * -EINTR, -ERESTARTSYS, -ETIMEDOUT).
 */
static int tofutex_try_take(u32 __user *uaddr, u32 vpid, u32 keep, u32 *word,
			    const struct tofutex_deadline *dl)
{
	u32 cur;
	int ret;

	if (tofutex_word_reader_held(*word))
		return -EINVAL;
	if (tofutex_tid(*word) == vpid)
		return -EDEADLK;
	if (tofutex_tid(*word))
		return 0;
	keep |= TOFUTEX_OWNER_DIED;
	ret = tofutex_word_cmpxchg_until(uaddr, &cur, *word,
					 vpid | (*word & keep), dl);
	if (ret)
		return ret;
	if (cur != *word) {
		*word = cur;
		return -EAGAIN;
	}
	return 1;
}

/**
 * tofutex_owner_running() - is the owner on a CPU, as far as a spinner can
 * tell?
 * @owner: the owner task (reference held)
 *
 * Also the spin of rwlock.c's top waiter on a writer.
 *
 * Return: true when it runs; a preempted vCPU does not.
 */
bool tofutex_owner_running(struct task_struct *owner)
{
	return READ_ONCE(owner->on_cpu) && !vcpu_is_preempted(task_cpu(owner));
}

/* Why a spin on the owner ended. */
enum tofutex_spin_end {
	TOFUTEX_SPIN_WORD_CHANGED,
	TOFUTEX_SPIN_GIVE_UP,
};

/**
 * tofutex_spin_on_owner() - spin while the owner runs and keeps the word
 * @lk:    the LOCK call
 * @owner: the owner task (reference held)
 * @word:  in: the word naming @owner; out: the value that ended the spin
 * @end:   absolute end of the spin budget (ns, monotonic)
 *
 * Runs preemptible and holds no lock, so reading the word may fault.
 *
 * Return: TOFUTEX_SPIN_WORD_CHANGED when the word changed, to be looked at
 * again; TOFUTEX_SPIN_GIVE_UP when the owner stopped running, the budget
 * ran out, or the caller must reschedule or handle a signal; -EFAULT,
 * -EINTR.
 */
static int tofutex_spin_on_owner(struct tofutex_locker *lk,
				 struct task_struct *owner, u32 *word, u64 end)
{
	u32 seen = *word;
	int ret;

	for (;;) {
		ret = tofutex_word_read_until(lk->q.uaddr, word, &lk->q.deadline);
		if (ret)
			return ret;
		if (*word != seen)
			return TOFUTEX_SPIN_WORD_CHANGED;
		if (!tofutex_owner_running(owner) || need_resched() ||
		    signal_pending(current) || ktime_get_ns() >= end)
			return TOFUTEX_SPIN_GIVE_UP;
		cpu_relax();
	}
}

/**
 * tofutex_take_from_dead() - take over the word from a dead owner
 * @lk:   the LOCK call
 * @word: in: the value naming the dead owner; out: the value found
 *
 * The cmpxchg from exactly @word is the re-check: if the word changed
 * since the owner was judged dead, nothing is taken.
 *
 * Return: 1 when taken, 0 when the word changed, -EFAULT.
 */
static int tofutex_take_from_dead(struct tofutex_locker *lk, u32 *word)
{
	u32 cur;
	int ret;

	ret = tofutex_word_cmpxchg_until(lk->q.uaddr, &cur, *word,
					 lk->waiter.vpid | TOFUTEX_OWNER_DIED,
					 &lk->q.deadline);
	if (ret)
		return ret;
	if (cur != *word) {
		*word = cur;
		return 0;
	}
	return 1;
}

/**
 * tofutex_starving() - should the top waiter ask for a hand-off?
 * @lk: the LOCK call, whose word is held by another live task
 *
 * It should once an unlock has released the word and woken it and a thief
 * took the word before it could (the caller is here, so it lost), or once
 * it has been top waiter for handoff_ns whatever happened.
 *
 * Return: true when the next unlock is to hand the word over.
 */
static bool tofutex_starving(struct tofutex_locker *lk)
{
	struct tofutex_state *state = lk->q.state;
	bool starving;

	spin_lock(&state->lock);
	starving = (READ_ONCE(handoff_lost) && lk->waiter.woken) ||
		   ktime_get_ns() - lk->waiter.top_since >=
		   READ_ONCE(handoff_ns.val);
	if (starving)
		state->handoff = true;
	spin_unlock(&state->lock);
	return starving;
}

/* Did the deadline pass? */
static bool tofutex_expired(struct tofutex_locker *lk)
{
	return tofutex_deadline_passed(&lk->q.deadline);
}

/**
 * tofutex_sleep_until() - sleep until woken, the deadline, or @max_ns
 * @lk:     the LOCK call
 * @max_ns: longest sleep in ns, 0 for up to the deadline
 *
 * The caller has set its task state; this returns with it running.
 */
static void tofutex_sleep_until(struct tofutex_locker *lk, u64 max_ns)
{
	if (max_ns)
		tofutex_schedule_poll(&lk->q.deadline, max_ns);
	else
		tofutex_schedule_until(&lk->q.deadline);
}

/* Why a sleep must end now rather than begin: a signal or the deadline. */
static int tofutex_sleep_interrupted(struct tofutex_locker *lk)
{
	return tofutex_deadline_interrupted(&lk->q.deadline);
}

/* Join the queue, under state->lock (queue.c). */
static void tofutex_join(void *arg)
{
	struct tofutex_locker *lk = arg;
	struct tofutex_state *state = lk->q.state;

	lk->waiter.task = current;
	if (list_empty(&state->waiters))
		lk->waiter.top_since = ktime_get_ns();
	list_add_tail(&lk->waiter.node, &state->waiters);
}

/* Is the LOCK call @arg the top waiter? For tofutex_queue_wait_for_top(). */
static bool tofutex_is_top(void *arg)
{
	struct tofutex_locker *lk = arg;
	struct tofutex_state *state = lk->q.state;
	bool top;

	spin_lock(&state->lock);
	top = list_first_entry(&state->waiters, struct tofutex_waiter, node) ==
	      &lk->waiter;
	spin_unlock(&state->lock);
	return top;
}

/**
 * tofutex_block() - set WAITERS and sleep until an unlock wakes the caller
 * @lk:    the LOCK call
 * @owner: the owner named by @word (reference held)
 * @word:  the word as last read, naming a live owner
 *
 * Wake-up ordering against TOFUTEX_IOC_UNLOCK:
 *
 *   top waiter                          owner
 *
 *   set_current_state(INTERRUPTIBLE)
 *   cmpxchg(word, TID, TID|WAITERS) A   cmpxchg(word, TID, 0) in user space B
 *   schedule()                          fails if A came first: UNLOCK ioctl
 *                                       state found (the waiter holds a use
 *                                       from before A), under state->lock:
 *                                       word released or handed off, then
 *                                       wake_up_process(top waiter)
 *
 * A and B are atomic on one word, so one comes first. If B does, A fails
 * and the waiter looks at the word again instead of sleeping. If A does,
 * the owner must enter UNLOCK, and its wake-up either finds the waiter
 * before schedule() - the task state set before A makes schedule() return
 * at once - or asleep. The task state is set before A because the wake-up
 * may come right after it. A is done even when WAITERS is already set, as
 * a compare: an UNLOCK that changed the word after the caller last read
 * it may have issued its wake-up before the task state was set. A fault
 * on A is handled with the task running.
 *
 * The sleep is bounded by owner_check_ns so that a dead owner is noticed,
 * unless the caller asked for TOFUTEX_LOCK_NO_OWNER_POLL (a non-robust
 * mutex, whose waiters wait for an unlock only); an owner that has
 * already begun to exit is noticed before sleeping.
 *
 * Return: 0 to look at the word again, -ERESTARTSYS, -ETIMEDOUT, -EFAULT.
 */
static int tofutex_block(struct tofutex_locker *lk,
			 struct task_struct *owner, u32 word)
{
	u32 cur;
	int ret;

	set_current_state(TASK_INTERRUPTIBLE);
	/* Also when WAITERS is set already: A is then the re-check. */
	ret = tofutex_word_cmpxchg_inatomic(lk->q.uaddr, &cur, word,
					    word | TOFUTEX_WAITERS);
	if (ret || cur != word) {
		__set_current_state(TASK_RUNNING);
		return ret ? tofutex_word_fault_in_until(lk->q.uaddr, true,
							 &lk->q.deadline) : 0;
	}
	tofutex_owner_seen(lk->q.state, word, owner);
	ret = tofutex_sleep_interrupted(lk);
	if (ret || (READ_ONCE(owner->flags) & PF_EXITING)) {
		__set_current_state(TASK_RUNNING);
		return ret;
	}
	tofutex_count(lk->q.table, TOFUTEX_CNT_SLEEPS);
	lk->q.sleeps++;
	tofutex_sleep_until(lk, lk->no_owner_poll ? 0 :
				READ_ONCE(owner_check_ns.val));
	return 0;
}

/**
 * tofutex_wait_on_owner() - spin on a running owner, else block
 * @lk:    the LOCK call
 * @owner: the live owner (reference held)
 * @word:  the word naming @owner
 *
 * The spin budget covers one owner's hold of the lock: a new owner, after
 * a steal, gets a new budget, and after the budget is spent the caller
 * sleeps before it spins again. A starving top waiter first sets WAITERS,
 * so that the owner's unlock enters the kernel and hands the lock over;
 * its spin then ends when the word changes to the caller's TID.
 *
 * Return: 0 to look at the word again, or a negative error.
 */
static int tofutex_wait_on_owner(struct tofutex_locker *lk,
				 struct task_struct *owner, u32 word)
{
	u32 cur;
	int ret;

	if (tofutex_starving(lk) && !(word & TOFUTEX_WAITERS)) {
		ret = tofutex_word_cmpxchg_until(lk->q.uaddr, &cur, word,
						 word | TOFUTEX_WAITERS,
						 &lk->q.deadline);
		if (ret || cur != word)
			return ret;
		word |= TOFUTEX_WAITERS;
	}
	if (tofutex_owner_running(owner)) {
		tofutex_count(lk->q.table, TOFUTEX_CNT_SPINS);
		ret = tofutex_spin_on_owner(lk, owner, &word,
					    ktime_get_ns() +
					    READ_ONCE(spin_ns.val));
		if (ret != TOFUTEX_SPIN_GIVE_UP)
			return ret;
	}
	return tofutex_block(lk, owner, word);
}

/**
 * tofutex_compete_once() - one pass of the top waiter: take, spin or sleep
 * @lk:   the LOCK call
 * @word: the word as just read, not the caller's TID
 * @how:  out: TOFUTEX_STATUS_* when the lock is taken
 *
 * Return: 1 when the caller owns the lock, 0 to look at the word again,
 * else a negative error (-EPERM: the owner is another process's task).
 */
static int tofutex_compete_once(struct tofutex_locker *lk, u32 word,
				u32 *how)
{
	struct task_struct *owner;
	int ret;

	ret = tofutex_try_take(lk->q.uaddr, lk->waiter.vpid, 0, &word,
			       &lk->q.deadline);
	if (ret == -EAGAIN)
		return 0;
	if (ret > 0)
		*how = tofutex_taken_how(word, lk->q.sleeps ?
					 TOFUTEX_STATUS_WOKEN :
					 TOFUTEX_STATUS_SPUN);
	if (ret)
		return ret;

	owner = tofutex_owner_get(lk->q.state, word);
	if (IS_ERR(owner))
		return PTR_ERR(owner);
	if (!owner) {
		ret = tofutex_take_from_dead(lk, &word);
		if (ret > 0)
			*how = TOFUTEX_STATUS_OWNER_DIED;
		return ret;
	}
	ret = tofutex_wait_on_owner(lk, owner, word);
	put_task_struct(owner);
	return ret;
}

/**
 * tofutex_compete() - one pass of the top waiter's loop (queue.c)
 * @arg:  the LOCK call, a struct tofutex_locker
 * @word: the word as just read
 * @how:  out: TOFUTEX_STATUS_* when the lock is taken
 *
 * Return: 1 when the caller owns the lock, 0 to look at the word again,
 * else a negative error.
 */
static int tofutex_compete(void *arg, u32 word, u32 *how)
{
	struct tofutex_locker *lk = arg;

	/* Only a hand-off writes the caller's TID for it. */
	if (tofutex_tid(word) == lk->waiter.vpid) {
		*how = tofutex_taken_how(word, TOFUTEX_STATUS_HANDOFF);
		return 1;
	}
	tofutex_debug_window(TOFUTEX_WINDOW_COMPETE, lk->q.uaddr, word);
	return tofutex_compete_once(lk, word, how);
}

/**
 * tofutex_given() - was the caller handed the lock? (queue.c)
 * @arg: the LOCK call, a struct tofutex_locker
 * @how: out: the hand-off's status when it was
 *
 * UNLOCK sets @handed_off under state->lock after the cmpxchg that wrote
 * the caller's TID into the word.
 *
 * Return: 1 when the caller owns the word, else 0.
 */
static int tofutex_given(void *arg, u32 *how)
{
	struct tofutex_locker *lk = arg;
	u32 handed = READ_ONCE(lk->waiter.handed_off);

	if (!handed)
		return 0;
	*how = handed;
	return 1;
}

/**
 * tofutex_leave() - leave the queue, promoting the next waiter
 * @arg:  the LOCK call, a struct tofutex_locker
 * @ret:  the call's result (unused)
 * @wake: out: the next waiter, now top waiter, or NULL
 *
 * Under state->lock (queue.c).
 */
static void tofutex_leave(void *arg, int ret, struct task_struct **wake)
{
	struct tofutex_locker *lk = arg;
	struct tofutex_state *state = lk->q.state;
	struct tofutex_waiter *next;
	bool was_top;

	*wake = NULL;
	was_top = list_first_entry(&state->waiters, struct tofutex_waiter,
				   node) == &lk->waiter;
	list_del(&lk->waiter.node);
	if (was_top) {
		state->handoff = false;
		next = list_first_entry_or_null(&state->waiters,
						struct tofutex_waiter, node);
		if (next) {
			next->top_since = ktime_get_ns();
			*wake = get_task_struct(next->task);
		}
	}
}

/* Took the word: keep WAITERS for moved WAIT waiters (requeue.c). */
static void tofutex_taken(void *arg)
{
	struct tofutex_locker *lk = arg;

	tofutex_requeue_rearm(lk->q.state, lk->q.uaddr);
}

/* LOCK's slow path: queue.c's, shared with RDLOCK and WRLOCK. */
static const struct tofutex_queue_ops tofutex_lock_ops = {
	.kind = TOFUTEX_STATE_LOCK,
	.join = tofutex_join,
	.is_top = tofutex_is_top,
	.given = tofutex_given,
	.compete = tofutex_compete,
	.leave = tofutex_leave,
	.taken = tofutex_taken,
};

/**
 * tofutex_lock() - take a TO lock
 * @table:    the caller's process table
 * @uaddr:    the lock word, checked by tofutex_word_check()
 * @deadline: when the call gives up
 * @flags:    TOFUTEX_LOCK_* of the call (NO_OWNER_POLL is read here)
 * @status:   out: TOFUTEX_STATUS_* and sleep count on success
 *
 * Return: 0 when the caller owns the lock, -EDEADLK when it already did,
 * -EPERM (owned by another process's task), -ETIMEDOUT, -ERESTARTSYS,
 * -EFAULT, -EINVAL (a wait word, or a reader/writer lock: one with a
 * kernel state, or held by readers), -ENOMEM.
 */
static int tofutex_lock(struct tofutex_table *table, u32 __user *uaddr,
			const struct tofutex_deadline *deadline, u32 flags,
			u32 *status)
{
	struct tofutex_locker lk = {
		.q.table = table,
		.q.uaddr = uaddr,
		.q.deadline = *deadline,
		.q.op = TOFUTEX_OP_LOCK,
		.waiter.vpid = task_pid_vnr(current),
		.no_owner_poll = flags & TOFUTEX_LOCK_NO_OWNER_POLL,
	};
	u32 word, how = TOFUTEX_STATUS_STOLEN;
	int ret;

	ret = tofutex_word_read_until(uaddr, &word, deadline);
	/* A sleeper may rely on WAITERS: a thief keeps it. */
	if (!ret)
		ret = tofutex_try_take(uaddr, lk.waiter.vpid, TOFUTEX_WAITERS,
				       &word, deadline);
	if (ret == -EDEADLK)
		ret = tofutex_owner_take_reused(table, uaddr, TOFUTEX_STATE_LOCK,
						&word, word | TOFUTEX_OWNER_DIED,
						deadline);
	if (ret > 0) {
		how = tofutex_taken_how(word, how);
		ret = 0;
	} else if (ret == 0 || ret == -EAGAIN) {
		ret = tofutex_expired(&lk) ? -ETIMEDOUT :
			tofutex_queue_lock(&tofutex_lock_ops, &lk.q, &lk, &how);
	}

	tofutex_lock_result(table, uaddr, TOFUTEX_OP_LOCK, ret, how,
			    lk.q.sleeps, lk.q.since, status);
	return ret;
}

/**
 * tofutex_ioc_lock() - TOFUTEX_IOC_LOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_lock
 *
 * The argument and the status as lockarg.c says.
 *
 * Return: 0 or a negative error, see tofutex_lock().
 */
long tofutex_ioc_lock(struct tofutex_table *table,
		      struct tofutex_lock __user *argp)
{
	struct tofutex_deadline deadline;
	u32 __user *uaddr;
	u32 flags, status = 0;
	int ret;

	ret = tofutex_lock_arg_get(argp, TOFUTEX_LOCK_FLAGS, &uaddr, &deadline,
				   &flags);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_LOCK_CALLS);
	ret = tofutex_lock(table, uaddr, &deadline, flags, &status);
	if (!ret)
		tofutex_lock_arg_put(argp, status);
	return ret;
}
