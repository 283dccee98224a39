// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - who owns a TO lock word, or writes a reader/writer lock
 * word, and whether it is alive: the owner checks of LOCK's top waiter
 * (lock.c), of RDLOCK's and WRLOCK's (rwlock.c), and of the poller among
 * the WAIT waiters moved onto a lock (requeue.c). lock.c, "Owner death", says what
 * counts as dead and why a lock's state remembers its owner's struct pid
 * rather than trusting the TID in the word.
 *
 * The remembered owner
 * --------------------
 * state->owner is the struct pid that the TID state->owner_tid named when
 * a waiter set WAITERS on a word naming it (tofutex_owner_seen()), or
 * first saw that TID with WAITERS set (tofutex_owner_get()). It is used
 * only while the word reads that TID with WAITERS set. That is sound
 * because, while WAITERS is set, the owner cannot release the word in
 * user space, and every path that gives the word a new owner in the
 * kernel forgets the pid under state->lock (tofutex_owner_clear(): UNLOCK's
 * and RWUNLOCK's release or hand-off, a LOCK, RDLOCK or WRLOCK that took
 * the word, a take-over from a dead writer). A pid is recorded only if
 * the word, read again under state->lock, still holds the value its TID
 * came from (tofutex_owner_still()): a read from before such a release
 * would otherwise record, after the release forgot it, an owner that no
 * longer holds the word, and a later thread given its TID would look
 * dead. So a remembered pid is the word's owner still, or the owner that
 * died holding it. A word without WAITERS may have changed hands unseen;
 * its TID is looked up afresh and nothing is remembered. A take from an
 * owner judged dead looks again under state->lock when the record is gone
 * by then (tofutex_owner_still_dead()): the thread given the dead owner's
 * TID may have taken the word over, writing back the value judged.
 *
 * The same record serves TO lock words (LOCK, UNLOCK) and the writer of
 * reader/writer lock words (RDLOCK, WRLOCK, RWUNLOCK): a writer-owned
 * word is a TO lock word (uapi/tofutex.h), and a reader-owned one names
 * no TID a record can match (tofutex_word_reader_held()).
 *
 * Locking and lifetimes
 * ---------------------
 * state->owner and state->owner_tid are read and written under
 * state->lock; the pid is looked up, and its task found, under
 * rcu_read_lock() taken outside state->lock. state->owner holds a
 * reference (get_pid()), so the struct pid cannot be freed, nor its
 * memory reused for another pid, while it is remembered; a pid that is
 * replaced or forgotten is put after state->lock is dropped, and table.c
 * puts the last one when it retires the state. The owner task returned by
 * tofutex_owner_get() carries a reference that the caller puts.
 */
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>

#include "lock.h"
#include "tofutex.h"

/*
 * The owner task of @pid: NULL when it is gone or exiting, ERR_PTR(-EPERM)
 * when it is another process's task, else with a reference taken. Called
 * under rcu_read_lock().
 */
static struct task_struct *tofutex_pid_owner(struct pid *pid)
{
	struct task_struct *p = pid_task(pid, PIDTYPE_PID);

	if (p && !same_thread_group(p, current))
		return ERR_PTR(-EPERM);
	if (!p || (p->flags & PF_EXITING))
		return NULL;
	return get_task_struct(p);
}

/*
 * Under state->lock: does the word still read @word? Read with page
 * faults disabled; a word that cannot be read records nothing.
 */
static bool tofutex_owner_still(struct tofutex_state *state, u32 word)
{
	u32 cur;

	lockdep_assert_held(&state->lock);
	return !tofutex_word_read_inatomic(state->uaddr, &cur) && cur == word;
}

/*
 * Make @pid, found by @tid, the owner @state remembers. Called with
 * state->lock held; returns the struct pid to put after dropping it.
 */
static struct pid *tofutex_owner_record(struct tofutex_state *state,
					u32 tid, struct pid *pid)
{
	struct pid *old = state->owner;

	state->owner_tid = tid;
	if (old == pid)
		return NULL;
	state->owner = get_pid(pid);
	return old;
}

/**
 * tofutex_owner_clear() - forget the owner a lock state remembers
 * @state: the LOCK state, with state->lock held
 *
 * For every path that changes the word's owner in the kernel: UNLOCK's
 * release or hand-off, and a LOCK that took the word.
 *
 * Return: the struct pid to put_pid() after dropping state->lock.
 */
