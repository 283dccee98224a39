// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, reader/writer locks: a dynamically
 * linked program that calls glibc's pthread_rwlock_* names and runs under
 * tofutex-run (LD_PRELOAD). Each kind's recursion and EDEADLK, its
 * readers while a writer starves (glibc's preference), the timed variants
 * on both clocks, the try functions, reader-count overflow, exclusion and
 * shared readers, how many waiters a release wakes and that they sleep
 * until it does, and the pass-through of process-shared and misaligned
 * rwlocks to glibc. Who gets a released lock is
 * test_pthread_rwlock_handover.c's, fork()'s child
 * test_pthread_rwlock_fork.c's. The first test fails when the preload is
 * not in effect, so that the rest cannot pass on glibc's own rwlocks.
 */
#include <sys/wait.h>

#include "rwlock.h"

static int timedrd_soon(pthread_rwlock_t *rw)
{
	struct timespec ts = realtime_in(50 * NSEC_PER_MSEC);
	int r = pthread_rwlock_timedrdlock(rw, &ts);

	return r ? r : pthread_rwlock_unlock(rw);
}

static int timedwr_soon(pthread_rwlock_t *rw)
{
	struct timespec ts = realtime_in(50 * NSEC_PER_MSEC);
	int r = pthread_rwlock_timedwrlock(rw, &ts);

	return r ? r : pthread_rwlock_unlock(rw);
}

static int clockrd_soon(pthread_rwlock_t *rw)
{
	struct timespec mono = ts_in(50 * NSEC_PER_MSEC);
	struct timespec real = realtime_in(50 * NSEC_PER_MSEC);
	int r = pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &mono);

	if (!r)
		r = pthread_rwlock_unlock(rw);
	if (!r)
		r = pthread_rwlock_clockrdlock(rw, CLOCK_REALTIME, &real);
	return r ? r : pthread_rwlock_unlock(rw);
}

static int clockwr_soon(pthread_rwlock_t *rw)
{
	struct timespec mono = ts_in(50 * NSEC_PER_MSEC);
	struct timespec real = realtime_in(50 * NSEC_PER_MSEC);
	int r = pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &mono);

	if (!r)
		r = pthread_rwlock_unlock(rw);
	if (!r)
		r = pthread_rwlock_clockwrlock(rw, CLOCK_REALTIME, &real);
	return r ? r : pthread_rwlock_unlock(rw);
}

/* The preload is in effect, and the word is libtofutex's TO word. */
START_TEST(test_preload_in_effect)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

	rwlock_preload_in_effect();
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), test_gettid());
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), TOFUTEX_RW_SHARED | 2);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), 0);
}
END_TEST

/* ---- errors, by kind (_i: the kind) ---- */

/* Every lock by the writer: EDEADLK; the try functions: EBUSY. */
START_TEST(test_writer_relock_edeadlk)
{
	struct timespec real = realtime_in(20 * NSEC_PER_MSEC);
	struct timespec mono = ts_in(20 * NSEC_PER_MSEC);
	pthread_rwlock_t rw;

	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &real), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &real), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC,
						    &mono), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC,
						    &mono), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), EBUSY);
	ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/* Read locks nest in every kind while no writer waits. */
START_TEST(test_recursive_read)
{
	struct timespec real = realtime_in(20 * NSEC_PER_MSEC);
	struct timespec mono = ts_in(20 * NSEC_PER_MSEC);
	pthread_rwlock_t rw;
	int i;

	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &real), 0);
	ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC,
						    &mono), 0);
	ck_assert_uint_eq(rw_word(&rw), TOFUTEX_RW_SHARED | 5);
	/* The reader's own write lock waits for its read locks: deadlock. */
	real = realtime_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &real), ETIMEDOUT);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), EBUSY);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), EBUSY);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	}
	ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), 0);
	ck_assert_uint_eq(rw_word(&rw), 0);
}
END_TEST

static int wrlock_once(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_wrlock(rw);

	return r ? r : pthread_rwlock_unlock(rw);
}

