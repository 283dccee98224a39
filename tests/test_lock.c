// SPDX-License-Identifier: GPL-2.0
/*
 * TO locks through libtofutex: the fast path
 * stays in user space, mutual exclusion, errors, timedlock, signals, owner
 * death, hand-off under starvation, many locks without leaked states.
 *
 * The raw ABI (bad input, EINTR, fork, the RFC's sample code) is tested in
 * test_lock_abi.c.
 */
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "common.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

static uint32_t mword(tofutex_mutex_t *m)
{
	return word_load(&m->word);
}

static void assert_no_live_states(void)
{
	struct tofutex_stats p = stats_get(TOFUTEX_STATS_PROCESS);
	struct tofutex_stats g = stats_get(TOFUTEX_STATS_GLOBAL);

	ck_assert_msg(p.live_states == 0, "process live_states = %llu, want 0",
		      (unsigned long long)p.live_states);
	ck_assert_msg(g.live_states == 0, "global live_states = %llu, want 0",
		      (unsigned long long)g.live_states);
}

/*
 * A thread that takes a mutex, reports its TID, and holds the mutex
 * (asleep, off the CPU) until told to release it or until @hold_ns passed.
 */
struct holder {
	tofutex_mutex_t *m;
	uint64_t hold_ns;	/* 0: until release is set */
	atomic_uint tid;	/* nonzero once the mutex is held */
	atomic_bool release;
	atomic_bool released;
	pthread_t thread;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	uint64_t end = h->hold_ns ? now_ns() + h->hold_ns : UINT64_MAX;
	int r;

	r = tofutex_mutex_lock(h->m);
	if (r) {
		TFAIL("holder: lock = %d (%s)", r, strerror(r));
		return NULL;
	}
	TCHECK((mword(h->m) & TID_MASK) == test_gettid(),
	       "holder: word %#x does not name the holder", mword(h->m));
	atomic_store(&h->tid, test_gettid());
	while (!atomic_load(&h->release) && now_ns() < end)
		sleep_ns(200 * NSEC_PER_USEC);
	r = tofutex_mutex_unlock(h->m);
	TCHECK(r == 0, "holder: unlock = %d (%s)", r, strerror(r));
	atomic_store(&h->released, true);
	return NULL;
}

/* Start a holder and wait until it owns @m. */
static void holder_start(struct holder *h, tofutex_mutex_t *m,
			 uint64_t hold_ns)
{
	bool ok;

	memset(h, 0, sizeof(*h));
	h->m = m;
	h->hold_ns = hold_ns;
	ck_assert_int_eq(pthread_create(&h->thread, NULL, holder_main, h), 0);
	WAIT_UNTIL(ok, atomic_load(&h->tid) != 0 || tfailed(), TEST_WAIT_NS);
	tfail_assert();
	ck_assert_msg(ok, "holder did not take the mutex");
}

static void holder_stop(struct holder *h)
{
	atomic_store(&h->release, true);
	ck_assert_msg(join_within(h->thread, NULL, TEST_WAIT_NS),
		      "holder did not finish");
	tfail_assert();
}

/* A thread blocked in tofutex_mutex_lock() until the mutex is free. */
struct locker {
	tofutex_mutex_t *m;
	atomic_bool entering;
	atomic_bool done;
	int ret;
	uint32_t tid;
	uint32_t word;		/* the word right after the lock returned */
	pthread_t thread;
};

static void *locker_main(void *arg)
{
	struct locker *l = arg;

	l->tid = test_gettid();
	atomic_store(&l->entering, true);
	l->ret = tofutex_mutex_lock(l->m);
	l->word = mword(l->m);
	if (l->ret == 0) {
		int r = tofutex_mutex_unlock(l->m);

		TCHECK(r == 0, "locker: unlock = %d (%s)", r, strerror(r));
	}
	atomic_store(&l->done, true);
	return NULL;
}

/* Start a locker and wait until it sleeps in the kernel on @m (WAITERS). */
static void locker_start_asleep(struct locker *l, tofutex_mutex_t *m)
{
	bool ok;

	memset(l, 0, sizeof(*l));
	l->m = m;
	ck_assert_int_eq(pthread_create(&l->thread, NULL, locker_main, l), 0);
	WAIT_UNTIL(ok, atomic_load(&l->entering) && (mword(m) & WAITERS),
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "waiter never went to sleep: word 0x%08x",
		      mword(m));
	ck_assert_msg(!atomic_load(&l->done),
		      "lock returned %d while the mutex was held", l->ret);
}

static void locker_join(struct locker *l)
{
	ck_assert_msg(join_within(l->thread, NULL, TEST_WAIT_NS),
		      "waiter did not get the released mutex");
	tfail_assert();
	ck_assert_msg(l->ret == 0, "waiter: lock = %d (%s)", l->ret,
		      strerror(l->ret));
	ck_assert_msg((l->word & TID_MASK) == l->tid,
		      "waiter got the lock but the word is 0x%08x, tid %u",
		      l->word, l->tid);
}

/* ---- The uncontended path never enters the kernel ---- */

struct own_mutex_arg {
	unsigned long iters;
};