struct pid *tofutex_owner_clear(struct tofutex_state *state)
{
	lockdep_assert_held(&state->lock);
	return tofutex_owner_record(state, 0, NULL);
}

/**
 * tofutex_owner_get() - the live owner task named by a lock word
 * @state: the word's LOCK state, with a use held
 * @word:  the word as just read, naming an owner (TID bits not 0)
 *
 * Only a thread of the caller's own process can own one of its locks. A
 * TID that names no task, or an exiting thread of the process, names a
 * dead owner. A TID that names a task of another process (exiting or not)
 * means that the word is not the process's alone: it is never taken over.
 *
 * While the word has WAITERS set, its TID is looked up once: the struct
 * pid it names then is remembered in @state, and later checks look at
 * that pid's task, not at whatever the TID names by then (see "Owner
 * death" in lock.c), provided the word still reads @word then. Also the
 * poller among requeue.c's moved waiters.
 *
 * Return: the owner with a reference held, NULL when it is dead, or
 * ERR_PTR(-EPERM) for another process's task.
 */
struct task_struct *tofutex_owner_get(struct tofutex_state *state, u32 word)
{
	u32 tid = tofutex_tid(word);
	bool waiters = word & TOFUTEX_WAITERS;
	struct pid *pid, *old = NULL;
	struct task_struct *p;

	rcu_read_lock();
	spin_lock(&state->lock);
	if (waiters && state->owner && state->owner_tid == tid)
		pid = state->owner;
	else
		pid = find_vpid(tid);
	p = tofutex_pid_owner(pid);
	if (waiters && !IS_ERR_OR_NULL(p) && tofutex_owner_still(state, word))
		old = tofutex_owner_record(state, tid, pid);
	spin_unlock(&state->lock);
	rcu_read_unlock();
	put_pid(old);
	return p;
}

/**
 * tofutex_owner_seen() - remember the owner a waiter set WAITERS for
 * @state: the word's LOCK state, with a use held
 * @word:  the word the waiter's cmpxchg replaced with @word | WAITERS
 * @owner: the live thread @word's TID named when it was looked up, after
 *         @word was read (reference held)
 *
 * Nothing is remembered when the word no longer reads @word | WAITERS:
 * its owner released it meanwhile, and that release forgot the owner.
 *
 * Does not sleep: the caller may have set its task state.
 */
void tofutex_owner_seen(struct tofutex_state *state, u32 word,
			struct task_struct *owner)
{
	struct pid *pid = get_task_pid(owner, PIDTYPE_PID), *old;

	if (!pid)
		return;
	spin_lock(&state->lock);
	old = NULL;
	if (tofutex_owner_still(state, word | TOFUTEX_WAITERS))
		old = tofutex_owner_record(state, tofutex_tid(word), pid);
	spin_unlock(&state->lock);
	put_pid(old);
	put_pid(pid);
}

/**
 * tofutex_owner_reused() - does the word name a dead owner whose TID the
 * caller was given?
 * @state: the word's state, with state->lock held
 * @word:  the word as read under state->lock
 *
 * That is: does @state remember, for the caller's own TID in @word, a
 * struct pid other than the caller's? A live thread's TID is unique, so
 * that pid's task is gone: the word names an owner that died holding it,
 * and the caller was given its TID since. For LOCK and RDLOCK/WRLOCK
 * (which take such a word over) and RWUNLOCK (which refuses to release
 * it: the lock is not the caller's).
 *
 * Return: true when it does.
 */
bool tofutex_owner_reused(struct tofutex_state *state, u32 word)
{
	lockdep_assert_held(&state->lock);
	return (word & TOFUTEX_WAITERS) && state->owner &&
	       state->owner_tid == tofutex_tid(word) &&
	       state->owner != task_pid(current);
}

/*
 * One try of tofutex_owner_take(), under state->lock: @reused only from
 * a dead owner whose TID the caller was given.
 */
/*
 * Under state->lock, before a take from an owner judged dead: does the
 * judgement still hold? One made on the remembered pid does while the
 * record stands (a dead pid stays dead). Without the record the TID is
 * looked up again: the thread given a dead owner's TID may have taken the
 * word over meanwhile (tofutex_owner_take_reused()), writing back the very
 * value judged and forgetting the record, and a cmpxchg from that value
 * would then take a word a live thread holds.
 */
