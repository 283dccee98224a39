// SPDX-License-Identifier: GPL-2.0
/*
 * bench_ioctl - what one round trip into tofutex costs, without a context
 * switch: nanoseconds per call, each kind timed the same way in the same
 * process, interleaved run by run.
 *
 *   getppid            a system call that does no work
 *   VERSION            TOFUTEX_IOC_VERSION: the ioctl path alone (fd
 *                      lookup, security hooks, dispatch, copy in and out)
 *   futex wake+wait    FUTEX_WAKE of a word nobody waits on, then
 *                      FUTEX_WAIT on a word that does not hold the value
 *                      (EAGAIN): the two system calls of a futex hand-over
 *                      that neither wakes nor sleeps
 *   WAKE + WAIT        the same with TOFUTEX_IOC_WAKE and TOFUTEX_IOC_WAIT
 *   SWAP               TOFUTEX_IOC_SWAP on the same two words: the whole
 *                      swap path (argument checks, both word states, the
 *                      wait word's check) except the sleep and the wake-up
 *
 *   bench_ioctl [-n CALLS] [-r RUNS]
 *
 * Every later tofutex operation pays at least VERSION on its slow path,
 * and SWAP against futex wake+wait is the part of bench_swap's pinned
 * ratio that the module's own path adds.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <tofutex/uapi.h>

#define DEFAULT_CALLS	20000UL
#define DEFAULT_RUNS	15UL
#define MAX_RUNS	1000UL

enum call {
	CALL_GETPPID,
	CALL_VERSION,
	CALL_FUTEX,
	CALL_WAKEWAIT,
	CALL_SWAP,
	NR_CALLS
};

static const char *const call_names[NR_CALLS] = {
	[CALL_GETPPID] = "getppid()",
	[CALL_VERSION] = "ioctl(TOFUTEX_IOC_VERSION)",
	[CALL_FUTEX] = "futex wake+wait",
	[CALL_WAKEWAIT] = "WAKE + WAIT",
	[CALL_SWAP] = "SWAP",
};

/* Nobody waits on wake_word; wait_word never holds the awaited 0. */
static uint32_t wake_word;
static uint32_t wait_word = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_ioctl: %s: %s\n", what, strerror(errno));
	exit(1);
}

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static void call_futex(void)
{
	if (futex(&wake_word, FUTEX_WAKE_PRIVATE, 1) != 0)
		die("FUTEX_WAKE woke someone or failed");
	if (futex(&wait_word, FUTEX_WAIT_PRIVATE, 0) == 0 || errno != EAGAIN)
		die("FUTEX_WAIT did not fail with EAGAIN");
}

static void call_wakewait(int fd)
{
	struct tofutex_wake wk = { .uaddr = (uintptr_t)&wake_word, .count = 1 };
	struct tofutex_wait wt = { .uaddr = (uintptr_t)&wait_word, .val = 0 };

	if (ioctl(fd, TOFUTEX_IOC_WAKE, &wk) != 0)
		die("TOFUTEX_IOC_WAKE woke someone or failed");
	if (ioctl(fd, TOFUTEX_IOC_WAIT, &wt) == 0 || errno != EAGAIN)
		die("TOFUTEX_IOC_WAIT did not fail with EAGAIN");
}

static void call_swap(int fd)
{
	struct tofutex_swap sw = {
		.wait_uaddr = (uintptr_t)&wait_word,
		.wake_uaddr = (uintptr_t)&wake_word,
		.val = 0,
	};

	if (ioctl(fd, TOFUTEX_IOC_SWAP, &sw) == 0 || errno != EAGAIN)
		die("TOFUTEX_IOC_SWAP did not fail with EAGAIN");
	if (sw.woken)
		die("TOFUTEX_IOC_SWAP woke someone");
}

/* ns per call of kind @c over @calls calls; exits if one fails. */
static double time_call(enum call c, int fd, unsigned long calls)
{
	struct tofutex_version v;
	unsigned long i;
	uint64_t t0;

	memset(&v, 0, sizeof(v));
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		switch (c) {
		case CALL_GETPPID:
			(void)getppid();
			break;
		case CALL_VERSION:
			if (ioctl(fd, TOFUTEX_IOC_VERSION, &v))
				die("TOFUTEX_IOC_VERSION");
			break;
		case CALL_FUTEX:
			call_futex();
			break;
		case CALL_WAKEWAIT:
			call_wakewait(fd);
			break;
		case CALL_SWAP:
			call_swap(fd);
			break;
		case NR_CALLS:
			break;
		}
	}
	return (double)(now_ns() - t0) / (double)calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary {
	double median, min, max;
};

