// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex condition variables on whichever backend the library chose:
 * producer/consumer with exact counts, broadcast to 1..64 waiters with
 * every waiter accounted for, timed waits on both clocks, a realtime
 * deadline moved by clock_settime(), signals during waits, errors. Like
 * test_lib_mutex it runs on both backends and natively.
 */
#include "common.h"

/* ---- producer/consumer ---- */

#define QUEUE_SLOTS	4

struct queue {
	tofutex_mutex_t m;
	tofutex_cond_t not_empty;
	tofutex_cond_t not_full;
	unsigned long slot[QUEUE_SLOTS];
	unsigned int head, count;
	unsigned long per_producer;
	unsigned int producers;
	unsigned int producers_done;
	unsigned long consumed;
	unsigned long sum;
};

static void q_lock(struct queue *q)
{
	int r = tofutex_mutex_lock(&q->m);

	TCHECK(r == 0, "lock = %d", r);
}

static void q_unlock(struct queue *q)
{
	int r = tofutex_mutex_unlock(&q->m);

	TCHECK(r == 0, "unlock = %d", r);
}

static void q_wait(tofutex_cond_t *c, struct queue *q)
{
	int r = tofutex_cond_wait(c, &q->m);

	TCHECK(r == 0, "cond_wait = %d", r);
}

static void *producer_main(void *arg)
{
	struct queue *q = arg;
	unsigned long i;

	for (i = 1; i <= q->per_producer; i++) {
		q_lock(q);
		while (q->count == QUEUE_SLOTS)
			q_wait(&q->not_full, q);
		q->slot[(q->head + q->count++) % QUEUE_SLOTS] = i;
		tofutex_cond_signal(&q->not_empty);
		q_unlock(q);
	}
	q_lock(q);
	if (++q->producers_done == q->producers)
		tofutex_cond_broadcast(&q->not_empty);
	q_unlock(q);
	return NULL;
}

static void *consumer_main(void *arg)
{
	struct queue *q = arg;

	for (;;) {
		q_lock(q);
		while (!q->count && q->producers_done < q->producers)
			q_wait(&q->not_empty, q);
		if (!q->count) {
			q_unlock(q);
			return NULL;
		}
		q->sum += q->slot[q->head];
		q->head = (q->head + 1) % QUEUE_SLOTS;
		q->count--;
		q->consumed++;
		tofutex_cond_signal(&q->not_full);
		q_unlock(q);
	}
}

static const unsigned int pc_shapes[][2] = {
	{ 1, 1 }, { 2, 2 }, { 1, 8 }, { 8, 1 }, { 4, 4 },
};

