// SPDX-License-Identifier: GPL-2.0
/*
 * TOFUTEX_IOC_REQUEUE through the raw ABI: condition-variable waiters
 * (threads in TOFUTEX_IOC_WAIT) moved onto a TO lock's kernel queue and
 * released one per kernel unlock.
 *
 * - every moved waiter wakes exactly once, never more of them than
 *   unlocks, for 1 to 64 waiters;
 * - a broadcast that wakes one and moves the rest runs every waiter
 *   through the critical section, one at a time;
 * - a free lock gets its waiters woken, not moved; a changed condition
 *   word gives EAGAIN and moves nobody; bad arguments, and a lock word
 *   held by readers of a reader/writer lock, fail cleanly; waiters moved
 *   onto a writer-held reader/writer lock do not keep its RWUNLOCK from
 *   releasing it;
 * - a moved waiter's deadline (either clock) and signals still end its
 *   WAIT; the owner dying with waiters moved onto its lock hands the lock
 *   on (OWNER_DIED) and releases them all;
 * - a process exiting, or closing its descriptor, with waiters moved
 *   leaves no kernel state behind.
 *
 * A moved waiter also leaves when the lock stays free, unchanged, across
 * two of its owner checks (nobody took it after a release): the poller,
 * the last moved waiter. Tests that count returns per unlock relock at
 * once after each unlock and space the checks at the longest interval
 * (owner_checks_slow()), but a loaded machine can still keep the test
 * thread away for two checks: they count such a poller's leave as the
 * design allows (release_moved()), never as an extra wake-up.
 *
 * The lock is the word protocol of tofutex(4) written with cmpxchg and raw
 * ioctls, so that these tests do not depend on the library's choices.
 * Every wait is bounded: the test thread's, each step by TEST_WAIT_NS, so
 * that a lost wake-up fails the step that waited for it; a waiter's WAIT
 * by a guard that outlasts every step the test takes with it
 * (cv_guard_ns()), so that it never leaves queued waiters out of order on
 * a slow machine, yet no thread hangs.
 */
#include <sys/wait.h>

#include "common.h"
#include "params.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

#define MAX_WAITERS	64

/* Addresses user space can never access on x86-64. */
#define KERNEL_TEXT_ADDR	0xffffffff81000000ULL

/* Waiter counts of the looped tests: edges of the kernel's batches. */
static const unsigned int counts[] = { 1, 2, 3, 8, 9, 17, 31, 64 };
#define NR_COUNTS	((int)(sizeof(counts) / sizeof(counts[0])))

static int dev_fd(void)
{
	int fd = tofutex_fd();

	ck_assert_msg(fd >= 0, "tofutex_fd() = %d (%s)", fd, strerror(-fd));
	return fd;
}

/* ---- raw ioctls: 0 or the errno value ---- */

static int raw_requeue(uint32_t *cond, uint32_t *lock, uint32_t val,
		       uint32_t wake, uint32_t move, uint32_t *woken,
		       uint32_t *moved)
{
	struct tofutex_requeue a;
	int r;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)cond;
	a.lock_uaddr = (uintptr_t)lock;
	a.val = val;
	a.wake_count = wake;
	a.requeue_count = move;
	a.woken = a.requeued = 0xdead;
	r = ioctl(dev_fd(), TOFUTEX_IOC_REQUEUE, &a) ? errno : 0;
	if (woken)
		*woken = a.woken;
	if (moved)
		*moved = a.requeued;
	return r;
}

