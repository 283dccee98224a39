// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the lock benchmark: tofutex's TO lock against the locks
 * people use today, modelled on the TO futex RFC's microbenchmark.
 *
 * T threads share a fixed total of lock operations (each does ops/T). One
 * operation: lock; read the protected counter; K units of critical
 * section; write the counter + 1; unlock; W units of work. A unit is one
 * `pause` instruction (the RFC's choice) or a plain counted loop of about
 * the same length, calibrated at start-up; every point runs with both,
 * because under emulation `pause` is not the cheap hint it is on hardware
 * (see bench/README.md). The counter is read and written
 * non-atomically on either side of the critical section, so a lock that
 * lets two threads in loses increments; every run checks it is exact and
 * the benchmark stops, printing no numbers for that run, if it is not.
 *
 * Implementations, by name: tofutex (libtofutex), pthread (glibc's
 * default mutex), adaptive (PTHREAD_MUTEX_ADAPTIVE_NP), pi
 * (PTHREAD_PRIO_INHERIT), futex3 (the three-state futex mutex of Drepper's
 * "Futexes Are Tricky", written here and counting its own futex calls) and
 * tas (a test-and-test-and-set spinlock).
 *
 * Output, on stdout: CSV lines, each starting with "bench_lock," (one
 * "run" record per repetition of a point, "uncontended" records and "meta"
 * records describing the method), interleaved with human-readable tables. bench/report-lock.sh turns the
 * CSV into tables and charts on the host. `bench_lock --help` lists the
 * options.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <tofutex.h>

/* Defaults; see --help and README.md for how they were chosen. */
#define DEF_THREADS	"1,2,4,8,16"
#define DEF_OPS		30000UL
#define DEF_REPS	3U
#define DEF_CS		5U
#define DEF_WORK	"10,0"
#define DEF_SAMPLE	16U
#define DEF_UNCONTENDED	1000000UL
#define DEF_BUDGET	0.5	/* seconds per run */
/* Operations between two looks at the clock when latency is not sampled. */
#define CHECK_EVERY	16U

#define MAX_LIST	16
#define MAX_NAMES	16	/* >= NR_IMPLS, NR_UNITS */
#define MAX_THREADS	1024U
#define MAX_REPS	100U
#define MAX_UNITS	1000000U
#define NSEC_PER_SEC	1000000000ULL

/*
 * A ratio within this distance of 1.00 is a tie: the same ratio differs by
 * up to this much between two `make bench` boots.
 */
#define TIE_BAND	0.25

#define CSV_TAG		"bench_lock"

enum impl_id {
	IMPL_TOFUTEX,
	IMPL_PTHREAD,
	IMPL_ADAPTIVE,
	IMPL_PI,
	IMPL_FUTEX3,
	IMPL_TAS,
	IMPL_NONE,	/* not in "all": proves the counter check can fail */
	NR_IMPLS
};

static const struct {
	const char *name;
	const char *what;
} impls[NR_IMPLS] = {
	[IMPL_TOFUTEX]	= { "tofutex", "tofutex_mutex_t (libtofutex, /dev/tofutex)" },
	[IMPL_PTHREAD]	= { "pthread", "glibc pthread_mutex_t, default type" },
	[IMPL_ADAPTIVE]	= { "adaptive", "glibc PTHREAD_MUTEX_ADAPTIVE_NP (spins, then futex)" },
	[IMPL_PI]	= { "pi", "glibc PTHREAD_PRIO_INHERIT (FUTEX_LOCK_PI)" },
	[IMPL_FUTEX3]	= { "futex3", "three-state futex mutex, Drepper's mutex3" },
	[IMPL_TAS]	= { "tas", "test-and-test-and-set spinlock, pause while spinning" },
	[IMPL_NONE]	= { "none", "no lock (not in \"all\"): shows the counter check at\n"
			    "                                   work; threads that overlap lose counts, exit 2" },
};

enum unit_kind {
	UNIT_PAUSE,
	UNIT_LOOP,
	NR_UNITS
};

_Static_assert(NR_IMPLS <= MAX_NAMES && NR_UNITS <= MAX_NAMES,
	       "parse_names() needs MAX_NAMES >= every name list");

static const char *const unit_names[NR_UNITS] = {
	[UNIT_PAUSE] = "pause",
	[UNIT_LOOP] = "loop",
};

struct options {
	unsigned int threads[MAX_LIST];
	unsigned int n_threads;
	unsigned long ops;
	unsigned int reps;
	enum impl_id impl[NR_IMPLS];
	unsigned int n_impl;
	unsigned int cs;
	unsigned int work[MAX_LIST];
	unsigned int n_work;
	enum unit_kind unit[NR_UNITS];
	unsigned int n_unit;
	unsigned long loop_iters;	/* 0: calibrate */
	unsigned int sample;		/* every sample-th op; 0: none */
	unsigned long uncontended;	/* ops of the 1-thread test; 0: none */
	double budget;			/* seconds a run may take; 0: no limit */
	const char *csv_path;
	const char *emulation;		/* NULL: detect */
};

/* Iterations of the empty loop that make one "loop" unit. */
static unsigned long loop_iters;

static FILE *csv_file;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("bench_lock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* ---- units of work ------------------------------------------------------ */

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
#error "bench_lock: no spin-wait hint instruction known for this architecture"
#endif
}

/*
 * The empty asm makes the counter live in a register the compiler cannot
 * reason about, so the loop is neither removed nor vectorised, and it
 * touches no memory: a loop unit costs the same alone and under contention.
 */
static inline void spin_loop(unsigned long n)
{
	for (unsigned long j = 0; j < n; j++)
		__asm__ volatile("" : "+r"(j));
}

static inline void spend(enum unit_kind kind, unsigned int n)
{
	if (kind == UNIT_PAUSE) {
		for (unsigned int i = 0; i < n; i++)
			cpu_pause();
	} else {
		for (unsigned int i = 0; i < n; i++)
			spin_loop(loop_iters);
	}
}

/*
 * Calibration: the fastest of many short trials. A trial is short enough
 * (tens of microseconds natively, a few hundred under emulation) that
 * most trials run without being preempted even on a loaded machine; the
 * minimum is then the undisturbed cost. Long trials were all disturbed on
 * a busy host and made the loop unit come out 10x too short.
 */
#define CAL_TRIALS	64

static double ns_per_pause(void)
{
	const unsigned int n = 1000;
	double best = 1e30;

	for (int trial = 0; trial < CAL_TRIALS; trial++) {
		uint64_t t0 = now_ns();

		for (unsigned int i = 0; i < n; i++)
			cpu_pause();
		double ns = (double)(now_ns() - t0) / n;

		if (ns < best)
			best = ns;
	}
	return best;
}

static double ns_per_loop_iter(void)
{
	const unsigned long n = 50000;
	double best = 1e30;

	for (int trial = 0; trial < CAL_TRIALS; trial++) {
		uint64_t t0 = now_ns();

		spin_loop(n);
		double ns = (double)(now_ns() - t0) / (double)n;

		if (ns < best)
			best = ns;
	}
	return best;
}

static double ns_per_clock_gettime(void)
{
	const unsigned int n = 1000;
	double best = 1e30;

	for (int trial = 0; trial < CAL_TRIALS; trial++) {
		uint64_t t0 = now_ns();

		for (unsigned int i = 0; i < n; i++)
			(void)now_ns();
		double ns = (double)(now_ns() - t0) / n;

		if (ns < best)
			best = ns;
	}
	return best;
}

/* ---- the locks ----------------------------------------------------------- */

/*
 * The lock and the counter it protects share a cache line, as a mutex and
 * its data usually do; the line is aligned so nothing else shares it.
 */
struct bench_lock {
	_Alignas(64) union {
		pthread_mutex_t pthread;
		tofutex_mutex_t tofutex;
		uint32_t word;		/* futex3, tas */
	} u;
	unsigned long counter;
};

static long sys_futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/*
 * futex3: "Futexes Are Tricky" (U. Drepper), mutex take 3. The word is 0
 * unlocked, 1 locked, 2 locked with possible waiters. A locker that finds
 * it taken marks it 2 and sleeps while it stays 2; an unlocker that finds
 * 2 (decrement did not reach 0) clears it and wakes one waiter. Every
 * futex call is counted, as the RFC's table counts syscalls.
 */
static inline void futex3_lock(uint32_t *w, uint64_t *waits)
{
	uint32_t c = 0;

	if (__atomic_compare_exchange_n(w, &c, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		(*waits)++;
		if (sys_futex(w, FUTEX_WAIT_PRIVATE, 2) && errno != EAGAIN &&
		    errno != EINTR)
			die("futex3: FUTEX_WAIT: %s", strerror(errno));
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	}
}

static inline void futex3_unlock(uint32_t *w, uint64_t *wakes)
{
	if (__atomic_fetch_sub(w, 1, __ATOMIC_RELEASE) != 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		(*wakes)++;
		if (sys_futex(w, FUTEX_WAKE_PRIVATE, 1) < 0)
			die("futex3: FUTEX_WAKE: %s", strerror(errno));
	}
}

/*
 * tas: the bare compare-and-swap lock, so its uncontended cost is the
 * floor the others are read against. Waiters spin reading the word (no
 * cache-line ping-pong while it is held) with `pause`, as every production
 * spinlock does, whatever the unit kind of the run.
 */
static inline void tas_lock(uint32_t *w)
{
	for (;;) {
		uint32_t z = 0;

		if (__atomic_compare_exchange_n(w, &z, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		while (__atomic_load_n(w, __ATOMIC_RELAXED))
			cpu_pause();
	}
}

static inline void tas_unlock(uint32_t *w)
{
	__atomic_store_n(w, 0, __ATOMIC_RELEASE);
}

static void lock_init(enum impl_id impl, struct bench_lock *l)
{
	pthread_mutexattr_t attr;
	int err = 0;

	memset(l, 0, sizeof(*l));
	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_init(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
		err = pthread_mutex_init(&l->u.pthread, NULL);
		break;
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutexattr_init(&attr);
		if (!err && impl == IMPL_ADAPTIVE)
			err = pthread_mutexattr_settype(&attr,
					PTHREAD_MUTEX_ADAPTIVE_NP);
		if (!err && impl == IMPL_PI)
			err = pthread_mutexattr_setprotocol(&attr,
					PTHREAD_PRIO_INHERIT);
		if (!err)
			err = pthread_mutex_init(&l->u.pthread, &attr);
		pthread_mutexattr_destroy(&attr);
		break;
	case IMPL_FUTEX3:
	case IMPL_TAS:
	case IMPL_NONE:
	case NR_IMPLS:
		break;
	}
	if (err)
		die("%s: init: %s", impls[impl].name, strerror(err));
}

static void lock_destroy(enum impl_id impl, struct bench_lock *l)
{
	int err = 0;

	if (impl == IMPL_TOFUTEX)
		err = tofutex_mutex_destroy(&l->u.tofutex);
	else if (impl == IMPL_PTHREAD || impl == IMPL_ADAPTIVE ||
		 impl == IMPL_PI)
		err = pthread_mutex_destroy(&l->u.pthread);
	if (err)
		die("%s: destroy: %s", impls[impl].name, strerror(err));
}

/* ---- one run --------------------------------------------------------------- */

struct run;

/* Cache-line aligned: workers write their own results while others run. */
struct worker {
	_Alignas(64) struct run *run;
	pthread_t thread;
	unsigned long ops;
	uint64_t start_ns, end_ns;
	uint64_t *lat;			/* sampled acquisition latencies */
	size_t n_lat;
	uint64_t futex_waits, futex_wakes;
	long vcsw, ivcsw;
	unsigned long done;		/* operations completed */
	bool cut;			/* stopped at the run's deadline */
};

struct run {
	enum impl_id impl;
	enum unit_kind unit;
	unsigned int cs, work, sample;
	unsigned int check;		/* look at the clock every check ops */
	uint64_t budget_ns;		/* 0: no deadline */
	uint64_t deadline_ns;		/* 0: none (yet); atomic */
	struct bench_lock lock;
	pthread_barrier_t barrier;
};

static inline __attribute__((always_inline)) void
do_lock(const enum impl_id impl, struct bench_lock *l, struct worker *w)
{
	int err = 0;

	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_lock(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutex_lock(&l->u.pthread);
		break;
	case IMPL_FUTEX3:
		futex3_lock(&l->u.word, &w->futex_waits);
		break;
	case IMPL_TAS:
		tas_lock(&l->u.word);
		break;
	case IMPL_NONE:
	case NR_IMPLS:
		break;
	}
	if (__builtin_expect(err != 0, 0))
		die("%s: lock: %s", impls[impl].name, strerror(err));
}

static inline __attribute__((always_inline)) void
do_unlock(const enum impl_id impl, struct bench_lock *l, struct worker *w)
{
	int err = 0;

	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_unlock(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutex_unlock(&l->u.pthread);
		break;
	case IMPL_FUTEX3:
		futex3_unlock(&l->u.word, &w->futex_wakes);
		break;
	case IMPL_TAS:
		tas_unlock(&l->u.word);
		break;
	case IMPL_NONE:
	case NR_IMPLS:
		break;
	}
	if (__builtin_expect(err != 0, 0))
		die("%s: unlock: %s", impls[impl].name, strerror(err));
}

/*
 * The measured loop, inlined once per (implementation, unit) pair so that
 * neither choice costs a call or a branch the other implementations do not
 * pay. The clock is read on every check-th operation only - the reads
 * would otherwise dominate an uncontended lock - and that read serves
 * twice: as the start of a sampled acquisition latency, and to stop at
 * the run's deadline, so that one pathologically slow implementation
 * cannot hold the whole benchmark up.
 */
static inline __attribute__((always_inline)) void
worker_loop(struct worker *w, const enum impl_id impl,
	    const enum unit_kind unit)
{
	struct run *r = w->run;
	struct bench_lock *l = &r->lock;
	volatile unsigned long *counter = &l->counter;
	unsigned int countdown = 1;
	unsigned long i;

	for (i = 0; i < w->ops; i++) {
		bool check = --countdown == 0;
		uint64_t t0 = 0, deadline;
		unsigned long v;

		if (check) {
			countdown = r->check;
			deadline = __atomic_load_n(&r->deadline_ns,
						   __ATOMIC_RELAXED);
			t0 = now_ns();
			if (deadline && t0 >= deadline) {
				w->cut = true;
				break;
			}
		}
		do_lock(impl, l, w);
		if (check && r->sample)
			w->lat[w->n_lat++] = now_ns() - t0;
		v = *counter;
		spend(unit, r->cs);
		*counter = v + 1;
		do_unlock(impl, l, w);
		spend(unit, r->work);
	}
	w->done = i;
}

#define LOOP_CASE(i, u) \
	case (i) * NR_UNITS + (u): worker_loop(w, (i), (u)); break

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	struct rusage ru0, ru1;
	int ret;

	ret = pthread_barrier_wait(&r->barrier);
	if (ret && ret != PTHREAD_BARRIER_SERIAL_THREAD)
		die("pthread_barrier_wait: %s", strerror(ret));
	getrusage(RUSAGE_THREAD, &ru0);
	w->start_ns = now_ns();
	/* The first thread to start starts the budget's clock. */
	if (r->budget_ns) {
		uint64_t none = 0;

		__atomic_compare_exchange_n(&r->deadline_ns, &none,
					    w->start_ns + r->budget_ns, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}

	switch (r->impl * NR_UNITS + r->unit) {
	LOOP_CASE(IMPL_TOFUTEX, UNIT_PAUSE);
	LOOP_CASE(IMPL_TOFUTEX, UNIT_LOOP);
	LOOP_CASE(IMPL_PTHREAD, UNIT_PAUSE);
	LOOP_CASE(IMPL_PTHREAD, UNIT_LOOP);
	LOOP_CASE(IMPL_ADAPTIVE, UNIT_PAUSE);
	LOOP_CASE(IMPL_ADAPTIVE, UNIT_LOOP);
	LOOP_CASE(IMPL_PI, UNIT_PAUSE);
	LOOP_CASE(IMPL_PI, UNIT_LOOP);
	LOOP_CASE(IMPL_FUTEX3, UNIT_PAUSE);
	LOOP_CASE(IMPL_FUTEX3, UNIT_LOOP);
	LOOP_CASE(IMPL_TAS, UNIT_PAUSE);
	LOOP_CASE(IMPL_TAS, UNIT_LOOP);
	LOOP_CASE(IMPL_NONE, UNIT_PAUSE);
	LOOP_CASE(IMPL_NONE, UNIT_LOOP);
	default:
		die("no loop for implementation %d, unit %d", r->impl, r->unit);
	}

	w->end_ns = now_ns();
	getrusage(RUSAGE_THREAD, &ru1);
	w->vcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
	w->ivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
	return NULL;
}

/* What one run measured. Counts are -1 where they cannot be known. */
struct result {
	double elapsed_ns;
	double ops_per_s;
	double thr_min_ns, thr_mean_ns, thr_max_ns;
	double lock_calls, unlock_calls;
	double vcsw, ivcsw;
	double lat_p50_ns, lat_p99_ns, lat_max_ns;
	double lat_samples;
	double spins, sleeps, steals, handoffs;
	double ops_done;	/* less than asked when cut */
	double cut;		/* 1: stopped at the budget */
	double fair;		/* min/mean per-thread time (ops done when cut) */
};

/* The metrics of struct result, in CSV order, for printing and medians. */
#define RESULT_FIELDS(X)			\
	X(elapsed_ns)				\
	X(ops_per_s)				\
	X(thr_min_ns)				\
	X(thr_mean_ns)				\
	X(thr_max_ns)				\
	X(lock_calls)				\
	X(unlock_calls)				\
	X(vcsw)					\
	X(ivcsw)				\
	X(lat_samples)				\
	X(lat_p50_ns)				\
	X(lat_p99_ns)				\
	X(lat_max_ns)				\
	X(spins)				\
	X(sleeps)				\
	X(steals)				\
	X(handoffs)				\
	X(ops_done)				\
	X(cut)					\
	X(fair)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @v. */
static uint64_t percentile(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static bool tofutex_stats_ok;

/* One measurement: what to run. */
struct point {
	enum impl_id impl;
	enum unit_kind unit;
	unsigned int cs, work, threads, sample;
	unsigned int check;	/* clock read every check ops without sample */
	unsigned long ops;
	double budget;		/* seconds; 0: none */
};

static void run_once(const struct point *p, struct result *res)
{
	const enum impl_id impl = p->impl;
	const unsigned int threads = p->threads;
	struct tofutex_stats st0, st1;
	struct worker *w;
	struct run *r;
	uint64_t start = UINT64_MAX, end = 0, *lat;
	size_t n_lat = 0, lat_cap = 0;
	double sum = 0, tmin = 1e300, tmax = 0;
	uint64_t waits = 0, wakes = 0;
	unsigned long done = 0, dmin = ULONG_MAX;
	bool cut = false;
	int err;

	/* Aligned: struct run holds the cache-line aligned lock. */
	r = aligned_alloc(64, (sizeof(*r) + 63) & ~(size_t)63);
	w = aligned_alloc(64, sizeof(*w) * threads);
	if (!r || !w)
		die("out of memory");
	memset(r, 0, sizeof(*r));
	memset(w, 0, sizeof(*w) * threads);
	r->impl = impl;
	r->unit = p->unit;
	r->cs = p->cs;
	r->work = p->work;
	r->sample = p->sample;
	r->check = p->sample ? p->sample : p->check ? p->check : CHECK_EVERY;
	r->budget_ns = (uint64_t)(p->budget * 1e9);
	lock_init(impl, &r->lock);
	err = pthread_barrier_init(&r->barrier, NULL, threads);
	if (err)
		die("pthread_barrier_init: %s", strerror(err));

	for (unsigned int t = 0; t < threads; t++) {
		w[t].run = r;
		w[t].ops = p->ops / threads + (t < p->ops % threads);
		if (p->sample) {
			size_t cap = w[t].ops / p->sample + 1;

			w[t].lat = malloc(cap * sizeof(*w[t].lat));
			if (!w[t].lat)
				die("out of memory");
			lat_cap += cap;
		}
	}

	if (impl == IMPL_TOFUTEX && tofutex_stats_ok) {
		err = tofutex_stats(TOFUTEX_STATS_PROCESS, &st0);
		if (err)
			die("tofutex_stats: %s", strerror(err));
	}
	for (unsigned int t = 0; t < threads; t++) {
		err = pthread_create(&w[t].thread, NULL, worker_main, &w[t]);
		if (err)
			die("pthread_create: %s", strerror(err));
	}
	for (unsigned int t = 0; t < threads; t++) {
		err = pthread_join(w[t].thread, NULL);
		if (err)
			die("pthread_join: %s", strerror(err));
	}
	if (impl == IMPL_TOFUTEX && tofutex_stats_ok) {
		err = tofutex_stats(TOFUTEX_STATS_PROCESS, &st1);
		if (err)
			die("tofutex_stats: %s", strerror(err));
	}

	for (unsigned int t = 0; t < threads; t++) {
		done += w[t].done;
		cut |= w[t].cut;
	}
	/* No number of a lock that failed to exclude is worth printing. */
	if (r->lock.counter != done) {
		printf("FAILED: %s, %u threads, cs %u %s, work %u: counter %lu, expected %lu: the lock did not exclude; no numbers printed\n",
		       impls[impl].name, threads, p->cs, unit_names[p->unit],
		       p->work, r->lock.counter, done);
		fflush(stdout);
		die("%s is not mutually exclusive (counter %lu, expected %lu)",
		    impls[impl].name, r->lock.counter, done);
	}
	lock_destroy(impl, &r->lock);
	pthread_barrier_destroy(&r->barrier);

	memset(res, 0, sizeof(*res));
	for (unsigned int t = 0; t < threads; t++) {
		if (w[t].start_ns < start)
			start = w[t].start_ns;
		if (w[t].end_ns > end)
			end = w[t].end_ns;
	}
	lat = malloc((lat_cap ? lat_cap : 1) * sizeof(*lat));
	if (!lat)
		die("out of memory");
	for (unsigned int t = 0; t < threads; t++) {
		double d = (double)(w[t].end_ns - start);

		sum += d;
		if (d < tmin)
			tmin = d;
		if (d > tmax)
			tmax = d;
		if (w[t].done < dmin)
			dmin = w[t].done;
		res->vcsw += (double)w[t].vcsw;
		res->ivcsw += (double)w[t].ivcsw;
		waits += w[t].futex_waits;
		wakes += w[t].futex_wakes;
		if (w[t].n_lat)
			memcpy(lat + n_lat, w[t].lat,
			       w[t].n_lat * sizeof(*lat));
		n_lat += w[t].n_lat;
		free(w[t].lat);
	}
	res->elapsed_ns = (double)(end - start);
	res->ops_per_s = (double)done * 1e9 / res->elapsed_ns;
	res->thr_min_ns = tmin;
	res->thr_mean_ns = sum / threads;
	res->thr_max_ns = tmax;
	res->ops_done = (double)done;
	res->cut = cut;
	/*
	 * Cut at the deadline, every thread ran about as long, so fairness is
	 * what each got done: the same min/mean, of operations.
	 */
	if (!done)
		die("%s: no operation done within the %g s budget",
		    impls[impl].name, p->budget);
	res->fair = cut ? (double)dmin * threads / (double)done :
			  res->thr_min_ns / res->thr_mean_ns;

	res->lock_calls = res->unlock_calls = -1;
	res->spins = res->sleeps = res->steals = res->handoffs = -1;
	if (impl == IMPL_FUTEX3) {
		res->lock_calls = (double)waits;
		res->unlock_calls = (double)wakes;
	} else if (impl == IMPL_TAS || impl == IMPL_NONE) {
		res->lock_calls = res->unlock_calls = 0;
	} else if (impl == IMPL_TOFUTEX && tofutex_stats_ok) {
		res->lock_calls = (double)(st1.lock_calls - st0.lock_calls);
		res->unlock_calls = (double)(st1.unlock_calls - st0.unlock_calls);
		res->spins = (double)(st1.spins - st0.spins);
		res->sleeps = (double)(st1.sleeps - st0.sleeps);
		res->steals = (double)(st1.steals - st0.steals);
		res->handoffs = (double)(st1.handoffs - st0.handoffs);
	}

	res->lat_samples = (double)n_lat;
	if (n_lat) {
		qsort(lat, n_lat, sizeof(*lat), cmp_u64);
		res->lat_p50_ns = (double)percentile(lat, n_lat, 50);
		res->lat_p99_ns = (double)percentile(lat, n_lat, 99);
		res->lat_max_ns = (double)lat[n_lat - 1];
	} else {
		res->lat_p50_ns = res->lat_p99_ns = res->lat_max_ns = -1;
	}
	free(lat);
	free(w);
	free(r);
}

/* ---- output ------------------------------------------------------------- */

/* A CSV line on stdout and, with --csv, in the file. */
static void __attribute__((format(printf, 1, 2))) csv(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(CSV_TAG ",", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (csv_file) {
		va_start(ap, fmt);
		fputs(CSV_TAG ",", csv_file);
		vfprintf(csv_file, fmt, ap);
		fputc('\n', csv_file);
		va_end(ap);
	}
}

/* A meta record; commas in @value would split the field, so they go. */
static void csv_meta(const char *key, const char *value)
{
	char buf[512];
	size_t i;

	snprintf(buf, sizeof(buf), "%s", value);
	for (i = 0; buf[i]; i++)
		if (buf[i] == ',' || buf[i] == '\n')
			buf[i] = ';';
	csv("meta,%s,%s", key, buf);
}

static void csv_header(void)
{
	csv("record,impl,unit,cs_units,work_units,threads,rep,ops"
#define X(f) "," #f
	    RESULT_FIELDS(X)
#undef X
	    );
}

static void csv_num(char *buf, size_t len, double v)
{
	if (v < 0)
		snprintf(buf, len, "n/a");
	else if (v < 1e15 && v != (double)(long long)v)
		snprintf(buf, len, "%.3f", v);
	else
		snprintf(buf, len, "%.0f", v);
}

static void csv_run(enum impl_id impl, enum unit_kind unit, unsigned int cs,
		    unsigned int work, unsigned int threads, unsigned int rep,
		    unsigned long ops, const struct result *res)
{
	char line[1024], num[32];
	size_t len;

	len = (size_t)snprintf(line, sizeof(line), "run,%s,%s,%u,%u,%u,%u,%lu",
			       impls[impl].name, unit_names[unit], cs, work,
			       threads, rep, ops);
#define X(f) \
	csv_num(num, sizeof(num), res->f); \
	len += (size_t)snprintf(line + len, sizeof(line) - len, ",%s", num);
	RESULT_FIELDS(X)
#undef X
	csv("%s", line);
}

struct summary {
	double med, min, max;
};

static struct summary summarize(const struct result *res, unsigned int reps,
				size_t offset)
{
	double v[MAX_REPS];
	struct summary s;

	for (unsigned int i = 0; i < reps; i++)
		v[i] = *(const double *)((const char *)&res[i] + offset);
	qsort(v, reps, sizeof(v[0]), cmp_double);
	s.min = v[0];
	s.max = v[reps - 1];
	s.med = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
	return s;
}

#define MED(res, reps, field) \
	summarize((res), (reps), offsetof(struct result, field))

/* Results of one block (unit kind, work): [threads][impl][rep]. */
struct block {
	enum unit_kind unit;
	unsigned int work;
	struct result *res;
	bool skipped[NR_IMPLS];
};

static struct result *block_res(const struct options *o,
				const struct block *b, unsigned int ti,
				enum impl_id impl)
{
	return &b->res[((size_t)ti * NR_IMPLS + impl) * o->reps];
}

#define COLW 15

static void print_cell(const char *s)
{
	printf(" %*s", COLW, s);
}

static void print_impl_header(const struct options *o, const struct block *b,
			      const char *first)
{
	printf("%-22s", first);
	for (unsigned int i = 0; i < o->n_impl; i++)
		if (!b->skipped[o->impl[i]])
			print_cell(impls[o->impl[i]].name);
	putchar('\n');
}

static void fmt_num(char *buf, size_t len, double v, double scale, int prec)
{
	if (v < 0)
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.*f", prec, v / scale);
}

/* One row of an RFC-style table: a metric's medians across implementations. */
static void print_row(const struct options *o, const struct block *b,
		      unsigned int ti, const char *label, size_t offset,
		      double scale, int prec)
{
	char buf[32];

	printf("%-22s", label);
	for (unsigned int i = 0; i < o->n_impl; i++) {
		enum impl_id impl = o->impl[i];

		if (b->skipped[impl])
			continue;
		struct summary s = summarize(block_res(o, b, ti, impl),
					     o->reps, offset);
		fmt_num(buf, sizeof(buf), s.med, scale, prec);
		print_cell(buf);
	}
	putchar('\n');
}

static void print_fair_row(const struct options *o, const struct block *b,
			   unsigned int ti)
{
	char buf[32];

	printf("%-22s", "min/mean");
	for (unsigned int i = 0; i < o->n_impl; i++) {
		enum impl_id impl = o->impl[i];

		if (b->skipped[impl])
			continue;
		struct summary f = MED(block_res(o, b, ti, impl), o->reps,
				       fair);

		snprintf(buf, sizeof(buf), "%.2f", f.med);
		print_cell(buf);
	}
	putchar('\n');
}

static bool have_impl(const struct options *o, const struct block *b,
		      enum impl_id impl)
{
	for (unsigned int i = 0; i < o->n_impl; i++)
		if (o->impl[i] == impl)
			return !b->skipped[impl];
	return false;
}

/* Did any repetition of a point stop at the budget? Its cells get a '*'. */
static const char *cut_mark(const struct result *res, unsigned int reps)
{
	for (unsigned int i = 0; i < reps; i++)
		if (res[i].cut)
			return "*";
	return "";
}

/* The baseline's own column says 1.00, not "tie". */
static void ratio_cell(char *buf, size_t len, double r, enum impl_id impl)
{
	if (impl == IMPL_PTHREAD)
		snprintf(buf, len, "1.00");
	else if (r >= 1.0 - TIE_BAND && r <= 1.0 + TIE_BAND)
		snprintf(buf, len, "%.2f tie", r);
	else
		snprintf(buf, len, "%.2f", r);
}

static void print_block(const struct options *o, const struct block *b)
{
	const char *u = unit_names[b->unit];
	char buf[64];

	printf("\n== lock: critical section %u %s, work %u %s, %lu ops per point, median of %u ==\n",
	       o->cs, u, b->work, u, o->ops, o->reps);

	printf("\nthroughput, kops/s: median [min-max] (unit: %s)\n", u);
	print_impl_header(o, b, "threads");
	for (unsigned int ti = 0; ti < o->n_threads; ti++) {
		printf("%-22u", o->threads[ti]);
		for (unsigned int i = 0; i < o->n_impl; i++) {
			enum impl_id impl = o->impl[i];

			if (b->skipped[impl])
				continue;
			const struct result *res = block_res(o, b, ti, impl);
			struct summary s = MED(res, o->reps, ops_per_s);

			snprintf(buf, sizeof(buf), "%.0f[%.0f-%.0f]%s",
				 s.med / 1e3, s.min / 1e3, s.max / 1e3,
				 cut_mark(res, o->reps));
			print_cell(buf);
		}
		putchar('\n');
	}

	if (have_impl(o, b, IMPL_PTHREAD)) {
		printf("\nratio to pthread default (ops/s medians; \"tie\": within %.2f of 1.00) (unit: %s)\n",
		       TIE_BAND, u);
		print_impl_header(o, b, "threads");
		for (unsigned int ti = 0; ti < o->n_threads; ti++) {
			double base = MED(block_res(o, b, ti, IMPL_PTHREAD),
					  o->reps, ops_per_s).med;

			printf("%-22u", o->threads[ti]);
			for (unsigned int i = 0; i < o->n_impl; i++) {
				enum impl_id impl = o->impl[i];

				if (b->skipped[impl])
					continue;
				const struct result *res =
					block_res(o, b, ti, impl);

				ratio_cell(buf, sizeof(buf),
					   MED(res, o->reps, ops_per_s).med / base,
					   impl);
				strcat(buf, cut_mark(res, o->reps));
				print_cell(buf);
			}
			putchar('\n');
		}
	}

	for (unsigned int ti = 0; ti < o->n_threads; ti++) {
		printf("\n-- %u threads, %lu ops, cs %u %s, work %u %s: medians of %u --\n",
		       o->threads[ti], o->ops, o->cs, u, b->work, u, o->reps);
		print_impl_header(o, b, "");
#define ROW(label, field, scale, prec) \
	print_row(o, b, ti, label, offsetof(struct result, field), scale, prec)
		ROW("ops/s (k)", ops_per_s, 1e3, 1);
		ROW("ops done", ops_done, 1, 0);
		ROW("elapsed time (ms)", elapsed_ns, 1e6, 2);
		ROW("min time (ms)", thr_min_ns, 1e6, 2);
		ROW("average time (ms)", thr_mean_ns, 1e6, 2);
		ROW("max time (ms)", thr_max_ns, 1e6, 2);
		print_fair_row(o, b, ti);
		ROW("lock count", lock_calls, 1, 0);
		ROW("unlock count", unlock_calls, 1, 0);
		ROW("voluntary csw", vcsw, 1, 0);
		ROW("involuntary csw", ivcsw, 1, 0);
		ROW("lat p50 (us)", lat_p50_ns, 1e3, 2);
		ROW("lat p99 (us)", lat_p99_ns, 1e3, 2);
		ROW("lat max (us)", lat_max_ns, 1e3, 1);
		if (have_impl(o, b, IMPL_TOFUTEX)) {
			ROW("tofutex spins", spins, 1, 0);
			ROW("tofutex sleeps", sleeps, 1, 0);
			ROW("tofutex steals", steals, 1, 0);
			ROW("tofutex handoffs", handoffs, 1, 0);
		}
#undef ROW
	}
	if (o->budget > 0)
		printf("\n* = at least one repetition stopped at the %.1f s budget: ops/s from the operations done, min/mean of operations done per thread\n",
		       o->budget);
	fflush(stdout);
}

/* The closing summary: every block's ratios and kernel calls together. */
static void print_summary(const struct options *o, const struct block *blocks,
			  unsigned int n_blocks)
{
	char buf[64];

	printf("\n== summary: ops/s ratio to pthread default (medians of %u; \"tie\": within %.2f of 1.00) ==\n",
	       o->reps, TIE_BAND);
	printf("%-6s %5s %7s", "unit", "work", "threads");
	for (unsigned int i = 0; i < o->n_impl; i++)
		print_cell(impls[o->impl[i]].name);
	putchar('\n');
	for (unsigned int bi = 0; bi < n_blocks; bi++) {
		const struct block *b = &blocks[bi];

		if (!have_impl(o, b, IMPL_PTHREAD))
			continue;
		for (unsigned int ti = 0; ti < o->n_threads; ti++) {
			double base = MED(block_res(o, b, ti, IMPL_PTHREAD),
					  o->reps, ops_per_s).med;

			printf("%-6s %5u %7u", unit_names[b->unit], b->work,
			       o->threads[ti]);
			for (unsigned int i = 0; i < o->n_impl; i++) {
				enum impl_id impl = o->impl[i];

				if (b->skipped[impl]) {
					print_cell("skipped");
					continue;
				}
				const struct result *res =
					block_res(o, b, ti, impl);

				ratio_cell(buf, sizeof(buf),
					   MED(res, o->reps, ops_per_s).med / base,
					   impl);
				strcat(buf, cut_mark(res, o->reps));
				print_cell(buf);
			}
			putchar('\n');
		}
	}

	printf("\n== summary: kernel calls per 1000 operations, lock/unlock (medians of %u) ==\n",
	       o->reps);
	printf("%-6s %5s %7s", "unit", "work", "threads");
	for (unsigned int i = 0; i < o->n_impl; i++)
		print_cell(impls[o->impl[i]].name);
	putchar('\n');
	for (unsigned int bi = 0; bi < n_blocks; bi++) {
		const struct block *b = &blocks[bi];

		for (unsigned int ti = 0; ti < o->n_threads; ti++) {
			printf("%-6s %5u %7u", unit_names[b->unit], b->work,
			       o->threads[ti]);
			for (unsigned int i = 0; i < o->n_impl; i++) {
				enum impl_id impl = o->impl[i];

				if (b->skipped[impl]) {
					print_cell("skipped");
					continue;
				}
				const struct result *res = block_res(o, b, ti, impl);
				double lc = MED(res, o->reps, lock_calls).med;
				double uc = MED(res, o->reps, unlock_calls).med;
				double n = MED(res, o->reps, ops_done).med;

				if (lc < 0 || uc < 0)
					snprintf(buf, sizeof(buf), "n/a");
				else
					snprintf(buf, sizeof(buf), "%.1f/%.1f%s",
						 lc * 1e3 / n, uc * 1e3 / n,
						 cut_mark(res, o->reps));
				print_cell(buf);
			}
			putchar('\n');
		}
	}
	fflush(stdout);
}

/*
 * tas behind a function call, as a library would offer it: the floor for
 * an uncontended lock that is not inlined into its caller. Under TCG a
 * call and return cost tens of ns, as much as the compare-and-swap.
 */
static __attribute__((noinline)) void tas_lock_call(uint32_t *w)
{
	tas_lock(w);
}

static __attribute__((noinline)) void tas_unlock_call(uint32_t *w)
{
	tas_unlock(w);
}

/* ns per tas-call lock+unlock pair over @ops pairs, with the counter. */
static double time_tas_call(unsigned long ops)
{
	struct bench_lock *l = aligned_alloc(64, sizeof(*l));
	volatile unsigned long *counter;
	uint64_t t0;
	double ns;

	if (!l)
		die("out of memory");
	memset(l, 0, sizeof(*l));
	counter = &l->counter;
	t0 = now_ns();
	for (unsigned long i = 0; i < ops; i++) {
		tas_lock_call(&l->u.word);
		*counter = *counter + 1;
		tas_unlock_call(&l->u.word);
	}
	ns = (double)(now_ns() - t0) / (double)ops;
	if (l->counter != ops)
		die("tas-call: counter %lu, expected %lu", l->counter, ops);
	free(l);
	return ns;
}

/*
 * The uncontended cost of a lock+unlock pair, one thread, nothing between:
 * the fast paths alone, read against tas, the bare compare-and-swap lock
 * (inlined), and tas-call, the same behind two function calls. The
 * counter's read and write are in every implementation's time.
 */
static void uncontended(const struct options *o, bool tofutex_on)
{
	enum { COL_TAS_CALL = NR_IMPLS, NR_COLS };
	double ns[NR_COLS][MAX_REPS];
	bool done[NR_COLS] = { false };
	unsigned int cols[NR_COLS], n_cols = 0;
	char buf[64];

	for (unsigned int i = 0; i < o->n_impl; i++) {
		if (o->impl[i] == IMPL_TOFUTEX && !tofutex_on)
			continue;
		cols[n_cols++] = o->impl[i];
		if (o->impl[i] == IMPL_TAS)
			cols[n_cols++] = COL_TAS_CALL;
	}

	for (unsigned int rep = 0; rep < o->reps; rep++) {
		for (unsigned int c = 0; c < n_cols; c++) {
			unsigned int col = cols[c];
			struct point p = {
				.impl = (enum impl_id)col,
				.unit = UNIT_LOOP,
				.threads = 1,
				/* A clock read can cost 10 pairs. */
				.check = 4096,
				.ops = o->uncontended,
				.budget = o->budget,
			};
			struct result res;
			double ops = (double)o->uncontended;

			if (col == COL_TAS_CALL) {
				ns[col][rep] = time_tas_call(o->uncontended);
			} else {
				run_once(&p, &res);
				ns[col][rep] = res.elapsed_ns / res.ops_done;
				ops = res.ops_done;
			}
			done[col] = true;
			csv("uncontended,%s,%u,%.0f,%.2f",
			    col == COL_TAS_CALL ? "tas-call" : impls[col].name,
			    rep + 1, ops, ns[col][rep]);
		}
	}
	for (unsigned int c = 0; c < n_cols; c++)
		qsort(ns[cols[c]], o->reps, sizeof(ns[0][0]), cmp_double);

	printf("\n== uncontended: %lu lock+unlock pairs in 1 thread, no critical section or work: ns per pair, median [min-max] of %u ==\n",
	       o->uncontended, o->reps);
	printf("%-22s", "");
	for (unsigned int c = 0; c < n_cols; c++)
		print_cell(cols[c] == COL_TAS_CALL ? "tas-call" :
			   impls[cols[c]].name);
	printf("\n%-22s", "ns per lock+unlock");
	for (unsigned int c = 0; c < n_cols; c++) {
		const double *v = ns[cols[c]];

		snprintf(buf, sizeof(buf), "%.1f[%.1f-%.1f]",
			 v[o->reps / 2], v[0], v[o->reps - 1]);
		print_cell(buf);
	}
	for (int k = 0; k < 2; k++) {
		unsigned int base = k ? COL_TAS_CALL : IMPL_TAS;

		if (!done[base])
			continue;
		printf("\n%-22s", base == IMPL_TAS ? "ratio to tas" :
		       "ratio to tas-call");
		for (unsigned int c = 0; c < n_cols; c++) {
			snprintf(buf, sizeof(buf), "%.2f",
				 ns[cols[c]][o->reps / 2] /
				 ns[base][o->reps / 2]);
			print_cell(buf);
		}
	}
	printf("\n");
	fflush(stdout);
}

/* ---- method ------------------------------------------------------------- */

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The first /proc/cpuinfo value of @key, "" when there is none. */
static void cpuinfo(const char *key, char *buf, size_t len)
{
	char line[4096];
	size_t klen = strlen(key);
	FILE *f = fopen("/proc/cpuinfo", "r");

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, key, klen) || !colon ||
		    (line[klen] != ' ' && line[klen] != '\t' &&
		     line[klen] != ':'))
			continue;
		colon++;
		colon += strspn(colon, " ");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

/*
 * What runs this: QEMU's TCG reports no hypervisor signature of its own
 * (KVM says "KVMKVMKVM"), but sets the CPUID hypervisor bit and names its
 * CPU models "QEMU Virtual CPU"; --emulation overrides the guess.
 */
static void detect_emulation(char *buf, size_t len, const char *model)
{
	char flags[4096], sig[13] = "";
	bool hv;

	cpuinfo("flags", flags, sizeof(flags));
	hv = strstr(flags, " hypervisor") != NULL;
#if defined(__x86_64__) || defined(__i386__)
	if (hv) {
		unsigned int a, b, c, d;

		__cpuid(0x40000000, a, b, c, d);
		memcpy(sig + 0, &b, 4);
		memcpy(sig + 4, &c, 4);
		memcpy(sig + 8, &d, 4);
		sig[12] = '\0';
		for (int i = 0; i < 12; i++)
			if (sig[i] && (sig[i] < 0x20 || sig[i] > 0x7e))
				sig[i] = '?';
	}
#endif
	if (!hv)
		snprintf(buf, len, "none detected (no CPUID hypervisor flag)");
	else if (!strncmp(sig, "KVMKVMKVM", 9))
		snprintf(buf, len, "KVM (hypervisor signature KVMKVMKVM)");
	else if (!strncmp(sig, "TCGTCGTCGTCG", 12))
		snprintf(buf, len, "TCG (hypervisor signature TCGTCGTCGTCG)");
	else if (strstr(model, "QEMU") && !sig[0])
		snprintf(buf, len, "TCG (QEMU CPU model, no hypervisor signature)");
	else
		snprintf(buf, len, "virtualised (hypervisor signature \"%s\")",
			 sig);
}

static void print_method(const struct options *o, double pause_ns,
			 double iter_ns, double clock_ns, bool tofutex_loaded)
{
	struct utsname un;
	char model[256], emul[256], buf[512], p1[64], p2[64];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	uname(&un);
	cpuinfo("model name", model, sizeof(model));
	if (o->emulation)
		snprintf(emul, sizeof(emul), "%s (given)", o->emulation);
	else
		detect_emulation(emul, sizeof(emul), model);

	printf("bench_lock: T threads share %lu lock operations; critical section %u units, work between locks",
	       o->ops, o->cs);
	for (unsigned int i = 0; i < o->n_work; i++)
		printf("%s%u", i ? "/" : " ", o->work[i]);
	printf(" units\n");
	printf("method: kernel %s %s %s, %ld vCPUs online, emulation: %s\n",
	       un.sysname, un.release, un.version, cpus, emul);
	printf("method: cpu \"%s\"\n", model);
	printf("method: %lu ops per point split evenly over the threads, %u repetitions per point (median, spread min-max), implementations interleaved within each repetition\n",
	       o->ops, o->reps);
	printf("method: unit pause = 1 pause instruction (%.1f ns alone); unit loop = %lu iterations of an empty counted loop (%.1f ns alone%s)\n",
	       pause_ns, loop_iters, iter_ns * (double)loop_iters,
	       o->loop_iters ? ", --loop-iters" : ", calibrated to the pause");
	if (o->sample)
		printf("method: acquisition latency = CLOCK_MONOTONIC read before and after the lock call, on 1 in %u operations of each thread (one read costs %.1f ns here)\n",
		       o->sample, clock_ns);
	else
		printf("method: acquisition latency not sampled (--sample 0); the clock is read on 1 in %u operations for the budget (one read costs %.1f ns here)\n",
		       CHECK_EVERY, clock_ns);
	printf("method: per-thread time = thread end - first thread start; fairness min/mean = the RFC rows min time / average time\n");
	printf("method: futex3 and tas are inlined into the loop; tofutex, pthread, adaptive and pi are calls into libtofutex.a and glibc (static)\n");
	if (o->budget > 0)
		printf("method: a run stops after %.1f s (--budget); such numbers are marked *, with ops/s from the operations done\n",
		       o->budget);
	printf("method: kernel calls: tofutex TOFUTEX_IOC_LOCK/UNLOCK (TOFUTEX_IOC_STATS process deltas), futex3 FUTEX_WAIT/FUTEX_WAKE (counted), tas none, glibc mutexes n/a (not countable); voluntary csw = sleeps of the workers (getrusage)\n");

	read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  buf, sizeof(buf));
	printf("method: clocksource %s\n", buf[0] ? buf : "unknown");
	read_line("/sys/module/tofutex/parameters/spin_ns", p1, sizeof(p1));
	read_line("/sys/module/tofutex/parameters/handoff_ns", p2, sizeof(p2));
	if (tofutex_loaded)
		printf("method: tofutex module spin_ns=%s handoff_ns=%s\n",
		       p1[0] ? p1 : "?", p2[0] ? p2 : "?");

	csv_meta("kernel", un.release);
	csv_meta("kernel_version", un.version);
	snprintf(buf, sizeof(buf), "%ld", cpus);
	csv_meta("vcpus", buf);
	csv_meta("emulation", emul);
	csv_meta("cpu", model);
	snprintf(buf, sizeof(buf), "%lu", o->ops);
	csv_meta("ops", buf);
	snprintf(buf, sizeof(buf), "%u", o->reps);
	csv_meta("reps", buf);
	snprintf(buf, sizeof(buf), "%u", o->cs);
	csv_meta("cs_units", buf);
	snprintf(buf, sizeof(buf), "%.1f", pause_ns);
	csv_meta("pause_ns", buf);
	snprintf(buf, sizeof(buf), "%lu", loop_iters);
	csv_meta("loop_iters", buf);
	snprintf(buf, sizeof(buf), "%.1f", iter_ns * (double)loop_iters);
	csv_meta("loop_unit_ns", buf);
	snprintf(buf, sizeof(buf), "%u", o->sample);
	csv_meta("lat_sample_every", buf);
	snprintf(buf, sizeof(buf), "%.1f", clock_ns);
	csv_meta("clock_read_ns", buf);
	snprintf(buf, sizeof(buf), "%g", o->budget);
	csv_meta("budget_s", buf);
	if (tofutex_loaded) {
		csv_meta("tofutex_spin_ns", p1[0] ? p1 : "?");
		csv_meta("tofutex_handoff_ns", p2[0] ? p2 : "?");
	}
	csv_header();
	fflush(stdout);
}

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_lock [options]\n"
"\n"
"T threads share a fixed total of lock operations. Each operation: lock,\n"
"read a counter, K units of critical section, write the counter + 1, unlock,\n"
"W units of work. Every point runs with both unit kinds unless --unit says\n"
"otherwise, and repeats; the tables give medians and min-max spreads, plus\n"
"ratios to glibc's default mutex. The counter must be exact, or the run\n"
"stops with exit status 2 and no numbers.\n"
"\n"
"  -t, --threads LIST   thread counts (default " DEF_THREADS ")\n"
"  -n, --ops N          lock operations per point, shared by the threads\n"
"                       (default %lu)\n"
"  -r, --reps N         repetitions per point (default %u, max %u)\n"
"  -i, --impl LIST      implementations (default: all, which is every one\n"
"                       but none):\n",
		DEF_OPS, DEF_REPS, MAX_REPS);
	for (int i = 0; i < NR_IMPLS; i++)
		fprintf(f, "                         %-9s %s\n", impls[i].name,
			impls[i].what);
	fprintf(f,
"  -k, --cs K           critical-section units (default %u)\n"
"  -w, --work LIST      units of work between locks (default " DEF_WORK ")\n"
"  -u, --unit LIST      pause: one pause instruction; loop: an empty counted\n"
"                       loop as long as one pause alone (default pause,loop)\n"
"  -l, --loop-iters N   iterations per loop unit instead of calibrating\n"
"  -s, --sample N       time every N-th lock acquisition per thread\n"
"                       (default %u; 0: no latency)\n"
"  -U, --uncontended N  first time N lock+unlock pairs in one thread with no\n"
"                       critical section or work, per implementation\n"
"                       (default %lu; 0: skip)\n"
"  -b, --budget S       stop a run after S seconds (default %.1f; 0: never);\n"
"                       its ops/s then come from the operations done, and\n"
"                       its numbers are marked with *\n"
"  -o, --csv PATH       also write the CSV records to PATH\n"
"  -e, --emulation STR  name the machine's emulation (e.g. TCG) instead of\n"
"                       guessing it from CPUID\n"
"  -h, --help           this text\n"
"\n"
"Options in the environment variable BENCH_LOCK_OPTS come before the command\n"
"line's (make bench TEST_ENV=\"BENCH_LOCK_OPTS=--ops=50000\").\n"
"\n"
"tofutex needs /dev/tofutex (modprobe tofutex); without it, it is skipped\n"
"with a message and the others run. Output: human tables and CSV lines\n"
"starting with \"" CSV_TAG ",\" on stdout; bench/report-lock.sh FILE turns\n"
"them into tables and charts.\n",
		DEF_CS, DEF_SAMPLE, DEF_UNCONTENDED, DEF_BUDGET);
}

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "bench_lock: bad %s '%s' (%lu..%lu)\n", what, s,
			min, max);
		exit(1);
	}
	return v;
}

