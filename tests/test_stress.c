// SPDX-License-Identifier: GPL-2.0
/*
 * Stress with churn: mixed lock and swap/wait workloads while
 * threads come and go, threads exit holding locks, waiters give up at
 * short deadlines, child processes are killed with SIGKILL while their
 * threads sleep in LOCK and WAIT, and other threads fork() meanwhile.
 *
 * What must hold: counters protected by the locks are exact (an owner's
 * death is recovered exactly once per death, with
 * tofutex_mutex_consistent()), every waiter returns (all joins are
 * bounded), and afterwards no kernel state is left (global live_states).
 * Iteration counts scale with TOFUTEX_TEST_SCALE.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "common.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED

/* Bound on any one thread of a stress test finishing. */
#define STRESS_JOIN_NS	(2 * TEST_WAIT_NS)

static void assert_no_live_states_soon(void)
{
	struct tofutex_stats st;
	bool ok;

	WAIT_UNTIL(ok, tofutex_stats(TOFUTEX_STATS_GLOBAL, &st) == 0 &&
		       st.live_states == 0, TEST_WAIT_NS);
	ck_assert_msg(ok, "global live_states = %llu afterwards",
		      (unsigned long long)st.live_states);
}

static bool waitwake_offered(void)
{
	uint64_t features = 0;
	uint32_t abi;

	return tofutex_version(&abi, &features) == 0 &&
	       (features & TOFUTEX_FEAT_WAITWAKE) &&
	       (features & TOFUTEX_FEAT_SWAP);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- The shared lock workload ---- */

struct locked {
	tofutex_mutex_t m;
	unsigned long counter;		/* under m */
	atomic_ulong increments;	/* what the threads say they added */
	atomic_ulong deaths;		/* threads that exited holding m */
	atomic_ulong recoveries;	/* EOWNERDEAD returns */
	atomic_ulong timeouts;
};

/*
 * Take @l->m (with a short deadline when @timed); on EOWNERDEAD mark it
 * consistent. Returns false on a timeout; anything else undocumented
 * fails the test.
 */
static bool locked_enter(struct locked *l, bool timed, uint64_t *rnd)
{
	struct timespec ts;
	int r, c;

	if (timed) {
		ts = ts_in(xorshift(rnd) % (500 * NSEC_PER_USEC));
		r = tofutex_mutex_clocklock(&l->m, CLOCK_MONOTONIC, &ts);
	} else {
		r = tofutex_mutex_lock(&l->m);
	}
	if (r == ETIMEDOUT && timed) {
		atomic_fetch_add(&l->timeouts, 1);
		return false;
	}
	if (r == EOWNERDEAD) {
		atomic_fetch_add(&l->recoveries, 1);
		c = tofutex_mutex_consistent(&l->m);
		TCHECK(c == 0, "consistent = %d (%s)", c, strerror(c));
		r = 0;
	}
	if (r) {
		TFAIL("lock = %d (%s)", r, strerror(r));
		return false;
	}
	return true;
}

static void locked_add(struct locked *l)
{
	volatile unsigned long *c = &l->counter;
	unsigned long v = *c;

	busy_work(20);
	*c = v + 1;
	atomic_fetch_add(&l->increments, 1);
}

struct worker {
	struct locked *l;
	unsigned long iters;
	bool dies;		/* exit holding the lock */
	uint64_t seed;
	atomic_bool done;
	pthread_t thread;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rnd = w->seed | 1;
	unsigned long i;
	int r;

	for (i = 0; i < w->iters && !tfailed(); i++) {
		bool last = w->dies && i + 1 == w->iters;
		bool timed = xorshift(&rnd) % 8 == 0;

		/* A dying thread's last lock must not time out: it must die. */
		if (!locked_enter(w->l, timed && !last, &rnd))
			continue;
		locked_add(w->l);
		if (w->dies && i + 1 == w->iters) {
			/* Exit holding it: the next locker recovers it. */
			atomic_fetch_add(&w->l->deaths, 1);
			atomic_store(&w->done, true);
			return NULL;
		}
		if (xorshift(&rnd) % 32 == 0)
			sleep_ns(50 * NSEC_PER_USEC);	/* waiters sleep */
		r = tofutex_mutex_unlock(&w->l->m);
		if (r) {
			TFAIL("unlock = %d (%s)", r, strerror(r));
			break;
		}
	}
	atomic_store(&w->done, true);
	return NULL;
}

/* After the run: a last dead owner is recovered here; all counts agree. */
static void locked_check(struct locked *l)
{
	uint64_t rnd = 1;

	ck_assert(locked_enter(l, false, &rnd));
	tfail_assert();
	ck_assert_int_eq(tofutex_mutex_unlock(&l->m), 0);
	ck_assert_msg(l->counter == atomic_load(&l->increments),
		      "counter %lu, increments %lu", l->counter,
		      atomic_load(&l->increments));
	ck_assert_msg(atomic_load(&l->recoveries) == atomic_load(&l->deaths),
		      "%lu EOWNERDEAD recoveries for %lu owner deaths",
		      atomic_load(&l->recoveries), atomic_load(&l->deaths));
	ck_assert_uint_eq(word_load(&l->m.word), 0);
}

/* ---- Threads that exit holding locks, timed waiters, thread churn ---- */

#define CHURN_WORKERS	4

START_TEST(test_owner_death_churn)
{
	static struct locked l;
	struct worker w[CHURN_WORKERS];
	unsigned long waves = scaled(40, 3), iters = scaled(400, 20);
	unsigned int wave, i;

	memset(&l, 0, sizeof(l));
	for (wave = 0; wave < waves && !tfailed(); wave++) {
		for (i = 0; i < CHURN_WORKERS; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].l = &l;
			w[i].iters = iters / (1 + i);
			/* One thread of each wave dies holding the lock. */
			w[i].dies = i == wave % CHURN_WORKERS;
			w[i].seed = wave * 131 + i + 1;
			ck_assert_int_eq(pthread_create(&w[i].thread, NULL,
							worker_main, &w[i]),
					 0);
		}
		for (i = 0; i < CHURN_WORKERS; i++)
			ck_assert_msg(join_within(w[i].thread, NULL,
						  STRESS_JOIN_NS),
				      "wave %u: worker %u did not finish "
				      "(word 0x%08x)", wave, i,
				      word_load(&l.m.word));
	}
	tfail_assert();
	locked_check(&l);
	ck_assert_uint_eq(atomic_load(&l.deaths), waves);
	printf("owner_death_churn: %lu increments, %lu deaths recovered, "
	       "%lu timeouts\n", atomic_load(&l.increments),
	       atomic_load(&l.recoveries), atomic_load(&l.timeouts));
	fflush(stdout);
	assert_no_live_states_soon();
}
END_TEST