static int raw_wait(uint32_t *w, uint32_t val, uint32_t flags,
		    uint64_t deadline_ns)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.val = val;
	a.flags = flags;
	a.deadline_ns = deadline_ns;
	return ioctl(dev_fd(), TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

/* Take a word with no owner, keeping the bits in it, as tofutex(4) says. */
static bool lock_try(uint32_t *lock, uint32_t tid)
{
	uint32_t cur = word_load(lock);

	return !(cur & TID_MASK) &&
	       __atomic_compare_exchange_n(lock, &cur, cur | tid, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Lock: user space first, else TOFUTEX_IOC_LOCK. 0 or an errno value. */
static int lock_word(uint32_t *lock)
{
	uint32_t tid = test_gettid();
	struct tofutex_lock a;

	if (lock_try(lock, tid))
		return 0;
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)lock;
	a.flags = TOFUTEX_LOCK_DEADLINE;
	a.deadline_ns = now_ns() + TEST_WAIT_NS;
	return ioctl(dev_fd(), TOFUTEX_IOC_LOCK, &a) ? errno : 0;
}

/* Unlock; *@woken gets UNLOCK's count (0 when user space sufficed). */
static int unlock_word(uint32_t *lock, uint32_t *woken)
{
	uint32_t cur = test_gettid();
	struct tofutex_unlock a;

	if (woken)
		*woken = 0;
	if (__atomic_compare_exchange_n(lock, &cur, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return 0;
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)lock;
	if (ioctl(dev_fd(), TOFUTEX_IOC_UNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
}

static unsigned long owner_check_saved;

/* The longest owner check interval tofutex(4) allows. */
#define OWNER_CHECK_SLOW_NS	(100 * NSEC_PER_MSEC)

/* Unchecked fixture: owner checks at their longest interval. */
static void owner_checks_slow(void)
{
	if (!param_read("owner_check_ns", &owner_check_saved))
		owner_check_saved = 0;
	param_write("owner_check_ns", OWNER_CHECK_SLOW_NS);
}

static void owner_checks_restore(void)
{
	if (owner_check_saved)
		param_write("owner_check_ns", owner_check_saved);
}

static void assert_no_live_states(void)
{
	struct tofutex_stats st = stats_get(TOFUTEX_STATS_PROCESS);

	ck_assert_msg(st.live_states == 0, "live_states = %llu, want 0",
		      (unsigned long long)st.live_states);
}

/* ---- condition-variable waiters ---- */

/* What a waiter does after its WAIT returned 0. */
enum after_wake {
	AFTER_NOTHING,
	AFTER_LOCK,	/* lock, count, unlock, as a cond wait does */
};

struct cv {
	uint32_t cond;		/* the condition word (a sequence) */
	uint32_t lock;		/* the TO lock word */
	enum after_wake after;
	uint32_t wait_flags;
	uint64_t deadline_ns;	/* 0: the guard of cv_start() */
	atomic_uint returned;	/* WAITs returned */
	atomic_uint entered;	/* critical sections run */
	atomic_uint inside;	/* threads in the critical section now */
	atomic_uint owner_died;	/* locks taken with OWNER_DIED */
};

struct cv_waiter {
	struct cv *cv;
	uint64_t deadline_ns;	/* of its WAIT */
	atomic_uint tid;
	atomic_int result;	/* -1 until WAIT returned */
	pthread_t thread;
};

static void cv_critical_section(struct cv *cv)
{
	int r = lock_word(&cv->lock);

	TCHECK(r == 0, "lock after the wake-up: %s", strerror(r));
	if (r)
		return;
	if (word_load(&cv->lock) & OWNER_DIED) {
		atomic_fetch_add(&cv->owner_died, 1);
		__atomic_fetch_and(&cv->lock, ~OWNER_DIED, __ATOMIC_RELAXED);
	}
	TCHECK(atomic_fetch_add(&cv->inside, 1) == 0,
	       "two threads inside the critical section");
	busy_work(1000);
	atomic_fetch_sub(&cv->inside, 1);
	atomic_fetch_add(&cv->entered, 1);
	r = unlock_word(&cv->lock, NULL);
	TCHECK(r == 0, "unlock: %s", strerror(r));
}

static void *cv_waiter_main(void *arg)
{
	struct cv_waiter *w = arg;
	struct cv *cv = w->cv;
	int r;

	atomic_store(&w->tid, test_gettid());
	r = raw_wait(&cv->cond, 0, TOFUTEX_WAIT_DEADLINE | cv->wait_flags,
		     w->deadline_ns);
	atomic_store(&w->result, r);
	atomic_fetch_add(&cv->returned, 1);
	if (!r && cv->after == AFTER_LOCK)
		cv_critical_section(cv);
	return NULL;
}

/*
 * The default deadline of @n waiters' WAITs, from their start: a guard
 * only, never reached by a test that runs. A test takes a few steps per
 * waiter (start it, see it asleep, release it, see it return), each
 * bounded by TEST_WAIT_NS, and a waiter can wait for all of them: a
 * shorter deadline ends, on a slow enough machine, the WAIT of the first
 * queued waiter while it waits its turn, which looks like a waiter
 * leaving out of order.
 */
static uint64_t cv_guard_ns(unsigned int n)
{
	return now_ns() + (4 * (uint64_t)n + 4) * TEST_WAIT_NS;
}

/*
 * Start @n waiters on cv->cond (which holds 0), one at a time, so that
 * they queue in index order; all are asleep on return.
 */
static void cv_start(struct cv *cv, struct cv_waiter *w, unsigned int n)
{
	uint64_t dl = cv->deadline_ns ? cv->deadline_ns : cv_guard_ns(n);
	unsigned int i;
	bool ok;

	for (i = 0; i < n; i++) {
		w[i].cv = cv;
		w[i].deadline_ns = dl;
		atomic_store(&w[i].tid, 0);
		atomic_store(&w[i].result, -1);
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL,
						cv_waiter_main, &w[i]), 0);
		WAIT_UNTIL(ok, atomic_load(&w[i].tid) != 0, TEST_WAIT_NS);
		ck_assert(ok);
		wait_asleep_in(atomic_load(&w[i].tid), TOFUTEX_IOC_WAIT,
			       "WAIT");
	}
}

static void cv_join(struct cv_waiter *w, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(join_within(w[i].thread, NULL, TEST_WAIT_NS),
			      "waiter %u did not return", i);
	tfail_assert();
}

static unsigned int cv_results(struct cv_waiter *w, unsigned int n, int r)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++)
		k += atomic_load(&w[i].result) == r;
	return k;
}

/* Signal the change of the condition: bump the sequence. */
static uint32_t cv_bump(struct cv *cv)
{
	return __atomic_add_fetch(&cv->cond, 1, __ATOMIC_SEQ_CST);
}

/* Has every one of @w[from..n) returned from its WAIT or gone to sleep? */
static bool moved_settled(struct cv_waiter *w, unsigned int from,
			  unsigned int n)
{
	unsigned int i;

	for (i = from; i < n; i++)
		if (atomic_load(&w[i].result) == -1 &&
		    !asleep_in_ioctl(atomic_load(&w[i].tid), TOFUTEX_IOC_WAIT))
			return false;
	return true;
}

/*
 * The caller holds @lock; @w[0..head) have returned, woken by unlocks.
 * Wait until the others have all returned or are asleep: with the lock
 * held no poll can find it free, so one asleep now stays queued until the
 * next unlock. The waiters that left by themselves must be the last ones
 * (the poller leaves from the tail, its successor after it).
 *
 * Return: the first of them, @n when none left.
 */
static unsigned int moved_tail(struct cv_waiter *w, unsigned int head,
			       unsigned int n)
{
	unsigned int i, tail = n;
	bool ok;

	WAIT_UNTIL(ok, moved_settled(w, head, n), TEST_WAIT_NS);
	ck_assert_msg(ok, "moved waiters neither returned nor asleep");
	while (tail > head && atomic_load(&w[tail - 1].result) != -1)
		tail--;
	for (i = head; i < n; i++) {
		if (i < tail)
			ck_assert_msg(atomic_load(&w[i].result) == -1,
				      "moved waiter %u of %u returned %d before waiters %u..%u were released",
				      i, n, atomic_load(&w[i].result), head,
				      tail - 1);
		else
			ck_assert_msg(atomic_load(&w[i].result) == 0,
				      "moved waiter %u of %u left its WAIT with %d",
				      i, n, atomic_load(&w[i].result));
	}
	return tail;
}

/*
 * @w[0..n) are moved onto @lock, queued in index order and asleep; the
 * caller holds @lock. Release them the way a waiter that never takes the
 * lock does: unlock, relock at once, and again. Each unlock wakes exactly
 * the first queued waiter, while any is queued, and WAITERS stays on the
 * word as long as some are queued. Between an unlock and the relock the
 * word is free: if the test thread is kept away for two owner checks, the
 * poller takes itself off the queue, as tofutex(4) allows, and then the
 * next one; these leave from the tail only, and the count accounts for
 * them. Ends with @lock released.
 *
 * Return: how many left by polling (0 unless the machine was slow).
 */
static unsigned int release_moved(uint32_t *lock, struct cv_waiter *w,
				  unsigned int n)
{
	unsigned int head = 0, tail, queued, k = 0;
	uint32_t woken, after, tid = test_gettid();
	bool ok;

	tail = moved_tail(w, 0, n);
	while (head < tail) {
		queued = tail - head;
		k++;
		ck_assert_int_eq(unlock_word(lock, &woken), 0);
		after = word_load(lock);
		ck_assert_int_eq(lock_word(lock), 0);
		/* Only a poll during the UNLOCK itself can empty the queue. */
		ck_assert_msg(woken == 1 || (woken == 0 && queued == 1),
			      "unlock %u with %u moved waiters queued woke %u",
			      k, queued, woken);
		if (woken) {
			WAIT_UNTIL(ok, atomic_load(&w[head].result) != -1,
				   TEST_WAIT_NS);
			ck_assert_msg(ok, "unlock %u: moved waiter %u of %u (the first queued) did not return",
				      k, head, n);
			ck_assert_int_eq(atomic_load(&w[head].result), 0);
			head++;
		}
		tail = moved_tail(w, head, n);
		/* WAITERS stays while moved waiters are left. */
		if (head < tail) {
			ck_assert_msg(after == WAITERS,
				      "unlock %u left 0x%08x with %u moved waiters queued",
				      k, after, tail - head);
			ck_assert_uint_eq(word_load(lock), tid | WAITERS);
		} else if (tail == n) {
			/* The last release, with no poller's leave: clean. */
			ck_assert_msg(after == 0,
				      "unlock %u released the last moved waiter leaving 0x%08x",
				      k, after);
		}
	}
	ck_assert_int_eq(unlock_word(lock, &woken), 0);
	ck_assert_uint_eq(woken, 0);
	ck_assert_uint_eq(word_load(lock), 0);
	return n - tail;
}

/* ---- 1. Accounting: one moved waiter per unlock ---- */

/*
 * _i indexes counts[]: that many waiters are all moved while the caller
 * holds the lock; none leaves while it holds it, however long; each of
 * its unlocks then enters the kernel (WAITERS) and wakes exactly one, in
 * queue order, and no WAIT returns that neither an unlock woke nor the
 * poller ended on a lock left free (release_moved()).
 */
START_TEST(test_one_per_unlock)
{
	static struct cv_waiter w[MAX_WAITERS];
	unsigned int n = counts[_i], i;
	static struct cv cv;
	uint32_t woken, moved, seq;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_NOTHING;
	cv_start(&cv, w, n);
	ck_assert_int_eq(lock_word(&cv.lock), 0);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, INT32_MAX,
				     &woken, &moved), 0);
	ck_assert_uint_eq(woken, 0);
	ck_assert_uint_eq(moved, n);
	ck_assert_uint_eq(word_load(&cv.lock), test_gettid() | WAITERS);
	/* The new poller was woken once, to start polling: it sleeps again. */
	for (i = 0; i < n; i++)
		wait_asleep_in(atomic_load(&w[i].tid), TOFUTEX_IOC_WAIT,
			       "WAIT, moved");
	/* The owner holds the word: no poll may take the waiters off. */
	sleep_ns(OWNER_CHECK_SLOW_NS * 5 / 2);
	ck_assert_msg(atomic_load(&cv.returned) == 0,
		      "%u moved waiters left while the lock was held",
		      atomic_load(&cv.returned));

	release_moved(&cv.lock, w, n);
	cv_join(w, n);
	ck_assert_uint_eq(cv_results(w, n, 0), n);
	assert_no_live_states();
}
END_TEST

