// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, the first process of a PID namespace
 * (under tofutex-run). There the threads' IDs are 1, 2, ...: the values
 * glibc's own lock code writes into a lock word (1 and 2) are TIDs of the
 * program's threads, so a word that holds one must mean its thread. The
 * namespace's process 1 is made as a program that is not exec()ed makes
 * it: unshare(CLONE_NEWPID), then fork(). Each such process is a child
 * that exits 0 when its locks worked; one that hangs is killed.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "../common.h"

#define SKIP_STATUS 77

/* Exit status of a step that failed in process 1, one per step. */
enum { FAIL_PID = 10, FAIL_THREAD, FAIL_LOCK, FAIL_ASLEEP, FAIL_JOIN,
       FAIL_COUNT };

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held, locking;

/* The state of the main thread (process 1) as /proc/self/stat says. */
static char main_state(void)
{
	char buf[512], *p;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * Thread 2: holds the mutex (its word then says 2) until the main
 * thread, thread 1, sleeps in its lock, and releases it.
 */
static void *holder(void *arg)
{
	bool asleep;

	(void)arg;
	pthread_mutex_lock(&mutex);
	atomic_store(&held, 1);
	WAIT_UNTIL(asleep, atomic_load(&locking) && main_state() == 'S',
		   TEST_WAIT_NS);
	pthread_mutex_unlock(&mutex);
	return (void *)(intptr_t)asleep;
}

static unsigned long counter;

static void *counting(void *arg)
{
	unsigned long i;

	(void)arg;
	for (i = 0; i < 50000; i++) {
		pthread_mutex_lock(&mutex);
		counter++;
		pthread_mutex_unlock(&mutex);
	}
	return NULL;
}

/* Process 1 of the namespace: 0 when its locks worked. */
static int process_one(void)
{
	pthread_t t[3];
	void *asleep = NULL;
	int i;

	if (getpid() != 1 || syscall(SYS_gettid) != 1)
		return FAIL_PID;
	if (pthread_create(&t[0], NULL, holder, NULL))
		return FAIL_THREAD;
	while (!atomic_load(&held))
		sleep_ns(NSEC_PER_MSEC);
	/* Held by TID 2: a wait the holder's unlock must end. */
	atomic_store(&locking, 1);
	if (pthread_mutex_lock(&mutex))
		return FAIL_LOCK;
	pthread_mutex_unlock(&mutex);
	if (pthread_join(t[0], &asleep))
		return FAIL_JOIN;
	if (!asleep)
		return FAIL_ASLEEP;
	/* Thread 1 among them: its TID is one of glibc's values. */
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, counting, NULL))
			return FAIL_THREAD;
	counting(NULL);
	for (i = 0; i < 2; i++)
		if (pthread_join(t[i], NULL))
			return FAIL_JOIN;
	return counter == 3 * 50000 ? 0 : FAIL_COUNT;
}

/* The process that moves into a new PID namespace and forks process 1. */
static int namespace_parent(void)
{
	int status;
	pid_t pid;

	/* A group of its own, so that a hang is killed with process 1. */
	setpgid(0, 0);
	if (unshare(CLONE_NEWPID))
		return SKIP_STATUS;
	pid = fork();
	if (pid < 0)
		return FAIL_THREAD;
	if (!pid)
		_exit(process_one());
	if (waitpid(pid, &status, 0) != pid)
		return FAIL_JOIN;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Its status, or -1 if it did not end within TEST_WAIT_NS (then killed,
 * with its group: process 1 too).
 */
static int wait_within(pid_t pid)
{
	int status = 0;
	bool done;

	WAIT_UNTIL(done, waitpid(pid, &status, WNOHANG) == pid, TEST_WAIT_NS);
	if (!done) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * A mutex held by thread 2 and waited for by thread 1 of process 1, then
 * thread 1 and two more that count under it: as with glibc, never a
 * sleep on a free mutex.
 */
START_TEST(test_fork_child_as_process_one)
{
	pid_t pid;
	int code;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(namespace_parent());
	code = wait_within(pid);
	if (code == SKIP_STATUS) {
		printf("SKIPPED: test_fork_child_as_process_one: no new PID namespace here (unshare(CLONE_NEWPID): needs CAP_SYS_ADMIN)\n");
		return;
	}
	ck_assert_msg(code == 0,
		      "process 1 of a PID namespace: %s (step %d; 10 pid, 11 thread, 12 lock, 13 holder never saw the waiter asleep, 14 join, 15 count)",
		      code < 0 ? "hangs" : "failed", code);
}
END_TEST

static Suite *pthread_pidns_suite(void)
{
	Suite *s = suite_create("pthread_pidns under libtofutex-pthread");
	TCase *tc = tcase_create("pidns");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fork_child_as_process_one);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pthread_pidns_suite());
}
