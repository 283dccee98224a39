// SPDX-License-Identifier: GPL-2.0
/*
 * bench_swap - the FUTEX_SWAP selftest's benchmark, for tofutex: two
 * threads hand the CPU back and forth, and the time per hand-over ("swap")
 * is measured for several ways of doing it:
 *
 *   futex        FUTEX_WAKE then FUTEX_WAIT (private), two system calls
 *   wakewait     tofutex_wake() then tofutex_wait()
 *   swap         tofutex_swap(): wake and wait in one call, the wakee run
 *                on the caller's CPU (the module's wake_local mechanism)
 *   swap-plain   tofutex_swap() with the module's wake_local switched off
 *                (its sysfs parameter, written for the run and restored;
 *                needs root): the same call with a plain wake-up
 *   pipe         a one-byte write to the other thread's pipe, then a read
 *                of one's own
 *
 * and each of them again with both threads pinned to one CPU ("-pinned"):
 * the floor, where no wake-up can pick the wrong CPU.
 *
 * Every run prints the original's line,
 *   completed N swap and back iterations in X ns: Y ns per swap
 * and the summary gives, per mechanism, the median over the runs, the
 * spread, and the share of swaps after which the wakee ran on the CPU its
 * waker had been on (from sched_getcpu() on both sides, in one extra run
 * that is not timed). As in the selftest, a counter checks that the two
 * threads really alternate (-n turns it off).
 *
 * `bench_swap --help` lists the options.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <tofutex.h>

#define DEF_ITERS	10000UL
#define DEF_RUNS	5U
#define DEF_BUDGET	2UL	/* seconds per run: make bench stays at a few minutes */
#define MAX_RUNS	101U
#define NSEC_PER_SEC	1000000000ULL

#define PARAM_DIR	"/sys/module/tofutex/parameters/"

#define WAITING		0U
#define WAKEUP		1U

enum mech {
	MECH_FUTEX,
	MECH_WAKEWAIT,
	MECH_SWAP,
	MECH_SWAP_PLAIN,
	MECH_PIPE,
	NR_MECHS
};

static const struct {
	const char *name;
	const char *what;
} mechs[NR_MECHS] = {
	[MECH_FUTEX] = { "futex", "FUTEX_WAKE + FUTEX_WAIT system calls" },
	[MECH_WAKEWAIT] = { "wakewait", "tofutex_wake() + tofutex_wait()" },
	[MECH_SWAP] = { "swap", "tofutex_swap(), wakee on the caller's CPU" },
	[MECH_SWAP_PLAIN] = { "swap-plain", "tofutex_swap(), wake_local off" },
	[MECH_PIPE] = { "pipe", "pipe ping-pong, one byte each way" },
};

struct options {
	unsigned long iters;
	unsigned int runs;
	unsigned long budget_ns;
	bool mech[NR_MECHS];
	bool unpinned;
	bool pinned;
	int cpu;
	bool validate;
	bool placement;
};

/* One run of one mechanism. */
struct pingpong {
	enum mech mech;
	unsigned long iters;
	uint64_t budget_ns;		/* a run stops early after this */
	atomic_ulong limit;		/* iterations of this run */
	int pin;			/* CPU for both threads, or -1 */
	bool validate;
	bool record;			/* placement */
	uint32_t word[2];
	int pipe_fd[2][2];		/* [side][read/write] */
	atomic_ulong counter;
	atomic_bool failed;
	atomic_int cpu_before[2];
	unsigned long slept[2];
	unsigned long on_waker_cpu[2];
	char error[256];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Record the first failure: @what, and the errno value @err if not 0. */
static void fail(struct pingpong *pp, const char *what, int err)
{
	if (!atomic_exchange(&pp->failed, true))
		snprintf(pp->error, sizeof(pp->error), "%s%s%s", what,
			 err ? ": " : "", err ? strerror(err) : "");
}

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static void store(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
}

static uint32_t load(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_SEQ_CST);
}

/* Wait until our word is set; returns 0 when we slept and were woken. */
static int wait_word(struct pingpong *pp, uint32_t *this, int first)
{
	int r = first;

	for (;;) {
		if (r && r != EAGAIN && r != EINTR) {
			fail(pp, "wait", r);
			return r;
		}
		if (load(this) != WAITING)
			return r;
		if (pp->mech == MECH_FUTEX)
			r = futex(this, FUTEX_WAIT_PRIVATE, WAITING) ? errno : 0;
		else
			r = tofutex_wait(this, WAITING, NULL);
	}
}

