// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - throughput-optimised reader/writer locks: TOFUTEX_IOC_RDLOCK
 * and TOFUTEX_IOC_WRLOCK. The release side, TOFUTEX_IOC_RWUNLOCK, and the
 * grant of the word to queued readers are rwunlock.c; the withdrawal of a
 * call that leaves without the word is rwwithdraw.c; the queue and the
 * call they use are rwlock.h.
 *
 * The word (uapi/tofutex.h) holds a writer's TID, or RW_SHARED and a
 * reader count, plus WAITERS and RW_HANDOFF. User space takes and releases
 * it with cmpxchg and calls in here only under contention.
 *
 * Lifetimes and locking
 * ---------------------
 * A word's kernel state (table.c, kind TOFUTEX_STATE_RWLOCK) exists while
 * a task is inside one of these ioctls on it. Every task in RDLOCK or
 * WRLOCK queues a struct tofutex_rw_waiter, on its stack, on
 * state->waiters in arrival order, and leaves before the ioctl returns;
 * a struct tofutex_rw_call lives on the stack of one call. The queue's
 * locking rules are in rwlock.h. The word is read and written
 * under state->lock only with page faults disabled; on a fault the lock is
 * dropped, the page faulted in (uaccess.c) and the pass done again. No
 * other lock is taken under state->lock.
 *
 * The top waiter
 * --------------
 * As for TO locks (lock.c), only the top waiter competes: the first
 * waiter not yet given the lock (rwlock.h). The others sleep until they
 * become top waiter or are given the lock. The top waiter
 *
 * - on a writer-owned word, spins while the writer runs on a CPU, for at
 *   most spin_ns per writer, and else sets WAITERS and sleeps, looking at
 *   the writer every owner_check_ns: the word of a writer that exited (a
 *   TID that names no thread, or an exiting one) the caller takes over in
 *   one cmpxchg, as its writer or its one reader, and reports
 *   TOFUTEX_STATUS_OWNER_DIED (a word freed first could be taken by a
 *   thief that would not be told); a TID of
 *   another process's thread fails with -EPERM, as for TO locks. The
 *   writer is remembered across TID reuse as a TO lock's owner is
 *   (owner.c, one record per state): the thread given a dead writer's
 *   TID takes the word over with RDLOCK or WRLOCK, and its RWUNLOCK fails
 *   with -EPERM (rwunlock.c);
 * - as a writer on a reader-owned word, spins until the readers are gone,
 *   for at most spin_ns in all between two sleeps, the price of a sleep
 *   and wake-up (lock.c explains the figure): readers that keep moving
 *   the count do not extend it. Readers cannot be watched as a writer
 *   can: the count says how many, not who;
 * - as a reader on a free or reader-owned word, takes it for itself and
 *   for every queued reader in one cmpxchg, and wakes them: queued readers
 *   enter together.
 *
 * Writers do not starve
 * ---------------------
 * Readers join a reader-owned word in user space, so a stream of readers
 * can keep a writer out for ever. A writer starves once it has waited
 * handoff_ns since it queued, or as soon as it queued when it reserves
 * the lock (TOFUTEX_LOCK_RW_RESERVE: a writer-preferring lock, whose new
 * readers must not join once a writer waits; tofutex_rw_waited(); its
 * clock runs also while other waiters are ahead of it). Then:
 *
 * - as top waiter on a reader-owned word, it raises RW_HANDOFF and WAITERS
 *   (tofutex_rw_raise(), which retries at once from the value it found,
 *   since readers move the count under every cmpxchg): new readers queue
 *   in the kernel behind it (only a thread that holds a read lock already
 *   may still join, uapi/tofutex.h);
 * - the RWUNLOCK that frees the word while it is top waiter writes its TID
 *   into the word (it never passes through "free", so nobody can steal
 *   it) and wakes it, judging the starvation by the writer's clock, so a
 *   writer asleep when it began to starve loses nothing by its wake-up;
 *   WAITERS stays in the handed word when others wait behind it, so that
 *   its unlock gives the word on at once (rwunlock.c);
 * - a grant to the queued readers ahead of it leaves it top waiter and
 *   puts RW_HANDOFF and WAITERS into the readers' word at once: readers
 *   arriving meanwhile queue behind it, and the last of the granted
 *   readers hands it the word.
 *
 * So a writer with no other writer ahead of it waits at most handoff_ns
 * plus the read critical sections in progress when it starves, plus the
 * scheduling delays of its own wake-ups; one with k writers ahead adds, per
 * writer ahead, that writer's critical section and one batch of readers.
 * A writer top waiter sleeps at most until it starves, by its own clock,
 * so that it can raise RW_HANDOFF while readers keep the word. The bit in
 * the word is the starving top writer's, whoever raised it, and lives
 * exactly while that writer is queued. When it leaves the queue without
 * the lock (deadline, signal, a fatal one or one whose handler runs
 * before the call is restarted or retried), it withdraws RW_HANDOFF (no
 * other writer touches it, but the last one out of a free word), which
 * would else keep new readers (also tryrdlock in user space) out of a
 * word that only readers hold, unless the first writer still queued
 * starves, whose it is then; WAITERS goes with it when nobody is queued
 * (tofutex_rw_withdraw()), and the top waiter left is woken, since it may
 * sleep relying on the bit. A withdrawal that readers or a page that must
 * be waited for kept from its cmpxchg for TOFUTEX_RW_RETRY_NS leaves the
 * bits to the slow path, where the first reader to block takes the word
 * at once: a bit that no starving writer queued owns has no owner
 * (tofutex_rw_grant_readers()); the last waiter to leave a free word
 * clears such a bit too.
 *
 * A writer in its signal handler so keeps no reservation, where glibc's
 * writer-preferring lock stays reserved for it: the kernel would have to
 * keep, for a word nobody is in a call on, who will be back and until
 * when, and every path that may free the word in user space, or take it
 * for a reader, would have to consult that. Writer preference is a
 * scheduling policy, not exclusion: readers may get in while the handler
 * runs, and the restarted call, which reserves again at once (its clock
 * starts with it), goes first from then on (tofutex-run(1), BUGS).
 *
 * Every sleep has a timer or a waker
 * ----------------------------------
 * - A writer on a writer-owned word: the writer's RWUNLOCK (WAITERS), and
 *   the owner check every owner_check_ns.
 * - A writer on a reader-owned word, not yet starving: its own starve
 *   time; starving, with its RW_HANDOFF and WAITERS in the word: the last
 *   reader's RWUNLOCK, since nobody else clears those bits while it is
 *   the starving top waiter (tofutex_rw_on_readers()); one that could not
 *   put its bits into the word within its budget: TOFUTEX_RW_RETRY_NS.
 * - A reader behind a starving writer: the grant or the hand-off that
 *   makes it top, or that writer's withdrawal.
 * - Whoever clears RW_HANDOFF wakes the top waiter: a grant or a release
 *   the waiter it gives the word or makes top, a withdrawal the top
 *   waiter left (a starving writer raises the bit again).
 * - Any waiter not top: whoever makes it top (rwlock.h).
 * - Every sleep: the caller's deadline and signals.
 *
 * Loops, spins and signals
 * ------------------------
 * Every pass of a loop here re-reads the word and re-checks with the
 * cmpxchg that acts on it. A word that keeps changing (a buggy program)
 * does not keep the caller in the kernel: the top waiter's loop checks for
 * a signal and the deadline and offers the CPU on each pass. A spin on a
 * writer has spin_ns per writer, as LOCK's; the spin on readers and the
 * retries of a cmpxchg that readers keep failing have a budget that only
 * a sleep renews (one that runs out is followed by a sleep), and end on
 * need_resched(), a signal or the deadline. Sleeps are TASK_INTERRUPTIBLE; a
 * signal ends RDLOCK and WRLOCK with -ERESTARTSYS (the deadline is
 * absolute, so a restart does not extend it). A fault-in of the word's
 * page that must wait (userfaultfd) ends the same way, and at the
 * deadline, as LOCK's does (uaccess.c): every user access here that may
 * fault passes c->q.deadline.
 */
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "lock.h"
#include "queue.h"
#include "rwlock.h"
#include "tofutex.h"

