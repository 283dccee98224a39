// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, mutexes: a dynamically linked program
 * that calls glibc's pthread_mutex_* names and runs under tofutex-run
 * (LD_PRELOAD). Every documented error return of each type, mutual
 * exclusion, the pass-through of robust, priority-inheritance and
 * process-shared mutexes to glibc, fork() with held locks, a thread
 * that exits holding a lock, and a blocked locker that sleeps until the
 * unlock without waking in between. The first test fails when the preload is not
 * in effect, so that the rest cannot pass on glibc's own mutexes.
 */
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "sleeping.h"
#include "../syscalls.h"

#define TOFUTEX_PRELOAD_NAME "libtofutex-pthread.so"

/* The types that run on TO locks, and how each is made. */
enum { T_STATIC, T_NORMAL, T_DEFAULT, T_ADAPTIVE, T_ERRORCHECK, T_RECURSIVE,
       T_COUNT };

static void mutex_make(pthread_mutex_t *m, int t)
{
	static const int kind[T_COUNT] = {
		0, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_DEFAULT,
		PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_MUTEX_ERRORCHECK,
		PTHREAD_MUTEX_RECURSIVE,
	};
	pthread_mutexattr_t a;

	if (t == T_STATIC) {
		*m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
		return;
	}
	ck_assert_int_eq(pthread_mutexattr_init(&a), 0);
	ck_assert_int_eq(pthread_mutexattr_settype(&a, kind[t]), 0);
	ck_assert_int_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static bool deadlocks(int t)
{
	return t != T_ERRORCHECK && t != T_RECURSIVE;
}

/* Run @fn(@m) in a new thread, return its result. */
struct call {
	int (*fn)(pthread_mutex_t *);
	pthread_mutex_t *m;
	int ret;
};

static void *call_main(void *arg)
{
	struct call *c = arg;

	c->ret = c->fn(c->m);
	return NULL;
}

static int in_thread(int (*fn)(pthread_mutex_t *), pthread_mutex_t *m)
{
	struct call c = { .fn = fn, .m = m, .ret = -1 };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, call_main, &c), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	return c.ret;
}

static int lock_and_exit(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m);
}

static int timedlock_bad(pthread_mutex_t *m)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000000 };

	return pthread_mutex_timedlock(m, &ts);
}

static int timedlock_soon(pthread_mutex_t *m)
{
	struct timespec ts = realtime_in(50 * NSEC_PER_MSEC);

	return pthread_mutex_timedlock(m, &ts);
}

/* The preload is in effect, and a mutex's __lock holds its owner's TID. */
START_TEST(test_preload_in_effect)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	Dl_info info;

	ck_assert(dladdr((void *)pthread_mutex_lock, &info));
	ck_assert_msg(info.dli_fname &&
		      strstr(info.dli_fname, TOFUTEX_PRELOAD_NAME),
		      "pthread_mutex_lock is %s's, not the preload's: run under tofutex-run",
		      info.dli_fname ? info.dli_fname : "?");
	ck_assert(dladdr((void *)pthread_cond_wait, &info));
	ck_assert(strstr(info.dli_fname, TOFUTEX_PRELOAD_NAME));
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_uint_eq((uint32_t)m.__data.__lock, test_gettid());
	/* The owner is in the word; glibc's __owner stays 0 (BUGS). */
	ck_assert_int_eq(m.__data.__owner, 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(m.__data.__lock, 0);
}
END_TEST

/*
 * glibc's __owner field of a held mutex (_i: the type): 0 for NORMAL,
 * DEFAULT and ADAPTIVE_NP ones, whose holder is in the word alone; the
 * holder's TID for ERRORCHECK and RECURSIVE ones, as glibc sets it (BUGS).
 */
