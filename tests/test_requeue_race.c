// SPDX-License-Identifier: GPL-2.0
/*
 * TOFUTEX_IOC_REQUEUE and SWAP where another thread acts at the wrong
 * moment: debug windows (module/debug.c) hold the kernel at one point
 * until the test has acted, so that each case happens every run.
 *
 * - requeue_bounded_by_queued: waiters that WAIT again as soon as they are
 *   woken, and one REQUEUE of UINT32_MAX held between its steps until the
 *   woken ones are asleep again: it must take at most the waiters queued
 *   when it began, and return (waking, and moving onto a free lock).
 * - requeue_arm_changing_word_signal: the lock word changes under every
 *   cmpxchg that marks it TOFUTEX_WAITERS. The retries must give way to a
 *   signal (the call restarting after the handler) and to the CPU's other
 *   thread, not spin with the state locks held.
 * - requeue_rearm_fails_wakes_moved: an UNLOCK releases a lock with
 *   waiters moved onto it, and the word turns read-only before WAITERS is
 *   put back: every moved waiter must be woken, none left asleep on a
 *   word whose unlocks will not enter the kernel.
 * - requeue_woken_never_locks: the moved waiter that an unlock woke never
 *   takes the lock: the other moved waiters must not sleep on the free
 *   lock until their deadline.
 * - swap_moved_before_sleep_owner_dies: a SWAP waiter moved by REQUEUE
 *   before its first sleep must poll the lock's owner like every moved
 *   waiter, and leave when the owner died.
 * - requeue_writeback_fails_after_acting, swap_writeback_fails_after_acting:
 *   the argument's page turns read-only after the call woke a waiter: the
 *   call must still report success, since a retry would wake again.
 *
 * Debug windows are closed again in an unchecked teardown, which runs
 * even when a test failed. Every wait is bounded.
 */
#include <sched.h>
#include <sys/mman.h>

#include "common.h"
#include "params.h"

#define WAITERS		TOFUTEX_WAITERS
#define TID_MASK	TOFUTEX_TID_MASK
#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/*
 * A thread that keeps a call going stops on its own after this long, so
 * that a call stuck on it ends and the test can report it.
 */
#define DRIVER_LIFE_NS	TEST_WAIT_NS

/* Waits that must not end by their deadline in a passing run. */
#define LONG_DEADLINE_NS	(3 * TEST_WAIT_NS)

/*
 * A debug window holds the kernel for at most a second (module/debug.c).
 * A test that could not act within it (a slow machine) runs its round
 * again, this many times in all, and then says that it checked nothing.
 */
#define WINDOW_ROUNDS	5

/* ---- Raw calls: 0 or the errno value ---- */

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

static int raw_wait(int fd, uint32_t *w, uint32_t val, uint64_t deadline)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.val = val;
	if (deadline) {
		a.flags = TOFUTEX_WAIT_DEADLINE;
		a.deadline_ns = deadline;
	}
	return ioctl(fd, TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

static void requeue_arg(struct tofutex_requeue *a, uint32_t *cond,
			uint32_t *lock, uint32_t val, uint32_t wake,
			uint32_t move)
{
	memset(a, 0, sizeof(*a));
	a->uaddr = (uintptr_t)cond;
	a->lock_uaddr = (uintptr_t)lock;
	a->val = val;
	a->wake_count = wake;
	a->requeue_count = move;
}

static int raw_requeue(int fd, uint32_t *cond, uint32_t *lock, uint32_t val,
		       uint32_t wake, uint32_t move, uint32_t *woken,
		       uint32_t *moved)
{
	struct tofutex_requeue a;
	int r;

	requeue_arg(&a, cond, lock, val, wake, move);
	r = ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0;
	if (woken)
		*woken = a.woken;
	if (moved)
		*moved = a.requeued;
	return r;
}

static int raw_unlock(int fd, uint32_t *w, uint32_t *woken)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	if (ioctl(fd, TOFUTEX_IOC_UNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
}

static uint64_t requeue_calls(int fd)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	st.flags = TOFUTEX_STATS_PROCESS;
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_STATS, &st) == 0,
		      "TOFUTEX_IOC_STATS: %s", strerror(errno));
	return st.requeue_calls;
}