static void *own_mutex_main(void *arg)
{
	struct own_mutex_arg *a = arg;
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();
	unsigned long i;
	int r;

	for (i = 0; i < a->iters; i++) {
		r = tofutex_mutex_lock(&m);
		if (r || mword(&m) != tid) {
			TFAIL("lock = %d, word 0x%08x, tid %u", r, mword(&m),
			      tid);
			return NULL;
		}
		r = tofutex_mutex_unlock(&m);
		if (r || mword(&m) != 0) {
			TFAIL("unlock = %d, word 0x%08x", r, mword(&m));
			return NULL;
		}
	}
	return NULL;
}

START_TEST(test_uncontended_stays_in_user_space)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct own_mutex_arg arg = { .iters = scaled(20000, 100) };
	unsigned long i, n = scaled(20000, 100);
	uint32_t tid = test_gettid();
	struct tofutex_stats before, after;
	struct tofutex_lock lk;
	struct timespec far;
	pthread_t t[4];
	int fd, r;

	fd = tofutex_fd();
	ck_assert_msg(fd >= 0, "tofutex_fd() = %d", fd);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	far = ts_in(3600 * NSEC_PER_SEC);
	for (i = 0; i < n; i++) {
		r = tofutex_mutex_lock(&m);
		if (r || mword(&m) != tid)
			ck_abort_msg("lock = %d, word 0x%08x, tid %u", r,
				     mword(&m), tid);
		r = tofutex_mutex_unlock(&m);
		if (r || mword(&m))
			ck_abort_msg("unlock = %d, word 0x%08x", r, mword(&m));
		r = tofutex_mutex_trylock(&m);
		if (r || mword(&m) != tid)
			ck_abort_msg("trylock = %d, word 0x%08x", r, mword(&m));
		r = tofutex_mutex_unlock(&m);
		if (r)
			ck_abort_msg("unlock after trylock = %d", r);
		r = tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &far);
		if (r || mword(&m) != tid)
			ck_abort_msg("timedlock = %d, word 0x%08x", r,
				     mword(&m));
		r = tofutex_mutex_unlock(&m);
		if (r)
			ck_abort_msg("unlock after timedlock = %d", r);
	}
	/* Fresh threads: each caches its own TID on first use. */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, own_mutex_main,
						&arg), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();

	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_msg(after.lock_calls == before.lock_calls,
		      "uncontended path made %llu LOCK ioctls",
		      (unsigned long long)(after.lock_calls -
					   before.lock_calls));
	ck_assert_msg(after.unlock_calls == before.unlock_calls,
		      "uncontended path made %llu UNLOCK ioctls",
		      (unsigned long long)(after.unlock_calls -
					   before.unlock_calls));

	/* The counters do count: one LOCK ioctl on a free word is seen. */
	memset(&lk, 0, sizeof(lk));
	lk.uaddr = (uintptr_t)&m.word;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK, &lk), 0);
	ck_assert_uint_eq(mword(&m), tid);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.lock_calls, before.lock_calls + 1);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(mword(&m), 0);
}
END_TEST

/* ---- Mutual exclusion ---- */

#define MX_LOCKS 4

struct mx {
	tofutex_mutex_t lock[MX_LOCKS];
	unsigned long counter[MX_LOCKS];	/* plain, under lock[i] */
	atomic_int inside[MX_LOCKS];
	unsigned long iters;
	uint64_t sleep_ns;	/* sleep inside the critical section */
	unsigned int nthreads;
	bool multi;		/* each thread takes several locks */
};

struct mx_thread {
	struct mx *s;
	unsigned int idx;
	pthread_t thread;
};

/* Which locks thread @idx takes in the multi-lock variant, as a mask. */
static unsigned int mx_mask(const struct mx *s, unsigned int idx)
{
	if (!s->multi)
		return 1;
	if (idx % 3 == 0)
		return (1U << MX_LOCKS) - 1;
	return (1U << (idx % MX_LOCKS)) | (1U << ((idx + 1) % MX_LOCKS));
}

static bool mx_enter(struct mx *s, unsigned int i, uint32_t tid)
{
	int r = tofutex_mutex_lock(&s->lock[i]);

	if (r) {
		TFAIL("lock[%u] = %d (%s)", i, r, strerror(r));
		return false;
	}
	if (atomic_fetch_add(&s->inside[i], 1) != 0) {
		TFAIL("two threads inside critical section %u", i);
		return false;
	}
	if ((mword(&s->lock[i]) & TID_MASK) != tid) {
		TFAIL("lock[%u] held but word 0x%08x, tid %u", i,
		      mword(&s->lock[i]), tid);
		return false;
	}
	return true;
}

static bool mx_leave(struct mx *s, unsigned int i)
{
	int r;

	atomic_fetch_sub(&s->inside[i], 1);
	r = tofutex_mutex_unlock(&s->lock[i]);
	if (r) {
		TFAIL("unlock[%u] = %d (%s)", i, r, strerror(r));
		return false;
	}
	return true;
}

