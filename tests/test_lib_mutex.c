// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex on whichever backend it chose (tofutex(3)): the backend
 * choice, mutual exclusion, clocks, robust semantics (EOWNERDEAD,
 * ENOTRECOVERABLE), a word shared with another process (EPERM), the fork
 * idiom, and wait/wake/swap. Nothing here reads module statistics, so the
 * same program runs on the module backend, with TOFUTEX_BACKEND=futex,
 * with the module unloaded, and natively without the module.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "common.h"
#include "syscalls.h"

#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

static uint32_t mword(tofutex_mutex_t *m)
{
	return word_load(&m->word);
}

/* An absolute CLOCK_REALTIME time @rel_ns from now, as a timespec. */
static struct timespec rt_in(uint64_t rel_ns)
{
	return realtime_in(rel_ns);
}

/* ---- backend ---- */

START_TEST(test_backend_reported)
{
	struct tofutex_stats st;
	uint64_t feat = 0;
	uint32_t abi = 0;
	int b = tofutex_backend();

	ck_assert_int_eq(b, expected_backend());
	ck_assert_int_eq(tofutex_backend(), b);
	if (b == TOFUTEX_BACKEND_FUTEX) {
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &st),
				 ENOTSUP);
		ck_assert_int_eq(tofutex_version(&abi, &feat), ENOTSUP);
	} else {
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &st), 0);
		ck_assert_int_eq(tofutex_version(&abi, &feat), 0);
		ck_assert_uint_eq(abi, TOFUTEX_ABI_VERSION);
	}
}
END_TEST

/* ---- mutual exclusion ---- */

struct excl {
	tofutex_mutex_t m;
	unsigned long iters;
	unsigned long counter;
	unsigned int sleep_every;
	atomic_int inside;	/* relaxed: only the lock orders @counter */
};

static void *excl_main(void *arg)
{
	struct excl *e = arg;
	unsigned long i;
	int r;

	for (i = 0; i < e->iters; i++) {
		r = tofutex_mutex_lock(&e->m);
		if (r) {
			TFAIL("lock = %d", r);
			return NULL;
		}
		TCHECK(atomic_fetch_add_explicit(&e->inside, 1, memory_order_relaxed) == 0,
		       "two owners");
		e->counter++;
		busy_work(50);
		/* Now and then hold it long enough that others sleep. */
		if (e->sleep_every && i % e->sleep_every == 0)
			sleep_ns(200 * NSEC_PER_USEC);
		atomic_fetch_sub_explicit(&e->inside, 1, memory_order_relaxed);
		r = tofutex_mutex_unlock(&e->m);
		TCHECK(r == 0, "unlock = %d", r);
	}
	return NULL;
}

/* _i: 0 spins only, 1 also sleeps in the critical section. */
START_TEST(test_mutual_exclusion)
{
	struct excl e = {
		.m = TOFUTEX_MUTEX_INITIALIZER,
		.iters = scaled(_i ? 500 : 20000, 50),
		.sleep_every = _i ? 50 : 0,
	};
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, excl_main, &e), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, 2 * TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(e.counter, 4 * e.iters);
	ck_assert_uint_eq(mword(&e.m), 0);
	ck_assert_int_eq(tofutex_mutex_destroy(&e.m), 0);
}
END_TEST

/* ---- clocks ---- */

struct holder {
	tofutex_mutex_t *m;
	atomic_int release;
	atomic_int locked;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	int r = tofutex_mutex_lock(h->m);

	TCHECK(r == 0, "holder: lock = %d", r);
	atomic_store(&h->locked, 1);
	while (!atomic_load(&h->release))
		sleep_ns(NSEC_PER_MSEC);
	/* release == 2: die holding it. */
	if (atomic_load(&h->release) == 2)
		pthread_exit(NULL);
	r = tofutex_mutex_unlock(h->m);
	TCHECK(r == 0, "holder: unlock = %d", r);
	return NULL;
}

