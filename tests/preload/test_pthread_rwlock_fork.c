// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, reader/writer locks in the child of
 * fork(): a lock another thread of the parent write-held waits for that
 * writer, as glibc's (lock blocks, timed lock ETIMEDOUT, try lock EBUSY,
 * and a thread that waits there is not cancelled inside the lock); a
 * lock the forking thread held is the child's to release, which wakes
 * the child's waiters; a lock a writer of the parent reserved stays
 * reserved for it, but the child's timed write lock takes it, unlike
 * glibc's (tofutex-run(1), BUGS). Runs under tofutex-run (LD_PRELOAD); the first
 * test fails when the preload is not in effect.
 */
#include <sys/wait.h>

#include "rwlock.h"

START_TEST(test_preload_in_effect)
{
	rwlock_preload_in_effect();
}
END_TEST

/*
 * The child of fork() of a process whose other thread write-holds an
 * rwlock: as glibc's, the child's locks wait for that writer, which is
 * not there: lock blocks, timed lock ETIMEDOUT, try lock EBUSY.
 */
static void *hold_until_pipe_main(void *arg)
{
	struct { pthread_rwlock_t *rw; int held[2], done[2]; } *h = arg;
	char c = 1;

	if (pthread_rwlock_wrlock(h->rw) != 0 || write(h->held[1], &c, 1) != 1)
		return (void *)1;
	if (read(h->done[0], &c, 1) != 1)
		return (void *)1;
	return (void *)(intptr_t)pthread_rwlock_unlock(h->rw);
}

static int rdlock_forever(pthread_rwlock_t *rw)
{
	return pthread_rwlock_rdlock(rw) ? 1 : 2;
}

static int wrlock_forever(pthread_rwlock_t *rw)
{
	return pthread_rwlock_wrlock(rw) ? 1 : 2;
}

/* In the child: the bits of what went wrong, 0 when all is glibc's. */
static int child_of_held(pthread_rwlock_t *rw)
{
	struct call c[2] = {
		{ .fn = rdlock_forever, .rw = rw },
		{ .fn = wrlock_forever, .rw = rw },
	};
	struct timespec real, mono;
	int bad = 0, i;
	pthread_t t;

	if (pthread_rwlock_tryrdlock(rw) != EBUSY)
		bad |= 1;
	if (pthread_rwlock_trywrlock(rw) != EBUSY)
		bad |= 2;
	real = realtime_in(50 * NSEC_PER_MSEC);
	if (pthread_rwlock_timedrdlock(rw, &real) != ETIMEDOUT)
		bad |= 4;
	real = realtime_in(50 * NSEC_PER_MSEC);
	if (pthread_rwlock_timedwrlock(rw, &real) != ETIMEDOUT)
		bad |= 8;
	mono = ts_in(50 * NSEC_PER_MSEC);
	if (pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &mono) != ETIMEDOUT)
		bad |= 16;
	mono = ts_in(50 * NSEC_PER_MSEC);
	if (pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &mono) != ETIMEDOUT)
		bad |= 32;
	for (i = 0; i < 2; i++) {
		c[i].ret = 0;
		if (pthread_create(&t, NULL, call_main, &c[i]) != 0 ||
		    join_within(t, NULL, 100 * NSEC_PER_MSEC))
			bad |= 64 << i;
	}
	return bad;
}

/*
 * fork() while another thread write-holds a rwlock of kind @k; the child
 * exits with @child(rwlock). Returns the child's wait status.
 */
static int fork_beside_writer(int k, int (*child)(pthread_rwlock_t *))
{
	struct { pthread_rwlock_t *rw; int held[2], done[2]; } h;
	pthread_rwlock_t rw;
	int status, i;
	pthread_t t;
	void *ret;
	pid_t pid;
	char c;

	rwlock_make(&rw, k);
	h.rw = &rw;
	ck_assert_int_eq(pipe(h.held), 0);
	ck_assert_int_eq(pipe(h.done), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_until_pipe_main, &h), 0);
	ck_assert_int_eq(read(h.held[0], &c, 1), 1);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0)
		_exit(child(&rw));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(write(h.done[1], &c, 1) == 1);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_ptr_eq(ret, NULL);
	for (i = 0; i < 2; i++) {
		close(h.held[i]);
		close(h.done[i]);
	}
	return status;
}

START_TEST(test_fork_child_of_writer)
{
	int status = fork_beside_writer(_i, child_of_held);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (exit bits: 1 tryrd, 2 trywr, 4 timedrd, 8 timedwr, 16 clockrd, 32 clockwr, 64 rdlock, 128 wrlock did not wait)",
		      status);
}
END_TEST

/*
 * The thread that forks holds a write lock; in the child, which holds it
 * in that thread's place, another thread waits for it (_i: as a reader,
 * as a writer), and the child's unlock wakes it.
 */
