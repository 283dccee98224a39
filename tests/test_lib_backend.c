// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex's primitives against its backend table (lib/backend.h): a
 * test double is one table. This program installs a copy of the process's
 * real table whose operations count their calls and, where a test asks,
 * fail the way a kernel does at a chosen moment (EINTR, EAGAIN) before
 * passing on to the real operation; the library's hidden table pointer is
 * reached through the static link. What it guards is the primitives' side
 * of the contract:
 *
 * - an uncontended lock, unlock, trylock, rwlock operation, and a signal
 *   or broadcast without waiters calls no operation at all; an unlock
 *   that finds WAITERS calls the backend's unlock once;
 * - a condition wait interrupted by a signal (->wait() returns EINTR)
 *   goes on waiting, with the same absolute deadline, instead of
 *   returning early;
 * - tofutex_wait() and tofutex_swap() hand EINTR to the caller;
 * - a broadcast whose requeue meets a moved sequence word (EAGAIN) tries
 *   again, so that no waiter is left asleep;
 * - after a wait a broadcast ended, the mutex is taken through the
 *   backend's lock exactly when the backend says its moved waiters need
 *   it (@relock_moved).
 *
 * Runs on whichever backend the library chose, natively too.
 */
#include "common.h"
#include "backend.h"

enum op {
	OP_LOCK, OP_UNLOCK, OP_UNLOCK_GLIBC, OP_WAIT, OP_WAKE, OP_SWAP,
	OP_REQUEUE, OP_PREPARE_WAIT, OP_RDLOCK, OP_WRLOCK, OP_RWUNLOCK,
	OP_VERSION, OP_STATS, OP_COUNT
};

/* The real table, and what the double over it saw and does. */
static const struct tofutex__backend_ops *real;
static struct {
	unsigned int calls[OP_COUNT];
	unsigned int wait_eintr;	/* ->wait(), ->swap(): EINTR this often */
	unsigned int requeue_eagain;	/* ->requeue(): EAGAIN this often */
	uint64_t wait_dl_ns[4];		/* the deadlines of the first waits */
	bool wait_dl_set[4];
	bool gate;			/* ->wait() returns once @gate_open */
	bool gate_open;
} fi;

static void called(enum op op)
{
	__atomic_fetch_add(&fi.calls[op], 1, __ATOMIC_SEQ_CST);
}

static unsigned int calls(enum op op)
{
	return __atomic_load_n(&fi.calls[op], __ATOMIC_SEQ_CST);
}

