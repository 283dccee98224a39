// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - the reports' destinations (report.h has the
 * rules). Called at start from the libraries' constructors, at exit from
 * exit.c, where only system calls may run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

/* A pipe or socket: its reader waits for every writer to close it. */
static bool tfx_report_held_open(const struct stat *st)
{
	return S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode);
}

static int tfx_report_stderr(struct tfx_report *r)
{
	struct stat st;

	r->err = true;
	if (fstat(STDERR_FILENO, &st))
		return errno;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	if (tfx_report_held_open(&st))
		return 0;
	r->fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	return r->fd < 0 ? errno : 0;
}

static void tfx_report_keep(struct tfx_report *r);

/*
 * The calling thread's seccomp mode, as PR_GET_SECCOMP answers: -1 when
 * a filter hides it. A kernel built without CONFIG_SECCOMP answers
 * EINVAL: no filter can exist there, the mode is 0.
 */
static int tfx_report_seccomp(void)
{
	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);

	return mode < 0 && errno == EINVAL ? 0 : mode;
}

int tfx_report_open(struct tfx_report *r, const char *what,
		    const char *value, bool err_too)
{
	char cwd[PATH_MAX];
	struct stat st;
	int n;

	r->what = what;
	r->fd = -1;
	r->path[0] = '\0';
	r->seccomp = tfx_report_seccomp();
	if (!strcmp(value, "1") || (err_too && !strcmp(value, "all")))
		return tfx_report_stderr(r);
	r->err = false;
	r->keep_err = 0;
	/* Where a message that the file is lost may go (tfx_report_lost()). */
	r->dev = 0;
	r->ino = 0;
	if (!fstat(STDERR_FILENO, &st)) {
		r->dev = st.st_dev;
		r->ino = st.st_ino;
	}
	if (value[0] == '/') {
		n = snprintf(r->path, sizeof(r->path), "%s", value);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return errno;
		n = snprintf(r->path, sizeof(r->path), "%s/%s", cwd, value);
	}
	if (n < 0 || (size_t)n >= sizeof(r->path)) {
		r->path[0] = '\0';
		return ENAMETOOLONG;
	}
	/* Under a filter from the start, or unknown: opened now (report.h). */
	if (r->seccomp)
		tfx_report_keep(r);
	return 0;
}

/* Is @fd still the file standard error was at start? */
static bool tfx_report_same(const struct tfx_report *r, int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_dev == r->dev && st.st_ino == r->ino;
}

/*
 * The file, opened above descriptor 2 (the program may have closed 0-2).
 * Opened without waiting: a FIFO that nobody reads would else hold the
 * process at its exit for ever (ENXIO instead); writes then wait as usual.
 */
static int tfx_report_file(const struct tfx_report *r)
{
	int fd, high, fl;

	fd = open(r->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
		  O_NOCTTY | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0)
		return fd;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		close(fd);
		return -1;
	}
	if (fd > STDERR_FILENO)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return high;
}

/* Open the file now and keep it, if it is a regular file. */
static void tfx_report_keep(struct tfx_report *r)
{
	struct stat st;
	int fd = tfx_report_file(r);

	if (fd < 0) {
		r->keep_err = errno;
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	r->file_dev = st.st_dev;
	r->file_ino = st.st_ino;
	r->fd = fd;
	r->kept = true;
}

/* Is the file kept still at its descriptor? */
static bool tfx_report_kept(const struct tfx_report *r)
{
	struct stat st;

	return r->fd >= 0 && !fstat(r->fd, &st) && S_ISREG(st.st_mode) &&
	       st.st_dev == r->file_dev && st.st_ino == r->file_ino;
}

/*
 * The errno's name, a constant string: strerror() may translate, and so
 * allocate, which _exit() in a signal handler must not.
 */
static const char *tfx_report_errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "?";
}

/*
 * The file could not be opened or written (@how, @why): say so on
 * standard error, if it is the one the process started with.
 */
static void tfx_report_lost(const struct tfx_report *r, const char *how,
			    const char *why)
{
	char line[PATH_MAX + 256];
	int n;

	/* Not into a file the program made descriptor 2 since. */
	if (!r->ino || !tfx_report_same(r, STDERR_FILENO))
		return;
	n = snprintf(line, sizeof(line),
		     "tofutex-run: %s[%d]: %s=%s: cannot %s it (%s); no report\n",
		     program_invocation_short_name, (int)getpid(), r->what,
		     r->path, how, why);
	if (n > 0)
		(void)!write(STDERR_FILENO, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void tfx_report_write(struct tfx_report *r, const char *buf, size_t len)
{
	int fd;

	if (r->err) {
		fd = r->fd >= 0 ? r->fd : STDERR_FILENO;
		if (tfx_report_same(r, fd))
			(void)!write(fd, buf, len);
		return;
	}
	if (!r->path[0])
		return;
	if (tfx_report_kept(r)) {
		if (write(r->fd, buf, len) < 0)
			tfx_report_lost(r, "write", tfx_report_errname(errno));
		return;
	}
	if (r->kept) {
		tfx_report_lost(r, "write",
				"the program closed it, under a seccomp filter");
		return;
	}
	/* Under a filter from the start: not a file that could be kept. */
	if (r->seccomp) {
		tfx_report_lost(r, "open", r->keep_err ?
				tfx_report_errname(r->keep_err) :
				"not a regular file, under a seccomp filter");
		return;
	}
	/* Confined since it started: the filter may kill it for open(). */
	if (tfx_report_seccomp() != r->seccomp) {
		tfx_report_lost(r, "open",
				"the process installed a seccomp filter");
		return;
	}
	fd = tfx_report_file(r);
	if (fd < 0) {
		tfx_report_lost(r, "open", tfx_report_errname(errno));
		return;
	}
	if (write(fd, buf, len) < 0)
		tfx_report_lost(r, "write", tfx_report_errname(errno));
	close(fd);
}