/* ---- 2. Broadcast: wake one, move the rest ---- */

/*
 * _i indexes counts[]: a broadcast while the lock is held wakes one and
 * moves the others; every waiter then runs its critical section once,
 * alone, and every WAIT returns 0.
 */
START_TEST(test_broadcast)
{
	static struct cv_waiter w[MAX_WAITERS];
	unsigned int n = counts[_i];
	static struct cv cv;
	uint32_t woken, moved, seq;
	struct tofutex_stats st;
	bool ok;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_LOCK;
	cv_start(&cv, w, n);
	ck_assert_int_eq(lock_word(&cv.lock), 0);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 1, INT32_MAX,
				     &woken, &moved), 0);
	ck_assert_uint_eq(woken, 1);
	ck_assert_uint_eq(moved, n - 1);
	ck_assert_int_eq(unlock_word(&cv.lock, NULL), 0);
	WAIT_UNTIL(ok, atomic_load(&cv.entered) == n, TEST_WAIT_NS);
	ck_assert_msg(ok, "%u of %u waiters ran their critical section",
		      atomic_load(&cv.entered), n);
	cv_join(w, n);
	ck_assert_uint_eq(cv_results(w, n, 0), n);
	ck_assert_uint_eq(atomic_load(&cv.entered), n);
	ck_assert_uint_eq(word_load(&cv.lock), 0);
	st = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(st.requeue_calls, 1);
	assert_no_live_states();
}
END_TEST

