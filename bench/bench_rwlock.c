// SPDX-License-Identifier: GPL-2.0
/*
 * bench_rwlock - reader/writer locks: tofutex_rwlock_t against glibc's
 * default pthread_rwlock_t (reader-preferring, the baseline = 1.00) and
 * its writer-preferring kind (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP).
 *
 * Workload: T threads share one lock guarding SLOTS counters. Of every
 * R + 1 operations of a thread, R are reads (the counters summed under the
 * read lock) and one is a write (each counter incremented under the write
 * lock); between operations a thread does WORK_OUTSIDE units of work of
 * its own. Mixes R:1 = 1:1, 9:1, 99:1 (-m), threads 2-16 (-t). One point
 * runs --secs seconds; the counters are checked against the writes at
 * the end. The writers' wait (from the call to the return of the write
 * lock) is recorded per write: p99 and maximum over all threads, in us;
 * so is the longest a writer held the lock (its critical section, the
 * "one critical section" a starving writer may wait beyond handoff_ns),
 * and how many other writers were between their call and their release
 * when the write was called: a writer queued behind k others may wait for
 * their turns too (tofutex(4)), so the bound is judged on the writes that
 * found none ahead.
 *
 * Implementations are interleaved within each repetition; each point
 * reports the median over --reps runs of ops/s and its ratio to pthread
 * ("tie" within TIE_BAND, as bench_lock's), and the writer waits of the
 * median run. tofutex runs on the backend libtofutex chooses (the module
 * where /dev/tofutex is loaded, else futex(2); TOFUTEX_BACKEND forces it).
 * Lines starting with "bench_rwlock," are CSV: "meta" records (kernel,
 * CPUs, load average at start and end, backend, the hand-off wait) and one
 * "run" record per run: impl, mix, threads, rep, ops/s, writer wait p99
 * and max, longest write hold, in us; and, when handoff_ns is known, an
 * "over" record: impl, mix, threads, rep, the writes that waited past
 * handoff_ns plus the longest write hold, those of them that found no
 * writer ahead, the longest wait of a write that found none ahead (us),
 * and the most writers a write found ahead. bench/report-rwlock.sh makes
 * the tables, targets and chart from them. Options in BENCH_RWLOCK_OPTS
 * come before the command line's (make bench
 * TEST_ENV=BENCH_RWLOCK_OPTS=-m99).
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <tofutex.h>

#define DEF_THREADS	"2,4,8,16"
#define DEF_MIXES	"1,9,99"
#define DEF_SECS	0.5
#define DEF_REPS	3U
#define MAX_THREADS	64U
#define MAX_LIST	16U
#define MAX_REPS	15U
#define SLOTS		8U
#define WORK_OUTSIDE	100U
/* Writer waits kept per thread and run; more are counted in the maximum. */
#define MAX_SAMPLES	65536U
#define NSEC_PER_SEC	1000000000ULL
#define TIE_BAND	0.25
#define CSV_TAG		"bench_rwlock"
#define HANDOFF_PARAM	"/sys/module/tofutex/parameters/handoff_ns"
/* libtofutex's writer hand-off on futex(2) (lib/rwlock.c), in ns. */
#define FUTEX_HANDOFF_NS "4000000"

enum impl_id { IMPL_TOFUTEX, IMPL_PTHREAD, IMPL_WPREF, NR_IMPLS };
static const char *const impl_names[NR_IMPLS] = {
	"tofutex", "pthread", "pthread-wpref",
};

struct lock {
	enum impl_id impl;
	tofutex_rwlock_t t;
	pthread_rwlock_t p;
};

struct shared {
	struct lock lock;
	uint64_t slots[SLOTS];
	unsigned int mix;
	atomic_uint writers;
	atomic_bool go;
	atomic_bool stop;
};

struct worker {
	pthread_t thread;
	struct shared *sh;
	unsigned int id;
	uint64_t ops;
	uint64_t writes;
	uint64_t wmax;
	uint64_t hmax;
	uint64_t *waits;
	uint8_t *ahead;
	unsigned int nwaits;
	int err;
};

