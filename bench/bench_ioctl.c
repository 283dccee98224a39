// SPDX-License-Identifier: GPL-2.0
/*
 * bench_ioctl - what one round trip into tofutex costs: nanoseconds per
 * TOFUTEX_IOC_VERSION ioctl, next to a system call that does no work
 * (getppid), measured the same way in the same process.
 *
 *   bench_ioctl [-n CALLS] [-r RUNS]
 *
 * Every later tofutex operation pays at least this much on its slow path,
 * so it is the baseline the other benchmarks are read against.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <tofutex/uapi.h>

#define DEFAULT_CALLS	20000UL
#define DEFAULT_RUNS	15UL
#define MAX_RUNS	1000UL

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ns per getppid() over @calls calls. */
static double time_getppid(unsigned long calls)
{
	uint64_t t0 = now_ns();
	unsigned long i;

	for (i = 0; i < calls; i++)
		(void)getppid();
	return (double)(now_ns() - t0) / (double)calls;
}

/* ns per VERSION ioctl over @calls calls; exits if one fails. */
static double time_version(int fd, unsigned long calls)
{
	struct tofutex_version v;
	uint64_t t0;
	unsigned long i;

	memset(&v, 0, sizeof(v));
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		if (ioctl(fd, TOFUTEX_IOC_VERSION, &v)) {
			perror("bench_ioctl: TOFUTEX_IOC_VERSION");
			exit(1);
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

int main(int argc, char **argv)
{
	unsigned long calls = DEFAULT_CALLS, runs = DEFAULT_RUNS, r;
	double *sys, *ioc, *diff;
	struct summary s_sys, s_ioc, s_diff;
	struct tofutex_version v;
	struct utsname un;
	int fd, opt;

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

	sys = calloc(runs, sizeof(*sys));
	ioc = calloc(runs, sizeof(*ioc));
	diff = calloc(runs, sizeof(*diff));
	if (!sys || !ioc || !diff) {
		perror("bench_ioctl");
		return 1;
	}

	/* Warm caches, TLB and branch predictors before the first timed run. */
	time_getppid(calls / 10 + 1);
	time_version(fd, calls / 10 + 1);
	for (r = 0; r < runs; r++) {
		/* Interleaved, so that a slow phase of the machine hits both. */
		sys[r] = time_getppid(calls);
		ioc[r] = time_version(fd, calls);
		diff[r] = ioc[r] - sys[r];
	}
	s_sys = summarize(sys, runs);
	s_ioc = summarize(ioc, runs);
	s_diff = summarize(diff, runs);

	uname(&un);
	printf("bench_ioctl: cost of a TOFUTEX_IOC_VERSION round trip vs a "
	       "trivial system call\n");
	printf("method: %lu runs; each run times %lu back-to-back getppid() "
	       "calls, then %lu\n"
	       "        TOFUTEX_IOC_VERSION ioctls (ABI %u), with "
	       "CLOCK_MONOTONIC around each\n"
	       "        batch; ns/call = batch time / calls. Reported: median "
	       "over the runs\n"
	       "        (min, max). \"extra\" is the median of the per-run "
	       "differences: what\n"
	       "        the ioctl path (fd lookup, dispatch, copy in/out of %zu "
	       "bytes) adds.\n",
	       runs, calls, calls, v.abi_version, sizeof(v));
	printf("system: %s %s, %ld CPUs online\n", un.sysname, un.release,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-28s %10s %10s %10s\n", "call", "median ns", "min ns", "max ns");
	printf("%-28s %10.1f %10.1f %10.1f\n", "getppid()", s_sys.median,
	       s_sys.min, s_sys.max);
	printf("%-28s %10.1f %10.1f %10.1f\n", "ioctl(TOFUTEX_IOC_VERSION)",
	       s_ioc.median, s_ioc.min, s_ioc.max);
	printf("%-28s %10.1f %10.1f %10.1f\n", "extra (ioctl - getppid)",
	       s_diff.median, s_diff.min, s_diff.max);

	free(sys);
	free(ioc);
	free(diff);
	close(fd);
	return 0;
}