/* Repeated broadcasts racing with the waiters' own locking. */
START_TEST(test_broadcast_rounds)
{
	static struct cv_waiter w[16];
	unsigned long rounds = scaled(50, 10), r;
	unsigned int n = 16;
	static struct cv cv;
	uint32_t woken, moved, seq;
	bool ok;

	for (r = 0; r < rounds; r++) {
		memset(&cv, 0, sizeof(cv));
		cv.after = AFTER_LOCK;
		cv_start(&cv, w, n);
		/* Half the rounds broadcast without holding the lock. */
		if (r % 2)
			ck_assert_int_eq(lock_word(&cv.lock), 0);
		seq = cv_bump(&cv);
		ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 1,
					     INT32_MAX, &woken, &moved), 0);
		ck_assert_uint_eq(woken + moved, n);
		if (r % 2)
			ck_assert_int_eq(unlock_word(&cv.lock, NULL), 0);
		WAIT_UNTIL(ok, atomic_load(&cv.entered) == n, TEST_WAIT_NS);
		ck_assert_msg(ok, "round %lu: %u of %u waiters got through",
			      r, atomic_load(&cv.entered), n);
		cv_join(w, n);
		ck_assert_uint_eq(cv_results(w, n, 0), n);
	}
	assert_no_live_states();
}
END_TEST

/* ---- 3. A free lock, EAGAIN, counts ---- */

/* A lock with no owner: its waiters are woken, not moved. */
START_TEST(test_free_lock_wakes)
{
	static struct cv_waiter w[MAX_WAITERS];
	unsigned int n = counts[_i];
	static struct cv cv;
	uint32_t woken, moved, seq;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_LOCK;
	cv_start(&cv, w, n);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, INT32_MAX,
				     &woken, &moved), 0);
	cv_join(w, n);
	/* Woken waiters may take the lock before the last ones are woken. */
	ck_assert_uint_eq(woken + moved, n);
	ck_assert_uint_eq(cv_results(w, n, 0), n);
	ck_assert_uint_eq(atomic_load(&cv.entered), n);
	ck_assert_uint_eq(word_load(&cv.lock), 0);
	assert_no_live_states();
}
END_TEST

