// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, condition variables: a dynamically
 * linked program that calls glibc's pthread_cond_* names under
 * tofutex-run (LD_PRELOAD). Producer/consumer with exact counts and
 * broadcast to every waiter, with mutexes of each kind (ours, and glibc's
 * robust one); the errors (EPERM, EINVAL, ETIMEDOUT) on both clocks and
 * the clock of pthread_condattr_setclock(); the mutex held after every
 * return; destroy right after a broadcast, and destroy waiting asleep for
 * a waiter still inside; a mutex destroyed under a waiter (unlike
 * glibc's); a condition variable that is only 4-byte aligned
 * (a packed structure's member); cancellation of a waiter (its cleanup
 * handler runs with the mutex held); process-shared condition variables
 * staying glibc's.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <sys/wait.h>

#include "sleeping.h"

/* Mutexes a condition variable is used with: ours, and glibc's. */
enum { M_DEFAULT, M_ERRORCHECK, M_RECURSIVE, M_ROBUST, M_COUNT };

static void mutex_make(pthread_mutex_t *m, int k)
{
	pthread_mutexattr_t a;

	ck_assert_int_eq(pthread_mutexattr_init(&a), 0);
	if (k == M_ERRORCHECK)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (k == M_RECURSIVE)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	if (k == M_ROBUST) {
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	}
	ck_assert_int_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static void *trylock_main(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_trylock(arg);
}

/*
 * Is @m held (by the caller: the tests ask where only it can hold it)?
 * Another thread's trylock says; no Check assertion, so that worker
 * threads may ask.
 */
static bool held_by_me(pthread_mutex_t *m)
{
	void *ret = NULL;
	pthread_t t;

	if (pthread_create(&t, NULL, trylock_main, m))
		return false;
	pthread_join(t, &ret);
	return (intptr_t)ret == EBUSY;
}

START_TEST(test_preload_in_effect)
{
	Dl_info info;

	ck_assert(dladdr((void *)pthread_cond_wait, &info));
	ck_assert_msg(info.dli_fname &&
		      strstr(info.dli_fname, "libtofutex-pthread.so"),
		      "pthread_cond_wait is %s's: run under tofutex-run",
		      info.dli_fname ? info.dli_fname : "?");
}
END_TEST

/* ---- producer/consumer, exact counts ---- */

#define SLOTS 4

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	unsigned long slot[SLOTS];
	unsigned int head, count, producers_done;
	unsigned long per_producer, consumed, sum;
};

static void *producer_main(void *arg)
{
	struct queue *q = arg;
	unsigned long i;

	for (i = 1; i <= q->per_producer; i++) {
		TCHECK(pthread_mutex_lock(&q->m) == 0, "lock");
		while (q->count == SLOTS)
			TCHECK(pthread_cond_wait(&q->not_full, &q->m) == 0,
			       "wait");
		q->slot[(q->head + q->count++) % SLOTS] = i;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->m);
	}
	pthread_mutex_lock(&q->m);
	if (++q->producers_done == 2)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->m);
	return NULL;
}

static void *consumer_main(void *arg)
{
	struct queue *q = arg;
	struct timespec ts;
	int r;

	for (;;) {
		TCHECK(pthread_mutex_lock(&q->m) == 0, "lock");
		while (!q->count && q->producers_done < 2) {
			ts = realtime_in(NSEC_PER_MSEC);
			r = pthread_cond_timedwait(&q->not_empty, &q->m, &ts);
			TCHECK(r == 0 || r == ETIMEDOUT, "timedwait = %d", r);
		}
		if (!q->count) {
			pthread_mutex_unlock(&q->m);
			return NULL;
		}
		q->sum += q->slot[q->head];
		q->head = (q->head + 1) % SLOTS;
		q->count--;
		q->consumed++;
		pthread_cond_signal(&q->not_full);
		pthread_mutex_unlock(&q->m);
	}
}