/* Run thread @t on CPU @cpu only; the guests have two. */
static void pin(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(pthread_setaffinity_np(t, sizeof(set), &set), 0);
}

static void unpin(pthread_t t)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	pthread_setaffinity_np(t, sizeof(set), &set);
}

/* A page of its own, read-write; made read-only by a test. */
static void *own_page(void)
{
	void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	ck_assert(p != MAP_FAILED);
	return p;
}

static void make_read_only(void *page)
{
	ck_assert_int_eq(mprotect(page, (size_t)sysconf(_SC_PAGESIZE),
				  PROT_READ), 0);
}

/* ---- Threads waiting on a word ---- */

struct waiter {
	int fd;
	uint32_t *word;
	uint32_t val;
	uint64_t deadline;		/* 0: none */
	atomic_uint tid;
	atomic_int result;		/* -1 until the WAIT returned */
	pthread_t thread;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	atomic_store(&w->tid, test_gettid());
	atomic_store(&w->result, raw_wait(w->fd, w->word, w->val,
					  w->deadline));
	return NULL;
}

/* Start @w waiting on @word (holding @val); asleep in WAIT on return. */
static void waiter_start(struct waiter *w, int fd, uint32_t *word,
			 uint32_t val, uint64_t deadline)
{
	bool ok;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->word = word;
	w->val = val;
	w->deadline = deadline;
	atomic_store(&w->result, -1);
	ck_assert_int_eq(pthread_create(&w->thread, NULL, waiter_main, w), 0);
	WAIT_UNTIL(ok, atomic_load(&w->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&w->tid), TOFUTEX_IOC_WAIT, "WAIT");
}

/* ---- REQUEUE while its waiters keep queuing again ---- */

/* More waiters than one of REQUEUE's batches (8, module/requeue.c). */
#define REQUEUERS	16

struct requeue_loop {
	int fd;
	uint32_t cond, lock;
	atomic_bool stop, stop_observer, gave_up;
	atomic_uint tids[REQUEUERS];
	atomic_uint started, returned;
	pthread_t threads[REQUEUERS], observer;
};

/* WAITs on the word until told to stop, again as soon as it is woken. */
static void *requeuer_main(void *p)
{
	struct requeue_loop *r = p;
	unsigned int i = atomic_fetch_add(&r->started, 1);
	uint32_t v;

	atomic_store(&r->tids[i], test_gettid());
	while (!atomic_load(&r->stop)) {
		v = __atomic_load_n(&r->cond, __ATOMIC_ACQUIRE);
		raw_wait(r->fd, &r->cond, v, 0);
		atomic_fetch_add(&r->returned, 1);
	}
	return NULL;
}

static bool all_asleep(struct requeue_loop *r)
{
	unsigned int i;

	for (i = 0; i < REQUEUERS; i++)
		if (!asleep_in_ioctl(atomic_load(&r->tids[i]),
				     TOFUTEX_IOC_WAIT))
			return false;
	return true;
}

/*
 * Changes the condition word once waiters were woken and all are asleep
 * again, which ends REQUEUE's wait in its window between steps: so each
 * step finds the waiters of the previous one queued again. After
 * DRIVER_LIFE_NS it gives up and stops the waiters, so that a REQUEUE
 * that would go on forever ends.
 */
static void *observer_main(void *p)
{
	struct requeue_loop *r = p;
	uint64_t end = now_ns() + DRIVER_LIFE_NS;
	unsigned int seen = 0;

	while (!atomic_load(&r->stop_observer)) {
		if (now_ns() > end) {
			atomic_store(&r->gave_up, true);
			atomic_store(&r->stop, true);
			break;
		}
		if (atomic_load(&r->returned) != seen && all_asleep(r)) {
			seen = atomic_load(&r->returned);
			__atomic_add_fetch(&r->cond, 1, __ATOMIC_RELEASE);
		}
		sleep_ns(NSEC_PER_MSEC);
	}
	return NULL;
}