/**
 * tofutex_rw_take() - take the word on entry, as a thief
 * @uaddr: the word
 * @vpid:  the caller's TID
 * @write: for writing
 * @word:  in: the value last read; out: the value found
 * @dl:    the caller's deadline, bounding a fault-in
 *
 * WAITERS is kept, since a sleeper may rely on it. A reader does not join
 * a word with RW_HANDOFF: a writer starves, and the reader queues.
 *
 * May sleep (faults in the page).
 *
 * Return: 1 when taken, 0 when held in a way that excludes the caller,
 * TOFUTEX_RW_CHANGED, -EDEADLK (the caller holds it for writing), -EAGAIN
 * (the reader count is full), -EINVAL (tofutex_rw_malformed()), or an
 * error of the fault-in (-EFAULT, -EINTR, -ERESTARTSYS, -ETIMEDOUT).
 */
static int tofutex_rw_take(u32 __user *uaddr, u32 vpid, bool write,
			   u32 *word, const struct tofutex_deadline *dl)
{
	u32 w = *word, newval, cur;
	int ret;

	if (tofutex_rw_malformed(w))
		return -EINVAL;
	if (tofutex_rw_tid(w) == vpid)
		return -EDEADLK;
	if (write && !tofutex_rw_free(w))
		return 0;
	if (!write && (tofutex_rw_tid(w) || (w & TOFUTEX_RW_HANDOFF)))
		return 0;
	if (!write && tofutex_rw_readers(w) == TOFUTEX_RW_COUNT_MASK)
		return -EAGAIN;

	if (write)
		newval = vpid | (w & TOFUTEX_WAITERS);
	else
		newval = TOFUTEX_RW_SHARED | (tofutex_rw_readers(w) + 1) |
			 (w & TOFUTEX_WAITERS);
	ret = tofutex_word_cmpxchg_until(uaddr, &cur, w, newval, dl);
	if (ret)
		return ret;
	*word = cur;
	return cur == w ? 1 : TOFUTEX_RW_CHANGED;
}