static int pipe_swap(struct pingpong *pp, int side)
{
	char c = 0;
	ssize_t n;

	do {
		n = write(pp->pipe_fd[!side][1], &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		fail(pp, "pipe write", errno);
		return -1;
	}
	do {
		n = read(pp->pipe_fd[side][0], &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		fail(pp, "pipe read", n ? errno : EPIPE);
		return -1;
	}
	return 0;
}

/* The selftest's futex_swap_op(), for every mechanism. */
static void swap_op(struct pingpong *pp, int side)
{
	uint32_t *this = &pp->word[side], *that = &pp->word[!side];
	int r = 0, cpu;

	if (pp->record)
		atomic_store(&pp->cpu_before[side], sched_getcpu());
	switch (pp->mech) {
	case MECH_PIPE:
		r = pipe_swap(pp, side);
		break;
	case MECH_FUTEX:
		store(this, WAITING);
		store(that, WAKEUP);
		if (futex(that, FUTEX_WAKE_PRIVATE, 1) < 0) {
			fail(pp, "FUTEX_WAKE", errno);
			return;
		}
		r = futex(this, FUTEX_WAIT_PRIVATE, WAITING) ? errno : 0;
		r = wait_word(pp, this, r);
		break;
	case MECH_WAKEWAIT:
		store(this, WAITING);
		store(that, WAKEUP);
		r = tofutex_wake(that, 1, NULL);
		if (r) {
			fail(pp, "tofutex_wake", r);
			return;
		}
		r = wait_word(pp, this, tofutex_wait(this, WAITING, NULL));
		break;
	case MECH_SWAP:
	case MECH_SWAP_PLAIN:
		store(this, WAITING);
		store(that, WAKEUP);
		r = wait_word(pp, this, tofutex_swap(this, WAITING, that, NULL));
		break;
	case NR_MECHS:
		break;
	}
	if (pp->record && r == 0) {
		cpu = sched_getcpu();
		pp->slept[side]++;
		if (cpu == atomic_load(&pp->cpu_before[!side]))
			pp->on_waker_cpu[side]++;
	}
}

static bool step(struct pingpong *pp, unsigned long from)
{
	unsigned long expected = from;

	if (!pp->validate)
		return true;
	if (atomic_compare_exchange_strong(&pp->counter, &expected, from + 1))
		return true;
	fail(pp, "swap validation failed", 0);
	return false;
}

static void set_affinity(const cpu_set_t *s)
{
	int r = pthread_setaffinity_np(pthread_self(), sizeof(*s), s);

	if (r) {
		fprintf(stderr, "bench_swap: pthread_setaffinity_np: %s\n",
			strerror(r));
		exit(1);
	}
}

static void pin_self(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	set_affinity(&s);
}

static void *other_main(void *arg)
{
	struct pingpong *pp = arg;
	unsigned long i;
	char c;

	pin_self(pp->pin);
	/* The selftest's first wait, for the main thread's first swap. */
	if (pp->mech == MECH_PIPE) {
		if (read(pp->pipe_fd[1][0], &c, 1) != 1)
			fail(pp, "pipe read", errno);
	} else {
		wait_word(pp, &pp->word[1], 0);
	}
	for (i = 0; i < atomic_load(&pp->limit) && !atomic_load(&pp->failed);
	     i++) {
		if (!step(pp, 2 * i + 1))
			break;
		swap_op(pp, 1);
	}
	return NULL;
}

/*
 * One run; returns the elapsed ns, or 0 after a failure (printed). The
 * run ends early, with fewer iterations (pp->limit), once it has taken
 * longer than its budget: on a loaded host, cross-CPU wake-ups in an
 * emulated guest can take milliseconds each.
 */
static uint64_t run_once(struct pingpong *pp)
{
	pthread_t other;
	cpu_set_t saved;
	uint64_t t0, t1;
	unsigned long i;
	char c = 0;
	int s;

	pp->word[0] = WAITING;
	pp->word[1] = WAITING;
	atomic_store(&pp->counter, 0);
	atomic_store(&pp->failed, false);
	atomic_store(&pp->limit, pp->iters);
	memset(pp->slept, 0, sizeof(pp->slept));
	memset(pp->on_waker_cpu, 0, sizeof(pp->on_waker_cpu));
	for (s = 0; s < 2; s++) {
		if (pipe(pp->pipe_fd[s])) {
			perror("bench_swap: pipe");
			exit(1);
		}
	}
	if (pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved)) {
		perror("bench_swap: pthread_getaffinity_np");
		exit(1);
	}
	pin_self(pp->pin);
	if (pthread_create(&other, NULL, other_main, pp)) {
		perror("bench_swap: pthread_create");
		exit(1);
	}

	t0 = now_ns();
	for (i = 0; i < pp->iters && !atomic_load(&pp->failed); i++) {
		/* The other side reads the limit after the final wake. */
		if (i && !(i % 256) && now_ns() - t0 > pp->budget_ns) {
			atomic_store(&pp->limit, i);
			break;
		}
		if (!step(pp, 2 * i))
			break;
		swap_op(pp, 0);
	}
	t1 = now_ns();

	/* The other thread waits in its last swap: the final wake. */
	if (pp->mech == MECH_PIPE) {
		if (write(pp->pipe_fd[1][1], &c, 1) != 1)
			fail(pp, "pipe write", errno);
	} else {
		store(&pp->word[1], WAKEUP);
		if (pp->mech == MECH_FUTEX)
			futex(&pp->word[1], FUTEX_WAKE_PRIVATE, INT32_MAX);
		else
			tofutex_wake(&pp->word[1], UINT32_MAX, NULL);
	}
	if (atomic_load(&pp->failed)) {
		/* Neither side may be left asleep. */
		store(&pp->word[0], WAKEUP);
		tofutex_wake(&pp->word[0], UINT32_MAX, NULL);
		futex(&pp->word[0], FUTEX_WAKE_PRIVATE, INT32_MAX);
		if (write(pp->pipe_fd[0][1], &c, 1) < 0)
			perror("bench_swap: pipe write");
	}
	pthread_join(other, NULL);
	set_affinity(&saved);
	for (s = 0; s < 2; s++) {
		close(pp->pipe_fd[s][0]);
		close(pp->pipe_fd[s][1]);
	}
	if (atomic_load(&pp->failed)) {
		fprintf(stderr, "bench_swap: %s: %s\n", mechs[pp->mech].name,
			pp->error);
		return 0;
	}
	if (pp->validate &&
	    atomic_load(&pp->counter) != 2 * atomic_load(&pp->limit)) {
		fprintf(stderr, "bench_swap: final swap validation failed\n");
		return 0;
	}
	return t1 - t0;
}

/* ---- the module's wake_local switch, for swap-plain ---- */

static bool param_read(const char *name, char *buf, size_t len)
{
	FILE *f;
	char path[128];
	bool ok;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static bool param_write(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(val, f) >= 0;
	return fclose(f) == 0 && ok;
}

/* ---- statistics and output ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct result {
	bool done;
	uint64_t median, min, max;	/* ns per swap */
	double placement;		/* -1: not measured */
};

static void print_run(unsigned long iters, uint64_t ns)
{
	printf("completed %lu swap and back iterations in %llu ns: %llu ns per swap\n",
	       iters, (unsigned long long)ns,
	       (unsigned long long)(ns / (2 * iters)));
}

static bool bench_one(const struct options *o, enum mech m, int pin,
		      struct result *res)
{
	static struct pingpong pp;
	uint64_t per_swap[MAX_RUNS], ns;
	unsigned long woken, n;
	unsigned int r;

	memset(&pp, 0, sizeof(pp));
	pp.mech = m;
	pp.iters = o->iters;
	pp.budget_ns = o->budget_ns;
	pp.pin = pin;
	pp.validate = o->validate;
	printf("\n== running %s%s (%s%s) ==\n\n",
	       mechs[m].name, pin >= 0 ? "-pinned" : "", mechs[m].what,
	       pin >= 0 ? ", both threads on one CPU" : "");
	for (r = 0; r < o->runs; r++) {
		ns = run_once(&pp);
		if (!ns)
			return false;
		n = atomic_load(&pp.limit);
		print_run(n, ns);
		if (n < o->iters)
			printf("(stopped after %lu of %lu iterations: over the %llu s budget)\n",
			       n, o->iters,
			       (unsigned long long)(o->budget_ns / NSEC_PER_SEC));
		per_swap[r] = ns / (2 * n);
	}
	qsort(per_swap, o->runs, sizeof(per_swap[0]), cmp_u64);
	res->done = true;
	res->median = per_swap[o->runs / 2];
	res->min = per_swap[0];
	res->max = per_swap[o->runs - 1];
	res->placement = -1;
	if (o->placement) {
		pp.record = true;
		if (!run_once(&pp))
			return false;
		woken = pp.slept[0] + pp.slept[1];
		res->placement = woken ? 100.0 * (double)(pp.on_waker_cpu[0] +
							  pp.on_waker_cpu[1]) /
						 (double)woken : 0.0;
	}
	printf("%s%s: median %llu ns per swap over %u runs (min %llu, max %llu)",
	       mechs[m].name, pin >= 0 ? "-pinned" : "",
	       (unsigned long long)res->median, o->runs,
	       (unsigned long long)res->min, (unsigned long long)res->max);
	if (res->placement >= 0)
		printf("; wakee on the waker's CPU after %.2f %% of swaps",
		       res->placement);
	printf("\n");
	fflush(stdout);
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_swap [-i ITERATIONS] [-r RUNS] [-t SECONDS] [-m LIST]\n"
		"                  [-c CPU] [-u | -P] [-n] [-q]\n"
		"Two threads hand the CPU back and forth; prints ns per swap for each\n"
		"mechanism, the median of RUNS runs, unpinned and pinned to one CPU.\n"
		"  -i N     swap-and-back iterations per run (default %lu)\n"
		"  -r N     timed runs per mechanism, 1-%u (default %u)\n"
		"  -t S     a run stops early after S seconds (default %lu)\n"
		"  -m LIST  comma-separated mechanisms (default all):\n",
		DEF_ITERS, MAX_RUNS, DEF_RUNS, DEF_BUDGET);
	for (int m = 0; m < NR_MECHS; m++)
		fprintf(f, "             %-11s %s\n", mechs[m].name, mechs[m].what);
	fprintf(f,
		"  -c CPU   the CPU of the pinned runs (default 0)\n"
		"  -u       unpinned runs only\n"
		"  -P       pinned runs only\n"
		"  -n       do not validate the alternation (as the selftest's -n)\n"
		"  -q       no placement run (sched_getcpu() on both sides)\n"
		"  -h, --help  this text\n"
		"swap-plain writes N to " PARAM_DIR "wake_local for its runs\n"
		"(root only) and restores the value afterwards.\n");
}