static void requeuers_stop(struct requeue_loop *r)
{
	unsigned int i, left;

	atomic_store(&r->stop, true);
	for (i = 0, left = REQUEUERS; left && i < 1000; i++) {
		__atomic_add_fetch(&r->cond, 1, __ATOMIC_RELEASE);
		fd_wake(r->fd, &r->cond, UINT32_MAX);
		while (left && join_within(r->threads[left - 1], NULL,
					   10 * NSEC_PER_MSEC))
			left--;
	}
	ck_assert_msg(!left, "%u waiters did not leave", left);
}

/*
 * _i = 0: wake UINT32_MAX, move none; 1: wake none, move UINT32_MAX onto
 * a free lock, which wakes them. Either way at most REQUEUERS.
 */
START_TEST(test_requeue_bounded_by_queued)
{
	static struct requeue_loop r;
	uint32_t woken = 0, moved = 0, v;
	bool ok, gave_up;
	unsigned int i;
	int ret;

	memset(&r, 0, sizeof(r));
	r.fd = dev_open();
	for (i = 0; i < REQUEUERS; i++)
		ck_assert_int_eq(pthread_create(&r.threads[i], NULL,
						requeuer_main, &r), 0);
	WAIT_UNTIL(ok, atomic_load(&r.started) == REQUEUERS, TEST_WAIT_NS);
	ck_assert(ok);
	WAIT_UNTIL(ok, all_asleep(&r), TEST_WAIT_NS);
	ck_assert_msg(ok, "the waiters never were all asleep in WAIT");

	window_open(getpid(), WINDOW_REQUEUE_STEP, NSEC_PER_SEC);
	ck_assert_int_eq(pthread_create(&r.observer, NULL, observer_main, &r),
			 0);
	v = __atomic_load_n(&r.cond, __ATOMIC_ACQUIRE);
	ret = raw_requeue(r.fd, &r.cond, &r.lock, v, _i ? 0 : UINT32_MAX,
			  _i ? UINT32_MAX : 0, &woken, &moved);
	gave_up = atomic_load(&r.gave_up);
	window_close();

	atomic_store(&r.stop_observer, true);
	ck_assert(join_within(r.observer, NULL, TEST_WAIT_NS));
	requeuers_stop(&r);

	ck_assert_msg(!gave_up,
		      "REQUEUE of UINT32_MAX was still waking waiters that kept queuing again after %llu s (woke %u)",
		      DRIVER_LIFE_NS / NSEC_PER_SEC, woken);
	ck_assert_msg(ret == 0, "REQUEUE: %s", strerror(ret));
	ck_assert_msg(woken + moved >= 1 && woken + moved <= REQUEUERS,
		      "REQUEUE woke %u and moved %u with %d waiters queued when it began",
		      woken, moved, REQUEUERS);
	ck_assert_uint_eq(moved, 0);
	close(r.fd);
}
END_TEST

/* ---- Marking a lock word that keeps changing ---- */

struct arm_loop {
	int fd;
	uint32_t cond, lock;
	atomic_uint tid;		/* the requeuer's */
	atomic_bool go, stop_requeue, stop_change, gave_up;
	atomic_ulong issued;		/* REQUEUE calls the requeuer made */
	atomic_ulong changes;
	pthread_t requeuer, changer;
};

/* REQUEUEs the waiter again and again, each call counted before it. */
static void *arm_requeuer_main(void *p)
{
	struct arm_loop *a = p;
	bool ok;

	atomic_store(&a->tid, test_gettid());
	WAIT_UNTIL(ok, atomic_load(&a->go), TEST_WAIT_NS);
	while (ok && !atomic_load(&a->stop_requeue)) {
		atomic_fetch_add(&a->issued, 1);
		raw_requeue(a->fd, &a->cond, &a->lock, 0, 0, 1, NULL, NULL);
	}
	return NULL;
}

