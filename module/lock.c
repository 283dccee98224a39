// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - throughput-optimised (TO) locks: TOFUTEX_IOC_LOCK and
 * TOFUTEX_IOC_UNLOCK.
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
 * spins, and the spinning never takes a lock.
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
 * Stealing can starve the top waiter. Once it has been top waiter for
 * longer than handoff_ns, it sets state->handoff and WAITERS, and the next
 * UNLOCK writes the top waiter's TID into the word instead of 0 (the word
 * never passes through "free", so nobody can steal it) and wakes it, if it
 * is not spinning already. The waiter keeps spinning on a running owner
 * meanwhile: the hand-off then costs no wake-up. Hand-off
 * is the exception, not the rule: forcing it on every contended unlock
 * cost the kernel mutex 11-123 % (shared/seeds/mutex-steal-vs-handoff).
 *
 * Owner death
 * -----------
 * A module cannot hook thread exit with exported symbols, so the top
 * waiter checks the owner itself: on every pass of its loop and at least
 * every owner_check_ns while asleep. A TID that names no live thread of
 * the caller's process (none, exiting, or another process's) is dead; the
 * waiter then takes the word over with a cmpxchg from the exact value it
 * judged, sets OWNER_DIED and reports TOFUTEX_STATUS_OWNER_DIED.
 *
 * Locking and lifetimes
 * ---------------------
 * state->lock protects state->waiters, state->handoff and every waiter's
 * @top_since and @handed_off. A waiter is on the list only while its task
 * is inside LOCK holding a use of the state, so an unlocker that finds it
 * under state->lock may take a reference on its task, to wake it after
 * dropping the lock. User words are touched under
 * state->lock only with page faults disabled; on a fault the lock is
 * dropped and the page faulted in (uaccess.c). The owner's task_struct is
 * looked at only with a reference held, and the word is re-checked after.
 *
 * Moved WAIT waiters
 * ------------------
 * TOFUTEX_IOC_REQUEUE may queue WAIT waiters on a lock's state too
 * (state->requeued, requeue.c). Two hooks serve them: every successful
 * UNLOCK wakes one (tofutex_requeue_release()), and a LOCK that took the
 * word in the top waiter's loop, which writes only its TID, puts WAITERS
 * back while any are queued (tofutex_requeue_rearm()).
 *
 * Sleeping: LOCK sleeps in TASK_INTERRUPTIBLE with a timer; a signal ends
 * it with -ERESTARTSYS, which restarts the ioctl under SA_RESTART (the
 * deadline is absolute, so a restart does not extend it).
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "tofutex.h"

/*
 * Spinning costs a CPU; sleeping costs a block + wake-up round trip. By the
 * ski-rental argument, spinning for as long as that round trip would take
 * is never worse than twice the optimum. A round trip costs a few us on
 * bare metal and about 40 us under QEMU's emulation (measured here), so the
 * default covers both without burning a CPU for long. A time, not a loop
 * count: a loop count means something different on every CPU.
 */
static unsigned long spin_ns = 50 * NSEC_PER_USEC;
module_param(spin_ns, ulong, 0644);
MODULE_PARM_DESC(spin_ns, "Time budget for a top waiter's spin on a running owner, in ns");

/*
 * Prior art: the TP futex series handed off after 5 ms, the rwsem after
 * 4 ms; both bounded starvation without measurable throughput loss.
 */
static unsigned long handoff_ns = 4 * NSEC_PER_MSEC;
module_param(handoff_ns, ulong, 0644);
MODULE_PARM_DESC(handoff_ns, "Top-waiter wait after which the next unlock hands the lock over, in ns");

/*
 * The ABI promises that a waiter gets a dead owner's lock within 100 ms.
 * Checking four times as often keeps that promise even when timers run
 * late under load, at a cost of 40 wake-ups a second for a sleeping top
 * waiter only.
 */
static unsigned long owner_check_ns = 25 * NSEC_PER_MSEC;
module_param(owner_check_ns, ulong, 0644);
MODULE_PARM_DESC(owner_check_ns, "Interval of a sleeping top waiter's owner liveness check, in ns");