struct result {
	double ops_per_s;
	double wp99_us;
	double wmax_us;
	double hmax_us;
	unsigned long over;
	unsigned long over_alone;
	double amax_us;
	unsigned int max_ahead;
};

/* handoff_ns as print_method() found it, 0 when unknown. */
static uint64_t handoff_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void busy(unsigned int n)
{
	volatile unsigned int sink = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sink += i;
}

static int lock_init(struct lock *l, enum impl_id impl)
{
	pthread_rwlockattr_t a;
	int err;

	l->impl = impl;
	if (impl == IMPL_TOFUTEX)
		return tofutex_rwlock_init(&l->t);
	if (impl == IMPL_PTHREAD)
		return pthread_rwlock_init(&l->p, NULL);
	err = pthread_rwlockattr_init(&a);
	if (!err)
		err = pthread_rwlockattr_setkind_np(&a,
				PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	if (!err)
		err = pthread_rwlock_init(&l->p, &a);
	pthread_rwlockattr_destroy(&a);
	return err;
}

static void lock_destroy(struct lock *l)
{
	if (l->impl == IMPL_TOFUTEX)
		tofutex_rwlock_destroy(&l->t);
	else
		pthread_rwlock_destroy(&l->p);
}

static int lock_take(struct lock *l, bool write)
{
	if (l->impl == IMPL_TOFUTEX)
		return write ? tofutex_rwlock_wrlock(&l->t) :
			       tofutex_rwlock_rdlock(&l->t);
	return write ? pthread_rwlock_wrlock(&l->p) :
		       pthread_rwlock_rdlock(&l->p);
}

static int lock_release(struct lock *l)
{
	if (l->impl == IMPL_TOFUTEX)
		return tofutex_rwlock_unlock(&l->t);
	return pthread_rwlock_unlock(&l->p);
}

static void one_write(struct worker *w)
{
	struct shared *sh = w->sh;
	uint64_t start = now_ns(), waited, held;
	unsigned int i, ahead;

	ahead = atomic_fetch_add(&sh->writers, 1);
	w->err = lock_take(&sh->lock, true);
	if (w->err)
		return;
	held = now_ns();
	waited = held - start;
	for (i = 0; i < SLOTS; i++)
		sh->slots[i]++;
	held = now_ns() - held;
	w->err = lock_release(&sh->lock);
	atomic_fetch_sub(&sh->writers, 1);
	if (held > w->hmax)
		w->hmax = held;
	if (waited > w->wmax)
		w->wmax = waited;
	if (w->nwaits < MAX_SAMPLES) {
		w->ahead[w->nwaits] = ahead > UINT8_MAX ? UINT8_MAX : ahead;
		w->waits[w->nwaits++] = waited;
	}
	w->writes++;
}

static void one_read(struct worker *w)
{
	struct shared *sh = w->sh;
	volatile uint64_t sum = 0;
	unsigned int i;

	w->err = lock_take(&sh->lock, false);
	if (w->err)
		return;
	for (i = 0; i < SLOTS; i++)
		sum += sh->slots[i];
	w->err = lock_release(&sh->lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	uint64_t k = w->id;

	while (!atomic_load_explicit(&sh->go, memory_order_acquire))
		;
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed) &&
	       !w->err) {
		if (k++ % (sh->mix + 1) == 0)
			one_write(w);
		else
			one_read(w);
		w->ops++;
		busy(WORK_OUTSIDE);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p99 of the writers' waits of every worker, in ns. */
static uint64_t waits_p99(struct worker *w, unsigned int n)
{
	uint64_t *all, p99 = 0;
	size_t total = 0, i;
	unsigned int t;

	for (t = 0; t < n; t++)
		total += w[t].nwaits;
	if (!total)
		return 0;
	all = malloc(total * sizeof(*all));
	if (!all)
		return 0;
	for (t = 0, i = 0; t < n; t++) {
		memcpy(all + i, w[t].waits, w[t].nwaits * sizeof(*all));
		i += w[t].nwaits;
	}
	qsort(all, total, sizeof(*all), cmp_u64);
	p99 = all[(total * 99) / 100 < total ? (total * 99) / 100 : total - 1];
	free(all);
	return p99;
}

/*
 * The writes that waited past handoff_ns plus the run's longest write
 * hold: all, and those that found no other writer between call and
 * release (none queued or holding ahead of them); the longest wait of
 * the latter, and the most writers any write found ahead.
 */
static void waits_over(struct worker *w, unsigned int n, uint64_t hmax,
		       struct result *res)
{
	uint64_t bound = handoff_ns + hmax, amax = 0;
	unsigned int t, i;

	for (t = 0; t < n; t++)
		for (i = 0; i < w[t].nwaits; i++) {
			uint64_t v = w[t].waits[i];
			unsigned int a = w[t].ahead[i];

			if (a > res->max_ahead)
				res->max_ahead = a;
			if (!a && v > amax)
				amax = v;
			if (v <= bound)
				continue;
			res->over++;
			res->over_alone += !a;
		}
	res->amax_us = (double)amax / 1000.0;
}

static int run_one(enum impl_id impl, unsigned int threads, unsigned int mix,
		   double secs, struct result *res)
{
	struct worker w[MAX_THREADS];
	uint64_t start, elapsed, ops = 0, writes = 0, wmax = 0, hmax = 0;
	struct shared *sh;
	unsigned int t, i;
	int err = 0;

	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return ENOMEM;
	sh->mix = mix;
	err = lock_init(&sh->lock, impl);
	if (err) {
		free(sh);
		return err;
	}
	memset(w, 0, sizeof(w));
	for (t = 0; t < threads; t++) {
		w[t].sh = sh;
		w[t].id = t;
		w[t].waits = malloc(MAX_SAMPLES * sizeof(uint64_t));
		w[t].ahead = malloc(MAX_SAMPLES);
		if (!w[t].waits || !w[t].ahead ||
		    pthread_create(&w[t].thread, NULL, worker_main, &w[t])) {
			fprintf(stderr, "bench_rwlock: cannot start thread %u\n",
				t);
			exit(1);
		}
	}
	start = now_ns();
	atomic_store_explicit(&sh->go, true, memory_order_release);
	while (now_ns() - start < (uint64_t)(secs * NSEC_PER_SEC)) {
		struct timespec ts = { 0, 10000000L };

		nanosleep(&ts, NULL);
	}
	atomic_store(&sh->stop, true);
	for (t = 0; t < threads; t++) {
		pthread_join(w[t].thread, NULL);
		if (w[t].err && !err)
			err = w[t].err;
		ops += w[t].ops;
		writes += w[t].writes;
		if (w[t].wmax > wmax)
			wmax = w[t].wmax;
		if (w[t].hmax > hmax)
			hmax = w[t].hmax;
	}
	elapsed = now_ns() - start;
	for (i = 0; i < SLOTS && !err; i++)
		if (sh->slots[i] != writes) {
			fprintf(stderr, "bench_rwlock: %s lost writes: %llu of %llu\n",
				impl_names[impl],
				(unsigned long long)sh->slots[i],
				(unsigned long long)writes);
			err = EIO;
		}
	res->ops_per_s = (double)ops * NSEC_PER_SEC / (double)elapsed;
	res->wp99_us = (double)waits_p99(w, threads) / 1000.0;
	res->wmax_us = (double)wmax / 1000.0;
	res->hmax_us = (double)hmax / 1000.0;
	memset(&res->over, 0, sizeof(*res) - offsetof(struct result, over));
	if (handoff_ns)
		waits_over(w, threads, hmax, res);
	for (t = 0; t < threads; t++) {
		free(w[t].waits);
		free(w[t].ahead);
	}
	lock_destroy(&sh->lock);
	free(sh);
	return err;
}

static unsigned int parse_list(const char *s, unsigned int *out)
{
	unsigned int n = 0;
	char *end;

	while (*s && n < MAX_LIST) {
		out[n] = (unsigned int)strtoul(s, &end, 10);
		if (end == s)
			break;
		n++;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_rwlock [-t THREADS] [-m MIXES] [-s SECS] [-r REPS]\n"
		"  -t  thread counts, default " DEF_THREADS "\n"
		"  -m  reads per write, default " DEF_MIXES "\n"
		"  -s  seconds per run, default 0.5\n"
		"  -r  repetitions (median reported), default 3, at most 15\n");
	exit(2);
}

/* The first line of @path into @buf (newline dropped), "" when unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The 1-, 5- and 15-minute load averages, as /proc/loadavg has them. */
static void print_loadavg(const char *when)
{
	char buf[128], one[16], five[16], fifteen[16];

	read_line("/proc/loadavg", buf, sizeof(buf));
	if (sscanf(buf, "%15s %15s %15s", one, five, fifteen) != 3)
		return;
	printf("%s,meta,loadavg_%s,%s %s %s\n", CSV_TAG, when, one, five,
	       fifteen);
}

static void print_method(double secs, unsigned int reps)
{
	bool module = tofutex_backend() == TOFUTEX_BACKEND_MODULE;
	struct utsname u;
	char handoff[32];

	uname(&u);
	printf("%s,meta,kernel,%s\n", CSV_TAG, u.release);
	printf("%s,meta,cpus,%ld\n", CSV_TAG, sysconf(_SC_NPROCESSORS_ONLN));
	print_loadavg("start");
	printf("%s,meta,backend,%s\n", CSV_TAG, module ? "module" : "futex");
	if (module)
		read_line(HANDOFF_PARAM, handoff, sizeof(handoff));
	else
		snprintf(handoff, sizeof(handoff), "%s", FUTEX_HANDOFF_NS);
	printf("%s,meta,handoff_ns,%s\n", CSV_TAG, handoff[0] ? handoff : "?");
	handoff_ns = strtoull(handoff, NULL, 10);
	printf("%s,meta,secs_per_run,%.2f\n%s,meta,reps,%u\n", CSV_TAG, secs,
	       CSV_TAG, reps);
	printf("%s,meta,work_outside,%u\n%s,meta,slots,%u\n", CSV_TAG,
	       WORK_OUTSIDE, CSV_TAG, SLOTS);
	printf("%s,record,impl,mix,threads,rep,ops_per_s,wait_p99_us,"
	       "wait_max_us,hold_max_us\n", CSV_TAG);
}

/* The run of @runs whose ops/s is the median one. */
static const struct result *median(struct result *runs, unsigned int n)
{
	double v[MAX_REPS], med;
	unsigned int i;

	for (i = 0; i < n; i++)
		v[i] = runs[i].ops_per_s;
	qsort(v, n, sizeof(v[0]), cmp_double);
	med = v[n / 2];
	for (i = 0; i < n; i++)
		if (runs[i].ops_per_s == med)
			return &runs[i];
	return &runs[0];
}

/*
 * BENCH_RWLOCK_OPTS: options taken before the command line's, split at
 * blanks, as bench_lock's BENCH_LOCK_OPTS: `make bench` runs every
 * benchmark without arguments, and TEST_ENV changes them.
 */
static void env_options(int *argc, char ***argv)
{
	const char *env = getenv("BENCH_RWLOCK_OPTS");
	char *copy, *save = NULL, *tok, **nargv;
	int n = 1, i;

	if (!env || !*env)
		return;
	copy = strdup(env);
	nargv = calloc(strlen(env) / 2 + 2 + (size_t)*argc, sizeof(*nargv));
	if (!copy || !nargv) {
		fprintf(stderr, "bench_rwlock: out of memory\n");
		exit(1);
	}
	nargv[0] = (*argv)[0];
	for (tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save))
		nargv[n++] = tok;
	for (i = 1; i < *argc; i++)
		nargv[n++] = (*argv)[i];
	nargv[n] = NULL;
	*argc = n;
	*argv = nargv;
}

int main(int argc, char **argv)
{
	static struct result runs[MAX_LIST][MAX_LIST][NR_IMPLS][MAX_REPS];
	unsigned int threads[MAX_LIST], mixes[MAX_LIST], nt, nm, reps = DEF_REPS;
	unsigned int m, t, r, i;
	double secs = DEF_SECS, ratio;
	const struct result *a, *b;
	int opt, err;

	nt = parse_list(DEF_THREADS, threads);
	nm = parse_list(DEF_MIXES, mixes);
	env_options(&argc, &argv);
	while ((opt = getopt(argc, argv, "t:m:s:r:")) != -1) {
		switch (opt) {
		case 't': nt = parse_list(optarg, threads); break;
		case 'm': nm = parse_list(optarg, mixes); break;
		case 's': secs = strtod(optarg, NULL); break;
		case 'r': reps = (unsigned int)strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (!nt || !nm || !reps || reps > MAX_REPS || !(secs > 0))
		usage();
	for (t = 0; t < nt; t++)
		if (!threads[t] || threads[t] > MAX_THREADS)
			usage();

	print_method(secs, reps);
	for (r = 0; r < reps; r++)
		for (m = 0; m < nm; m++)
			for (t = 0; t < nt; t++)
				for (i = 0; i < NR_IMPLS; i++) {
					struct result *res = &runs[m][t][i][r];

					err = run_one(i, threads[t], mixes[m],
						      secs, res);
					if (err) {
						fprintf(stderr, "bench_rwlock: %s: %s\n",
							impl_names[i],
							strerror(err));
						return 1;
					}
					printf("%s,run,%s,%u,%u,%u,%.0f,%.1f,%.1f,%.1f\n",
					       CSV_TAG, impl_names[i], mixes[m],
					       threads[t], r, res->ops_per_s,
					       res->wp99_us, res->wmax_us,
					       res->hmax_us);
					if (handoff_ns)
						printf("%s,over,%s,%u,%u,%u,%lu,%lu,%.1f,%u\n",
						       CSV_TAG, impl_names[i],
						       mixes[m], threads[t], r,
						       res->over,
						       res->over_alone,
						       res->amax_us,
						       res->max_ahead);
					fflush(stdout);
				}

	print_loadavg("end");
	for (m = 0; m < nm; m++) {
		printf("== bench_rwlock %u:1 read:write ==\n", mixes[m]);
		printf("%7s %14s %14s %14s %7s   %-21s %-21s %-21s\n",
		       "threads", "tofutex ops/s", "pthread ops/s",
		       "wpref ops/s", "ratio", "tofutex wait p99/max",
		       "pthread wait p99/max", "wpref wait p99/max");
		for (t = 0; t < nt; t++) {
			const struct result *c;
			char ratio_s[16];

			a = median(runs[m][t][IMPL_TOFUTEX], reps);
			b = median(runs[m][t][IMPL_PTHREAD], reps);
			c = median(runs[m][t][IMPL_WPREF], reps);
			ratio = b->ops_per_s > 0 ? a->ops_per_s / b->ops_per_s : 0;
			if (ratio > 1 - TIE_BAND && ratio < 1 + TIE_BAND)
				snprintf(ratio_s, sizeof(ratio_s), "%.2f tie", ratio);
			else
				snprintf(ratio_s, sizeof(ratio_s), "%.2f", ratio);
			printf("%7u %14.0f %14.0f %14.0f %9s   %9.0f/%-9.0f us "
			       "%9.0f/%-9.0f us %9.0f/%-9.0f us\n",
			       threads[t], a->ops_per_s, b->ops_per_s,
			       c->ops_per_s, ratio_s, a->wp99_us, a->wmax_us,
			       b->wp99_us, b->wmax_us, c->wp99_us, c->wmax_us);
		}
	}
	return 0;
}
