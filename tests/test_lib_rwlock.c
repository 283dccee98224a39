// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex's reader/writer locks (tofutex_rwlock_*) on whichever backend
 * it chose (tofutex(3)): the pthread-style errors, exclusion, readers
 * sharing the lock, deadlines on both clocks, a writer that gets the lock
 * while readers keep arriving, and a writer that exits holding it. Nothing
 * here reads module statistics, so the same program runs on the module,
 * with TOFUTEX_BACKEND=futex, and natively without the module.
 */
#include "common.h"

static uint32_t rwword(tofutex_rwlock_t *rw)
{
	return word_load(&rw->word);
}

/* ---- The pthread-style errors ---- */

START_TEST(test_rwlock_errors)
{
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000L };
	uint32_t tid = test_gettid();

	ck_assert_int_eq(tofutex_rwlock_init(NULL), EINVAL);
	ck_assert_int_eq(tofutex_rwlock_rdlock(NULL), EINVAL);
	ck_assert_int_eq(tofutex_rwlock_unlock(NULL), EINVAL);
	ck_assert_int_eq(tofutex_rwlock_init(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), EPERM);
	ck_assert_int_eq(tofutex_rwlock_timedrdlock(&rw, NULL), EINVAL);
	ck_assert_int_eq(tofutex_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC,
						    &bad), EINVAL);
	ck_assert_int_eq(tofutex_rwlock_clockrdlock(&rw, CLOCK_PROCESS_CPUTIME_ID,
						    &bad), EINVAL);

	/* The writer: EDEADLK for either lock, EBUSY for the tries. */
	ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw), tid);
	ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), EDEADLK);
	ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), EDEADLK);
	ck_assert_int_eq(tofutex_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_destroy(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw), 0);

	/* Readers count; a writer cannot come in. */
	ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_tryrdlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw), TOFUTEX_RW_SHARED | 2);
	ck_assert_int_eq(tofutex_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), EPERM);
	ck_assert_uint_eq(rwword(&rw), 0);

	/*
	 * The last reader of a word a writer reserved releases it through
	 * the backend (which decides what the reservation becomes), and
	 * returns: also without WAITERS, which no backend leaves alone
	 * with RW_HANDOFF, but which a stray store could.
	 */
	rw.word = TOFUTEX_RW_SHARED | TOFUTEX_RW_HANDOFF | 1;
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);
	rw.word = 0;

	/* A full reader count: EAGAIN. */
	rw.word = TOFUTEX_RW_SHARED | TOFUTEX_RW_COUNT_MASK;
	ck_assert_int_eq(tofutex_rwlock_tryrdlock(&rw), EAGAIN);
	ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), EAGAIN);
	rw.word = 0;

	ck_assert_int_eq(tofutex_rwlock_trywrlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(tofutex_rwlock_destroy(&rw), 0);
}
END_TEST

/* ---- Exclusion, with every way of locking ---- */

#define EXCL_THREADS	4

struct excl {
	tofutex_rwlock_t rw;
	unsigned long iters;
	unsigned long plain;
	/*
	 * Relaxed, so that only the lock orders @plain: a lock that lost
	 * its acquire or release then shows as a data race under
	 * ThreadSanitizer (make check-tsan), not only as a wrong count.
	 */
	atomic_int readers_in;
	atomic_int writers_in;
	atomic_ulong writes;
};

static int excl_lock(struct excl *x, bool write, unsigned long i)
{
	struct timespec far_rt = realtime_in(3 * TEST_WAIT_NS);
	struct timespec far_mono = ts_in(3 * TEST_WAIT_NS);
	int r;

	switch (i % 4) {
	case 0:
		return write ? tofutex_rwlock_wrlock(&x->rw) :
			       tofutex_rwlock_rdlock(&x->rw);
	case 1:
		return write ? tofutex_rwlock_timedwrlock(&x->rw, &far_rt) :
			       tofutex_rwlock_timedrdlock(&x->rw, &far_rt);
	case 2:
		return write ? tofutex_rwlock_clockwrlock(&x->rw,
							  CLOCK_MONOTONIC,
							  &far_mono) :
			       tofutex_rwlock_clockrdlock(&x->rw,
							  CLOCK_MONOTONIC,
							  &far_mono);
	default:
		do {
			r = write ? tofutex_rwlock_trywrlock(&x->rw) :
				    tofutex_rwlock_tryrdlock(&x->rw);
			if (r == EBUSY)
				sched_yield();
		} while (r == EBUSY);
		return r;
	}
}

