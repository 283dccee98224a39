// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the command line: BENCH_LOCK_OPTS, then argv, into struct
 * options; --help. A bad value prints what is accepted and exits with
 * status 1. Main thread only, at start-up.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lock.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_lock [options]\n"
"\n"
"T threads share a fixed total of lock operations. Each operation: lock,\n"
"read a counter, K units of critical section, write the counter + 1, unlock,\n"
"W units of work. Every point runs with both unit kinds unless --unit says\n"
"otherwise, and repeats; the tables give medians and min-max spreads, plus\n"
"ratios to glibc's default mutex. The counter must be exact, or the run\n"
"stops with exit status 2 and no numbers.\n"
"\n"
"  -t, --threads LIST   thread counts (default " DEF_THREADS ")\n"
"  -n, --ops N          lock operations per point, shared by the threads\n"
"                       (default %lu)\n"
"  -r, --reps N         repetitions per point (default %u, max %u)\n"
"  -i, --impl LIST      implementations (default: all, which is every one\n"
"                       but none):\n",
		DEF_OPS, DEF_REPS, MAX_REPS);
	for (int i = 0; i < IMPL_SPIN_FIRST; i++)
		fprintf(f, "                         %-9s %s\n", impls[i].name,
			impls[i].what);
	fprintf(f,
"  -k, --cs K           critical-section units (default %u)\n"
"  -w, --work LIST      units of work between locks (default " DEF_WORK ")\n"
"  -u, --unit LIST      pause: one pause instruction; loop: an empty counted\n"
"                       loop as long as one pause alone (default pause,loop)\n"
"  -l, --loop-iters N   iterations per loop unit instead of calibrating\n"
"  -s, --sample N       time every N-th lock acquisition per thread\n"
"                       (default %u; 0: no latency)\n"
"  -U, --uncontended N  first time N lock+unlock pairs in one thread with no\n"
"                       critical section or work, per implementation\n"
"                       (default %lu; 0: skip)\n"
"  -B, --blocking LIST  blocks whose critical section blocks the owner, run\n"
"                       with the loop unit (or --unit's first) and --work's\n"
"                       first W (default " DEF_BLOCKING "; none: no such block):\n"
"                         sleep     usleep(1) after the K units\n"
"                         fault     a write to the thread's page, dropped\n"
"                                   with madvise(MADV_DONTNEED) after its\n"
"                                   previous critical section: a page fault\n"
"  -L, --long-cs K      the oversubscribed block: K units of critical section\n"
"                       (default %u; 0: no such block) at 2, 4 and 8 threads\n"
"                       per CPU online, unit and W as --blocking's\n"
"  -S, --spin LIST      one more tofutex column per setting U, U/K or\n"
"                       U/NAME=V (at most 8), interleaved with the others:\n"
"                       each run in a child process with TOFUTEX_SPIN_NS=U\n"
"                       (the library's user-space spin: ns, auto or auto:N)\n"
"                       and, with /K, the module's spin_ns=K, with /NAME=V\n"
"                       its parameter NAME=V (root; restored after the\n"
"                       run); its column: tofutex-uU[-kK|-NAME=V]\n"
"  -b, --budget S       stop a run after S seconds (default %.1f; 0: never);\n"
"                       its ops/s then come from the operations done, and\n"
"                       its numbers are marked with *\n"
"  -o, --csv PATH       also write the CSV records to PATH\n"
"  -e, --emulation STR  name the machine's emulation (e.g. TCG) instead of\n"
"                       guessing it from CPUID\n"
"  -h, --help           this text\n"
"\n"
"Options in the environment variable BENCH_LOCK_OPTS come before the command\n"
"line's (make bench TEST_ENV=\"BENCH_LOCK_OPTS=--ops=50000\").\n"
"\n"
"tofutex needs /dev/tofutex (modprobe tofutex); without it, it is skipped\n"
"with a message and the others run. Output: human tables and CSV lines\n"
"starting with \"" CSV_TAG ",\" on stdout; bench/report-lock.sh FILE turns\n"
"them into tables and charts.\n",
		DEF_CS, DEF_SAMPLE, DEF_UNCONTENDED, DEF_LONG_CS, DEF_BUDGET);
}

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "bench_lock: bad %s '%s' (%lu..%lu)\n", what, s,
			min, max);
		exit(1);
	}
	return v;
}

static double parse_seconds(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 86400)) {
		fprintf(stderr, "bench_lock: bad %s '%s' (seconds, 0..86400)\n",
			what, s);
		exit(1);
	}
	return v;
}

