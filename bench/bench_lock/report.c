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

void csv_header(void)
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

void csv_run(enum impl_id impl, enum unit_kind unit, unsigned int cs,
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

void print_block(const struct options *o, const struct block *b)
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
void print_summary(const struct options *o, const struct block *blocks,
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