START_TEST(test_fork_child_unlock_wakes_its_waiter)
{
	int status, next = 0;
	pthread_rwlock_t rw;
	pid_t pid;

	rwlock_make(&rw, K_READER);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		struct order o = { .rw = &rw, .write = _i, .next = &next };
		pthread_t t;

		if (pthread_create(&t, NULL, order_main, &o) ||
		    !thread_asleep_within(&o.tid) ||
		    pthread_rwlock_unlock(&rw))
			_exit(2);
		_exit(join_within(t, NULL, TEST_WAIT_NS) && o.got == 1 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (1: its waiter was not woken)", status);
}
END_TEST

/*
 * A timed lock that must wait, then a cancellation point that waits for
 * the cancellation: on a slow machine the lock may time out before the
 * test has sent it.
 */
static void *stall_probe_main(void *arg)
{
	struct sleeper *p = arg;
	struct timespec ts = realtime_in(300 * NSEC_PER_MSEC);

	__atomic_store_n(&p->tid, test_gettid(), __ATOMIC_RELEASE);
	p->ret = p->write ? pthread_rwlock_timedwrlock(p->rw, &ts) :
			    pthread_rwlock_timedrdlock(p->rw, &ts);
	for (;;)
		pause();
	return NULL;
}

/*
 * In the child: a thread waiting for the parent's writer is cancelled.
 * glibc's rwlock lock is no cancellation point: the lock ends with
 * ETIMEDOUT and the thread is cancelled at the next point. Bits of what
 * went wrong, for the read and the write lock; 0 when all is glibc's.
 */
static int child_cancel_in_stall(pthread_rwlock_t *rw)
{
	struct sleeper p;
	int i, bad = 0;
	pthread_t t;
	void *ret;

	for (i = 0; i < 2; i++) {
		p = (struct sleeper){ .rw = rw, .write = i, .ret = -1 };
		if (pthread_create(&t, NULL, stall_probe_main, &p) != 0 ||
		    !thread_asleep_within(&p.tid) || pthread_cancel(t) != 0 ||
		    !join_within(t, &ret, TEST_WAIT_NS)) {
			bad |= 1 << i;
			continue;
		}
		if (ret != PTHREAD_CANCELED || p.ret != ETIMEDOUT)
			bad |= 4 << i;
	}
	return bad;
}

START_TEST(test_fork_child_stall_not_cancelled)
{
	int status = fork_beside_writer(_i, child_cancel_in_stall);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (exit bits: 1 rd, 2 wr did not run or end; 4 rd, 8 wr cancelled inside the lock or not timed out)",
		      status);
}
END_TEST

/*
 * A writer-preferring nonrecursive lock (_i: made static, made with an
 * attribute) read-held by the thread that forks while a writer of the
 * parent waits for it, having reserved it. In the child that writer does
 * not exist, and the lock stays reserved for it (tofutex-run(1), BUGS):
 * the child's tryrdlock and trywrlock fail with EBUSY, as glibc's lock,
 * handed to that writer, refuses them; once the child has released its
 * read lock, a timed read lock takes the lock on the module (the child's
 * kernel state knows of no writer that keeps it) and times out on
 * futex(2) (the count of reserving writers came with the fork), and its
 * timed write lock takes the lock, where glibc's would wait until the
 * deadline (2 s, an upper bound here). The child's exit status has a bit
 * for each that went otherwise.
 */
static int child_of_reserved(pthread_rwlock_t *rw)
{
	struct timespec ts;
	int bad = 0, r;

	if (pthread_rwlock_tryrdlock(rw) != EBUSY)
		bad |= 1;
	if (pthread_rwlock_trywrlock(rw) != EBUSY)
		bad |= 2;
	if (pthread_rwlock_unlock(rw))
		bad |= 4;
	/* Free and reserved: the module knows of no writer that keeps it. */
	ts = realtime_in(200 * NSEC_PER_MSEC);
	r = pthread_rwlock_timedrdlock(rw, &ts);
	if (r != (tofutex_backend() == TOFUTEX_BACKEND_MODULE ? 0 : ETIMEDOUT))
		bad |= 64;
	if (!r && pthread_rwlock_unlock(rw))
		bad |= 64;
	ts = realtime_in(2 * NSEC_PER_SEC);
	r = pthread_rwlock_timedwrlock(rw, &ts);
	if (r)
		bad |= r == ETIMEDOUT ? 8 : 16;
	else if (pthread_rwlock_unlock(rw))
		bad |= 32;
	/*
	 * The blocking forms as the timed ones: the write lock takes it, and
	 * on the module the read lock too (SIGALRM ends a child that hangs).
	 */
	alarm(10);
	if (pthread_rwlock_wrlock(rw) || pthread_rwlock_unlock(rw))
		bad |= 128;
	if (tofutex_backend() == TOFUTEX_BACKEND_MODULE &&
	    (pthread_rwlock_rdlock(rw) || pthread_rwlock_unlock(rw)))
		bad |= 128;
	alarm(0);
	return bad;
}

START_TEST(test_fork_child_of_reserved_lock)
{
	struct sleeper w = { .write = true, .ret = -1 };
	pthread_rwlock_t rw;
	int status;
	pthread_t t;
	pid_t pid;
	bool ok;

	rwlock_make(&rw, _i ? K_NONRECURSIVE : K_STATIC_NONRECURSIVE);
	w.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, sleeper_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	/* Asleep in its wait, not on the way to it: reserved. */
	WAIT_UNTIL(ok, rw_word(&rw) & TOFUTEX_RW_HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(ok, "the writer never reserved the lock (word 0x%08x)",
		      rw_word(&rw));
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0)
		_exit(child_of_reserved(&rw));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (exit bits: 1 tryrd, 2 trywr not EBUSY; 4 its unlock failed; 8 timedwr timed out, 16 failed otherwise; 32 its unlock failed; 64 timedrd not as the backend's; 128 a blocking wrlock, or rdlock on the module, failed; killed by SIGALRM: one hung)",
		      status);
}
END_TEST

static Suite *pthread_rwlock_fork_suite(void)
{
	Suite *s = suite_create("pthread_rwlock after fork() under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("preload");
	tcase_add_test(tc, test_preload_in_effect);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_fork_child_of_writer, 0, K_COUNT);
	tcase_add_loop_test(tc, test_fork_child_stall_not_cancelled, 0, K_COUNT);
	tcase_add_loop_test(tc, test_fork_child_unlock_wakes_its_waiter, 0, 2);
	tcase_add_loop_test(tc, test_fork_child_of_reserved_lock, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pthread_rwlock_fork_suite());
}