static void *excl_main(void *arg)
{
	struct excl *x = arg;
	uint32_t tid = test_gettid();
	unsigned long i, p;
	bool write;
	int r, w;

	for (i = 0; i < x->iters && !tfailed(); i++) {
		write = (i + tid) % 3 == 0;
		r = excl_lock(x, write, i / 3);
		if (r) {
			TFAIL("lock (write %d, way %lu) = %d", write, i / 3 % 4,
			      r);
			break;
		}
		if (write) {
			w = atomic_fetch_add_explicit(&x->writers_in, 1, memory_order_relaxed);
			TCHECK(w == 0 &&
			       atomic_load_explicit(&x->readers_in, memory_order_relaxed) == 0,
			       "a writer is not alone");
			p = x->plain;
			busy_work(200);
			x->plain = p + 1;
			atomic_fetch_sub_explicit(&x->writers_in, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&x->writes, 1, memory_order_relaxed);
		} else {
			atomic_fetch_add_explicit(&x->readers_in, 1, memory_order_relaxed);
			TCHECK(atomic_load_explicit(&x->writers_in, memory_order_relaxed) == 0,
			       "a reader is in with a writer");
			p = x->plain;
			TCHECK(p <= x->iters * EXCL_THREADS, "plain %lu", p);
			busy_work(200);
			atomic_fetch_sub_explicit(&x->readers_in, 1, memory_order_relaxed);
		}
		r = tofutex_rwlock_unlock(&x->rw);
		TCHECK(r == 0, "unlock = %d", r);
	}
	return NULL;
}

START_TEST(test_rwlock_exclusion)
{
	pthread_t t[EXCL_THREADS];
	struct excl *x;
	int i;

	x = calloc(1, sizeof(*x));
	ck_assert_ptr_nonnull(x);
	x->iters = scaled(4000, 200);
	for (i = 0; i < EXCL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, excl_main, x), 0);
	for (i = 0; i < EXCL_THREADS; i++)
		ck_assert_msg(join_within(t[i], NULL, 6 * TEST_WAIT_NS),
			      "thread %d did not finish", i);
	tfail_assert();
	ck_assert_uint_eq(x->plain, atomic_load(&x->writes));
	ck_assert_uint_eq(rwword(&x->rw), 0);
	free(x);
}
END_TEST

/* ---- Readers share; writers wait; deadlines ---- */

struct other {
	tofutex_rwlock_t *rw;
	bool write;
	clockid_t clock;
	uint64_t rel_ns;	/* 0: no deadline */
	bool try;		/* the try lock instead */
	int ret;
	atomic_bool done;
};

static void *other_main(void *arg)
{
	struct other *o = arg;
	struct timespec ts;

	if (o->try) {
		o->ret = o->write ? tofutex_rwlock_trywrlock(o->rw) :
				    tofutex_rwlock_tryrdlock(o->rw);
	} else if (!o->rel_ns) {
		o->ret = o->write ? tofutex_rwlock_wrlock(o->rw) :
				    tofutex_rwlock_rdlock(o->rw);
	} else {
		ts = o->clock == CLOCK_REALTIME ? realtime_in(o->rel_ns) :
						  ts_in(o->rel_ns);
		o->ret = o->write ?
			 tofutex_rwlock_clockwrlock(o->rw, o->clock, &ts) :
			 tofutex_rwlock_clockrdlock(o->rw, o->clock, &ts);
	}
	atomic_store(&o->done, true);
	if (!o->ret)
		TCHECK(tofutex_rwlock_unlock(o->rw) == 0, "other: unlock");
	return NULL;
}

/* @rel_ns: the deadline, 0 for none, OTHER_TRY for the try lock. */
#define OTHER_TRY	UINT64_MAX

static int other_run(tofutex_rwlock_t *rw, bool write, clockid_t clock,
		     uint64_t rel_ns)
{
	struct other o = {
		.rw = rw, .write = write, .clock = clock, .rel_ns = rel_ns,
		.try = rel_ns == OTHER_TRY,
	};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, other_main, &o), 0);
	ck_assert_msg(join_within(t, NULL, 3 * TEST_WAIT_NS),
		      "the other thread did not return");
	tfail_assert();
	return o.ret;
}

