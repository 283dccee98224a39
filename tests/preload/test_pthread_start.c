// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, start-up (under tofutex-run): a backend
 * forced with TOFUTEX_BACKEND=module that cannot be had stops the program
 * before it runs, with one line that says why, both under tofutex-run and
 * with LD_PRELOAD alone (never a pthread function failing with an error
 * glibc's cannot return); where the module is there, the program runs. A
 * TOFUTEX_* value that is not valid is reported once, by the program
 * (not again by tofutex-run), which then runs. A program started with
 * descriptor 0 closed finds it closed, in its fork child too, whatever
 * the library opened (the module's descriptor). Each case starts this
 * program again as a child (--ran: print "ran" and exit; --fds: check
 * descriptor 0; --no-device: check that no descriptor is the device). With
 * TOFUTEX_BACKEND=futex the device is never opened.
 */
#include <libgen.h>
#include <sys/wait.h>

#include "../common.h"

#define RAN_ARG "--ran"
#define FDS_ARG "--fds"
#define NO_DEVICE_ARG "--no-device"

/* The preload library (from LD_PRELOAD) and tofutex-run next to it. */
static void preload_paths(char *lib, size_t liblen, char *run, size_t runlen)
{
	const char *env = getenv("LD_PRELOAD");
	char dir[PATH_MAX];
	size_t n;

	ck_assert_msg(env && *env, "run under tofutex-run");
	n = strcspn(env, ": ");
	ck_assert(n < liblen && n < sizeof(dir));
	memcpy(lib, env, n);
	lib[n] = '\0';
	memcpy(dir, lib, n + 1);
	snprintf(run, runlen, "%s/../bin/tofutex-run", dirname(dir));
	ck_assert_msg(access(run, X_OK) == 0, "no %s", run);
}

struct result {
	int status;
	char out[256], err[2048];
};

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
 * Run this program (--ran) with @var=@value, under tofutex-run (@run) or
 * with LD_PRELOAD=@lib alone (@run NULL).
 */
static void run_self(const char *run, const char *lib, const char *var,
		     const char *value, struct result *r)
{
	char self[PATH_MAX];
	int po[2], pe[2];
	ssize_t n;
	pid_t pid;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	ck_assert_int_eq(pipe(po), 0);
	ck_assert_int_eq(pipe(pe), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		unsetenv("TOFUTEX_BACKEND");
		setenv(var, value, 1);
		if (run) {
			unsetenv("LD_PRELOAD");
			execl(run, run, self, RAN_ARG, (char *)NULL);
		} else {
			setenv("LD_PRELOAD", lib, 1);
			execl(self, self, RAN_ARG, (char *)NULL);
		}
		_exit(126);
	}
	close(po[1]);
	close(pe[1]);
	read_all(po[0], r->out, sizeof(r->out));
	read_all(pe[0], r->err, sizeof(r->err));
	ck_assert_int_eq(waitpid(pid, &r->status, 0), pid);
}

static unsigned int count_lines(const char *s)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static bool module_usable(void)
{
	int fd = open("/dev/" TOFUTEX_DEVICE_NAME, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* _i: 0 under tofutex-run, 1 with LD_PRELOAD alone. */
START_TEST(test_forced_backend_missing_stops_program)
{
	char lib[PATH_MAX], run[PATH_MAX + 32];
	struct result r;

	preload_paths(lib, sizeof(lib), run, sizeof(run));
	run_self(_i ? NULL : run, lib, "TOFUTEX_BACKEND", "module", &r);
	if (module_usable()) {
		ck_assert_msg(WIFEXITED(r.status) && !WEXITSTATUS(r.status),
			      "status %#x: %s", r.status, r.err);
		ck_assert_str_eq(r.out, "ran\n");
		return;
	}
	ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127,
		      "status %#x, stdout %s", r.status, r.out);
	ck_assert_msg(!r.out[0], "the program ran: %s", r.out);
	ck_assert_msg(count_lines(r.err) == 1 &&
		      strstr(r.err, "TOFUTEX_BACKEND=module") &&
		      strstr(r.err, "/dev/" TOFUTEX_DEVICE_NAME),
		      "stderr: %s", r.err);
}
END_TEST

/* _i: 0 under tofutex-run, 1 with LD_PRELOAD alone. */
START_TEST(test_not_valid_reported_once_program_runs)
{
	char lib[PATH_MAX], run[PATH_MAX + 32];
	struct result r;

	preload_paths(lib, sizeof(lib), run, sizeof(run));
	run_self(_i ? NULL : run, lib, "TOFUTEX_SPIN_NS", "fast", &r);
	ck_assert_msg(WIFEXITED(r.status) && !WEXITSTATUS(r.status),
		      "status %#x: %s", r.status, r.err);
	ck_assert_str_eq(r.out, "ran\n");
	ck_assert_msg(count_lines(r.err) == 1 &&
		      strstr(r.err, "TOFUTEX_SPIN_NS=fast is not valid; using the default"),
		      "stderr: %s", r.err);
}
END_TEST

/* A holder of @arg for a while: the caller's lock of it waits. */
static void *fds_holder(void *arg)
{
	pthread_mutex_t *m = arg;

	pthread_mutex_lock(m);
	usleep(20000);
	pthread_mutex_unlock(m);
	return NULL;
}

/*
 * Contended locks, then @check() (0 when it holds) here and in a fork
 * child that locks too. 0, or the step that failed: 2 @check after the
 * locks, 3 no thread, 4 @check in the child, 5 the child's end.
 */
static int contend_then_check(bool (*check)(void))
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int status;
	pthread_t t;
	pid_t pid;

	if (pthread_create(&t, NULL, fds_holder, &m))
		return 3;
	usleep(5000);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	if (!check())
		return 2;
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		_exit(check() ? 0 : 4);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 5;
	return WEXITSTATUS(status);
}

/* Descriptor 0 is closed. */
static bool fd0_closed(void)
{
	return fcntl(0, F_GETFD) == -1;
}

/* No descriptor of this process is the device. */
static bool no_device(void)
{
	char path[64], target[PATH_MAX];
	int fd;
	ssize_t n;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, "/dev/" TOFUTEX_DEVICE_NAME))
			return false;
	}
	return true;
}