/* Has the lock been given to the caller? Read without state->lock. */
static bool tofutex_rw_granted(struct tofutex_rw_call *c)
{
	/* Pairs with the granter's store: the word it wrote is seen too. */
	return smp_load_acquire(&c->waiter.granted);
}

/* Why a sleep must end now rather than begin: a signal or the deadline. */
static int tofutex_rw_interrupted(struct tofutex_rw_call *c)
{
	return tofutex_deadline_interrupted(&c->q.deadline);
}

/* Does the caller starve (rwlock.h)? */
static bool tofutex_rw_starving(struct tofutex_rw_call *c)
{
	return tofutex_rw_waited(&c->waiter, ktime_get_ns());
}

/* What tofutex_rw_mark() found: sleep, or sleep TOFUTEX_RW_RETRY_NS. */
#define TOFUTEX_RW_MARKED	1
#define TOFUTEX_RW_UNMARKED	2

/**
 * tofutex_rw_mark() - put WAITERS into the word before a sleep
 * @c:         the call, with the task state set
 * @on_writer: @word names a writer
 * @word:      in: the word as last read; out: with WAITERS, when marked
 *
 * On a writer-owned word the cmpxchg doubles as the re-check: the word
 * must still be exactly @word (done also when WAITERS is set already).
 * On a reader-owned word only the count and WAITERS may have changed:
 * readers that join or leave move the count and keep WAITERS, and the
 * last one out must then call RWUNLOCK, which wakes the top waiter. So a
 * count that moved under the cmpxchg is no reason to look again: the
 * cmpxchg is retried from the value it found, for at most spin_ns, the
 * deadline or a signal; a caller that could not mark the word by then
 * sleeps TOFUTEX_RW_RETRY_NS unwoken, else readers that keep coming
 * would keep it from ever sleeping. Any other change (RW_HANDOFF raised
 * or withdrawn, the word freed or taken by a writer) is looked at again.
 *
 * Return: TOFUTEX_RW_MARKED, TOFUTEX_RW_UNMARKED, 0 to look at the word
 * again, or -EFAULT (page faults are disabled).
 */
static int tofutex_rw_mark(struct tofutex_rw_call *c, bool on_writer,
			   u32 *word)
{
	const u32 moves = TOFUTEX_RW_COUNT_MASK | TOFUTEX_WAITERS;
	u64 end = 0;
	u32 cur;
	int ret;

	for (;;) {
		ret = tofutex_word_cmpxchg_inatomic(c->q.uaddr, &cur, *word,
						    *word | TOFUTEX_WAITERS);
		if (ret)
			return ret;
		if (cur == *word) {
			*word |= TOFUTEX_WAITERS;
			return TOFUTEX_RW_MARKED;
		}
		if (on_writer || !tofutex_rw_readers(cur) ||
		    ((cur ^ *word) & ~moves))
			return 0;
		*word = cur;
		if (cur & TOFUTEX_WAITERS)
			return TOFUTEX_RW_MARKED;
		if (!end)
			end = ktime_get_ns() + tofutex_spin_ns();
		else if (ktime_get_ns() >= end || need_resched() ||
			 signal_pending(current) ||
			 tofutex_deadline_passed(&c->q.deadline))
			return TOFUTEX_RW_UNMARKED;
	}
}

