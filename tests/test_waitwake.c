// SPDX-License-Identifier: GPL-2.0
/*
 * Wait, wake and swap: the FUTEX_SWAP selftest's
 * ping-pong with a strictly alternating counter (WAKE+WAIT and SWAP),
 * EAGAIN with SWAP's wake half still done, deadlines, signals and restart,
 * wake counts, a bad-input matrix, words in use as TO locks, and where
 * SWAP's wakee runs: on the waker's CPU when allowed, never outside its
 * affinity, which the kernel must not change.
 *
 * Most calls go through libtofutex; the raw ABI is used where the library
 * hides something under test (SWAP's woken field, reserved fields, bad
 * pointers). Every wait has a deadline (TEST_WAIT_NS away), so that a lost
 * wake-up fails the test with ETIMEDOUT instead of hanging it.
 *
 * Whether a thread sleeps inside a given ioctl is read from
 * /proc/self/task/<tid>/syscall: the kernel fills it in only for a task
 * that is not running, so "ioctl <cmd>" there means "asleep in that call".
 *
 * TOFUTEX_TEST_SCALE scales the iteration counts.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "common.h"

#define PING_PONG_ITERS		100000UL
/* ... or as many as fit this time, whichever is fewer (see pp_run()). */
#define PING_PONG_BUDGET_NS	(3 * NSEC_PER_SEC)
#define PLACEMENT_ITERS		20000UL
#define PINNED_ITERS		2000UL
#define CONTENDED_ITERS		1000UL
#define CONTENDED_WORK		20000U
#define AFFINITY_ROUNDS		200UL

/* The share of swaps whose wakee must run on the waker's CPU. */
#define PLACEMENT_MIN		0.95

/*
 * Addresses user space can never access on x86-64, and on arm64: the
 * kernel's there too; NON_CANONICAL_ADDR is above the user range, which
 * on arm64 reaches 2^52 (52-bit VA): 2^47 is a user address there.
 */
#define KERNEL_TEXT_ADDR	0xffffffff81000000ULL
#define KERNEL_DIRECT_ADDR	0xffff888000000000ULL
#if defined(__aarch64__)
#define NON_CANONICAL_ADDR	0x0010000000000000ULL
#else
#define NON_CANONICAL_ADDR	0x0000800000000000ULL
#endif

#define PARAM_DIR		"/sys/module/tofutex/parameters/"

static int dev_fd(void)
{
	int fd = tofutex_fd();

	ck_assert_msg(fd >= 0, "tofutex_fd() = %d (%s)", fd, strerror(-fd));
	return fd;
}

static void word_store(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
}

/* ---- raw ioctls: 0 or the errno value ---- */