START_TEST(test_owner_field_by_type)
{
	pthread_mutex_t m;

	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_uint_eq((uint32_t)m.__data.__lock & 0x3fffffff,
			  test_gettid());
	if (deadlocks(_i))
		ck_assert_int_eq(m.__data.__owner, 0);
	else
		ck_assert_int_eq(m.__data.__owner, (int)test_gettid());
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(m.__data.__owner, 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

/* This thread's voluntary context switches (its sleeps), or -1. */
static long own_sleeps(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * tofutex-run(1), NOTES: the owner's timed relock of a NORMAL mutex,
 * which glibc lets sleep to its deadline, ends there too, but wakes every
 * 25 ms on the way: many sleeps, where glibc's makes one.
 */
START_TEST(test_stalled_relock_polls)
{
	pthread_mutex_t m;
	struct timespec ts;
	long before, after;

	mutex_make(&m, T_NORMAL);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	before = own_sleeps();
	ts = realtime_in(300 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
	after = own_sleeps();
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert(before >= 0 && after >= 0);
	ck_assert_msg(after - before >= 3,
		      "%ld sleeps in a 300 ms stalled relock: no polling",
		      after - before);
}
END_TEST

/* ---- errors, by type (_i: the type) ---- */

START_TEST(test_relock_by_owner)
{
	pthread_mutex_t m;
	struct timespec ts, mono;

	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ts = realtime_in(20 * NSEC_PER_MSEC);
	mono = ts_in(20 * NSEC_PER_MSEC);
	if (deadlocks(_i)) {
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
		ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC,
							 &mono), ETIMEDOUT);
		ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	} else if (_i == T_ERRORCHECK) {
		ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), EDEADLK);
		ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC,
							 &mono), EDEADLK);
		ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	} else {
		ck_assert_int_eq(pthread_mutex_lock(&m), 0);
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), 0);
		ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC,
							 &mono), 0);
		ck_assert_int_eq(pthread_mutex_trylock(&m), 0);
		/* Five levels: held until the fifth unlock. */
		for (int i = 0; i < 4; i++) {
			ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
			ck_assert_int_eq(in_thread(pthread_mutex_trylock, &m),
					 EBUSY);
		}
	}
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(in_thread(pthread_mutex_trylock, &m), 0);
}
END_TEST

START_TEST(test_unlock_by_other)
{
	pthread_mutex_t m;

	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	if (deadlocks(_i)) {
		/* glibc releases a NORMAL mutex for whoever unlocks it. */
		ck_assert_int_eq(in_thread(pthread_mutex_unlock, &m), 0);
		ck_assert_int_eq(in_thread(pthread_mutex_trylock, &m), 0);
	} else {
		ck_assert_int_eq(in_thread(pthread_mutex_unlock, &m), EPERM);
		ck_assert_int_eq(in_thread(pthread_mutex_trylock, &m), EBUSY);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	}
}
END_TEST

START_TEST(test_unlock_free)
{
	pthread_mutex_t m;

	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_unlock(&m), deadlocks(_i) ? 0 : EPERM);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	/*
	 * glibc's count of users went below 0 at the first unlock, and its
	 * destroy would fail with EBUSY for good (tofutex-run(1), BUGS).
	 */
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

START_TEST(test_held_by_other)
{
	pthread_mutex_t m;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000 };
	struct timespec neg = { .tv_sec = 0, .tv_nsec = -1 };
	struct timespec mono;

	mutex_make(&m, _i);
	ck_assert_int_eq(in_thread(lock_and_exit, &m), 0);
	/* The owner has exited: the mutex stays locked (not robust). */
	ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(timedlock_soon(&m), ETIMEDOUT);
	ck_assert_int_eq(in_thread(timedlock_soon, &m), ETIMEDOUT);
	mono = ts_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mono),
			 ETIMEDOUT);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad), EINVAL);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &neg), EINVAL);
	mono = ts_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID,
						 &mono), EINVAL);
	ck_assert_int_eq(pthread_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(pthread_mutex_consistent(&m), EINVAL);
	if (deadlocks(_i)) {
		/* As glibc: any thread may release it. */
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_int_eq(pthread_mutex_lock(&m), 0);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
	} else {
		ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
		ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	}
}
END_TEST

/*
 * glibc checks a timed lock's timespec only when it must wait
 * (pthread_mutex_timedlock.c: "If the thread does not block abstime must
 * not be checked"): a free mutex is taken and a RECURSIVE one relocked
 * whatever tv_nsec holds, an ERRORCHECK relock is EDEADLK; a relock of
 * the others waits, so a bad tv_nsec is EINVAL there, and a negative
 * tv_sec ETIMEDOUT, before tv_nsec is looked at (futex-internal.c). The
 * clock of pthread_mutex_clocklock() is checked every time.
 */