/**
 * tofutex_owner_check_ns() - the owner liveness check interval now
 *
 * For the other sleepers that watch an owner (requeue.c).
 *
 * Return: owner_check_ns, in ns.
 */
u64 tofutex_owner_check_ns(void)
{
	return READ_ONCE(owner_check_ns);
}

/**
 * struct tofutex_waiter - a task inside TOFUTEX_IOC_LOCK
 * @node:       entry in state->waiters
 * @task:       the waiting task
 * @vpid:       its TID, as written into the word on a hand-off
 * @top_since:  when it became top waiter (ns, monotonic)
 * @handed_off: an unlocker gave it the lock; it owns the word now
 */
struct tofutex_waiter {
	struct list_head node;
	struct task_struct *task;
	u32 vpid;
	u64 top_since;
	bool handed_off;
};

/**
 * struct tofutex_locker - one LOCK call in progress
 * @table:    the caller's process table
 * @state:    the word's state, with a use held
 * @uaddr:    the lock word
 * @deadline: when the call gives up
 * @waiter:   the caller's queue entry
 * @sleeps:   how many times the caller slept
 */
struct tofutex_locker {
	struct tofutex_table *table;
	struct tofutex_state *state;
	u32 __user *uaddr;
	struct tofutex_deadline deadline;
	struct tofutex_waiter waiter;
	unsigned int sleeps;
};

static u32 tofutex_tid(u32 word)
{
	return word & TOFUTEX_TID_MASK;
}

/**
 * tofutex_wake_task() - wake a task pinned under a lock, after dropping it
 * @task: the task with a reference held, or NULL
 *
 * Waking outside state->lock keeps its hold time short, as futex's wake_q
 * does (wake_q_add() is not exported). The task may have stopped waiting
 * meanwhile; the wake-up is then spurious, which every sleep loop here
 * tolerates by re-checking its condition.
 */
static void tofutex_wake_task(struct task_struct *task)
{
	if (!task)
		return;
	wake_up_process(task);
	put_task_struct(task);
}

/**
 * tofutex_try_take() - take the word if it is free
 * @uaddr: the lock word
 * @vpid:  the caller's TID
 * @keep:  bits of the old word to keep (WAITERS, when somebody else may be
 *         asleep waiting for this lock's unlock)
 * @word:  in: the value last read; out: the value found
 *
 * May sleep (faults in the page).
 *
 * Return: 1 when taken, 0 when owned by another task, -EDEADLK when owned
 * by the caller, -EFAULT.
 */
static int tofutex_try_take(u32 __user *uaddr, u32 vpid, u32 keep, u32 *word)
{
	u32 cur;
	int ret;

	for (;;) {
		if (tofutex_tid(*word) == vpid)
			return -EDEADLK;
		if (tofutex_tid(*word))
			return 0;
		ret = tofutex_word_cmpxchg(uaddr, &cur, *word,
					   vpid | (*word & keep));
		if (ret)
			return ret;
		if (cur == *word)
			return 1;
		*word = cur;
	}
}

/**
 * tofutex_owner_get() - the live owner task named by a TID
 * @tid: TID from the lock word, in the caller's PID namespace
 *
 * Only a thread of the caller's own process can own one of its locks: any
 * other TID, like one of a thread that is exiting, names a dead owner.
 *
 * Return: the owner with a reference held, or NULL when it is dead.
 */
struct task_struct *tofutex_owner_get(u32 tid)
{
	struct task_struct *p;

	rcu_read_lock();
	p = pid_task(find_vpid(tid), PIDTYPE_PID);
	if (p && (!same_thread_group(p, current) || (p->flags & PF_EXITING)))
		p = NULL;
	if (p)
		get_task_struct(p);
	rcu_read_unlock();
	return p;
}

/* Running, as far as a spinner can tell: a preempted vCPU is not. */
static bool tofutex_owner_running(struct task_struct *owner)
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
 * ran out, or the caller must reschedule or handle a signal; -EFAULT.
 */
static int tofutex_spin_on_owner(struct tofutex_locker *lk,
				 struct task_struct *owner, u32 *word, u64 end)
{
	u32 seen = *word;