static int raw_wait(uint64_t uaddr, uint32_t val, uint32_t flags,
		    uint64_t deadline_ns, uint64_t reserved)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.val = val;
	a.flags = flags;
	a.deadline_ns = deadline_ns;
	a.reserved = reserved;
	return ioctl(dev_fd(), TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

static int raw_wake(uint64_t uaddr, uint32_t count, uint32_t flags,
		    uint64_t reserved, int *woken)
{
	struct tofutex_wake a;
	int r;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.count = count;
	a.flags = flags;
	a.reserved = reserved;
	r = ioctl(dev_fd(), TOFUTEX_IOC_WAKE, &a);
	if (r < 0)
		return errno;
	if (woken)
		*woken = r;
	return 0;
}

/* SWAP with @a as given; *@woken gets the out field (0xdead if unset). */
static int raw_swap(struct tofutex_swap *a, uint32_t *woken)
{
	int r;

	a->woken = 0xdead;
	r = ioctl(dev_fd(), TOFUTEX_IOC_SWAP, a) ? errno : 0;
	if (woken)
		*woken = a->woken;
	return r;
}

static struct tofutex_swap swap_arg(const uint32_t *wait_w, uint32_t val,
				    const uint32_t *wake_w)
{
	struct tofutex_swap a;

	memset(&a, 0, sizeof(a));
	a.wait_uaddr = (uintptr_t)wait_w;
	a.wake_uaddr = (uintptr_t)wake_w;
	a.val = val;
	a.flags = TOFUTEX_WAIT_DEADLINE;
	a.deadline_ns = now_ns() + TEST_WAIT_NS;
	return a;
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

/* ---- where threads are ---- */

static int online_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static cpu_set_t cpu_set_of(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return s;
}

/* The calling thread's CPU, recorded as a failure if unknown. */
static int this_cpu(void)
{
	int cpu = sched_getcpu();

	TCHECK(cpu >= 0, "sched_getcpu: %s", strerror(errno));
	return cpu;
}

/*
 * Is SWAP supposed to run its wakee on the caller's CPU in this module?
 * The module says so in sysfs (wake_local.c): the mechanism built in and
 * whether it is switched on.
 */
static bool read_param(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

static bool wake_local_promised(char *mech, size_t len)
{
	char on[8];

	ck_assert_msg(read_param("wake_local_mechanism", mech, len) &&
		      read_param("wake_local", on, sizeof(on)),
		      "cannot read " PARAM_DIR "wake_local{,_mechanism}: "
		      "is sysfs mounted and the module loaded?");
	return strcmp(mech, "none") != 0 && on[0] == 'Y';
}

/* ---- a thread sleeping in WAIT ---- */

struct waiter {
	uint32_t *word;
	uint32_t val;
	atomic_uint tid;
	atomic_int result;	/* -1 until WAIT returned */
	pthread_t thread;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct timespec dl = ts_in(TEST_WAIT_NS);

	atomic_store(&w->tid, test_gettid());
	atomic_store(&w->result, tofutex_wait(w->word, w->val, &dl));
	return NULL;
}

/* Start a waiter on @word and return once it sleeps in the kernel. */
static void waiter_start(struct waiter *w, uint32_t *word, uint32_t val)
{
	bool ok;

	memset(w, 0, sizeof(*w));
	w->word = word;
	w->val = val;
	atomic_store(&w->result, -1);
	ck_assert_int_eq(pthread_create(&w->thread, NULL, waiter_main, w), 0);
	WAIT_UNTIL(ok, atomic_load(&w->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&w->tid), TOFUTEX_IOC_WAIT, "WAIT");
}

/* Join a waiter and return what its WAIT returned. */
static int waiter_join(struct waiter *w)
{
	ck_assert_msg(join_within(w->thread, NULL, TEST_WAIT_NS),
		      "a waiter did not return");
	return atomic_load(&w->result);
}

static bool waiter_still_asleep(struct waiter *w)
{
	return atomic_load(&w->result) == -1 &&
	       asleep_in_ioctl(atomic_load(&w->tid), TOFUTEX_IOC_WAIT);
}

/* ---- Ping-pong ---- */

#define PP_WAITING	0U
#define PP_WAKEUP	1U

enum pp_mode { PP_WAKE_WAIT, PP_SWAP };

enum { SIDE_MAIN, SIDE_OTHER };

struct pingpong {
	enum pp_mode mode;
	unsigned long iters;	/* at most; on return, the ones done */
	uint64_t budget_ns;	/* the main side's time for them, 0: none */
	atomic_ulong limit;	/* the other side's count of them */
	unsigned int work;	/* busy_work() units before each swap */
	int pin[2];		/* CPU each side is pinned to, or -1 */
	uint32_t word[2];	/* the word each side waits on */
	atomic_ulong counter;	/* validation: advances strictly in turn */
	atomic_bool failed;
	atomic_int cpu_before[2];	/* CPU of each side before its swap */
	unsigned long woken[2];		/* swaps after which this side slept */
	unsigned long on_waker_cpu[2];	/* ... and ran on the waker's CPU */
	unsigned long off_pin[2];	/* times a pinned side ran elsewhere */
	unsigned long stale[2];		/* stale wake-ups, see pp_swap() */
};

/* Stop both sides after a failure: neither may be left asleep. */
static void pp_abort(struct pingpong *pp)
{
	atomic_store(&pp->failed, true);
	word_store(&pp->word[0], PP_WAKEUP);
	word_store(&pp->word[1], PP_WAKEUP);
	tofutex_wake(&pp->word[0], UINT32_MAX, NULL);
	tofutex_wake(&pp->word[1], UINT32_MAX, NULL);
}

static void pp_check_cpu(struct pingpong *pp, int side, int cpu)
{
	if (pp->pin[side] >= 0 && cpu != pp->pin[side])
		pp->off_pin[side]++;
}

/*
 * The selftest's futex_swap_op(): mark our word waiting, the other side's
 * woken, wake the other side and wait. A return of 0 with our word still
 * waiting is a stale wake-up, legal with futexes too: when our previous
 * wait returned EAGAIN, the other side's wake meant for it may still be
 * on its way and find us in this wait. Then wait again, as a futex user
 * must; the counter proves the turns still alternate.
 */
static bool pp_swap(struct pingpong *pp, int side)
{
	uint32_t *this = &pp->word[side], *that = &pp->word[!side];
	struct timespec dl = ts_in(TEST_WAIT_NS);
	int r, cpu;

	busy_work(pp->work);
	word_store(this, PP_WAITING);
	atomic_store(&pp->cpu_before[side], this_cpu());
	pp_check_cpu(pp, side, atomic_load(&pp->cpu_before[side]));
	word_store(that, PP_WAKEUP);
	if (pp->mode == PP_WAKE_WAIT) {
		r = tofutex_wake(that, 1, NULL);
		if (r) {
			TFAIL("side %d: tofutex_wake = %d (%s)", side, r,
			      strerror(r));
			return false;
		}
		r = tofutex_wait(this, PP_WAITING, &dl);
	} else {
		r = tofutex_swap(this, PP_WAITING, that, &dl);
	}
	while (r == 0 && word_load(this) == PP_WAITING &&
	       !atomic_load(&pp->failed)) {
		pp->stale[side]++;
		r = tofutex_wait(this, PP_WAITING, &dl);
	}
	cpu = this_cpu();
	if (atomic_load(&pp->failed))
		return false;
	if (r != 0 && r != EAGAIN) {
		TFAIL("side %d: %s = %d (%s)", side,
		      pp->mode == PP_SWAP ? "tofutex_swap" : "tofutex_wait",
		      r, strerror(r));
		return false;
	}
	if (word_load(this) != PP_WAKEUP) {
		TFAIL("side %d: returned %d with the word still waiting",
		      side, r);
		return false;
	}
	pp_check_cpu(pp, side, cpu);
	if (r == 0) {
		pp->woken[side]++;
		if (cpu == atomic_load(&pp->cpu_before[!side]))
			pp->on_waker_cpu[side]++;
	}
	return true;
}

/* Advance the counter from @from; it must hold exactly @from. */
static bool pp_step(struct pingpong *pp, unsigned long from)
{
	unsigned long expected = from;

	if (atomic_compare_exchange_strong(&pp->counter, &expected, from + 1))
		return true;
	TFAIL("swap validation failed: counter %lu, expected %lu", expected,
	      from);
	return false;
}

static void pp_pin(struct pingpong *pp, int side)
{
	cpu_set_t s;
	int r;

	if (pp->pin[side] < 0)
		return;
	s = cpu_set_of(pp->pin[side]);
	r = pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
	TCHECK(r == 0, "pthread_setaffinity_np: %s", strerror(r));
}

static void *pp_other(void *arg)
{
	struct pingpong *pp = arg;
	struct timespec dl = ts_in(TEST_WAIT_NS);
	unsigned long i;
	int r;

	pp_pin(pp, SIDE_OTHER);
	/* The selftest's first wait: until the main side's first wake. */
	while (word_load(&pp->word[SIDE_OTHER]) == PP_WAITING) {
		r = tofutex_wait(&pp->word[SIDE_OTHER], PP_WAITING, &dl);
		if (r && r != EAGAIN) {
			TFAIL("first wait = %d (%s)", r, strerror(r));
			pp_abort(pp);
			return NULL;
		}
	}
	for (i = 0; i < atomic_load(&pp->limit) && !atomic_load(&pp->failed);
	     i++) {
		if (!pp_step(pp, 2 * i + 1) || !pp_swap(pp, SIDE_OTHER)) {
			pp_abort(pp);
			break;
		}
	}
	return NULL;
}

/*
 * Run the ping-pong: the main side swaps to the other @iters times, the
 * other swaps back each time. Returns ns per swap.
 *
 * With a budget, the main side stops early once it is spent: at a turn
 * of its own, where the other side waits for its wake, so the final wake
 * below ends the other side's loop at the same count. A slow or shared
 * machine then runs fewer rounds, not longer.
 */
static double pp_run(struct pingpong *pp)
{
	pthread_t other;
	uint64_t t0, t1;
	unsigned long i;
	int r;

	pp->word[SIDE_MAIN] = PP_WAITING;
	pp->word[SIDE_OTHER] = PP_WAITING;
	atomic_store(&pp->limit, pp->iters);
	atomic_store(&pp->counter, 0);
	atomic_store(&pp->failed, false);
	pp_pin(pp, SIDE_MAIN);
	ck_assert_int_eq(pthread_create(&other, NULL, pp_other, pp), 0);

	t0 = now_ns();
	for (i = 0; i < pp->iters && !atomic_load(&pp->failed); i++) {
		if (pp->budget_ns && i && now_ns() - t0 >= pp->budget_ns)
			break;
		if (!pp_step(pp, 2 * i) || !pp_swap(pp, SIDE_MAIN)) {
			pp_abort(pp);
			break;
		}
	}
	t1 = now_ns();
	if (!atomic_load(&pp->failed)) {
		pp->iters = i;
		atomic_store(&pp->limit, i);
	}

	/* The other side sleeps in its last swap: the final wake. */
	word_store(&pp->word[SIDE_OTHER], PP_WAKEUP);
	r = tofutex_wake(&pp->word[SIDE_OTHER], 1, NULL);
	ck_assert_msg(r == 0, "final wake = %d (%s)", r, strerror(r));
	ck_assert_msg(join_within(other, NULL, TEST_WAIT_NS),
		      "the other side did not finish");
	tfail_assert();
	ck_assert_msg(atomic_load(&pp->counter) == 2 * pp->iters,
		      "final swap validation failed: counter %lu, want %lu",
		      atomic_load(&pp->counter), 2 * pp->iters);
	return (double)(t1 - t0) / (double)(2 * pp->iters);
}

static double pp_placement(const struct pingpong *pp)
{
	unsigned long woken = pp->woken[0] + pp->woken[1];

	return woken ? (double)(pp->on_waker_cpu[0] + pp->on_waker_cpu[1]) /
		       (double)woken : 0.0;
}

static void pp_report(const char *what, const struct pingpong *pp,
		      double ns)
{
	printf("%s: completed %lu swap and back iterations: %.0f ns per swap; "
	       "slept in %lu of %lu swaps, %lu of them woken on the waker's CPU (%.2f %%); %lu stale wake-ups\n",
	       what, pp->iters, ns, pp->woken[0] + pp->woken[1],
	       2 * pp->iters, pp->on_waker_cpu[0] + pp->on_waker_cpu[1],
	       100.0 * pp_placement(pp), pp->stale[0] + pp->stale[1]);
	fflush(stdout);
}

/*
 * 1. The FUTEX_SWAP selftest's pattern: _i = 0 with WAKE then WAIT, 1 with
 * SWAP, 2 with SWAP and both sides pinned to CPU 0, where every wakee is
 * woken at once and preempts its waker before the waker sleeps
 * (wake_local.c). Also counts the calls in the statistics.
 */
START_TEST(test_ping_pong)
{
	static const char *const what[] = { "WAKE+WAIT", "SWAP",
					     "SWAP, one CPU" };
	struct pingpong pp = {
		.mode = _i ? PP_SWAP : PP_WAKE_WAIT,
		.iters = scaled(PING_PONG_ITERS, 100),
		.budget_ns = PING_PONG_BUDGET_NS,
		.pin = { _i == 2 ? 0 : -1, _i == 2 ? 0 : -1 },
	};
	struct tofutex_stats before, after;
	double ns;

	before = stats_get(TOFUTEX_STATS_PROCESS);
	ns = pp_run(&pp);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	pp_report(what[_i], &pp, ns);
	ck_assert_uint_eq(pp.off_pin[0] + pp.off_pin[1], 0);

	if (pp.mode == PP_SWAP) {
		/* Each side's swaps and the final wake. */
		ck_assert_uint_eq(after.swap_calls - before.swap_calls,
				  2 * pp.iters);
		ck_assert_uint_eq(after.wake_calls - before.wake_calls, 1);
	} else {
		ck_assert_uint_eq(after.wake_calls - before.wake_calls,
				  2 * pp.iters + 1);
		ck_assert_uint_ge(after.wait_calls - before.wait_calls,
				  2 * pp.iters);
		ck_assert_uint_eq(after.swap_calls - before.swap_calls, 0);
	}
	ck_assert_uint_eq(after.timeouts - before.timeouts, 0);
	assert_no_live_states();
}
END_TEST

/* A thread that keeps a CPU busy until told to stop. */
struct hog {
	atomic_bool stop;
	pthread_t thread;
};

static void *hog_main(void *arg)
{
	struct hog *h = arg;

	while (!atomic_load_explicit(&h->stop, memory_order_relaxed))
		busy_work(1000);
	return NULL;
}

/*
 * 1. The SWAP ping-pong while a busy thread per CPU competes for every
 * CPU, and each side works a while before it swaps, so that it has used
 * more than its share when it blocks: wakers are preempted on their way to
 * sleep, and on 6.12 a waker that blocks while not eligible is dequeued
 * late (delayed dequeue), the two cases the hand-off in wake_local.c must
 * tell apart from a real block. A hand-off lost that way leaves both sides
 * asleep until their deadline: ETIMEDOUT.
 */
START_TEST(test_ping_pong_contended)
{
	struct pingpong pp = {
		.mode = PP_SWAP,
		.iters = scaled(CONTENDED_ITERS, 100),
		.work = CONTENDED_WORK,
		.pin = { -1, -1 },
	};
	struct hog hogs[2];
	double ns;
	int i;

	for (i = 0; i < 2; i++) {
		atomic_store(&hogs[i].stop, false);
		ck_assert_int_eq(pthread_create(&hogs[i].thread, NULL,
						hog_main, &hogs[i]), 0);
	}
	ns = pp_run(&pp);
	for (i = 0; i < 2; i++) {
		atomic_store(&hogs[i].stop, true);
		ck_assert(join_within(hogs[i].thread, NULL, TEST_WAIT_NS));
	}
	pp_report("SWAP with CPU hogs", &pp, ns);
	assert_no_live_states();
}
END_TEST

/*
 * 6. Both sides may run anywhere: the wakee of a SWAP runs on the waker's
 * CPU in at least 95 % of the swaps in which it slept, when the module
 * promises it (see wake_local_promised()). The fraction is printed.
 */
START_TEST(test_placement_same_cpu)
{
	struct pingpong pp = {
		.mode = PP_SWAP,
		.iters = scaled(PLACEMENT_ITERS, 200),
		.pin = { -1, -1 },
	};
	char mech[32];
	bool promised = wake_local_promised(mech, sizeof(mech));
	double ns, frac;

	ns = pp_run(&pp);
	pp_report("placement", &pp, ns);
	frac = pp_placement(&pp);
	printf("placement: mechanism %s%s, %d CPUs\n", mech,
	       promised ? "" : " (off: not asserted)", online_cpus());
	ck_assert_msg(pp.woken[0] + pp.woken[1] >= pp.iters,
		      "the wakee slept in only %lu of %lu swaps",
		      pp.woken[0] + pp.woken[1], 2 * pp.iters);
	if (promised)
		ck_assert_msg(frac >= PLACEMENT_MIN,
			      "wakee on the waker's CPU in %.2f %% of swaps, want >= %.0f %%",
			      100.0 * frac, 100.0 * PLACEMENT_MIN);
	assert_no_live_states();
}
END_TEST

/*
 * 6. Each side pinned to its own CPU, so that each wakee's affinity
 * excludes its waker's CPU: it must never run there, and both
 * affinities must be what the threads set.
 */
START_TEST(test_placement_excluded_cpu)
{
	struct pingpong pp = {
		.mode = PP_SWAP,
		.iters = scaled(PINNED_ITERS, 100),
		.pin = { 0, 1 },
	};
	cpu_set_t s, want = cpu_set_of(0);

	ck_assert_msg(online_cpus() >= 2, "needs 2 CPUs, has %d",
		      online_cpus());
	pp_run(&pp);
	ck_assert_msg(pp.off_pin[SIDE_MAIN] == 0 && pp.off_pin[SIDE_OTHER] == 0,
		      "a pinned side ran on the other's CPU %lu + %lu times",
		      pp.off_pin[SIDE_MAIN], pp.off_pin[SIDE_OTHER]);
	ck_assert_uint_eq(pp.on_waker_cpu[0] + pp.on_waker_cpu[1], 0);
	ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof(s), &s),
			 0);
	ck_assert_msg(CPU_EQUAL(&s, &want), "main side's affinity changed");
	assert_no_live_states();
}
END_TEST

/*
 * 6. An affinity set by the application while the wakee sleeps is the one
 * it has when it runs, and it runs inside it. The main side (pinned to CPU
 * 0) sets the sleeping other side's affinity, alternately {1} and {0},
 * then swaps to it; the other side checks where it runs and what its
 * affinity is, and swaps back.
 */
struct affinity_run {
	uint32_t word[2];
	atomic_uint tid;
	atomic_int want_cpu;	/* the CPU the other side's mask holds */
	unsigned long rounds;
};

static void *affinity_other(void *arg)
{
	struct affinity_run *ar = arg;
	struct timespec dl;
	unsigned long i;
	cpu_set_t s, want;
	int r, cpu;

	atomic_store(&ar->tid, test_gettid());
	for (i = 0; i <= ar->rounds; i++) {
		dl = ts_in(TEST_WAIT_NS);
		word_store(&ar->word[1], PP_WAITING);
		if (i == 0) {
			r = tofutex_wait(&ar->word[1], PP_WAITING, &dl);
		} else {
			word_store(&ar->word[0], PP_WAKEUP);
			r = tofutex_swap(&ar->word[1], PP_WAITING, &ar->word[0],
					 &dl);
		}
		if (r && r != EAGAIN) {
			TFAIL("other side, round %lu: %d (%s)", i, r,
			      strerror(r));
			return NULL;
		}
		if (i == ar->rounds)
			break;
		cpu = this_cpu();
		want = cpu_set_of(atomic_load(&ar->want_cpu));
		TCHECK(CPU_ISSET(cpu, &want),
		       "round %lu: ran on CPU %d outside its affinity {%d}", i,
		       cpu, atomic_load(&ar->want_cpu));
		r = pthread_getaffinity_np(pthread_self(), sizeof(s), &s);
		TCHECK(r == 0 && CPU_EQUAL(&s, &want),
		       "round %lu: affinity is not the {%d} set while asleep",
		       i, atomic_load(&ar->want_cpu));
	}
	return NULL;
}

START_TEST(test_placement_affinity_kept)
{
	struct affinity_run ar = { .rounds = scaled(AFFINITY_ROUNDS, 20) };
	cpu_set_t pin0 = cpu_set_of(0), s;
	struct tofutex_swap a;
	pthread_t other;
	unsigned long i;
	uint32_t woken;
	bool ok;
	int r;

	ck_assert_msg(online_cpus() >= 2, "needs 2 CPUs, has %d",
		      online_cpus());
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(pin0),
						&pin0), 0);
	ck_assert_int_eq(pthread_create(&other, NULL, affinity_other, &ar), 0);
	WAIT_UNTIL(ok, atomic_load(&ar.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);

	for (i = 0; i < ar.rounds && !tfailed(); i++) {
		wait_asleep_in(atomic_load(&ar.tid),
			       i ? TOFUTEX_IOC_SWAP : TOFUTEX_IOC_WAIT,
			       "its wait");
		atomic_store(&ar.want_cpu, (int)((i + 1) % 2));
		s = cpu_set_of(atomic_load(&ar.want_cpu));
		ck_assert_int_eq(sched_setaffinity((pid_t)atomic_load(&ar.tid),
						   sizeof(s), &s), 0);
		word_store(&ar.word[0], PP_WAITING);
		word_store(&ar.word[1], PP_WAKEUP);
		a = swap_arg(&ar.word[0], PP_WAITING, &ar.word[1]);
		r = raw_swap(&a, &woken);
		ck_assert_msg(r == 0 || r == EAGAIN, "round %lu: SWAP = %d (%s)",
			      i, r, strerror(r));
		ck_assert_uint_eq(woken, 1);
		ck_assert_uint_eq(word_load(&ar.word[0]), PP_WAKEUP);
	}
	/* The other side sleeps in its last swap. */
	word_store(&ar.word[1], PP_WAKEUP);
	ck_assert_int_eq(tofutex_wake(&ar.word[1], 1, NULL), 0);
	ck_assert(join_within(other, NULL, TEST_WAIT_NS));
	tfail_assert();
	assert_no_live_states();
}
END_TEST