START_TEST(test_deadline_checked_to_wait)
{
	static const struct timespec bad[] = {
		{ 0, 1000000000 }, { 0, -1 }, { 1L << 40, 1000000000 },
	};
	struct timespec neg_sec = { -1, 1000000000 }, past = { -1, 0 };
	pthread_mutex_t m;

	mutex_make(&m, _i);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad[i]), 0);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC,
							 &bad[i]), 0);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_int_eq(pthread_mutex_clocklock(&m,
				 CLOCK_PROCESS_CPUTIME_ID, &bad[i]), EINVAL);
	}
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &neg_sec), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);

	/* Relocked by its owner. */
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (_i == T_RECURSIVE) {
			ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad[i]),
					 0);
			ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		} else {
			ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad[i]),
					 deadlocks(_i) ? EINVAL : EDEADLK);
		}
	}
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &neg_sec),
			 _i == T_RECURSIVE ? 0 :
			 deadlocks(_i) ? ETIMEDOUT : EDEADLK);
	if (_i == T_RECURSIVE)
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &past),
			 _i == T_RECURSIVE ? 0 :
			 deadlocks(_i) ? ETIMEDOUT : EDEADLK);
	if (_i == T_RECURSIVE)
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);

	/* Held by another thread, which has exited: every bad one waits. */
	ck_assert_int_eq(in_thread(lock_and_exit, &m), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad[i]), EINVAL);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &neg_sec), ETIMEDOUT);
	ck_assert_int_eq(in_thread(timedlock_bad, &m), EINVAL);
}
END_TEST

START_TEST(test_destroy)
{
	pthread_mutex_t m;

	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(pthread_mutex_consistent(&m), EINVAL);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
	/* A destroyed mutex may be initialised again. */
	mutex_make(&m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

/* A waiter gets the lock when the owner lets go. */
/*
 * A failing trylock makes no system call, as glibc's makes none: on a
 * mutex held by another thread, by one that exited holding it, or by the
 * caller (EBUSY; a RECURSIVE one is relocked). Counted under a seccomp
 * filter in a child (syscalls.h); the same holds on stock glibc.
 */
static const char *const trylock_cases[] = {
	"held by a live thread", "held by an exited thread",
	"held by the caller",
};

struct parked {
	pthread_mutex_t *m;
	atomic_int locked;
};

static void *lock_and_park(void *arg)
{
	struct parked *p = arg;

	if (pthread_mutex_lock(p->m))
		return NULL;
	atomic_store(&p->locked, 1);
	for (;;)
		pause();
	return NULL;
}

static int trylock_no_syscall_child(int type)
{
	pthread_mutex_t m[3];
	struct parked p = { .m = &m[0] };
	int expect[3] = { EBUSY, EBUSY, EBUSY };
	int r, i, seen;
	pthread_t t;
	bool ok;

	for (i = 0; i < 3; i++)
		mutex_make(&m[i], type);
	if (pthread_create(&t, NULL, lock_and_park, &p))
		return 2;
	WAIT_UNTIL(ok, atomic_load(&p.locked), TEST_WAIT_NS);
	if (!ok)
		return 3;
	if (in_thread(lock_and_exit, &m[1]))
		return 4;
	if (pthread_mutex_lock(&m[2]))
		return 5;
	if (type == T_RECURSIVE)
		expect[2] = 0;
	/* Anything done once per thread or process, done before. */
	r = pthread_mutex_trylock(&m[0]);
	if (r != EBUSY)
		return 6;
	if (!syscalls_trap())
		return 1;
	for (i = 0; i < 3; i++) {
		seen = syscalls_seen;
		r = pthread_mutex_trylock(&m[i]);
		if (syscalls_seen != seen)
			return 10 + i;
		if (r != expect[i])
			return 20 + i;
	}
	return 0;
}

START_TEST(test_trylock_held_no_syscall)
{
	int code = syscalls_in_child(trylock_no_syscall_child, _i);

	if (code < 0)
		return;
	ck_assert_msg(code < 10 || code >= 20,
		      "trylock on a mutex %s made a system call",
		      trylock_cases[code % 10]);
	ck_assert_msg(code < 20 || code >= 30,
		      "trylock on a mutex %s: wrong result",
		      trylock_cases[code % 10]);
	ck_assert_int_eq(code, 0);
}
END_TEST

START_TEST(test_lock_waits_for_release)
{
	struct call c = { .fn = lock_and_exit, .ret = -1 };
	pthread_mutex_t m;
	struct timespec ts;
	pthread_t t;

	mutex_make(&m, _i);
	c.m = &m;
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, call_main, &c), 0);
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(c.ret, 0);
	/* It exited holding the lock; a NORMAL unlock frees it again. */
	if (deadlocks(_i)) {
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ts = realtime_in(TEST_WAIT_NS);
		ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), 0);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	} else {
		ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
	}
}
END_TEST