/* Every item produced is consumed once: exact count and sum. */
START_TEST(test_producer_consumer)
{
	struct queue q = {
		.m = TOFUTEX_MUTEX_INITIALIZER,
		.not_empty = TOFUTEX_COND_INITIALIZER,
		.not_full = TOFUTEX_COND_INITIALIZER,
		.per_producer = scaled(5000, 100),
		.producers = pc_shapes[_i][0],
	};
	unsigned int consumers = pc_shapes[_i][1], i;
	pthread_t t[16];

	for (i = 0; i < q.producers; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, producer_main, &q),
				 0);
	for (i = 0; i < consumers; i++)
		ck_assert_int_eq(pthread_create(&t[q.producers + i], NULL,
						consumer_main, &q), 0);
	for (i = 0; i < q.producers + consumers; i++)
		ck_assert(join_within(t[i], NULL, 4 * TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(q.consumed, q.producers * q.per_producer);
	ck_assert_uint_eq(q.sum, q.producers * q.per_producer *
				 (q.per_producer + 1) / 2);
	ck_assert_int_eq(tofutex_cond_destroy(&q.not_empty), 0);
	ck_assert_int_eq(tofutex_cond_destroy(&q.not_full), 0);
}
END_TEST

/* ---- broadcast ---- */

#define BCAST_MAX	64

struct barrier {
	tofutex_mutex_t m;
	tofutex_cond_t c;
	unsigned int generation;
	unsigned int arrived;
	unsigned int returned;
	atomic_int inside;	/* relaxed: only the mutex orders the rest */
};

struct bcast_waiter {
	struct barrier *b;
	unsigned int rounds;
};

static void *bcast_waiter_main(void *arg)
{
	struct bcast_waiter *w = arg;
	struct barrier *b = w->b;
	unsigned int round, gen;
	int r;

	for (round = 0; round < w->rounds; round++) {
		r = tofutex_mutex_lock(&b->m);
		TCHECK(r == 0, "lock = %d", r);
		gen = b->generation;
		b->arrived++;
		while (b->generation == gen) {
			r = tofutex_cond_wait(&b->c, &b->m);
			TCHECK(r == 0, "cond_wait = %d", r);
		}
		/* Woken ones hold the mutex one at a time. */
		TCHECK(atomic_fetch_add_explicit(&b->inside, 1, memory_order_relaxed) == 0,
		       "two owners");
		b->returned++;
		atomic_fetch_sub_explicit(&b->inside, 1, memory_order_relaxed);
		r = tofutex_mutex_unlock(&b->m);
		TCHECK(r == 0, "unlock = %d", r);
	}
	return NULL;
}

static const unsigned int bcast_counts[] = { 1, 2, 3, 8, 17, 33, 64 };

/*
 * n waiters block; one broadcast releases every one of them, each taking
 * the mutex in turn; repeated for a few rounds.
 */
START_TEST(test_broadcast_all_accounted)
{
	unsigned int n = bcast_counts[_i], rounds = 5, round, i;
	struct barrier b = {
		.m = TOFUTEX_MUTEX_INITIALIZER,
		.c = TOFUTEX_COND_INITIALIZER,
	};
	struct bcast_waiter w = { .b = &b, .rounds = rounds };
	pthread_t t[BCAST_MAX];
	unsigned int arrived;
	bool ok;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, bcast_waiter_main,
						&w), 0);
	for (round = 1; round <= rounds; round++) {
		WAIT_UNTIL(ok, (tofutex_mutex_lock(&b.m),
				arrived = b.arrived,
				tofutex_mutex_unlock(&b.m),
				arrived == n * round), TEST_WAIT_NS);
		ck_assert_msg(ok, "round %u: %u of %u waiters arrived", round,
			      arrived, n * round);
		ck_assert_int_eq(tofutex_mutex_lock(&b.m), 0);
		b.generation++;
		ck_assert_int_eq(tofutex_cond_broadcast(&b.c), 0);
		ck_assert_int_eq(tofutex_mutex_unlock(&b.m), 0);
	}
	for (i = 0; i < n; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
			      "waiter %u of %u never returned", i, n);
	tfail_assert();
	ck_assert_uint_eq(b.returned, n * rounds);
	ck_assert_uint_eq(word_load(&b.m.word), 0);
	ck_assert_int_eq(tofutex_cond_destroy(&b.c), 0);
}
END_TEST

/*
 * On a module that offers TOFUTEX_FEAT_REQUEUE, a broadcast to blocked
 * waiters moves them with TOFUTEX_IOC_REQUEUE (wait morphing) rather than
 * waking them all; the other backends have nothing to count.
 */
START_TEST(test_broadcast_requeues_on_module)
{
	struct barrier b = {
		.m = TOFUTEX_MUTEX_INITIALIZER,
		.c = TOFUTEX_COND_INITIALIZER,
	};
	struct bcast_waiter w = { .b = &b, .rounds = 1 };
	struct tofutex_stats before, after;
	unsigned int i, arrived = 0;
	uint64_t feat = 0;
	pthread_t t[8];
	bool ok;

	if (tofutex_backend() != TOFUTEX_BACKEND_MODULE ||
	    tofutex_version(NULL, &feat) || !(feat & TOFUTEX_FEAT_REQUEUE)) {
		printf("skipped: no module with TOFUTEX_FEAT_REQUEUE\n");
		return;
	}
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, bcast_waiter_main,
						&w), 0);
	WAIT_UNTIL(ok, (tofutex_mutex_lock(&b.m), arrived = b.arrived,
			tofutex_mutex_unlock(&b.m), arrived == 8),
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "%u of 8 waiters arrived", arrived);
	/* Arrived under the mutex; give the last one time to sleep. */
	sleep_ns(20 * NSEC_PER_MSEC);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_int_eq(tofutex_mutex_lock(&b.m), 0);
	b.generation++;
	ck_assert_int_eq(tofutex_cond_broadcast(&b.c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&b.m), 0);
	for (i = 0; i < 8; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(b.returned, 8);
	ck_assert_uint_eq(after.requeue_calls, before.requeue_calls + 1);
	ck_assert_uint_eq(after.wake_calls, before.wake_calls);
}
END_TEST

/* ---- timed waits ---- */