/* The condition word changed: EAGAIN, and nobody is woken or moved. */
START_TEST(test_eagain)
{
	static struct cv_waiter w[4];
	static struct cv cv;
	uint32_t woken, moved, seq;
	unsigned int i;

	memset(&cv, 0, sizeof(cv));
	/* Nobody waits: the value is checked all the same. */
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, 1, 1, 1, &woken,
				     &moved), EAGAIN);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, 0, 1, 1, &woken,
				     &moved), 0);
	ck_assert_uint_eq(woken + moved, 0);

	cv.after = AFTER_NOTHING;
	cv_start(&cv, w, 4);
	ck_assert_int_eq(lock_word(&cv.lock), 0);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq + 1, 1,
				     INT32_MAX, &woken, &moved), EAGAIN);
	ck_assert_uint_eq(woken, 0);
	ck_assert_uint_eq(moved, 0);
	ck_assert_uint_eq(word_load(&cv.lock), test_gettid());
	for (i = 0; i < 4; i++)
		ck_assert(asleep_in_ioctl(atomic_load(&w[i].tid),
					  TOFUTEX_IOC_WAIT));
	/* Counts are limits: wake 1, move 2, leave 1. */
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 1, 2, &woken,
				     &moved), 0);
	ck_assert_uint_eq(woken, 1);
	ck_assert_uint_eq(moved, 2);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, 0, &woken,
				     &moved), 0);
	ck_assert_uint_eq(woken + moved, 0);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 1, 0, &woken,
				     &moved), 0);
	ck_assert_uint_eq(woken, 1);
	/* The two moved ones, w[1] and w[2], go one per unlock. */
	release_moved(&cv.lock, w + 1, 2);
	cv_join(w, 4);
	ck_assert_uint_eq(cv_results(w, 4, 0), 4);
	assert_no_live_states();
}
END_TEST

/* ---- 4. Bad arguments ---- */

START_TEST(test_bad_args)
{
	uint32_t cond = 0, lock = 0;
	uint64_t gone = unmapped_addr();
	struct tofutex_requeue a;
	int fd = dev_fd();

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)&cond;
	a.lock_uaddr = (uintptr_t)&lock;
	a.wake_count = 1;
	a.requeue_count = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a), 0);
	a.flags = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.flags = 1U << 31;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.flags = 0;
	a.reserved = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.reserved = 0;
	a.uaddr = (uintptr_t)&cond + 2;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.uaddr = (uintptr_t)&cond;
	a.lock_uaddr = (uintptr_t)&lock + 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.lock_uaddr = (uintptr_t)&cond;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EINVAL);
	a.lock_uaddr = KERNEL_TEXT_ADDR;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EFAULT);
	a.lock_uaddr = (uintptr_t)&lock;
	a.uaddr = 0;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EFAULT);
	a.uaddr = gone;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0,
			 EFAULT);
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_REQUEUE, NULL) ? errno : 0,
			 EFAULT);
	assert_no_live_states();
}
END_TEST

/*
 * A lock word that cannot be written: EFAULT before anything is done, the
 * waiters still asleep on the condition word.
 */
START_TEST(test_read_only_lock)
{
	static struct cv_waiter w[3];
	uint32_t *ro = ro_word(test_gettid());
	static struct cv cv;
	uint32_t woken, moved, seq;
	unsigned int i;
	int n = -1;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_NOTHING;
	cv_start(&cv, w, 3);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, ro, seq, 0, INT32_MAX, &woken,
				     &moved), EFAULT);
	ck_assert_uint_eq(woken + moved, 0);
	for (i = 0; i < 3; i++)
		ck_assert(asleep_in_ioctl(atomic_load(&w[i].tid),
					  TOFUTEX_IOC_WAIT));
	ck_assert_int_eq(tofutex_wake(&cv.cond, INT32_MAX, (unsigned int *)&n),
			 0);
	ck_assert_int_eq(n, 3);
	cv_join(w, 3);
	ck_assert_uint_eq(cv_results(w, 3, 0), 3);
	assert_no_live_states();
}
END_TEST

struct locker {
	uint32_t *word;
	atomic_uint tid;
	pthread_t thread;
};

/* Lock and unlock @l->word: asleep in LOCK while the caller holds it. */
static void *locker_main(void *arg)
{
	struct locker *l = arg;
	int r;

	atomic_store(&l->tid, test_gettid());
	r = lock_word(l->word);
	TCHECK(r == 0, "lock: %s", strerror(r));
	if (!r)
		unlock_word(l->word, NULL);
	return NULL;
}