	for (;;) {
		if (tofutex_word_read(lk->uaddr, word))
			return -EFAULT;
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

	ret = tofutex_word_cmpxchg(lk->uaddr, &cur, *word,
				   lk->waiter.vpid | TOFUTEX_OWNER_DIED);
	if (ret)
		return ret;
	if (cur != *word) {
		*word = cur;
		return 0;
	}
	return 1;
}

/* Has the caller been top waiter long enough to ask for a hand-off? */
static bool tofutex_starving(struct tofutex_locker *lk)
{
	struct tofutex_state *state = lk->state;
	bool starving;

	spin_lock(&state->lock);
	starving = ktime_get_ns() - lk->waiter.top_since >= handoff_ns;
	if (starving)
		state->handoff = true;
	spin_unlock(&state->lock);
	return starving;
}

/* Did the deadline pass? */
static bool tofutex_expired(struct tofutex_locker *lk)
{
	return tofutex_deadline_passed(&lk->deadline);
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
		tofutex_schedule_poll(&lk->deadline, max_ns);
	else
		tofutex_schedule_until(&lk->deadline);
}

/* Why a sleep must end now rather than begin: a signal or the deadline. */
static int tofutex_sleep_interrupted(struct tofutex_locker *lk)
{
	if (signal_pending(current))
		return -ERESTARTSYS;
	if (tofutex_expired(lk))
		return -ETIMEDOUT;
	return 0;
}

static void tofutex_enqueue(struct tofutex_locker *lk)
{
	struct tofutex_state *state = lk->state;

	lk->waiter.task = current;
	spin_lock(&state->lock);
	if (list_empty(&state->waiters))
		lk->waiter.top_since = ktime_get_ns();
	list_add_tail(&lk->waiter.node, &state->waiters);
	spin_unlock(&state->lock);
}

static bool tofutex_is_top(struct tofutex_locker *lk)
{
	struct tofutex_state *state = lk->state;
	bool top;

	spin_lock(&state->lock);
	top = list_first_entry(&state->waiters, struct tofutex_waiter, node) ==
	      &lk->waiter;
	spin_unlock(&state->lock);
	return top;
}

/**
 * tofutex_wait_for_top() - sleep until the caller is the top waiter
 * @lk: the LOCK call
 *
 * The task state is set before the check, and tofutex_dequeue() promotes
 * the next waiter and wakes it under state->lock, so a promotion between
 * the check and schedule() is not lost.
 *
 * Return: 0 when top waiter, -ERESTARTSYS or -ETIMEDOUT.
 */
static int tofutex_wait_for_top(struct tofutex_locker *lk)
{
	int ret;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (tofutex_is_top(lk))
			break;
		ret = tofutex_sleep_interrupted(lk);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			return ret;
		}
		tofutex_sleep_until(lk, 0);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
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
 * The sleep is bounded by owner_check_ns so that a dead owner is noticed;
 * an owner that has already begun to exit is noticed before sleeping.
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
	ret = tofutex_word_cmpxchg_inatomic(lk->uaddr, &cur, word,
					    word | TOFUTEX_WAITERS);
	if (ret || cur != word) {
		__set_current_state(TASK_RUNNING);
		return ret ? tofutex_word_fault_in(lk->uaddr, true) : 0;
	}
	ret = tofutex_sleep_interrupted(lk);
	if (ret || (READ_ONCE(owner->flags) & PF_EXITING)) {
		__set_current_state(TASK_RUNNING);
		return ret;
	}
	tofutex_count(lk->table, TOFUTEX_CNT_SLEEPS);
	lk->sleeps++;
	tofutex_sleep_until(lk, owner_check_ns);
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
		ret = tofutex_word_cmpxchg(lk->uaddr, &cur, word,
					   word | TOFUTEX_WAITERS);
		if (ret || cur != word)
			return ret;
		word |= TOFUTEX_WAITERS;
	}
	if (tofutex_owner_running(owner)) {
		tofutex_count(lk->table, TOFUTEX_CNT_SPINS);
		ret = tofutex_spin_on_owner(lk, owner, &word,
					    ktime_get_ns() + spin_ns);
		if (ret != TOFUTEX_SPIN_GIVE_UP)
			return ret;
	}
	return tofutex_block(lk, owner, word);
}