/*
 * Readers while a writer starves (RW_HANDOFF set): the reader-preferring
 * kinds let every reader join the read-held lock, the one that holds it
 * and any other thread (glibc's readers always join a read phase; a
 * program whose reader waits for another reader's read lock, as glibc's
 * tst-rwlock16 does, would deadlock otherwise); the nonrecursive
 * writer-preferring kind makes new readers wait, as glibc's does (the try
 * functions fail).
 */
START_TEST(test_read_while_writer_starves)
{
	struct call c = { .fn = wrlock_once, .ret = -1 };
	struct timespec real, mono;
	pthread_rwlock_t rw;
	pthread_t t;
	bool starves;
	int held = 1;

	rwlock_make(&rw, _i);
	c.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, call_main, &c), 0);
	WAIT_UNTIL(starves, rw_word(&rw) & TOFUTEX_RW_HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(starves, "no RW_HANDOFF: word %#x", rw_word(&rw));
	real = realtime_in(TEST_WAIT_NS);
	mono = ts_in(TEST_WAIT_NS);
	if (nonrecursive(_i)) {
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), EBUSY);
		ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EBUSY);
	} else {
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), 0);
		ck_assert_int_eq(in_thread(timedrd_soon, &rw), 0);
		ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), 0);
		ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &real), 0);
		ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw,
							    CLOCK_MONOTONIC,
							    &mono), 0);
		ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
		held += 4;
		ck_assert_uint_eq(rw_word(&rw) & TOFUTEX_RW_COUNT_MASK, held);
	}
	ck_assert(!join_within(t, NULL, 0));
	while (held--)
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(c.ret, 0);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
}
END_TEST

/* A full reader count: EAGAIN from every read lock, the try one too. */
START_TEST(test_reader_count_full)
{
	struct timespec real = realtime_in(TEST_WAIT_NS);
	struct timespec mono = ts_in(TEST_WAIT_NS);
	pthread_rwlock_t rw;

	rwlock_make(&rw, _i);
	/* 2^28 - 2 readers, in the layout's count. */
	__atomic_store_n(&rw.__data.__readers,
			 TOFUTEX_RW_SHARED | (TOFUTEX_RW_COUNT_MASK - 1),
			 __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	/* Now full, with the caller among the readers (rejoin path too). */
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), EAGAIN);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EAGAIN);
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &real), EAGAIN);
	ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC,
						    &mono), EAGAIN);
	ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), EAGAIN);
	ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw),
			  TOFUTEX_RW_SHARED | (TOFUTEX_RW_COUNT_MASK - 1));
	__atomic_store_n(&rw.__data.__readers, 0, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/*
 * A bad deadline: EINVAL, on a free lock too, before EDEADLK (glibc's
 * pthread_rwlock_common.c checks the clock and tv_nsec first); a
 * negative tv_sec is a valid deadline.
 */
START_TEST(test_bad_deadline)
{
	struct timespec big = { .tv_sec = 0, .tv_nsec = 1000000000 };
	struct timespec neg = { .tv_sec = 0, .tv_nsec = -1 };
	struct timespec past = { .tv_sec = -1, .tv_nsec = 0 };
	struct timespec mono = ts_in(20 * NSEC_PER_MSEC);
	pthread_rwlock_t rw;
	int held;

	rwlock_make(&rw, _i);
	for (held = 0; held < 2; held++) {
		ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &big), EINVAL);
		ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &neg), EINVAL);
		ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &big), EINVAL);
		ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &neg), EINVAL);
		ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw,
				 CLOCK_PROCESS_CPUTIME_ID, &mono), EINVAL);
		ck_assert_int_eq(pthread_rwlock_clockwrlock(&rw,
				 CLOCK_PROCESS_CPUTIME_ID, &mono), EINVAL);
		ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw,
				 CLOCK_MONOTONIC, &big), EINVAL);
		/* Then held for reading by the caller (the rejoin path). */
		if (!held)
			ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	}
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), 0);

	/* Checked before the writer's relock is found: EINVAL, not EDEADLK. */
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &big), EINVAL);
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &neg), EINVAL);
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &past), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &past), EDEADLK);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	/* A negative tv_sec is a valid deadline, long passed: a free lock. */
	ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &past), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &past), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
}
END_TEST