/* ---- mutual exclusion, and proof that the TO lock took it ---- */

struct counter {
	pthread_mutex_t m;
	unsigned long n;
	unsigned long per_thread;
	int type;
};

static void *count_main(void *arg)
{
	struct counter *c = arg;
	struct timespec ts;
	unsigned long i;
	int r;

	for (i = 0; i < c->per_thread; i++) {
		switch (i % 3) {
		case 0:
			r = pthread_mutex_lock(&c->m);
			break;
		case 1:
			ts = realtime_in(TEST_WAIT_NS);
			r = pthread_mutex_timedlock(&c->m, &ts);
			break;
		default:
			while ((r = pthread_mutex_trylock(&c->m)) == EBUSY)
				sched_yield();
		}
		TCHECK(r == 0, "lock = %d", r);
		if (c->type == T_RECURSIVE)
			TCHECK(pthread_mutex_lock(&c->m) == 0, "relock");
		c->n++;
		if (c->type == T_RECURSIVE)
			TCHECK(pthread_mutex_unlock(&c->m) == 0, "unlock 2");
		r = pthread_mutex_unlock(&c->m);
		TCHECK(r == 0, "unlock = %d", r);
	}
	return NULL;
}

struct blocked {
	pthread_mutex_t m;
	uint32_t tid;
	long switches;
};

static long voluntary_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw;
}

static void *blocked_main(void *arg)
{
	struct blocked *b = arg;
	long before = voluntary_switches();

	__atomic_store_n(&b->tid, test_gettid(), __ATOMIC_RELEASE);
	pthread_mutex_lock(&b->m);
	b->switches = voluntary_switches() - before;
	pthread_mutex_unlock(&b->m);
	return NULL;
}

/*
 * A thread blocked on a held mutex sleeps until the unlock, as glibc's
 * does: none of these mutexes is robust, so there is no owner to watch
 * for death (a periodic check would wake it dozens of times a second).
 * Its voluntary context switches over a one-second wait stay few: the
 * sleep and the wake-up, and a little slack for the machine.
 */
START_TEST(test_blocked_locker_not_woken_until_unlock)
{
	struct blocked b = { .switches = -1 };
	pthread_t t;

	mutex_make(&b.m, _i);
	ck_assert_int_eq(pthread_mutex_lock(&b.m), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &b), 0);
	ck_assert(thread_asleep_within(&b.tid));
	sleep_ns(NSEC_PER_SEC);
	ck_assert_int_eq(pthread_mutex_unlock(&b.m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_msg(b.switches >= 0 && b.switches <= 10,
		      "the blocked locker woke %ld times in one second",
		      b.switches);
}
END_TEST

START_TEST(test_mutual_exclusion)
{
	struct counter c = { .per_thread = scaled(20000, 1000), .type = _i };
	pthread_t t[4];
	int i;

	tfail_reset();
	mutex_make(&c.m, _i);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, count_main, &c), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, 10 * TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(c.n, 4 * c.per_thread);
	ck_assert_int_eq(c.m.__data.__lock, 0);
}
END_TEST