/* ---- EAGAIN ---- */

START_TEST(test_wait_eagain)
{
	uint32_t w = 7;
	struct timespec dl = ts_in(TEST_WAIT_NS);

	ck_assert_int_eq(tofutex_wait(&w, 6, &dl), EAGAIN);
	ck_assert_int_eq(tofutex_wait(&w, 6, NULL), EAGAIN);
	assert_no_live_states();
}
END_TEST

/* SWAP whose wait word differs: EAGAIN, and its waiter was woken anyway. */
START_TEST(test_swap_eagain_still_wakes)
{
	uint32_t wait_w = 1, wake_w = 0;
	struct tofutex_swap a;
	struct waiter w;
	uint32_t woken;

	waiter_start(&w, &wake_w, 0);
	a = swap_arg(&wait_w, 0, &wake_w);
	ck_assert_int_eq(raw_swap(&a, &woken), EAGAIN);
	ck_assert_uint_eq(woken, 1);
	ck_assert_int_eq(waiter_join(&w), 0);

	/* Nobody to wake: EAGAIN, woken 0. */
	a = swap_arg(&wait_w, 0, &wake_w);
	ck_assert_int_eq(raw_swap(&a, &woken), EAGAIN);
	ck_assert_uint_eq(woken, 0);
	/* The library's SWAP says EAGAIN as well. */
	ck_assert_int_eq(tofutex_swap(&wait_w, 0, &wake_w, NULL), EAGAIN);
	assert_no_live_states();
}
END_TEST