/* Sorts @v in place. */
static struct summary summarize(double *v, unsigned long n)
{
	struct summary s;

	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

static unsigned long parse_count(const char *s, const char *what,
				 unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > max) {
		fprintf(stderr, "bench_ioctl: bad %s '%s' (1..%lu)\n", what, s,
			max);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_ioctl [-n CALLS] [-r RUNS]\n"
		"  -n CALLS  calls of each kind per run (default %lu)\n"
		"  -r RUNS   runs; the median run is reported (default %lu)\n",
		DEFAULT_CALLS, DEFAULT_RUNS);
	exit(2);
}

static void print_row(const char *name, double *v, unsigned long runs)
{
	struct summary s = summarize(v, runs);

	printf("%-28s %10.1f %10.1f %10.1f\n", name, s.median, s.min, s.max);
}

int main(int argc, char **argv)
{
	unsigned long calls = DEFAULT_CALLS, runs = DEFAULT_RUNS, r;
	double *ns[NR_CALLS], *diff, *diff_swap;
	struct tofutex_version v;
	struct utsname un;
	int fd, opt, c;

	while ((opt = getopt(argc, argv, "n:r:h")) != -1) {
		switch (opt) {
		case 'n':
			calls = parse_count(optarg, "call count", 1000000000UL);
			break;
		case 'r':
			runs = parse_count(optarg, "run count", MAX_RUNS);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	fd = open("/dev/" TOFUTEX_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bench_ioctl: /dev/%s: %s (is the module loaded?)\n",
			TOFUTEX_DEVICE_NAME, strerror(errno));
		return 1;
	}
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, TOFUTEX_IOC_VERSION, &v)) {
		perror("bench_ioctl: TOFUTEX_IOC_VERSION");
		return 1;
	}

	diff = calloc(runs, sizeof(*diff));
	diff_swap = calloc(runs, sizeof(*diff_swap));
	if (!diff || !diff_swap)
		die("calloc");
	for (c = 0; c < NR_CALLS; c++) {
		ns[c] = calloc(runs, sizeof(*ns[c]));
		if (!ns[c])
			die("calloc");
	}

	/* Warm caches, TLB and branch predictors before the first timed run. */
	for (c = 0; c < NR_CALLS; c++)
		time_call(c, fd, calls / 10 + 1);
	/* Interleaved, so that a slow phase of the machine hits every kind. */
	for (r = 0; r < runs; r++)
		for (c = 0; c < NR_CALLS; c++)
			ns[c][r] = time_call(c, fd, calls);

	uname(&un);
	printf("bench_ioctl: cost of tofutex round trips that do not sleep vs "
	       "system calls\n");
	printf("method: %lu runs; each run times %lu back-to-back calls of each "
	       "kind in turn,\n"
	       "        with CLOCK_MONOTONIC around each batch; ns/call = batch "
	       "time / calls.\n"
	       "        Reported: median over the runs (min, max). An "
	       "\"extra\" row is the median\n"
	       "        of the per-run differences. Wake words have no waiter, "
	       "wait words do\n"
	       "        not hold the value (EAGAIN); ABI %u.\n",
	       runs, calls, v.abi_version);
	printf("system: %s %s, %ld CPUs online\n", un.sysname, un.release,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-28s %10s %10s %10s\n", "call", "median ns", "min ns", "max ns");
	/* Differences first: print_row() sorts its runs in place. */
	for (r = 0; r < runs; r++) {
		diff[r] = ns[CALL_VERSION][r] - ns[CALL_GETPPID][r];
		diff_swap[r] = ns[CALL_SWAP][r] - ns[CALL_FUTEX][r];
	}
	for (c = 0; c < NR_CALLS; c++) {
		print_row(call_names[c], ns[c], runs);
		free(ns[c]);
	}
	print_row("extra (ioctl - getppid)", diff, runs);
	print_row("extra (SWAP - futex pair)", diff_swap, runs);

	free(diff);
	free(diff_swap);
	close(fd);
	return 0;
}