START_TEST(test_timed_waits)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	struct timespec ts, bad = { 0, 1000000000 };

	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ts = realtime_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	/* The mutex is held again after a timeout. */
	ck_assert_uint_eq(word_load(&m.word) & TOFUTEX_TID_MASK, test_gettid());
	ts = realtime_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_cond_clockwait(&c, &m, CLOCK_REALTIME, &ts),
			 ETIMEDOUT);
	ts = ts_in(30 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts),
			 ETIMEDOUT);
	/* A monotonic "in an hour" is long past on the realtime clock. */
	ts = ts_in(3600 * NSEC_PER_SEC);
	ck_assert_int_eq(tofutex_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	ts = (struct timespec){ 0, 0 };
	ck_assert_int_eq(tofutex_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts),
			 ETIMEDOUT);
	ck_assert_int_eq(tofutex_cond_clockwait(&c, &m, CLOCK_BOOTTIME, &ts),
			 EINVAL);
	ck_assert_int_eq(tofutex_cond_clockwait(&c, &m, CLOCK_REALTIME, &bad),
			 EINVAL);
	ck_assert_int_eq(tofutex_cond_timedwait(&c, &m, NULL), EINVAL);
	ck_assert_uint_eq(word_load(&m.word) & TOFUTEX_TID_MASK, test_gettid());
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	/* Waiting without holding the mutex. */
	ck_assert_int_eq(tofutex_cond_wait(&c, &m), EPERM);
	ck_assert_int_eq(tofutex_cond_destroy(&c), 0);
}
END_TEST

struct timed_waiter {
	tofutex_mutex_t *m;
	tofutex_cond_t *c;
	clockid_t clock;
	struct timespec deadline;
	bool *flag;
	atomic_int waiting;
	atomic_int done;
	atomic_uint returns;
	int ret;
};

/* Wait for *flag with a deadline; count returns. */
static void *timed_waiter_main(void *arg)
{
	struct timed_waiter *w = arg;
	int r;

	r = tofutex_mutex_lock(w->m);
	TCHECK(r == 0, "lock = %d", r);
	atomic_store(&w->waiting, 1);
	do {
		w->ret = tofutex_cond_clockwait(w->c, w->m, w->clock,
						&w->deadline);
		atomic_fetch_add(&w->returns, 1);
	} while (w->ret == 0 && !*w->flag);
	r = tofutex_mutex_unlock(w->m);
	TCHECK(r == 0, "unlock = %d", r);
	atomic_store(&w->done, 1);
	return NULL;
}