/* Hold @m until another thread waits for it in the kernel (WAITERS). */
static void *hold_main(void *arg)
{
	pthread_mutex_t *m = arg;
	bool ok;

	TCHECK(pthread_mutex_lock(m) == 0, "lock");
	WAIT_UNTIL(ok, __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) &
		       TOFUTEX_WAITERS, TEST_WAIT_NS);
	TCHECK(ok, "the locker never waited with WAITERS set: word 0x%08x",
	       (uint32_t)m->__data.__lock);
	TCHECK(pthread_mutex_unlock(m) == 0, "unlock");
	return NULL;
}

/*
 * A lock that must wait for a sleeping owner goes to the kernel; the
 * owner keeps the mutex until it does, however late the lock comes.
 */
START_TEST(test_contended_lock_uses_backend)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct tofutex_stats before, after;
	bool module = tofutex_backend() == TOFUTEX_BACKEND_MODULE;
	pthread_t t;
	bool held;

	tfail_reset();
	if (module)
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &before), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_main, &m), 0);
	WAIT_UNTIL(held, __atomic_load_n(&m.__data.__lock, __ATOMIC_ACQUIRE),
		   TEST_WAIT_NS);
	ck_assert(held);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_uint_eq((uint32_t)m.__data.__lock & TOFUTEX_TID_MASK,
			  test_gettid());
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	if (module) {
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &after), 0);
		ck_assert_uint_gt(after.lock_calls, before.lock_calls);
	}
}
END_TEST

/* ---- glibc's mutexes stay glibc's ---- */