START_TEST(test_rwlock_readers_share_writers_wait)
{
	const clockid_t clocks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	int c;

	ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), 0);
	/* Another reader gets in at once, without a deadline. */
	ck_assert_int_eq(other_run(&rw, false, CLOCK_MONOTONIC, 0), 0);
	for (c = 0; c < 2; c++) {
		/* A writer waits for the reader and times out. */
		ck_assert_int_eq(other_run(&rw, true, clocks[c],
					   30 * NSEC_PER_MSEC), ETIMEDOUT);
		ck_assert_uint_eq(rwword(&rw) & (TOFUTEX_RW_SHARED |
						 TOFUTEX_RW_COUNT_MASK),
				  TOFUTEX_RW_SHARED | 1);
		/*
		 * It waited past the point where it keeps new readers out,
		 * and took that back as it gave up: nobody waits now.
		 */
		ck_assert_int_eq(other_run(&rw, false, clocks[c], OTHER_TRY),
				 0);
	}
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);

	ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), 0);
	for (c = 0; c < 2; c++)
		ck_assert_int_eq(other_run(&rw, false, clocks[c],
					   30 * NSEC_PER_MSEC), ETIMEDOUT);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);
}
END_TEST

/* A lock released before the deadline is taken, on either clock. */
struct release_later {
	tofutex_rwlock_t *rw;
	atomic_bool locked;
};

static void *release_later_main(void *arg)
{
	struct release_later *rl = arg;

	TCHECK(tofutex_rwlock_wrlock(rl->rw) == 0, "wrlock");
	atomic_store(&rl->locked, true);
	sleep_ns(20 * NSEC_PER_MSEC);
	TCHECK(tofutex_rwlock_unlock(rl->rw) == 0, "unlock");
	return NULL;
}

START_TEST(test_rwlock_released_in_time)
{
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	struct release_later rl = { .rw = &rw };
	clockid_t clock = _i ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	struct timespec ts;
	pthread_t t;
	bool ok;

	ck_assert_int_eq(pthread_create(&t, NULL, release_later_main, &rl), 0);
	WAIT_UNTIL(ok, atomic_load(&rl.locked) || tfailed(), TEST_WAIT_NS);
	tfail_assert();
	ck_assert(ok);
	ts = clock == CLOCK_REALTIME ? realtime_in(TEST_WAIT_NS) :
				       ts_in(TEST_WAIT_NS);
	ck_assert_int_eq(tofutex_rwlock_clockrdlock(&rw, clock, &ts), 0);
	ck_assert_uint_eq(rwword(&rw) & (TOFUTEX_RW_SHARED |
					 TOFUTEX_RW_COUNT_MASK),
			  TOFUTEX_RW_SHARED | 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);
}
END_TEST

/* ---- No writer starvation ---- */

/*
 * /proc/self/task/<tid>/syscall names the call a thread that is not
 * running sleeps in: the reader blocked in its read lock sleeps in the
 * module's ioctl or in futex(2).
 */
static bool asleep_in_lock(uint32_t tid)
{
	char path[64], buf[256];
	ssize_t n;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%ld", &nr) != 1)
		return false;
	return nr == SYS_ioctl || nr == SYS_futex;
}

struct relay {
	tofutex_rwlock_t rw;
	_Atomic uint32_t tid[2];
	atomic_bool locking[2];
	atomic_ulong taken[2];
	atomic_bool stop;
	atomic_bool writer_in;
};

struct relay_arg {
	struct relay *rl;
	int me;
};

/*
 * Two readers relay the read lock so that it is never free by itself:
 * each releases only once the other took it again or is blocked taking it.
 */