/* ---- Swap ping-pong and timed waits, pairs coming and going ---- */

/*
 * Two threads pass a turn back and forth on one word (0: A's turn, 1:
 * B's): the one whose turn it is adds to the counter, flips the turn and
 * SWAPs - waking the other, waiting for the turn to come back - with a
 * short deadline, so a lost wake-up costs time, never progress. The
 * counter is touched only by the thread whose turn it is.
 */
struct pingpong {
	uint32_t turn;
	unsigned long counter;
	unsigned long iters;	/* per thread */
	atomic_ulong timeouts;
};

struct pp_thread {
	struct pingpong *pp;
	uint32_t me;		/* 0 or 1 */
	pthread_t thread;
};

static void *pp_main(void *arg)
{
	struct pp_thread *t = arg;
	struct pingpong *pp = t->pp;
	unsigned long done = 0;
	struct timespec ts;
	uint64_t end = now_ns() + STRESS_JOIN_NS;
	int r;

	while (done < pp->iters && !tfailed()) {
		if (now_ns() > end) {
			TFAIL("ping-pong thread %u stuck at %lu of %lu",
			      t->me, done, pp->iters);
			break;
		}
		if (__atomic_load_n(&pp->turn, __ATOMIC_ACQUIRE) != t->me) {
			ts = ts_in(200 * NSEC_PER_USEC);
			r = tofutex_wait(&pp->turn, !t->me, &ts);
			if (r == ETIMEDOUT)
				atomic_fetch_add(&pp->timeouts, 1);
			else if (r && r != EAGAIN && r != EINTR)
				TFAIL("wait = %d (%s)", r, strerror(r));
			continue;
		}
		pp->counter++;
		done++;
		__atomic_store_n(&pp->turn, !t->me, __ATOMIC_RELEASE);
		if (done == pp->iters) {
			r = tofutex_wake(&pp->turn, 1, NULL);
			TCHECK(r == 0, "wake = %d (%s)", r, strerror(r));
			break;
		}
		ts = ts_in(200 * NSEC_PER_USEC);
		r = tofutex_swap(&pp->turn, !t->me, &pp->turn, &ts);
		if (r == ETIMEDOUT)
			atomic_fetch_add(&pp->timeouts, 1);
		else if (r && r != EAGAIN && r != EINTR)
			TFAIL("swap = %d (%s)", r, strerror(r));
	}
	return NULL;
}