/* Words in use as the other kind: EINVAL, nothing woken or moved. */
START_TEST(test_wrong_kind)
{
	static struct cv_waiter w[2], w2[1];
	static struct cv cv, cv2;
	uint32_t woken, moved, seq;
	struct locker l = { 0 };
	bool ok;

	memset(&cv, 0, sizeof(cv));
	memset(&cv2, 0, sizeof(cv2));
	cv_start(&cv, w, 2);
	cv_start(&cv2, w2, 1);
	seq = cv_bump(&cv);
	/* The lock word is another condition word with a waiter. */
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv2.cond, seq, 0, 1, &woken,
				     &moved), EINVAL);
	/* The condition word is a TO lock with a waiter asleep in LOCK. */
	ck_assert_int_eq(lock_word(&cv.lock), 0);
	l.word = &cv.lock;
	ck_assert_int_eq(pthread_create(&l.thread, NULL, locker_main, &l), 0);
	WAIT_UNTIL(ok, atomic_load(&l.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&l.tid), TOFUTEX_IOC_LOCK, "LOCK");
	ck_assert_int_eq(raw_requeue(&cv.lock, &cv2.lock, cv.lock, 1, 1,
				     &woken, &moved), EINVAL);
	ck_assert_int_eq(unlock_word(&cv.lock, NULL), 0);
	ck_assert(join_within(l.thread, NULL, TEST_WAIT_NS));
	ck_assert(asleep_in_ioctl(atomic_load(&w[0].tid), TOFUTEX_IOC_WAIT));
	ck_assert(asleep_in_ioctl(atomic_load(&w[1].tid), TOFUTEX_IOC_WAIT));
	ck_assert_int_eq(tofutex_wake(&cv.cond, INT32_MAX, NULL), 0);
	cv_bump(&cv2);
	ck_assert_int_eq(tofutex_wake(&cv2.cond, INT32_MAX, NULL), 0);
	cv_join(w, 2);
	cv_join(w2, 1);
	ck_assert_uint_eq(cv_results(w, 2, 0), 2);
	assert_no_live_states();
}
END_TEST

/*
 * A reader/writer lock held by readers (RW_SHARED | n, no kernel state)
 * is not a TO lock with an owner: REQUEUE onto it fails with EINVAL and
 * wakes and moves nobody, also when nobody waits or every waiter would be
 * woken rather than moved, and the readers' RWUNLOCK still releases it.
 */
START_TEST(test_onto_reader_held_rwlock)
{
	const uint32_t held = TOFUTEX_RW_SHARED | 1;
	static struct cv_waiter w[2];
	static struct cv cv;
	uint32_t woken, moved, seq, nobody = 0;
	struct tofutex_unlock u;

	memset(&cv, 0, sizeof(cv));
	cv.lock = held;
	ck_assert_int_eq(raw_requeue(&nobody, &cv.lock, 0, 1, 1, &woken,
				     &moved), EINVAL);
	cv_start(&cv, w, 2);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 2, 2, &woken,
				     &moved), EINVAL);
	ck_assert_uint_eq(woken, 0);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, 2, &woken,
				     &moved), EINVAL);
	ck_assert_uint_eq(moved, 0);
	ck_assert_uint_eq(word_load(&cv.lock), held);
	ck_assert(asleep_in_ioctl(atomic_load(&w[0].tid), TOFUTEX_IOC_WAIT));
	ck_assert(asleep_in_ioctl(atomic_load(&w[1].tid), TOFUTEX_IOC_WAIT));
	memset(&u, 0, sizeof(u));
	u.uaddr = (uintptr_t)&cv.lock;
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_RWUNLOCK, &u), 0);
	ck_assert_uint_eq(word_load(&cv.lock), 0);
	ck_assert_int_eq(tofutex_wake(&cv.cond, INT32_MAX, NULL), 0);
	cv_join(w, 2);
	ck_assert_uint_eq(cv_results(w, 2, 0), 2);
	assert_no_live_states();
}
END_TEST

/*
 * A reader/writer lock held by a writer looks like a TO lock (the
 * writer's TID): REQUEUE may move waiters onto it, which gives the word
 * a TO lock state. The writer's RWUNLOCK still releases it (not EINVAL:
 * the write lock would stay held for ever), and the moved waiter, finding
 * the word left free, goes for it (the poller, requeue.c).
 */
START_TEST(test_onto_writer_held_rwlock)
{
	static struct cv_waiter w[1];
	static struct cv cv;
	uint32_t woken, moved, seq;
	struct tofutex_unlock u;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_LOCK;
	cv.lock = test_gettid();
	cv_start(&cv, w, 1);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, 1, &woken,
				     &moved), 0);
	ck_assert_uint_eq(moved, 1);
	ck_assert_uint_eq(word_load(&cv.lock), test_gettid() | WAITERS);
	memset(&u, 0, sizeof(u));
	u.uaddr = (uintptr_t)&cv.lock;
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_RWUNLOCK, &u), 0);
	cv_join(w, 1);
	ck_assert_uint_eq(cv_results(w, 1, 0), 1);
	ck_assert_uint_eq(atomic_load(&cv.entered), 1);
	ck_assert_uint_eq(word_load(&cv.lock) & TID_MASK, 0);
	assert_no_live_states();
}
END_TEST