static double parse_seconds(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 86400)) {
		fprintf(stderr, "bench_lock: bad %s '%s' (seconds, 0..86400)\n",
			what, s);
		exit(1);
	}
	return v;
}

static unsigned int parse_list(const char *s, const char *what,
			       unsigned int *out, unsigned long min,
			       unsigned long max)
{
	char *copy = strdup(s), *save = NULL, *tok;
	unsigned int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_LIST) {
			fprintf(stderr, "bench_lock: at most %d %s values\n",
				MAX_LIST, what);
			exit(1);
		}
		out[n++] = (unsigned int)parse_num(tok, what, min, max);
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "bench_lock: empty %s list\n", what);
		exit(1);
	}
	return n;
}

/* Names from a comma list into indices; "all" is every name, in order. */
static unsigned int parse_names(const char *s, const char *what,
				const char *const *names, unsigned int count,
				unsigned int n_all, unsigned int *out)
{
	char *copy = strdup(s), *save = NULL, *tok;
	bool seen[MAX_NAMES] = { false };
	unsigned int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		if (!strcmp(tok, "all")) {
			for (i = 0; i < n_all; i++)
				if (!seen[i]) {
					seen[i] = true;
					out[n++] = i;
				}
			continue;
		}
		for (i = 0; i < count; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == count) {
			fprintf(stderr, "bench_lock: unknown %s '%s' (", what,
				tok);
			for (i = 0; i < count; i++)
				fprintf(stderr, "%s%s", i ? ", " : "",
					names[i]);
			fprintf(stderr, ", all)\n");
			exit(1);
		}
		if (!seen[i]) {
			seen[i] = true;
			out[n++] = i;
		}
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "bench_lock: empty %s list\n", what);
		exit(1);
	}
	return n;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "impl", required_argument, NULL, 'i' },
		{ "cs", required_argument, NULL, 'k' },
		{ "work", required_argument, NULL, 'w' },
		{ "unit", required_argument, NULL, 'u' },
		{ "loop-iters", required_argument, NULL, 'l' },
		{ "sample", required_argument, NULL, 's' },
		{ "uncontended", required_argument, NULL, 'U' },
		{ "budget", required_argument, NULL, 'b' },
		{ "csv", required_argument, NULL, 'o' },
		{ "emulation", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *impl_names[NR_IMPLS], *threads = DEF_THREADS;
	const char *impl = "all", *work = DEF_WORK, *unit = "pause,loop";
	unsigned int idx[NR_IMPLS];
	int c;

	memset(o, 0, sizeof(*o));
	o->ops = DEF_OPS;
	o->reps = DEF_REPS;
	o->cs = DEF_CS;
	o->sample = DEF_SAMPLE;
	o->uncontended = DEF_UNCONTENDED;
	o->budget = DEF_BUDGET;
	while ((c = getopt_long(argc, argv, "t:n:r:i:k:w:u:l:s:U:b:o:e:h",
				longopts, NULL)) != -1) {
		switch (c) {
		case 't': threads = optarg; break;
		case 'n': o->ops = parse_num(optarg, "--ops", 1, 1UL << 40); break;
		case 'r': o->reps = (unsigned int)parse_num(optarg, "--reps", 1, MAX_REPS); break;
		case 'i': impl = optarg; break;
		case 'k': o->cs = (unsigned int)parse_num(optarg, "--cs", 0, MAX_UNITS); break;
		case 'w': work = optarg; break;
		case 'u': unit = optarg; break;
		case 'l': o->loop_iters = parse_num(optarg, "--loop-iters", 1, 1UL << 30); break;
		case 's': o->sample = (unsigned int)parse_num(optarg, "--sample", 0, 1U << 30); break;
		case 'U': o->uncontended = parse_num(optarg, "--uncontended", 0, 1UL << 40); break;
		case 'b': o->budget = parse_seconds(optarg, "--budget"); break;
		case 'o': o->csv_path = optarg; break;
		case 'e': o->emulation = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(1);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_lock: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(1);
	}

	o->n_threads = parse_list(threads, "--threads", o->threads, 1,
				  MAX_THREADS);
	o->n_work = parse_list(work, "--work", o->work, 0, MAX_UNITS);
	for (int i = 0; i < NR_IMPLS; i++)
		impl_names[i] = impls[i].name;
	o->n_impl = parse_names(impl, "implementation", impl_names, NR_IMPLS,
				IMPL_NONE, idx);
	for (unsigned int i = 0; i < o->n_impl; i++)
		o->impl[i] = (enum impl_id)idx[i];
	o->n_unit = parse_names(unit, "unit", unit_names, NR_UNITS, NR_UNITS,
				idx);
	for (unsigned int i = 0; i < o->n_unit; i++)
		o->unit[i] = (enum unit_kind)idx[i];
	for (unsigned int i = 0; i < o->n_threads; i++)
		if (o->threads[i] > o->ops) {
			fprintf(stderr, "bench_lock: %u threads need at least as many --ops (%lu)\n",
				o->threads[i], o->ops);
			exit(1);
		}
}

/*
 * BENCH_LOCK_OPTS: options taken before the command line's, split at
 * blanks. `make bench` runs every benchmark without arguments; this is how
 * its TEST_ENV changes them without a rebuild.
 */
static void env_options(int *argc, char ***argv)
{
	const char *env = getenv("BENCH_LOCK_OPTS");
	char *copy, *save = NULL, *tok, **nargv;
	int n = 1;

	if (!env || !*env)
		return;
	copy = strdup(env);
	nargv = calloc(strlen(env) / 2 + 2 + (size_t)*argc, sizeof(*nargv));
	if (!copy || !nargv)
		die("out of memory");
	nargv[0] = (*argv)[0];
	for (tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save))
		nargv[n++] = tok;
	for (int i = 1; i < *argc; i++)
		nargv[n++] = (*argv)[i];
	nargv[n] = NULL;
	printf("bench_lock: options from BENCH_LOCK_OPTS: %s\n", env);
	*argc = n;
	*argv = nargv;
}