#define PP_PAIRS	2

START_TEST(test_swap_pingpong_churn)
{
	static struct pingpong pp[PP_PAIRS];
	struct pp_thread t[PP_PAIRS][2];
	unsigned long rounds = scaled(20, 2), iters = scaled(500, 20);
	unsigned long timeouts = 0;
	unsigned int round, p, k;

	if (!waitwake_offered()) {
		printf("swap_pingpong_churn: WAIT/WAKE/SWAP not offered\n");
		return;
	}
	for (round = 0; round < rounds && !tfailed(); round++) {
		for (p = 0; p < PP_PAIRS; p++) {
			memset(&pp[p], 0, sizeof(pp[p]));
			pp[p].iters = iters;
			for (k = 0; k < 2; k++) {
				t[p][k].pp = &pp[p];
				t[p][k].me = k;
				ck_assert_int_eq(pthread_create(&t[p][k].thread,
								NULL, pp_main,
								&t[p][k]), 0);
			}
		}
		for (p = 0; p < PP_PAIRS; p++) {
			for (k = 0; k < 2; k++)
				ck_assert_msg(join_within(t[p][k].thread, NULL,
							  2 * STRESS_JOIN_NS),
					      "ping-pong thread did not finish");
			tfail_assert();
			ck_assert_msg(pp[p].counter == 2 * iters,
				      "pair %u: counter %lu, want %lu", p,
				      pp[p].counter, 2 * iters);
			timeouts += atomic_load(&pp[p].timeouts);
		}
	}
	printf("swap_pingpong_churn: %lu rounds of %u pairs x %lu, "
	       "%lu deadline expiries\n", rounds, PP_PAIRS, 2 * iters,
	       timeouts);
	fflush(stdout);
	assert_no_live_states_soon();
}
END_TEST

/* ---- Children killed while their threads sleep; forks meanwhile ---- */

/*
 * In a child: the main thread holds a mutex; threads sleep on it in LOCK
 * and on a word in WAIT (no deadline: only the kill ends them). When
 * @report_ready, the child says so once all are queued (2 live states).
 */
#define CHILD_SLEEPERS	2

static tofutex_mutex_t child_m = TOFUTEX_MUTEX_INITIALIZER;
static uint32_t child_word;

static void *child_locker(void *arg)
{
	(void)arg;
	tofutex_mutex_lock(&child_m);
	return NULL;
}

static void *child_waiter(void *arg)
{
	(void)arg;
	for (;;)
		tofutex_wait(&child_word, 0, NULL);
	return NULL;
}

