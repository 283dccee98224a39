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
