// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the uncontended test: the fast paths alone, one thread,
 * read against the bare compare-and-swap lock inlined (tas) and behind two
 * function calls (tas-call). Runs before the contended points, from the
 * main thread.
 */
#include <stdlib.h>

#include "locks.h"

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
void uncontended(const struct options *o, bool tofutex_on)
{
	enum { COL_TAS_CALL = NR_IMPLS, NR_COLS };
	double ns[NR_COLS][MAX_REPS];
	bool done[NR_COLS] = { false };
	unsigned int cols[NR_COLS], n_cols = 0;
	char buf[64];

	for (unsigned int i = 0; i < o->n_impl; i++) {
		if ((o->impl[i] == IMPL_TOFUTEX && !tofutex_on) ||
		    o->impl[i] >= IMPL_SPIN_FIRST)
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
