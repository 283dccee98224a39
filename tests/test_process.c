// SPDX-License-Identifier: GPL-2.0
/*
 * What "the process" is for tofutex, and what a process may see.
 *
 * A process is one thread group in one address space (tofutex(4)):
 * - clone_vm_*: a clone(CLONE_VM) child that is not a thread (as vfork()
 *   and posix_spawn() helpers make), also one in a new PID namespace,
 *   shares the address space but not the thread group: the parent's
 *   descriptor fails with EBADFD in it, and a descriptor it opens itself
 *   works;
 * - clone_vm_owner: a lock such a child holds, in memory it shares with
 *   its parent, is not a dead owner's: the parent's LOCK fails with EPERM
 *   and leaves the word alone.
 * - stats_global_*: the global statistics show every process's activity,
 *   so only CAP_SYS_ADMIN reads them; any process reads its own.
 *
 * The clone(CLONE_VM) children run on a stack of their own and report
 * through memory they share with the parent, not through errno (which is
 * the parent's thread's, shared too).
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "common.h"

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME
#define CHILD_STACK	(256 * 1024)

/* The account the unprivileged child runs as (nobody). */
#define NOBODY		65534

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

/* TOFUTEX_IOC_VERSION: 0 or the errno value. */
static int raw_version(int fd)
{
	struct tofutex_version v;

	memset(&v, 0, sizeof(v));
	return ioctl(fd, TOFUTEX_IOC_VERSION, &v) ? errno : 0;
}

/* ---- clone(CLONE_VM) children that are not threads ---- */

struct vm_child {
	int parent_fd;
	atomic_int parent_fd_result;	/* -1 until set */
	atomic_int own_fd_result;
	uint32_t *word;			/* lock to hold, or NULL */
	atomic_uint tid;
	atomic_bool release;
};

static int vm_child_main(void *arg)
{
	struct vm_child *c = arg;
	uint32_t tid = (uint32_t)syscall(SYS_gettid), zero = 0;
	int fd;

	atomic_store(&c->parent_fd_result, raw_version(c->parent_fd));
	fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	atomic_store(&c->own_fd_result, fd < 0 ? errno : raw_version(fd));
	if (fd >= 0)
		close(fd);
	if (c->word) {
		if (!__atomic_compare_exchange_n(c->word, &zero, tid, false,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			return 2;
		atomic_store(&c->tid, tid);
		while (!atomic_load(&c->release))
			sleep_ns(NSEC_PER_MSEC);
	}
	return 0;
}

static pid_t vm_child_start(struct vm_child *c, int flags, void **stack)
{
	pid_t pid;

	*stack = malloc(CHILD_STACK);
	ck_assert(*stack != NULL);
	atomic_store(&c->parent_fd_result, -1);
	atomic_store(&c->own_fd_result, -1);
	pid = clone(vm_child_main, (char *)*stack + CHILD_STACK,
		    flags | SIGCHLD, c);
	ck_assert_msg(pid > 0, "clone(%#x): %s", flags, strerror(errno));
	return pid;
}

static void vm_child_reap(pid_t pid, void *stack)
{
	int status = 0;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "clone child status %#x", status);
	free(stack);
}

static const struct {
	int flags;
	const char *what;
} vm_children[] = {
	{ CLONE_VM,			"clone(CLONE_VM)" },
	{ CLONE_VM | CLONE_VFORK,	"clone(CLONE_VM | CLONE_VFORK)" },
	{ CLONE_VM | CLONE_NEWPID,	"clone(CLONE_VM | CLONE_NEWPID)" },
};

START_TEST(test_clone_vm_descriptor)
{
	struct vm_child c;
	int fd = dev_open();
	void *stack;
	pid_t pid;
	int r;

	/*
	 * A kernel built without PID namespaces (the tinyconfig-based debug
	 * kernel) has no /proc/self/ns/pid and refuses CLONE_NEWPID.
	 */
	if ((vm_children[_i].flags & CLONE_NEWPID) &&
	    access("/proc/self/ns/pid", F_OK) != 0) {
		printf("%s: no PID namespaces in this kernel, not tried\n",
		       vm_children[_i].what);
		close(fd);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.parent_fd = fd;
	pid = vm_child_start(&c, vm_children[_i].flags, &stack);
	vm_child_reap(pid, stack);
	r = atomic_load(&c.parent_fd_result);
	ck_assert_msg(r == EBADFD,
		      "%s child, parent's descriptor: %d (%s), want EBADFD",
		      vm_children[_i].what, r, strerror(r));
	r = atomic_load(&c.own_fd_result);
	ck_assert_msg(r == 0, "%s child, its own descriptor: %d (%s)",
		      vm_children[_i].what, r, strerror(r));
	ck_assert_int_eq(raw_version(fd), 0);
	close(fd);
}
END_TEST

START_TEST(test_clone_vm_owner)
{
	uint32_t word = 0, held;
	struct tofutex_lock a;
	struct vm_child c;
	int fd = dev_open();
	void *stack;
	pid_t pid;
	bool ok;
	int r;

	memset(&c, 0, sizeof(c));
	c.parent_fd = fd;
	c.word = &word;
	pid = vm_child_start(&c, CLONE_VM, &stack);
	WAIT_UNTIL(ok, atomic_load(&c.tid) != 0, TEST_WAIT_NS);
	ck_assert_msg(ok, "the child did not take the lock");
	held = word_load(&word);

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)&word;
	a.flags = TOFUTEX_LOCK_DEADLINE;
	a.deadline_ns = now_ns() + TEST_WAIT_NS;
	r = ioctl(fd, TOFUTEX_IOC_LOCK, &a) ? errno : 0;
	atomic_store(&c.release, true);
	vm_child_reap(pid, stack);
	ck_assert_msg(r == EPERM,
		      "LOCK of a word held by a clone(CLONE_VM) child: %d (%s), want EPERM",
		      r, strerror(r));
	ck_assert_msg(word_load(&word) == held,
		      "the word changed from 0x%08x to 0x%08x", held,
		      word_load(&word));
	close(fd);
}
END_TEST

/* ---- Statistics scopes ---- */

static int raw_stats(int fd, uint32_t scope)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	st.flags = scope;
	return ioctl(fd, TOFUTEX_IOC_STATS, &st) ? errno : 0;
}

/* Exit status of the unprivileged child: 0, or which step failed. */
enum { STATS_OK, STATS_SETUID, STATS_OPEN, STATS_PROCESS, STATS_GLOBAL };

START_TEST(test_stats_global_unprivileged)
{
	int fd = dev_open(), status = 0;
	pid_t pid;

	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_GLOBAL), 0);
	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int cfd;

		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(STATS_SETUID);
		cfd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
		if (cfd < 0)
			_exit(STATS_OPEN);
		if (raw_stats(cfd, TOFUTEX_STATS_PROCESS) != 0)
			_exit(STATS_PROCESS);
		if (raw_stats(cfd, TOFUTEX_STATS_GLOBAL) != EPERM)
			_exit(STATS_GLOBAL);
		_exit(STATS_OK);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == STATS_OK,
		      "unprivileged child: status %#x (exit 1: setuid, 2: open, 3: own statistics refused, 4: global statistics not EPERM)",
		      status);
	close(fd);
}
END_TEST

static Suite *process_suite(void)
{
	Suite *s = suite_create("process");
	TCase *tc;

	tc = tcase_create("clone_vm");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_clone_vm_descriptor, 0,
			    (int)(sizeof(vm_children) /
				  sizeof(vm_children[0])));
	tcase_add_test(tc, test_clone_vm_owner);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_stats_global_unprivileged);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(process_suite());
}