/* ---- main ---------------------------------------------------------------- */

/* Can this process use the module? Says why not, once. */
static bool tofutex_usable(void)
{
	uint64_t features = 0;
	uint32_t abi = 0;
	int fd = tofutex_fd(), err;

	if (fd < 0) {
		printf("tofutex: skipped: /dev/%s: %s (module not loaded? modprobe tofutex)\n",
		       TOFUTEX_DEVICE_NAME, strerror(-fd));
		return false;
	}
	err = tofutex_version(&abi, &features);
	if (err) {
		printf("tofutex: skipped: TOFUTEX_IOC_VERSION: %s\n",
		       strerror(err));
		return false;
	}
	if (!(features & TOFUTEX_FEAT_LOCK)) {
		printf("tofutex: skipped: the loaded module (ABI %u, features %#llx) has no TO lock\n",
		       abi, (unsigned long long)features);
		return false;
	}
	tofutex_stats_ok = features & TOFUTEX_FEAT_STATS;
	if (!tofutex_stats_ok)
		printf("tofutex: the loaded module has no statistics: kernel calls n/a\n");
	return true;
}

int main(int argc, char **argv)
{
	struct options o;
	struct block blocks[NR_UNITS * MAX_LIST];
	unsigned int n_blocks = 0;
	bool tofutex_on = false;
	double pause_ns, iter_ns, clock_ns;
	uint64_t t_begin = now_ns();

	env_options(&argc, &argv);
	parse_options(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.csv_path) {
		csv_file = fopen(o.csv_path, "w");
		if (!csv_file)
			die("%s: %s", o.csv_path, strerror(errno));
	}

	for (unsigned int i = 0; i < o.n_impl; i++)
		if (o.impl[i] == IMPL_TOFUTEX)
			tofutex_on = tofutex_usable();

	pause_ns = ns_per_pause();
	iter_ns = ns_per_loop_iter();
	clock_ns = ns_per_clock_gettime();
	loop_iters = o.loop_iters;
	if (!loop_iters) {
		loop_iters = (unsigned long)(pause_ns / iter_ns + 0.5);
		if (!loop_iters)
			loop_iters = 1;
	}
	print_method(&o, pause_ns, iter_ns, clock_ns, tofutex_on);

	if (o.uncontended)
		uncontended(&o, tofutex_on);
	for (unsigned int ui = 0; ui < o.n_unit; ui++) {
		for (unsigned int wi = 0; wi < o.n_work; wi++) {
			struct block *b = &blocks[n_blocks++];

			b->unit = o.unit[ui];
			b->work = o.work[wi];
			memset(b->skipped, 0, sizeof(b->skipped));
			b->skipped[IMPL_TOFUTEX] = !tofutex_on;
			b->res = calloc((size_t)o.n_threads * NR_IMPLS * o.reps,
					sizeof(*b->res));
			if (!b->res)
				die("out of memory");
			for (unsigned int ti = 0; ti < o.n_threads; ti++) {
				for (unsigned int rep = 0; rep < o.reps; rep++) {
					for (unsigned int i = 0; i < o.n_impl; i++) {
						enum impl_id impl = o.impl[i];
						struct result *res;

						if (b->skipped[impl])
							continue;
						res = block_res(&o, b, ti, impl) + rep;
						struct point p = {
							.impl = impl,
							.unit = b->unit,
							.cs = o.cs,
							.work = b->work,
							.threads = o.threads[ti],
							.sample = o.sample,
							.ops = o.ops,
							.budget = o.budget,
						};

						run_once(&p, res);
						csv_run(impl, b->unit, o.cs, b->work,
							o.threads[ti], rep + 1, o.ops,
							res);
					}
				}
			}
			print_block(&o, b);
		}
	}
	print_summary(&o, blocks, n_blocks);
	printf("\nbench_lock: done in %.1f s; CSV records are the lines starting with \"" CSV_TAG ",\"%s%s\n",
	       (double)(now_ns() - t_begin) / 1e9,
	       o.csv_path ? ", also in " : "", o.csv_path ? o.csv_path : "");
	for (unsigned int bi = 0; bi < n_blocks; bi++)
		free(blocks[bi].res);
	if (csv_file && fclose(csv_file))
		die("%s: %s", o.csv_path, strerror(errno));
	return 0;
}