/* Take one of @budget's injected failures, if one is left. */
static bool inject(unsigned int *budget)
{
	unsigned int n = __atomic_load_n(budget, __ATOMIC_SEQ_CST);

	while (n && !__atomic_compare_exchange_n(budget, &n, n - 1, false,
						 __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
		;
	return n != 0;
}

static int dbl_lock(uint32_t *word, uint32_t tid,
		    const struct tofutex__deadline *dl, bool robust)
{
	called(OP_LOCK);
	return real->lock(word, tid, dl, robust);
}

static int dbl_unlock(uint32_t *word, uint32_t seen, bool own)
{
	called(OP_UNLOCK);
	return real->unlock(word, seen, own);
}

static int dbl_unlock_glibc(uint32_t *word)
{
	called(OP_UNLOCK_GLIBC);
	return real->unlock_glibc(word);
}

static int dbl_wait(uint32_t *addr, uint32_t expected,
		    const struct tofutex__deadline *dl)
{
	unsigned int n = __atomic_fetch_add(&fi.calls[OP_WAIT], 1,
					    __ATOMIC_SEQ_CST);
	int err;

	if (n < 4) {
		fi.wait_dl_set[n] = dl->set;
		fi.wait_dl_ns[n] = dl->ns;
	}
	if (inject(&fi.wait_eintr))
		return EINTR;
	err = real->wait(addr, expected, dl);
	while (__atomic_load_n(&fi.gate, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&fi.gate_open, __ATOMIC_SEQ_CST))
		sleep_ns(100 * NSEC_PER_USEC);
	return err;
}

static int dbl_wake(uint32_t *addr, unsigned int count, unsigned int *woken)
{
	called(OP_WAKE);
	return real->wake(addr, count, woken);
}

static int dbl_swap(uint32_t *wait_addr, uint32_t expected,
		    uint32_t *wake_addr, const struct tofutex__deadline *dl)
{
	called(OP_SWAP);
	if (inject(&fi.wait_eintr))
		return EINTR;
	return real->swap(wait_addr, expected, wake_addr, dl);
}

static int dbl_requeue(uint32_t *addr, uint32_t val, uint32_t *lock_addr)
{
	called(OP_REQUEUE);
	if (inject(&fi.requeue_eagain))
		return EAGAIN;
	return real->requeue(addr, val, lock_addr);
}

static void dbl_prepare_wait(void)
{
	called(OP_PREPARE_WAIT);
	real->prepare_wait();
}

static int dbl_rdlock(tofutex_rwlock_t *rw,
		      const struct tofutex__deadline *dl, bool join, bool robust)
{
	called(OP_RDLOCK);
	return real->rdlock(rw, dl, join, robust);
}

static int dbl_wrlock(tofutex_rwlock_t *rw, uint32_t tid,
		      const struct tofutex__deadline *dl, bool robust,
		      bool reserve)
{
	called(OP_WRLOCK);
	return real->wrlock(rw, tid, dl, robust, reserve);
}

static int dbl_rwunlock(tofutex_rwlock_t *rw, uint32_t seen)
{
	called(OP_RWUNLOCK);
	return real->rwunlock(rw, seen);
}

static int dbl_version(uint32_t *abi_version, uint64_t *features)
{
	called(OP_VERSION);
	return real->version(abi_version, features);
}

static int dbl_stats(uint32_t scope, struct tofutex_stats *out)
{
	called(OP_STATS);
	return real->stats(scope, out);
}

/* The double: the real table's data, every operation wrapped. */
static struct tofutex__backend_ops dbl = {
	.lock = dbl_lock,
	.unlock = dbl_unlock,
	.unlock_glibc = dbl_unlock_glibc,
	.wait = dbl_wait,
	.wake = dbl_wake,
	.swap = dbl_swap,
	.requeue = dbl_requeue,
	.prepare_wait = dbl_prepare_wait,
	.rdlock = dbl_rdlock,
	.wrlock = dbl_wrlock,
	.rwunlock = dbl_rwunlock,
	.version = dbl_version,
	.stats = dbl_stats,
};

/* Checked fixture: the double over the table the library chose. */
static void double_install(void)
{
	tfail_reset();
	memset(&fi, 0, sizeof(fi));
	real = tofutex__ops();
	dbl.backend = real->backend;
	dbl.relock_moved = real->relock_moved;
	__atomic_store_n(&tofutex__ops_cached, &dbl, __ATOMIC_RELEASE);
}

static void double_remove(void)
{
	__atomic_store_n(&tofutex__ops_cached, real, __ATOMIC_RELEASE);
}

static unsigned int calls_total(void)
{
	unsigned int n = 0;

	for (int op = 0; op < OP_COUNT; op++)
		n += calls((enum op)op);
	return n;
}

/* ---- the uncontended paths ---- */

/* Uncontended operations never call the backend. */
START_TEST(test_backend_uncontended_no_call)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	struct timespec later = realtime_in(TEST_WAIT_NS);

	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_trylock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_timedlock(&m, &later), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);

	ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_tryrdlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);

	ck_assert_int_eq(tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_cond_broadcast(&c), 0);

	ck_assert_uint_eq(calls_total(), 0);
}
END_TEST

/* An unlock that finds WAITERS asks the backend, once, which frees it. */
START_TEST(test_backend_unlock_waiters_calls_once)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;

	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	__atomic_fetch_or(&m.word, TOFUTEX_WAITERS, __ATOMIC_RELAXED);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(calls(OP_UNLOCK), 1);
	ck_assert_uint_eq(word_load(&m.word) & ~TOFUTEX_WAITERS, 0);

	ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), 0);
	__atomic_fetch_or(&rw.word, TOFUTEX_WAITERS, __ATOMIC_RELAXED);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(calls(OP_RWUNLOCK), 1);
	ck_assert_uint_eq(word_load(&rw.word) & TOFUTEX_RW_COUNT_MASK, 0);
	ck_assert_uint_eq(calls_total(), 2);
}
END_TEST

/* ---- condition waits ---- */

struct cv {
	tofutex_mutex_t m;
	tofutex_cond_t c;
	int signalled;		/* under @m */
	int woken;		/* waiters back from their wait, under @m */
	clockid_t clock;	/* the timed waiter's */
	struct timespec deadline;
	uint64_t deadline_ns;
};