static void glibc_mutex(pthread_mutex_t *m, int robust, int protocol,
			int pshared, int type)
{
	pthread_mutexattr_t a;

	ck_assert_int_eq(pthread_mutexattr_init(&a), 0);
	ck_assert_int_eq(pthread_mutexattr_settype(&a, type), 0);
	ck_assert_int_eq(pthread_mutexattr_setrobust(&a, robust), 0);
	ck_assert_int_eq(pthread_mutexattr_setprotocol(&a, protocol), 0);
	ck_assert_int_eq(pthread_mutexattr_setpshared(&a, pshared), 0);
	ck_assert_int_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

START_TEST(test_robust_is_glibc)
{
	pthread_mutex_t m;

	glibc_mutex(&m, PTHREAD_MUTEX_ROBUST, PTHREAD_PRIO_NONE,
		    PTHREAD_PROCESS_PRIVATE, PTHREAD_MUTEX_NORMAL);
	ck_assert_int_eq(in_thread(lock_and_exit, &m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), EOWNERDEAD);
	ck_assert_int_eq(pthread_mutex_consistent(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

/*
 * A mutex not aligned for its 32-bit word (a member of a packed
 * structure) is glibc's, as without the preload: glibc's answers to
 * trylock (EBUSY held by another thread, the owner's relock of a
 * RECURSIVE one) and timedlock (a free one is taken), and its word (1
 * when held, not the owner's TID). On arm64 glibc's atomic accesses to
 * the misaligned word may fault (SIGBUS: the hardware does, an emulator
 * may not): then they fault as glibc's.
 */
static int trylock_in_thread(pthread_mutex_t *m)
{
	return pthread_mutex_trylock(m);
}

/* The checks, in a child; 0 or the step that failed. */
struct misaligned {
	pthread_mutex_t *m;
	int type;
};

static int misaligned_calls(void *arg)
{
	struct misaligned *a = arg;
	pthread_mutex_t *m = a->m;
	struct timespec ts = realtime_in(50 * NSEC_PER_MSEC);
	int lock;

	if (pthread_mutex_timedlock(m, &ts))
		return 10;
	memcpy(&lock, (char *)m + offsetof(pthread_mutex_t, __data.__lock),
	       sizeof(lock));
	if (lock != 1)
		return 11;
	if (in_thread(trylock_in_thread, m) != EBUSY)
		return 12;
	if (pthread_mutex_trylock(m) != (a->type == T_RECURSIVE ? 0 : EBUSY))
		return 13;
	if (a->type == T_RECURSIVE && pthread_mutex_unlock(m))
		return 14;
	if (pthread_mutex_unlock(m) || pthread_mutex_destroy(m))
		return 15;
	return 0;
}

START_TEST(test_misaligned_is_glibc)
{
	_Alignas(pthread_mutex_t) char buf[sizeof(pthread_mutex_t) + 8];
	struct misaligned a = { (pthread_mutex_t *)(void *)(buf + 2), _i };
	int code;

	mutex_make(a.m, _i);
	code = misaligned_in_child(misaligned_calls, &a);
	ck_assert_msg(code <= 0,
		      "a misaligned mutex: step %d (10-15: timedlock, word, trylock by another, by the owner, unlocks)",
		      code);
}
END_TEST

START_TEST(test_pi_is_glibc)
{
	pthread_mutex_t m;

	glibc_mutex(&m, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_INHERIT,
		    PTHREAD_PROCESS_PRIVATE, PTHREAD_MUTEX_ERRORCHECK);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	/* glibc's PI word: the TID, and the kind says PI. */
	ck_assert_uint_eq((uint32_t)m.__data.__lock, test_gettid());
	ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
	ck_assert_int_eq(in_thread(pthread_mutex_unlock, &m), EPERM);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

START_TEST(test_pshared_is_glibc)
{
	pthread_mutex_t *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status;
	pid_t pid;

	ck_assert(m != MAP_FAILED);
	glibc_mutex(m, PTHREAD_MUTEX_STALLED, PTHREAD_PRIO_NONE,
		    PTHREAD_PROCESS_SHARED, PTHREAD_MUTEX_NORMAL);
	ck_assert_int_eq(pthread_mutex_lock(m), 0);
	/* glibc's word: 1, not a TID. */
	ck_assert_int_eq(m->__data.__lock, 1);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0)
		_exit(pthread_mutex_lock(m) == 0 &&
		      pthread_mutex_unlock(m) == 0 ? 0 : 1);
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_unlock(m), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	munmap(m, sizeof(*m));
}
END_TEST

/* ---- fork() ---- */

static pthread_mutex_t fork_m = PTHREAD_MUTEX_INITIALIZER;

static void fork_prepare(void)
{
	pthread_mutex_lock(&fork_m);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&fork_m);
}

static void *hold_forever_main(void *arg)
{
	pthread_mutex_t *m = arg;

	TCHECK(pthread_mutex_lock(m) == 0, "lock");
	pause();
	return NULL;
}

START_TEST(test_fork_with_held_locks)
{
	pthread_mutex_t held, mine;
	struct timespec ts;
	bool locked;
	int status;
	pthread_t t;
	pid_t pid;

	mutex_make(&held, T_ERRORCHECK);
	mutex_make(&mine, T_NORMAL);
	ck_assert_int_eq(pthread_atfork(fork_prepare, fork_release,
					fork_release), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_forever_main, &held), 0);
	WAIT_UNTIL(locked, __atomic_load_n(&held.__data.__lock,
					   __ATOMIC_ACQUIRE), TEST_WAIT_NS);
	ck_assert(locked);
	ck_assert_int_eq(pthread_mutex_lock(&mine), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		/* The prepare/child idiom: the handler's unlock worked. */
		bad |= pthread_mutex_lock(&fork_m) != 0;
		bad |= pthread_mutex_unlock(&fork_m) != 0;
		/* The forking thread's own lock is the child's. */
		bad |= pthread_mutex_unlock(&mine) != 0;
		bad |= pthread_mutex_lock(&mine) != 0;
		bad |= pthread_mutex_unlock(&mine) != 0;
		/* Another thread's stays held: that thread is not here. */
		bad |= pthread_mutex_trylock(&held) != EBUSY;
		ts = realtime_in(20 * NSEC_PER_MSEC);
		bad |= pthread_mutex_timedlock(&held, &ts) != ETIMEDOUT;
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x", status);
	/* The parent's view is unchanged. */
	ck_assert_int_eq(pthread_mutex_unlock(&mine), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&held), EBUSY);
	ck_assert_int_eq(pthread_mutex_lock(&fork_m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&fork_m), 0);
}
END_TEST

/*
 * The child of _Fork() (no fork handlers) locks under its own thread ID:
 * its main thread holds a mutex that a second thread of the child waits
 * for (in the module, on that backend), and the unlock hands it over, as
 * with glibc. SIGALRM ends a child that hangs.
 */
static void *fork_waiter_main(void *arg)
{
	pthread_mutex_t *m = arg;

	if (pthread_mutex_lock(m))
		return (void *)1;
	return (void *)(intptr_t)(pthread_mutex_unlock(m) ? 2 : 0);
}

static int underscore_fork_child(void)
{
	pthread_mutex_t m;
	uint32_t tid = test_gettid();
	void *ret = (void *)3;
	pthread_t t;

	alarm(10);
	mutex_make(&m, T_ERRORCHECK);
	if (pthread_mutex_lock(&m) ||
	    (__atomic_load_n(&m.__data.__lock, __ATOMIC_RELAXED) &
	     0x3fffffff) != tid)
		return 4;
	if (pthread_create(&t, NULL, fork_waiter_main, &m))
		return 5;
	sleep_ns(20 * NSEC_PER_MSEC);
	if (pthread_mutex_unlock(&m))
		return 6;
	pthread_join(t, &ret);
	return (int)(intptr_t)ret;
}

START_TEST(test_underscore_fork_child_locks_as_itself)
{
	int status;
	pid_t pid = _Fork();

	ck_assert(pid >= 0);
	if (pid == 0)
		_exit(underscore_fork_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x (1: its waiter's lock failed, 4: the word does not hold its TID)",
		      status);
}
END_TEST

/*
 * A RECURSIVE mutex holds at most UINT_MAX levels, as glibc's (its
 * __count): a lock, trylock or timed lock past them fails with EAGAIN.
 * Reaching them takes 2^32 locks, so the test starts one level short
 * through the count of levels, __count (the preload keeps it as glibc).
 */
START_TEST(test_recursive_level_limit)
{
	pthread_mutex_t m;
	struct timespec ts;

	mutex_make(&m, T_RECURSIVE);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	m.__data.__count = UINT_MAX - 1;	/* UINT_MAX - 1 levels */
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), EAGAIN);
	ck_assert_int_eq(pthread_mutex_trylock(&m), EAGAIN);
	ts = realtime_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &ts), EAGAIN);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&m), 0);
	m.__data.__count = 1;			/* one level */
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(in_thread(pthread_mutex_trylock, &m), 0);
}
END_TEST

