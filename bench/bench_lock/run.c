// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - one run: T worker threads share a point's operations on one
 * lock, then their times, counts and sampled latencies become a struct
 * result. Each worker writes only its own cache-line aligned struct
 * worker; run_once() reads them after joining every worker. The run's
 * deadline is the only field the workers share (set once, by the first to
 * start, with a compare-and-exchange). A blocking critical section
 * (enum cs_kind) touches only its worker's own page.
 */
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "locks.h"

bool tofutex_stats_ok;

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
	char *pages;			/* CS_FAULT: this worker's pages */
	unsigned int next_page;		/* the one the next fault writes */
};

struct run {
	enum impl_id impl;
	enum unit_kind unit;
	enum cs_kind kind;
	unsigned int cs, work, sample;
	unsigned int check;		/* look at the clock every check ops */
	uint64_t budget_ns;		/* 0: no deadline */
	uint64_t deadline_ns;		/* 0: none (yet); atomic */
	struct bench_lock lock;
	pthread_barrier_t barrier;
};

/*
 * CS_FAULT: each worker writes, one critical section after another, to the
 * FAULT_PAGES pages of its own region, each untouched since the region was
 * last dropped with madvise(MADV_DONTNEED): every write is a page fault
 * that allocates and zeroes a page. Dropping a region per FAULT_PAGES
 * operations rather than a page per operation keeps the madvise() calls
 * (and their TLB flushes) from dominating the work between locks.
 */
#define FAULT_PAGES	64U

static size_t page_size;

/* The blocking part of a critical section. */
static inline void block_owner(enum cs_kind kind, char *pages,
			       unsigned int next_page)
{
	if (kind == CS_SLEEP)
		usleep(1);
	else if (kind == CS_FAULT)
		*(volatile char *)(pages + next_page * page_size) = 1;
}

/* After the unlock: move to the next page, dropping the region when used. */
static inline void next_page(char *pages, unsigned int *next)
{
	if (++*next < FAULT_PAGES)
		return;
	*next = 0;
	if (madvise(pages, FAULT_PAGES * page_size, MADV_DONTNEED))
		die("madvise(MADV_DONTNEED): %s", strerror(errno));
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
	const enum cs_kind kind = r->kind;
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
		do_lock(impl, l, &w->futex_waits);
		if (check && r->sample)
			w->lat[w->n_lat++] = now_ns() - t0;
		v = *counter;
		spend(unit, r->cs);
		if (kind != CS_PLAIN)
			block_owner(kind, w->pages, w->next_page);
		*counter = v + 1;
		do_unlock(impl, l, &w->futex_wakes);
		if (kind == CS_FAULT)
			next_page(w->pages, &w->next_page);
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

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

/* CS_FAULT: a region per worker, so no two fault on the same page. */
static char *map_pages(enum cs_kind kind, unsigned int n)
{
	char *pages;

	if (kind != CS_FAULT)
		return NULL;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, n * FAULT_PAGES * page_size,
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	return pages;
}

static void unmap_pages(char *pages, unsigned int n)
{
	if (pages && munmap(pages, n * FAULT_PAGES * page_size))
		die("munmap: %s", strerror(errno));
}

void run_once(const struct point *p, struct result *res)
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
	char *pages;
	unsigned long done = 0, dmin = ULONG_MAX;
	bool cut = false;
	int err;

	if (impl >= IMPL_SPIN_FIRST) {
		run_spin_column(p, res);
		return;
	}
	/* Aligned: struct run holds the cache-line aligned lock. */
	r = aligned_alloc(64, (sizeof(*r) + 63) & ~(size_t)63);
	w = aligned_alloc(64, sizeof(*w) * threads);
	if (!r || !w)
		die("out of memory");
	memset(r, 0, sizeof(*r));
	memset(w, 0, sizeof(*w) * threads);
	r->impl = impl;
	r->unit = p->unit;
	r->kind = p->kind;
	r->cs = p->cs;
	r->work = p->work;
	r->sample = p->sample;
	r->check = p->sample ? p->sample : p->check ? p->check : CHECK_EVERY;
	r->budget_ns = (uint64_t)(p->budget * 1e9);
	lock_init(impl, &r->lock);
	pages = map_pages(p->kind, threads);
	err = pthread_barrier_init(&r->barrier, NULL, threads);
	if (err)
		die("pthread_barrier_init: %s", strerror(err));

	for (unsigned int t = 0; t < threads; t++) {
		w[t].run = r;
		if (pages)
			w[t].pages = pages + t * FAULT_PAGES * page_size;
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
	unmap_pages(pages, threads);
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

/*
 * The serial bound's denominator: the critical section alone (counter
 * read, K units, the blocking part, counter write), one thread, no lock,
 * CS_FAULT's region dropped between trials outside the timing. Median
 * of up to SERIAL_TRIALS trials within SERIAL_BUDGET_NS, each the mean of
 * a batch (one critical section for the blocking kinds, whose time is
 * long against the clock read; SERIAL_BATCH otherwise), less the cost of
 * one clock read. The median, not the minimum: a blocking critical
 * section's time varies by nature, and the bound must be its typical one.
 */
#define SERIAL_TRIALS		1001
#define SERIAL_BUDGET_NS	(200 * 1000 * 1000ULL)
#define SERIAL_BATCH		64

double serial_cs_ns(enum unit_kind unit, enum cs_kind kind, unsigned int cs,
		    double clock_ns)
{
	static double ns[SERIAL_TRIALS];
	const unsigned int batch = kind == CS_PLAIN ? SERIAL_BATCH : 1;
	volatile unsigned long counter = 0;
	char *pages = map_pages(kind, 1);
	uint64_t begin = now_ns();
	unsigned int n = 0, next = 0;

	while (n < SERIAL_TRIALS && now_ns() - begin < SERIAL_BUDGET_NS) {
		uint64_t t0 = now_ns();

		for (unsigned int i = 0; i < batch; i++) {
			unsigned long v = counter;

			spend(unit, cs);
			block_owner(kind, pages, next);
			counter = v + 1;
		}
		ns[n++] = ((double)(now_ns() - t0) - clock_ns) / batch;
		if (kind == CS_FAULT)
			next_page(pages, &next);
	}
	unmap_pages(pages, 1);
	qsort(ns, n, sizeof(ns[0]), cmp_double);
	return ns[n / 2] > 1.0 ? ns[n / 2] : 1.0;
}
