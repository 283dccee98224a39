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
/* Process @pid of the namespace: 0 when its locks worked. */
static int process_n(pid_t pid)
{
	pthread_t t[3];
	void *asleep = NULL;
	int i;

	if (getpid() != pid || syscall(SYS_gettid) != pid)
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

/*
 * A process after the namespace's first two (process 3), whose TIDs are
 * not glibc's values: glibc's wait on a process-shared condition variable
 * relocks our mutex with its own code (it writes 2) while another thread
 * holds it, and that thread's unlock must wake it.
 */
static pthread_cond_t pshared_cond;

static void *relock_holder(void *arg)
{
	const struct timespec *deadline = arg;
	struct timespec now;
	bool in_relock;

	while (!atomic_load(&locking))
		sleep_ns(NSEC_PER_MSEC);
	pthread_mutex_lock(&mutex);
	/* Past the wait's deadline, asleep again: in glibc's relock. */
	WAIT_UNTIL(in_relock, (clock_gettime(CLOCK_REALTIME, &now),
			       ts_ns(&now) > ts_ns(deadline)) &&
			      main_state() == 'S', TEST_WAIT_NS);
	pthread_mutex_unlock(&mutex);
	return (void *)(intptr_t)in_relock;
}

static int process_three(void)
{
	pthread_condattr_t ca;
	struct timespec deadline;
	pthread_t t;
	int err;

	if (getpid() != 3)
		return FAIL_PID;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_cond_init(&pshared_cond, &ca);
	deadline = realtime_in(50 * NSEC_PER_MSEC);
	if (pthread_create(&t, NULL, relock_holder, &deadline))
		return FAIL_THREAD;
	pthread_mutex_lock(&mutex);
	atomic_store(&locking, 1);
	err = pthread_cond_timedwait(&pshared_cond, &mutex, &deadline);
	pthread_mutex_unlock(&mutex);
	if (err != ETIMEDOUT)
		return FAIL_LOCK;
	/* Never seen in the relock: glibc's relock did not contend. */
	return pthread_join(t, NULL) ? FAIL_JOIN : 0;
}

/*
 * Process 3, whose next thread is given TID 2 (ns_last_pid, as
 * checkpoint/restore tools give threads their TIDs back): that thread's
 * word says 2, and is no glibc code's.
 */
static int process_three_with_thread_two(void)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);

	if (getpid() != 3)
		return FAIL_PID;
	if (fd < 0 || write(fd, "1", 1) != 1)
		return SKIP_STATUS;
	close(fd);
	return process_n(3);
}