static void *relay_main(void *arg)
{
	struct relay_arg *ra = arg;
	struct relay *rl = ra->rl;
	int me = ra->me, other = 1 - me, r;
	unsigned long seen;

	atomic_store(&rl->tid[me], test_gettid());
	while (!atomic_load(&rl->stop) && !tfailed()) {
		atomic_store(&rl->locking[me], true);
		r = tofutex_rwlock_rdlock(&rl->rw);
		atomic_store(&rl->locking[me], false);
		TCHECK(r == 0, "relay rdlock = %d", r);
		TCHECK(!atomic_load(&rl->writer_in),
		       "a reader got in with the writer");
		atomic_fetch_add(&rl->taken[me], 1);
		seen = atomic_load(&rl->taken[other]);
		while (atomic_load(&rl->taken[other]) == seen &&
		       !atomic_load(&rl->stop) &&
		       !(atomic_load(&rl->locking[other]) &&
			 asleep_in_lock(atomic_load(&rl->tid[other]))))
			sleep_ns(50 * NSEC_PER_USEC);
		r = tofutex_rwlock_unlock(&rl->rw);
		TCHECK(r == 0, "relay unlock = %d", r);
	}
	return NULL;
}

START_TEST(test_rwlock_writer_not_starved_by_reader_relay)
{
	struct relay_arg ra[2];
	unsigned long before;
	struct relay *rl;
	struct timespec ts;
	pthread_t t[2];
	bool ok;
	int i, r;

	rl = calloc(1, sizeof(*rl));
	ck_assert_ptr_nonnull(rl);
	for (i = 0; i < 2; i++) {
		ra[i].rl = rl;
		ra[i].me = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, relay_main,
						&ra[i]), 0);
	}
	WAIT_UNTIL(ok, atomic_load(&rl->taken[0]) > 3 &&
		   atomic_load(&rl->taken[1]) > 3, TEST_WAIT_NS);
	ck_assert_msg(ok, "the reader relay did not start");
	before = atomic_load(&rl->taken[0]) + atomic_load(&rl->taken[1]);

	ts = ts_in(TEST_WAIT_NS);
	r = tofutex_rwlock_clockwrlock(&rl->rw, CLOCK_MONOTONIC, &ts);
	ck_assert_msg(r == 0, "writer under a reader relay: %d (%s)", r,
		      strerror(r));
	atomic_store(&rl->writer_in, true);
	ck_assert_uint_eq(rwword(&rl->rw) & TOFUTEX_RW_COUNT_MASK,
			  test_gettid());
	/*
	 * The relay never stops by itself, so the readers were still
	 * arriving; they waited behind the writer and go on after it.
	 */
	sleep_ns(2 * NSEC_PER_MSEC);
	atomic_store(&rl->writer_in, false);
	ck_assert_int_eq(tofutex_rwlock_unlock(&rl->rw), 0);
	WAIT_UNTIL(ok, atomic_load(&rl->taken[0]) + atomic_load(&rl->taken[1]) >
		   before + 2 || tfailed(), TEST_WAIT_NS);
	ck_assert_msg(ok, "the reader relay did not go on after the writer");

	atomic_store(&rl->stop, true);
	for (i = 0; i < 2; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
			      "relay reader %d did not stop", i);
	tfail_assert();
	ck_assert_uint_eq(rwword(&rl->rw) & TOFUTEX_RW_COUNT_MASK, 0);
	free(rl);
}
END_TEST

/* ---- A writer that exits holding the lock ---- */

static void *wrlock_and_exit_main(void *arg)
{
	TCHECK(tofutex_rwlock_wrlock(arg) == 0, "dying writer: wrlock");
	pthread_exit(NULL);
}

/* _i 0: a reader, 1: a writer takes over the dead writer's lock. */
START_TEST(test_rwlock_writer_death)
{
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, wrlock_and_exit_main, &rw),
			 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_ne(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);
	if (_i == 0) {
		ck_assert_int_eq(tofutex_rwlock_rdlock(&rw), 0);
		ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 1);
	} else {
		ck_assert_int_eq(tofutex_rwlock_wrlock(&rw), 0);
		ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK,
				  test_gettid());
	}
	ck_assert_int_eq(tofutex_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rwword(&rw) & TOFUTEX_RW_COUNT_MASK, 0);
}
END_TEST

static Suite *lib_rwlock_suite(void)
{
	Suite *s = suite_create("lib_rwlock");
	TCase *tc;

	tc = tcase_create("api");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rwlock_errors);
	tcase_add_test(tc, test_rwlock_readers_share_writers_wait);
	tcase_add_loop_test(tc, test_rwlock_released_in_time, 0, 2);
	tcase_add_loop_test(tc, test_rwlock_writer_death, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("contention");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_rwlock_exclusion);
	tcase_add_test(tc, test_rwlock_writer_not_starved_by_reader_relay);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(lib_rwlock_suite());
}
