// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex's descriptor of the device where the program did something
 * to it: the child of fork() of a parent at its RLIMIT_NOFILE still gets
 * its own descriptor (the inherited one makes room); a number the program
 * closed behind the library (closefrom() in a daemon), or reused for a
 * file of its own, is dropped and the device opened again, and a reused
 * one is the program's in a fork child too (neither closed nor sent an
 * ioctl). On the module backend; elsewhere the library keeps no
 * descriptor and there is nothing to test.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "common.h"
#include "syscalls.h"

/* A wake of nobody: through the module's descriptor, on the module. */
static bool wake_works(void)
{
	static uint32_t word;
	unsigned int woken = 1;

	return !tofutex_wake(&word, 1, &woken) && !woken;
}

/* The library's descriptor, or -1 (a skip said) off the module. */
static int lib_fd(void)
{
	ck_assert(wake_works());
	if (tofutex_backend() != TOFUTEX_BACKEND_MODULE) {
		printf("skipped: not on the module: no descriptor to test\n");
		return -1;
	}
	return tofutex_fd();
}

static int child_status(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Every descriptor number below the limit in use: the child's own
 * descriptor cannot be made beside the inherited one. The child has it
 * when fork() returns all the same, before it forbids openat() (as a
 * child that confines itself does: here a filter that traps it).
 */
START_TEST(test_fork_at_the_descriptor_limit)
{
	struct rlimit old, lim;
	int lowest, code;
	pid_t pid;

	if (lib_fd() < 0)
		return;
	if (!syscalls_can_trap()) {
		printf("skipped: needs seccomp filters (CONFIG_SECCOMP_FILTER)\n");
		return;
	}
	lowest = dup(0);
	ck_assert_int_ge(lowest, 0);
	close(lowest);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)lowest;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	pid = fork();
	if (pid == 0)
		_exit(!syscalls_trap_one(SYS_openat) ? 1 :
		      !wake_works() || syscalls_seen ? 2 : 0);
	setrlimit(RLIMIT_NOFILE, &old);
	ck_assert_int_ge(pid, 0);
	code = child_status(pid);
	ck_assert_msg(code == 0,
		      "the child of a parent at RLIMIT_NOFILE (%d): %s (%d)",
		      lowest, code == 1 ? "no filter" :
		      code == 2 ? "no descriptor of its own" : "died", code);
}
END_TEST

/* Is @fd open and /dev/null (character device 1:3)? */
static bool is_dev_null(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

/* The library's number closed by the program and reused for /dev/null. */
START_TEST(test_fork_keeps_a_reused_number)
{
	int fd = lib_fd(), null, code;
	pid_t pid;

	if (fd < 0)
		return;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(null, 0);
	ck_assert_int_eq(dup2(null, fd), fd);
	close(null);
	pid = fork();
	if (pid == 0)
		_exit(!is_dev_null(fd) ? 1 : !wake_works() ? 2 : 0);
	ck_assert_int_ge(pid, 0);
	code = child_status(pid);
	ck_assert_msg(code == 0,
		      "the child of a program that reused the library's descriptor number: %s (%d)",
		      code == 1 ? "its file is gone" :
		      code == 2 ? "no working descriptor" : "died", code);
}
END_TEST

/*
 * The library's number closed behind it (_i 0), or reused for /dev/null
 * (_i 1): the next operation opens the device again and works.
 */
START_TEST(test_descriptor_closed_behind_the_library)
{
	int fd = lib_fd(), null;

	if (fd < 0)
		return;
	if (_i == 0) {
		close(fd);
	} else {
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(null, 0);
		ck_assert_int_eq(dup2(null, fd), fd);
		close(null);
	}
	ck_assert_msg(wake_works(), "%s: the library's operations fail",
		      _i ? "its number reused" : "its descriptor closed");
	ck_assert_int_ge(tofutex_fd(), 0);
	if (_i)
		ck_assert(is_dev_null(fd));
}
END_TEST

static Suite *lib_descriptor_suite(void)
{
	Suite *s = suite_create("libtofutex descriptor");
	TCase *tc = tcase_create("descriptor");

	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_fork_at_the_descriptor_limit);
	tcase_add_test(tc, test_fork_keeps_a_reused_number);
	tcase_add_loop_test(tc, test_descriptor_closed_behind_the_library, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lib_descriptor_suite());
}