/* The child @pid's exit status, 128 + its signal, or FAIL_JOIN. */
static int reap(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return FAIL_JOIN;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Process 1 of the namespace, which makes processes 2 and 3. */
static int process_one_of_three(int (*three)(void))
{
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(0);
	if (reap(pid))
		return FAIL_THREAD;
	pid = fork();
	if (pid == 0)
		_exit(three());
	return reap(pid);
}

/*
 * A raw clone() into a new namespace (no fork handlers run): thread 2
 * holds the mutex while thread 3 waits for it. Only the new threads lock:
 * the clone's first thread has its parent's TID in the library's cache,
 * as in any process made without the handlers.
 */
static void *locker(void *arg)
{
	(void)arg;
	atomic_store(&locking, 1);
	pthread_mutex_lock(&mutex);
	pthread_mutex_unlock(&mutex);
	return NULL;
}

static void *holder_of_two(void *arg)
{
	pthread_t t;
	bool asleep;

	(void)arg;
	pthread_mutex_lock(&mutex);
	if (pthread_create(&t, NULL, locker, NULL)) {
		pthread_mutex_unlock(&mutex);
		return NULL;
	}
	/* The locker's state is not in /proc here: give it its time. */
	WAIT_UNTIL(asleep, atomic_load(&locking), TEST_WAIT_NS);
	sleep_ns(20 * NSEC_PER_MSEC);
	pthread_mutex_unlock(&mutex);
	pthread_join(t, NULL);
	return (void *)(intptr_t)asleep;
}

static int cloned_one(void *arg)
{
	pthread_t t;
	void *ok = NULL;

	(void)arg;
	if (getpid() != 1)
		return FAIL_PID;
	if (pthread_create(&t, NULL, holder_of_two, NULL))
		return FAIL_THREAD;
	if (pthread_join(t, &ok))
		return FAIL_JOIN;
	return ok ? 0 : FAIL_LOCK;
}

/*
 * The forking thread's TID in the parent (3, in a namespace of its own)
 * is a thread's of the child (in another new namespace, whose TIDs start
 * at 1): that thread's RECURSIVE mutex is not the forking thread's, which
 * waits for it.
 */
static pthread_mutex_t rmutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static atomic_int inside;

static void *idle(void *arg)
{
	return arg;
}

static void *recursive_holder(void *arg)
{
	bool asleep;

	pthread_mutex_lock(&rmutex);
	atomic_store(&inside, 1);
	atomic_store(&held, 1);
	WAIT_UNTIL(asleep, atomic_load(&locking) && main_state() == 'S',
		   TEST_WAIT_NS);
	atomic_store(&inside, 0);
	pthread_mutex_unlock(&rmutex);
	return asleep ? arg : NULL;
}

static int child_of_three(void)
{
	pthread_t t;
	void *asleep;
	int err;

	if (getpid() != 1)
		return FAIL_PID;
	if (pthread_create(&t, NULL, idle, NULL) || pthread_join(t, NULL) ||
	    pthread_create(&t, NULL, recursive_holder, &inside))
		return FAIL_THREAD;
	while (!atomic_load(&held))
		sleep_ns(NSEC_PER_MSEC);
	atomic_store(&locking, 1);
	err = pthread_mutex_lock(&rmutex);
	if (err || atomic_load(&inside))
		return FAIL_LOCK;
	pthread_mutex_unlock(&rmutex);
	if (pthread_join(t, &asleep))
		return FAIL_JOIN;
	return asleep ? 0 : FAIL_ASLEEP;
}

/* Process 3 of the first namespace: TID 3 used, then a new namespace. */
static int three_then_new(void)
{
	pid_t pid;

	while (getpid() < 3) {
		pid = fork();
		if (pid < 0)
			return FAIL_THREAD;
		if (pid)
			return reap(pid);
	}
	if (getpid() != 3)
		return FAIL_PID;
	pthread_mutex_lock(&rmutex);
	pthread_mutex_unlock(&rmutex);
	if (unshare(CLONE_NEWPID))
		return FAIL_THREAD;
	pid = fork();
	if (pid == 0)
		_exit(child_of_three());
	return reap(pid);
}

enum how { HOW_FORK, HOW_THIRD, HOW_CLONE, HOW_FORK_TID, HOW_SET_TID };

/* The process that moves into a new PID namespace and makes process 1. */
static int namespace_parent(enum how how)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	pid_t pid;

	/* A group of its own, so that a hang is killed with process 1. */
	setpgid(0, 0);
	if (how == HOW_CLONE) {
		pid = clone(cloned_one, stack + sizeof(stack),
			    CLONE_NEWPID | SIGCHLD, NULL);
		if (pid < 0)
			return errno == EPERM ? SKIP_STATUS : FAIL_THREAD;
	} else {
		if (unshare(CLONE_NEWPID))
			return SKIP_STATUS;
		pid = fork();
		if (pid < 0)
			return FAIL_THREAD;
		if (!pid)
			_exit(how == HOW_FORK ? process_n(1) :
			      how == HOW_THIRD ?
					process_one_of_three(process_three) :
			      how == HOW_SET_TID ?
					process_one_of_three(
						process_three_with_thread_two) :
			      three_then_new());
	}
	return reap(pid);
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
 * _i 0: a mutex held by thread 2 and waited for by thread 1 of process 1
 * (a fork() child), then thread 1 and two more that count under it; 1:
 * process 3, where glibc's relock in a process-shared condition wait
 * contends with thread 2... of a process whose TIDs are not glibc's
 * values; 2: process 1 made by a raw clone(), threads 2 and 3; 3: a fork
 * child whose thread 3 has the TID its forking thread had in the parent
 * (three_then_new()); 4: process 3 with a thread given TID 2. As with
 * glibc, never a sleep on a free mutex, nor another thread's mutex taken
 * as one's own.
 */
START_TEST(test_process_of_a_new_namespace)
{
	static const char *const what[] = {
		"process 1 (fork)", "process 3", "process 1 (clone)",
		"a fork child whose thread has the parent's TID, process 1",
		"process 3 with a thread 2 (ns_last_pid)",
	};
	pid_t pid;
	int code;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(namespace_parent((enum how)_i));
	code = wait_within(pid);
	if (code == SKIP_STATUS) {
		printf("SKIPPED: test_process_of_a_new_namespace: no new PID namespace here (needs CAP_SYS_ADMIN)\n");
		return;
	}
	ck_assert_msg(code == 0,
		      "%s of a PID namespace: %s (step %d; 10 pid, 11 thread, 12 lock, 13 holder never saw the waiter asleep, 14 join, 15 count)",
		      what[_i], code < 0 ? "hangs" : "failed", code);
}
END_TEST

static Suite *pthread_pidns_suite(void)
{
	Suite *s = suite_create("pthread_pidns under libtofutex-pthread");
	TCase *tc = tcase_create("pidns");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_process_of_a_new_namespace, 0, 5);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pthread_pidns_suite());
}