/*
 * Writes an owner TID that never repeats (1, 2, 3, ...) into the lock
 * word, so that every cmpxchg that read one value finds another; frees
 * the word when told to stop, so that the last REQUEUE wakes the waiter.
 */
static void *arm_changer_main(void *p)
{
	struct arm_loop *a = p;
	uint64_t end = now_ns() + DRIVER_LIFE_NS;
	uint32_t i = 0;

	while (!atomic_load(&a->stop_change)) {
		i = i % (TID_MASK - 1) + 1;
		__atomic_store_n(&a->lock, i, __ATOMIC_RELEASE);
		if ((atomic_fetch_add(&a->changes, 1) & 0xfff) == 0 &&
		    now_ns() > end) {
			atomic_store(&a->gave_up, true);
			break;
		}
	}
	__atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The requeuer and the signalling test thread share CPU 0, the changer
 * has CPU 1: under preempt=none the test thread runs only if the retries
 * offer the CPU. A REQUEUE restarted after a signal handler counts as a
 * call in the module without the requeuer making one.
 */
START_TEST(test_requeue_arm_changing_word_signal)
{
	bool restarted = false, ok;
	static struct arm_loop a;
	struct waiter w;
	unsigned long changes;
	uint64_t end;

	memset(&a, 0, sizeof(a));
	a.fd = dev_open();
	install_sigusr1(true);
	waiter_start(&w, a.fd, &a.cond, 0, now_ns() + LONG_DEADLINE_NS);
	ck_assert_int_eq(pthread_create(&a.requeuer, NULL, arm_requeuer_main,
					&a), 0);
	WAIT_UNTIL(ok, atomic_load(&a.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert_int_eq(pthread_create(&a.changer, NULL, arm_changer_main,
					&a), 0);
	pin(a.changer, 1);
	pin(a.requeuer, 0);
	pin(pthread_self(), 0);
	WAIT_UNTIL(ok, atomic_load(&a.changes) > 0, TEST_WAIT_NS);
	ck_assert(ok);

	/* Each cmpxchg waits in its window until the word changed. */
	window_open(getpid(), WINDOW_REQUEUE_ARM, NSEC_PER_SEC);
	atomic_store(&a.go, true);
	WAIT_UNTIL(ok, requeue_calls(a.fd) > 0, TEST_WAIT_NS);
	ck_assert(ok);
	end = now_ns() + TEST_WAIT_NS;
	while (!restarted && !atomic_load(&a.gave_up) && now_ns() < end) {
		pthread_kill(a.requeuer, SIGUSR1);
		sleep_ns(NSEC_PER_MSEC);
		restarted = requeue_calls(a.fd) > atomic_load(&a.issued);
	}
	ok = !atomic_load(&a.gave_up);
	changes = atomic_load(&a.changes);

	atomic_store(&a.stop_requeue, true);
	atomic_store(&a.stop_change, true);
	ck_assert(join_within(a.changer, NULL, TEST_WAIT_NS));
	/* The word is free now: the last REQUEUE wakes the waiter. */
	ck_assert_msg(join_within(a.requeuer, NULL, TEST_WAIT_NS),
		      "REQUEUE did not return once the lock word stopped changing");
	window_close();
	unpin(pthread_self());
	ck_assert(join_within(w.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&w.result), 0);
	ck_assert_msg(restarted && ok,
		      "REQUEUE retrying on a lock word that kept changing (%lu changes) was never interrupted by a signal (%d delivered) and restarted%s",
		      changes, atomic_load(&sig_count),
		      ok ? "" : ", until the word stopped changing");
	close(a.fd);
}
END_TEST

/* ---- Moved waiters when WAITERS cannot be put back ---- */

#define MOVED	3

static unsigned long owner_check_saved;

/* Unchecked fixture: owner checks at their longest interval. */
static void owner_checks_slow(void)
{
	if (!param_read("owner_check_ns", &owner_check_saved))
		owner_check_saved = 0;
	param_write("owner_check_ns", 100 * NSEC_PER_MSEC);
}

static void owner_checks_restore(void)
{
	if (owner_check_saved)
		param_write("owner_check_ns", owner_check_saved);
}

struct rearm {
	uint32_t *lock;			/* the unlocker's mapping */
	uint32_t *alias;		/* the same page, mapped again */
	uint32_t owner;			/* written back through @alias */
	atomic_bool done;		/* the UNLOCK released the word */
	atomic_bool caught;		/* ... and was still in its window */
};

/*
 * Waits for the UNLOCK to release the word (it is then in its window),
 * makes the unlocker's mapping read-only and, through the other mapping,
 * names a live owner again, which ends the window: WAITERS cannot be put
 * back, and no owner death will wake the moved waiters either. If the
 * window ran out first (a slow machine), the UNLOCK has put WAITERS back
 * already: the word is not 0 then, and it is left alone (@caught false).
 */
static void *rearm_main(void *p)
{
	struct rearm *r = p;
	uint32_t zero = 0;
	bool ok;

	WAIT_UNTIL(ok, !(word_load(r->lock) & TID_MASK), TEST_WAIT_NS);
	if (ok) {
		make_read_only(r->lock);
		atomic_store(&r->caught,
			     __atomic_compare_exchange_n(r->alias, &zero,
							 r->owner, false,
							 __ATOMIC_SEQ_CST,
							 __ATOMIC_SEQ_CST));
	}
	atomic_store(&r->done, ok);
	return NULL;
}

/*
 * One round: MOVED waiters moved onto a lock the caller holds, then its
 * UNLOCK, held in its window after the release while the word turns
 * read-only. Every moved waiter must be woken. They all return 0 also
 * when the test thread came late: when the window ran out first, WAITERS
 * went back and the poller finds the lock left free; and while the UNLOCK
 * waits in its window the word is free, so the poller may take the moved
 * waiters off one by one (then the UNLOCK may find none to wake).
 * Return: whether the UNLOCK was caught in its window with a waiter left
 * to wake, so that the word's turning read-only was what it met.
 */
static bool rearm_round(int fd)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	static struct waiter w[MOVED];
	uint32_t cond = 0, woken, moved;
	struct rearm r = { 0 };
	pthread_t t;
	unsigned int i;
	int mfd;

	mfd = memfd_create("tofutex-lock", MFD_CLOEXEC);
	ck_assert_int_ge(mfd, 0);
	ck_assert_int_eq(ftruncate(mfd, (off_t)psz), 0);
	r.lock = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	r.alias = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ck_assert(r.lock != MAP_FAILED && r.alias != MAP_FAILED);
	close(mfd);
	r.owner = test_gettid();

	for (i = 0; i < MOVED; i++)
		waiter_start(&w[i], fd, &cond, 0, now_ns() + LONG_DEADLINE_NS);
	__atomic_store_n(r.lock, r.owner, __ATOMIC_RELEASE);
	ck_assert_int_eq(raw_requeue(fd, &cond, r.lock, 0, 0, MOVED, &woken,
				     &moved), 0);
	ck_assert_uint_eq(moved, MOVED);
	ck_assert_uint_eq(word_load(r.lock), r.owner | WAITERS);

	window_open(getpid(), WINDOW_REQUEUE_RELEASE, NSEC_PER_SEC);
	ck_assert_int_eq(pthread_create(&t, NULL, rearm_main, &r), 0);
	ck_assert_int_eq(raw_unlock(fd, r.lock, &woken), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	window_close();
	ck_assert_msg(atomic_load(&r.done), "the UNLOCK never released the word");
	ck_assert_msg(woken <= 1, "UNLOCK woke %u moved waiters", woken);

	for (i = 0; i < MOVED; i++) {
		ck_assert_msg(join_within(w[i].thread, NULL, TEST_WAIT_NS),
			      "moved waiter %u of %u still asleep on a lock word that %s",
			      i + 1, MOVED,
			      atomic_load(&r.caught) ? "cannot be marked" :
						       "was left free");
		ck_assert_int_eq(atomic_load(&w[i].result), 0);
	}
	munmap(r.lock, psz);
	munmap(r.alias, psz);
	return atomic_load(&r.caught) && woken == 1;
}

START_TEST(test_requeue_rearm_fails_wakes_moved)
{
	unsigned int round;
	int fd = dev_open();

	for (round = 0; round < WINDOW_ROUNDS; round++)
		if (rearm_round(fd))
			break;
	if (round == WINDOW_ROUNDS)
		printf("SKIPPED: test_requeue_rearm_fails_wakes_moved: in %u rounds the UNLOCK's window ran out, or the poller emptied the queue, before the word turned read-only: only wake-ups on a lock left free checked\n",
		       WINDOW_ROUNDS);
	close(fd);
}
END_TEST

/*
 * Two waiters moved onto a lock held by the caller; the unlock wakes the
 * first, which never takes the lock. The second must not sleep on the
 * free lock until its deadline.
 */
START_TEST(test_requeue_woken_never_locks)
{
	uint32_t cond = 0, lock, woken, moved;
	static struct waiter w[2];
	int fd = dev_open();

	waiter_start(&w[0], fd, &cond, 0, now_ns() + LONG_DEADLINE_NS);
	waiter_start(&w[1], fd, &cond, 0, now_ns() + LONG_DEADLINE_NS);
	lock = test_gettid();
	ck_assert_int_eq(raw_requeue(fd, &cond, &lock, 0, 0, 2, &woken,
				     &moved), 0);
	ck_assert_uint_eq(moved, 2);
	ck_assert_int_eq(raw_unlock(fd, &lock, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	ck_assert(join_within(w[0].thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&w[0].result), 0);
	ck_assert_msg(join_within(w[1].thread, NULL, TEST_WAIT_NS),
		      "a moved waiter slept on a free lock whose woken waiter never came");
	ck_assert_int_eq(atomic_load(&w[1].result), 0);
	/* It left to take the lock, which nobody took. */
	ck_assert_uint_eq(word_load(&lock) & TID_MASK, 0);
	close(fd);
}
END_TEST

/* ---- A SWAP moved before its first sleep ---- */

struct dier {
	uint32_t *lock;
	atomic_uint tid;
	atomic_bool die;
};

static void *dier_main(void *p)
{
	struct dier *d = p;
	bool ok;

	/* The word is free and nobody else takes it: no LOCK needed. */
	__atomic_store_n(d->lock, test_gettid(), __ATOMIC_RELEASE);
	atomic_store(&d->tid, test_gettid());
	WAIT_UNTIL(ok, atomic_load(&d->die), TEST_WAIT_NS);
	TCHECK(ok, "never told to die");
	return NULL;	/* exits holding the lock */
}

struct swapper {
	int fd;
	uint32_t *wait, *wake;
	atomic_uint tid;
	atomic_int result;
	pthread_t thread;
};

static void *swapper_main(void *p)
{
	struct swapper *s = p;
	struct tofutex_swap a;

	atomic_store(&s->tid, test_gettid());
	memset(&a, 0, sizeof(a));
	a.wait_uaddr = (uintptr_t)s->wait;
	a.wake_uaddr = (uintptr_t)s->wake;
	a.flags = TOFUTEX_WAIT_DEADLINE;
	a.deadline_ns = now_ns() + LONG_DEADLINE_NS;
	atomic_store(&s->result, ioctl(s->fd, TOFUTEX_IOC_SWAP, &a) ? errno : 0);
	return NULL;
}

/*
 * One round: the SWAP is held after queuing, before its first sleep,
 * while the test moves it onto a lock whose owner then exits: the SWAP
 * must notice, as every moved waiter does, and its WAIT half return 0.
 * Return: whether the SWAP was still in its window, not asleep, once
 * moved; if the window ran out first (a slow machine), it was moved
 * asleep like any waiter, and must notice all the same.
 */
static bool swap_moved_round(int fd)
{
	uint32_t cond = 0, lock = 0, other = 0, moved = 0;
	struct dier d = { 0 };
	struct swapper s = { 0 };
	struct waiter x;
	pthread_t owner;
	uint64_t end;
	bool ok, held = false;

	d.lock = &lock;
	ck_assert_int_eq(pthread_create(&owner, NULL, dier_main, &d), 0);
	WAIT_UNTIL(ok, atomic_load(&d.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	/* The SWAP's wakee: with one, the SWAP sleeps through wake_local.c. */
	waiter_start(&x, fd, &other, 0, now_ns() + LONG_DEADLINE_NS);

	window_open(getpid(), WINDOW_SWAP_QUEUED, NSEC_PER_SEC);
	s.fd = fd;
	s.wait = &cond;
	s.wake = &other;
	atomic_store(&s.result, -1);
	ck_assert_int_eq(pthread_create(&s.thread, NULL, swapper_main, &s), 0);
	end = now_ns() + TEST_WAIT_NS;
	while (!moved && now_ns() < end) {
		/* Asleep before the move: the window ran out. */
		held = !asleep_in_ioctl(atomic_load(&s.tid), TOFUTEX_IOC_SWAP);
		ck_assert_int_eq(raw_requeue(fd, &cond, &lock, 0, 0, 1, NULL,
					     &moved), 0);
		if (!moved)
			sleep_ns(NSEC_PER_MSEC / 10);
	}
	ck_assert_msg(moved, "the SWAP never queued on its wait word");
	/* Asleep after it: it ran out before the test looked. */
	held = held &&
	       !asleep_in_ioctl(atomic_load(&s.tid), TOFUTEX_IOC_SWAP);
	atomic_store(&d.die, true);
	ck_assert(join_within(owner, NULL, TEST_WAIT_NS));
	__atomic_add_fetch(&cond, 1, __ATOMIC_RELEASE);	/* ends the window */

	ck_assert_msg(join_within(s.thread, NULL, TEST_WAIT_NS),
		      "a SWAP moved %s never noticed that the lock's owner died",
		      held ? "before its first sleep" : "asleep");
	window_close();
	ck_assert_int_eq(atomic_load(&s.result), 0);
	ck_assert(join_within(x.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&x.result), 0);
	return held;
}

START_TEST(test_swap_moved_before_sleep_owner_dies)
{
	unsigned int round;
	int fd = dev_open();

	for (round = 0; round < WINDOW_ROUNDS; round++)
		if (swap_moved_round(fd))
			break;
	if (round == WINDOW_ROUNDS)
		printf("SKIPPED: test_swap_moved_before_sleep_owner_dies: the SWAP's window ran out before it was moved in %u rounds: only moves of a sleeping SWAP checked\n",
		       WINDOW_ROUNDS);
	close(fd);
}
END_TEST

/* ---- Write-backs that fail after the call acted ---- */

struct requeue_call {
	int fd;
	struct tofutex_requeue *arg;	/* alone on its page */
	atomic_int result;
	pthread_t thread;
};

static void *requeue_call_main(void *p)
{
	struct requeue_call *c = p;

	atomic_store(&c->result,
		     ioctl(c->fd, TOFUTEX_IOC_REQUEUE, c->arg) ? errno : 0);
	return NULL;
}

/*
 * REQUEUE wakes the one waiter, then waits in its window before writing
 * its counts back, while the test makes the argument's page read-only.
 */
START_TEST(test_requeue_writeback_fails_after_acting)
{
	uint32_t cond = 0, lock = 0;
	struct requeue_call c = { 0 };
	struct waiter w;
	bool ok;

	c.fd = dev_open();
	c.arg = own_page();
	requeue_arg(c.arg, &cond, &lock, 0, 1, 0);
	atomic_store(&c.result, -1);
	waiter_start(&w, c.fd, &cond, 0, now_ns() + LONG_DEADLINE_NS);

	window_open(getpid(), WINDOW_REQUEUE_RESULT, NSEC_PER_SEC);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, requeue_call_main,
					&c), 0);
	WAIT_UNTIL(ok, atomic_load(&w.result) != -1, TEST_WAIT_NS);
	ck_assert(ok);
	make_read_only(c.arg);
	__atomic_add_fetch(&cond, 1, __ATOMIC_RELEASE);	/* ends the window */
	ck_assert(join_within(c.thread, NULL, TEST_WAIT_NS));
	window_close();
	ck_assert_int_eq(atomic_load(&w.result), 0);
	ck_assert_msg(atomic_load(&c.result) == 0,
		      "REQUEUE that woke a waiter failed with %s: a retry would wake another",
		      strerror(atomic_load(&c.result)));
	close(c.fd);
}
END_TEST

struct swap_call {
	int fd;
	struct tofutex_swap *arg;	/* alone on its page */
	atomic_uint tid;
	atomic_int result;
	pthread_t thread;
};

static void *swap_call_main(void *p)
{
	struct swap_call *c = p;

	atomic_store(&c->tid, test_gettid());
	atomic_store(&c->result,
		     ioctl(c->fd, TOFUTEX_IOC_SWAP, c->arg) ? errno : 0);
	return NULL;
}

/*
 * SWAP wakes its wakee and sleeps; meanwhile its argument's page turns
 * read-only, so @woken cannot be written back when it is woken.
 */
START_TEST(test_swap_writeback_fails_after_acting)
{
	uint32_t wait_word = 0, wake_word = 0;
	struct swap_call c = { 0 };
	struct waiter x;
	bool ok;

	c.fd = dev_open();
	c.arg = own_page();
	c.arg->wait_uaddr = (uintptr_t)&wait_word;
	c.arg->wake_uaddr = (uintptr_t)&wake_word;
	c.arg->flags = TOFUTEX_WAIT_DEADLINE;
	c.arg->deadline_ns = now_ns() + LONG_DEADLINE_NS;
	atomic_store(&c.result, -1);
	waiter_start(&x, c.fd, &wake_word, 0, now_ns() + LONG_DEADLINE_NS);

	ck_assert_int_eq(pthread_create(&c.thread, NULL, swap_call_main, &c),
			 0);
	WAIT_UNTIL(ok, atomic_load(&c.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert(join_within(x.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&x.result), 0);
	wait_asleep_in(atomic_load(&c.tid), TOFUTEX_IOC_SWAP, "SWAP");
	make_read_only(c.arg);
	__atomic_add_fetch(&wait_word, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(fd_wake(c.fd, &wait_word, 1), 1);
	ck_assert(join_within(c.thread, NULL, TEST_WAIT_NS));
	ck_assert_msg(atomic_load(&c.result) == 0,
		      "SWAP that woke a waiter failed with %s: a retry would wake another",
		      strerror(atomic_load(&c.result)));
	close(c.fd);
}
END_TEST

static Suite *requeue_race_suite(void)
{
	Suite *s = suite_create("requeue_race");
	TCase *tc;

	tc = tcase_create("windows");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_add_unchecked_fixture(tc, NULL, window_close);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_requeue_bounded_by_queued, 0, 2);
	tcase_add_test(tc, test_requeue_arm_changing_word_signal);
	tcase_add_test(tc, test_swap_moved_before_sleep_owner_dies);
	tcase_add_test(tc, test_requeue_writeback_fails_after_acting);
	suite_add_tcase(s, tc);

	/* Owner checks at their longest, so that the poller rarely drains. */
	tc = tcase_create("windows-slow-checks");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_add_unchecked_fixture(tc, owner_checks_slow, window_close);
	tcase_add_unchecked_fixture(tc, NULL, owner_checks_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_requeue_rearm_fails_wakes_moved);
	suite_add_tcase(s, tc);

	tc = tcase_create("no-window");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_requeue_woken_never_locks);
	tcase_add_test(tc, test_swap_writeback_fails_after_acting);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(requeue_race_suite());
}