/* Deadlines on both clocks end waits for a writer and for readers. */
START_TEST(test_timed_both_clocks)
{
	struct timespec past = { .tv_sec = 1, .tv_nsec = 0 };
	pthread_rwlock_t rw;

	rwlock_make(&rw, _i);
	/* A free lock is taken even at a past deadline. */
	ck_assert_int_eq(pthread_rwlock_timedwrlock(&rw, &past), 0);
	ck_assert_int_eq(in_thread(timedrd_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(in_thread(timedwr_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(in_thread(clockrd_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(in_thread(clockwr_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC,
						    &past), 0);
	/* Read-held: readers enter, writers time out. */
	ck_assert_int_eq(in_thread(timedrd_soon, &rw), 0);
	ck_assert_int_eq(in_thread(clockrd_soon, &rw), 0);
	ck_assert_int_eq(in_thread(timedwr_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(in_thread(clockwr_soon, &rw), ETIMEDOUT);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(in_thread(clockwr_soon, &rw), 0);
}
END_TEST

/* Unlock of a lock the caller does not hold: EPERM (glibc: undefined). */
START_TEST(test_unlock_not_held)
{
	pthread_rwlock_t rw;

	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), EPERM);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(in_thread(pthread_rwlock_unlock, &rw), EPERM);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
	/* A destroyed rwlock may be initialised again. */
	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/* Destroy of a held rwlock: 0, as glibc's destroy checks nothing. */
START_TEST(test_destroy_held)
{
	pthread_rwlock_t rw;

	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/* ---- exclusion, shared readers, and proof that the TO lock took it ---- */

struct shared {
	pthread_rwlock_t rw;
	unsigned long a, b;		/* equal outside a write lock */
	unsigned long per_thread;
	atomic_uint readers;		/* in a read lock now */
	atomic_uint most_readers;	/* the most seen at once */
};

static int take(pthread_rwlock_t *rw, bool write, unsigned long i)
{
	struct timespec ts;
	int r;

	switch (i % 4) {
	case 0:
		return write ? pthread_rwlock_wrlock(rw) :
			       pthread_rwlock_rdlock(rw);
	case 1:
		ts = realtime_in(TEST_WAIT_NS);
		return write ? pthread_rwlock_timedwrlock(rw, &ts) :
			       pthread_rwlock_timedrdlock(rw, &ts);
	case 2:
		ts = ts_in(TEST_WAIT_NS);
		return write ?
		       pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &ts) :
		       pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &ts);
	default:
		while ((r = write ? pthread_rwlock_trywrlock(rw) :
				    pthread_rwlock_tryrdlock(rw)) == EBUSY)
			sched_yield();
		return r;
	}
}

static void *writer_main(void *arg)
{
	struct shared *s = arg;
	unsigned long i;
	int r;

	for (i = 0; i < s->per_thread; i++) {
		r = take(&s->rw, true, i);
		TCHECK(r == 0, "write lock = %d", r);
		TCHECK(atomic_load(&s->readers) == 0, "a reader is inside");
		s->a++;
		busy_work(50);
		s->b++;
		r = pthread_rwlock_unlock(&s->rw);
		TCHECK(r == 0, "write unlock = %d", r);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct shared *s = arg;
	unsigned long i;
	unsigned int n, most;
	int r;

	for (i = 0; i < s->per_thread; i++) {
		r = take(&s->rw, false, i);
		TCHECK(r == 0, "read lock = %d", r);
		n = atomic_fetch_add(&s->readers, 1) + 1;
		most = atomic_load(&s->most_readers);
		while (n > most &&
		       !atomic_compare_exchange_weak(&s->most_readers, &most, n))
			;
		TCHECK(s->a == s->b, "torn: %lu %lu", s->a, s->b);
		busy_work(50);
		atomic_fetch_sub(&s->readers, 1);
		r = pthread_rwlock_unlock(&s->rw);
		TCHECK(r == 0, "read unlock = %d", r);
	}
	return NULL;
}

START_TEST(test_exclusion)
{
	struct shared s = { .per_thread = scaled(5000, 500) };
	pthread_t t[4];
	int i;

	tfail_reset();
	rwlock_make(&s.rw, _i);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						i < 2 ? writer_main : reader_main,
						&s), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, 10 * TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(s.a, 2 * s.per_thread);
	ck_assert_uint_eq(s.b, s.a);
	ck_assert_uint_eq(rw_word(&s.rw), 0);
}
END_TEST

/* ---- a release wakes one writer, not every sleeper ---- */

#define HERD_WRITERS 6

/* How often thread @tid has blocked (voluntary context switches). */
static unsigned long thread_blocks(uint32_t tid)
{
	char buf[2048], *p;

	ck_assert(thread_proc_read(tid, "status", buf, sizeof(buf)));
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	ck_assert(p);
	return strtoul(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
}

struct herd {
	pthread_rwlock_t rw;
	uint32_t tid[HERD_WRITERS];
	int go[2];
	atomic_int holder;
};

struct herd_arg {
	struct herd *h;
	int i;
};

/* Write-lock, say so, hold until a byte comes, unlock. */
static void *herd_writer_main(void *arg)
{
	struct herd_arg *a = arg;
	struct herd *h = a->h;
	char c;

	__atomic_store_n(&h->tid[a->i], test_gettid(), __ATOMIC_RELEASE);
	TCHECK(pthread_rwlock_wrlock(&h->rw) == 0, "wrlock failed");
	TCHECK(atomic_exchange(&h->holder, a->i) == -1, "two writers inside");
	TCHECK(read(h->go[0], &c, 1) == 1, "read failed");
	atomic_store(&h->holder, -1);
	TCHECK(pthread_rwlock_unlock(&h->rw) == 0, "unlock failed");
	return NULL;
}

/*
 * Writers asleep on a write-locked rwlock; its release lets one in and
 * wakes none of the others (glibc wakes one writer). The module's queue
 * may also wake the next waiter in line, to spin as its top waiter, so
 * one other may block again; a release that woke every sleeper makes
 * them all block again.
 */
START_TEST(test_release_wakes_one_writer)
{
	struct herd_arg a[HERD_WRITERS];
	unsigned long before[HERD_WRITERS], woke = 0;
	pthread_t t[HERD_WRITERS];
	struct herd h;
	bool ok;
	int i, held;

	tfail_reset();
	rwlock_make(&h.rw, _i);
	memset(h.tid, 0, sizeof(h.tid));
	atomic_init(&h.holder, -1);
	ck_assert_int_eq(pipe(h.go), 0);
	ck_assert_int_eq(pthread_rwlock_wrlock(&h.rw), 0);
	for (i = 0; i < HERD_WRITERS; i++) {
		a[i] = (struct herd_arg){ .h = &h, .i = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, herd_writer_main,
						&a[i]), 0);
	}
	for (i = 0; i < HERD_WRITERS; i++)
		ck_assert(thread_asleep_within(&h.tid[i]));
	for (i = 0; i < HERD_WRITERS; i++)
		before[i] = thread_blocks(h.tid[i]);
	ck_assert_int_eq(pthread_rwlock_unlock(&h.rw), 0);
	WAIT_UNTIL(ok, atomic_load(&h.holder) >= 0, TEST_WAIT_NS);
	ck_assert(ok);
	held = atomic_load(&h.holder);
	/* Whoever woke and lost runs until it sleeps again. */
	for (i = 0; i < HERD_WRITERS; i++)
		ck_assert(thread_asleep_within(&h.tid[i]));
	for (i = 0; i < HERD_WRITERS; i++)
		if (i != held && thread_blocks(h.tid[i]) != before[i])
			woke++;
	ck_assert_int_eq(write(h.go[1], "......", HERD_WRITERS), HERD_WRITERS);
	for (i = 0; i < HERD_WRITERS; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_msg(woke <= 1, "the release woke %lu of the %d writers that lost",
		      woke, HERD_WRITERS - 1);
	close(h.go[0]);
	close(h.go[1]);
	ck_assert_int_eq(pthread_rwlock_destroy(&h.rw), 0);
}
END_TEST

/* ---- a blocked waiter sleeps until it is woken ---- */

/* test_no_periodic_wakeups: blocks a waiter may make in 300 ms. */
#define NO_POLL_BLOCKS_MAX	3

/*
 * A writer asleep on readers: of the nonrecursive kinds it reserved the
 * lock before it slept (RW_HANDOFF: new readers' tryrdlock fails with
 * EBUSY), as glibc's waiting writer holds new readers off at once, not
 * after a hand-off time; of the reader-preferring kinds new readers still
 * join.
 */
START_TEST(test_writer_reserves_before_it_sleeps)
{
	struct sleeper w = { .write = true, .ret = -1 };
	pthread_rwlock_t rw;
	uint32_t word;
	pthread_t t;
	bool ok;

	rwlock_make(&rw, _i);
	w.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, sleeper_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	/*
	 * Asleep in its wait, not on the way to it (a page fault, the first
	 * use of the device): its WAITERS is in the word, set in the same
	 * cmpxchg as RW_HANDOFF where it reserves.
	 */
	WAIT_UNTIL(ok, rw_word(&rw) & TOFUTEX_WAITERS, TEST_WAIT_NS);
	ck_assert_msg(ok, "word %#x: the writer never waited", rw_word(&rw));
	word = rw_word(&rw);
	if (nonrecursive(_i)) {
		ck_assert_msg(word & TOFUTEX_RW_HANDOFF,
			      "word %#x: the writer sleeps without holding new readers off",
			      word);
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), EBUSY);
	} else {
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), 0);
	}
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(w.ret, 0);
}
END_TEST

/*
 * _i / 2: the kind; _i % 2: the lock is write-held (a reader and a writer
 * wait) or read-held (a writer waits). glibc's waiters sleep until the
 * release wakes them; so do ours: over 300 ms each blocks again a few
 * times at most (a writer's one look for readers to hold it off, and on a
 * loaded machine a sleep the look itself cut short), where a poll every
 * TOFUTEX_POLL_NS would make it a dozen times. On the module the
 * first waiter for a writer looks at it every owner_check_ns, in the
 * kernel, and a reader of the joining kinds every TOFUTEX_POLL_NS
 * (tofutex-run(1)): only the read-held case is the same there.
 */
START_TEST(test_no_periodic_wakeups)
{
	pthread_rwlock_t rw;
	bool write_held = _i % 2;
	struct sleeper sl[2] = {
		{ .rw = &rw, .write = true },
		{ .rw = &rw, .write = false },
	};
	unsigned long before[2], after[2];
	int i, n = write_held ? 2 : 1;
	pthread_t t[2];

	if (write_held && tofutex_backend() == TOFUTEX_BACKEND_MODULE)
		return;
	rwlock_make(&rw, _i / 2);
	ck_assert_int_eq(write_held ? pthread_rwlock_wrlock(&rw) :
				      pthread_rwlock_rdlock(&rw), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, sleeper_main,
						&sl[i]), 0);
	for (i = 0; i < n; i++)
		ck_assert(thread_asleep_within(&sl[i].tid));
	for (i = 0; i < n; i++)
		before[i] = thread_blocks(sl[i].tid);
	sleep_ns(300 * NSEC_PER_MSEC);
	for (i = 0; i < n; i++)
		after[i] = thread_blocks(sl[i].tid);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	for (i = 0; i < n; i++) {
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
		ck_assert_int_eq(sl[i].ret, 0);
	}
	for (i = 0; i < n; i++)
		ck_assert_msg(after[i] - before[i] <= NO_POLL_BLOCKS_MAX,
			      "the waiting %s blocked %lu times in 300 ms",
			      sl[i].write ? "writer" : "reader",
			      after[i] - before[i]);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

struct both_in {
	pthread_rwlock_t *rw;
	atomic_uint inside;
	int ret;
};

/* Read-lock, wait until another reader is inside too, unlock. */
static void *meet_main(void *arg)
{
	struct both_in *b = arg;
	bool met;

	b->ret = pthread_rwlock_rdlock(b->rw);
	if (b->ret)
		return NULL;
	atomic_fetch_add(&b->inside, 1);
	WAIT_UNTIL(met, atomic_load(&b->inside) >= 2, TEST_WAIT_NS);
	if (!met)
		b->ret = ETIMEDOUT;
	pthread_rwlock_unlock(b->rw);
	return NULL;
}

/* Two readers hold the lock at once. */
START_TEST(test_shared_readers)
{
	pthread_rwlock_t rw;
	struct both_in b = { .rw = &rw, .ret = -1 };
	pthread_t t;
	bool met;

	rwlock_make(&rw, _i);
	ck_assert_int_eq(pthread_create(&t, NULL, meet_main, &b), 0);
	WAIT_UNTIL(met, atomic_load(&b.inside) == 1, TEST_WAIT_NS);
	ck_assert(met);
	ck_assert_uint_eq(rw_word(&rw), TOFUTEX_RW_SHARED | 1);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	atomic_fetch_add(&b.inside, 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(b.ret, 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw), 0);
}
END_TEST

/* Write-lock @rw until another thread waits for it (WAITERS). */
static void *hold_write_main(void *arg)
{
	pthread_rwlock_t *rw = arg;
	bool ok;

	TCHECK(pthread_rwlock_wrlock(rw) == 0, "wrlock");
	WAIT_UNTIL(ok, rw_word(rw) & TOFUTEX_WAITERS, TEST_WAIT_NS);
	TCHECK(ok, "the reader never waited with WAITERS set: word 0x%08x",
	       rw_word(rw));
	TCHECK(pthread_rwlock_unlock(rw) == 0, "unlock");
	return NULL;
}

/*
 * A reader that must wait for a sleeping writer goes to the kernel; the
 * writer keeps the lock until it does, however late the reader comes.
 */
START_TEST(test_contended_lock_uses_backend)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct tofutex_stats before, after;
	bool module = tofutex_backend() == TOFUTEX_BACKEND_MODULE;
	pthread_t t;
	bool held;

	tfail_reset();
	if (module)
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &before), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_write_main, &rw), 0);
	WAIT_UNTIL(held, rw_word(&rw) != 0, TEST_WAIT_NS);
	ck_assert(held);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_uint_eq(rw_word(&rw) & ~TOFUTEX_WAITERS,
			  TOFUTEX_RW_SHARED | 1);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	if (module) {
		ck_assert_int_eq(tofutex_stats(TOFUTEX_STATS_PROCESS, &after), 0);
		ck_assert_uint_gt(after.lock_calls, before.lock_calls);
	}
}
END_TEST