/* Signalled before its deadline, on either clock (_i 0 or 1): 0. */
START_TEST(test_timed_wait_signalled)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	bool flag = false;
	struct timed_waiter w = {
		.m = &m, .c = &c, .flag = &flag,
		.clock = _i ? CLOCK_REALTIME : CLOCK_MONOTONIC,
	};
	pthread_t t;
	bool ok;

	w.deadline = _i ? realtime_in(TEST_WAIT_NS) : ts_in(TEST_WAIT_NS);
	ck_assert_int_eq(pthread_create(&t, NULL, timed_waiter_main, &w), 0);
	WAIT_UNTIL(ok, atomic_load(&w.waiting), TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	flag = true;
	ck_assert_int_eq(tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(w.ret, 0);
}
END_TEST

/*
 * A signal (_i 0) or a broadcast (_i 1) is counted against the waiters it
 * covers until they leave, so that later signals that would wake nobody
 * new make no system call; every waiter that leaves takes a count, also
 * when a timeout ended its wait. Here the woken waiters go back to
 * waiting and others time out: a signal afterwards must still wake the
 * one left asleep.
 */
#define TIMEOUT_WAITERS	2

START_TEST(test_signal_after_timeouts)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	struct timed_waiter w[1 + TIMEOUT_WAITERS];
	pthread_t t[1 + TIMEOUT_WAITERS];
	bool flag = false, ok;
	unsigned int i;

	for (i = 0; i < 1 + TIMEOUT_WAITERS; i++) {
		w[i] = (struct timed_waiter){
			.m = &m, .c = &c, .flag = &flag,
			.clock = CLOCK_MONOTONIC,
			.deadline = ts_in(i ? 30 * NSEC_PER_MSEC : TEST_WAIT_NS),
		};
		ck_assert_int_eq(pthread_create(&t[i], NULL, timed_waiter_main,
						&w[i]), 0);
		WAIT_UNTIL(ok, atomic_load(&w[i].waiting), TEST_WAIT_NS);
		ck_assert(ok);
	}
	/* Every waiter set its flag holding the mutex: all of them wait. */
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(_i ? tofutex_cond_broadcast(&c) :
			      tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	for (i = 1; i < 1 + TIMEOUT_WAITERS; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	/* Only the untimed waiter is left, woken or not. */
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	flag = true;
	ck_assert_int_eq(tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert(join_within(t[0], NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(w[0].ret, 0);
	ck_assert_int_eq(tofutex_cond_destroy(&c), 0);
}
END_TEST

/*
 * A realtime deadline follows clock_settime(): stepped back an hour, a
 * wait due in 300 ms (more on a slow machine) is not over a second
 * later; stepped forward again (and then past an hour-away deadline) it
 * ends with ETIMEDOUT. Root in a guest only; the clock is stepped back
 * afterwards.
 */
START_TEST(test_realtime_deadline_follows_settime)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	bool flag = false;
	struct timed_waiter w = {
		.m = &m, .c = &c, .flag = &flag, .clock = CLOCK_REALTIME,
	};
	uint64_t margin = 300 * NSEC_PER_MSEC, mono0, reached;
	unsigned int attempt;
	struct timespec rt0;
	bool ok, late;
	pthread_t t;

	if (!settime_allowed()) {
		printf("skipped: needs root and TOFUTEX_TEST_SETTIME=1\n");
		return;
	}
	/*
	 * Backward: the deadline moves away. A wait that ended before the
	 * step is accepted only when the clock may have reached the
	 * deadline first (a slow machine); then again with twice the margin.
	 */
	for (attempt = 0;; attempt++) {
		atomic_store(&w.waiting, 0);
		atomic_store(&w.done, 0);
		w.deadline = realtime_in(margin);
		ck_assert_int_eq(pthread_create(&t, NULL, timed_waiter_main,
						&w), 0);
		WAIT_UNTIL(ok, atomic_load(&w.waiting), TEST_WAIT_NS);
		ck_assert(ok);
		mono0 = now_ns();
		clock_gettime(CLOCK_REALTIME, &rt0);
		realtime_step(-3600);
		/* The most the clock can have read when it went back. */
		reached = ts_ns(&rt0) + (now_ns() - mono0);
		late = reached >= ts_ns(&w.deadline);
		sleep_ns(NSEC_PER_SEC);
		ok = !atomic_load(&w.done);
		realtime_step(3600);
		ck_assert(join_within(t, NULL, TEST_WAIT_NS));
		tfail_assert();
		ck_assert_int_eq(w.ret, ETIMEDOUT);
		if (ok || !late || attempt == 3)
			break;
		margin *= 2;
	}
	ck_assert_msg(ok, "wait ended although the clock went back an hour%s",
		      late ? " (its deadline had passed, 4 times)" : "");

	/* Forward: an hour-away deadline passes at once. */
	w.deadline = realtime_in(3600 * NSEC_PER_SEC);
	atomic_store(&w.waiting, 0);
	atomic_store(&w.done, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, timed_waiter_main, &w), 0);
	WAIT_UNTIL(ok, atomic_load(&w.waiting), TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(50 * NSEC_PER_MSEC);
	realtime_step(2 * 3600);
	WAIT_UNTIL(ok, atomic_load(&w.done), TEST_WAIT_NS);
	realtime_step(-2 * 3600);
	ck_assert_msg(ok, "wait did not follow the clock forward");
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(w.ret, ETIMEDOUT);
}
END_TEST

/* ---- signals ---- */

/*
 * Waiters interrupted by signal handlers (without SA_RESTART) keep
 * waiting: no return, no error; then one broadcast releases them all.
 */
START_TEST(test_signals_during_wait)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	bool flag = false;
	struct timed_waiter w[4];
	pthread_t t[4];
	unsigned int i, k;
	bool ok;

	install_sigusr1(false);
	for (i = 0; i < 4; i++) {
		w[i] = (struct timed_waiter){
			.m = &m, .c = &c, .flag = &flag,
			.clock = i % 2 ? CLOCK_REALTIME : CLOCK_MONOTONIC,
		};
		w[i].deadline = i % 2 ? realtime_in(6 * TEST_WAIT_NS) :
					ts_in(6 * TEST_WAIT_NS);
		ck_assert_int_eq(pthread_create(&t[i], NULL, timed_waiter_main,
						&w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		WAIT_UNTIL(ok, atomic_load(&w[i].waiting), TEST_WAIT_NS);
		ck_assert(ok);
	}
	for (k = 0; k < 50; k++) {
		for (i = 0; i < 4; i++)
			pthread_kill(t[i], SIGUSR1);
		sleep_ns(2 * NSEC_PER_MSEC);
	}
	ck_assert_int_ge(atomic_load(&sig_count), 1);
	for (i = 0; i < 4; i++)
		ck_assert_msg(!atomic_load(&w[i].done) &&
			      atomic_load(&w[i].returns) == 0,
			      "waiter %u returned %u times", i,
			      atomic_load(&w[i].returns));
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	flag = true;
	ck_assert_int_eq(tofutex_cond_broadcast(&c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	for (i = 0; i < 4; i++) {
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
		ck_assert_int_eq(w[i].ret, 0);
	}
	tfail_assert();
}
END_TEST

static atomic_int storm_stop;

/* SIGUSR1 to the process, so to any of its threads, until told to stop. */
static void *storm_main(void *arg)
{
	sigset_t set;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	while (!atomic_load(&storm_stop)) {
		kill(getpid(), SIGUSR1);
		sleep_ns(100 * NSEC_PER_USEC);
	}
	return NULL;
}

/* Producer/consumer under a storm of signals: counts still exact. */
START_TEST(test_signal_storm_producer_consumer)
{
	struct queue q = {
		.m = TOFUTEX_MUTEX_INITIALIZER,
		.not_empty = TOFUTEX_COND_INITIALIZER,
		.not_full = TOFUTEX_COND_INITIALIZER,
		.per_producer = scaled(3000, 100),
		.producers = 2,
	};
	pthread_t t[4], storm;
	unsigned int i;

	bool ok;

	install_sigusr1(_i);
	atomic_store(&storm_stop, 0);
	ck_assert_int_eq(pthread_create(&storm, NULL, storm_main, NULL), 0);
	WAIT_UNTIL(ok, atomic_load(&sig_count) >= 5, TEST_WAIT_NS);
	ck_assert(ok);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, producer_main, &q),
				 0);
	for (i = 2; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, consumer_main, &q),
				 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, 4 * TEST_WAIT_NS));
	atomic_store(&storm_stop, 1);
	ck_assert(join_within(storm, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(q.consumed, 2 * q.per_producer);
	ck_assert_uint_eq(q.sum, q.per_producer * (q.per_producer + 1));
}
END_TEST

/* ---- errors ---- */

START_TEST(test_cond_errors)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	tofutex_cond_t c;
	bool flag = false;
	struct timed_waiter w = {
		.m = &m, .c = &c, .flag = &flag, .clock = CLOCK_MONOTONIC,
	};
	pthread_t t;
	bool ok;

	ck_assert_int_eq(tofutex_cond_init(&c), 0);
	ck_assert_int_eq(tofutex_cond_init(NULL), EINVAL);
	ck_assert_int_eq(tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_cond_broadcast(&c), 0);
	ck_assert_int_eq(tofutex_cond_wait(&c, NULL), EINVAL);
	w.deadline = ts_in(4 * TEST_WAIT_NS);
	ck_assert_int_eq(pthread_create(&t, NULL, timed_waiter_main, &w), 0);
	WAIT_UNTIL(ok, atomic_load(&w.waiting), TEST_WAIT_NS);
	ck_assert(ok);
	/* A waiter inside: destroy refuses. */
	WAIT_UNTIL(ok, tofutex_cond_destroy(&c) == EBUSY, TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	flag = true;
	ck_assert_int_eq(tofutex_cond_signal(&c), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(tofutex_cond_destroy(&c), 0);
}
END_TEST

static Suite *lib_cond_suite(void)
{
	Suite *s = suite_create("lib_cond");
	TCase *tc;

	tc = tcase_create("queue");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_producer_consumer, 0,
			    sizeof(pc_shapes) / sizeof(pc_shapes[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("broadcast");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_broadcast_all_accounted, 0,
			    sizeof(bcast_counts) / sizeof(bcast_counts[0]));
	tcase_add_test(tc, test_broadcast_requeues_on_module);
	suite_add_tcase(s, tc);

	tc = tcase_create("timed");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_timed_waits);
	tcase_add_loop_test(tc, test_timed_wait_signalled, 0, 2);
	tcase_add_loop_test(tc, test_signal_after_timeouts, 0, 2);
	tcase_add_test(tc, test_realtime_deadline_follows_settime);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_signals_during_wait);
	tcase_add_loop_test(tc, test_signal_storm_producer_consumer, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_cond_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lib_cond_suite());
}