/**
 * tofutex_rw_block() - set WAITERS and sleep until woken
 * @c:      the call
 * @owner:  the writer named by @word (reference held), or NULL on a
 *          reader-owned word
 * @word:   the word as last read
 * @max_ns: longest sleep, 0 for up to the deadline
 *
 * The ordering against RWUNLOCK is lock.c's tofutex_block(): the task
 * state is set before the cmpxchg that sets WAITERS (tofutex_rw_mark()),
 * so a release and wake-up after it makes schedule() return at once; a
 * release before it makes it fail. A grant is looked for after the task
 * state is set, for the same reason. A sleep ends the caller's spin
 * round: its next spin has a budget again.
 *
 * Return: 0 to look at the word again, -ERESTARTSYS, -ETIMEDOUT, -EFAULT,
 * -EINTR.
 */
static int tofutex_rw_block(struct tofutex_rw_call *c,
			    struct task_struct *owner, u32 word, u64 max_ns)
{
	int ret;

	set_current_state(TASK_INTERRUPTIBLE);
	if (tofutex_rw_granted(c)) {
		__set_current_state(TASK_RUNNING);
		return 0;
	}
	ret = tofutex_rw_mark(c, !!owner, &word);
	if (ret <= 0) {
		__set_current_state(TASK_RUNNING);
		return ret ? tofutex_word_fault_in_until(c->q.uaddr, true,
							 &c->q.deadline) : 0;
	}
	if (ret == TOFUTEX_RW_UNMARKED)
		max_ns = max_ns ? min_t(u64, max_ns, TOFUTEX_RW_RETRY_NS) :
			 TOFUTEX_RW_RETRY_NS;
	if (owner)
		tofutex_owner_seen(c->q.state, word, owner);
	ret = tofutex_rw_interrupted(c);
	if (ret || (owner && (READ_ONCE(owner->flags) & PF_EXITING))) {
		__set_current_state(TASK_RUNNING);
		return ret;
	}
	tofutex_count(c->q.table, TOFUTEX_CNT_SLEEPS);
	c->q.sleeps++;
	c->spin_end = 0;
	if (max_ns)
		tofutex_schedule_poll(&c->q.deadline, max_ns);
	else
		tofutex_schedule_until(&c->q.deadline);
	return 0;
}

/**
 * tofutex_rw_spin() - spin while the writer runs or the readers move
 * @c:     the call
 * @owner: the writer (reference held), or NULL to watch the reader count
 * @word:  in: the word as last read; out: the value that ended the spin
 *
 * On a writer: until the word changes, for at most spin_ns, as LOCK spins
 * on an owner (per writer). On readers: until they are gone, for at most
 * spin_ns from the first spin after the caller's last sleep
 * (@c->spin_end): readers that keep moving the count do not extend it,
 * nor does the outer loop coming back here; a writer that is not yet
 * starving stops when it starts to, whatever RW_HANDOFF the word shows,
 * to raise its own. Every spin ends on need_resched(), a signal or the
 * caller's deadline. Runs preemptible and holds no lock.
 *
 * Return: 0 when the word is to be looked at again, 1 when the caller
 * should sleep, or an error of the fault-in (-EFAULT, -EINTR,
 * -ERESTARTSYS, -ETIMEDOUT).
 */
static int tofutex_rw_spin(struct tofutex_rw_call *c,
			   struct task_struct *owner, u32 *word)
{
	u64 now = ktime_get_ns(), starve_at = U64_MAX, end;
	u32 seen = *word;
	int ret;

	if (owner) {
		end = now + tofutex_spin_ns();
	} else {
		if (!c->spin_end)
			c->spin_end = now + tofutex_spin_ns();
		end = c->spin_end;
		/* Not yet starving: stop when it starts to, to raise its bits. */
		if (!tofutex_rw_waited(&c->waiter, now))
			starve_at = tofutex_rw_starve_at(&c->waiter);
	}
	tofutex_count(c->q.table, TOFUTEX_CNT_SPINS);
	for (;;) {
		ret = tofutex_word_read_until(c->q.uaddr, word, &c->q.deadline);
		if (ret)
			return ret;
		now = ktime_get_ns();
		if (*word != seen) {
			if (owner || !tofutex_rw_readers(*word))
				return 0;
			seen = *word;
		}
		if (owner && !tofutex_owner_running(owner))
			return 1;
		if (now >= starve_at)
			return 0;
		if (now >= end || need_resched() || signal_pending(current) ||
		    tofutex_deadline_passed(&c->q.deadline))
			return 1;
		cpu_relax();
	}
}

/**
 * tofutex_rw_on_writer() - wait on a writer-owned word
 * @c:    the call, whose caller is top waiter
 * @word: the word, naming a writer that is not the caller
 * @how:  out: TOFUTEX_STATUS_OWNER_DIED when taken over from a dead writer
 *
 * Return: 1 when the caller took the word over from a dead writer, 0 to
 * look at the word again, or a negative error (-EPERM: the writer is
 * another process's thread).
 */