static unsigned int parse_list(const char *s, const char *what,
			       unsigned int *out, unsigned long min,
			       unsigned long max)
{
	char *copy = strdup(s), *save = NULL, *tok;
	unsigned int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_LIST) {
			fprintf(stderr, "bench_lock: at most %d %s values\n",
				MAX_LIST, what);
			exit(1);
		}
		out[n++] = (unsigned int)parse_num(tok, what, min, max);
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "bench_lock: empty %s list\n", what);
		exit(1);
	}
	return n;
}

/* Names from a comma list into indices; "all" is every name, in order. */
static unsigned int parse_names(const char *s, const char *what,
				const char *const *names, unsigned int count,
				unsigned int n_all, unsigned int *out)
{
	char *copy = strdup(s), *save = NULL, *tok;
	bool seen[MAX_NAMES] = { false };
	unsigned int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		if (!strcmp(tok, "all")) {
			for (i = 0; i < n_all; i++)
				if (!seen[i]) {
					seen[i] = true;
					out[n++] = i;
				}
			continue;
		}
		for (i = 0; i < count; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == count) {
			fprintf(stderr, "bench_lock: unknown %s '%s' (", what,
				tok);
			for (i = 0; i < count; i++)
				fprintf(stderr, "%s%s", i ? ", " : "",
					names[i]);
			fprintf(stderr, ", all)\n");
			exit(1);
		}
		if (!seen[i]) {
			seen[i] = true;
			out[n++] = i;
		}
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "bench_lock: empty %s list\n", what);
		exit(1);
	}
	return n;
}

/*
 * --spin's U: what TOFUTEX_SPIN_NS accepts (tofutex(3)), a time in ns up
 * to 10 ms, "auto" or "auto:N" (N from 1 ns to 10 ms), so that a setting
 * the library would ignore does not pass for one it ran.
 */
static void parse_spin_user(const char *u)
{
	if (!strcmp(u, "auto"))
		return;
	if (!strncmp(u, "auto:", 5))
		parse_num(u + 5, "--spin auto cap ns", 1, 10000000);
	else
		parse_num(u, "--spin user ns", 0, 10000000);
}

/*
 * One module parameter name of a --spin setting: lower-case letters and
 * '_', as every tofutex parameter's, so that it names a file in the
 * module's parameter directory and nothing else.
 */
static void check_param_name(const char *name, size_t len)
{
	if (!len || len > MAX_PARAM_NAME || strspn(name, "abcdefghijklmnopqrstuvwxyz_") < len) {
		fprintf(stderr, "bench_lock: bad --spin module parameter '%.*s'\n",
			(int)len, name);
		exit(1);
	}
}

/*
 * --spin: "U", "U/K" or "U/NAME=V" settings; U and K are times in ns up
 * to 10 ms, V any number a parameter takes.
 */
static void parse_spin(const char *s, struct options *o)
{
	char *copy = strdup(s), *save = NULL, *tok, *slash, *eq;

	if (!copy)
		die("out of memory");
	o->n_spin = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->n_spin == MAX_SPIN) {
			fprintf(stderr, "bench_lock: at most %d --spin settings\n",
				MAX_SPIN);
			exit(1);
		}
		o->spin[o->n_spin++] = tok;
		slash = strchr(tok, '/');
		if (slash)
			*slash = '\0';
		parse_spin_user(tok);
		if (!slash)
			continue;
		*slash = '/';
		eq = strchr(slash, '=');
		if (eq) {
			check_param_name(slash + 1, (size_t)(eq - slash - 1));
			parse_num(eq + 1, "--spin parameter value", 0,
				  4000000000UL);
		} else {
			parse_num(slash + 1, "--spin kernel ns", 0, 10000000);
		}
	}
}