/* One wait, no predicate loop: it must end only by the signal. */
static void *cv_wait_once(void *arg)
{
	struct cv *cv = arg;
	int r;

	tofutex_mutex_lock(&cv->m);
	r = tofutex_cond_wait(&cv->c, &cv->m);
	TCHECK(r == 0, "tofutex_cond_wait = %d", r);
	TCHECK(cv->signalled, "the wait ended before the signal");
	cv->woken++;
	tofutex_mutex_unlock(&cv->m);
	return NULL;
}

/*
 * A wait that ->wait() leaves with EINTR three times goes on waiting: it
 * returns after the signal, not at the first interruption.
 */
START_TEST(test_backend_cond_wait_eintr_waits_on)
{
	struct cv cv = { .m = TOFUTEX_MUTEX_INITIALIZER,
			 .c = TOFUTEX_COND_INITIALIZER };
	pthread_t t;
	bool ok;

	fi.wait_eintr = 3;
	ck_assert_int_eq(pthread_create(&t, NULL, cv_wait_once, &cv), 0);
	WAIT_UNTIL(ok, calls(OP_WAIT) >= 4, TEST_WAIT_NS);
	ck_assert_msg(ok, "the waiter made %u waits", calls(OP_WAIT));
	tofutex_mutex_lock(&cv.m);
	cv.signalled = 1;
	ck_assert_int_eq(tofutex_cond_signal(&cv.c), 0);
	tofutex_mutex_unlock(&cv.m);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(cv.woken, 1);
	ck_assert_uint_eq(fi.wait_eintr, 0);
}
END_TEST

/*
 * A timed wait: it ends with ETIMEDOUT, or with 0 where an interruption
 * came after the deadline (a spurious wake-up), never before the deadline.
 */
static void *cv_timedwait(void *arg)
{
	struct cv *cv = arg;
	int r;

	tofutex_mutex_lock(&cv->m);
	r = tofutex_cond_clockwait(&cv->c, &cv->m, cv->clock, &cv->deadline);
	TCHECK(r == ETIMEDOUT || r == 0, "tofutex_cond_clockwait = %d", r);
	TCHECK(tofutex__clock_ns(cv->clock) >= cv->deadline_ns,
	       "tofutex_cond_clockwait = %d before the deadline", r);
	tofutex_mutex_unlock(&cv->m);
	return NULL;
}

/*
 * A timed wait interrupted three times keeps its absolute deadline: every
 * retry waits for the same time on the same clock, and the wait does not
 * end before it. Both clocks.
 */
START_TEST(test_backend_cond_timedwait_eintr_keeps_deadline)
{
	struct cv cv = { .m = TOFUTEX_MUTEX_INITIALIZER,
			 .c = TOFUTEX_COND_INITIALIZER };
	unsigned int n;
	pthread_t t;

	cv.clock = _i ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	cv.deadline_ns = tofutex__clock_ns(cv.clock) + 200 * NSEC_PER_MSEC;
	cv.deadline = ts_from_ns(cv.deadline_ns);
	fi.wait_eintr = 3;
	ck_assert_int_eq(pthread_create(&t, NULL, cv_timedwait, &cv), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	n = calls(OP_WAIT);
	ck_assert_uint_ge(n, 1);
	for (unsigned int i = 0; i < n && i < 4; i++) {
		ck_assert(fi.wait_dl_set[i]);
		ck_assert_uint_eq(fi.wait_dl_ns[i], cv.deadline_ns);
	}
}
END_TEST

/* ---- wait, wake, swap ---- */

/* tofutex_wait() and tofutex_swap() hand EINTR to their caller. */
START_TEST(test_backend_wait_returns_eintr)
{
	uint32_t word = 0, other = 0;

	fi.wait_eintr = 1;
	ck_assert_int_eq(tofutex_wait(&word, 0, NULL), EINTR);
	ck_assert_uint_eq(calls(OP_WAIT), 1);
	fi.wait_eintr = 1;
	ck_assert_int_eq(tofutex_swap(&word, 0, &other, NULL), EINTR);
	ck_assert_uint_eq(calls(OP_SWAP), 1);
}
END_TEST

/* ---- broadcast ---- */

#define BCAST_WAITERS	3

static void *cv_wait_loop(void *arg)
{
	struct cv *cv = arg;
	int r;

	tofutex_mutex_lock(&cv->m);
	while (!cv->signalled) {
		r = tofutex_cond_wait(&cv->c, &cv->m);
		TCHECK(r == 0, "tofutex_cond_wait = %d", r);
	}
	cv->woken++;
	tofutex_mutex_unlock(&cv->m);
	return NULL;
}

struct waiter {
	pthread_t t;
	_Atomic uint32_t tid;
	struct cv *cv;
};

static void *cv_waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, test_gettid());
	return cv_wait_loop(w->cv);
}