static int tofutex_rw_on_writer(struct tofutex_rw_call *c, u32 word,
				u32 *how)
{
	struct task_struct *owner;
	u32 cur;
	int ret;

	owner = tofutex_owner_get(c->q.state, word);
	if (IS_ERR(owner))
		return PTR_ERR(owner);
	if (!owner) {
		/*
		 * The exact value judged dead, or nothing; taken for the
		 * caller in the same cmpxchg, as LOCK takes a dead owner's
		 * word: a word freed first could be taken by anyone, who
		 * would not be told of the death.
		 */
		tofutex_debug_window(TOFUTEX_WINDOW_OWNER_DEAD, c->q.uaddr,
				     word);
		ret = tofutex_owner_take(c->q.state, &word,
					 c->waiter.write ? c->waiter.vpid :
					 TOFUTEX_RW_SHARED | 1, false,
					 &c->q.deadline);
		if (ret == 1)
			*how = TOFUTEX_STATUS_OWNER_DIED;
		return ret == -EAGAIN ? 0 : ret;
	}
	if (tofutex_rw_starving(c) && !(word & TOFUTEX_WAITERS)) {
		ret = tofutex_word_cmpxchg_until(c->q.uaddr, &cur, word,
						 word | TOFUTEX_WAITERS,
						 &c->q.deadline);
		if (ret || cur != word)
			goto out;
		word |= TOFUTEX_WAITERS;
	}
	ret = 1;
	if (tofutex_owner_running(owner))
		ret = tofutex_rw_spin(c, owner, &word);
	if (ret == 1)
		ret = tofutex_rw_block(c, owner, word, tofutex_owner_check_ns());
out:
	put_task_struct(owner);
	return ret;
}

/**
 * tofutex_rw_raise() - set RW_HANDOFF and WAITERS on a reader-owned word
 * @c:    the call, a starving writer top waiter
 * @word: in: the word as last read; out: as found or written
 *
 * Readers that come and go change the count between any read of the word
 * and a cmpxchg on it; a single attempt from a value read earlier can
 * fail for as long as readers keep coming. So a failed cmpxchg is retried
 * at once from the value it found, while the word stays reader-owned,
 * within the caller's spin budget (@c->spin_end, shared with its spin)
 * and until it must reschedule or has a signal.
 *
 * Return: 0, or an error of the fault-in (-EFAULT, -EINTR, -ERESTARTSYS,
 * -ETIMEDOUT).
 */
static int tofutex_rw_raise(struct tofutex_rw_call *c, u32 *word)
{
	const u32 bits = TOFUTEX_RW_HANDOFF | TOFUTEX_WAITERS;
	bool fresh = false;
	u32 cur;
	int ret;

	if (!c->spin_end)
		c->spin_end = ktime_get_ns() + tofutex_spin_ns();

	while (tofutex_rw_readers(*word) && (*word & bits) != bits) {
		ret = tofutex_word_cmpxchg_until(c->q.uaddr, &cur, *word,
						 *word | bits, &c->q.deadline);
		if (ret)
			return ret;
		if (cur == *word) {
			*word |= bits;
			break;
		}
		*word = cur;
		/* One try from the value just found, at least. */
		if (fresh && (need_resched() || signal_pending(current) ||
			      ktime_get_ns() >= c->spin_end ||
			      tofutex_deadline_passed(&c->q.deadline)))
			break;
		fresh = true;
	}
	return 0;
}

/**
 * tofutex_rw_on_readers() - a writer top waiter on a reader-owned word
 * @c:    the call
 * @word: the word, reader-owned
 *
 * A starving writer raises RW_HANDOFF and WAITERS first, and then sleeps
 * until the last reader's RWUNLOCK gives it the word: nobody else clears
 * those bits while it is the starving top waiter (a withdrawal leaves
 * them to it, a grant keeps them), so that release is its waker, and it
 * does not poll. Before it starves it sleeps at most until it does, by
 * its own clock, whatever the word says: an RW_HANDOFF that another
 * writer raised may be withdrawn without a wake-up.
 *
 * Return: 0 to look at the word again, or a negative error.
 */
