// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread, where the reports go (TOFUTEX_PROFILE and
 * TOFUTEX_RUN_STATS, lib/pthread/report.h). This program starts itself
 * again (--work...) under tofutex-run with the reports on; that child
 * contends one mutex once (its waiter asleep before the release), so
 * that it has a profile to write, then:
 *
 *   --work         returns, in another directory than it started in
 *   --work-daemon  forks a process that leaves its caller, as daemon(3)
 *                  does (setsid(), descriptors 0-2 onto /dev/null), and
 *                  stays until the test kills it
 *   --work-locale  has set a decimal-comma locale first (comma.locale,
 *                  built next to this program), as setlocale(LC_ALL, "")
 *                  under de_DE or fr_FR does
 *   --work-early   also initialises a mutex and a condition variable and
 *                  waits once, after plugin_early.c's library, which this
 *                  program is linked with, has locked in its constructor,
 *                  before the preload's had run (early.h)
 *
 * Checked: a report on standard error, a pipe, holds nothing of it open
 * in the daemon (its reader sees end-of-file while the daemon lives);
 * with standard output closed at start, the reports' files get only the
 * reports (nothing opened at start takes descriptor 1); a report file
 * named by a dangling symbolic link is not followed (nothing is created
 * at its target) and the process says so; a relative name is the
 * starting directory's; the numbers of both report forms keep their '.'
 * under a decimal-comma locale; the statistics count from the preload's
 * start, not the early constructor's locking.
 */
#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include "early.h"
#include "sleeping.h"

#define WORK_ARG	"--work"
#define WORK_DAEMON_ARG	"--work-daemon"
#define WORK_DAEMON3_ARG	"--work-daemon3"
#define WORK_FDS_ARG	"--work-fds"
#define WORK_CANCEL__EXIT_ARG	"--work-cancel-_exit"
#define WORK_CANCEL_EXIT_ARG	"--work-cancel-exit"
#define WORK_LOCALE_ARG	"--work-locale"
#define WORK_OWN_ERR_ARG	"--work-own-stderr"
#define WORK_EARLY_ARG	"--work-early"
#define LOCALE_NAME	"tfx_comma"
/* What the daemon writes to TOFUTEX_TEST_DATA once it has left: its pid. */
#define DATA_ENV	"TOFUTEX_TEST_DATA"

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;

static void *locker(void *arg)
{
	uint32_t *tid = arg;

	__atomic_store_n(tid, (uint32_t)gettid(), __ATOMIC_RELEASE);
	pthread_mutex_lock(&hot);
	pthread_mutex_unlock(&hot);
	return NULL;
}

/* One contention of @hot: the other thread asleep in its lock. */
static int contend_once(void)
{
	uint32_t tid = 0;
	pthread_t t;

	pthread_mutex_lock(&hot);
	if (pthread_create(&t, NULL, locker, &tid) || !thread_asleep_within(&tid))
		return 3;
	pthread_mutex_unlock(&hot);
	pthread_join(t, NULL);
	return 0;
}

/* The daemon: leaves the caller's descriptors, says its pid, stays. */
static int daemon_child(void)
{
	char line[32];
	int fd, n;

	if (setsid() < 0)
		return 3;
	fd = open("/dev/null", O_RDWR);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		return 3;
	close(fd);
	fd = open(getenv(DATA_ENV), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		return 3;
	close(fd);
	for (;;)
		pause();
}

/*
 * --work-early: plugin_early.c's constructor locked as early.h says;
 * then one mutex and one condition variable initialised and one wait,
 * besides contend_once().
 */
static int early_then_own(void)
{
	const struct early *e = tfx_early();
	struct timespec ts = realtime_in(0);
	pthread_mutex_t m;
	pthread_cond_t c;
	int bad = 0;

	if (e->bad || e->rounds != EARLY_ROUNDS)
		return 1;
	if (pthread_mutex_init(&m, NULL) || pthread_cond_init(&c, NULL) ||
	    pthread_mutex_lock(&m))
		return 1;
	if (pthread_cond_timedwait(&c, &m, &ts) != ETIMEDOUT)
		bad = 1;
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&c);
	pthread_mutex_destroy(&m);
	return bad;
}