static void *mx_main(void *arg)
{
	struct mx_thread *t = arg;
	struct mx *s = t->s;
	unsigned int mask = mx_mask(s, t->idx);
	uint32_t tid = test_gettid();
	unsigned long k;
	int i;

	for (k = 0; k < s->iters; k++) {
		/* Fixed order: ascending index. */
		for (i = 0; i < MX_LOCKS; i++)
			if ((mask & (1U << i)) && !mx_enter(s, i, tid))
				return NULL;
		for (i = 0; i < MX_LOCKS; i++) {
			volatile unsigned long *c = &s->counter[i];
			unsigned long v;

			if (!(mask & (1U << i)))
				continue;
			/* A read-modify-write a second thread would tear. */
			v = *c;
			if (s->sleep_ns)
				sleep_ns(s->sleep_ns);
			else
				busy_work(20);
			*c = v + 1;
		}
		for (i = MX_LOCKS - 1; i >= 0; i--)
			if ((mask & (1U << i)) && !mx_leave(s, i))
				return NULL;
	}
	return NULL;
}

static void mx_run(unsigned int nthreads, unsigned long total, uint64_t sleep,
		   bool multi)
{
	struct mx_thread t[16];
	struct tofutex_stats before, after;
	unsigned long want[MX_LOCKS] = { 0 };
	struct mx *s;
	unsigned int i, j;

	ck_assert_uint_le(nthreads, 16);
	s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->nthreads = nthreads;
	s->iters = total / nthreads ? total / nthreads : 1;
	s->sleep_ns = sleep;
	s->multi = multi;
	before = stats_get(TOFUTEX_STATS_PROCESS);
	for (i = 0; i < nthreads; i++) {
		t[i].s = s;
		t[i].idx = i;
		for (j = 0; j < MX_LOCKS; j++)
			if (mx_mask(s, i) & (1U << j))
				want[j] += s->iters;
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL, mx_main,
						&t[i]), 0);
	}
	for (i = 0; i < nthreads; i++)
		ck_assert_msg(join_within(t[i].thread, NULL,
					  TEST_TIMEOUT_LONG * NSEC_PER_SEC),
			      "thread %u did not finish", i);
	tfail_assert();
	for (j = 0; j < MX_LOCKS; j++) {
		ck_assert_msg(s->counter[j] == want[j],
			      "counter[%u] = %lu, want %lu (%u threads)", j,
			      s->counter[j], want[j], nthreads);
		ck_assert_msg(mword(&s->lock[j]) == 0,
			      "lock[%u] word 0x%08x after the run", j,
			      mword(&s->lock[j]));
	}
	after = stats_get(TOFUTEX_STATS_PROCESS);
	if (sleep) {
		/* An owner asleep in its critical section makes waiters sleep. */
		ck_assert_msg(after.sleeps > before.sleeps,
			      "no waiter slept (%u threads, owner sleeping)",
			      nthreads);
	}
	assert_no_live_states();
	free(s);
}

/* _i = 0..3: 2, 4, 8, 16 threads. */
START_TEST(test_mutual_exclusion)
{
	mx_run(2U << _i, scaled(40000, 200), 0, false);
}
END_TEST

START_TEST(test_mutual_exclusion_sleeping)
{
	mx_run(2U << _i, scaled(1500, 40), 50 * NSEC_PER_USEC, false);
}
END_TEST

START_TEST(test_mutual_exclusion_multi_lock)
{
	mx_run(8, scaled(20000, 100), 0, true);
	mx_run(8, scaled(800, 40), 50 * NSEC_PER_USEC, true);
}
END_TEST

/* ---- EDEADLK and EPERM ---- */

START_TEST(test_relock_edeadlk)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();
	struct timespec ts = ts_in(TEST_WAIT_NS);

	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_lock(&m), EDEADLK);
	ck_assert_uint_eq(mword(&m), tid);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), EDEADLK);
	ck_assert_uint_eq(mword(&m), tid);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(mword(&m), 0);
	/* Still usable. */
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
}
END_TEST

START_TEST(test_unlock_free_eperm)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;

	ck_assert_int_eq(tofutex_mutex_unlock(&m), EPERM);
	ck_assert_uint_eq(mword(&m), 0);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), EPERM);
	ck_assert_uint_eq(mword(&m), 0);
}
END_TEST

START_TEST(test_unlock_non_owner_eperm)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct tofutex_stats before, after;
	struct holder h;
	struct locker l;
	uint32_t w;

	holder_start(&h, &m, 0);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	w = mword(&m);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), EPERM);
	ck_assert_uint_eq(mword(&m), w);
	ck_assert_int_eq(tofutex_mutex_trylock(&m), EBUSY);
	ck_assert_uint_eq(mword(&m), w);

	/* With a waiter asleep, WAITERS is set: still EPERM, nobody woken. */
	locker_start_asleep(&l, &m);
	w = mword(&m);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), EPERM);
	ck_assert_uint_eq(mword(&m), w);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_msg(after.unlock_calls == before.unlock_calls,
		      "unlock by a non-owner entered the kernel");
	ck_assert_msg(!atomic_load(&l.done),
		      "unlock by a non-owner released the waiter");

	holder_stop(&h);
	locker_join(&l);
	ck_assert_uint_eq(mword(&m), 0);
}
END_TEST