static bool tofutex_owner_still_dead(struct tofutex_state *state, u32 word)
{
	u32 tid = tofutex_tid(word);
	struct task_struct *p;
	bool dead;

	lockdep_assert_held(&state->lock);
	if (state->owner && state->owner_tid == tid)
		return true;
	rcu_read_lock();
	p = pid_task(find_vpid(tid), PIDTYPE_PID);
	dead = !p || (same_thread_group(p, current) &&
		      (READ_ONCE(p->flags) & PF_EXITING));
	rcu_read_unlock();
	return dead;
}

static int tofutex_owner_take_once(struct tofutex_state *state, u32 *word,
				   u32 newval, bool reused, struct pid **old)
{
	u32 cur;
	int ret;

	spin_lock(&state->lock);
	if (reused && !tofutex_owner_reused(state, *word)) {
		spin_unlock(&state->lock);
		return -EDEADLK;
	}
	if (!reused && !tofutex_owner_still_dead(state, *word)) {
		spin_unlock(&state->lock);
		return -EAGAIN;
	}
	ret = tofutex_word_cmpxchg_inatomic(state->uaddr, &cur, *word, newval);
	if (!ret && cur == *word) {
		*old = tofutex_owner_clear(state);
		*word = newval;
		ret = 1;
	} else if (!ret) {
		*word = cur;
		ret = -EAGAIN;
	}
	spin_unlock(&state->lock);
	return ret;
}

/**
 * tofutex_owner_take() - take a word from an owner judged dead
 * @state:  the word's state, with a use held
 * @word:   in: the value judged; out: @newval when taken, or the value
 *          found when it changed
 * @newval: the value to write
 * @reused: take it only if the word names a dead owner whose TID the
 *          caller was given (tofutex_owner_reused())
 * @dl:     the caller's deadline, bounding a fault-in
 *
 * The cmpxchg from exactly @word is the re-check, and the remembered
 * owner is forgotten in the same hold of state->lock, so that no waiter
 * judges the word's next owner by it.
 *
 * Return: 1 when taken, -EAGAIN when the word changed, -EDEADLK when
 * @reused and the word is the caller's own, or an error of the fault-in.
 */
int tofutex_owner_take(struct tofutex_state *state, u32 *word, u32 newval,
		       bool reused, const struct tofutex_deadline *dl)
{
	struct pid *old = NULL;
	bool again = false;
	int ret;

	for (;;) {
		ret = tofutex_owner_take_once(state, word, newval, reused,
					      &old);
		if (ret != -EFAULT)
			break;
		ret = again ? tofutex_word_refault_until(state->uaddr, true, dl) :
			      tofutex_word_fault_in_until(state->uaddr, true, dl);
		if (ret)
			break;
		again = true;
	}
	put_pid(old);
	return ret;
}

/**
 * tofutex_owner_take_reused() - LOCK, RDLOCK or WRLOCK found its own TID
 * in the word: take the word over if that TID was a dead owner's
 * @table:  the caller's process table
 * @uaddr:  the lock word
 * @kind:   TOFUTEX_STATE_LOCK or TOFUTEX_STATE_RWLOCK
 * @word:   in: the word as read, naming the caller; out: @newval when
 *          taken, or the value found when it changed
 * @newval: the word the caller holds it with: for LOCK, @word with
 *          OWNER_DIED added; for a reader/writer lock, the caller as
 *          writer or as its one reader; WAITERS kept (others wait)
 * @dl:     the caller's deadline, bounding a fault-in
 *
 * A word without a state, or without WAITERS, tells nothing: it is the
 * caller's own.
 *
 * Return: 1 when taken, -EDEADLK when the word is the caller's own,
 * -EAGAIN when it changed, or an error of the fault-in.
 */
int tofutex_owner_take_reused(struct tofutex_table *table, u32 __user *uaddr,
			      enum tofutex_state_kind kind, u32 *word,
			      u32 newval, const struct tofutex_deadline *dl)
{
	struct tofutex_state *state;
	int ret;

	if (!(*word & TOFUTEX_WAITERS))
		return -EDEADLK;
	state = tofutex_state_get(table, uaddr, kind, false);
	if (IS_ERR_OR_NULL(state))
		return -EDEADLK;
	ret = tofutex_owner_take(state, word, newval, true, dl);
	tofutex_state_put(table, state);
	return ret;
}