static int tofutex_rw_on_readers(struct tofutex_rw_call *c, u32 word)
{
	const u32 bits = TOFUTEX_RW_HANDOFF | TOFUTEX_WAITERS;
	bool starving = tofutex_rw_starving(c);
	u64 now, at, max_ns = 0;
	int ret;

	if (starving) {
		ret = tofutex_rw_raise(c, &word);
		if (ret || !tofutex_rw_readers(word))
			return ret;
		/* Its budget ran out: reschedule, or sleep a while and retry. */
		if ((word & bits) != bits) {
			if (need_resched() || signal_pending(current))
				return 0;
			max_ns = TOFUTEX_RW_RETRY_NS;
		}
	}
	if (!starving || (word & bits) == bits) {
		ret = tofutex_rw_spin(c, NULL, &word);
		if (ret != 1)
			return ret;
	}
	if (!starving) {
		/* One read of the starve time: handoff_ns may change. */
		now = ktime_get_ns();
		at = tofutex_rw_starve_at(&c->waiter);
		if (now >= at)
			return 0;
		max_ns = at - now;
	}
	return tofutex_rw_block(c, NULL, word, max_ns);
}

/**
 * tofutex_rw_take_readers() - a reader top waiter takes a free or
 * reader-owned word for every queued reader
 * @c:    the call
 * @word: the word as last read, not writer-owned
 *
 * Return: 1 when the caller holds the word, 0 to look again,
 * TOFUTEX_QUEUE_NOT_TOP when a reserving writer queued ahead of the
 * caller, -EAGAIN, or an error of the fault-in or the sleep (-EFAULT,
 * -EINTR, -ERESTARTSYS, -ETIMEDOUT).
 */
static int tofutex_rw_take_readers(struct tofutex_rw_call *c, u32 word)
{
	struct tofutex_state *state = c->q.state;
	struct task_struct *top = NULL;
	int ret;

	spin_lock(&state->lock);
	ret = tofutex_word_read_inatomic(c->q.uaddr, &word);
	if (tofutex_rw_first(state) != &c->waiter && !c->waiter.granted)
		ret = TOFUTEX_QUEUE_NOT_TOP;
	else if (!ret && tofutex_rw_tid(word))
		ret = TOFUTEX_RW_CHANGED;
	else if (!ret)
		ret = tofutex_rw_grant_readers(state, c->q.uaddr, word,
					       tofutex_rw_readers(word), &top);
	spin_unlock(&state->lock);
	if (ret == 1)
		tofutex_rw_wake_granted(state);
	tofutex_wake_task(top);
	if (ret == -EFAULT)
		return tofutex_word_fault_in_until(c->q.uaddr, true, &c->q.deadline);
	/* RDLOCK's error for a full count. */
	if (ret == -EOVERFLOW)
		return -EAGAIN;
	return ret == TOFUTEX_RW_CHANGED ? 0 : ret;
}

/**
 * tofutex_rw_compete_once() - one pass of the top waiter
 * @c:    the call
 * @word: the word as just read
 * @how:  out: TOFUTEX_STATUS_* when taken
 *
 * Return: 1 when the caller holds the word, 0 to look again, else a
 * negative error.
 */
static int tofutex_rw_compete_once(struct tofutex_rw_call *c, u32 word,
				   u32 *how)
{
	u32 cur;
	int ret;

	if (tofutex_rw_malformed(word))
		return -EINVAL;
	if (tofutex_rw_tid(word) == c->waiter.vpid)
		return -EDEADLK;
	if (tofutex_rw_tid(word))
		return tofutex_rw_on_writer(c, word, how);
	if (!c->waiter.write) {
		ret = tofutex_rw_take_readers(c, word);
	} else if (tofutex_rw_free(word)) {
		/* The top waiter leaves: WAITERS and RW_HANDOFF go. */
		ret = tofutex_word_cmpxchg_until(c->q.uaddr, &cur, word,
						 c->waiter.vpid, &c->q.deadline);
		if (!ret)
			ret = cur == word;
	} else {
		return tofutex_rw_on_readers(c, word);
	}
	if (ret == 1)
		*how = c->q.sleeps ? TOFUTEX_STATUS_WOKEN : TOFUTEX_STATUS_SPUN;
	return ret;
}

/**
 * tofutex_rw_given() - was the call given the lock? (queue.c)
 * @arg: the call, a struct tofutex_rw_call
 * @how: out: TOFUTEX_STATUS_HANDOFF when it was
 *
 * Return: 1 when the caller holds the word, else 0.
 */
static int tofutex_rw_given(void *arg, u32 *how)
{
	struct tofutex_rw_call *c = arg;

	if (!tofutex_rw_granted(c))
		return 0;
	*how = TOFUTEX_STATUS_HANDOFF;
	return 1;
}

/**
 * tofutex_rw_compete() - one pass of the top waiter's loop (queue.c)
 * @arg:  the call, a struct tofutex_rw_call
 * @word: the word as just read
 * @how:  out: TOFUTEX_STATUS_* when taken
 *
 * Return: 1 when the caller holds the word, 0 to look again, else a
 * negative error.
 */