static void child_run(int ready_fd, bool waitwake)
{
	struct tofutex_stats st;
	pthread_t t;
	unsigned int i;
	char c = 'R';
	uint64_t end;

	/* The copy names the parent's thread (a dead owner here) or is 0. */
	__atomic_store_n(&child_m.word, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&child_word, 0, __ATOMIC_RELAXED);
	if (tofutex_mutex_lock(&child_m))
		_exit(2);
	for (i = 0; i < CHILD_SLEEPERS; i++) {
		if (pthread_create(&t, NULL, child_locker, NULL))
			_exit(3);
		if (waitwake && pthread_create(&t, NULL, child_waiter, NULL))
			_exit(3);
	}
	end = now_ns() + TEST_WAIT_NS;
	while (now_ns() < end) {
		if (tofutex_stats(TOFUTEX_STATS_PROCESS, &st) == 0 &&
		    st.live_states == (waitwake ? 2U : 1U)) {
			if (write(ready_fd, &c, 1) != 1)
				_exit(4);
			break;
		}
		sleep_ns(100 * NSEC_PER_USEC);
	}
	/* Until killed; the bound only keeps a lost parent from leaking. */
	sleep_ns(4 * TEST_WAIT_NS);
	_exit(5);
}

struct forker {
	unsigned long children;
	bool waitwake;
	unsigned long killed_ready;	/* killed with all sleepers queued */
	pthread_t thread;
};

static void *forker_main(void *arg)
{
	struct forker *f = arg;
	uint64_t rnd = 12345;
	unsigned long i;
	int ready[2], status;
	pid_t pid;
	char c;
	bool ok;

	for (i = 0; i < f->children && !tfailed(); i++) {
		if (pipe2(ready, O_CLOEXEC)) {
			TFAIL("pipe2: %s", strerror(errno));
			break;
		}
		pid = fork();
		if (pid < 0) {
			TFAIL("fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			close(ready[0]);
			child_run(ready[1], f->waitwake);
		}
		close(ready[1]);
		if (xorshift(&rnd) % 4 == 0) {
			/* Early: maybe while it is still queueing. */
			sleep_ns(xorshift(&rnd) % (2 * NSEC_PER_MSEC));
		} else if (read(ready[0], &c, 1) == 1) {
			f->killed_ready++;
		} else {
			TFAIL("child %d never had its sleepers queued", pid);
		}
		kill(pid, SIGKILL);
		WAIT_UNTIL(ok, waitpid(pid, &status, WNOHANG) == pid,
			   TEST_WAIT_NS);
		/* Only now: a child that writes to a closed pipe dies of SIGPIPE. */
		close(ready[0]);
		if (!ok) {
			TFAIL("killed child %d did not go away", pid);
			break;
		}
		TCHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		       "child %d: status 0x%x (not killed: it failed)", pid,
		       status);
	}
	return NULL;
}

START_TEST(test_killed_sleepers_and_fork)
{
	static struct locked l;
	struct worker w[3];
	struct forker f[2];
	unsigned long killed = 0;
	unsigned int i;

	memset(&l, 0, sizeof(l));
	/* The parent's lock workload runs across the forks. */
	for (i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].l = &l;
		w[i].iters = scaled(3000, 100);
		w[i].dies = i == 0;
		w[i].seed = i + 77;
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL,
						worker_main, &w[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].children = scaled(30, 3);
		f[i].waitwake = waitwake_offered();
		ck_assert_int_eq(pthread_create(&f[i].thread, NULL,
						forker_main, &f[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		ck_assert_msg(join_within(f[i].thread, NULL,
					  4 * STRESS_JOIN_NS),
			      "forker %u did not finish", i);
		killed += f[i].killed_ready;
	}
	for (i = 0; i < 3; i++)
		ck_assert_msg(join_within(w[i].thread, NULL, STRESS_JOIN_NS),
			      "worker %u did not finish", i);
	tfail_assert();
	locked_check(&l);
	printf("killed_sleepers_and_fork: %lu children killed with all "
	       "sleepers queued, %lu increments\n", killed,
	       atomic_load(&l.increments));
	fflush(stdout);
	ck_assert_msg(killed > 0, "no child was killed with its sleepers queued");
	assert_no_live_states_soon();
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("stress");
	TCase *tc;

	tc = tcase_create("stress");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_owner_death_churn);
	tcase_add_test(tc, test_swap_pingpong_churn);
	tcase_add_test(tc, test_killed_sleepers_and_fork);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(stress_suite());
}