static Suite *pthread_mutex_suite(void)
{
	Suite *s = suite_create("pthread_mutex under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("preload");
	tcase_add_test(tc, test_preload_in_effect);
	tcase_add_loop_test(tc, test_owner_field_by_type, 0, T_COUNT);
	tcase_add_test(tc, test_stalled_relock_polls);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_relock_by_owner, 0, T_COUNT);
	tcase_add_test(tc, test_recursive_level_limit);
	tcase_add_loop_test(tc, test_unlock_by_other, 0, T_COUNT);
	tcase_add_loop_test(tc, test_unlock_free, 0, T_COUNT);
	tcase_add_loop_test(tc, test_held_by_other, 0, T_COUNT);
	tcase_add_loop_test(tc, test_deadline_checked_to_wait, 0, T_COUNT);
	tcase_add_loop_test(tc, test_destroy, 0, T_COUNT);
	tcase_add_loop_test(tc, test_lock_waits_for_release, 0, T_COUNT);
	tcase_add_loop_test(tc, test_trylock_held_no_syscall, 0, T_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("exclusion");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_mutual_exclusion, 0, T_COUNT);
	tcase_add_loop_test(tc, test_blocked_locker_not_woken_until_unlock, 0,
			    T_COUNT);
	tcase_add_test(tc, test_contended_lock_uses_backend);
	suite_add_tcase(s, tc);

	tc = tcase_create("glibc");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_robust_is_glibc);
	tcase_add_test(tc, test_pi_is_glibc);
	tcase_add_test(tc, test_pshared_is_glibc);
	tcase_add_loop_test(tc, test_misaligned_is_glibc, 0, T_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_fork_with_held_locks);
	tcase_add_test(tc, test_underscore_fork_child_locks_as_itself);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pthread_mutex_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
