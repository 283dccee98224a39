// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - what the parts of the lock benchmark share: the options,
 * the implementations and unit kinds by number, what one run measured
 * (struct result) and one block of runs (struct block), and the functions
 * each part offers the others.
 *
 * The parts, one concern each: locks.h and locks.c, the units of work and
 * the lock implementations; run.c, one timed run of T threads;
 * uncontended.c, the one-thread fast-path test; report.c, the CSV records
 * and the human tables; method.c, calibration and the method lines;
 * options.c, the command line; sweep.c, the --spin columns, each run in a
 * child process; ../bench_lock.c, main() and the order of the blocks.
 * Single-threaded apart from run.c's workers, which write only their own
 * struct worker.
 */
#ifndef BENCH_LOCK_H
#define BENCH_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Defaults; see --help and README.md for how they were chosen. */
#define DEF_THREADS	"1,2,4,8,16"
#define DEF_OPS		30000UL
#define DEF_REPS	3U
#define DEF_CS		5U
#define DEF_WORK	"10,0"
#define DEF_SAMPLE	16U
#define DEF_UNCONTENDED	1000000UL
#define DEF_BUDGET	0.5	/* seconds per run */
#define DEF_BLOCKING	"sleep,fault"
/*
 * The oversubscribed block's critical section: ten times the default, so
 * that an owner is preempted inside it often enough to matter (an owner
 * off-CPU in 1-4 % of operations at 50 units, against <= 0.4 % at 5).
 */
#define DEF_LONG_CS	50U
/* Its thread counts, as multiples of the CPUs online. */
#define OVERSUB_FACTORS	{ 2, 4, 8 }
/* Operations between two looks at the clock when latency is not sampled. */
#define CHECK_EVERY	16U

#define MAX_LIST	16
#define MAX_NAMES	16	/* >= NR_IMPLS, NR_UNITS */
#define MAX_SPIN	8	/* --spin settings */
/*
 * Longest module parameter name a --spin setting may give: room for every
 * tofutex parameter (wake_local_mechanism, the longest, has 20 characters).
 */
#define MAX_PARAM_NAME	23
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
	/*
	 * The --spin settings' tofutex columns, named at run time (sweep.c):
	 * the tofutex lock, each run in a child process of its own settings.
	 */
	IMPL_SPIN_FIRST,
	NR_IMPLS = IMPL_SPIN_FIRST + MAX_SPIN
};

struct impl_info {
	const char *name;
	const char *what;
};

/* Not const: sweep.c names the --spin columns. */
extern struct impl_info impls[NR_IMPLS];

enum unit_kind {
	UNIT_PAUSE,
	UNIT_LOOP,
	NR_UNITS
};

_Static_assert(NR_IMPLS <= MAX_NAMES && NR_UNITS <= MAX_NAMES,
	       "parse_names() needs MAX_NAMES >= every name list");

extern const char *const unit_names[NR_UNITS];

/*
 * What the critical section does besides its K units: nothing (plain), or
 * block the owner: sleep (usleep(1): the owner sleeps on a timer), fault
 * (the owner writes to its own page, which it dropped with
 * madvise(MADV_DONTNEED) after its previous critical section: a page fault
 * that allocates and zeroes a page).
 */
enum cs_kind {
	CS_PLAIN,
	CS_SLEEP,
	CS_FAULT,
	NR_CS_KINDS
};

extern const char *const cs_kind_names[NR_CS_KINDS];

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
	enum cs_kind blocking[NR_CS_KINDS];	/* the blocking blocks */
	unsigned int n_blocking;
	unsigned int long_cs;		/* oversubscribed block's K; 0: none */
	const char *spin[MAX_LIST];	/* --spin: "U", "U/K" or "U/NAME=V" */
	unsigned int n_spin;
	const char *csv_path;
	const char *emulation;		/* NULL: detect */
};

/* Iterations of the empty loop that make one "loop" unit (locks.c). */
extern unsigned long loop_iters;
/* --csv's file, NULL without it (report.c). */
extern FILE *csv_file;
/* Does the module count lock calls for this process (run.c)? */
extern bool tofutex_stats_ok;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Says what failed and exits with status 2 (locks.c). */
void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);

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

/* One measurement: what to run. */
struct point {
	enum impl_id impl;
	enum unit_kind unit;
	enum cs_kind kind;
	unsigned int cs, work, threads, sample;
	unsigned int check;	/* clock read every check ops without sample */
	unsigned long ops;
	double budget;		/* seconds; 0: none */
};

struct summary {
	double med, min, max;
};

/*
 * One block: a unit kind, a critical section (K units and what else it
 * does) and W, run at each of its thread counts; its results are
 * [threads][impl][rep]. serial_ns is the critical section's time alone,
 * measured in one thread without a lock: 1e9 / serial_ns ops/s is the
 * most any lock can reach on this block.
 */
struct block {
	enum unit_kind unit;
	enum cs_kind kind;
	unsigned int cs, work;
	unsigned int threads[MAX_LIST];
	unsigned int n_threads;
	double serial_ns;
	struct result *res;
	bool skipped[NR_IMPLS];
};

static inline struct result *block_res(const struct options *o,
				       const struct block *b, unsigned int ti,
				       enum impl_id impl)
{
	return &b->res[((size_t)ti * NR_IMPLS + impl) * o->reps];
}

/* run.c */
void run_once(const struct point *p, struct result *res);
double serial_cs_ns(enum unit_kind unit, enum cs_kind kind, unsigned int cs,
		    double clock_ns);

/* report.c */
int cmp_double(const void *a, const void *b);
struct summary summarize(const struct result *res, unsigned int reps,
			 size_t offset);
#define MED(res, reps, field) \
	summarize((res), (reps), offsetof(struct result, field))
void __attribute__((format(printf, 1, 2))) csv(const char *fmt, ...);
void csv_meta(const char *key, const char *value);
void csv_header(void);
void csv_run(const struct block *b, enum impl_id impl, unsigned int threads,
	     unsigned int rep, unsigned long ops, const struct result *res);
void csv_bound(const struct block *b);
void block_label(const struct options *o, const struct block *b, char *buf,
		 size_t len);
void print_cell(const char *s);
void print_block(const struct options *o, const struct block *b);
void print_summary(const struct options *o, const struct block *blocks,
		   unsigned int n_blocks);

/* uncontended.c */
void uncontended(const struct options *o, bool tofutex_on);

/* method.c */
double ns_per_pause(void);
double ns_per_loop_iter(void);
double ns_per_clock_gettime(void);
void print_method(const struct options *o, double pause_ns, double iter_ns,
		  double clock_ns, int tofutex_backend);

/* sweep.c */
void spin_columns(struct options *o);
void run_spin_column(const struct point *p, struct result *res);

/* options.c */
void env_options(int *argc, char ***argv);
void parse_options(int argc, char **argv, struct options *o);

#endif /* BENCH_LOCK_H */
