// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the method: calibrating the units and the clock, and the
 * lines (human and CSV "meta" records) that say what machine, kernel,
 * emulation and parameters the numbers come from. Main thread only,
 * before any run.
 */
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "locks.h"

/*
 * Calibration: the fastest of many short trials. A trial is short enough
 * (tens of microseconds natively, a few hundred under emulation) that
 * most trials run without being preempted even on a loaded machine; the
 * minimum is then the undisturbed cost. Long trials were all disturbed on
 * a busy host and made the loop unit come out 10x too short.
 */
#define CAL_TRIALS	64

static void run_pauses(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		cpu_pause();
}

static void run_clock_reads(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		(void)now_ns();
}

/* The fastest of CAL_TRIALS runs of @run(@n), in ns per step. */
static double best_ns_per_step(void (*run)(unsigned long n), unsigned long n)
{
	double best = 1e30;

	for (int trial = 0; trial < CAL_TRIALS; trial++) {
		uint64_t t0 = now_ns();

		run(n);
		double ns = (double)(now_ns() - t0) / (double)n;

		if (ns < best)
			best = ns;
	}
	return best;
}

double ns_per_pause(void)
{
	return best_ns_per_step(run_pauses, 1000);
}

double ns_per_loop_iter(void)
{
	return best_ns_per_step(spin_loop, 50000);
}

double ns_per_clock_gettime(void)
{
	return best_ns_per_step(run_clock_reads, 1000);
}

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

/*
 * @tofutex_backend: TOFUTEX_BACKEND_MODULE or _FUTEX, what the tofutex
 * column runs on; 0 when it does not run.
 */
void print_method(const struct options *o, double pause_ns, double iter_ns,
		  double clock_ns, int tofutex_backend)
{
	bool tofutex_loaded = tofutex_backend == TOFUTEX_BACKEND_MODULE;
	struct utsname un;
	char model[256], emul[256], buf[512], p1[64], p2[64], p3[64];
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
	printf("method: blocking blocks: the critical section also sleeps (usleep(1)) or takes a page fault (a write to the thread's own page, dropped with madvise(MADV_DONTNEED) after its previous critical section); oversubscribed block: %u units of critical section at 2, 4 and 8 threads per CPU\n",
	       o->long_cs);
	printf("method: serial bound = 1 / the critical section's time alone (one thread, no lock, median of up to 1001 trials); share = ops/s x that time\n");
	if (tofutex_backend)
		printf("method: tofutex runs on the %s backend\n",
		       tofutex_loaded ? "module (/dev/tofutex)" : "futex(2)");
	printf("method: kernel calls: tofutex TOFUTEX_IOC_LOCK/UNLOCK (TOFUTEX_IOC_STATS process deltas), futex3 FUTEX_WAIT/FUTEX_WAKE (counted), tas none, glibc mutexes n/a (not countable); voluntary csw = sleeps of the workers (getrusage)\n");

	read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  buf, sizeof(buf));
	printf("method: clocksource %s\n", buf[0] ? buf : "unknown");
	read_line("/sys/module/tofutex/parameters/spin_ns", p1, sizeof(p1));
	read_line("/sys/module/tofutex/parameters/handoff_ns", p2, sizeof(p2));
	read_line("/sys/module/tofutex/parameters/handoff_lost", p3, sizeof(p3));
	if (tofutex_loaded)
		printf("method: tofutex module spin_ns=%s handoff_ns=%s handoff_lost=%s\n",
		       p1[0] ? p1 : "?", p2[0] ? p2 : "?", p3[0] ? p3 : "?");

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
	if (tofutex_backend)
		csv_meta("tofutex_backend", tofutex_loaded ? "module" : "futex");
	if (tofutex_loaded) {
		csv_meta("tofutex_spin_ns", p1[0] ? p1 : "?");
		csv_meta("tofutex_handoff_ns", p2[0] ? p2 : "?");
		csv_meta("tofutex_handoff_lost", p3[0] ? p3 : "?");
	}
	csv_header();
	fflush(stdout);
}
