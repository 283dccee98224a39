// SPDX-License-Identifier: GPL-2.0
/*
 * bench_cond - condition variables: tofutex cond+mutex against glibc's
 * pthread cond+mutex, on two workloads.
 *
 * - queue: T/2 producers and T/2 consumers pass items through a bounded
 *   queue (QUEUE_SLOTS slots) guarded by one mutex and two condition
 *   variables (not full, not empty), with signal. One operation is one
 *   item. Every item's value is summed by the consumers and checked.
 * - barrier: T threads meet at a barrier made of one mutex and one
 *   condition variable; the last to arrive advances the generation and
 *   broadcasts. One operation is one round (every thread passing once).
 *   Every thread checks it passed every round.
 *
 * Implementations: tofutex (libtofutex on the backend it chooses, the
 * module where /dev/tofutex is loaded), tofutex-futex (libtofutex forced to
 * its futex(2) backend, TOFUTEX_BACKEND=futex), pthread (glibc's default
 * mutex with a default condition variable, the baseline = 1.00) and
 * adaptive (PTHREAD_MUTEX_ADAPTIVE_NP with a default condition variable).
 *
 * Method, as bench_lock's (bench/lock.md): every run is a fresh child
 * process (so that each gets the backend its environment asks for),
 * implementations are interleaved within each repetition, each point
 * reports the median over --reps runs and the min-max spread, and the
 * ratio of medians to pthread, "tie" within TIE_BAND. A run stops at its
 * budget (--budget seconds; its numbers are then marked "*"). Lines
 * starting with "bench_cond," are CSV for bench/report-cond.sh.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tofutex.h>

#define DEF_THREADS	"2,4,8,16"
#define DEF_OPS		20000UL
#define DEF_REPS	3U
#define DEF_BUDGET	2.0
#define MAX_THREADS	64U
#define MAX_LIST	16U
#define QUEUE_SLOTS	16U
#define NSEC_PER_SEC	1000000000ULL
/* A ratio within this distance of 1.00 is a tie, as in bench_lock. */
#define TIE_BAND	0.25
#define CSV_TAG		"bench_cond"

enum impl_id { IMPL_TOFUTEX, IMPL_TOFUTEX_FUTEX, IMPL_PTHREAD, IMPL_ADAPTIVE,
	       NR_IMPLS };
static const char *const impl_names[NR_IMPLS] = {
	"tofutex", "tofutex-futex", "pthread", "adaptive",
};

enum workload { WL_QUEUE, WL_BARRIER, NR_WORKLOADS };
static const char *const wl_names[NR_WORKLOADS] = { "queue", "barrier" };

/* One lock and its condition variables, of either kind. */
struct sync {
	enum impl_id impl;
	tofutex_mutex_t tm;
	tofutex_cond_t tc[2];
	pthread_mutex_t pm;
	pthread_cond_t pc[2];
};

static bool is_tofutex(const struct sync *s)
{
	return s->impl == IMPL_TOFUTEX || s->impl == IMPL_TOFUTEX_FUTEX;
}

static int sync_init(struct sync *s, enum impl_id impl)
{
	pthread_mutexattr_t a;

	memset(s, 0, sizeof(*s));
	s->impl = impl;
	if (is_tofutex(s))
		return tofutex_mutex_init(&s->tm) || tofutex_cond_init(&s->tc[0]) ||
		       tofutex_cond_init(&s->tc[1]);
	pthread_mutexattr_init(&a);
	if (impl == IMPL_ADAPTIVE)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (pthread_mutex_init(&s->pm, &a))
		return 1;
	pthread_mutexattr_destroy(&a);
	return pthread_cond_init(&s->pc[0], NULL) ||
	       pthread_cond_init(&s->pc[1], NULL);
}

static void s_lock(struct sync *s)
{
	if (is_tofutex(s))
		tofutex_mutex_lock(&s->tm);
	else
		pthread_mutex_lock(&s->pm);
}

static void s_unlock(struct sync *s)
{
	if (is_tofutex(s))
		tofutex_mutex_unlock(&s->tm);
	else
		pthread_mutex_unlock(&s->pm);
}