static int tofutex_rw_compete(void *arg, u32 word, u32 *how)
{
	struct tofutex_rw_call *c = arg;
	int ret = tofutex_rw_given(arg, how);

	if (ret)
		return ret;
	tofutex_debug_window(TOFUTEX_WINDOW_COMPETE, c->q.uaddr, word);
	return tofutex_rw_compete_once(c, word, how);
}

/* Is the call @arg top waiter, or was it given the lock? */
static bool tofutex_rw_is_top(void *arg)
{
	struct tofutex_rw_call *c = arg;
	struct tofutex_state *state = c->q.state;
	bool top;

	spin_lock(&state->lock);
	top = c->waiter.granted || tofutex_rw_first(state) == &c->waiter;
	spin_unlock(&state->lock);
	return top;
}

/**
 * tofutex_rw_join_at() - where a waiter joins the queue
 * @state: the word's state, with state->lock held
 * @me:    the joining waiter
 *
 * At the end, but a reserving writer joins behind the last starving
 * writer queued and ahead of every waiter after it that does not starve
 * yet: the readers not yet given the lock (on a writer-preferring lock a
 * waiting writer goes before readers, also those that blocked before it
 * behind a writer that held the word, as glibc hands a write unlock to a
 * waiting writer), and a writer without TOFUTEX_LOCK_RW_RESERVE whose
 * handoff_ns has not passed (else it would wait that writer's handoff_ns
 * with readers joining meanwhile). No starving writer is ever overtaken,
 * so the bound of "Writers do not starve" holds for every writer: one
 * overtaken while it did not starve yet is overtaken no more once it
 * does. The reserving writer's clock starts when it queues, so it starves
 * at once, and RWUNLOCK hands it the word when it is top. A reader or
 * writer that was top waiter finds itself behind it and waits again.
 *
 * Return: the list entry to add @me in front of.
 */
static struct list_head *tofutex_rw_join_at(struct tofutex_state *state,
					    const struct tofutex_rw_waiter *me)
{
	struct tofutex_rw_waiter *w, *at = NULL;
	u64 now = ktime_get_ns();

	if (!me->reserve)
		return &state->waiters;
	list_for_each_entry(w, &state->waiters, node) {
		if (w->write && tofutex_rw_waited(w, now))
			at = NULL;
		else if (!at && !w->granted)
			at = w;
	}
	return at ? &at->node : &state->waiters;
}

/* Join the queue, under state->lock (queue.c). */
static void tofutex_rw_join(void *arg)
{
	struct tofutex_rw_call *c = arg;
	struct tofutex_state *state = c->q.state;

	c->waiter.task = current;
	c->waiter.since = ktime_get_ns();
	INIT_LIST_HEAD(&c->waiter.wake_node);
	list_add_tail(&c->waiter.node, tofutex_rw_join_at(state, &c->waiter));
}

/**
 * tofutex_rw_leave() - leave the queue, waking the next waiter
 * @arg:  the call, a struct tofutex_rw_call
 * @ret:  the call's result: > 0 holding the word, else why it leaves
 * @wake: out: the waiter that is top now, or NULL
 *
 * Under state->lock (queue.c). Whether the bits in the word are the
 * caller's, for its withdrawal (rwwithdraw.c), is settled here: it left
 * without the word as the starving top writer.
 */
static void tofutex_rw_leave(void *arg, int ret, struct task_struct **wake)
{
	struct tofutex_rw_call *c = arg;
	struct tofutex_state *state = c->q.state;
	struct tofutex_rw_waiter *next;
	bool was_top;

	*wake = NULL;
	was_top = tofutex_rw_first(state) == &c->waiter;
	c->owner = ret <= 0 && c->waiter.write && was_top &&
		   tofutex_rw_waited(&c->waiter, ktime_get_ns());
	list_del(&c->waiter.node);
	/* Given the word and not woken yet: nobody need wake it now. */
	list_del_init(&c->waiter.wake_node);
	if (was_top) {
		next = tofutex_rw_first(state);
		if (next)
			*wake = get_task_struct(next->task);
	}
}

/* RDLOCK's and WRLOCK's slow path: queue.c's, shared with LOCK. */
static const struct tofutex_queue_ops tofutex_rw_ops = {
	.kind = TOFUTEX_STATE_RWLOCK,
	.join = tofutex_rw_join,
	.is_top = tofutex_rw_is_top,
	.given = tofutex_rw_given,
	.compete = tofutex_rw_compete,
	.leave = tofutex_rw_leave,
	.gave_up = tofutex_rw_withdraw,
};