/*
 * A writer whose timed lock ran out (after it waited long enough to
 * block new readers) leaves nothing behind, as glibc's does: while the
 * reader still holds the lock another reader joins it at once, and once
 * the readers are gone the lock is free for readers and writers alike.
 */
static int timedwr_long(pthread_rwlock_t *rw)
{
	struct timespec ts = realtime_in(200 * NSEC_PER_MSEC);

	return pthread_rwlock_timedwrlock(rw, &ts);
}

static int clockwr_long(pthread_rwlock_t *rw)
{
	struct timespec ts = ts_in(200 * NSEC_PER_MSEC);

	return pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, &ts);
}

START_TEST(test_timed_out_writer_withdraws)
{
	int (*const writer[])(pthread_rwlock_t *) = {
		timedwr_long, clockwr_long,
	};
	struct timespec soon;
	pthread_rwlock_t rw;
	size_t i;

	rwlock_make(&rw, _i);
	for (i = 0; i < sizeof(writer) / sizeof(writer[0]); i++) {
		ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
		ck_assert_int_eq(in_thread(writer[i], &rw), ETIMEDOUT);
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), 0);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		/* Free: every lock succeeds at once. */
		ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), 0);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), 0);
		soon = realtime_in(TEST_WAIT_NS);
		ck_assert_int_eq(pthread_rwlock_timedrdlock(&rw, &soon), 0);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), 0);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	}
}
END_TEST