/*
 * SWAP on one word for both halves: the waiter is woken, the caller sleeps
 * on the same word until the woken thread wakes it back.
 */
struct wake_back {
	uint32_t *word;
	atomic_uint tid;
	atomic_int result;
	atomic_int woke;
};

static void *wake_back_main(void *arg)
{
	struct wake_back *wb = arg;
	struct timespec dl = ts_in(TEST_WAIT_NS);
	unsigned int n = 0;
	int r;

	atomic_store(&wb->tid, test_gettid());
	r = tofutex_wait(wb->word, 0, &dl);
	atomic_store(&wb->result, r);
	if (r == 0 && tofutex_wake(wb->word, 1, &n) == 0)
		atomic_store(&wb->woke, (int)n);
	return NULL;
}

START_TEST(test_swap_same_word)
{
	struct wake_back wb = { .result = -1, .woke = -1 };
	uint32_t word = 0, woken;
	struct tofutex_swap a;
	pthread_t t;
	bool ok;

	wb.word = &word;
	ck_assert_int_eq(pthread_create(&t, NULL, wake_back_main, &wb), 0);
	WAIT_UNTIL(ok, atomic_load(&wb.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&wb.tid), TOFUTEX_IOC_WAIT, "WAIT");

	a = swap_arg(&word, 0, &word);
	ck_assert_int_eq(raw_swap(&a, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&wb.result), 0);
	ck_assert_int_eq(atomic_load(&wb.woke), 1);
	assert_no_live_states();
}
END_TEST