/* ---- timedlock ---- */

START_TEST(test_timedlock_timeout)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct tofutex_stats before, after;
	struct timespec ts;
	struct holder h;
	struct locker l;
	int i;

	holder_start(&h, &m, 0);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	ts = ts_in(50 * NSEC_PER_MSEC);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	ck_assert_uint_eq(mword(&m) & TID_MASK, atomic_load(&h.tid));
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.timeouts, before.timeouts + 1);
	/* A timed-out waiter leaves no state behind. */
	assert_no_live_states();

	/*
	 * Timing out behind a waiter without a deadline must not take that
	 * waiter's wake-up with it.
	 */
	locker_start_asleep(&l, &m);
	for (i = 0; i < 3; i++) {
		ts = ts_in(20 * NSEC_PER_MSEC);
		ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
		ck_assert_uint_eq(mword(&m) & TID_MASK, atomic_load(&h.tid));
	}
	ck_assert(!atomic_load(&l.done));
	holder_stop(&h);
	locker_join(&l);

	ck_assert_uint_eq(mword(&m), 0);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	assert_no_live_states();
}
END_TEST

START_TEST(test_timedlock_released_in_time)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();
	struct timespec ts;
	struct holder h;

	/* The holder lets go after 50 ms; the deadline is far beyond. */
	holder_start(&h, &m, 50 * NSEC_PER_MSEC);
	ts = ts_in(TEST_WAIT_NS);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), 0);
	ck_assert_uint_eq(mword(&m) & TID_MASK, tid);
	ck_assert_msg(join_within(h.thread, NULL, TEST_WAIT_NS),
		      "holder did not finish");
	tfail_assert();
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(mword(&m), 0);
}
END_TEST

START_TEST(test_timedlock_past_deadline)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();
	struct tofutex_stats before, after;
	struct timespec past = ts_from_ns(now_ns() - NSEC_PER_SEC);
	struct timespec zero = { 0, 0 };
	struct timespec bad = ts_in(TEST_WAIT_NS);
	struct holder h;

	holder_start(&h, &m, 0);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &zero), ETIMEDOUT);
	ck_assert_uint_eq(mword(&m) & TID_MASK, atomic_load(&h.tid));
	after = stats_get(TOFUTEX_STATS_PROCESS);
	/* "At once": a past deadline never puts the caller to sleep. */
	ck_assert_msg(after.sleeps == before.sleeps,
		      "a past deadline slept %llu times",
		      (unsigned long long)(after.sleeps - before.sleeps));

	/* An invalid timespec, as pthread_mutex_timedlock(): EINVAL. */
	bad.tv_nsec = (long)NSEC_PER_SEC;
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
	bad.tv_nsec = -1;
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
	ck_assert_uint_eq(mword(&m) & TID_MASK, atomic_load(&h.tid));
	holder_stop(&h);

	/* Free: a past deadline still takes it. */
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &past), 0);
	ck_assert_uint_eq(mword(&m), tid);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_int_eq(tofutex_mutex_clocklock(&m, CLOCK_MONOTONIC, &zero), 0);
	ck_assert_uint_eq(mword(&m), tid);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	assert_no_live_states();
}
END_TEST

/* ---- Signals ---- */

/*
 * _i = 0: handler without SA_RESTART, 1: with. A waiter asleep in
 * tofutex_mutex_lock() is signalled three times while the mutex is held;
 * each time the handler runs and the waiter goes back to waiting (the
 * library retries EINTR); it gets the mutex when it is released.
 */
START_TEST(test_signal_blocked_waiter)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct tofutex_stats base, st;
	struct locker l;
	bool ok;
	int k;

	install_sigusr1(_i);
	ck_assert_int_eq(tofutex_mutex_lock(&m), 0);
	base = stats_get(TOFUTEX_STATS_PROCESS);
	locker_start_asleep(&l, &m);
	for (k = 1; k <= 3; k++) {
		/* Each signal hits the waiter asleep again. */
		WAIT_UNTIL(ok, (st = stats_get(TOFUTEX_STATS_PROCESS),
				st.sleeps >= base.sleeps + (uint64_t)k),
			   TEST_WAIT_NS);
		ck_assert_msg(ok, "waiter did not sleep again after signal %d",
			      k - 1);
		ck_assert_int_eq(pthread_kill(l.thread, SIGUSR1), 0);
		WAIT_UNTIL(ok, atomic_load(&sig_count) >= k, TEST_WAIT_NS);
		ck_assert_msg(ok, "signal handler did not run (signal %d)", k);
	}
	/* Give a wrongly returning lock call the chance to show itself. */
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_msg(!atomic_load(&l.done),
		      "lock returned %d while the mutex was held", l.ret);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	locker_join(&l);
	ck_assert_int_eq(atomic_load(&sig_count), 3);
	ck_assert_uint_eq(mword(&m), 0);
	assert_no_live_states();
}
END_TEST

#define STORM_WORKERS 4

