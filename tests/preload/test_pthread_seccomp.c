// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, a process that confines itself (under
 * tofutex-run): after a seccomp filter that kills the process on
 * openat(), or on clock_gettime()'s system call, its contended mutexes,
 * condition variables and rwlocks work as glibc's do, which make neither
 * call. Three ways to get there: a program started under the preload
 * (this program again, --confined), the child of fork() (confined after
 * the fork, and on futex(2) before it too), and a process whose filter
 * kills clock_gettime()'s system call (where the
 * clock source lets libc's clock_gettime() do without it: a process of
 * a machine whose vDSO falls back to the system call could not read the
 * clock with glibc either). Each confined process is a child, so that
 * the filter ends with it; it exits 0 when everything worked.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "../common.h"
#include "../syscalls.h"

#define CONFINED_ARG "--confined"
#define NO_GETPID_ARG "--no-getpid"
#define SKIP_STATUS 77

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#endif

/* Exit status of a confined step that failed, one per step. */
enum { FAIL_FILTER = 10, FAIL_THREAD, FAIL_LOCK, FAIL_TIMEDLOCK,
       FAIL_COND, FAIL_RDLOCK, FAIL_JOIN, FAIL_NO_REASON };

/*
 * A filter that returns @action for the system calls @nrs (n of them)
 * and allows every other. Filters stack: the strictest action wins.
 */
static bool confine(const long *nrs, int n, unsigned int action)
{
	struct sock_filter f[16];
	struct sock_fprog prog;
	int i, k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		AUDIT_ARCH_HERE, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
		SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		offsetof(struct seccomp_data, nr));
	for (i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
			(unsigned int)nrs[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
		SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)k;
	prog.filter = f;
	return !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	       !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static bool confine_openat(void)
{
	static const long nrs[] = {
		SYS_openat,
#ifdef SYS_open
		SYS_open,
#endif
#ifdef SYS_openat2
		SYS_openat2,
#endif
	};

	return confine(nrs, sizeof(nrs) / sizeof(nrs[0]),
		       SECCOMP_RET_KILL_PROCESS);
}

/* The debug kernel is built without CONFIG_SECCOMP_FILTER. */
static bool have_filters(void)
{
	if (syscalls_can_trap())
		return true;
	printf("skipped: needs seccomp filters (CONFIG_SECCOMP_FILTER)\n");
	return false;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int held;

/* Holds the mutex, then the rwlock for writing, while main() waits. */
static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mutex);
	atomic_store(&held, 1);
	sleep_ns(30 * NSEC_PER_MSEC);
	pthread_mutex_unlock(&mutex);
	pthread_rwlock_wrlock(&rwlock);
	atomic_store(&held, 2);
	sleep_ns(30 * NSEC_PER_MSEC);
	pthread_rwlock_unlock(&rwlock);
	return NULL;
}

static void wait_held(int stage)
{
	while (atomic_load(&held) < stage)
		sleep_ns(NSEC_PER_MSEC);
}

/*
 * Contended paths that sleep: a lock behind a holder, a read lock behind
 * a writer, a timed condition wait that times out. Returns 0 or the step
 * that failed.
 */
static int contend(void)
{
	struct timespec ts;
	pthread_t t;

	atomic_store(&held, 0);
	if (pthread_create(&t, NULL, holder, NULL))
		return FAIL_THREAD;
	wait_held(1);
	if (pthread_mutex_lock(&mutex))
		return FAIL_LOCK;
	pthread_mutex_unlock(&mutex);
	wait_held(2);
	if (pthread_rwlock_rdlock(&rwlock))
		return FAIL_RDLOCK;
	pthread_rwlock_unlock(&rwlock);
	if (pthread_join(t, NULL))
		return FAIL_JOIN;
	pthread_mutex_lock(&mutex);
	ts = realtime_in(5 * NSEC_PER_MSEC);
	if (pthread_cond_timedwait(&cond, &mutex, &ts) != ETIMEDOUT)
		return FAIL_COND;
	pthread_mutex_unlock(&mutex);
	return 0;
}

/* A timed lock of a mutex main() holds: it times out. */
static void *timed_locker(void *arg)
{
	struct timespec ts = realtime_in(5 * NSEC_PER_MSEC);

	(void)arg;
	return (void *)(intptr_t)(pthread_mutex_timedlock(&mutex, &ts) ==
				  ETIMEDOUT ? 0 : FAIL_TIMEDLOCK);
}

static int contend_timed(void)
{
	void *ret;
	pthread_t t;
	int err = contend();

	if (err)
		return err;
	pthread_mutex_lock(&mutex);
	if (pthread_create(&t, NULL, timed_locker, NULL))
		return FAIL_THREAD;
	pthread_join(t, &ret);
	pthread_mutex_unlock(&mutex);
	return (int)(intptr_t)ret;
}