START_TEST(test_producer_consumer)
{
	struct queue q = { .per_producer = scaled(5000, 500) };
	pthread_t t[4];
	int i;

	tfail_reset();
	mutex_make(&q.m, _i);
	ck_assert_int_eq(pthread_cond_init(&q.not_empty, NULL), 0);
	q.not_full = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, i < 2 ?
						producer_main : consumer_main,
						&q), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, 10 * TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(q.consumed, 2 * q.per_producer);
	ck_assert_uint_eq(q.sum, q.per_producer * (q.per_producer + 1));
	ck_assert_int_eq(pthread_cond_destroy(&q.not_empty), 0);
	ck_assert_int_eq(pthread_cond_destroy(&q.not_full), 0);
}
END_TEST

/* ---- broadcast wakes every waiter; destroy right after it ---- */

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int kind;
	bool open;
	unsigned int waiting, through;
};

static void *gate_main(void *arg)
{
	struct gate *g = arg;

	TCHECK(pthread_mutex_lock(&g->m) == 0, "lock");
	/* Read without the mutex, by the thread that counts who waits. */
	__atomic_fetch_add(&g->waiting, 1, __ATOMIC_RELEASE);
	while (!g->open)
		TCHECK(pthread_cond_wait(&g->c, &g->m) == 0, "wait");
	TCHECK(held_by_me(&g->m), "mutex not held after the wait");
	g->through++;
	TCHECK(pthread_mutex_unlock(&g->m) == 0, "unlock");
	return NULL;
}

START_TEST(test_broadcast_all)
{
	struct gate g = { .c = PTHREAD_COND_INITIALIZER, .kind = _i };
	pthread_t t[8];
	bool all;
	int i;

	tfail_reset();
	mutex_make(&g.m, _i);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, gate_main, &g), 0);
	WAIT_UNTIL(all, __atomic_load_n(&g.waiting, __ATOMIC_ACQUIRE) == 8,
		   TEST_WAIT_NS);
	ck_assert(all);
	ck_assert_int_eq(pthread_mutex_lock(&g.m), 0);
	g.open = true;
	ck_assert_int_eq(pthread_cond_broadcast(&g.c), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&g.m), 0);
	for (i = 0; i < 8; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(g.through, 8);
	ck_assert_int_eq(pthread_cond_destroy(&g.c), 0);
}
END_TEST

/* POSIX: a condition variable may be destroyed once no thread waits on
 * it, that is right after the broadcast that woke them. */
START_TEST(test_destroy_after_broadcast)
{
	struct gate g = { .c = PTHREAD_COND_INITIALIZER, .kind = M_DEFAULT };
	pthread_t t[4];
	bool all;
	int i;

	tfail_reset();
	mutex_make(&g.m, M_DEFAULT);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, gate_main, &g), 0);
	WAIT_UNTIL(all, __atomic_load_n(&g.waiting, __ATOMIC_ACQUIRE) == 4,
		   TEST_WAIT_NS);
	ck_assert(all);
	ck_assert_int_eq(pthread_mutex_lock(&g.m), 0);
	g.open = true;
	ck_assert_int_eq(pthread_cond_broadcast(&g.c), 0);
	ck_assert_int_eq(pthread_cond_destroy(&g.c), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&g.m), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();
}
END_TEST

/* ---- where glibc accepts it ---- */

struct packed_wait {
	pthread_mutex_t m;
	pthread_cond_t *c;
	int flag;
};

static void *packed_waiter(void *arg)
{
	struct packed_wait *p = arg;
	int err = 0;

	pthread_mutex_lock(&p->m);
	while (!p->flag && !err)
		err = pthread_cond_wait(p->c, &p->m);
	pthread_mutex_unlock(&p->m);
	return (void *)(intptr_t)err;
}

