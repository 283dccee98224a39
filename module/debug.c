// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - race windows that the tests can widen, built only with
 * TOFUTEX_DEBUG_WINDOWS (the test harness's module build; never DKMS).
 *
 * Some races of the lock paths need another task to act between two
 * steps a few instructions apart. To show them deterministically, a test
 * names its own process (debug_window_tgid), one window (debug_window_id)
 * and a time (debug_window_ns); then, in that process only, that window
 * busy-waits until the word changes from the value the code just read, or
 * until the time is up. A
 * test thread changes the word, or acts on it, meanwhile. Every other
 * process runs the code unchanged, so a test that fails and leaves the
 * parameters set does not slow the others down.
 *
 * A window may sit under a spinlock (the bucket lock of table.c): it
 * reads the word with page faults disabled, never sleeps, and gives up on
 * a fault. Its time is bounded by the parameter's maximum.
 *
 * Windows (enum tofutex_window, each a tofutex_debug_window() call):
 *   1 TOFUTEX_WINDOW_UNLOCK_UNQUEUED - unlock.c, TOFUTEX_IOC_UNLOCK: after
 *     the lookup found no state for the word, before the word is released;
 *   2 TOFUTEX_WINDOW_COMPETE - lock.c and rwlock.c, the top waiter's
 *     loop: after reading the word, before acting on what it read;
 *   3 TOFUTEX_WINDOW_WAKE_BATCH - waitwake.c, TOFUTEX_IOC_WAKE: after a
 *     batch was woken, before the next one is taken off the queue (the
 *     word is read on entry to the window: WAKE itself does not read it).
 *   4 TOFUTEX_WINDOW_REQUEUE_STEP - requeue_call.c, TOFUTEX_IOC_REQUEUE:
 *     between two steps, no lock held (on the wait word, read on entry);
 *   5 TOFUTEX_WINDOW_REQUEUE_ARM - requeue_call.c, REQUEUE marking the
 *     lock word: after reading it, before its cmpxchg, under both state
 *     locks;
 *   6 TOFUTEX_WINDOW_REQUEUE_RELEASE - requeue.c, an UNLOCK that released
 *     the word, before WAITERS is put back for moved waiters (on the lock
 *     word, read on entry);
 *   7 TOFUTEX_WINDOW_REQUEUE_RESULT - requeue_call.c, REQUEUE done, before
 *     its counts are written back (on the wait word, read on entry);
 *   8 TOFUTEX_WINDOW_SWAP_QUEUED - waitwake.c, SWAP queued on its wait
 *     word, its wakee not yet woken, before its first sleep (on the wait
 *     word, read on entry);
 *   9 TOFUTEX_WINDOW_GIVEN - queue.c, a LOCK, RDLOCK or WRLOCK call
 *     given the word by another task (a hand-off or a grant), before it
 *     leaves the queue (on the word, read on entry);
 *  10 TOFUTEX_WINDOW_RW_WITHDRAW - rwlock.c, a writer or reader that left
 *     without the word withdrawing RW_HANDOFF: after it judged the top
 *     waiter, before its cmpxchg, under state->lock;
 *  11 TOFUTEX_WINDOW_OWNER_DEAD - rwlock.c, a top waiter that judged the
 *     word's writer dead, before it takes the word over.
 */
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/processor.h>
#include <linux/pid.h>
#include <linux/sched.h>

#include "tofutex.h"

static int debug_window_tgid;
module_param(debug_window_tgid, int, 0600);
MODULE_PARM_DESC(debug_window_tgid, "Process whose race window is widened, 0 for none (test builds only)");

static unsigned int debug_window_id;
module_param(debug_window_id, uint, 0600);
MODULE_PARM_DESC(debug_window_id, "Which race window is widened, 0 for none: 1 to 11, listed in debug.c (test builds only)");

/* A second is enough for any test thread to act, even under emulation. */
static struct tofutex_ns_param debug_window_ns = {
	.min = 0,
	.max = NSEC_PER_SEC,
};
module_param_cb(debug_window_ns, &tofutex_ns_param_ops, &debug_window_ns,
		0600);
MODULE_PARM_DESC(debug_window_ns, "Longest wait of a widened race window for its word to change, in ns, 0 to 1000000000 (test builds only)");

/**
 * tofutex_debug_window() - widen a race window, for tests only
 * @id:    which window this is
 * @uaddr: the word the code is about to act on
 * @word:  the value it read
 *
 * Busy-waits, when @id is debug_window_id and the caller is of the
 * process debug_window_tgid, until *@uaddr no longer holds @word or
 * debug_window_ns passed. Callable under a spinlock.
 */
void tofutex_debug_window(enum tofutex_window id, u32 __user *uaddr,
			  u32 word)
{
	u64 end;
	u32 cur;

	if (READ_ONCE(debug_window_id) != id || !READ_ONCE(debug_window_tgid) ||
	    task_tgid_nr(current) != READ_ONCE(debug_window_tgid))
		return;
	end = ktime_get_ns() + READ_ONCE(debug_window_ns.val);
	while (ktime_get_ns() < end) {
		if (tofutex_word_read_inatomic(uaddr, &cur) || cur != word)
			return;
		cpu_relax();
	}
}

/**
 * tofutex_debug_window_now() - tofutex_debug_window() for a caller that has
 * not read the word
 * @id:    which window this is
 * @uaddr: the word
 *
 * Reads *@uaddr (page faults disabled; a fault closes the window) and
 * waits for it to change from that value, as tofutex_debug_window().
 */
void tofutex_debug_window_now(enum tofutex_window id, u32 __user *uaddr)
{
	u32 word;

	if (READ_ONCE(debug_window_id) != id ||
	    tofutex_word_read_inatomic(uaddr, &word))
		return;
	tofutex_debug_window(id, uaddr, word);
}