/* Wait for @pid; 0 when it exited 0, else what it did, in @what. */
static int child_status(pid_t pid, char *what, size_t len)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		snprintf(what, len, "killed by signal %d (%s)",
			 WTERMSIG(status), WTERMSIG(status) == SIGSYS ?
			 "SIGSYS: the filter saw a forbidden call" : "");
	else
		snprintf(what, len, "exit status %d", WEXITSTATUS(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(test_program_started_then_confined)
{
	char self[PATH_MAX], what[128];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t pid;

	if (!have_filters())
		return;
	ck_assert(n > 0);
	self[n] = '\0';
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl(self, self, CONFINED_ARG, (char *)NULL);
		_exit(127);
	}
	ck_assert_msg(child_status(pid, what, sizeof(what)) == 0,
		      "a program that forbids openat() after it started: %s",
		      what);
}
END_TEST

/* A filter that allows everything: a container's or a service's. */
static bool confine_nothing(void)
{
	return confine(NULL, 0, SECCOMP_RET_ALLOW);
}

/*
 * The same program with a report file asked for (TOFUTEX_RUN_STATS): its
 * exit, which would open the file, is as without it. _i 0: started
 * without a filter, it writes no report and says why; 1: started under a
 * filter already (which its own cannot be told from), it opened the file
 * at start and writes the report; 2: the same, to /dev/null, which it
 * does not keep: no report; 3: the same, in a directory that does not
 * exist: no report, and it says why (ENOENT).
 */
START_TEST(test_confined_with_a_report_file)
{
	char self[PATH_MAX], path[] = "/tmp/tfx-seccomp-XXXXXX", env[PATH_MAX + 32];
	char out[4096];
	char *argv[] = { self, CONFINED_ARG, NULL }, *envp[] = { env, NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct stat st;
	int fd, status;
	pid_t pid;

	if (!have_filters())
		return;
	ck_assert(n > 0);
	self[n] = '\0';
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* 2, 3: under a filter too, to a path that is not a regular file. */
	snprintf(env, sizeof(env), "TOFUTEX_RUN_STATS=%s",
		 _i == 2 ? "/dev/null" :
		 _i == 3 ? "/nonexistent-tfx-seccomp/stats" : path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (_i && !confine_nothing())
			_exit(FAIL_FILTER);
		status = run_capture(argv, envp, true, out, sizeof(out));
		fputs(out, stdout);
		if (_i == 3 && !strstr(out, "(ENOENT)"))
			_exit(FAIL_NO_REASON);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) :
		      128 + WTERMSIG(status));
	}
	status = child_status(pid, out, sizeof(out));
	ck_assert_int_eq(stat(path, &st), 0);
	unlink(path);
	ck_assert_msg(status == 0,
		      "a program that forbids openat(), with a report file%s: %s",
		      _i ? ", started under a filter" : "", out);
	if (_i == 1)
		ck_assert_msg(st.st_size > 0, "no report in the file");
	else
		ck_assert_msg(st.st_size == 0, "the report was written");
}
END_TEST

/* That program (no_getpid()), this one started again. */
START_TEST(test_getpid_forbidden)
{
	char self[PATH_MAX], out[1024];
	char *argv[] = { self, NO_GETPID_ARG, NULL };
	char *envp[] = { "TOFUTEX_RUN_STATS", "TOFUTEX_PROFILE", NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;

	if (!have_filters())
		return;
	ck_assert(n > 0);
	self[n] = '\0';
	status = run_capture(argv, envp, true, out, sizeof(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "a program that forbids getpid(), forks and exits: status %#x (%s)",
		      (unsigned int)status, out);
}
END_TEST

START_TEST(test_fork_child_confined)
{
	char what[128];
	pid_t pid;

	if (!have_filters())
		return;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(confine_openat() ? contend_timed() : FAIL_FILTER);
	ck_assert_msg(child_status(pid, what, sizeof(what)) == 0,
		      "a fork() child that forbids openat(): %s", what);
}
END_TEST

/*
 * The other order: a process that forbids openat() and then forks. The
 * child keeps its parent's backend and runs as under glibc.
 */
static int confined_then_fork(bool (*confined)(void))
{
	int status;
	pid_t pid;

	if (!confined())
		return FAIL_FILTER;
	pid = fork();
	if (pid < 0)
		return FAIL_THREAD;
	if (pid == 0)
		_exit(contend_timed());
	if (waitpid(pid, &status, 0) != pid)
		return FAIL_JOIN;
	return WIFEXITED(status) ? WEXITSTATUS(status) : FAIL_LOCK;
}

/*
 * A program that forbids getpid() (and asked for no report): its fork
 * children and its exit make no such call.
 */
static bool confine_getpid(void)
{
	static const long nrs[] = { SYS_getpid };

	return confine(nrs, 1, SECCOMP_RET_KILL_PROCESS);
}

static int no_getpid(void)
{
	return confined_then_fork(confine_getpid);
}

/*
 * On the module, the child's descriptor comes from the inherited one
 * (TOFUTEX_IOC_REOPEN), so the inherited filter never sees an openat(); on
 * futex(2) the child needs no descriptor at all. The grandchild's death by
 * a signal shows as FAIL_LOCK.
 */
START_TEST(test_confined_then_fork)
{
	char what[128];
	pid_t pid;

	if (!have_filters())
		return;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(confined_then_fork(confine_openat));
	ck_assert_msg(child_status(pid, what, sizeof(what)) == 0,
		      "a process that forbids openat(), then forks: its child %s",
		      what);
}
END_TEST

/*
 * First a filter that makes clock_gettime()'s system call fail: if libc's
 * clock_gettime() still reads the clock, the vDSO reads it without the
 * call here, and a filter that kills on the call is what a sandboxed
 * program may then install.
 */
static int clock_confined(void)
{
	static const long nrs[] = { SYS_clock_gettime };
	struct timespec ts;

	if (!confine(nrs, 1, SECCOMP_RET_ERRNO | EPERM))
		return FAIL_FILTER;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) ||
	    clock_gettime(CLOCK_REALTIME, &ts))
		return SKIP_STATUS;
	if (!confine(nrs, 1, SECCOMP_RET_KILL_PROCESS))
		return FAIL_FILTER;
	return contend_timed();
}