/* A condition variable 4 but not 8 bytes aligned works as glibc's does. */
START_TEST(test_cond_packed_4_byte_aligned)
{
	static char buf[sizeof(pthread_cond_t) + 8] __attribute__((aligned(8)));
	struct packed_wait p = { .m = PTHREAD_MUTEX_INITIALIZER,
				 .c = (pthread_cond_t *)(void *)(buf + 4) };
	struct timespec ts;
	pthread_t t;
	void *ret = NULL;

	ck_assert_uint_eq((uintptr_t)p.c % 8, 4);
	ck_assert_int_eq(pthread_cond_init(p.c, NULL), 0);
	pthread_mutex_lock(&p.m);
	ts = realtime_in(NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_timedwait(p.c, &p.m, &ts), ETIMEDOUT);
	pthread_mutex_unlock(&p.m);
	ck_assert_int_eq(pthread_create(&t, NULL, packed_waiter, &p), 0);
	sleep_ns(10 * NSEC_PER_MSEC);
	pthread_mutex_lock(&p.m);
	p.flag = 1;
	ck_assert_int_eq(pthread_cond_signal(p.c), 0);
	pthread_mutex_unlock(&p.m);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	ck_assert_int_eq(pthread_cond_broadcast(p.c), 0);
	ck_assert_int_eq(pthread_cond_destroy(p.c), 0);
}
END_TEST

/*
 * A condition variable not even 4-byte aligned (at an odd place in a
 * packed structure) is glibc's, with one of our mutexes: an untimed wait
 * is signalled as with glibc (whose futex calls on the misaligned word
 * fail, so its wait spins until the flag is seen), never EINVAL. On arm64
 * glibc's atomic accesses to it may fault (SIGBUS: the hardware does, an
 * emulator may not): then they fault as glibc's.
 */
static int cond_misaligned_calls(void *arg)
{
	struct packed_wait *p = arg;
	pthread_t t;
	void *ret = NULL;

	if (pthread_create(&t, NULL, packed_waiter, p))
		return 10;
	sleep_ns(10 * NSEC_PER_MSEC);
	pthread_mutex_lock(&p->m);
	p->flag = 1;
	if (pthread_cond_signal(p->c))
		return 11;
	pthread_mutex_unlock(&p->m);
	if (pthread_join(t, &ret) || ret)
		return 12;
	return pthread_cond_destroy(p->c) ? 13 : 0;
}

START_TEST(test_cond_misaligned_is_glibc)
{
	static char buf[sizeof(pthread_cond_t) + 8] __attribute__((aligned(8)));
	struct packed_wait p = { .m = PTHREAD_MUTEX_INITIALIZER,
				 .c = (pthread_cond_t *)(void *)(buf + 1) };
	int code;

	ck_assert_int_eq(pthread_cond_init(p.c, NULL), 0);
	code = misaligned_in_child(cond_misaligned_calls, &p);
	ck_assert_msg(code <= 0,
		      "a misaligned condition variable: step %d (10-13: waiter, signal, its wait's result, destroy)",
		      code);
}
END_TEST

struct destroy_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint32_t waiter_tid, destroyer_tid;
};

static void unlock_cleanup(void *m)
{
	pthread_mutex_unlock(m);
}