/*
 * glibc 2.36's timed locks on x86-64 hand a NULL deadline to a futex
 * wait as no timeout: a NULL deadline is a lock without one, for every
 * kind, read or write, free or held.
 */
static const struct timespec *volatile no_deadline;

static int timedrd_null(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_timedrdlock(rw, no_deadline);

	return r ? r : pthread_rwlock_unlock(rw);
}

static int timedwr_null(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_timedwrlock(rw, no_deadline);

	return r ? r : pthread_rwlock_unlock(rw);
}

static int clockrd_null(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, no_deadline);

	return r ? r : pthread_rwlock_unlock(rw);
}

static int clockwr_null(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_clockwrlock(rw, CLOCK_MONOTONIC, no_deadline);

	return r ? r : pthread_rwlock_unlock(rw);
}

START_TEST(test_timed_null_deadline)
{
	int (*const fn[])(pthread_rwlock_t *) = {
		timedrd_null, timedwr_null, clockrd_null, clockwr_null,
	};
	struct call c = { .ret = -1 };
	pthread_rwlock_t rw;
	pthread_t t;
	size_t i;

	rwlock_make(&rw, _i);
	for (i = 0; i < sizeof(fn) / sizeof(fn[0]); i++) {
		ck_assert_int_eq(fn[i](&rw), 0);
		/* Held: it waits for the unlock, however long. */
		ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
		c.fn = fn[i];
		c.rw = &rw;
		c.ret = -1;
		ck_assert_int_eq(pthread_create(&t, NULL, call_main, &c), 0);
		ck_assert(!join_within(t, NULL, 50 * NSEC_PER_MSEC));
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		ck_assert(join_within(t, NULL, TEST_WAIT_NS));
		ck_assert_int_eq(c.ret, 0);
	}
}
END_TEST