/* The number of this process's open descriptors. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* not opendir()'s own */
}

/* A thread with its own cancellation pending ends the process: 3. */
static void *cancel_then_exit(void *arg)
{
	pthread_cancel(pthread_self());
	if (arg)
		_exit(3);
	exit(3);
}

static int work_then(const char *how)
{
	char dir[PATH_MAX], self[PATH_MAX], buf[32];
	ssize_t n;
	pid_t pid;

	if (!strcmp(how, WORK_LOCALE_ARG)) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return 3;
		self[n] = '\0';
		snprintf(dir, sizeof(dir), "%s/locale", dirname(self));
		setenv("LOCPATH", dir, 1);
		setenv("LC_ALL", LOCALE_NAME, 1);
		/* The locale is in force: printf() writes a comma. */
		snprintf(buf, sizeof(buf), "%.1f", 0.5);
		if (!setlocale(LC_ALL, "") || strcmp(buf, "0.5"))
			return 4;
		snprintf(buf, sizeof(buf), "%.1f", 0.5);
		if (strcmp(buf, "0,5"))
			return 5;
	}
	/* Descriptor 2 made the program's own file, as a daemon does. */
	if (!strcmp(how, WORK_OWN_ERR_ARG) &&
	    (close(STDERR_FILENO) ||
	     open("own.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644) !=
	     STDERR_FILENO))
		return 3;
	if (!strcmp(how, WORK_EARLY_ARG) && early_then_own())
		return 6;
	if (contend_once())
		return 3;
	if (!strcmp(how, WORK_OWN_ERR_ARG))
		return write(STDERR_FILENO, "DATA\n", 5) == 5 ? 0 : 3;
	if (!strcmp(how, WORK_CANCEL__EXIT_ARG) ||
	    !strcmp(how, WORK_CANCEL_EXIT_ARG)) {
		pthread_t t;

		if (pthread_create(&t, NULL, cancel_then_exit,
				   strcmp(how, WORK_CANCEL_EXIT_ARG) ? &t : NULL))
			return 5;
		pthread_join(t, NULL);
		/* The thread was cancelled instead: the process goes on. */
		return 4;
	}
	/* How many descriptors it has once it has locked. */
	if (!strcmp(how, WORK_FDS_ARG))
		return printf("fds=%d\n", count_fds()) < 0;
	/* daemon(3): its parent ends inside glibc, with _exit(). */
	if (!strcmp(how, WORK_DAEMON3_ARG))
		return daemon(1, 1) || contend_once() ? 3 : 0;
	if (!strcmp(how, WORK_DAEMON_ARG)) {
		pid = fork();
		if (pid == 0)
			_exit(daemon_child());
		return pid < 0 ? 3 : 0;
	}
	/* Its own output: nowhere when standard output is closed. */
	printf("the program's own output\n");
	fflush(stdout);
	/* Ends elsewhere: a relative report file is the start's. */
	return chdir("/") ? 3 : 0;
}

/* Where this program's tofutex-run is (next to the preload). */
static void run_path(char *run, size_t len)
{
	const char *env = getenv("LD_PRELOAD");
	char dir[PATH_MAX];

	ck_assert_msg(env && *env, "run under tofutex-run");
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(env, ": "), env);
	snprintf(run, len, "%s/../bin/tofutex-run", dirname(dir));
}

/*
 * Start this program's work @how under tofutex-run in directory @cwd,
 * TOFUTEX_PROFILE=@prof and TOFUTEX_RUN_STATS=@stats (NULL: unset), its
 * standard output on @out (-1: closed) and standard error on @err.
 */