static void *forever_waiter(void *arg)
{
	struct destroy_wait *d = arg;

	pthread_mutex_lock(&d->m);
	__atomic_store_n(&d->waiter_tid, test_gettid(), __ATOMIC_RELEASE);
	pthread_cleanup_push(unlock_cleanup, &d->m);
	for (;;)
		pthread_cond_wait(&d->c, &d->m);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *destroyer(void *arg)
{
	struct destroy_wait *d = arg;

	__atomic_store_n(&d->destroyer_tid, test_gettid(), __ATOMIC_RELEASE);
	return (void *)(intptr_t)pthread_cond_destroy(&d->c);
}

/*
 * pthread_cond_destroy() with a waiter still inside waits for it as
 * glibc's does: asleep, not spinning, until the waiter leaves (here
 * cancelled).
 */
START_TEST(test_cond_destroy_waits_asleep)
{
	struct destroy_wait d = { .m = PTHREAD_MUTEX_INITIALIZER,
				  .c = PTHREAD_COND_INITIALIZER };
	pthread_t w, t;
	void *ret = NULL;

	ck_assert_int_eq(pthread_create(&w, NULL, forever_waiter, &d), 0);
	ck_assert(thread_asleep_within(&d.waiter_tid));
	ck_assert_int_eq(pthread_create(&t, NULL, destroyer, &d), 0);
	ck_assert_msg(thread_asleep_within(&d.destroyer_tid),
		      "pthread_cond_destroy() never slept while a waiter was inside");
	ck_assert_int_eq(pthread_cancel(w), 0);
	ck_assert(join_within(w, &ret, TEST_WAIT_NS));
	ck_assert(ret == PTHREAD_CANCELED);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_int_eq((int)(intptr_t)ret, 0);
}
END_TEST

/* ---- errors and clocks ---- */

START_TEST(test_errors)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000 };
	struct timespec ts;
	pthread_mutex_t m;

	mutex_make(&m, _i);
	/* Nobody waits: signal and broadcast do nothing. */
	ck_assert_int_eq(pthread_cond_signal(&c), 0);
	ck_assert_int_eq(pthread_cond_broadcast(&c), 0);
	if (_i != M_DEFAULT) {
		ts = realtime_in(NSEC_PER_MSEC);
		ck_assert_int_eq(pthread_cond_wait(&c, &m), EPERM);
		ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &ts), EPERM);
	}
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	if (_i == M_RECURSIVE)
		ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	ts = ts_in(NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID,
						&ts), EINVAL);
	ts = realtime_in(10 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	ts = ts_in(10 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts),
			 ETIMEDOUT);
	ck_assert_uint_ge(now_ns(), (uint64_t)ts.tv_sec * NSEC_PER_SEC +
				    (uint64_t)ts.tv_nsec);
	ts = realtime_in(10 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_clockwait(&c, &m, CLOCK_REALTIME, &ts),
			 ETIMEDOUT);
	/* Still held, as deep as before. */
	ck_assert(held_by_me(&m));
	if (_i == M_RECURSIVE) {
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert(held_by_me(&m));
	}
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	if (_i != M_DEFAULT)
		ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(pthread_cond_destroy(&c), 0);
}
END_TEST

/* pthread_condattr_setclock(CLOCK_MONOTONIC): timedwait's deadline is on it. */
START_TEST(test_condattr_monotonic)
{
	pthread_condattr_t a;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	struct timespec ts;

	ck_assert_int_eq(pthread_condattr_init(&a), 0);
	ck_assert_int_eq(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(pthread_cond_init(&c, &a), 0);
	pthread_condattr_destroy(&a);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ts = ts_in(20 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	ck_assert_uint_ge(now_ns(), (uint64_t)ts.tv_sec * NSEC_PER_SEC +
				    (uint64_t)ts.tv_nsec);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_cond_destroy(&c), 0);
}
END_TEST

/*
 * pthread_mutex_destroy() of one of our mutexes (_i: its type) that
 * another thread is waiting with in pthread_cond_wait() returns 0, where
 * glibc's returns EBUSY (its wait leaves the mutex counted as in use);
 * that wait, signalled, then fails with EINVAL, where glibc's returns 0
 * (tofutex-run(1), BUGS; POSIX leaves both undefined).
 */
struct destroyed_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool in;
	int ret;
};

static void *destroyed_waiter(void *arg)
{
	struct destroyed_wait *d = arg;

	if (pthread_mutex_lock(&d->m))
		return NULL;
	d->in = true;
	d->ret = pthread_cond_wait(&d->c, &d->m);
	if (!d->ret)
		pthread_mutex_unlock(&d->m);
	return NULL;
}