struct storm {
	tofutex_mutex_t m;
	unsigned long counter;
	unsigned long iters;
	atomic_int finished;
	pthread_t worker[STORM_WORKERS];
};

struct storm_worker {
	struct storm *s;
	unsigned int idx;
};

static void *storm_worker_main(void *arg)
{
	struct storm_worker *w = arg;
	struct storm *s = w->s;
	unsigned long k;
	int r;

	for (k = 0; k < s->iters; k++) {
		volatile unsigned long *c = &s->counter;
		unsigned long v;

		r = tofutex_mutex_lock(&s->m);
		if (r) {
			TFAIL("worker %u: lock = %d (%s)", w->idx, r,
			      strerror(r));
			break;
		}
		v = *c;
		/* Half the workers sometimes sleep holding it: waiters sleep. */
		if (w->idx % 2 == 0 && k % 8 == 0)
			sleep_ns(500 * NSEC_PER_USEC);
		else
			busy_work(50);
		*c = v + 1;
		r = tofutex_mutex_unlock(&s->m);
		if (r) {
			TFAIL("worker %u: unlock = %d (%s)", w->idx, r,
			      strerror(r));
			break;
		}
	}
	atomic_fetch_add(&s->finished, 1);
	return NULL;
}

/*
 * _i = 0 without SA_RESTART, 1 with: contending threads are signalled
 * over and over, whether spinning, asleep, being woken or being handed
 * the lock. Every lock call succeeds and the count stays exact.
 */
