// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex's environment (lib/env.c): a TOFUTEX_* value that is not
 * valid is reported in one line on stderr naming the variable and what is
 * used instead, once; in a set-user-ID program (secure execution) the
 * variables are not read at all. Each case runs this program again as a
 * child (--env-child) that makes the library read both variables, and
 * looks at what it printed.
 */
#include <libgen.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"

#define CHILD_ARG "--env-child"

/* The child: read TOFUTEX_BACKEND (twice) and TOFUTEX_SPIN_NS. */
static void *timedlock_main(void *m)
{
	struct timespec ts = ts_in(NSEC_PER_MSEC);

	/* Held by the main thread: spins (reading the budget), times out. */
	return (void *)(intptr_t)tofutex_mutex_clocklock(m, CLOCK_MONOTONIC,
							 &ts);
}

static int env_child(void)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	pthread_t t;

	tofutex_backend();
	tofutex_backend();
	if (tofutex_mutex_lock(&m) || pthread_create(&t, NULL, timedlock_main, &m))
		return 2;
	pthread_join(t, NULL);
	tofutex_mutex_unlock(&m);
	printf("secure=%lu backend=%d\n", getauxval(AT_SECURE),
	       tofutex_backend());
	return 0;
}

/* Read all of @fd into @buf, a string. */
static void read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 1 &&
	       ((n = read(fd, buf + got, len - 1 - got)) > 0 ||
		(n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	buf[got] = '\0';
	close(fd);
}

/*
 * Run @exe as the child with TOFUTEX_BACKEND=@backend (NULL: unset) and
 * TOFUTEX_SPIN_NS not valid; its stdout and stderr into @out and @err.
 */
static void run_child(const char *exe, const char *backend, char *out,
		      size_t outlen, char *err, size_t errlen)
{
	int po[2], pe[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(po), 0);
	ck_assert_int_eq(pipe(pe), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		if (backend)
			setenv("TOFUTEX_BACKEND", backend, 1);
		else
			unsetenv("TOFUTEX_BACKEND");
		setenv("TOFUTEX_SPIN_NS", "12abc", 1);
		execl(exe, exe, CHILD_ARG, (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	read_all(po[0], out, outlen);
	read_all(pe[0], err, errlen);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x, stderr: %s", status, err);
}

static unsigned int count_lines(const char *s)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

START_TEST(test_env_not_valid_reported_once)
{
	char out[256], err[1024];

	run_child("/proc/self/exe", "bogus", out, sizeof(out), err,
		  sizeof(err));
	ck_assert(!strncmp(out, "secure=0 ", 9));
	ck_assert_msg(count_lines(err) == 2, "stderr: %s", err);
	ck_assert_msg(strstr(err, "libtofutex: TOFUTEX_BACKEND=bogus is not valid; using auto"),
		      "stderr: %s", err);
	ck_assert_msg(strstr(err, "libtofutex: TOFUTEX_SPIN_NS=12abc is not valid; using the default"),
		      "stderr: %s", err);
}
END_TEST

/*
 * A set-user-ID copy of this program, to user nobody, run by root: the
 * kernel marks it secure (AT_SECURE), and the library ignores TOFUTEX_*:
 * no report, and TOFUTEX_BACKEND=module does not force the module (the
 * backend is the one chosen without the variable). Needs root to give the
 * copy away; the guests run the tests as root.
 */
START_TEST(test_env_ignored_in_secure_execution)
{
	char self[PATH_MAX], copy[PATH_MAX + 32], out[256], err[1024];
	char buf[65536], expect[256];
	ssize_t n, len;
	int in, fd;

	if (geteuid() != 0) {
		fprintf(stderr, "skipped: needs root to make a set-user-ID copy\n");
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	snprintf(copy, sizeof(copy), "%s/.tfx-secure-XXXXXX", dirname(self));
	fd = mkstemp(copy);
	ck_assert_msg(fd >= 0, "mkstemp %s: %s", copy, strerror(errno));
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert(in >= 0);
	while ((len = read(in, buf, sizeof(buf))) > 0)
		ck_assert(write(fd, buf, (size_t)len) == len);
	close(in);
	ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
	ck_assert_int_eq(fchmod(fd, 04755), 0);
	close(fd);
	run_child("/proc/self/exe", NULL, expect, sizeof(expect), err,
		  sizeof(err));
	ck_assert(!strncmp(expect, "secure=0 ", 9));
	expect[7] = '1';
	run_child(copy, "module", out, sizeof(out), err, sizeof(err));
	unlink(copy);
	ck_assert_msg(!strncmp(out, "secure=1 ", 9),
		      "the set-user-ID copy did not run securely (nosuid?): %s", out);
	ck_assert_msg(!err[0], "TOFUTEX_* read in secure execution: %s", err);
	ck_assert_str_eq(out, expect);
}
END_TEST

/*
 * The child of fork() keeps its parent's backend: TOFUTEX_BACKEND changed
 * in the parent after it chose (for the programs it will run) is not read
 * again there, and the child's contended locks work on the parent's
 * backend (with "module" on a machine without it, a child that chose
 * again would get ENOENT from its locks). _i: the variable set to the
 * other backend's name, or to "module".
 */
struct fork_lock {
	tofutex_mutex_t m;
	int err;
};

static void *fork_locker(void *arg)
{
	struct fork_lock *f = arg;
	int i, err;

	for (i = 0; i < 2000; i++) {
		err = tofutex_mutex_lock(&f->m);
		if (err) {
			f->err = err;
			break;
		}
		tofutex_mutex_unlock(&f->m);
	}
	return NULL;
}

static int fork_child_backend(int parent)
{
	struct fork_lock f = { .m = TOFUTEX_MUTEX_INITIALIZER };
	pthread_t t[2];
	int i;

	if (tofutex_backend() != parent)
		return 2;
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fork_locker, &f))
			return 3;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return f.err ? 4 : 0;
}

START_TEST(test_env_fork_child_keeps_backend)
{
	int parent = tofutex_backend(), status;
	const char *other = _i ? "module" :
		parent == TOFUTEX_BACKEND_MODULE ? "futex" : "module";
	char *saved = getenv("TOFUTEX_BACKEND");
	pid_t pid;

	saved = saved ? strdup(saved) : NULL;
	ck_assert_int_eq(setenv("TOFUTEX_BACKEND", other, 1), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fork_child_backend(parent));
	if (saved)
		setenv("TOFUTEX_BACKEND", saved, 1);
	else
		unsetenv("TOFUTEX_BACKEND");
	free(saved);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 2,
		      "the child's backend is not its parent's (TOFUTEX_BACKEND=%s set after the choice)",
		      other);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child's contended locks failed (status %#x)", status);
}
END_TEST

static Suite *lib_env_suite(void)
{
	Suite *s = suite_create("lib_env");
	TCase *tc;

	tc = tcase_create("env");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_env_not_valid_reported_once);
	tcase_add_test(tc, test_env_ignored_in_secure_execution);
	tcase_add_loop_test(tc, test_env_fork_child_keeps_backend, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], CHILD_ARG))
		return env_child();
	return run_suite(lib_env_suite());
}