/**
 * tofutex_rw_take_reused() - the caller's own TID is the writer's: take
 * the word over if that TID was a dead writer's
 * @table: the caller's process table
 * @uaddr: the word
 * @write: for writing
 * @word:  in: the word as read; out: as taken or found
 * @dl:    the caller's deadline, bounding a fault-in
 * @how:   out: TOFUTEX_STATUS_OWNER_DIED when taken
 *
 * As LOCK does (owner.c): the caller keeps the word as its writer, or
 * makes it its one reader's; WAITERS stays for those who wait.
 *
 * Return: 1 when taken, -EDEADLK when the write lock is the caller's own,
 * TOFUTEX_RW_CHANGED, or an error of the fault-in.
 */
static int tofutex_rw_take_reused(struct tofutex_table *table,
				  u32 __user *uaddr, bool write, u32 *word,
				  const struct tofutex_deadline *dl, u32 *how)
{
	u32 newval = *word;
	int ret;

	if (!write)
		newval = TOFUTEX_RW_SHARED | 1 | (*word & TOFUTEX_WAITERS);
	ret = tofutex_owner_take_reused(table, uaddr, TOFUTEX_STATE_RWLOCK,
					word, newval, dl);
	if (ret == 1)
		*how = TOFUTEX_STATUS_OWNER_DIED;
	return ret == -EAGAIN ? TOFUTEX_RW_CHANGED : ret;
}

/**
 * tofutex_rw_lock() - take a reader/writer lock
 * @table:    the caller's process table
 * @uaddr:    the word, checked by tofutex_word_check()
 * @write:    for writing
 * @flags:    TOFUTEX_LOCK_RW_RESERVE for a writer that reserves the lock
 * @deadline: when the call gives up
 * @status:   out: TOFUTEX_STATUS_* and sleep count on success
 *
 * A caller whose deadline has passed touches nothing (a writer that
 * polls must not withdraw another's reservation).
 *
 * Return: 0, or -EDEADLK, -EAGAIN, -EPERM, -ETIMEDOUT, -ERESTARTSYS,
 * -EINVAL, -EFAULT, -EINTR, -ENOMEM.
 */
static int tofutex_rw_lock(struct tofutex_table *table, u32 __user *uaddr,
			   bool write, u32 flags,
			   const struct tofutex_deadline *deadline, u32 *status)
{
	struct tofutex_rw_call c = {
		.q.table = table,
		.q.uaddr = uaddr,
		.q.deadline = *deadline,
		.waiter.vpid = task_pid_vnr(current),
		.waiter.write = write,
		.waiter.reserve = !!(flags & TOFUTEX_LOCK_RW_RESERVE),
		.q.op = write ? TOFUTEX_OP_WRLOCK : TOFUTEX_OP_RDLOCK,
	};
	u32 word, how = TOFUTEX_STATUS_STOLEN;
	int ret;

	ret = tofutex_word_read_until(uaddr, &word, deadline);
	if (ret)
		return ret;
	ret = tofutex_rw_take(uaddr, c.waiter.vpid, write, &word, deadline);
	if (ret == -EDEADLK)
		ret = tofutex_rw_take_reused(table, uaddr, write, &word,
					     deadline, &how);
	if (ret == 1)
		ret = 0;
	else if (ret == 0 || ret == TOFUTEX_RW_CHANGED)
		ret = tofutex_deadline_passed(deadline) ? -ETIMEDOUT :
			tofutex_queue_lock(&tofutex_rw_ops, &c.q, &c, &how);

	tofutex_lock_result(table, uaddr, c.q.op, ret, how, c.q.sleeps,
			    c.q.since, status);
	return ret;
}

/**
 * tofutex_ioc_rwlock() - TOFUTEX_IOC_RDLOCK and TOFUTEX_IOC_WRLOCK
 * @table: the caller's process table
 * @argp:  user pointer to struct tofutex_lock
 * @write: WRLOCK
 *
 * The argument and the status as lockarg.c says.
 *
 * Return: 0 or a negative error, see tofutex_rw_lock().
 */
long tofutex_ioc_rwlock(struct tofutex_table *table,
			struct tofutex_lock __user *argp, bool write)
{
	struct tofutex_deadline deadline;
	u32 __user *uaddr;
	u32 flags, status = 0;
	int ret;

	ret = tofutex_lock_arg_get(argp, write ? TOFUTEX_WRLOCK_FLAGS :
					     TOFUTEX_RWLOCK_FLAGS,
				   &uaddr, &deadline, &flags);
	if (ret)
		return ret;

	tofutex_count(table, TOFUTEX_CNT_LOCK_CALLS);
	ret = tofutex_rw_lock(table, uaddr, write, flags, &deadline, &status);
	if (!ret)
		tofutex_lock_arg_put(argp, status);
	return ret;
}