/* ---- Deadlines ---- */

START_TEST(test_wait_deadline)
{
	uint32_t w = 0;
	uint64_t deadline = now_ns() + 100 * NSEC_PER_MSEC, back;
	struct timespec dl = ts_from_ns(deadline);
	struct tofutex_stats before, after;

	before = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_int_eq(tofutex_wait(&w, 0, &dl), ETIMEDOUT);
	back = now_ns();
	ck_assert_msg(back >= deadline, "returned %llu ns before the deadline",
		      (unsigned long long)(deadline - back));
	ck_assert_msg(back - deadline < TEST_WAIT_NS,
		      "returned %llu ns after the deadline",
		      (unsigned long long)(back - deadline));
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.timeouts - before.timeouts, 1);
	ck_assert_uint_eq(after.wait_calls - before.wait_calls, 1);
	assert_no_live_states();
}
END_TEST

/* Past deadlines: ETIMEDOUT at once, but EAGAIN when the value differs. */
START_TEST(test_wait_past_deadline)
{
	uint32_t w = 0;
	struct timespec past = ts_from_ns(now_ns() - NSEC_PER_SEC);

	ck_assert_int_eq(tofutex_wait(&w, 0, &past), ETIMEDOUT);
	ck_assert_int_eq(raw_wait((uintptr_t)&w, 0, TOFUTEX_WAIT_DEADLINE, 0,
				  0), ETIMEDOUT);
	ck_assert_int_eq(tofutex_wait(&w, 1, &past), EAGAIN);
	assert_no_live_states();
}
END_TEST

