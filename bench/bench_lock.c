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
 * (see bench/lock.md). The counter is read and written
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
 * records describing the method), interleaved with human-readable tables.
 * bench/report-lock.sh turns the CSV into tables and charts on the host.
 * `bench_lock --help` lists the options.
 *
 * This file is main(): which blocks run, in what order. The rest is in
 * bench_lock/, one concern per file (bench_lock/bench_lock.h lists them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lock/locks.h"

/* Can this process use the module? Says why not, once. */
static bool tofutex_usable(void)
{
	uint64_t features = 0;
	uint32_t abi = 0;
	int fd, err;

	/*
	 * Without a usable module (or with TOFUTEX_BACKEND=futex) the
	 * library's lock runs on futex(2): the same user-space paths, on real
	 * CPUs where the host has no module. Nothing counts its kernel calls.
	 */
	if (tofutex_backend() == TOFUTEX_BACKEND_FUTEX) {
		printf("tofutex: on the futex(2) backend (TOFUTEX_BACKEND=futex, or no usable /dev/%s): kernel calls n/a\n",
		       TOFUTEX_DEVICE_NAME);
		return true;
	}
	fd = tofutex_fd();
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

/*
 * Every repetition of every point of one block, implementations
 * interleaved within a repetition so that drift hits them all alike; then
 * the block's tables.
 */
static void run_block(const struct options *o, struct block *b,
		      double clock_ns)
{
	b->serial_ns = serial_cs_ns(b->unit, b->kind, b->cs, clock_ns);
	csv_bound(b);
	b->res = calloc((size_t)b->n_threads * NR_IMPLS * o->reps,
			sizeof(*b->res));
	if (!b->res)
		die("out of memory");
	for (unsigned int ti = 0; ti < b->n_threads; ti++) {
		for (unsigned int rep = 0; rep < o->reps; rep++) {
			for (unsigned int i = 0; i < o->n_impl; i++) {
				enum impl_id impl = o->impl[i];
				struct result *res;
				struct point p = {
					.impl = impl,
					.unit = b->unit,
					.kind = b->kind,
					.cs = b->cs,
					.work = b->work,
					.threads = b->threads[ti],
					.sample = o->sample,
					.ops = o->ops,
					.budget = o->budget,
				};

				if (b->skipped[impl])
					continue;
				res = block_res(o, b, ti, impl) + rep;
				run_once(&p, res);
				csv_run(b, impl, b->threads[ti], rep + 1, o->ops,
					res);
			}
		}
	}
	print_block(o, b);
}

static struct block *add_block(const struct options *o, struct block *b,
			       enum unit_kind unit, enum cs_kind kind,
			       unsigned int cs, unsigned int work,
			       bool tofutex_on)
{
	memset(b, 0, sizeof(*b));
	b->unit = unit;
	b->kind = kind;
	b->cs = cs;
	b->work = work;
	b->skipped[IMPL_TOFUTEX] = !tofutex_on;
	for (unsigned int i = IMPL_SPIN_FIRST; i < NR_IMPLS; i++)
		b->skipped[i] = !tofutex_on;
	b->n_threads = o->n_threads;
	memcpy(b->threads, o->threads, sizeof(b->threads));
	return b;
}

/*
 * The blocks, in order: every unit kind with every W (plain critical
 * sections, --threads); then the blocking critical sections and the
 * oversubscribed one, each once, with the loop unit (it costs the same
 * whether or not anyone spins; --unit's first if loop is not asked for)
 * and --work's first W. The oversubscribed block runs 2, 4 and 8 threads
 * per CPU online, whatever the machine.
 */
static unsigned int plan_blocks(const struct options *o, struct block *blocks,
				bool tofutex_on)
{
	static const unsigned int factors[] = OVERSUB_FACTORS;
	enum unit_kind xu = o->unit[0];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n = 0;
	struct block *b;

	for (unsigned int ui = 0; ui < o->n_unit; ui++) {
		if (o->unit[ui] == UNIT_LOOP)
			xu = UNIT_LOOP;
		for (unsigned int wi = 0; wi < o->n_work; wi++)
			add_block(o, &blocks[n++], o->unit[ui], CS_PLAIN, o->cs,
				  o->work[wi], tofutex_on);
	}
	for (unsigned int ki = 0; ki < o->n_blocking; ki++)
		add_block(o, &blocks[n++], xu, o->blocking[ki], o->cs,
			  o->work[0], tofutex_on);
	if (o->long_cs) {
		b = add_block(o, &blocks[n++], xu, CS_PLAIN, o->long_cs,
			      o->work[0], tofutex_on);
		b->n_threads = sizeof(factors) / sizeof(factors[0]);
		for (unsigned int ti = 0; ti < b->n_threads; ti++)
			b->threads[ti] = factors[ti] *
					 (unsigned int)(cpus > 0 ? cpus : 1);
	}
	return n;
}

int main(int argc, char **argv)
{
	struct options o;
	struct block blocks[NR_UNITS * MAX_LIST + NR_CS_KINDS];
	unsigned int n_blocks;
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

	/* The --spin columns are the tofutex lock too. */
	for (unsigned int i = 0; i < o.n_impl; i++)
		if (o.impl[i] == IMPL_TOFUTEX || o.impl[i] >= IMPL_SPIN_FIRST)
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
	print_method(&o, pause_ns, iter_ns, clock_ns,
		     tofutex_on ? tofutex_backend() : 0);

	if (o.uncontended)
		uncontended(&o, tofutex_on);
	n_blocks = plan_blocks(&o, blocks, tofutex_on);
	for (unsigned int bi = 0; bi < n_blocks; bi++)
		run_block(&o, &blocks[bi], clock_ns);
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
