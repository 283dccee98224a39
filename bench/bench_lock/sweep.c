// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the spin sweep (--spin): after the main run, the tofutex
 * column again once per setting of the two spin budgets, the library's
 * user-space one (TOFUTEX_SPIN_NS, which libtofutex reads once per
 * process) and the module's spin_ns parameter (written through sysfs, as
 * root, and restored afterwards). Each setting runs in a fresh process,
 * this program executed again with the same options, only tofutex and no
 * uncontended test, its column named tofutex-u<U>[-k<K>]: its run records
 * join the main run's in report-lock.sh's tables, next to the baselines
 * of the same boot. Main thread only, after every run of the main process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_lock.h"

#define SPIN_NS_PARAM	"/sys/module/tofutex/parameters/spin_ns"
/* Set in a sweep's child: its tofutex column's name. */
#define SWEEP_ENV	"BENCH_LOCK_SWEEP"

const char *sweep_child_name(void)
{
	const char *name = getenv(SWEEP_ENV);

	return name && *name ? name : NULL;
}

static void write_param(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(value, f) == EOF || fclose(f))
		die("%s: %s", path, strerror(errno));
}

static void read_param(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, (int)len, f))
		die("%s: %s", path, strerror(errno));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* One setting: "U" or "U/K", ns; checked as --spin is parsed. */
static void run_setting(const char *setting, int argc, char **argv)
{
	char name[64], user[24], kernel[24] = "", saved[24] = "";
	char **nargv = calloc((size_t)argc + 8, sizeof(*nargv));
	const char *slash = strchr(setting, '/');
	int n = 0, status;
	pid_t pid;

	if (!nargv)
		die("out of memory");
	snprintf(user, sizeof(user), "%.*s",
		 (int)(slash ? (size_t)(slash - setting) : strlen(setting)),
		 setting);
	if (slash)
		snprintf(kernel, sizeof(kernel), "%s", slash + 1);
	snprintf(name, sizeof(name), "tofutex-u%s%s%s", user,
		 kernel[0] ? "-k" : "", kernel);
	if (kernel[0]) {
		read_param(SPIN_NS_PARAM, saved, sizeof(saved));
		write_param(SPIN_NS_PARAM, kernel);
	}
	for (int i = 0; i < argc; i++)
		nargv[n++] = argv[i];
	nargv[n++] = "--impl";
	nargv[n++] = "tofutex";
	nargv[n++] = "--uncontended";
	nargv[n++] = "0";
	nargv[n] = NULL;

	printf("\nbench_lock: --spin %s: TOFUTEX_SPIN_NS=%s%s%s, column %s\n",
	       setting, user, kernel[0] ? ", module spin_ns=" : "", kernel,
	       name);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		setenv("TOFUTEX_SPIN_NS", user, 1);
		setenv(SWEEP_ENV, name, 1);
		execv("/proc/self/exe", nargv);
		die("execv /proc/self/exe: %s", strerror(errno));
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	if (saved[0])
		write_param(SPIN_NS_PARAM, saved);
	free(nargv);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("--spin %s: the run failed (status %#x)", setting, status);
}

void spin_sweep(const struct options *o, int argc, char **argv)
{
	for (unsigned int i = 0; i < o->n_spin; i++)
		run_setting(o->spin[i], argc, argv);
}