/* A deadline beyond what the kernel can represent means never. */
START_TEST(test_wait_far_deadline)
{
	uint32_t w = 0;
	struct waiter wt;
	int n = -1;

	ck_assert_int_eq(raw_wait((uintptr_t)&w, 1, TOFUTEX_WAIT_DEADLINE,
				  UINT64_MAX, 0), EAGAIN);
	waiter_start(&wt, &w, 0);
	ck_assert_int_eq(raw_wake((uintptr_t)&w, 1, 0, 0, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(waiter_join(&wt), 0);
	assert_no_live_states();
}
END_TEST

/* SWAP with a past deadline: ETIMEDOUT, and the wake half happened. */
START_TEST(test_swap_deadline)
{
	uint32_t wait_w = 0, wake_w = 0, woken;
	struct tofutex_swap a;
	struct waiter w;
	uint64_t deadline;

	waiter_start(&w, &wake_w, 0);
	a = swap_arg(&wait_w, 0, &wake_w);
	a.deadline_ns = 0;
	ck_assert_int_eq(raw_swap(&a, &woken), ETIMEDOUT);
	ck_assert_uint_eq(woken, 1);
	ck_assert_int_eq(waiter_join(&w), 0);

	/* A future deadline, nobody to wake: sleeps until it. */
	deadline = now_ns() + 50 * NSEC_PER_MSEC;
	a = swap_arg(&wait_w, 0, &wake_w);
	a.deadline_ns = deadline;
	ck_assert_int_eq(raw_swap(&a, &woken), ETIMEDOUT);
	ck_assert_uint_eq(woken, 0);
	ck_assert_uint_ge(now_ns(), deadline);
	assert_no_live_states();
}
END_TEST

/* ---- Signals ---- */

static void signal_thread(pthread_t t)
{
	bool ok;

	ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
	WAIT_UNTIL(ok, atomic_load(&sig_count) > 0, TEST_WAIT_NS);
	ck_assert_msg(ok, "the signal handler did not run");
}

/*
 * _i = 0: handler without SA_RESTART, WAIT fails with EINTR. 1: with
 * SA_RESTART, WAIT is restarted and still sleeps until woken.
 */
START_TEST(test_wait_signal)
{
	bool restart = _i;
	uint32_t w = 0;
	struct waiter wt;
	int n = -1;

	install_sigusr1(restart);
	waiter_start(&wt, &w, 0);
	signal_thread(wt.thread);
	if (!restart) {
		ck_assert_int_eq(waiter_join(&wt), EINTR);
	} else {
		wait_asleep_in(atomic_load(&wt.tid), TOFUTEX_IOC_WAIT,
			       "the restarted WAIT");
		ck_assert(waiter_still_asleep(&wt));
		ck_assert_int_eq(raw_wake((uintptr_t)&w, 1, 0, 0, &n), 0);
		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(waiter_join(&wt), 0);
	}
	assert_no_live_states();
}
END_TEST

/* A thread in SWAP, through the raw ABI. */
struct swapper {
	uint32_t *wait_w, *wake_w;
	atomic_uint tid;
	atomic_int result;
	atomic_uint woken;
	pthread_t thread;
};

static void *swapper_main(void *arg)
{
	struct swapper *s = arg;
	struct tofutex_swap a = swap_arg(s->wait_w, 0, s->wake_w);
	uint32_t woken;
	int r;

	atomic_store(&s->tid, test_gettid());
	r = raw_swap(&a, &woken);
	atomic_store(&s->woken, woken);
	atomic_store(&s->result, r);
	return NULL;
}

/*
 * A signal to a thread asleep in SWAP under SA_RESTART: _i = 0, SWAP woke
 * a waiter, so a restart would wake a second one: EINTR with woken 1.
 * _i = 1, SWAP woke nobody: restarted, it sleeps on until woken.
 */
START_TEST(test_swap_signal)
{
	uint32_t wait_w = 0, wake_w = 0;
	struct swapper s = { .wait_w = &wait_w, .wake_w = &wake_w };
	struct waiter w;
	bool ok;
	int n = -1;

	memset(&w, 0, sizeof(w));
	install_sigusr1(true);
	atomic_store(&s.result, -1);
	if (_i == 0)
		waiter_start(&w, &wake_w, 0);
	ck_assert_int_eq(pthread_create(&s.thread, NULL, swapper_main, &s), 0);
	WAIT_UNTIL(ok, atomic_load(&s.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&s.tid), TOFUTEX_IOC_SWAP, "SWAP");
	if (_i == 0)
		ck_assert_int_eq(waiter_join(&w), 0);
	signal_thread(s.thread);
	if (_i == 0) {
		ck_assert(join_within(s.thread, NULL, TEST_WAIT_NS));
		ck_assert_int_eq(atomic_load(&s.result), EINTR);
		ck_assert_uint_eq(atomic_load(&s.woken), 1);
	} else {
		wait_asleep_in(atomic_load(&s.tid), TOFUTEX_IOC_SWAP,
			       "the restarted SWAP");
		ck_assert_int_eq(atomic_load(&s.result), -1);
		ck_assert_int_eq(raw_wake((uintptr_t)&wait_w, 1, 0, 0, &n), 0);
		ck_assert_int_eq(n, 1);
		ck_assert(join_within(s.thread, NULL, TEST_WAIT_NS));
		ck_assert_int_eq(atomic_load(&s.result), 0);
		ck_assert_uint_eq(atomic_load(&s.woken), 0);
	}
	assert_no_live_states();
}
END_TEST

/*
 * SWAP on one CPU, and the wakee does not swap back: it preempts the
 * caller (wake_local.c), works, and sleeps elsewhere until a deadline, so
 * the caller runs again without having been woken. It must go to sleep
 * then and stay asleep until its own wake-up, which it then gets.
 */
struct one_cpu_swap {
	uint32_t wait_w, wake_w, idle_w;
	struct swapper s;
	atomic_uint wakee_tid;
	atomic_int wakee_result;
};

static void *one_cpu_swapper(void *arg)
{
	struct one_cpu_swap *oc = arg;
	cpu_set_t pin0 = cpu_set_of(0);

	TCHECK(pthread_setaffinity_np(pthread_self(), sizeof(pin0), &pin0) == 0,
	       "pinning the swapper");
	return swapper_main(&oc->s);
}

static void *one_cpu_wakee(void *arg)
{
	struct one_cpu_swap *oc = arg;
	cpu_set_t pin0 = cpu_set_of(0);
	struct timespec dl = ts_in(TEST_WAIT_NS);
	int r;

	TCHECK(pthread_setaffinity_np(pthread_self(), sizeof(pin0), &pin0) == 0,
	       "pinning the wakee");
	atomic_store(&oc->wakee_tid, test_gettid());
	do {
		r = tofutex_wait(&oc->wake_w, 0, &dl);
	} while (r == 0 && word_load(&oc->wake_w) == 0);
	if (r && r != EAGAIN) {
		atomic_store(&oc->wakee_result, r);
		return NULL;
	}
	busy_work(CONTENDED_WORK);
	dl = ts_in(50 * NSEC_PER_MSEC);
	r = tofutex_wait(&oc->idle_w, 0, &dl);
	atomic_store(&oc->wakee_result, r);
	return NULL;
}

START_TEST(test_swap_one_cpu_no_swap_back)
{
	struct one_cpu_swap oc = { 0 };
	pthread_t wakee;
	bool ok;
	int n = -1;

	oc.s.wait_w = &oc.wait_w;
	oc.s.wake_w = &oc.wake_w;
	atomic_store(&oc.s.result, -1);
	atomic_store(&oc.wakee_result, -1);
	ck_assert_int_eq(pthread_create(&wakee, NULL, one_cpu_wakee, &oc), 0);
	WAIT_UNTIL(ok, atomic_load(&oc.wakee_tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&oc.wakee_tid), TOFUTEX_IOC_WAIT, "WAIT");
	word_store(&oc.wake_w, 1);
	ck_assert_int_eq(pthread_create(&oc.s.thread, NULL, one_cpu_swapper,
					&oc), 0);
	ck_assert(join_within(wakee, NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_int_eq(atomic_load(&oc.wakee_result), ETIMEDOUT);

	wait_asleep_in(atomic_load(&oc.s.tid), TOFUTEX_IOC_SWAP, "SWAP");
	ck_assert_int_eq(atomic_load(&oc.s.result), -1);
	word_store(&oc.wait_w, 1);
	ck_assert_int_eq(raw_wake((uintptr_t)&oc.wait_w, 1, 0, 0, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert(join_within(oc.s.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&oc.s.result), 0);
	ck_assert_uint_eq(atomic_load(&oc.s.woken), 1);
	assert_no_live_states();
}
END_TEST

/* ---- Wake counts ---- */

#define NR_WAITERS 4

/*
 * Four waiters queued in a known order: a count of 0 wakes nobody, 1 wakes
 * the first to arrive, "all" the rest, and then nobody is left.
 */
START_TEST(test_wake_counts)
{
	struct waiter w[NR_WAITERS];
	struct tofutex_stats before, after;
	uint32_t word = 0, unused = 0;
	unsigned int n;
	int i;

	before = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_int_eq(tofutex_wake(&unused, 1, &n), 0);
	ck_assert_uint_eq(n, 0);
	for (i = 0; i < NR_WAITERS; i++)
		waiter_start(&w[i], &word, 0);

	ck_assert_int_eq(tofutex_wake(&word, 0, &n), 0);
	ck_assert_uint_eq(n, 0);
	for (i = 0; i < NR_WAITERS; i++)
		ck_assert_msg(waiter_still_asleep(&w[i]),
			      "waiter %d woke on a count of 0", i);

	ck_assert_int_eq(tofutex_wake(&word, 1, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(waiter_join(&w[0]), 0);
	for (i = 1; i < NR_WAITERS; i++)
		ck_assert_msg(waiter_still_asleep(&w[i]),
			      "waiter %d woke although 1 of %d was asked for",
			      i, NR_WAITERS);

	ck_assert_int_eq(tofutex_wake(&word, UINT32_MAX, &n), 0);
	ck_assert_uint_eq(n, NR_WAITERS - 1);
	for (i = 1; i < NR_WAITERS; i++)
		ck_assert_int_eq(waiter_join(&w[i]), 0);

	ck_assert_int_eq(tofutex_wake(&word, UINT32_MAX, &n), 0);
	ck_assert_uint_eq(n, 0);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.wake_calls - before.wake_calls, 5);
	ck_assert_uint_eq(after.wait_calls - before.wait_calls, NR_WAITERS);
	assert_no_live_states();
}
END_TEST

/* ---- Bad input ---- */

enum bad_addr {
	ADDR_GOOD,
	ADDR_NULL,
	ADDR_MISALIGNED_1,
	ADDR_MISALIGNED_2,
	ADDR_MISALIGNED_3,
	ADDR_UNMAPPED,
	ADDR_KERNEL_TEXT,
	ADDR_KERNEL_DIRECT,
	ADDR_NON_CANONICAL,
};

static const char *const addr_names[] = {
	[ADDR_GOOD] = "good",
	[ADDR_NULL] = "NULL",
	[ADDR_MISALIGNED_1] = "addr % 4 == 1",
	[ADDR_MISALIGNED_2] = "addr % 4 == 2",
	[ADDR_MISALIGNED_3] = "addr % 4 == 3",
	[ADDR_UNMAPPED] = "unmapped page",
	[ADDR_KERNEL_TEXT] = "kernel text",
	[ADDR_KERNEL_DIRECT] = "kernel direct map",
	[ADDR_NON_CANONICAL] = "non-canonical",
};

/* @good is a valid word; the others are made from it or fixed. */
static uint64_t bad_addr(enum bad_addr which, uint32_t *good)
{
	switch (which) {
	case ADDR_GOOD:
		return (uintptr_t)good;
	case ADDR_NULL:
		return 0;
	case ADDR_MISALIGNED_1:
	case ADDR_MISALIGNED_2:
	case ADDR_MISALIGNED_3:
		return (uintptr_t)good + (which - ADDR_MISALIGNED_1 + 1);
	case ADDR_UNMAPPED:
		return unmapped_addr();
	case ADDR_KERNEL_TEXT:
		return KERNEL_TEXT_ADDR;
	case ADDR_KERNEL_DIRECT:
		return KERNEL_DIRECT_ADDR;
	case ADDR_NON_CANONICAL:
		return NON_CANONICAL_ADDR;
	}
	return 0;
}

/*
 * Addresses for WAIT (the word is read: EFAULT for any address that
 * cannot be) and WAKE (the word is never touched, as with futex(2)
 * FUTEX_WAKE: an address nobody waits on wakes nobody, even an unmapped
 * one; only addresses outside user space fail).
 */
static const struct {
	enum bad_addr addr;
	int wait_err;
	int wake_err;
} addr_cases[] = {
	{ ADDR_NULL,		EFAULT, 0 },
	{ ADDR_MISALIGNED_1,	EINVAL, EINVAL },
	{ ADDR_MISALIGNED_2,	EINVAL, EINVAL },
	{ ADDR_MISALIGNED_3,	EINVAL, EINVAL },
	{ ADDR_UNMAPPED,	EFAULT, 0 },
	{ ADDR_KERNEL_TEXT,	EFAULT, EFAULT },
	{ ADDR_KERNEL_DIRECT,	EFAULT, EFAULT },
	{ ADDR_NON_CANONICAL,	EFAULT, EFAULT },
};

#define NR_ADDR_CASES ((int)(sizeof(addr_cases) / sizeof(addr_cases[0])))

START_TEST(test_bad_addr_wait_wake)
{
	uint32_t good[2] = { 0, 0 };
	int i, r, n;

	for (i = 0; i < NR_ADDR_CASES; i++) {
		uint64_t a = bad_addr(addr_cases[i].addr, &good[0]);

		r = raw_wait(a, 0, TOFUTEX_WAIT_DEADLINE, 0, 0);
		ck_assert_msg(r == addr_cases[i].wait_err,
			      "WAIT %s: %s, want %s",
			      addr_names[addr_cases[i].addr], strerror(r),
			      strerror(addr_cases[i].wait_err));
		n = -1;
		r = raw_wake(a, 1, 0, 0, &n);
		ck_assert_msg(r == addr_cases[i].wake_err,
			      "WAKE %s: %s, want %s",
			      addr_names[addr_cases[i].addr], strerror(r),
			      strerror(addr_cases[i].wake_err));
		if (!r)
			ck_assert_int_eq(n, 0);
	}
	assert_no_live_states();
}
END_TEST

/* Flags, reserved fields, padding and the argument pointer itself. */
START_TEST(test_bad_fields)
{
	uint32_t w = 0, other = 1, woken;
	struct tofutex_swap a;
	static const uint32_t bad_flags[] = { 1U << 2, 1U << 3, 1U << 31 };
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		ck_assert_int_eq(raw_wait((uintptr_t)&w, 0,
					  TOFUTEX_WAIT_DEADLINE | bad_flags[i],
					  0, 0), EINVAL);
		a = swap_arg(&w, 0, &other);
		a.flags |= bad_flags[i];
		ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);
	}
	/* A clock without a deadline. */
	ck_assert_int_eq(raw_wait((uintptr_t)&w, 0,
				  TOFUTEX_WAIT_CLOCK_REALTIME, 0, 0), EINVAL);
	a = swap_arg(&w, 0, &other);
	a.flags = TOFUTEX_WAIT_CLOCK_REALTIME;
	ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);
	ck_assert_int_eq(raw_wait((uintptr_t)&w, 0, TOFUTEX_WAIT_DEADLINE, 0,
				  1), EINVAL);
	ck_assert_int_eq(raw_wake((uintptr_t)&w, 1, 1U << 0, 0, &n), EINVAL);
	ck_assert_int_eq(raw_wake((uintptr_t)&w, 1, 1U << 31, 0, &n), EINVAL);
	ck_assert_int_eq(raw_wake((uintptr_t)&w, 1, 0, 1, &n), EINVAL);
	a = swap_arg(&w, 0, &other);
	a.pad = 1;
	ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);
	a = swap_arg(&w, 0, &other);
	a.reserved = 1;
	ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);

	errno = 0;
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_WAIT, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_WAKE, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_SWAP, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_SWAP,
			       (void *)(uintptr_t)KERNEL_TEXT_ADDR), -1);
	ck_assert_int_eq(errno, EFAULT);
	assert_no_live_states();
}
END_TEST