static void s_wait(struct sync *s, int c)
{
	if (is_tofutex(s))
		tofutex_cond_wait(&s->tc[c], &s->tm);
	else
		pthread_cond_wait(&s->pc[c], &s->pm);
}

static void s_signal(struct sync *s, int c)
{
	if (is_tofutex(s))
		tofutex_cond_signal(&s->tc[c]);
	else
		pthread_cond_signal(&s->pc[c]);
}

static void s_broadcast(struct sync *s, int c)
{
	if (is_tofutex(s))
		tofutex_cond_broadcast(&s->tc[c]);
	else
		pthread_cond_broadcast(&s->pc[c]);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* State of one run, shared by its threads (all under s.m but @stop_at). */
struct run {
	struct sync s;
	unsigned int threads;
	unsigned long ops;
	uint64_t stop_at;
	bool cut;
	/* queue */
	unsigned long slot[QUEUE_SLOTS];
	unsigned int head, count, producers, producers_done;
	unsigned long produced, consumed, sum_in, sum_out;
	/* barrier */
	unsigned int arrived;
	unsigned long generation;
	bool done;
	atomic_ulong passes;
};

enum { NOT_EMPTY, NOT_FULL };

static void *producer_main(void *arg)
{
	struct run *r = arg;
	unsigned long v;

	for (;;) {
		s_lock(&r->s);
		while (r->count == QUEUE_SLOTS)
			s_wait(&r->s, NOT_FULL);
		if (r->produced == r->ops || now_ns() > r->stop_at) {
			r->cut |= r->produced < r->ops;
			if (++r->producers_done == r->producers)
				s_broadcast(&r->s, NOT_EMPTY);
			s_unlock(&r->s);
			return NULL;
		}
		v = ++r->produced;
		r->sum_in += v;
		r->slot[(r->head + r->count++) % QUEUE_SLOTS] = v;
		s_signal(&r->s, NOT_EMPTY);
		s_unlock(&r->s);
	}
}

static void *consumer_main(void *arg)
{
	struct run *r = arg;

	for (;;) {
		s_lock(&r->s);
		while (!r->count && r->producers_done < r->producers)
			s_wait(&r->s, NOT_EMPTY);
		if (!r->count) {
			/* Wake the other consumers still waiting. */
			s_broadcast(&r->s, NOT_EMPTY);
			s_unlock(&r->s);
			return NULL;
		}
		r->sum_out += r->slot[r->head];
		r->head = (r->head + 1) % QUEUE_SLOTS;
		r->count--;
		r->consumed++;
		s_signal(&r->s, NOT_FULL);
		s_unlock(&r->s);
	}
}

static void *barrier_main(void *arg)
{
	struct run *r = arg;
	unsigned long gen;
	bool done;

	do {
		s_lock(&r->s);
		gen = r->generation;
		if (++r->arrived == r->threads) {
			r->arrived = 0;
			r->generation++;
			if (r->generation == r->ops || now_ns() > r->stop_at) {
				r->cut = r->generation < r->ops;
				r->done = true;
			}
			s_broadcast(&r->s, 0);
		} else {
			while (r->generation == gen)
				s_wait(&r->s, 0);
		}
		done = r->done;
		s_unlock(&r->s);
		atomic_fetch_add(&r->passes, 1);
	} while (!done);
	return NULL;
}

struct result {
	int ok;
	int cut;
	unsigned long ops;
	uint64_t ns;
	int backend;
};

/* One run, in the calling (child) process. */
static struct result run_point(enum workload wl, enum impl_id impl,
			       unsigned int threads, unsigned long ops,
			       double budget)
{
	static struct run r;
	struct result res = { 0 };
	pthread_t t[MAX_THREADS];
	unsigned int i;
	uint64_t t0;

	memset(&r, 0, sizeof(r));
	if (sync_init(&r.s, impl))
		return res;
	r.threads = threads;
	r.ops = ops;
	r.producers = threads / 2;
	t0 = now_ns();
	r.stop_at = t0 + (uint64_t)(budget * NSEC_PER_SEC);
	for (i = 0; i < threads; i++) {
		void *(*fn)(void *) = barrier_main;

		if (wl == WL_QUEUE)
			fn = i < r.producers ? producer_main : consumer_main;
		if (pthread_create(&t[i], NULL, fn, &r))
			return res;
	}
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	res.ns = now_ns() - t0;
	res.cut = r.cut;
	if (wl == WL_QUEUE) {
		res.ops = r.consumed;
		res.ok = r.consumed == r.produced && r.sum_in == r.sum_out;
	} else {
		res.ops = r.generation;
		res.ok = atomic_load(&r.passes) == r.generation * threads;
	}
	res.backend = is_tofutex(&r.s) ? tofutex_backend() : 0;
	return res;
}

/* One run in a child process, with TOFUTEX_BACKEND set for it. */
static struct result run_child(enum workload wl, enum impl_id impl,
			       unsigned int threads, unsigned long ops,
			       double budget)
{
	struct result res = { 0 };
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return res;
	pid = fork();
	if (pid < 0)
		return res;
	if (pid == 0) {
		close(fds[0]);
		if (impl == IMPL_TOFUTEX_FUTEX)
			setenv("TOFUTEX_BACKEND", "futex", 1);
		res = run_point(wl, impl, threads, ops, budget);
		_exit(write(fds[1], &res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(fds[1]);
	if (read(fds[0], &res, sizeof(res)) != sizeof(res))
		memset(&res, 0, sizeof(res));
	close(fds[0]);
	waitpid(pid, &status, 0);
	return res;
}

struct options {
	unsigned int threads[MAX_LIST], n_threads;
	unsigned long ops;
	unsigned int reps;
	double budget;
	/* The implementations and workloads to run, one bit each. */
	unsigned int impls, workloads;
};

/* parse_names: ARG, comma-separated names of NAMES[N], as a bit mask. */
static int parse_names(unsigned int *mask, const char *arg,
		       const char *const *names, unsigned int n)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned int i;

	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < n && strcmp(tok, names[i]); i++)
			;
		if (i == n) {
			free(copy);
			return -1;
		}
		*mask |= 1U << i;
	}
	free(copy);
	return *mask ? 0 : -1;
}

static int parse_threads(struct options *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned long v;

	o->n_threads = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		v = strtoul(tok, NULL, 10);
		if (v < 2 || v > MAX_THREADS || o->n_threads == MAX_LIST) {
			free(copy);
			return -1;
		}
		o->threads[o->n_threads++] = (unsigned int)v;
	}
	free(copy);
	return o->n_threads ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_method(const struct options *o)
{
	struct utsname u;
	uint32_t abi = 0;
	uint64_t feat = 0;

	uname(&u);
	printf("%s,meta,kernel,%s\n", CSV_TAG, u.release);
	printf("%s,meta,cpus,%ld\n", CSV_TAG, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%s,meta,ops,%lu\n", CSV_TAG, o->ops);
	printf("%s,meta,reps,%u\n", CSV_TAG, o->reps);
	printf("%s,meta,budget_s,%.2f\n", CSV_TAG, o->budget);
	printf("%s,meta,queue_slots,%u\n", CSV_TAG, QUEUE_SLOTS);
	printf("%s,meta,tofutex_backend,%s\n", CSV_TAG,
	       tofutex_backend() == TOFUTEX_BACKEND_MODULE ? "module" : "futex");
	if (!tofutex_version(&abi, &feat))
		printf("%s,meta,module_features,%#llx\n", CSV_TAG,
		       (unsigned long long)feat);
	printf("%s,record,workload,impl,threads,rep,ops,ns,cut\n", CSV_TAG);
}

static int bench(const struct options *o)
{
	double v[NR_IMPLS][MAX_LIST][16];
	bool cut[NR_IMPLS][MAX_LIST];
	unsigned int w, ti, rep, k;
	struct result res;
	double med[NR_IMPLS];

	for (w = 0; w < NR_WORKLOADS; w++) {
		if (!(o->workloads & 1U << w))
			continue;
		memset(cut, 0, sizeof(cut));
		for (rep = 0; rep < o->reps; rep++)
			for (ti = 0; ti < o->n_threads; ti++)
				for (k = 0; k < NR_IMPLS; k++) {
					if (!(o->impls & 1U << k))
						continue;
					res = run_child(w, k, o->threads[ti],
							o->ops, o->budget);
					if (!res.ok || !res.ns) {
						printf("FAILED: %s %s T=%u: run failed or counts wrong\n",
						       wl_names[w], impl_names[k],
						       o->threads[ti]);
						return 2;
					}
					printf("%s,run,%s,%s,%u,%u,%lu,%llu,%d\n",
					       CSV_TAG, wl_names[w], impl_names[k],
					       o->threads[ti], rep, res.ops,
					       (unsigned long long)res.ns, res.cut);
					v[k][ti][rep] = res.ops * 1e9 / res.ns;
					cut[k][ti] |= res.cut;
				}
		printf("\n== %s: ops/s, median over %u runs (ratio to pthread) ==\n",
		       wl_names[w], o->reps);
		printf("%8s", "threads");
		for (k = 0; k < NR_IMPLS; k++)
			if (o->impls & 1U << k)
				printf(" %22s", impl_names[k]);
		printf("\n");
		for (ti = 0; ti < o->n_threads; ti++) {
			printf("%8u", o->threads[ti]);
			for (k = 0; k < NR_IMPLS; k++)
				med[k] = o->impls & 1U << k ?
					 median(v[k][ti], o->reps) : 0;
			for (k = 0; k < NR_IMPLS; k++) {
				if (!(o->impls & 1U << k))
					continue;
				printf(" %12.0f%s (%4.2f)", med[k],
				       cut[k][ti] ? "*" : " ",
				       med[IMPL_PTHREAD] > 0 ?
				       med[k] / med[IMPL_PTHREAD] : 0.0);
			}
			printf("\n");
		}
	}
	printf("\n(* a run stopped at its budget; ties are ratios within %.2f of 1.00)\n",
	       TIE_BAND);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_cond [-t T,T,...] [-n OPS] [-r REPS] [-b SECONDS] [-i IMPL,...]\n"
"                  [-w WORKLOAD,...]\n"
"  -t  thread counts, each >= 2 (default " DEF_THREADS ")\n"
"  -n  operations per run: items (queue) or rounds (barrier) (default %lu)\n"
"  -r  repetitions per point, at most 16 (default %u)\n"
"  -b  budget per run in seconds (default %.1f)\n"
"  -i  implementations: tofutex, tofutex-futex, pthread, adaptive (default\n"
"      all; ratios need pthread, else they print as 0.00)\n"
"  -w  workloads: queue, barrier (default both)\n"
"Options in BENCH_COND_OPTS come before the command line's.\n",
		DEF_OPS, DEF_REPS, DEF_BUDGET);
}

static int parse(struct options *o, int argc, char **argv)
{
	int c;

	optind = 1;
	while ((c = getopt(argc, argv, "t:n:r:b:i:w:h")) != -1) {
		switch (c) {
		case 't':
			if (parse_threads(o, optarg))
				return -1;
			break;
		case 'n':
			o->ops = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			o->reps = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			o->budget = strtod(optarg, NULL);
			break;
		case 'i':
			if (parse_names(&o->impls, optarg, impl_names, NR_IMPLS))
				return -1;
			break;
		case 'w':
			if (parse_names(&o->workloads, optarg, wl_names,
					NR_WORKLOADS))
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (!o->ops || !o->reps || o->reps > 16 || !(o->budget > 0))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .ops = DEF_OPS, .reps = DEF_REPS,
			     .budget = DEF_BUDGET,
			     .impls = (1U << NR_IMPLS) - 1,
			     .workloads = (1U << NR_WORKLOADS) - 1 };
	const char *env = getenv("BENCH_COND_OPTS");
	char *argv_env[32] = { argv[0] }, *copy = NULL, *save = NULL, *tok;
	int argc_env = 1;

	parse_threads(&o, DEF_THREADS);
	if (env) {
		copy = strdup(env);
		for (tok = strtok_r(copy, " ", &save); tok && argc_env < 31;
		     tok = strtok_r(NULL, " ", &save))
			argv_env[argc_env++] = tok;
		if (parse(&o, argc_env, argv_env)) {
			usage(stderr);
			return 1;
		}
	}
	if (parse(&o, argc, argv)) {
		usage(stderr);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	print_method(&o);
	return bench(&o);
}