static pid_t start_work(const char *how, const char *cwd, const char *prof,
			const char *stats, int out, int err)
{
	char run[PATH_MAX], self[PATH_MAX];
	char *args[] = { run, self, (char *)how, NULL };
	ssize_t n;
	pid_t pid;

	run_path(run, sizeof(run));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	pid = fork();
	ck_assert(pid >= 0);
	if (pid)
		return pid;
	if (prof)
		setenv("TOFUTEX_PROFILE", prof, 1);
	else
		unsetenv("TOFUTEX_PROFILE");
	if (stats)
		setenv("TOFUTEX_RUN_STATS", stats, 1);
	else
		unsetenv("TOFUTEX_RUN_STATS");
	if (dup2(err, 2) < 0 || (out >= 0 ? dup2(out, 1) : close(1)) < 0 ||
	    (cwd && chdir(cwd)))
		_exit(126);
	execv(run, args);
	_exit(127);
}

static int wait_work(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* A file's contents (at most @len - 1 bytes); "" when it is absent. */
static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = 0;

	buf[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

/* A directory of this test's own, under TMPDIR. */
static void scratch(char *dir, size_t len)
{
	snprintf(dir, len, "%s/tofutex-report-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert(mkdtemp(dir));
}

/* Remove the directory and the files the test made in it. */
static void scratch_done(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *e;
	DIR *d = opendir(dir);

	ck_assert(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(path), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}

/*
 * The daemon the work leaves behind keeps nothing of the pipe its
 * report went to: the reader sees end-of-file while it lives, and the
 * worker's report came through the pipe.
 */
START_TEST(test_report_stderr_pipe_not_held_by_a_daemon)
{
	char dir[PATH_MAX], data[PATH_MAX + 16], buf[8192], pidline[32];
	struct pollfd p;
	size_t got = 0;
	bool said, eof = false;
	uint64_t end;
	pid_t pid, daemon_pid;
	int fds[2], status;
	ssize_t n;

	scratch(dir, sizeof(dir));
	snprintf(data, sizeof(data), "%s/daemon.pid", dir);
	setenv(DATA_ENV, data, 1);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = start_work(WORK_DAEMON_ARG, NULL, "1", "1", fds[1], fds[1]);
	close(fds[1]);
	status = wait_work(pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	/* The daemon has left the pipe once it has written its pid. */
	WAIT_UNTIL(said, (slurp(data, pidline, sizeof(pidline)),
			  strchr(pidline, '\n') != NULL), TEST_WAIT_NS);
	ck_assert_msg(said, "the daemon never said its pid");
	daemon_pid = atoi(pidline);
	ck_assert(daemon_pid > 0);
	end = now_ns() + TEST_WAIT_NS;
	p = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	while (!eof && now_ns() < end && poll(&p, 1, 100) >= 0) {
		if (!p.revents)
			continue;
		n = read(fds[0], buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			eof = true;
		else
			got += (size_t)n;
	}
	buf[got] = '\0';
	ck_assert_msg(kill(daemon_pid, 0) == 0, "the daemon is gone");
	kill(daemon_pid, SIGKILL);
	close(fds[0]);
	scratch_done(dir);
	ck_assert_msg(eof, "the daemon holds the report's pipe open");
	ck_assert_msg(strstr(buf, "tofutex-run: profile of "),
		      "no profile on the pipe: %s", buf);
	ck_assert_msg(strstr(buf, " backend="), "no statistics: %s", buf);
}
END_TEST

/*
 * Start the work @how with its statistics to the file @path, its output
 * to /dev/null; its pid.
 */
static pid_t start_work_stats(const char *how, const char *path)
{
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pid_t pid;

	ck_assert(devnull >= 0);
	pid = start_work(how, NULL, NULL, path, devnull, devnull);
	close(devnull);
	return pid;
}

/*
 * tofutex-run(1), BUGS: the parent side of daemon(3), which locked, ends
 * inside glibc (its _exit()) and writes no statistics; the daemon, which
 * locks too and ends through exit(), writes its own line.
 */
START_TEST(test_report_daemon3_parent_writes_none)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], want[32];
	static char buf[8192];
	int status;
	bool said;
	pid_t pid;

	scratch(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/s.txt", dir);
	pid = start_work_stats(WORK_DAEMON3_ARG, path);
	status = wait_work(pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	WAIT_UNTIL(said, (slurp(path, buf, sizeof(buf)),
			  strchr(buf, '\n') != NULL), TEST_WAIT_NS);
	ck_assert_msg(said, "the daemon wrote no statistics");
	snprintf(want, sizeof(want), "[%d] ", (int)pid);
	ck_assert_msg(!strstr(buf, want),
		      "the parent of daemon(3) wrote statistics: %s", buf);
	ck_assert_msg(strchr(buf, '\n') == buf + strlen(buf) - 1,
		      "not the daemon's line alone: %s", buf);
	scratch_done(dir);
}
END_TEST

/*
 * tofutex-run(1), BUGS: with TOFUTEX_RUN_STATS=1 and a standard error
 * that is a file, the process keeps one descriptor more (its copy of
 * standard error) than without.
 */
START_TEST(test_report_stderr_file_keeps_one_descriptor)
{
	char dir[PATH_MAX], err[PATH_MAX + 16], out[PATH_MAX + 16];
	char buf[256];
	int fds[2], fd, ofd, status, i;

	scratch(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	for (i = 0; i < 2; i++) {
		fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		ck_assert(fd >= 0 && ofd >= 0);
		status = wait_work(start_work(WORK_FDS_ARG, NULL, NULL,
					      i ? "1" : NULL, ofd, fd));
		close(fd);
		close(ofd);
		ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
			      "work status %#x", status);
		slurp(out, buf, sizeof(buf));
		ck_assert(sscanf(buf, "fds=%d", &fds[i]) == 1);
	}
	slurp(err, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " backend="), "no statistics: %s", buf);
	scratch_done(dir);
	ck_assert_msg(fds[1] == fds[0] + 1,
		      "%d descriptors with the statistics to standard error, %d without",
		      fds[1], fds[0]);
}
END_TEST

/*
 * _exit() (_i 0) or exit() (_i 1) by a thread with a cancellation pending,
 * the statistics asked for: the process ends with that status, as without
 * the library, and the statistics are written.
 */
START_TEST(test_report_exit_with_cancellation_pending)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	static char buf[8192];
	int status;

	scratch(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/s.txt", dir);
	status = wait_work(start_work_stats(_i ? WORK_CANCEL_EXIT_ARG :
					    WORK_CANCEL__EXIT_ARG, path));
	slurp(path, buf, sizeof(buf));
	scratch_done(dir);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 3,
		      "work status %#x (4: the thread was cancelled inside %s)",
		      status, _i ? "exit()" : "_exit()");
	ck_assert_msg(strstr(buf, " backend="), "no statistics: %s", buf);
}
END_TEST

/*
 * Standard output closed at start: the reports' files get the reports
 * alone (one line each), not the program's output; relative names are
 * the starting directory's, though the program ends in another.
 */
START_TEST(test_report_files_with_stdout_closed)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	static char buf[65536];
	int devnull, status;

	scratch(dir, sizeof(dir));
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ck_assert(devnull >= 0);
	status = wait_work(start_work(WORK_ARG, dir, "p.json", "s.txt", -1,
				      devnull));
	close(devnull);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	slurp(path, buf, sizeof(buf));
	ck_assert_msg(!strncmp(buf, "{\"program\": ", 12) &&
		      strchr(buf, '\n') == buf + strlen(buf) - 1,
		      "not one report alone: %s", buf);
	snprintf(path, sizeof(path), "%s/s.txt", dir);
	slurp(path, buf, sizeof(buf));
	ck_assert_msg(!strncmp(buf, "tofutex-run: ", 13) &&
		      strchr(buf, '\n') == buf + strlen(buf) - 1,
		      "not one statistics line alone: %s", buf);
	scratch_done(dir);
}
END_TEST

/*
 * A report file that is a dangling symbolic link: not followed, nothing
 * made at its target, and the process says why on standard error.
 */
START_TEST(test_report_file_symlink_not_followed)
{
	char dir[PATH_MAX], link[PATH_MAX + 16], target[PATH_MAX + 16];
	char err[PATH_MAX + 16];
	static char buf[8192];
	int fd, status;

	scratch(dir, sizeof(dir));
	snprintf(link, sizeof(link), "%s/p.txt", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	ck_assert_int_eq(symlink(target, link), 0);
	fd = open(err, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert(fd >= 0);
	status = wait_work(start_work(WORK_ARG, NULL, link, NULL, fd, fd));
	close(fd);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	ck_assert_msg(access(target, F_OK) && errno == ENOENT,
		      "the link's target was created");
	slurp(err, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "TOFUTEX_PROFILE=") && strstr(buf, "ELOOP"),
		      "the process did not say why: %s", buf);
	scratch_done(dir);
}
END_TEST

/*
 * A report file that is a FIFO nobody reads: the process does not wait
 * at its exit for a reader that never comes; it says why there is no
 * report (ENXIO). And a file that takes no writes (/proc/version): the
 * process says that too.
 */
START_TEST(test_report_file_that_takes_nothing)
{
	char dir[PATH_MAX], fifo[PATH_MAX + 16], err[PATH_MAX + 16];
	static char buf[8192];
	int fd, status = 0, rfd;
	bool ended;
	pid_t pid;

	scratch(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/p.fifo", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	fd = open(err, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert(fd >= 0);
	pid = start_work(WORK_ARG, NULL, fifo, NULL, fd, fd);
	WAIT_UNTIL(ended, waitpid(pid, &status, WNOHANG) == pid,
		   TEST_WAIT_NS);
	if (!ended) {
		/* Let it go, and fail. */
		rfd = open(fifo, O_RDONLY | O_NONBLOCK);
		wait_work(pid);
		close(rfd);
	}
	ck_assert_msg(ended, "the process waits at its exit for a reader of its report FIFO");
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	slurp(err, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "TOFUTEX_PROFILE=") && strstr(buf, "ENXIO"),
		      "the process did not say why: %s", buf);
	status = wait_work(start_work(WORK_ARG, NULL, NULL, "/proc/version",
				      fd, fd));
	close(fd);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	slurp(err, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "TOFUTEX_RUN_STATS=/proc/version: cannot "),
		      "no word of the lost statistics: %s", buf);
	/* Not into a file the program has made its descriptor 2 since. */
	fd = open(err, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert(fd >= 0);
	status = wait_work(start_work(WORK_OWN_ERR_ARG, dir, NULL,
				      "/nonexistent/s.txt", fd, fd));
	close(fd);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	snprintf(fifo, sizeof(fifo), "%s/own.txt", dir);
	slurp(fifo, buf, sizeof(buf));
	ck_assert_msg(!strcmp(buf, "DATA\n"),
		      "the program's own file got more than its data: %s", buf);
	slurp(err, buf, sizeof(buf));
	ck_assert_msg(!strstr(buf, "cannot open it"),
		      "the start's standard error got the message anyway: %s", buf);
	scratch_done(dir);
}
END_TEST

/* Is @s, from its start, digits, '.', then @decimals digits? */
static bool point_number(const char *s, int decimals)
{
	int i = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s++ != '.')
		return false;
	for (; i < decimals; i++)
		if (!isdigit((unsigned char)*s++))
			return false;
	return !isdigit((unsigned char)*s);
}

/* Under a decimal-comma locale both report forms keep their '.'. */
START_TEST(test_report_numbers_under_a_decimal_comma_locale)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	static char buf[65536];
	const char *p;
	int devnull, status;

	scratch(dir, sizeof(dir));
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ck_assert(devnull >= 0);
	status = wait_work(start_work(WORK_LOCALE_ARG, dir, "p.json", NULL,
				      devnull, devnull));
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x (4, 5: the locale did not load)",
		      status);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	slurp(path, buf, sizeof(buf));
	p = strstr(buf, "\"lock_wait_share\": ");
	ck_assert_msg(p && point_number(p + 19, 4), "%s", buf);

	status = wait_work(start_work(WORK_LOCALE_ARG, dir, "p.txt", NULL,
				      devnull, devnull));
	close(devnull);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x", status);
	snprintf(path, sizeof(path), "%s/p.txt", dir);
	slurp(path, buf, sizeof(buf));
	p = strstr(buf, "waiting on locks ");
	ck_assert_msg(p && point_number(p + 17, 3), "%s", buf);
	p = strstr(buf, "): locks ");
	ck_assert_msg(p && point_number(p + 9, 1), "%s", buf);
	/* The hot lock's row: its wait in ms, three decimals. */
	p = strstr(buf, "\n  1 mutex ");
	ck_assert_msg(p && strstr(p, ".") && !strstr(p, ","), "%s", buf);
	scratch_done(dir);
}
END_TEST

/* The number after " @name=" in @line, or -1. */
static long long stat_of(const char *line, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(line, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/*
 * TOFUTEX_RUN_STATS counts from the preload's own start (tofutex-run(1),
 * BUGS): what the constructor of a library loaded with the program does
 * before the preload's constructor has run (plugin_early.c: mutexes and
 * condition variables initialised, waits, contended locks, on the
 * preload's locks) is not in the report; what main does after it is.
 * The library's counts are main's alone, and so are futex(2)'s waits:
 * at least one for main's contention, fewer than one for each of the
 * constructor's. On the module the rest are the kernel's counts for the
 * process, which has used the module since the constructor: its
 * contentions are in them.
 */
START_TEST(test_report_stats_from_the_preloads_start)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	static char buf[8192];
	const struct early *e = tfx_early();
	long long waits, locks;
	int devnull, status;

	ck_assert_msg(!e->rounds, "the constructor locked without " EARLY_ENV);
	scratch(dir, sizeof(dir));
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ck_assert(devnull >= 0);
	setenv(EARLY_ENV, "1", 1);
	status = wait_work(start_work(WORK_EARLY_ARG, dir, NULL, "s.txt",
				      devnull, devnull));
	unsetenv(EARLY_ENV);
	close(devnull);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "work status %#x (6: the constructor did not lock as planned)",
		      status);
	snprintf(path, sizeof(path), "%s/s.txt", dir);
	slurp(path, buf, sizeof(buf));
	scratch_done(dir);
	ck_assert_msg(stat_of(buf, "mutex_inits") == 1 &&
		      stat_of(buf, "cond_inits") == 1 &&
		      stat_of(buf, "cond_waits") == 1,
		      "not main's alone (one each): %s", buf);
	waits = stat_of(buf, "futex_waits");
	locks = stat_of(buf, "lock");
	if (strstr(buf, " backend=futex ")) {
		ck_assert_msg(waits >= 1, "main's contention is not counted: %s",
			      buf);
		ck_assert_msg(waits < EARLY_ROUNDS,
			      "the constructor's %d contentions are counted: %s",
			      EARLY_ROUNDS, buf);
	} else {
		ck_assert_msg(strstr(buf, " backend=module ") &&
			      locks > EARLY_ROUNDS,
			      "not the process's kernel counts: %s", buf);
	}
}
END_TEST

static Suite *pthread_report_suite(void)
{
	Suite *s = suite_create("libtofutex-pthread report destinations");
	TCase *tc;

	tc = tcase_create("report");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_report_stderr_pipe_not_held_by_a_daemon);
	tcase_add_test(tc, test_report_daemon3_parent_writes_none);
	tcase_add_test(tc, test_report_stderr_file_keeps_one_descriptor);
	tcase_add_loop_test(tc, test_report_exit_with_cancellation_pending, 0, 2);
	tcase_add_test(tc, test_report_files_with_stdout_closed);
	tcase_add_test(tc, test_report_file_symlink_not_followed);
	tcase_add_test(tc, test_report_file_that_takes_nothing);
	tcase_add_test(tc, test_report_numbers_under_a_decimal_comma_locale);
	tcase_add_test(tc, test_report_stats_from_the_preloads_start);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], WORK_ARG, strlen(WORK_ARG)))
		return work_then(argv[1]);
	return run_suite(pthread_report_suite());
}