/**
 * tofutex_compete() - the top waiter's loop: take, spin or sleep
 * @lk:  the LOCK call
 * @how: out: TOFUTEX_STATUS_* when the lock is taken
 *
 * Every decision is re-checked by the cmpxchg that acts on it, so the word
 * is simply read again after each step.
 *
 * Return: 1 when the caller owns the lock, else a negative error.
 */
static int tofutex_compete(struct tofutex_locker *lk, u32 *how)
{
	u32 vpid = lk->waiter.vpid, word;
	struct task_struct *owner;
	int ret;

	for (;;) {
		ret = tofutex_word_read(lk->uaddr, &word);
		if (ret)
			return ret;
		/* Only a hand-off writes the caller's TID for it. */
		if (tofutex_tid(word) == vpid) {
			*how = TOFUTEX_STATUS_HANDOFF;
			return 1;
		}
		ret = tofutex_try_take(lk->uaddr, vpid, 0, &word);
		if (ret) {
			*how = lk->sleeps ? TOFUTEX_STATUS_WOKEN :
					    TOFUTEX_STATUS_SPUN;
			return ret;
		}
		owner = tofutex_owner_get(tofutex_tid(word));
		if (!owner) {
			ret = tofutex_take_from_dead(lk, &word);
			*how = TOFUTEX_STATUS_OWNER_DIED;
			if (ret)
				return ret;
			continue;
		}
		ret = tofutex_wait_on_owner(lk, owner, word);
		put_task_struct(owner);
		if (ret)
			return ret;
	}
}

/**
 * tofutex_dequeue() - leave the queue, promoting the next waiter
 * @lk:  the LOCK call
 * @ret: the result so far
 * @how: the status so far; set to HANDOFF when a hand-off raced with a
 *       signal or the deadline
 *
 * Return: @ret, or 1 when the caller was handed the lock meanwhile: a
 * hand-off is never lost.
 */
static int tofutex_dequeue(struct tofutex_locker *lk, int ret, u32 *how)
{
	struct tofutex_state *state = lk->state;
	struct task_struct *wake = NULL;
	struct tofutex_waiter *next;
	bool was_top;

	spin_lock(&state->lock);
	if (ret < 0 && lk->waiter.handed_off) {
		ret = 1;
		*how = TOFUTEX_STATUS_HANDOFF;
	}
	was_top = list_first_entry(&state->waiters, struct tofutex_waiter,
				   node) == &lk->waiter;
	list_del(&lk->waiter.node);
	if (was_top) {
		state->handoff = false;
		next = list_first_entry_or_null(&state->waiters,
						struct tofutex_waiter, node);
		if (next) {
			next->top_since = ktime_get_ns();
			wake = get_task_struct(next->task);
		}
	}
	spin_unlock(&state->lock);
	tofutex_wake_task(wake);
	return ret;
}

static void tofutex_count_taken(struct tofutex_table *table, u32 how)
{
	switch (how) {
	case TOFUTEX_STATUS_STOLEN:
	case TOFUTEX_STATUS_SPUN:
		tofutex_count(table, TOFUTEX_CNT_STEALS);
		break;
	case TOFUTEX_STATUS_HANDOFF:
		tofutex_count(table, TOFUTEX_CNT_HANDOFFS);
		break;
	case TOFUTEX_STATUS_OWNER_DIED:
		tofutex_count(table, TOFUTEX_CNT_OWNER_DEATHS);
		break;
	}
}

/**
 * tofutex_lock_slow() - queue on the word's state and compete for it
 * @lk:  the LOCK call, with @table, @uaddr, @deadline and @waiter.vpid set
 * @how: out: TOFUTEX_STATUS_* when taken
 *
 * Return: 0 when the caller owns the lock, else a negative error.
 */
static int tofutex_lock_slow(struct tofutex_locker *lk, u32 *how)
{
	int ret;

	lk->state = tofutex_state_get(lk->table, lk->uaddr,
				      TOFUTEX_STATE_LOCK, true);
	if (IS_ERR(lk->state))
		return PTR_ERR(lk->state);

	tofutex_enqueue(lk);
	ret = tofutex_wait_for_top(lk);
	if (!ret)
		ret = tofutex_compete(lk, how);
	ret = tofutex_dequeue(lk, ret, how);
	if (ret > 0)
		tofutex_requeue_rearm(lk->state, lk->uaddr);
	tofutex_state_put(lk->table, lk->state);
	return ret < 0 ? ret : 0;
}