static pthread_t hold_in_thread(struct holder *h)
{
	pthread_t t;
	bool ok;

	ck_assert_int_eq(pthread_create(&t, NULL, holder_main, h), 0);
	WAIT_UNTIL(ok, atomic_load(&h->locked), TEST_WAIT_NS);
	ck_assert(ok);
	return t;
}

START_TEST(test_clocks_timeout)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct timespec ts, bad = { 0, -1 };
	pthread_t t = hold_in_thread(&h);

	/* pthread's clock: CLOCK_REALTIME. */
	ts = rt_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, &ts), ETIMEDOUT);
	ts = rt_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_REALTIME, &ts),
			 ETIMEDOUT);
	ts = ts_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts),
			 ETIMEDOUT);
	/* A monotonic "soon" is decades ago on the realtime clock. */
	ts = ts_in(3600 * NSEC_PER_SEC);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, &ts), ETIMEDOUT);
	/* Other clocks, bad timespecs, NULL. */
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_BOOTTIME, &ts),
			 EINVAL);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID,
						 &ts), EINVAL);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_REALTIME, &bad),
			 EINVAL);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, NULL), EINVAL);

	atomic_store(&h.release, 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	/* Free: taken whatever the deadline, on either clock. */
	ts = (struct timespec){ 0, 0 };
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_REALTIME, &ts), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
}
END_TEST

/* Released before the deadline: taken, on either clock (_i 0 or 1). */
/*
 * A timed lock checks its timespec only when it must wait, as glibc's
 * robust pthread_mutex_clocklock() does: a free mutex is taken, a relock
 * is EDEADLK, a word left free with OWNER_DIED is taken over; a held one
 * is EINVAL for a bad tv_nsec, ETIMEDOUT for a negative tv_sec. The
 * clock is checked every time, as glibc's clocklock checks it.
 */
START_TEST(test_clocks_deadline_checked_to_wait)
{
	static const struct timespec bad[] = {
		{ 0, 1000000000L }, { 0, -1 }, { -1, 1000000000L },
		{ 1L << 40, 1000000000L },
	};
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct timespec past = { -1, 0 };
	pthread_t t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t c = 0; c < 2; c++) {
			ck_assert_int_eq(tofutex_mutex_clocklock(&m, clocks[c],
								 &bad[i]), 0);
			ck_assert_int_eq(tofutex_mutex_clocklock(&m, clocks[c],
								 &bad[i]),
					 EDEADLK);
			ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
		}
		ck_assert_int_eq(tofutex_mutex_timedlock(&m, &bad[i]), 0);
		ck_assert_int_eq(tofutex_mutex_timedlock(&m, &bad[i]), EDEADLK);
		ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
		ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_BOOTTIME,
							 &bad[i]), EINVAL);
	}
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_BOOTTIME, &past),
			 EINVAL);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, NULL), EINVAL);

	/* A word left free with OWNER_DIED: taken over, EOWNERDEAD. */
	__atomic_store_n(&m.word, TOFUTEX_OWNER_DIED, __ATOMIC_RELAXED);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, &bad[0]), EOWNERDEAD);
	ck_assert_int_eq(tofutex_mutex_consistent(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);

	/* Held by another thread: a bad tv_nsec before a negative tv_sec. */
	t = hold_in_thread(&h);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(tofutex_mutex_timedlock(&m, &bad[i]), EINVAL);
		ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC,
							 &bad[i]), EINVAL);
	}
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, &past), ETIMEDOUT);
	atomic_store(&h.release, 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
}
END_TEST

START_TEST(test_clocks_released_in_time)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	clockid_t clk = _i ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	pthread_t t = hold_in_thread(&h);
	struct timespec ts;

	ts = _i ? rt_in(TEST_WAIT_NS) : ts_in(TEST_WAIT_NS);
	atomic_store(&h.release, 1);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, clk, &ts), 0);
	ck_assert_uint_eq(mword(&m) & TID_MASK, test_gettid());
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
}
END_TEST

struct rt_locker {
	tofutex_mutex_t *m;
	struct timespec deadline;
	atomic_int started;
	atomic_int done;
	int ret;
};