/*
 * A broadcast whose requeue finds the sequence word moved (EAGAIN, once)
 * tries again: every waiter, asleep in the kernel when it came, wakes.
 */
START_TEST(test_backend_broadcast_retries_requeue)
{
	struct cv cv = { .m = TOFUTEX_MUTEX_INITIALIZER,
			 .c = TOFUTEX_COND_INITIALIZER };
	struct waiter w[BCAST_WAITERS];
	bool ok;
	int i;

	fi.requeue_eagain = 1;
	for (i = 0; i < BCAST_WAITERS; i++) {
		w[i].cv = &cv;
		atomic_store(&w[i].tid, 0);
		ck_assert_int_eq(pthread_create(&w[i].t, NULL, cv_waiter_main,
						&w[i]), 0);
	}
	for (i = 0; i < BCAST_WAITERS; i++) {
		WAIT_UNTIL(ok, calls(OP_WAIT) >= BCAST_WAITERS &&
			   atomic_load(&w[i].tid) &&
			   thread_state(atomic_load(&w[i].tid)) == 'S',
			   TEST_WAIT_NS);
		ck_assert_msg(ok, "waiter %d is not asleep", i);
	}
	tofutex_mutex_lock(&cv.m);
	cv.signalled = 1;
	ck_assert_int_eq(tofutex_cond_broadcast(&cv.c), 0);
	tofutex_mutex_unlock(&cv.m);
	for (i = 0; i < BCAST_WAITERS; i++)
		ck_assert_msg(join_within(w[i].t, NULL, TEST_WAIT_NS),
			      "waiter %d still waits", i);
	tfail_assert();
	ck_assert_int_eq(cv.woken, BCAST_WAITERS);
	ck_assert_uint_eq(calls(OP_REQUEUE), 2);
}
END_TEST

/*
 * After a wait that a broadcast ended, the free mutex is taken through
 * ->lock() exactly when the table's @relock_moved says so (both ways).
 * The waiter leaves ->wait() only once the broadcaster has unlocked, so
 * no contention sends it there.
 */
START_TEST(test_backend_relock_moved)
{
	struct cv cv = { .m = TOFUTEX_MUTEX_INITIALIZER,
			 .c = TOFUTEX_COND_INITIALIZER };
	struct waiter w = { .cv = &cv };
	bool ok;

	dbl.relock_moved = _i;
	fi.gate = true;
	ck_assert_int_eq(pthread_create(&w.t, NULL, cv_waiter_main, &w), 0);
	WAIT_UNTIL(ok, calls(OP_WAIT) >= 1 && atomic_load(&w.tid) &&
		   thread_state(atomic_load(&w.tid)) == 'S', TEST_WAIT_NS);
	ck_assert(ok);
	tofutex_mutex_lock(&cv.m);
	cv.signalled = 1;
	ck_assert_int_eq(tofutex_cond_broadcast(&cv.c), 0);
	tofutex_mutex_unlock(&cv.m);
	ck_assert_uint_eq(calls(OP_LOCK), 0);
	__atomic_store_n(&fi.gate_open, true, __ATOMIC_SEQ_CST);
	ck_assert(join_within(w.t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(cv.woken, 1);
	ck_assert_uint_eq(calls(OP_LOCK), (_i ? 1u : 0u));
}
END_TEST

static Suite *lib_backend_suite(void)
{
	Suite *s = suite_create("lib_backend");
	TCase *tc;

	tc = tcase_create("fast paths");
	tcase_add_checked_fixture(tc, double_install, double_remove);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_backend_uncontended_no_call);
	tcase_add_test(tc, test_backend_unlock_waiters_calls_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("retries");
	tcase_add_checked_fixture(tc, double_install, double_remove);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_backend_cond_wait_eintr_waits_on);
	tcase_add_loop_test(tc, test_backend_cond_timedwait_eintr_keeps_deadline,
			    0, 2);
	tcase_add_test(tc, test_backend_wait_returns_eintr);
	tcase_add_test(tc, test_backend_broadcast_retries_requeue);
	tcase_add_loop_test(tc, test_backend_relock_moved, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lib_backend_suite());
}