/* ---- process-shared rwlocks stay glibc's ---- */

START_TEST(test_pshared_is_glibc)
{
	pthread_rwlock_t *rw = mmap(NULL, sizeof(*rw), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_rwlockattr_t a;
	int status, tried[2];
	char busy = 0;
	pid_t pid;

	ck_assert(rw != MAP_FAILED);
	ck_assert_int_eq(pthread_rwlockattr_init(&a), 0);
	ck_assert_int_eq(pthread_rwlockattr_setpshared(&a,
						       PTHREAD_PROCESS_SHARED), 0);
	ck_assert_int_eq(pthread_rwlock_init(rw, &a), 0);
	pthread_rwlockattr_destroy(&a);
	ck_assert_int_eq(pthread_rwlock_wrlock(rw), 0);
	/* glibc's layout: the writer in __cur_writer, not a TO word. */
	ck_assert_int_eq(rw->__data.__cur_writer, (int)test_gettid());
	ck_assert_uint_ne(rw->__data.__readers, test_gettid());
	ck_assert_int_eq(pipe(tried), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		busy = pthread_rwlock_tryrdlock(rw) == EBUSY;
		/* The parent keeps the write lock until it has read this. */
		if (write(tried[1], &busy, 1) != 1 || !busy)
			_exit(1);
		_exit(pthread_rwlock_rdlock(rw) == 0 &&
		      pthread_rwlock_unlock(rw) == 0 ? 0 : 1);
	}
	ck_assert_int_eq(read(tried[0], &busy, 1), 1);
	ck_assert(busy);
	/* Most likely asleep in glibc's rdlock by now; either way it gets it. */
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_rwlock_unlock(rw), 0);
	close(tried[0]);
	close(tried[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(rw), 0);
	munmap(rw, sizeof(*rw));
}
END_TEST

/*
 * A rwlock that is not aligned for its 32-bit word (a member of a packed
 * structure) is glibc's, as without the preload: neither futex(2) nor the
 * module takes a misaligned word. Uncontended, every call succeeds, in a
 * new thread (whose TID the preload has not learnt) as in the main one,
 * and the write lock is in glibc's layout (__cur_writer); on arm64, where
 * glibc's own calls may fault, they do as glibc's.
 */
struct misaligned {
	pthread_rwlock_t *rw;
	int err[8];
};

static void misaligned_calls(struct misaligned *m)
{
	int i = 0;

	m->err[i++] = pthread_rwlock_wrlock(m->rw);
	m->err[i++] = pthread_rwlock_unlock(m->rw);
	m->err[i++] = pthread_rwlock_rdlock(m->rw);
	m->err[i++] = pthread_rwlock_unlock(m->rw);
	m->err[i++] = pthread_rwlock_tryrdlock(m->rw);
	m->err[i++] = pthread_rwlock_unlock(m->rw);
	m->err[i++] = pthread_rwlock_trywrlock(m->rw);
	m->err[i++] = pthread_rwlock_unlock(m->rw);
}

static void *misaligned_main(void *arg)
{
	misaligned_calls(arg);
	return NULL;
}

/* The calls in a child: 0, or 10 + the first that failed. */
static __attribute__((unused)) int misaligned_child(void *arg)
{
	struct misaligned *m = arg;

	misaligned_calls(m);
	for (int i = 0; i < 8; i++)
		if (m->err[i])
			return 10 + i;
	return 0;
}

START_TEST(test_misaligned_is_glibc)
{
	_Alignas(pthread_rwlock_t) char buf[sizeof(pthread_rwlock_t) + 8];
	struct misaligned m = { .rw = (pthread_rwlock_t *)(void *)(buf + 1) };
	int writer;
	pthread_t t;

	rwlock_make(m.rw, _i);
#if defined(__aarch64__)
	/* On arm64: glibc's answers, or its fault (common.h), in a child. */
	ck_assert_int_le(misaligned_in_child(misaligned_child, &m), 0);
	return;
#endif
	ck_assert_int_eq(pthread_create(&t, NULL, misaligned_main, &m), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(m.err[i] == 0, "new thread, call %d: %s", i,
			      strerror(m.err[i]));
	misaligned_calls(&m);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(m.err[i] == 0, "main thread, call %d: %s", i,
			      strerror(m.err[i]));
	ck_assert_int_eq(pthread_rwlock_wrlock(m.rw), 0);
	memcpy(&writer, (char *)m.rw + offsetof(pthread_rwlock_t,
						__data.__cur_writer),
	       sizeof(writer));
	ck_assert_int_eq(writer, (int)test_gettid());
	ck_assert_int_eq(pthread_rwlock_unlock(m.rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(m.rw), 0);
}
END_TEST

static Suite *pthread_rwlock_suite(void)
{
	Suite *s = suite_create("pthread_rwlock under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("preload");
	tcase_add_test(tc, test_preload_in_effect);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_writer_relock_edeadlk, 0, K_COUNT);
	tcase_add_loop_test(tc, test_recursive_read, 0, K_COUNT);
	tcase_add_loop_test(tc, test_read_while_writer_starves, 0, K_COUNT);
	tcase_add_loop_test(tc, test_reader_count_full, 0, K_COUNT);
	tcase_add_loop_test(tc, test_bad_deadline, 0, K_COUNT);
	tcase_add_loop_test(tc, test_timed_both_clocks, 0, K_COUNT);
	tcase_add_loop_test(tc, test_unlock_not_held, 0, K_COUNT);
	tcase_add_loop_test(tc, test_destroy_held, 0, K_COUNT);
	tcase_add_loop_test(tc, test_timed_out_writer_withdraws, 0, K_COUNT);
	tcase_add_loop_test(tc, test_timed_null_deadline, 0, K_COUNT);
	tcase_add_loop_test(tc, test_misaligned_is_glibc, 0, K_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("exclusion");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_exclusion, 0, K_COUNT);
	tcase_add_loop_test(tc, test_shared_readers, 0, K_COUNT);
	tcase_add_test(tc, test_contended_lock_uses_backend);
	suite_add_tcase(s, tc);

	tc = tcase_create("wakes");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_release_wakes_one_writer, 0, K_COUNT);
	tcase_add_loop_test(tc, test_writer_reserves_before_it_sleeps, 0,
			    K_COUNT);
	tcase_add_loop_test(tc, test_no_periodic_wakeups, 0, 2 * K_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("glibc");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_pshared_is_glibc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pthread_rwlock_suite());
}