/*
 * --fds: descriptor 0, closed at start, stays closed through contended
 * locks and in a fork child, and is the number the first open() gets (6
 * if not); --no-device: no descriptor is ever the device.
 */
static int fds_check(void)
{
	int err = fd0_closed() ? contend_then_check(fd0_closed) : 2;

	return err ? err : open("/dev/null", O_RDONLY) == 0 ? 0 : 6;
}

static int no_device_check(void)
{
	return no_device() ? contend_then_check(no_device) : 2;
}

/*
 * Run this program with @arg under tofutex-run (@run) or with
 * LD_PRELOAD=@lib alone (@run NULL), TOFUTEX_BACKEND=@backend (NULL:
 * unset), descriptor 0 closed if @close0; its wait status.
 */
static int run_self_check(const char *run, const char *lib, const char *arg,
			  const char *backend, bool close0)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t pid;

	ck_assert(n > 0);
	self[n] = '\0';
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		if (close0)
			close(0);
		if (backend)
			setenv("TOFUTEX_BACKEND", backend, 1);
		else
			unsetenv("TOFUTEX_BACKEND");
		if (run) {
			unsetenv("LD_PRELOAD");
			execl(run, run, self, arg, (char *)NULL);
		} else {
			setenv("LD_PRELOAD", lib, 1);
			execl(self, self, arg, (char *)NULL);
		}
		_exit(126);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * A program started with descriptor 0 closed, on the backend a process
 * chooses (the module where it is loaded, whose descriptor the library
 * opens at start and makes again in a fork child): 0 stays closed, as
 * under glibc. _i: 0 under tofutex-run, 1 with LD_PRELOAD alone.
 */
START_TEST(test_closed_standard_descriptor_stays_closed)
{
	char lib[PATH_MAX], run[PATH_MAX + 32];
	int status;

	preload_paths(lib, sizeof(lib), run, sizeof(run));
	status = run_self_check(_i ? NULL : run, lib, FDS_ARG, NULL, true);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "status %#x (step %d: descriptor 0 was taken%s)", status,
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		      module_usable() ? ", the module is loaded" : "");
}
END_TEST

/*
 * TOFUTEX_BACKEND=futex: the process never opens the device, not at start,
 * not at a contended lock, not in a fork child (where the module is
 * loaded; elsewhere there is none to open).
 */
START_TEST(test_futex_backend_opens_no_device)
{
	char lib[PATH_MAX], run[PATH_MAX + 32];
	int status;

	preload_paths(lib, sizeof(lib), run, sizeof(run));
	status = run_self_check(run, lib, NO_DEVICE_ARG, "futex", false);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "status %#x (2: the device open after locks, 4: in the fork child)",
		      status);
}
END_TEST

static Suite *pthread_start_suite(void)
{
	Suite *s = suite_create("libtofutex-pthread start-up");
	TCase *tc;

	tc = tcase_create("start");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_forced_backend_missing_stops_program, 0, 2);
	tcase_add_loop_test(tc, test_not_valid_reported_once_program_runs, 0, 2);
	tcase_add_loop_test(tc, test_closed_standard_descriptor_stays_closed, 0, 2);
	tcase_add_test(tc, test_futex_backend_opens_no_device);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strcmp(argv[1], FDS_ARG))
		return fds_check();
	if (argc > 1 && !strcmp(argv[1], NO_DEVICE_ARG))
		return no_device_check();
	if (argc > 1 && !strcmp(argv[1], RAN_ARG)) {
		printf("ran\n");
		return 0;
	}
	sr = srunner_create(pthread_start_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