/* ---- 5. Deadlines and signals of moved waiters ---- */

/* The time on the clock of a WAIT with @flags, in ns. */
static uint64_t wait_clock_ns(uint32_t flags)
{
	struct timespec ts;

	clock_gettime(flags & TOFUTEX_WAIT_CLOCK_REALTIME ? CLOCK_REALTIME :
			      CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * _i = 0: monotonic deadline, 1: realtime. Two waiters with a near
 * deadline and two without are moved; the near ones time out while
 * moved, the others are still released one per unlock. A near waiter
 * may time out before the move only once its deadline has passed (a slow
 * machine): then the round is repeated with twice the margin.
 */
START_TEST(test_moved_deadline)
{
	static struct cv_waiter w[4];
	static struct cv near, far;
	uint32_t woken, moved, lock = 0;
	uint64_t margin = 4 * NSEC_PER_SEC;
	unsigned int attempt;

	for (attempt = 0;; attempt++) {
		memset(&near, 0, sizeof(near));
		near.wait_flags = _i ? TOFUTEX_WAIT_CLOCK_REALTIME : 0;
		near.deadline_ns = wait_clock_ns(near.wait_flags) + margin;
		cv_start(&near, w, 2);
		ck_assert_int_eq(lock_word(&lock), 0);
		ck_assert_int_eq(raw_requeue(&near.cond, &lock, 0, 0,
					     INT32_MAX, &woken, &moved), 0);
		if (moved == 2)
			break;
		ck_assert_msg(wait_clock_ns(near.wait_flags) >=
			      near.deadline_ns,
			      "%u of 2 waiters moved before their deadline",
			      moved);
		ck_assert_msg(attempt < 3,
			      "the deadline passed before the move %u times",
			      attempt + 1);
		cv_join(w, 2);
		ck_assert_uint_eq(cv_results(w, 2, ETIMEDOUT), 2);
		ck_assert_int_eq(unlock_word(&lock, &woken), 0);
		ck_assert_uint_eq(woken, 0);
		margin *= 2;
	}
	memset(&far, 0, sizeof(far));
	cv_start(&far, w + 2, 2);
	ck_assert_int_eq(raw_requeue(&far.cond, &lock, 0, 0, INT32_MAX,
				     &woken, &moved), 0);
	ck_assert_uint_eq(moved, 2);
	cv_join(w, 2);
	ck_assert_uint_eq(cv_results(w, 2, ETIMEDOUT), 2);
	ck_assert_uint_eq(atomic_load(&far.returned), 0);
	release_moved(&lock, w + 2, 2);
	cv_join(w + 2, 2);
	ck_assert_uint_eq(cv_results(w + 2, 2, 0), 2);
	assert_no_live_states();
}
END_TEST

/*
 * _i = 0: without SA_RESTART a signal ends a moved waiter's WAIT with
 * EINTR. 1: with SA_RESTART the WAIT restarts on the condition word,
 * whose value changed: EAGAIN. Either way the other moved waiters stay
 * queued and are released by the unlocks, the poller among them.
 */
START_TEST(test_moved_signal)
{
	static struct cv_waiter w[3];
	static struct cv cv;
	uint32_t woken, moved, seq;
	unsigned int victim, k;
	bool ok;

	install_sigusr1(_i);
	memset(&cv, 0, sizeof(cv));
	cv_start(&cv, w, 3);
	ck_assert_int_eq(lock_word(&cv.lock), 0);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, INT32_MAX,
				     &woken, &moved), 0);
	ck_assert_uint_eq(moved, 3);
	/* The last moved waiter polls the owner: signal it, then the first. */
	for (k = 0; k < 2; k++) {
		victim = k ? 0 : 2;
		ck_assert_int_eq(pthread_kill(w[victim].thread, SIGUSR1), 0);
		WAIT_UNTIL(ok, atomic_load(&w[victim].result) != -1,
			   TEST_WAIT_NS);
		ck_assert(ok);
		ck_assert_int_eq(atomic_load(&w[victim].result),
				 _i ? EAGAIN : EINTR);
	}
	wait_asleep_in(atomic_load(&w[1].tid), TOFUTEX_IOC_WAIT,
		       "WAIT, moved");
	ck_assert_int_eq(atomic_load(&w[1].result), -1);
	ck_assert_int_eq(unlock_word(&cv.lock, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	cv_join(w, 3);
	ck_assert_int_eq(atomic_load(&w[1].result), 0);
	ck_assert_uint_eq(word_load(&cv.lock), 0);
	assert_no_live_states();
}
END_TEST

/* ---- 6. The owner dies with waiters moved onto its lock ---- */

struct dier {
	uint32_t *lock;
	atomic_bool locked;
	atomic_bool die;
};

static void *dier_main(void *arg)
{
	struct dier *d = arg;
	bool ok;

	TCHECK(lock_word(d->lock) == 0, "the owner-to-be cannot lock");
	atomic_store(&d->locked, true);
	WAIT_UNTIL(ok, atomic_load(&d->die), TEST_WAIT_NS);
	TCHECK(ok, "never told to die");
	return NULL;	/* exits holding the lock */
}

/*
 * _i indexes counts[]: the lock's owner exits while the waiters are
 * moved onto it. One of them notices, its WAIT returns, it takes the lock
 * over (OWNER_DIED) and the others follow through the unlocks.
 */
START_TEST(test_owner_dies)
{
	static struct cv_waiter w[MAX_WAITERS];
	unsigned int n = counts[_i];
	struct dier d = { 0 };
	static struct cv cv;
	uint32_t woken, moved, seq;
	pthread_t owner;
	bool ok;

	memset(&cv, 0, sizeof(cv));
	cv.after = AFTER_LOCK;
	d.lock = &cv.lock;
	cv_start(&cv, w, n);
	ck_assert_int_eq(pthread_create(&owner, NULL, dier_main, &d), 0);
	WAIT_UNTIL(ok, atomic_load(&d.locked), TEST_WAIT_NS);
	ck_assert(ok);
	seq = cv_bump(&cv);
	ck_assert_int_eq(raw_requeue(&cv.cond, &cv.lock, seq, 0, INT32_MAX,
				     &woken, &moved), 0);
	ck_assert_uint_eq(moved, n);
	atomic_store(&d.die, true);
	ck_assert(join_within(owner, NULL, TEST_WAIT_NS));
	WAIT_UNTIL(ok, atomic_load(&cv.entered) == n, TEST_WAIT_NS);
	ck_assert_msg(ok, "%u of %u waiters got the dead owner's lock",
		      atomic_load(&cv.entered), n);
	cv_join(w, n);
	ck_assert_uint_eq(cv_results(w, n, 0), n);
	ck_assert_uint_eq(atomic_load(&cv.owner_died), 1);
	ck_assert_uint_eq(word_load(&cv.lock), 0);
	assert_no_live_states();
}
END_TEST

/* ---- 7. Process exit and descriptor close with waiters moved ---- */

/*
 * A child moves waiters onto a lock it holds, then: _i = 0 exits, 1 is
 * killed by a signal, 2 closes its descriptor first (the waiters' ioctls
 * keep the file open) and then exits. The parent sees the child go and
 * the module's global state count return to what it was.
 */
START_TEST(test_exit_with_moved)
{
	static struct cv_waiter w[8];
	struct tofutex_stats before, after;
	uint32_t woken, moved, seq;
	static struct cv cv;
	int status, fd;
	pid_t pid;
	bool ok;

	before = stats_get(TOFUTEX_STATS_GLOBAL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		memset(&cv, 0, sizeof(cv));
		cv.after = AFTER_LOCK;
		cv_start(&cv, w, 8);
		if (lock_word(&cv.lock))
			_exit(2);
		seq = cv_bump(&cv);
		if (raw_requeue(&cv.cond, &cv.lock, seq, 0, INT32_MAX, &woken,
				&moved) || moved != 8)
			_exit(3);
		if (_i == 2) {
			fd = tofutex_fd();
			close(fd);
		}
		if (_i == 1)
			raise(SIGKILL);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (_i == 1)
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	else
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child status %#x", status);
	WAIT_UNTIL(ok, (after = stats_get(TOFUTEX_STATS_GLOBAL),
			after.live_states <= before.live_states),
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "global live_states %llu, was %llu",
		      (unsigned long long)after.live_states,
		      (unsigned long long)before.live_states);
}
END_TEST

static Suite *requeue_suite(void)
{
	Suite *s = suite_create("requeue");
	TCase *tc;

	tc = tcase_create("accounting");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_add_unchecked_fixture(tc, owner_checks_slow,
				    owner_checks_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_one_per_unlock, 0, NR_COUNTS);
	tcase_add_loop_test(tc, test_broadcast, 0, NR_COUNTS);
	tcase_add_test(tc, test_broadcast_rounds);
	tcase_add_loop_test(tc, test_free_lock_wakes, 0, NR_COUNTS);
	tcase_add_test(tc, test_eagain);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad-input");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_read_only_lock);
	tcase_add_test(tc, test_wrong_kind);
	tcase_add_test(tc, test_onto_reader_held_rwlock);
	tcase_add_test(tc, test_onto_writer_held_rwlock);
	suite_add_tcase(s, tc);

	tc = tcase_create("moved-waiters");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_add_unchecked_fixture(tc, owner_checks_slow,
				    owner_checks_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_moved_deadline, 0, 2);
	tcase_add_loop_test(tc, test_moved_signal, 0, 2);
	tcase_add_loop_test(tc, test_owner_dies, 0, NR_COUNTS);
	tcase_add_loop_test(tc, test_exit_with_moved, 0, 3);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(requeue_suite());
}
