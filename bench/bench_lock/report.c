// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the output: CSV records (on stdout and, with --csv, in a
 * file), medians and spreads of a point's repetitions, each block's tables
 * as it finishes and the closing summary. Called from the main thread
 * only, between runs.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lock.h"

FILE *csv_file;

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A CSV line on stdout and, with --csv, in the file. */
void __attribute__((format(printf, 1, 2))) csv(const char *fmt, ...)
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
void csv_meta(const char *key, const char *value)
{
	char buf[512];
	size_t i;

	snprintf(buf, sizeof(buf), "%s", value);
	for (i = 0; buf[i]; i++)
		if (buf[i] == ',' || buf[i] == '\n')
			buf[i] = ';';
	csv("meta,%s,%s", key, buf);
}

/* The run records' header; kind (enum cs_kind) comes last. */
void csv_header(void)
{
	csv("record,impl,unit,cs_units,work_units,threads,rep,ops"
#define X(f) "," #f
	    RESULT_FIELDS(X)
#undef X
	    ",kind");
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

void csv_run(const struct block *b, enum impl_id impl, unsigned int threads,
	     unsigned int rep, unsigned long ops, const struct result *res)
{
	char line[1024], num[32];
	size_t len;

	len = (size_t)snprintf(line, sizeof(line), "run,%s,%s,%u,%u,%u,%u,%lu",
			       impls[impl].name, unit_names[b->unit], b->cs,
			       b->work, threads, rep, ops);
#define X(f) \
	csv_num(num, sizeof(num), res->f); \
	len += (size_t)snprintf(line + len, sizeof(line) - len, ",%s", num);
	RESULT_FIELDS(X)
#undef X
	csv("%s,%s", line, cs_kind_names[b->kind]);
}

/* A block's serial bound: unit, K, W, kind, critical section ns alone. */
void csv_bound(const struct block *b)
{
	csv("bound,%s,%u,%u,%s,%.1f", unit_names[b->unit], b->cs, b->work,
	    cs_kind_names[b->kind], b->serial_ns);
}

/*
 * A block's name in the summaries (and report-lock.sh's): the unit, then
 * "+sleep" or "+fault" for a blocking critical section, then "-cs<K>" when
 * K is not --cs.
 */
void block_label(const struct options *o, const struct block *b, char *buf,
		 size_t len)
{
	int n = snprintf(buf, len, "%s", unit_names[b->unit]);

	if (b->kind != CS_PLAIN)
		n += snprintf(buf + n, len - (size_t)n, "+%s",
			      cs_kind_names[b->kind]);
	if (b->cs != o->cs)
		snprintf(buf + n, len - (size_t)n, "-cs%u", b->cs);
}

struct summary summarize(const struct result *res, unsigned int reps,
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

#define COLW 15

void print_cell(const char *s)
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

/* What a block's critical section does besides its units, for titles. */
static const char *cs_what(enum cs_kind kind)
{
	switch (kind) {
	case CS_SLEEP:
		return " + usleep(1)";
	case CS_FAULT:
		return " + a page fault";
	case CS_PLAIN:
	case NR_CS_KINDS:
		break;
	}
	return "";
}

/* A point's median throughput as a share of its block's serial bound. */
static double share(const struct block *b, const struct result *res,
		    unsigned int reps)
{
	return MED(res, reps, ops_per_s).med * b->serial_ns / 1e9;
}

static void throughput_cell(const struct options *o, const struct block *b,
			    unsigned int ti, enum impl_id impl, char *buf,
			    size_t len)
{
	const struct result *res = block_res(o, b, ti, impl);
	struct summary s = MED(res, o->reps, ops_per_s);

	snprintf(buf, len, "%.0f[%.0f-%.0f]%s", s.med / 1e3, s.min / 1e3,
		 s.max / 1e3, cut_mark(res, o->reps));
}

/* The cells of one point: a table's row or a summary's (see below). */
typedef void (*point_cell_fn)(const struct options *o, const struct block *b,
			      unsigned int ti, enum impl_id impl, char *buf,
			      size_t len);

/*
 * One table of block @b: a row per thread count, a cell per implementation
 * that ran, from @cell; @title printed above it.
 */
static void block_table(const struct options *o, const struct block *b,
			const char *title, point_cell_fn cell)
{
	char buf[64];

	printf("\n%s (unit: %s)\n", title, unit_names[b->unit]);
	print_impl_header(o, b, "threads");
	for (unsigned int ti = 0; ti < b->n_threads; ti++) {
		printf("%-22u", b->threads[ti]);
		for (unsigned int i = 0; i < o->n_impl; i++) {
			if (b->skipped[o->impl[i]])
				continue;
			cell(o, b, ti, o->impl[i], buf, sizeof(buf));
			print_cell(buf);
		}
		putchar('\n');
	}
}

static void ratio_cell_of(const struct options *o, const struct block *b,
			  unsigned int ti, enum impl_id impl, char *buf,
			  size_t len)
{
	const struct result *res = block_res(o, b, ti, impl);
	double base;

	if (!have_impl(o, b, IMPL_PTHREAD)) {
		snprintf(buf, len, "n/a");
		return;
	}
	base = MED(block_res(o, b, ti, IMPL_PTHREAD), o->reps, ops_per_s).med;
	ratio_cell(buf, len, MED(res, o->reps, ops_per_s).med / base, impl);
	strcat(buf, cut_mark(res, o->reps));
}

static void calls_cell(const struct options *o, const struct block *b,
		       unsigned int ti, enum impl_id impl, char *buf,
		       size_t len)
{
	const struct result *res = block_res(o, b, ti, impl);
	double lc = MED(res, o->reps, lock_calls).med;
	double uc = MED(res, o->reps, unlock_calls).med;
	double n = MED(res, o->reps, ops_done).med;

	if (lc < 0 || uc < 0)
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.1f/%.1f%s", lc * 1e3 / n, uc * 1e3 / n,
			 cut_mark(res, o->reps));
}

static void share_cell(const struct options *o, const struct block *b,
		       unsigned int ti, enum impl_id impl, char *buf,
		       size_t len)
{
	const struct result *res = block_res(o, b, ti, impl);

	snprintf(buf, len, "%.2f%s", share(b, res, o->reps),
		 cut_mark(res, o->reps));
}

static void fair_cell(const struct options *o, const struct block *b,
		      unsigned int ti, enum impl_id impl, char *buf, size_t len)
{
	const struct result *res = block_res(o, b, ti, impl);

	snprintf(buf, len, "%.2f%s", MED(res, o->reps, fair).med,
		 cut_mark(res, o->reps));
}

void print_block(const struct options *o, const struct block *b)
{
	const char *u = unit_names[b->unit];
	const char *what = cs_what(b->kind);
	char title[128];

	printf("\n== lock: critical section %u %s%s, work %u %s, %lu ops per point, median of %u ==\n",
	       b->cs, u, what, b->work, u, o->ops, o->reps);
	printf("serial bound: %.1f kops/s (the critical section alone: %.2f us, one thread, no lock)\n",
	       1e6 / b->serial_ns, b->serial_ns / 1e3);

	block_table(o, b, "throughput, kops/s: median [min-max]",
		    throughput_cell);
	if (have_impl(o, b, IMPL_PTHREAD)) {
		snprintf(title, sizeof(title),
			 "ratio to pthread default (ops/s medians; \"tie\": within %.2f of 1.00)",
			 TIE_BAND);
		block_table(o, b, title, ratio_cell_of);
	}
	block_table(o, b,
		    "share of the serial bound (ops/s medians x critical section alone)",
		    share_cell);

	for (unsigned int ti = 0; ti < b->n_threads; ti++) {
		printf("\n-- %u threads, %lu ops, cs %u %s%s, work %u %s: medians of %u --\n",
		       b->threads[ti], o->ops, b->cs, u, what, b->work, u,
		       o->reps);
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

/*
 * One summary table: a row per block and thread count, a cell per
 * implementation from @cell (the point's repetitions; NULL: skipped).
 */
static void summary_table(const struct options *o, const struct block *blocks,
			  unsigned int n_blocks, const char *title,
			  point_cell_fn cell)
{
	char buf[64], label[32];

	printf("\n== summary: %s ==\n", title);
	printf("%-14s %5s %7s", "block", "work", "threads");
	for (unsigned int i = 0; i < o->n_impl; i++)
		print_cell(impls[o->impl[i]].name);
	putchar('\n');
	for (unsigned int bi = 0; bi < n_blocks; bi++) {
		const struct block *b = &blocks[bi];

		block_label(o, b, label, sizeof(label));
		for (unsigned int ti = 0; ti < b->n_threads; ti++) {
			printf("%-14s %5u %7u", label, b->work, b->threads[ti]);
			for (unsigned int i = 0; i < o->n_impl; i++) {
				if (b->skipped[o->impl[i]]) {
					print_cell("skipped");
					continue;
				}
				cell(o, b, ti, o->impl[i], buf, sizeof(buf));
				print_cell(buf);
			}
			putchar('\n');
		}
	}
}

/*
 * The closing summary: every block's ratios, shares of the serial bound,
 * kernel calls and fairness together.
 */
void print_summary(const struct options *o, const struct block *blocks,
		   unsigned int n_blocks)
{
	char title[160];

	snprintf(title, sizeof(title),
		 "ops/s ratio to pthread default (medians of %u; \"tie\": within %.2f of 1.00)",
		 o->reps, TIE_BAND);
	summary_table(o, blocks, n_blocks, title, ratio_cell_of);
	summary_table(o, blocks, n_blocks,
		      "share of the serial bound (ops/s medians x critical section alone)",
		      share_cell);
	snprintf(title, sizeof(title),
		 "kernel calls per 1000 operations, lock/unlock (medians of %u)",
		 o->reps);
	summary_table(o, blocks, n_blocks, title, calls_cell);
	summary_table(o, blocks, n_blocks,
		      "fairness, per-thread min/mean (medians)",
		      fair_cell);
	fflush(stdout);
}