/**
 * tofutex_lock() - take a TO lock
 * @table:    the caller's process table
 * @uaddr:    the lock word, checked by tofutex_word_check()
 * @deadline: when the call gives up
 * @status:   out: TOFUTEX_STATUS_* and sleep count on success
 *
 * Return: 0 when the caller owns the lock, -EDEADLK when it already did,
 * -ETIMEDOUT, -ERESTARTSYS, -EFAULT, -EINVAL (a wait word), -ENOMEM.
 */
static int tofutex_lock(struct tofutex_table *table, u32 __user *uaddr,
			const struct tofutex_deadline *deadline, u32 *status)
{
	struct tofutex_locker lk = {
		.table = table,
		.uaddr = uaddr,
		.deadline = *deadline,
		.waiter.vpid = task_pid_vnr(current),
	};
	u32 word, how = TOFUTEX_STATUS_STOLEN;
	int ret;

	ret = tofutex_word_read(uaddr, &word);
	if (ret)
		return ret;
	/* A sleeper may rely on WAITERS: a thief keeps it. */
	ret = tofutex_try_take(uaddr, lk.waiter.vpid, TOFUTEX_WAITERS, &word);
	if (!ret && tofutex_expired(&lk))
		ret = -ETIMEDOUT;
	else if (!ret)
		ret = tofutex_lock_slow(&lk, &how);
	else if (ret > 0)
		ret = 0;

	if (!ret) {
		tofutex_count_taken(table, how);
		*status = how | (min_t(u32, lk.sleeps, TOFUTEX_STATUS_SLEEPS_MAX)
				 << TOFUTEX_STATUS_SLEEPS_SHIFT);
	} else if (ret == -ETIMEDOUT) {
		tofutex_count(table, TOFUTEX_CNT_TIMEOUTS);
	}
	return ret;
}

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
 * alone.
 *
 * Return: 1 when the top waiter should be woken, 0 when there is nothing
 * to do, -EAGAIN when the word changed under the cmpxchg, -EFAULT.
 */
static int tofutex_release_word(u32 __user *uaddr, u32 vpid, u32 word,
				struct tofutex_waiter *top, bool handoff)
{
	u32 tid = tofutex_tid(word), newval, cur;

	if (tid != vpid && tid)
		return 0;
	if (top && handoff)
		newval = top->vpid;
	else if (tid || !top)
		newval = 0;
	else
		return 1;

	if (tofutex_word_cmpxchg_inatomic(uaddr, &cur, word, newval))
		return -EFAULT;
	if (cur != word)
		return -EAGAIN;
	if (top && handoff)
		top->handed_off = true;
	return top ? 1 : 0;
}

/**
 * tofutex_unlock_queued() - UNLOCK when the word has a kernel state
 * @lk:    table, uaddr and the caller's TID (in @lk->waiter.vpid)
 * @woken: out: 1 when the top waiter was woken
 *
 * The top waiter's task is pinned under state->lock, where it cannot have
 * left the queue, and woken after the lock is dropped.
 *
 * Return: 0, -EAGAIN to retry from the lookup, or -EFAULT.
 */
static int tofutex_unlock_queued(struct tofutex_locker *lk, u32 *woken)
{
	struct tofutex_state *state = lk->state;
	struct task_struct *wake = NULL;
	struct tofutex_waiter *top;
	u32 word;
	int ret;

	spin_lock(&state->lock);
	top = list_first_entry_or_null(&state->waiters, struct tofutex_waiter,
				       node);
	ret = tofutex_word_read_inatomic(lk->uaddr, &word);
	if (!ret)
		ret = tofutex_release_word(lk->uaddr, lk->waiter.vpid, word,
					   top, state->handoff);
	if (ret > 0) {
		wake = get_task_struct(top->task);
		*woken = 1;
		ret = 0;
	}
	spin_unlock(&state->lock);
	tofutex_wake_task(wake);

	if (ret == -EFAULT && !tofutex_word_fault_in(lk->uaddr, true))
		ret = -EAGAIN;
	return ret;
}

