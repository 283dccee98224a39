// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, cancellation (under tofutex-run): a
 * waiter cancelled while a signal is on its way to it does not take the
 * signal with it (POSIX: it shall not consume a condition signal while
 * other threads wait); the library's first use of its backend, inside the
 * first condition wait or the first contended mutex lock of a process,
 * is no cancellation point of its own: a cancel pending at a wait acts in
 * the wait with the mutex held for the cleanup handlers, and one pending
 * at a lock does not act there at all (pthread_mutex_lock() is not a
 * cancellation point).
 *
 * Each Check test runs in its own forked process, whose backend is
 * chosen on first use; the first-use tests let it choose (no
 * TOFUTEX_BACKEND), so that the choice itself is what they exercise.
 */
#include "sleeping.h"

/* ---- a cancelled waiter passes its signal on ---- */

struct pass_on {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint32_t tid[2];
	int woken_b;
};

static void unlock_cleanup(void *m)
{
	pthread_mutex_unlock(m);
}

static void *waiter_a(void *arg)
{
	struct pass_on *p = arg;

	pthread_mutex_lock(&p->m);
	__atomic_store_n(&p->tid[0], test_gettid(), __ATOMIC_RELEASE);
	pthread_cleanup_push(unlock_cleanup, &p->m);
	pthread_cond_wait(&p->c, &p->m);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *waiter_b(void *arg)
{
	struct pass_on *p = arg;

	pthread_mutex_lock(&p->m);
	__atomic_store_n(&p->tid[1], test_gettid(), __ATOMIC_RELEASE);
	pthread_cond_wait(&p->c, &p->m);
	p->woken_b = 1;
	pthread_mutex_unlock(&p->m);
	return NULL;
}

/*
 * One round: A and B asleep in the wait, A first (so a signal's wake-up
 * goes to A); signal, then cancel A at once, before it can run. Whenever
 * A ends cancelled, B must have been woken. Returns true when a signal
 * was lost.
 */
static bool pass_on_round(bool *cancelled)
{
	struct pass_on p = {
		.m = PTHREAD_MUTEX_INITIALIZER,
		.c = PTHREAD_COND_INITIALIZER,
	};
	pthread_t a, b;
	void *ret = NULL;
	bool lost = false;

	ck_assert_int_eq(pthread_create(&a, NULL, waiter_a, &p), 0);
	ck_assert(thread_asleep_within(&p.tid[0]));
	ck_assert_int_eq(pthread_create(&b, NULL, waiter_b, &p), 0);
	ck_assert(thread_asleep_within(&p.tid[1]));

	pthread_mutex_lock(&p.m);
	ck_assert_int_eq(pthread_cond_signal(&p.c), 0);
	ck_assert_int_eq(pthread_cancel(a), 0);
	pthread_mutex_unlock(&p.m);
	ck_assert(join_within(a, &ret, TEST_WAIT_NS));
	*cancelled = ret == PTHREAD_CANCELED;

	/* Not cancelled: A took the signal, and B rightly sleeps on. */
	if (*cancelled && !join_within(b, NULL, TEST_WAIT_NS))
		lost = true;
	if (!*cancelled || lost) {
		pthread_mutex_lock(&p.m);
		pthread_cond_broadcast(&p.c);
		pthread_mutex_unlock(&p.m);
		ck_assert(join_within(b, NULL, TEST_WAIT_NS));
	}
	ck_assert_int_eq(pthread_cond_destroy(&p.c), 0);
	return lost;
}

START_TEST(test_cancelled_waiter_passes_signal_on)
{
	/*
	 * Whether the cancel or the signal reaches A first is up to the
	 * scheduler: at least 10 rounds, and more, up to 200, until one of
	 * them had A cancelled (on a slow kernel the signal often wins). A
	 * machine where the signal always won raced nothing: that is said,
	 * not failed (test_pthread_cond's test_cancel_waiter checks that a
	 * waiter can be cancelled at all).
	 */
	unsigned int min_rounds = 10, max_rounds = 200, i, cancelled_rounds = 0;
	bool cancelled;

	for (i = 0; i < max_rounds && (i < min_rounds || !cancelled_rounds);
	     i++) {
		ck_assert_msg(!pass_on_round(&cancelled),
			      "round %u: the cancelled waiter took the signal, the other slept on",
			      i);
		cancelled_rounds += cancelled;
	}
	if (!cancelled_rounds)
		printf("SKIPPED: test_cancelled_waiter_passes_signal_on: the signal reached the waiter before the cancel in all %u rounds: nothing checked\n",
		       i);
}
END_TEST

/* ---- the backend's first use is not a cancellation point ---- */

struct first_use {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint32_t tid;
	int cleanup_unlock;	/* the cleanup's unlock: 0 when it held m */
	int locked;		/* the lock returned */
};

static void first_wait_cleanup(void *arg)
{
	struct first_use *f = arg;

	/* ERRORCHECK: 0 only if this thread holds the mutex. */
	f->cleanup_unlock = pthread_mutex_unlock(&f->m);
}

static void *first_wait_main(void *arg)
{
	struct first_use *f = arg;

	pthread_mutex_lock(&f->m);
	pthread_cleanup_push(first_wait_cleanup, f);
	pthread_cancel(pthread_self());
	pthread_cond_wait(&f->c, &f->m);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *destroy_main(void *c)
{
	return (void *)(intptr_t)pthread_cond_destroy(c);
}

/* A cancel pending at the process's first wait: cleanup with the mutex. */
START_TEST(test_first_cond_wait_cancel_holds_mutex)
{
	struct first_use f = { .c = PTHREAD_COND_INITIALIZER,
			       .cleanup_unlock = -1 };
	pthread_mutexattr_t a;
	pthread_t t, d;
	void *ret = NULL;

	ck_assert_int_eq(unsetenv("TOFUTEX_BACKEND"), 0);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	ck_assert_int_eq(pthread_mutex_init(&f.m, &a), 0);
	pthread_mutexattr_destroy(&a);

	ck_assert_int_eq(pthread_create(&t, NULL, first_wait_main, &f), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert(ret == PTHREAD_CANCELED);
	ck_assert_msg(f.cleanup_unlock == 0,
		      "the cleanup handler ran without the mutex (unlock: %d)",
		      f.cleanup_unlock);
	/* The waiter left the condition variable: destroy returns. */
	ck_assert_int_eq(pthread_create(&d, NULL, destroy_main, &f.c), 0);
	ck_assert_msg(join_within(d, &ret, TEST_WAIT_NS),
		      "pthread_cond_destroy() waits for a waiter that is gone");
	ck_assert_int_eq((int)(intptr_t)ret, 0);
}
END_TEST

static void *first_lock_main(void *arg)
{
	struct first_use *f = arg;

	__atomic_store_n(&f->tid, test_gettid(), __ATOMIC_RELEASE);
	pthread_cancel(pthread_self());
	pthread_mutex_lock(&f->m);
	f->locked = 1;
	pthread_mutex_unlock(&f->m);
	pthread_testcancel();
	return NULL;
}

/* A cancel pending at the first contended lock does not act there. */
START_TEST(test_first_contended_lock_not_cancellation_point)
{
	struct first_use f = { .m = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t;
	void *ret = NULL;
	bool ok;

	ck_assert_int_eq(unsetenv("TOFUTEX_BACKEND"), 0);
	pthread_mutex_lock(&f.m);
	ck_assert_int_eq(pthread_create(&t, NULL, first_lock_main, &f), 0);
	/* Asleep in the lock, or (wrongly) gone, cancelled in it. */
	WAIT_UNTIL(ok, __atomic_load_n(&f.tid, __ATOMIC_ACQUIRE) &&
		       thread_state(f.tid) != 'R', TEST_WAIT_NS);
	ck_assert(ok);
	pthread_mutex_unlock(&f.m);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert(ret == PTHREAD_CANCELED);
	ck_assert_msg(f.locked, "the thread was cancelled inside pthread_mutex_lock()");
}
END_TEST

static Suite *pthread_cancel_suite(void)
{
	Suite *s = suite_create("pthread cancellation under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("signal");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_cancelled_waiter_passes_signal_on);
	suite_add_tcase(s, tc);

	tc = tcase_create("first use");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_first_cond_wait_cancel_holds_mutex);
	tcase_add_test(tc, test_first_contended_lock_not_cancellation_point);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pthread_cancel_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