static bool parse_mechs(char *list, bool *on)
{
	char *tok, *save = NULL;
	int m;

	memset(on, 0, sizeof(bool) * NR_MECHS);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < NR_MECHS; m++)
			if (!strcmp(tok, mechs[m].name))
				break;
		if (m == NR_MECHS) {
			fprintf(stderr, "bench_swap: unknown mechanism '%s'\n",
				tok);
			return false;
		}
		on[m] = true;
	}
	return true;
}

static bool parse_ulong(const char *s, unsigned long min, unsigned long max,
			unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int opt, m;

	o->iters = DEF_ITERS;
	o->runs = DEF_RUNS;
	o->budget_ns = DEF_BUDGET * NSEC_PER_SEC;
	for (m = 0; m < NR_MECHS; m++)
		o->mech[m] = true;
	o->unpinned = true;
	o->pinned = true;
	o->cpu = 0;
	o->validate = true;
	o->placement = true;
	while ((opt = getopt_long(argc, argv, "i:r:t:m:c:uPnqh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (!parse_ulong(optarg, 1, 1000000000UL, &o->iters))
				goto bad;
			break;
		case 'r':
			if (!parse_ulong(optarg, 1, MAX_RUNS, &v))
				goto bad;
			o->runs = (unsigned int)v;
			break;
		case 't':
			if (!parse_ulong(optarg, 1, 86400, &v))
				goto bad;
			o->budget_ns = v * NSEC_PER_SEC;
			break;
		case 'm':
			if (!parse_mechs(optarg, o->mech))
				goto bad;
			break;
		case 'c':
			if (!parse_ulong(optarg, 0, CPU_SETSIZE - 1, &v))
				goto bad;
			o->cpu = (int)v;
			break;
		case 'u':
			o->pinned = false;
			break;
		case 'P':
			o->unpinned = false;
			break;
		case 'n':
			o->validate = false;
			break;
		case 'q':
			o->placement = false;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind == argc && (o->pinned || o->unpinned))
		return;
bad:
	usage(stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	struct result res[NR_MECHS][2];
	char mech_name[32] = "?", saved[8] = "";
	struct options o;
	struct utsname un;
	uint64_t feat = 0;
	uint32_t abi;
	int m, p, r, failures = 0;
	bool have_param, have_tofutex;

	parse_options(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	r = tofutex_version(&abi, &feat);
	have_tofutex = !r && (feat & TOFUTEX_FEAT_SWAP) &&
		       (feat & TOFUTEX_FEAT_WAITWAKE);
	if (!have_tofutex)
		fprintf(stderr, "bench_swap: /dev/tofutex: %s: only futex and pipe run\n",
			r ? strerror(r) : "no WAIT/WAKE/SWAP");
	have_param = param_read("wake_local_mechanism", mech_name,
				sizeof(mech_name)) &&
		     param_read("wake_local", saved, sizeof(saved));
	uname(&un);
	printf("bench_swap: kernel %s, %ld CPUs, %lu iterations x %u runs, "
	       "wake_local %s (%s)\n", un.release, sysconf(_SC_NPROCESSORS_ONLN),
	       o.iters, o.runs, have_param ? saved : "?", mech_name);

	memset(res, 0, sizeof(res));
	for (p = 0; p < 2; p++) {
		if ((p == 0 && !o.unpinned) || (p == 1 && !o.pinned))
			continue;
		for (m = 0; m < NR_MECHS; m++) {
			bool plain = m == MECH_SWAP_PLAIN;

			if (!o.mech[m])
				continue;
			if (!have_tofutex && m != MECH_FUTEX && m != MECH_PIPE) {
				printf("\n%s: skipped: no tofutex module\n",
				       mechs[m].name);
				failures++;
				continue;
			}
			if (plain && !(have_param && param_write("wake_local", "N"))) {
				printf("\n%s: skipped: cannot write " PARAM_DIR
				       "wake_local\n", mechs[m].name);
				continue;
			}
			if (!bench_one(&o, m, p ? o.cpu : -1, &res[m][p]))
				failures++;
			if (plain && !param_write("wake_local", saved)) {
				fprintf(stderr, "bench_swap: cannot restore wake_local\n");
				failures++;
			}
		}
	}

	printf("\nsummary: median ns per swap over %u runs of up to %lu iterations [min-max]; "
	       "%% of swaps with the wakee on the waker's CPU\n", o.runs, o.iters);
	printf("%-12s %26s %8s %26s %8s\n", "mechanism", "unpinned", "on-cpu",
	       "pinned to one CPU", "on-cpu");
	for (m = 0; m < NR_MECHS; m++) {
		if (!res[m][0].done && !res[m][1].done)
			continue;
		printf("%-12s", mechs[m].name);
		for (p = 0; p < 2; p++) {
			char cell[64] = "-", pl[16] = "-";

			if (res[m][p].done)
				snprintf(cell, sizeof(cell), "%llu [%llu-%llu]",
					 (unsigned long long)res[m][p].median,
					 (unsigned long long)res[m][p].min,
					 (unsigned long long)res[m][p].max);
			if (res[m][p].done && res[m][p].placement >= 0)
				snprintf(pl, sizeof(pl), "%.2f",
					 res[m][p].placement);
			printf(" %26s %8s", cell, pl);
		}
		printf("\n");
	}
	if (res[MECH_SWAP][0].done && res[MECH_FUTEX][0].done)
		printf("swap vs futex: %.2fx faster\n",
		       (double)res[MECH_FUTEX][0].median /
		       (double)res[MECH_SWAP][0].median);
	if (res[MECH_SWAP][0].done && res[MECH_FUTEX][1].done)
		printf("swap vs the one-CPU floor (futex-pinned): %.2fx\n",
		       (double)res[MECH_SWAP][0].median /
		       (double)res[MECH_FUTEX][1].median);
	return failures ? 1 : 0;
}