START_TEST(test_signal_storm)
{
	struct storm_worker w[STORM_WORKERS];
	unsigned int seed = 1, i;
	struct storm *s;

	install_sigusr1(_i);
	s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->iters = scaled(3000, 50);
	for (i = 0; i < STORM_WORKERS; i++) {
		w[i].s = s;
		w[i].idx = i;
		ck_assert_int_eq(pthread_create(&s->worker[i], NULL,
						storm_worker_main, &w[i]), 0);
	}
	/* Threads stay joinable, so pthread_kill() on a finished one is safe. */
	while (atomic_load(&s->finished) < STORM_WORKERS) {
		pthread_kill(s->worker[rand_r(&seed) % STORM_WORKERS],
			     SIGUSR1);
		sleep_ns(200 * NSEC_PER_USEC);
	}
	for (i = 0; i < STORM_WORKERS; i++)
		ck_assert(join_within(s->worker[i], NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(s->counter, s->iters * STORM_WORKERS);
	ck_assert_uint_eq(mword(&s->m), 0);
	ck_assert_int_gt(atomic_load(&sig_count), 0);
	assert_no_live_states();
	free(s);
}
END_TEST

/* ---- Owner death ---- */

struct death {
	tofutex_mutex_t m;
	bool spinning;		/* owner busy-loops instead of sleeping */
	struct tofutex_stats base;	/* statistics before the owner started */
	atomic_uint owner_tid;
	atomic_bool waiter_entering;
	/* the waiter's results */
	uint32_t tid;
	int ret;
	uint32_t word;
	uint32_t status;
	int consistent_ret;
	uint32_t word_consistent;
	int unlock_ret;
	uint32_t word_unlocked;
};

static void *death_owner_main(void *arg)
{
	struct death *d = arg;
	struct tofutex_stats st;
	uint64_t end;
	bool ok;
	int r;

	r = tofutex_mutex_lock(&d->m);
	if (r) {
		TFAIL("owner: lock = %d", r);
		return NULL;
	}
	atomic_store(&d->owner_tid, test_gettid());
	if (!d->spinning) {
		/* Asleep in nanosleep until the waiter sleeps too, then die. */
		WAIT_UNTIL(ok, atomic_load(&d->waiter_entering) &&
			       (mword(&d->m) & WAITERS), TEST_WAIT_NS);
		TCHECK(ok, "waiter never went to sleep: word 0x%08x",
		       mword(&d->m));
		sleep_ns(10 * NSEC_PER_MSEC);
		pthread_exit(NULL);
	}
	/* On the CPU until the waiter spins on us, then die at once. */
	end = now_ns() + TEST_WAIT_NS;
	do {
		busy_work(100);
		if (tofutex_stats(TOFUTEX_STATS_PROCESS, &st)) {
			TFAIL("owner: tofutex_stats failed");
			break;
		}
	} while (st.spins == d->base.spins && now_ns() < end);
	TCHECK(st.spins > d->base.spins,
	       "the waiter never spun on the running owner "
	       "(in 20 s: %llu LOCK calls, %llu sleeps, 0 spins)",
	       (unsigned long long)(st.lock_calls - d->base.lock_calls),
	       (unsigned long long)(st.sleeps - d->base.sleeps));
	syscall(SYS_exit, 0);
	return NULL;
}

static void *death_waiter_main(void *arg)
{
	struct death *d = arg;

	d->tid = test_gettid();
	atomic_store(&d->waiter_entering, true);
	d->ret = tofutex_mutex_lock(&d->m);
	d->word = mword(&d->m);
	d->status = tofutex_mutex_last_status();
	if (d->ret != EOWNERDEAD)
		return NULL;
	d->consistent_ret = tofutex_mutex_consistent(&d->m);
	d->word_consistent = mword(&d->m);
	d->unlock_ret = tofutex_mutex_unlock(&d->m);
	d->word_unlocked = mword(&d->m);
	return NULL;
}

static void death_check_waiter(struct death *d)
{
	ck_assert_msg(d->ret == EOWNERDEAD, "lock = %d (%s), want EOWNERDEAD",
		      d->ret, strerror(d->ret));
	ck_assert_msg(d->word == (d->tid | OWNER_DIED),
		      "word 0x%08x after EOWNERDEAD, want 0x%08x", d->word,
		      d->tid | OWNER_DIED);
	ck_assert_uint_eq(d->status & TOFUTEX_STATUS_HOW_MASK,
			  TOFUTEX_STATUS_OWNER_DIED);
	ck_assert_int_eq(d->consistent_ret, 0);
	ck_assert_uint_eq(d->word_consistent, d->tid);
	ck_assert_int_eq(d->unlock_ret, 0);
	ck_assert_uint_eq(d->word_unlocked, 0);
}

static void death_run(bool spinning)
{
	struct tofutex_stats before, after;
	pthread_t owner, waiter;
	struct death *d;
	bool ok;

	d = calloc(1, sizeof(*d));
	ck_assert_ptr_nonnull(d);
	d->spinning = spinning;
	before = stats_get(TOFUTEX_STATS_PROCESS);
	d->base = before;
	ck_assert_int_eq(pthread_create(&owner, NULL, death_owner_main, d), 0);
	WAIT_UNTIL(ok, atomic_load(&d->owner_tid) != 0 || tfailed(),
		   TEST_WAIT_NS);
	tfail_assert();
	ck_assert(ok);
	ck_assert_int_eq(pthread_create(&waiter, NULL, death_waiter_main, d),
			 0);
	ck_assert_msg(join_within(owner, NULL, TEST_WAIT_NS),
		      "owner did not exit");
	/* The kernel promises 100 ms; allow far more, but not forever. */
	ck_assert_msg(join_within(waiter, NULL, TEST_WAIT_NS),
		      "waiter did not get the dead owner's lock");
	tfail_assert();
	death_check_waiter(d);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.owner_deaths, before.owner_deaths + 1);
	if (spinning)
		ck_assert_uint_gt(after.spins, before.spins);
	assert_no_live_states();
	/* The recovered mutex works normally. */
	ck_assert_int_eq(tofutex_mutex_lock(&d->m), 0);
	ck_assert_uint_eq(mword(&d->m), test_gettid());
	ck_assert_int_eq(tofutex_mutex_unlock(&d->m), 0);
	free(d);
}

START_TEST(test_owner_death_waiter_asleep)
{
	death_run(false);
}
END_TEST

START_TEST(test_owner_death_waiter_spinning)
{
	death_run(true);
}
END_TEST

static void *lock_and_exit_main(void *arg)
{
	tofutex_mutex_t *m = arg;
	int r = tofutex_mutex_lock(m);

	TCHECK(r == 0, "lock = %d", r);
	pthread_exit(NULL);
}

/* The owner died before anybody waited: the next locker gets EOWNERDEAD. */
START_TEST(test_owner_death_before_lock)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	uint32_t tid = test_gettid();
	struct tofutex_stats before, after;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, lock_and_exit_main, &m), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_ne(mword(&m), 0);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_int_eq(tofutex_mutex_lock(&m), EOWNERDEAD);
	ck_assert_uint_eq(mword(&m), tid | OWNER_DIED);
	ck_assert_uint_eq(tofutex_mutex_last_status() & TOFUTEX_STATUS_HOW_MASK,
			  TOFUTEX_STATUS_OWNER_DIED);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.owner_deaths, before.owner_deaths + 1);
	ck_assert_int_eq(tofutex_mutex_consistent(&m), 0);
	ck_assert_uint_eq(mword(&m), tid);
	ck_assert_int_eq(tofutex_mutex_unlock(&m), 0);
	ck_assert_uint_eq(mword(&m), 0);
	assert_no_live_states();
}
END_TEST

/* ---- Starvation: every thread progresses, hand-offs happen ---- */

#define STARVE_THREADS		8
#define STARVE_MIN_PROGRESS	20

struct starve {
	tofutex_mutex_t m;
	unsigned long counter;
	atomic_bool stop;
	atomic_ulong progress[STARVE_THREADS];
};

struct starve_thread {
	struct starve *s;
	unsigned int idx;
	pthread_t thread;
};

static void *starve_main(void *arg)
{
	struct starve_thread *t = arg;
	struct starve *s = t->s;
	int r;

	while (!atomic_load(&s->stop)) {
		volatile unsigned long *c = &s->counter;
		unsigned long v;

		r = tofutex_mutex_lock(&s->m);
		if (r) {
			TFAIL("thread %u: lock = %d", t->idx, r);
			return NULL;
		}
		v = *c;
		/*
		 * Even threads hold it asleep for a while, so that waiters
		 * queue up in the kernel; odd ones relock in a tight loop and
		 * steal it whenever they can.
		 */
		if (t->idx % 2 == 0)
			sleep_ns(500 * NSEC_PER_USEC);
		else
			busy_work(200);
		*c = v + 1;
		r = tofutex_mutex_unlock(&s->m);
		if (r) {
			TFAIL("thread %u: unlock = %d", t->idx, r);
			return NULL;
		}
		atomic_fetch_add(&s->progress[t->idx], 1);
	}
	return NULL;
}