/* Is the waiter inside its wait (it let go of the mutex there)? */
static bool waits_inside(struct destroyed_wait *d)
{
	bool in;

	ck_assert_int_eq(pthread_mutex_lock(&d->m), 0);
	in = d->in;
	ck_assert_int_eq(pthread_mutex_unlock(&d->m), 0);
	return in;
}

START_TEST(test_mutex_destroyed_under_cond_wait)
{
	struct destroyed_wait d = { .c = PTHREAD_COND_INITIALIZER, .ret = -1 };
	pthread_t t;
	bool in;

	mutex_make(&d.m, _i);
	ck_assert_int_eq(pthread_create(&t, NULL, destroyed_waiter, &d), 0);
	WAIT_UNTIL(in, waits_inside(&d), TEST_WAIT_NS);
	ck_assert(in);
	ck_assert_int_eq(pthread_mutex_destroy(&d.m), 0);
	ck_assert_int_eq(pthread_cond_signal(&d.c), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_msg(d.ret == EINVAL, "the wait on the destroyed mutex: %d",
		      d.ret);
	ck_assert_int_eq(pthread_cond_destroy(&d.c), 0);
}
END_TEST

/* ---- cancellation ---- */

struct cancel {
	pthread_mutex_t m;
	pthread_cond_t c;
	int kind;
	bool waiting;
	bool cleanup_ran;
	bool cleanup_held;
};

static void cancel_cleanup(void *arg)
{
	struct cancel *x = arg;

	x->cleanup_ran = true;
	x->cleanup_held = held_by_me(&x->m);
	pthread_mutex_unlock(&x->m);
}

static void *cancel_main(void *arg)
{
	struct cancel *x = arg;

	pthread_mutex_lock(&x->m);
	pthread_cleanup_push(cancel_cleanup, x);
	__atomic_store_n(&x->waiting, true, __ATOMIC_RELEASE);
	for (;;)
		pthread_cond_wait(&x->c, &x->m);
	pthread_cleanup_pop(1);
	return NULL;
}

START_TEST(test_cancel_waiter)
{
	struct cancel x = { .c = PTHREAD_COND_INITIALIZER, .kind = _i };
	void *ret = NULL;
	pthread_t t;
	bool waiting;

	mutex_make(&x.m, _i);
	ck_assert_int_eq(pthread_create(&t, NULL, cancel_main, &x), 0);
	WAIT_UNTIL(waiting, __atomic_load_n(&x.waiting, __ATOMIC_ACQUIRE),
		   TEST_WAIT_NS);
	ck_assert(waiting);
	/* The waiter released the mutex to wait. */
	ck_assert_int_eq(pthread_mutex_lock(&x.m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&x.m), 0);
	sleep_ns(10 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cancel(t), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert(ret == PTHREAD_CANCELED);
	ck_assert(x.cleanup_ran);
	ck_assert_msg(x.cleanup_held, "cleanup handler ran without the mutex");
	/* The cancelled waiter left: the mutex and the condition are free. */
	ck_assert_int_eq(pthread_mutex_trylock(&x.m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&x.m), 0);
	ck_assert_int_eq(pthread_cond_destroy(&x.c), 0);
}
END_TEST

/*
 * Waiters take tokens, each posted with one pthread_cond_signal(), while
 * some of them are cancelled around the signal (cancel one, post, cancel
 * another): a signal whose wake-up a cancelled waiter took (it was still
 * queued when the signal came) is passed on, so every token is taken
 * while an uncancelled waiter waits, as with glibc.
 */
#define TOKEN_WAITERS	8
#define TOKEN_CANCELLED	3

struct tokens {
	pthread_mutex_t m;
	pthread_cond_t c;
	int tokens, taken, asleep;
};

static void token_cancelled(void *arg)
{
	pthread_mutex_unlock(&((struct tokens *)arg)->m);
}

static void *token_waiter(void *arg)
{
	struct tokens *k = arg;

	pthread_mutex_lock(&k->m);
	k->asleep++;
	pthread_cleanup_push(token_cancelled, k);
	while (!k->tokens)
		pthread_cond_wait(&k->c, &k->m);
	k->tokens--;
	k->taken++;
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(&k->m);
	return NULL;
}

static void token_post(struct tokens *k)
{
	pthread_mutex_lock(&k->m);
	k->tokens++;
	pthread_mutex_unlock(&k->m);
	pthread_cond_signal(&k->c);
}

/* One round: true when every token was taken within TEST_WAIT_NS. */
static bool token_round(unsigned int round)
{
	struct tokens k = { .m = PTHREAD_MUTEX_INITIALIZER,
			    .c = PTHREAD_COND_INITIALIZER };
	pthread_t t[TOKEN_WAITERS];
	bool all, started;
	int i, posted = 0;

	for (i = 0; i < TOKEN_WAITERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, token_waiter, &k), 0);
	WAIT_UNTIL(started, (pthread_mutex_lock(&k.m), i = k.asleep,
			     pthread_mutex_unlock(&k.m), i == TOKEN_WAITERS),
		   TEST_WAIT_NS);
	ck_assert(started);
	pthread_cancel(t[0]);
	token_post(&k);
	posted++;
	pthread_cancel(t[1]);
	pthread_cancel(t[2]);
	/* The rest, with the round's own pauses between. */
	while (posted < TOKEN_WAITERS - TOKEN_CANCELLED) {
		if (round & (1u << (posted % 8)))
			sleep_ns(20 * NSEC_PER_USEC);
		token_post(&k);
		posted++;
	}
	WAIT_UNTIL(all, (pthread_mutex_lock(&k.m), i = k.taken,
			 pthread_mutex_unlock(&k.m),
			 i == TOKEN_WAITERS - TOKEN_CANCELLED), TEST_WAIT_NS);
	for (i = 0; i < TOKEN_WAITERS; i++)
		pthread_cancel(t[i]);
	for (i = 0; i < TOKEN_WAITERS; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	return all;
}

START_TEST(test_cancel_around_signal_passes_it_on)
{
	unsigned long rounds = scaled(200, 40), r;

	for (r = 0; r < rounds; r++)
		ck_assert_msg(token_round((unsigned int)r),
			      "round %lu: a signal died with the cancelled waiters: a token stays untaken while a waiter sleeps",
			      r);
}
END_TEST

/*
 * A signal handler that leaves a condition wait with siglongjmp() (a
 * timeout made with a signal): the wait is cleaned up as glibc's is, the
 * mutex held again and the waiter no longer counted, so the condition
 * variable can be destroyed; a later cancellation of the thread unwinds
 * cleanly. _i: the mutex kind.
 */
static sigjmp_buf jump_env;

static void jump_out(int sig)
{
	(void)sig;
	siglongjmp(jump_env, 1);
}

struct jumper {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint32_t tid;
	int unlocked;
};

static void *jumper_main(void *arg)
{
	struct jumper *j = arg;
	int type;

	pthread_mutex_lock(&j->m);
	if (!sigsetjmp(jump_env, 1)) {
		__atomic_store_n(&j->tid, test_gettid(), __ATOMIC_RELEASE);
		pthread_cond_wait(&j->c, &j->m);
	}
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
	__atomic_store_n(&j->unlocked, pthread_mutex_unlock(&j->m),
			 __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

static void *destroyer_main(void *arg)
{
	return (void *)(intptr_t)pthread_cond_destroy(arg);
}

START_TEST(test_cond_wait_left_by_siglongjmp)
{
	struct jumper j = { .c = PTHREAD_COND_INITIALIZER, .unlocked = -1 };
	struct sigaction sa = { .sa_handler = jump_out }, old;
	void *ret = NULL;
	pthread_t t, d;
	bool done;

	mutex_make(&j.m, _i);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, jumper_main, &j), 0);
	ck_assert(thread_asleep_within(&j.tid));
	ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
	WAIT_UNTIL(done, __atomic_load_n(&j.unlocked, __ATOMIC_ACQUIRE) != -1,
		   TEST_WAIT_NS);
	ck_assert_msg(done && j.unlocked == 0,
		      "the mutex was not held again after the jump (unlock: %d)",
		      j.unlocked);
	ck_assert_int_eq(pthread_create(&d, NULL, destroyer_main, &j.c), 0);
	ck_assert_msg(join_within(d, &ret, TEST_WAIT_NS),
		      "pthread_cond_destroy() waits for the waiter that jumped out");
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	ck_assert_int_eq(pthread_cancel(t), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert(ret == PTHREAD_CANCELED);
	sigaction(SIGUSR1, &old, NULL);
}
END_TEST

/* ---- process-shared condition variables stay glibc's ---- */

START_TEST(test_pshared_cond_is_glibc)
{
	struct shared {
		pthread_mutex_t m;
		pthread_cond_t c;
		int flag;
	} *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int status;
	pid_t pid;

	ck_assert(s != MAP_FAILED);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_mutex_init(&s->m, &ma), 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_cond_init(&s->c, &ca), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		pthread_mutex_lock(&s->m);
		while (!s->flag)
			pthread_cond_wait(&s->c, &s->m);
		pthread_mutex_unlock(&s->m);
		_exit(0);
	}
	sleep_ns(20 * NSEC_PER_MSEC);
	pthread_mutex_lock(&s->m);
	s->flag = 1;
	ck_assert_int_eq(pthread_cond_broadcast(&s->c), 0);
	pthread_mutex_unlock(&s->m);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	munmap(s, sizeof(*s));
}
END_TEST

/*
 * Timed waits that nobody signals, while another thread sends SIGUSR1 to
 * the waiter every 30 us (a profiler's rate and more; _i: with and without
 * SA_RESTART): each ends with ETIMEDOUT, as glibc's does, never with 0
 * for a signal that came at the deadline.
 */
static atomic_bool storm_stop;

static void storm_handler(int sig)
{
	(void)sig;
}

static void *storm_main(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!atomic_load(&storm_stop)) {
		pthread_kill(target, SIGUSR1);
		usleep(30);
	}
	return NULL;
}

START_TEST(test_timedwait_under_signals_times_out)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct sigaction sa = { .sa_handler = storm_handler,
				.sa_flags = _i ? SA_RESTART : 0 };
	pthread_t self = pthread_self(), t;
	struct timespec ts;
	int i, r, zero = 0;

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&storm_stop, false);
	ck_assert_int_eq(pthread_create(&t, NULL, storm_main, &self), 0);
	for (i = 0; i < 200; i++) {
		ts = realtime_in(NSEC_PER_MSEC);
		ck_assert_int_eq(pthread_mutex_lock(&m), 0);
		r = pthread_cond_timedwait(&c, &m, &ts);
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_msg(r == 0 || r == ETIMEDOUT, "timedwait: %d", r);
		zero += r == 0;
	}
	atomic_store(&storm_stop, true);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_msg(zero == 0,
		      "%d of 200 timed waits nobody signalled returned 0", zero);
}
END_TEST