START_TEST(test_clock_syscall_forbidden)
{
	char what[128];
	pid_t pid;
	int st;

	if (!have_filters())
		return;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(clock_confined());
	st = child_status(pid, what, sizeof(what));
	if (st == SKIP_STATUS) {
		printf("test_clock_syscall_forbidden: libc reads the clock with the system call here (the clock source has no vDSO read): nothing to compare\n");
		return;
	}
	ck_assert_msg(st == 0,
		      "a process that kills clock_gettime()'s system call: %s",
		      what);
}
END_TEST

/*
 * tofutex-run(1), BUGS: a thread calls gettid() at its first lock (none
 * at the next ones), and so does the child of fork() at its first lock,
 * and on the module in its fork handler too, where glibc's read the
 * thread ID from memory. Counted on a new thread whose filter traps
 * gettid() alone (the answer, ENOSYS, is not used: only the count is).
 * Exit status: the counts, first lock + 4 * later locks + 16 * the fork
 * child's up to its first lock, or 255 when the filter could not be
 * installed.
 */
static void *gettid_counter(void *arg)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int first, later, child = 0, status;
	pid_t pid;

	(void)arg;
	if (!syscalls_trap_one(SYS_gettid))
		return (void *)(intptr_t)255;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	first = syscalls_seen;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	later = syscalls_seen - first;
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		_exit(syscalls_seen - first - later);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		child = WEXITSTATUS(status);
	return (void *)(intptr_t)(first + 4 * later + 16 * child);
}

static int gettid_counts(void)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, gettid_counter, NULL) ||
	    pthread_join(t, &ret))
		return 254;
	return (int)(intptr_t)ret;
}

START_TEST(test_gettid_at_first_lock_and_fork)
{
	char what[128];
	pid_t pid;
	int st;

	if (!syscalls_can_trap()) {
		printf("test_gettid_at_first_lock_and_fork: needs seccomp filters\n");
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(gettid_counts());
	st = child_status(pid, what, sizeof(what));
	ck_assert_msg(st == 1 + 16 * (tofutex_backend() ==
				      TOFUTEX_BACKEND_MODULE ? 2 : 1),
		      "gettid() calls: %d at the first lock, %d at the next, %d in the fork child (%s)",
		      st & 3, (st >> 2) & 3, st >> 4, what);
}
END_TEST

static Suite *pthread_seccomp_suite(void)
{
	Suite *s = suite_create("pthread_seccomp");
	TCase *tc = tcase_create("confined");

	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_program_started_then_confined);
	tcase_add_test(tc, test_gettid_at_first_lock_and_fork);
	tcase_add_loop_test(tc, test_confined_with_a_report_file, 0, 4);
	tcase_add_test(tc, test_getpid_forbidden);
	tcase_add_test(tc, test_fork_child_confined);
	tcase_add_test(tc, test_confined_then_fork);
	tcase_add_test(tc, test_clock_syscall_forbidden);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strcmp(argv[1], CONFINED_ARG))
		return confine_openat() ? contend_timed() : FAIL_FILTER;
	if (argc > 1 && !strcmp(argv[1], NO_GETPID_ARG))
		return no_getpid();
	sr = srunner_create(pthread_seccomp_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