void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "impl", required_argument, NULL, 'i' },
		{ "cs", required_argument, NULL, 'k' },
		{ "work", required_argument, NULL, 'w' },
		{ "unit", required_argument, NULL, 'u' },
		{ "loop-iters", required_argument, NULL, 'l' },
		{ "sample", required_argument, NULL, 's' },
		{ "uncontended", required_argument, NULL, 'U' },
		{ "blocking", required_argument, NULL, 'B' },
		{ "long-cs", required_argument, NULL, 'L' },
		{ "spin", required_argument, NULL, 'S' },
		{ "budget", required_argument, NULL, 'b' },
		{ "csv", required_argument, NULL, 'o' },
		{ "emulation", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *impl_names[NR_IMPLS], *threads = DEF_THREADS;
	const char *impl = "all", *work = DEF_WORK, *unit = "pause,loop";
	const char *blocking = DEF_BLOCKING;
	unsigned int idx[NR_IMPLS];
	int c;

	memset(o, 0, sizeof(*o));
	o->ops = DEF_OPS;
	o->reps = DEF_REPS;
	o->cs = DEF_CS;
	o->sample = DEF_SAMPLE;
	o->uncontended = DEF_UNCONTENDED;
	o->budget = DEF_BUDGET;
	o->long_cs = DEF_LONG_CS;
	while ((c = getopt_long(argc, argv, "t:n:r:i:k:w:u:l:s:U:B:L:S:b:o:e:h",
				longopts, NULL)) != -1) {
		switch (c) {
		case 't': threads = optarg; break;
		case 'n': o->ops = parse_num(optarg, "--ops", 1, 1UL << 40); break;
		case 'r': o->reps = (unsigned int)parse_num(optarg, "--reps", 1, MAX_REPS); break;
		case 'i': impl = optarg; break;
		case 'k': o->cs = (unsigned int)parse_num(optarg, "--cs", 0, MAX_UNITS); break;
		case 'w': work = optarg; break;
		case 'u': unit = optarg; break;
		case 'l': o->loop_iters = parse_num(optarg, "--loop-iters", 1, 1UL << 30); break;
		case 's': o->sample = (unsigned int)parse_num(optarg, "--sample", 0, 1U << 30); break;
		case 'U': o->uncontended = parse_num(optarg, "--uncontended", 0, 1UL << 40); break;
		case 'B': blocking = optarg; break;
		case 'S': parse_spin(optarg, o); break;
		case 'L': o->long_cs = (unsigned int)parse_num(optarg, "--long-cs", 0, MAX_UNITS); break;
		case 'b': o->budget = parse_seconds(optarg, "--budget"); break;
		case 'o': o->csv_path = optarg; break;
		case 'e': o->emulation = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(1);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_lock: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(1);
	}

	o->n_threads = parse_list(threads, "--threads", o->threads, 1,
				  MAX_THREADS);
	o->n_work = parse_list(work, "--work", o->work, 0, MAX_UNITS);
	for (int i = 0; i < IMPL_SPIN_FIRST; i++)
		impl_names[i] = impls[i].name;
	o->n_impl = parse_names(impl, "implementation", impl_names,
				IMPL_SPIN_FIRST, IMPL_NONE, idx);
	for (unsigned int i = 0; i < o->n_impl; i++)
		o->impl[i] = (enum impl_id)idx[i];
	spin_columns(o);
	o->n_unit = parse_names(unit, "unit", unit_names, NR_UNITS, NR_UNITS,
				idx);
	for (unsigned int i = 0; i < o->n_unit; i++)
		o->unit[i] = (enum unit_kind)idx[i];
	/* "none" is not a kind: the blocking kinds are the names after it. */
	if (strcmp(blocking, "none")) {
		o->n_blocking = parse_names(blocking, "blocking kind",
					    cs_kind_names + 1, NR_CS_KINDS - 1,
					    NR_CS_KINDS - 1, idx);
		for (unsigned int i = 0; i < o->n_blocking; i++)
			o->blocking[i] = (enum cs_kind)(idx[i] + 1);
	}
	for (unsigned int i = 0; i < o->n_threads; i++)
		if (o->threads[i] > o->ops) {
			fprintf(stderr, "bench_lock: %u threads need at least as many --ops (%lu)\n",
				o->threads[i], o->ops);
			exit(1);
		}
}

/*
 * BENCH_LOCK_OPTS: options taken before the command line's, split at
 * blanks. `make bench` runs every benchmark without arguments; this is how
 * its TEST_ENV changes them without a rebuild.
 */
void env_options(int *argc, char ***argv)
{
	const char *env = getenv("BENCH_LOCK_OPTS");
	char *copy, *save = NULL, *tok, **nargv;
	int n = 1;

	if (!env || !*env)
		return;
	copy = strdup(env);
	nargv = calloc(strlen(env) / 2 + 2 + (size_t)*argc, sizeof(*nargv));
	if (!copy || !nargv)
		die("out of memory");
	nargv[0] = (*argv)[0];
	for (tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save))
		nargv[n++] = tok;
	for (int i = 1; i < *argc; i++)
		nargv[n++] = (*argv)[i];
	nargv[n] = NULL;
	printf("bench_lock: options from BENCH_LOCK_OPTS: %s\n", env);
	*argc = n;
	*argv = nargv;
}