static void *rt_locker_main(void *arg)
{
	struct rt_locker *l = arg;

	atomic_store(&l->started, 1);
	l->ret = tofutex_mutex_timedlock(l->m, &l->deadline);
	atomic_store(&l->done, 1);
	return NULL;
}

/*
 * A realtime deadline follows clock_settime(): an hour away, it passes when
 * the clock is stepped two hours forward. Root in a guest only; the clock
 * is stepped back afterwards.
 */
START_TEST(test_clocks_realtime_follows_settime)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct rt_locker l = { .m = &m };
	pthread_t t, lt;
	bool ok;

	if (!settime_allowed()) {
		printf("skipped: needs root and TOFUTEX_TEST_SETTIME=1\n");
		return;
	}
	t = hold_in_thread(&h);
	l.deadline = rt_in(3600 * NSEC_PER_SEC);
	ck_assert_int_eq(pthread_create(&lt, NULL, rt_locker_main, &l), 0);
	WAIT_UNTIL(ok, atomic_load(&l.started), TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(50 * NSEC_PER_MSEC);
	ck_assert(!atomic_load(&l.done));
	realtime_step(2 * 3600);
	WAIT_UNTIL(ok, atomic_load(&l.done), TEST_WAIT_NS);
	realtime_step(-2 * 3600);
	ck_assert_msg(ok, "timedlock did not follow the clock");
	ck_assert_int_eq(l.ret, ETIMEDOUT);
	ck_assert(join_within(lt, NULL, TEST_WAIT_NS));
	atomic_store(&h.release, 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
}
END_TEST

/* ---- robust: a dead owner ---- */

static void *lock_and_exit_main(void *arg)
{
	int r = tofutex_mutex_lock(arg);

	TCHECK(r == 0, "lock = %d", r);
	pthread_exit(NULL);
}

/*
 * A thread locks @m and exits. pthread_join() returns as the thread
 * starts its exit; the kernel forgets the TID a moment later, and only
 * then does the thread count as dead (tofutex(3), NOTES): wait for that.
 */
static void die_holding(tofutex_mutex_t *m)
{
	char path[64];
	pthread_t t;
	bool ok;

	ck_assert_int_eq(pthread_create(&t, NULL, lock_and_exit_main, m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_ne(mword(m) & TID_MASK, 0);
	snprintf(path, sizeof(path), "/proc/self/task/%u",
		 mword(m) & TID_MASK);
	WAIT_UNTIL(ok, access(path, F_OK) != 0, TEST_WAIT_NS);
	ck_assert_msg(ok, "%s still there", path);
}

/* How: 0 trylock, 1 lock, 2 timedlock, 3 clocklock (monotonic). */
static int lock_how(tofutex_mutex_t *m, int how)
{
	struct timespec rt = rt_in(TEST_WAIT_NS), mono = ts_in(TEST_WAIT_NS);

	switch (how) {
	case 0:
		return tofutex_mutex_trylock(m);
	case 1:
		return tofutex_mutex_lock(m);
	case 2:
		return tofutex_mutex_timedlock(m, &rt);
	default:
		return tofutex_mutex_clocklock(m, CLOCK_MONOTONIC, &mono);
	}
}

START_TEST(test_robust_owner_dead)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();

	die_holding(&m);
	if (_i == 0) {
		/*
		 * trylock does not ask whether the owner lives, as glibc's
		 * does not: EBUSY, the word untouched; a lock takes it over.
		 */
		ck_assert_int_eq(tofutex_mutex_trylock(&m), EBUSY);
		ck_assert_uint_eq(mword(&m) & OWNER_DIED, 0);
		ck_assert_int_eq(tofutex_mutex_lock(&m), EOWNERDEAD);
	} else {
		ck_assert_int_eq(lock_how(&m, _i), EOWNERDEAD);
	}
	ck_assert_uint_eq(mword(&m) & (TID_MASK | OWNER_DIED),
			  tid | OWNER_DIED);
	ck_assert_int_eq(tofutex_mutex_consistent(&m), 0);
	ck_assert_uint_eq(mword(&m) & (TID_MASK | OWNER_DIED), tid);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(mword(&m), 0);
	/* Made consistent: an ordinary mutex again. */
	ck_assert_int_eq(lock_how(&m, _i), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
}
END_TEST

struct blocked {
	tofutex_mutex_t *m;
	int how;
	atomic_int started;
	int ret;
};

static void *blocked_main(void *arg)
{
	struct blocked *b = arg;

	atomic_store(&b->started, 1);
	b->ret = lock_how(b->m, b->how);
	if (b->ret == 0 || b->ret == EOWNERDEAD) {
		if (b->ret == EOWNERDEAD)
			tofutex_mutex_consistent(b->m);
		tofutex_mutex_unlock(b->m);
	}
	return NULL;
}

/* A waiter blocked when the owner dies gets EOWNERDEAD (_i: 1..3). */
START_TEST(test_robust_waiter_sees_death)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct blocked b = { .m = &m, .how = _i };
	pthread_t owner, t;
	bool ok;

	owner = hold_in_thread(&h);
	ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &b), 0);
	WAIT_UNTIL(ok, atomic_load(&b.started), TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(30 * NSEC_PER_MSEC);
	/* The holder exits without unlocking. */
	atomic_store(&h.release, 2);
	ck_assert(join_within(owner, NULL, TEST_WAIT_NS));
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(b.ret, EOWNERDEAD);
	ck_assert_uint_eq(mword(&m), 0);
}
END_TEST

/*
 * EOWNERDEAD, then unlock without consistent: every later lock, trylock,
 * timedlock fails with ENOTRECOVERABLE, including a thread blocked at the
 * time; init makes the mutex usable again.
 */
START_TEST(test_robust_not_recoverable)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct blocked b = { .m = &m, .how = 1 };
	pthread_t t;
	bool ok;
	int how;

	die_holding(&m);
	ck_assert_int_eq(tofutex_mutex_lock(&m), EOWNERDEAD);
	ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &b), 0);
	WAIT_UNTIL(ok, atomic_load(&b.started), TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(b.ret, ENOTRECOVERABLE);
	for (how = 0; how < 4; how++)
		ck_assert_int_eq(lock_how(&m, how), ENOTRECOVERABLE);
	ck_assert_uint_eq(mword(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(tofutex_mutex_destroy(&m), 0);
	ck_assert_int_eq(tofutex_mutex_init(&m), 0);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
}
END_TEST

/*
 * A failing trylock makes no system call, as glibc's makes none: a word
 * held by a live thread, by the caller, by a thread that exited (no lock
 * has taken it over yet; the kernel did not mark it, since glibc owns the
 * robust list) or by another process is EBUSY without asking who holds it;
 * a word left free with OWNER_DIED is taken over, EOWNERDEAD. Counted
 * under a seccomp filter in a child (syscalls.h).
 */
static const char *const trylock_cases[] = {
	"held by a live thread", "held with WAITERS", "held by the caller",
	"held by an exited thread", "held by another process",
	"free with OWNER_DIED",
};

static int trylock_no_syscall_child(int unused)
{
	tofutex_mutex_t live = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_mutex_t m[6] = { TOFUTEX_MUTEX_INITIALIZER };
	static const int expect[6] = { EBUSY, EBUSY, EBUSY, EBUSY, EBUSY,
				       EOWNERDEAD };
	struct holder h = { .m = &live };
	int r, i, seen;

	hold_in_thread(&h);
	m[0].word = mword(&live);
	m[1].word = mword(&live) | TOFUTEX_WAITERS;
	ck_assert_int_eq(tofutex_mutex_lock(&m[2]), 0);
	die_holding(&m[3]);
	m[4].word = (uint32_t)getppid();
	m[5].word = OWNER_DIED;
	/* The library caches the TID at its first call. */
	ck_assert_int_eq(tofutex_mutex_trylock(&m[2]), EBUSY);
	(void)unused;
	if (!syscalls_trap())
		return 1;
	for (i = 0; i < 6; i++) {
		seen = syscalls_seen;
		r = tofutex_mutex_trylock(&m[i]);
		if (syscalls_seen != seen)
			return 10 + i;
		if (r != expect[i])
			return 20 + i;
	}
	return 0;
}

START_TEST(test_trylock_held_no_syscall)
{
	int code = syscalls_in_child(trylock_no_syscall_child, 0);

	if (code < 0)
		return;
	ck_assert_msg(code < 10 || code >= 20,
		      "trylock on a word %s made a system call",
		      trylock_cases[code % 10]);
	ck_assert_msg(code < 20 || code >= 30,
		      "trylock on a word %s: wrong result",
		      trylock_cases[code % 10]);
	ck_assert_int_eq(code, 0);
}
END_TEST

/*
 * The library reads the clock as libc does, through the vDSO, not with
 * the system call (nor through an interposable clock_gettime()): where
 * libc's clock_gettime() makes no clock_gettime system call, a timed lock
 * of a held mutex that spins and waits until its deadline makes none
 * either, on each clock. Exit codes: 0 ok, 1 no filter, 2 libc's clock
 * needs the system call here, 10 + n the call in case n, 20 + n a wrong
 * result.
 */
static int clock_no_syscall_child(int unused)
{
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct timespec ts;
	pthread_t t = hold_in_thread(&h);
	int i, err;

	(void)unused;
	if (!syscalls_trap_one(__NR_clock_gettime))
		return 1;
	for (i = 0; i < 2; i++) {
		clock_gettime(clocks[i], &ts);
		if (syscalls_seen)
			return 2;
		ts.tv_nsec += 20 * NSEC_PER_MSEC;
		if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= NSEC_PER_SEC;
		}
		err = tofutex_mutex_clocklock(&m, clocks[i], &ts);
		if (syscalls_seen)
			return 10 + i;
		if (err != ETIMEDOUT)
			return 20 + i;
	}
	(void)t;
	return 0;
}

START_TEST(test_timedlock_reads_clock_without_syscall)
{
	int code;

#ifdef __SANITIZE_THREAD__
	/* Its runtime reads the clock with the system call itself. */
	printf("skipped: under ThreadSanitizer\n");
	return;
#endif
	code = syscalls_in_child(clock_no_syscall_child, 0);
	if (code < 0)
		return;
	if (code == 2) {
		printf("test_timedlock_reads_clock_without_syscall: libc's clock_gettime() makes the system call here (a clock source the vDSO cannot read): nothing to compare\n");
		return;
	}
	ck_assert_msg(code < 10 || code >= 20,
		      "a timed lock read the clock with the system call (%s)",
		      code == 10 ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME");
	ck_assert_msg(code < 20, "a timed lock of a held mutex: not ETIMEDOUT");
	ck_assert_int_eq(code, 0);
}
END_TEST

/* ---- process-private ---- */

/*
 * Two processes on one word in shared memory: while one holds it, the
 * other's lock functions fail with EPERM (trylock with EBUSY) and never
 * take it (_i: the parent or the child holds it). The parent locks only after fork(): the
 * child treats words its forking thread held at fork() as its own (the
 * fork idiom below).
 */
START_TEST(test_shared_word_eperm)
{
	struct shared {
		tofutex_mutex_t m;
		atomic_int held;
		atomic_int release;
	} *sh;
	int status, how, r;
	pid_t pid;
	bool ok;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (_i) {
			/*
			 * The parent holds it: every way fails with EPERM,
			 * trylock with EBUSY (pthread's trylock has no EPERM).
			 */
			WAIT_UNTIL(ok, atomic_load(&sh->held), TEST_WAIT_NS);
			if (!ok)
				_exit(2);
			for (how = 0; how < 4; how++) {
				r = lock_how(&sh->m, how);
				if (r != (how ? EPERM : EBUSY))
					_exit(10 + how);
			}
			_exit(0);
		}
		if (tofutex_mutex_lock(&sh->m))
			_exit(2);
		atomic_store(&sh->held, 1);
		while (!atomic_load(&sh->release))
			sleep_ns(NSEC_PER_MSEC);
		_exit(tofutex_mutex_unlock(&sh->m) ? 3 : 0);
	}
	if (_i) {
		ck_assert_int_eq(tofutex_mutex_lock(&sh->m), 0);
		atomic_store(&sh->held, 1);
	} else {
		WAIT_UNTIL(ok, atomic_load(&sh->held), TEST_WAIT_NS);
		ck_assert(ok);
		for (how = 0; how < 4; how++)
			ck_assert_int_eq(lock_how(&sh->m, how),
					 how ? EPERM : EBUSY);
		ck_assert_uint_ne(mword(&sh->m) & TID_MASK, test_gettid());
		atomic_store(&sh->release, 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x", status);
	if (_i)
		ck_assert_int_eq(tofutex_mutex_unlock(&sh->m), 0);
	ck_assert_uint_eq(mword(&sh->m), 0);
	munmap(sh, sizeof(*sh));
}
END_TEST

/* ---- fork: the prepare/parent/child idiom ---- */

static tofutex_mutex_t fork_m = TOFUTEX_MUTEX_INITIALIZER;
static int fork_prepare_ret = -1, fork_parent_ret = -1, fork_child_ret = -1;

static void fork_prepare(void)
{
	fork_prepare_ret = tofutex_mutex_lock(&fork_m);
}

static void fork_parent(void)
{
	fork_parent_ret = tofutex_mutex_unlock(&fork_m);
}

static void fork_child(void)
{
	fork_child_ret = tofutex_mutex_unlock(&fork_m);
}

/*
 * Handlers registered by the program after the library loaded: the child
 * handler unlocks what prepare locked, and the child then uses the mutex,
 * contended, on its own backend.
 */
START_TEST(test_fork_idiom)
{
	struct excl e = { .m = TOFUTEX_MUTEX_INITIALIZER, .iters = 2000,
			  .sleep_every = 100 };
	pthread_t t[2];
	int status, i;
	pid_t pid;

	ck_assert_int_eq(pthread_atfork(fork_prepare, fork_parent, fork_child),
			 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (fork_prepare_ret || fork_child_ret)
			_exit(2);
		if (tofutex_backend() != expected_backend())
			_exit(3);
		if (tofutex_mutex_lock(&fork_m) || tofutex_mutex_unlock(&fork_m))
			_exit(4);
		for (i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, excl_main, &e))
				_exit(5);
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		_exit(e.counter == 2 * e.iters && !tfailed() ? 0 : 6);
	}
	ck_assert_int_eq(fork_prepare_ret, 0);
	ck_assert_int_eq(fork_parent_ret, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x", status);
	ck_assert_uint_eq(mword(&fork_m), 0);
}
END_TEST

/*
 * TOFUTEX_SPIN_NS, read again in a fork() child: no user-space spin, the
 * longest, and a value the library must ignore; the mutex excludes and
 * makes progress under each.
 */
START_TEST(test_spin_budget_env)
{
	static const char *const values[] = { "0", "10000000", "5us" };
	struct excl e = { .m = TOFUTEX_MUTEX_INITIALIZER, .iters = 2000,
			  .sleep_every = 100 };
	pthread_t t[3];
	int status, i;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setenv("TOFUTEX_SPIN_NS", values[_i], 1))
			_exit(2);
		for (i = 0; i < 3; i++)
			if (pthread_create(&t[i], NULL, excl_main, &e))
				_exit(3);
		for (i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		_exit(e.counter == 3 * e.iters && !tfailed() &&
		      !mword(&e.m) ? 0 : 4);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "TOFUTEX_SPIN_NS=%s: child status %#x", values[_i],
		      status);
}
END_TEST

/* ---- wait, wake, swap ---- */

struct waiter {
	uint32_t *word;
	clockid_t clock;
	atomic_int started;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->started, 1);
	do {
		w->ret = tofutex_clockwait(w->word, 0, w->clock, NULL);
	} while (w->ret == 0 && !word_load(w->word));
	return NULL;
}

START_TEST(test_wait_wake)
{
	uint32_t word = 0;
	struct waiter w = { .word = &word, .clock = CLOCK_MONOTONIC };
	struct timespec ts;
	unsigned int woken = 0;
	pthread_t t;
	bool ok;

	ck_assert_int_eq(tofutex_wait(&word, 1, NULL), EAGAIN);
	ts = ts_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_wait(&word, 0, &ts), ETIMEDOUT);
	ts = rt_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_clockwait(&word, 0, CLOCK_REALTIME, &ts),
			 ETIMEDOUT);
	ck_assert_int_eq(tofutex_clockwait(&word, 0, CLOCK_BOOTTIME, &ts),
			 EINVAL);
	ck_assert_int_eq(tofutex_wake(&word, 1, &woken), 0);
	ck_assert_uint_eq(woken, 0);

	ck_assert_int_eq(pthread_create(&t, NULL, waiter_main, &w), 0);
	WAIT_UNTIL(ok, atomic_load(&w.started), TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(20 * NSEC_PER_MSEC);
	__atomic_store_n(&word, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(tofutex_wake(&word, UINT_MAX, NULL), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_msg(w.ret == 0 || w.ret == EAGAIN, "wait = %d", w.ret);
}
END_TEST

struct pingpong {
	uint32_t turn;
	unsigned long rounds;
	int err;
};

static void *pong_main(void *arg)
{
	struct pingpong *p = arg;
	unsigned long i;
	int r;

	for (i = 0; i < p->rounds; i++) {
		while (word_load(&p->turn) != 1) {
			r = tofutex_wait(&p->turn, 0, NULL);
			TCHECK(r == 0 || r == EAGAIN, "pong wait = %d", r);
		}
		__atomic_store_n(&p->turn, 0, __ATOMIC_RELEASE);
		r = tofutex_wake(&p->turn, 1, NULL);
		TCHECK(r == 0, "pong wake = %d", r);
	}
	return NULL;
}

/* Swap as a hand-over between two threads: every round completes. */
START_TEST(test_swap_pingpong)
{
	struct pingpong p = { .rounds = scaled(2000, 50) };
	unsigned long i;
	pthread_t t;
	int r;

	ck_assert_int_eq(pthread_create(&t, NULL, pong_main, &p), 0);
	for (i = 0; i < p.rounds; i++) {
		__atomic_store_n(&p.turn, 1, __ATOMIC_RELEASE);
		r = tofutex_swap(&p.turn, 1, &p.turn, NULL);
		ck_assert_msg(r == 0 || r == EAGAIN, "swap = %d", r);
		while (word_load(&p.turn) != 0) {
			r = tofutex_wait(&p.turn, 1, NULL);
			ck_assert_msg(r == 0 || r == EAGAIN, "wait = %d", r);
		}
	}
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
}
END_TEST

static Suite *lib_mutex_suite(void)
{
	Suite *s = suite_create("lib_mutex");
	TCase *tc;

	tc = tcase_create("backend");
	tcase_add_test(tc, test_backend_reported);
	suite_add_tcase(s, tc);

	tc = tcase_create("exclusion");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_mutual_exclusion, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("clocks");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_clocks_timeout);
	tcase_add_test(tc, test_clocks_deadline_checked_to_wait);
	tcase_add_loop_test(tc, test_clocks_released_in_time, 0, 2);
	tcase_add_test(tc, test_clocks_realtime_follows_settime);
	suite_add_tcase(s, tc);

	tc = tcase_create("robust");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_robust_owner_dead, 0, 4);
	tcase_add_loop_test(tc, test_robust_waiter_sees_death, 1, 4);
	tcase_add_test(tc, test_robust_not_recoverable);
	tcase_add_test(tc, test_trylock_held_no_syscall);
	tcase_add_test(tc, test_timedlock_reads_clock_without_syscall);
	suite_add_tcase(s, tc);

	tc = tcase_create("process");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_shared_word_eperm, 0, 2);
	tcase_add_test(tc, test_fork_idiom);
	tcase_add_loop_test(tc, test_spin_budget_env, 0, 3);
	suite_add_tcase(s, tc);

	tc = tcase_create("waitwake");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_wait_wake);
	tcase_add_test(tc, test_swap_pingpong);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lib_mutex_suite());
}
