// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the spin sweep (--spin): one more tofutex column per
 * setting of the two spin budgets, the library's user-space one
 * (TOFUTEX_SPIN_NS, which libtofutex reads once per process, and again in
 * a fork() child) and a module parameter: spin_ns, or any other named in
 * the setting (written through sysfs, as root). Its runs interleave with
 * the other columns' like any implementation's, so that every setting is
 * measured side by side with the same baselines; each runs in a child
 * process that sets its environment before its first lock and sends its
 * struct result back through a pipe. The parent writes the parameter
 * before the child starts and restores it after the child exits. Main
 * thread only, between runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_lock.h"

#define PARAM_DIR	"/sys/module/tofutex/parameters/"

static struct {
	char name[64];
	char user[24];
	/* The parameter's file; "": no module parameter. */
	char param[sizeof(PARAM_DIR) + MAX_PARAM_NAME];
	char value[24];
} settings[MAX_SPIN];

/*
 * Name the columns of the --spin settings and add them to the list. A
 * setting is U, U/K (spin_ns=K) or U/NAME=V (parameter NAME=V); options.c
 * checked its form.
 */
void spin_columns(struct options *o)
{
	for (unsigned int i = 0; i < o->n_spin; i++) {
		const char *s = o->spin[i], *slash = strchr(s, '/');
		const char *eq = slash ? strchr(slash, '=') : NULL;
		size_t ulen = slash ? (size_t)(slash - s) : strlen(s);

		snprintf(settings[i].user, sizeof(settings[i].user), "%.*s",
			 (int)ulen, s);
		if (eq) {
			snprintf(settings[i].param, sizeof(settings[i].param),
				 PARAM_DIR "%.*s", (int)(eq - slash - 1),
				 slash + 1);
			snprintf(settings[i].value, sizeof(settings[i].value),
				 "%s", eq + 1);
		} else if (slash) {
			snprintf(settings[i].param, sizeof(settings[i].param),
				 PARAM_DIR "spin_ns");
			snprintf(settings[i].value, sizeof(settings[i].value),
				 "%s", slash + 1);
		}
		snprintf(settings[i].name, sizeof(settings[i].name),
			 "tofutex-u%s%s%s", settings[i].user,
			 eq ? "-" : slash ? "-k" : "", slash ? slash + 1 : "");
		impls[IMPL_SPIN_FIRST + i].name = settings[i].name;
		impls[IMPL_SPIN_FIRST + i].what = "tofutex_mutex_t, --spin setting";
		o->impl[o->n_impl++] = (enum impl_id)(IMPL_SPIN_FIRST + i);
	}
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

/* The whole of @len bytes from @fd, or die. */
static void read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("--spin child: short result (%s)",
			    n ? strerror(errno) : "end of file");
		p += n;
		len -= (size_t)n;
	}
}

/* One run of a --spin column: the tofutex lock, in a child process. */
void run_spin_column(const struct point *p, struct result *res)
{
	unsigned int i = p->impl - IMPL_SPIN_FIRST;
	struct point q = *p;
	char saved[24] = "";
	int fds[2], status;
	pid_t pid;

	q.impl = IMPL_TOFUTEX;
	if (settings[i].param[0]) {
		read_param(settings[i].param, saved, sizeof(saved));
		write_param(settings[i].param, settings[i].value);
	}
	if (pipe(fds))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	if (csv_file)
		fflush(csv_file);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(fds[0]);
		if (setenv("TOFUTEX_SPIN_NS", settings[i].user, 1))
			die("setenv: %s", strerror(errno));
		run_once(&q, res);
		if (write(fds[1], res, sizeof(*res)) != (ssize_t)sizeof(*res))
			die("--spin child: write: %s", strerror(errno));
		_exit(0);
	}
	close(fds[1]);
	read_all(fds[0], res, sizeof(*res));
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	if (saved[0])
		write_param(settings[i].param, saved);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("%s: the run's child failed (status %#x)", settings[i].name,
		    status);
}