/* WAIT only reads its word: a read-only page works. */
START_TEST(test_wait_read_only_word)
{
	uint32_t *ro = ro_word(5);

	ck_assert_int_eq(raw_wait((uintptr_t)ro, 5, TOFUTEX_WAIT_DEADLINE, 0,
				  0), ETIMEDOUT);
	ck_assert_int_eq(raw_wait((uintptr_t)ro, 4, 0, 0, 0), EAGAIN);
	ck_assert_int_eq(munmap(ro, (size_t)sysconf(_SC_PAGESIZE)), 0);
	assert_no_live_states();
}
END_TEST

/*
 * A SWAP whose arguments are bad must wake nobody: a waiter sleeps on a
 * good wake word throughout, and must still be asleep after each call.
 * Bad wake addresses with a wait word that differs: the wait half returns
 * EAGAIN at once (an unmapped wake word has no waiters: nothing to wake).
 */
START_TEST(test_bad_addr_swap)
{
	uint32_t good[2] = { 0, 0 }, wake_w = 0, differs = 1, woken;
	struct tofutex_swap a;
	struct waiter w;
	int i, r, want, n = -1;

	waiter_start(&w, &wake_w, 0);
	for (i = 0; i < NR_ADDR_CASES; i++) {
		a = swap_arg(&good[0], 0, &wake_w);
		a.wait_uaddr = bad_addr(addr_cases[i].addr, &good[0]);
		r = raw_swap(&a, &woken);
		ck_assert_msg(r == addr_cases[i].wait_err,
			      "SWAP, wait word %s: %s, want %s",
			      addr_names[addr_cases[i].addr], strerror(r),
			      strerror(addr_cases[i].wait_err));
		ck_assert_msg(waiter_still_asleep(&w),
			      "SWAP with a bad wait word (%s) woke a waiter",
			      addr_names[addr_cases[i].addr]);

		a = swap_arg(&differs, 0, &good[0]);
		a.wake_uaddr = bad_addr(addr_cases[i].addr, &good[0]);
		want = addr_cases[i].wake_err ? addr_cases[i].wake_err : EAGAIN;
		r = raw_swap(&a, &woken);
		ck_assert_msg(r == want, "SWAP, wake word %s: %s, want %s",
			      addr_names[addr_cases[i].addr], strerror(r),
			      strerror(want));
		if (r == EAGAIN)
			ck_assert_uint_eq(woken, 0);
	}
	ck_assert_int_eq(raw_wake((uintptr_t)&wake_w, 1, 0, 0, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(waiter_join(&w), 0);
	assert_no_live_states();
}
END_TEST

/* ---- A word used as a TO lock and as a wait word at once ---- */

struct lock_user {
	tofutex_mutex_t *m;
	atomic_uint tid;
	atomic_bool locked;
	atomic_bool release;
	atomic_int result;
	pthread_t thread;
};

/* Take the mutex, hold it (asleep) until told to release it. */
static void *lock_user_main(void *arg)
{
	struct lock_user *u = arg;
	int r;

	atomic_store(&u->tid, test_gettid());
	r = tofutex_mutex_lock(u->m);
	atomic_store(&u->result, r);
	if (r)
		return NULL;
	atomic_store(&u->locked, true);
	while (!atomic_load(&u->release))
		sleep_ns(200 * NSEC_PER_USEC);
	r = tofutex_mutex_unlock(u->m);
	TCHECK(r == 0, "unlock = %d (%s)", r, strerror(r));
	return NULL;
}

static void lock_user_start(struct lock_user *u, tofutex_mutex_t *m)
{
	bool ok;

	memset(u, 0, sizeof(*u));
	u->m = m;
	atomic_store(&u->result, -1);
	ck_assert_int_eq(pthread_create(&u->thread, NULL, lock_user_main, u),
			 0);
	WAIT_UNTIL(ok, atomic_load(&u->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
}

/*
 * A holder owns a TO lock and a contender sleeps in LOCK on it, so the
 * word has a lock state: WAIT, WAKE and both halves of SWAP on it fail
 * with EINVAL, and the SWAP wakes nobody.
 */
START_TEST(test_wait_on_lock_word)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct lock_user holder, contender;
	uint32_t wake_w = 0, differs = 1, woken, word;
	struct tofutex_swap a;
	struct waiter w;
	bool ok;
	int n = -1;

	lock_user_start(&holder, &m);
	WAIT_UNTIL(ok, atomic_load(&holder.locked), TEST_WAIT_NS);
	ck_assert(ok);
	lock_user_start(&contender, &m);
	wait_asleep_in(atomic_load(&contender.tid), TOFUTEX_IOC_LOCK, "LOCK");
	waiter_start(&w, &wake_w, 0);

	word = word_load(&m.word);
	ck_assert_int_eq(raw_wait((uintptr_t)&m.word, word,
				  TOFUTEX_WAIT_DEADLINE, 0, 0), EINVAL);
	ck_assert_int_eq(raw_wake((uintptr_t)&m.word, 1, 0, 0, &n), EINVAL);
	a = swap_arg(&m.word, word, &wake_w);
	ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);
	ck_assert_uint_eq(woken, 0);
	a = swap_arg(&differs, 0, &m.word);
	ck_assert_int_eq(raw_swap(&a, &woken), EINVAL);
	ck_assert_uint_eq(woken, 0);
	ck_assert_msg(waiter_still_asleep(&w), "a failed SWAP woke a waiter");

	atomic_store(&holder.release, true);
	ck_assert(join_within(holder.thread, NULL, TEST_WAIT_NS));
	atomic_store(&contender.release, true);
	ck_assert(join_within(contender.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&contender.result), 0);
	ck_assert_int_eq(tofutex_wake(&wake_w, 1, NULL), 0);
	ck_assert_int_eq(waiter_join(&w), 0);
	tfail_assert();
	assert_no_live_states();
}
END_TEST

/* The other way round: LOCK and UNLOCK on a word a thread waits on. */
struct tid_waiter {
	uint32_t word;
	atomic_uint tid;
	atomic_bool go;
	atomic_int result;
};

static void *tid_waiter_main(void *arg)
{
	struct tid_waiter *t = arg;
	struct timespec dl;
	uint32_t tid = test_gettid();

	atomic_store(&t->tid, tid);
	while (!atomic_load(&t->go))
		sleep_ns(100 * NSEC_PER_USEC);
	dl = ts_in(TEST_WAIT_NS);
	atomic_store(&t->result, tofutex_wait(&t->word, tid, &dl));
	return NULL;
}

START_TEST(test_lock_on_wait_word)
{
	struct tid_waiter t = { .result = -1 };
	struct tofutex_lock l;
	struct tofutex_unlock u;
	pthread_t th;
	bool ok;

	ck_assert_int_eq(pthread_create(&th, NULL, tid_waiter_main, &t), 0);
	WAIT_UNTIL(ok, atomic_load(&t.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	/* The word names a live thread, so LOCK cannot take it in passing. */
	word_store(&t.word, atomic_load(&t.tid));
	atomic_store(&t.go, true);
	wait_asleep_in(atomic_load(&t.tid), TOFUTEX_IOC_WAIT, "WAIT");

	/*
	 * A LOCK whose deadline has passed ends with ETIMEDOUT before it
	 * looks at the word's state: the deadline is only the bound.
	 */
	memset(&l, 0, sizeof(l));
	l.uaddr = (uintptr_t)&t.word;
	l.flags = TOFUTEX_LOCK_DEADLINE;
	l.deadline_ns = now_ns() + TEST_WAIT_NS;
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_LOCK, &l), -1);
	ck_assert_int_eq(errno, EINVAL);
	memset(&u, 0, sizeof(u));
	u.uaddr = (uintptr_t)&t.word;
	ck_assert_int_eq(ioctl(dev_fd(), TOFUTEX_IOC_UNLOCK, &u), -1);
	ck_assert_int_eq(errno, EINVAL);

	ck_assert_int_eq(tofutex_wake(&t.word, 1, NULL), 0);
	ck_assert(join_within(th, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&t.result), 0);
	assert_no_live_states();
}
END_TEST

static Suite *waitwake_suite(void)
{
	Suite *s = suite_create("waitwake");
	TCase *tc;

	/*
	 * Up to 100,000 round trips of two cross-CPU wake-ups each, for at
	 * most PING_PONG_BUDGET_NS: the bound only catches a hang.
	 */
	tc = tcase_create("ping-pong");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, 4 * TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_ping_pong, 0, 3);
	suite_add_tcase(s, tc);

	tc = tcase_create("contended");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_ping_pong_contended);
	suite_add_tcase(s, tc);

	tc = tcase_create("eagain");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_wait_eagain);
	tcase_add_test(tc, test_swap_eagain_still_wakes);
	tcase_add_test(tc, test_swap_same_word);
	suite_add_tcase(s, tc);

	tc = tcase_create("deadlines-signals");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_wait_deadline);
	tcase_add_test(tc, test_wait_past_deadline);
	tcase_add_test(tc, test_wait_far_deadline);
	tcase_add_test(tc, test_swap_deadline);
	tcase_add_loop_test(tc, test_wait_signal, 0, 2);
	tcase_add_loop_test(tc, test_swap_signal, 0, 2);
	tcase_add_test(tc, test_swap_one_cpu_no_swap_back);
	suite_add_tcase(s, tc);

	tc = tcase_create("wake-counts");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_wake_counts);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad-input");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_bad_addr_wait_wake);
	tcase_add_test(tc, test_bad_fields);
	tcase_add_test(tc, test_wait_read_only_word);
	tcase_add_test(tc, test_bad_addr_swap);
	tcase_add_test(tc, test_wait_on_lock_word);
	tcase_add_test(tc, test_lock_on_wait_word);
	suite_add_tcase(s, tc);

	tc = tcase_create("placement");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_placement_same_cpu);
	tcase_add_test(tc, test_placement_excluded_cpu);
	tcase_add_test(tc, test_placement_affinity_kept);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(waitwake_suite());
}