START_TEST(test_starvation_handoff)
{
	struct starve_thread t[STARVE_THREADS];
	struct tofutex_stats before, st;
	unsigned long min, sum;
	uint64_t end;
	struct starve *s;
	unsigned int i, min_idx;

	s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	for (i = 0; i < STARVE_THREADS; i++) {
		t[i].s = s;
		t[i].idx = i;
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL,
						starve_main, &t[i]), 0);
	}
	/* Until hand-offs happened and everybody got the lock repeatedly. */
	end = now_ns() + 60 * NSEC_PER_SEC;
	for (;;) {
		sleep_ns(10 * NSEC_PER_MSEC);
		st = stats_get(TOFUTEX_STATS_PROCESS);
		min = ULONG_MAX;
		min_idx = 0;
		for (i = 0; i < STARVE_THREADS; i++) {
			unsigned long p = atomic_load(&s->progress[i]);

			if (p < min) {
				min = p;
				min_idx = i;
			}
		}
		if ((st.handoffs > before.handoffs &&
		     min >= STARVE_MIN_PROGRESS) || now_ns() > end ||
		    tfailed())
			break;
	}
	atomic_store(&s->stop, true);
	for (i = 0; i < STARVE_THREADS; i++)
		ck_assert_msg(join_within(t[i].thread, NULL, TEST_WAIT_NS),
			      "thread %u did not finish", i);
	tfail_assert();
	ck_assert_msg(min >= STARVE_MIN_PROGRESS,
		      "thread %u starved: %lu acquisitions in 60 s", min_idx,
		      min);
	st = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_msg(st.handoffs > before.handoffs,
		      "no hand-off in 60 s of 8-thread contention "
		      "(sleeps %llu, steals %llu)",
		      (unsigned long long)(st.sleeps - before.sleeps),
		      (unsigned long long)(st.steals - before.steals));
	sum = 0;
	for (i = 0; i < STARVE_THREADS; i++)
		sum += atomic_load(&s->progress[i]);
	ck_assert_uint_eq(s->counter, sum);
	ck_assert_uint_eq(mword(&s->m), 0);
	assert_no_live_states();
	free(s);
}
END_TEST

/* ---- 10,000 distinct contended locks ---- */

#define MANY_LOCKS	10000
#define MANY_PAIRS	8
/* One lock per 64 bytes: 10,000 locks spread over 157 pages. */
#define MANY_STRIDE	(64 / sizeof(tofutex_mutex_t))

struct many {
	tofutex_mutex_t *locks;
	unsigned long nlocks;
};

/*
 * A pair walks its share of the locks in lockstep: the holder takes lock
 * i, the waiter blocks on it until it sleeps in the kernel (WAITERS), the
 * holder releases it to the waiter. So every lock gets a kernel state.
 * A waiter that has waited handoff_ns (a slow guest) sets WAITERS without
 * sleeping and spins until the unlock hands it the lock: each lock put
 * its waiter to sleep or was handed to it.
 * The pair signals each other with semaphores, and the holder polls the
 * word with sched_yield(): a nanosleep() poll costs ~0.5 ms in the guest,
 * which over 10,000 locks would dominate the test.
 */
struct many_pair {
	struct many *s;
	unsigned int idx;
	sem_t held;		/* the holder owns the next lock */
	sem_t passed;		/* the waiter had it and released it */
	pthread_t holder, waiter;
};

static tofutex_mutex_t *many_lock(struct many *s, unsigned long i)
{
	return &s->locks[i * MANY_STRIDE];
}

static bool sem_wait_within(sem_t *sem, uint64_t timeout_ns)
{
	struct timespec ts = realtime_in(timeout_ns);

	while (sem_timedwait(sem, &ts))
		if (errno != EINTR)
			return false;
	return true;
}

static void *many_holder_main(void *arg)
{
	struct many_pair *p = arg;
	struct many *s = p->s;
	unsigned long i;
	uint64_t end;
	int r;

	for (i = p->idx; i < s->nlocks && !tfailed(); i += MANY_PAIRS) {
		tofutex_mutex_t *m = many_lock(s, i);

		r = tofutex_mutex_lock(m);
		if (r) {
			TFAIL("holder: lock %lu = %d", i, r);
			break;
		}
		sem_post(&p->held);
		end = now_ns() + TEST_WAIT_NS;
		while (!(mword(m) & WAITERS) && now_ns() < end && !tfailed())
			sched_yield();
		if (!(mword(m) & WAITERS)) {
			TFAIL("waiter on lock %lu never slept: word 0x%08x", i,
			      mword(m));
			break;
		}
		r = tofutex_mutex_unlock(m);
		if (r) {
			TFAIL("holder: unlock %lu = %d", i, r);
			break;
		}
		if (!sem_wait_within(&p->passed, TEST_WAIT_NS)) {
			TFAIL("waiter never got lock %lu", i);
			break;
		}
	}
	/* Let a waiter blocked on the semaphore see the failure. */
	sem_post(&p->held);
	return NULL;
}