/**
 * tofutex_unlock_unqueued() - UNLOCK when the word has no kernel state
 * @lk: table, uaddr and the caller's TID
 *
 * Nobody sleeps on the word, so there is no one to wake, only a word to
 * release: its WAITERS bit is stale (its waiter timed out or was
 * signalled). A waiter that arrives meanwhile changes the word before it
 * sleeps, which fails the cmpxchg and sends the caller back to the lookup.
 *
 * Return: 0, -EAGAIN to retry from the lookup, or -EFAULT.
 */
static int tofutex_unlock_unqueued(struct tofutex_locker *lk)
{
	u32 word;
	int ret;

	ret = tofutex_word_read(lk->uaddr, &word);
	if (ret)
		return ret;
	for (;;) {
		ret = tofutex_release_word(lk->uaddr, lk->waiter.vpid, word,
					   NULL, false);
		if (ret != -EFAULT)
			return ret;
		ret = tofutex_word_fault_in(lk->uaddr, true);
		if (ret)
			return ret;
	}
}

/**
 * tofutex_unlock() - release a TO lock and wake its top waiter
 * @table: the caller's process table
 * @uaddr: the lock word, checked by tofutex_word_check()
 * @woken: out: 1 when a waiter was woken or handed the lock
 *
 * Return: 0, -EFAULT, or -EINVAL when the word is in use as a wait word.
 */
static int tofutex_unlock(struct tofutex_table *table, u32 __user *uaddr,
			  u32 *woken)
{
	struct tofutex_locker lk = {
		.table = table,
		.uaddr = uaddr,
		.waiter.vpid = task_pid_vnr(current),
	};
	int ret;

	*woken = 0;
	do {
		lk.state = tofutex_state_get(table, uaddr, TOFUTEX_STATE_LOCK,
					     false);
		if (IS_ERR(lk.state))
			return PTR_ERR(lk.state);
		if (!lk.state) {
			ret = tofutex_unlock_unqueued(&lk);
			continue;
		}
		ret = tofutex_unlock_queued(&lk, woken);
		tofutex_state_put(table, lk.state);
	} while (ret == -EAGAIN);
	if (!ret)
		*woken |= tofutex_requeue_release(table, uaddr);
	return ret;
}

/**
 * tofutex_ioc_lock() - TOFUTEX_IOC_LOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_lock
 *
 * The status field is written once before locking, so that a lock is
 * never taken for a caller that cannot be told about it.
 *
 * Return: 0 or a negative error, see tofutex_lock().
 */
long tofutex_ioc_lock(struct tofutex_table *table,
		      struct tofutex_lock __user *argp)
{
	struct tofutex_deadline deadline;
	struct tofutex_lock arg;
	u32 __user *uaddr;
	u32 status = 0;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~TOFUTEX_LOCK_FLAGS) || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &uaddr);
	if (!ret)
		ret = tofutex_deadline_init(&deadline,
					    arg.flags & TOFUTEX_LOCK_DEADLINE,
					    arg.flags & TOFUTEX_LOCK_CLOCK_REALTIME,
					    arg.deadline_ns);
	if (ret)
		return ret;
	if (put_user(status, &argp->status))
		return -EFAULT;

	tofutex_count(table, TOFUTEX_CNT_LOCK_CALLS);
	ret = tofutex_lock(table, uaddr, &deadline, &status);
	if (!ret && put_user(status, &argp->status))
		return -EFAULT;
	return ret;
}

/**
 * tofutex_ioc_unlock() - TOFUTEX_IOC_UNLOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_unlock
 *
 * Return: 0 or a negative error, see tofutex_unlock().
 */
long tofutex_ioc_unlock(struct tofutex_table *table,
			struct tofutex_unlock __user *argp)
{
	struct tofutex_unlock arg;
	u32 __user *uaddr;
	u32 woken;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	ret = tofutex_word_check(arg.uaddr, &uaddr);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_UNLOCK_CALLS);
	ret = tofutex_unlock(table, uaddr, &woken);
	if (!ret && put_user(woken, &argp->woken))
		return -EFAULT;
	return ret;
}