/*
 * tofutex-run(1), BUGS: a wait that another copy of glibc (a namespace of
 * dlmopen(LM_ID_NEWLM)'s) begins on one of our condition variables is
 * not woken by our signal or broadcast, nor is our wait by its signal;
 * each ends at its deadline. The relocks of our mutex by glibc's code
 * are safe. _i: 0 glibc's wait, our signal; 1 glibc's wait, our
 * broadcast; 2 our wait, glibc's signal.
 */
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *,
				 const struct timespec *);

struct other_glibc_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int (*lock)(pthread_mutex_t *);
	int (*unlock)(pthread_mutex_t *);
	cond_timedwait_fn timedwait;
	uint32_t tid;
	int err;
};

static void *other_glibc_waiter(void *arg)
{
	struct other_glibc_wait *w = arg;
	struct timespec ts = realtime_in(500 * NSEC_PER_MSEC);

	w->lock(&w->m);
	__atomic_store_n(&w->tid, test_gettid(), __ATOMIC_RELEASE);
	w->err = w->timedwait(&w->c, &w->m, &ts);
	w->unlock(&w->m);
	return NULL;
}

START_TEST(test_cond_wait_of_another_glibc_ends_at_its_deadline)
{
	struct other_glibc_wait w = { .m = PTHREAD_MUTEX_INITIALIZER,
				      .c = PTHREAD_COND_INITIALIZER,
				      .err = -1 };
	void *h = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW);
	int (*lock)(pthread_mutex_t *), (*unlock)(pthread_mutex_t *);
	int (*wake)(pthread_cond_t *);
	pthread_t t;

	ck_assert_msg(h, "dlmopen: %s", dlerror());
	lock = (int (*)(pthread_mutex_t *))dlsym(h, "pthread_mutex_lock");
	unlock = (int (*)(pthread_mutex_t *))dlsym(h, "pthread_mutex_unlock");
	ck_assert(lock && unlock);
	if (_i < 2) {
		/* Their thread waits; this one wakes with ours. */
		w.lock = lock;
		w.unlock = unlock;
		w.timedwait = (cond_timedwait_fn)dlsym(h, "pthread_cond_timedwait");
		ck_assert(w.timedwait);
		lock = pthread_mutex_lock;
		unlock = pthread_mutex_unlock;
		wake = _i ? pthread_cond_broadcast : pthread_cond_signal;
	} else {
		w.lock = pthread_mutex_lock;
		w.unlock = pthread_mutex_unlock;
		w.timedwait = pthread_cond_timedwait;
		wake = (int (*)(pthread_cond_t *))dlsym(h, "pthread_cond_signal");
		ck_assert(wake);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, other_glibc_waiter, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	ck_assert_int_eq(lock(&w.m), 0);
	ck_assert_int_eq(wake(&w.c), 0);
	ck_assert_int_eq(unlock(&w.m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(w.err, ETIMEDOUT);
}
END_TEST

static Suite *pthread_cond_suite(void)
{
	Suite *s = suite_create("pthread_cond under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("preload");
	tcase_add_test(tc, test_preload_in_effect);
	suite_add_tcase(s, tc);

	tc = tcase_create("wake");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_producer_consumer, 0, M_COUNT);
	tcase_add_loop_test(tc, test_broadcast_all, 0, M_COUNT);
	tcase_add_test(tc, test_destroy_after_broadcast);
	suite_add_tcase(s, tc);

	tc = tcase_create("as glibc");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_cond_packed_4_byte_aligned);
	tcase_add_test(tc, test_cond_misaligned_is_glibc);
	tcase_add_test(tc, test_cond_destroy_waits_asleep);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_errors, 0, M_COUNT);
	tcase_add_test(tc, test_condattr_monotonic);
	tcase_add_loop_test(tc, test_timedwait_under_signals_times_out, 0, 2);
	tcase_add_loop_test(tc, test_mutex_destroyed_under_cond_wait, 0,
			    M_ROBUST);
	suite_add_tcase(s, tc);

	tc = tcase_create("cancel");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_cancel_waiter, 0, M_COUNT);
	tcase_add_test(tc, test_cancel_around_signal_passes_it_on);
	tcase_add_loop_test(tc, test_cond_wait_left_by_siglongjmp, 0, M_ROBUST);
	suite_add_tcase(s, tc);

	tc = tcase_create("glibc");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_pshared_cond_is_glibc);
	tcase_add_loop_test(tc, test_cond_wait_of_another_glibc_ends_at_its_deadline,
			    0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pthread_cond_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