static void *many_waiter_main(void *arg)
{
	struct many_pair *p = arg;
	struct many *s = p->s;
	uint32_t tid = test_gettid();
	unsigned long i;
	int r;

	for (i = p->idx; i < s->nlocks; i += MANY_PAIRS) {
		tofutex_mutex_t *m = many_lock(s, i);

		if (!sem_wait_within(&p->held, TEST_WAIT_NS)) {
			TFAIL("holder never took lock %lu", i);
			break;
		}
		if (tfailed())
			break;
		r = tofutex_mutex_lock(m);
		if (r || (mword(m) & TID_MASK) != tid) {
			TFAIL("waiter: lock %lu = %d, word 0x%08x", i, r,
			      mword(m));
			break;
		}
		r = tofutex_mutex_unlock(m);
		if (r) {
			TFAIL("waiter: unlock %lu = %d", i, r);
			break;
		}
		sem_post(&p->passed);
	}
	return NULL;
}

START_TEST(test_many_contended_locks)
{
	struct many_pair p[MANY_PAIRS];
	struct tofutex_stats before, after;
	struct many s;
	size_t len;
	unsigned long i;

	s.nlocks = scaled(MANY_LOCKS, 100);
	len = s.nlocks * MANY_STRIDE * sizeof(tofutex_mutex_t);
	s.locks = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(s.locks != MAP_FAILED);
	before = stats_get(TOFUTEX_STATS_PROCESS);
	for (i = 0; i < MANY_PAIRS; i++) {
		p[i].s = &s;
		p[i].idx = (unsigned int)i;
		ck_assert_int_eq(sem_init(&p[i].held, 0, 0), 0);
		ck_assert_int_eq(sem_init(&p[i].passed, 0, 0), 0);
		ck_assert_int_eq(pthread_create(&p[i].holder, NULL,
						many_holder_main, &p[i]), 0);
		ck_assert_int_eq(pthread_create(&p[i].waiter, NULL,
						many_waiter_main, &p[i]), 0);
	}
	for (i = 0; i < MANY_PAIRS; i++) {
		ck_assert(join_within(p[i].holder, NULL,
				      TEST_TIMEOUT_LONG * NSEC_PER_SEC));
		ck_assert(join_within(p[i].waiter, NULL, TEST_WAIT_NS));
	}
	tfail_assert();
	for (i = 0; i < s.nlocks; i++)
		if (mword(many_lock(&s, i)))
			ck_abort_msg("lock %lu word 0x%08x after the run", i,
				     mword(many_lock(&s, i)));
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_msg(after.sleeps - before.sleeps +
		      after.handoffs - before.handoffs >= s.nlocks,
		      "%llu sleeps and %llu hand-offs for %lu contended locks",
		      (unsigned long long)(after.sleeps - before.sleeps),
		      (unsigned long long)(after.handoffs - before.handoffs),
		      s.nlocks);
	ck_assert_msg(after.unlock_calls - before.unlock_calls >= s.nlocks,
		      "%llu UNLOCK ioctls for %lu contended locks",
		      (unsigned long long)(after.unlock_calls -
					   before.unlock_calls), s.nlocks);
	assert_no_live_states();
	for (i = 0; i < MANY_PAIRS; i++) {
		sem_destroy(&p[i].held);
		sem_destroy(&p[i].passed);
	}
	ck_assert_int_eq(munmap(s.locks, len), 0);
}
END_TEST

static Suite *lock_suite(void)
{
	Suite *s = suite_create("lock");
	TCase *tc;

	tc = tcase_create("fastpath");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_uncontended_stays_in_user_space);
	suite_add_tcase(s, tc);

	tc = tcase_create("exclusion");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_mutual_exclusion, 0, 4);
	tcase_add_loop_test(tc, test_mutual_exclusion_sleeping, 0, 4);
	tcase_add_test(tc, test_mutual_exclusion_multi_lock);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_relock_edeadlk);
	tcase_add_test(tc, test_unlock_free_eperm);
	tcase_add_test(tc, test_unlock_non_owner_eperm);
	suite_add_tcase(s, tc);

	tc = tcase_create("timedlock");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_timedlock_timeout);
	tcase_add_test(tc, test_timedlock_released_in_time);
	tcase_add_test(tc, test_timedlock_past_deadline);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_signal_blocked_waiter, 0, 2);
	tcase_add_loop_test(tc, test_signal_storm, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("owner_death");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_owner_death_waiter_asleep);
	tcase_add_test(tc, test_owner_death_waiter_spinning);
	tcase_add_test(tc, test_owner_death_before_lock);
	suite_add_tcase(s, tc);

	tc = tcase_create("starvation");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_starvation_handoff);
	suite_add_tcase(s, tc);

	tc = tcase_create("many_locks");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_many_contended_locks);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(lock_suite());
}
