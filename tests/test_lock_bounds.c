// SPDX-License-Identifier: GPL-2.0
/*
 * What bounds a TO lock call from outside its arguments - the caller's
 * time namespace, TID reuse, a page that another thread provides - and
 * what UNLOCK leaves in the word and reports once it acted. Each test is
 * named for the promise it guards (tofutex(4)):
 *
 * - deadline_in_time_namespace: in a time namespace whose monotonic clock
 *   is a day ahead of the host's, a WAIT due in 200 ms and a contended
 *   LOCK with a monotonic deadline both end with ETIMEDOUT (the deadline
 *   is read on the caller's clock, as futex(2) reads it).
 * - deadline_ns_without_flag: a non-zero deadline_ns without the DEADLINE
 *   flag is EINVAL for LOCK, WAIT and SWAP, before anything is done.
 * - owner_death_tid_reused: the owner of a lock exits while a waiter
 *   sleeps, and its TID is given, in a new PID namespace through
 *   ns_last_pid, to (0) a new thread of the same process, (1) another
 *   process, (2) a new thread that then calls LOCK on the word, which
 *   names it. The waiter takes the lock over with OWNER_DIED in each
 *   case; in (2) the new thread takes it over first, and is told so.
 *   The top waiter is held in its loop's debug window (module/debug.c)
 *   while the owner exits and its TID is reused, so that its next look
 *   at the owner comes after the reuse: only what it remembers of the
 *   owner tells it the owner died.
 * - unlock_keeps_owner_died / handoff_keeps_owner_died: UNLOCK leaves
 *   OWNER_DIED in the word it releases or hands off, and a waiter handed
 *   such a word reports OWNER_DIED.
 * - unlock_writeback_fault_after_release: UNLOCK and RWUNLOCK whose
 *   argument cannot take "woken" any more still return 0 once they
 *   released the word, and released it once.
 * - fault_on_userfaultfd_page_*: LOCK, RDLOCK and WRLOCK on a word whose
 *   page is missing in a userfaultfd range, with nobody serving the
 *   fault, end on an ordinary signal (EINTR) and at their deadline
 *   (ETIMEDOUT).
 * - rwunlock_fault_signal_restarts: RWUNLOCK whose fault-in waits is not
 *   ended by a signal without SA_RESTART: it is restarted after the
 *   handler and releases the word once the page comes.
 *
 * Tests that need a namespace run their body in a child process (the
 * namespace's first member) and wait for it with a bound; a child that
 * is still waiting at the bound is killed and the test fails.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "common.h"
#include "params.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/* The time namespace's monotonic clock runs this far ahead. */
#define TIMENS_AHEAD_S	86400

/* A deadline that a correct call reaches long before any test bound. */
#define NEAR_NS		(200 * NSEC_PER_MSEC)

/* The deadline of a call whose page fault is never served. */
#define FAULT_DEADLINE_NS	(50 * NSEC_PER_MSEC)

/* ---- Raw calls ---- */

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

/* LOCK, RDLOCK or WRLOCK with @deadline (0: none): 0 or the errno value. */
static int raw_lock_cmd(int fd, unsigned long cmd, uint32_t *w,
			uint64_t deadline, uint32_t *status)
{
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	if (deadline) {
		a.flags = TOFUTEX_LOCK_DEADLINE;
		a.deadline_ns = deadline;
	}
	if (ioctl(fd, cmd, &a))
		return errno;
	if (status)
		*status = a.status;
	return 0;
}

static int raw_lock(int fd, uint32_t *w, uint64_t deadline, uint32_t *status)
{
	return raw_lock_cmd(fd, TOFUTEX_IOC_LOCK, w, deadline, status);
}

/* UNLOCK or RWUNLOCK: 0 or the errno value. */
static int raw_unlock_arg_cmd(int fd, unsigned long cmd,
			      struct tofutex_unlock *a)
{
	return ioctl(fd, cmd, a) ? errno : 0;
}

static int raw_unlock_cmd(int fd, unsigned long cmd, uint32_t *w)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	return raw_unlock_arg_cmd(fd, cmd, &a);
}

static int raw_unlock(int fd, uint32_t *w)
{
	return raw_unlock_cmd(fd, TOFUTEX_IOC_UNLOCK, w);
}

static int raw_wait(int fd, uint32_t *w, uint32_t val, uint64_t deadline)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.val = val;
	a.flags = TOFUTEX_WAIT_DEADLINE;
	a.deadline_ns = deadline;
	return ioctl(fd, TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

/* ---- A child process, bounded ---- */

/*
 * Run @fn in a child process and wait for it up to @bound_ns. Returns
 * the child's exit status, 128 + signal when it was killed by one, or -1
 * when it had to be killed at the bound.
 */
static int run_child(int (*fn)(void *), void *arg, uint64_t bound_ns)
{
	uint64_t end = now_ns() + bound_ns;
	pid_t pid, r;
	int st;

	pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fn(arg));
	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		ck_assert(r >= 0);
		if (r == pid)
			break;
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		sleep_ns(NSEC_PER_MSEC);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* In a child: report @what and return @code for run_child(). */
static int child_fail(int code, const char *what, int err)
{
	fprintf(stderr, "child: %s: %d (%s)\n", what, err, strerror(err));
	return code;
}

/* ---- A thread that holds a word until told to stop ---- */

struct holder {
	uint32_t *word;
	uint32_t extra;		/* bits stored with the TID */
	atomic_uint tid;
	atomic_bool stop;
	pthread_t thread;
};

static void *holder_main(void *p)
{
	struct holder *h = p;
	uint32_t tid = test_gettid();

	__atomic_store_n(h->word, tid | h->extra, __ATOMIC_RELEASE);
	atomic_store(&h->tid, tid);
	while (!atomic_load(&h->stop))
		sleep_ns(NSEC_PER_MSEC);
	return NULL;
}

/* Start a holder of @word; 0, or the errno value of pthread_create(). */
static int holder_start(struct holder *h, uint32_t *word, uint32_t extra)
{
	int r;

	memset(h, 0, sizeof(*h));
	h->word = word;
	h->extra = extra;
	r = pthread_create(&h->thread, NULL, holder_main, h);
	if (r)
		return r;
	while (!atomic_load(&h->tid))
		sleep_ns(100 * NSEC_PER_USEC);
	return 0;
}

static void holder_stop(struct holder *h)
{
	atomic_store(&h->stop, true);
	pthread_join(h->thread, NULL);
}

/* ---- deadline_in_time_namespace ---- */

static int timens_child(void *arg)
{
	uint64_t host_now = *(uint64_t *)arg;
	uint32_t word = 7;
	struct holder h;
	int fd, r;

	if (now_ns() < host_now + (TIMENS_AHEAD_S - 60) * NSEC_PER_SEC)
		return child_fail(10, "monotonic clock not ahead", 0);
	fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return child_fail(11, "open", errno);
	r = raw_wait(fd, &word, 7, now_ns() + NEAR_NS);
	if (r != ETIMEDOUT)
		return child_fail(12, "WAIT due in 200 ms, want ETIMEDOUT", r);
	word = 0;
	r = holder_start(&h, &word, 0);
	if (r)
		return child_fail(13, "pthread_create", r);
	r = raw_lock(fd, &word, now_ns() + NEAR_NS, NULL);
	holder_stop(&h);
	if (r != ETIMEDOUT)
		return child_fail(14, "contended LOCK due in 200 ms, want ETIMEDOUT",
				  r);
	return 0;
}

/* Enter a new time namespace for children, monotonic clock a day ahead. */
static void timens_enter_ahead(void)
{
	char buf[64];
	int fd, n;

	ck_assert_msg(unshare(CLONE_NEWTIME) == 0,
		      "unshare(CLONE_NEWTIME): %s (needs CONFIG_TIME_NS and root)",
		      strerror(errno));
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "/proc/self/timens_offsets: %s",
		      strerror(errno));
	n = snprintf(buf, sizeof(buf), "monotonic %d 0\n", TIMENS_AHEAD_S);
	ck_assert_msg(write(fd, buf, (size_t)n) == n,
		      "writing the time namespace's offset: %s",
		      strerror(errno));
	close(fd);
}

START_TEST(test_deadline_in_time_namespace)
{
	uint64_t host_now;
	int r;

	timens_enter_ahead();
	host_now = now_ns();
	r = run_child(timens_child, &host_now, TEST_WAIT_NS);
	ck_assert_msg(r == 0,
		      "in a time namespace a day ahead: child %d (-1: still asleep at the bound; see its output)",
		      r);
}
END_TEST

/* ---- deadline_ns_without_flag ---- */

START_TEST(test_deadline_ns_without_flag)
{
	uint32_t word = 0, other = 3;
	union any_arg a;
	int fd = dev_open();

	/* Each call would succeed or fail at once with its other fields. */
	memset(&a, 0, sizeof(a));
	a.lock.uaddr = (uintptr_t)&word;
	a.lock.deadline_ns = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK, &a.lock), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(word_load(&word), 0);

	memset(&a, 0, sizeof(a));
	a.wait.uaddr = (uintptr_t)&word;
	a.wait.val = 1;
	a.wait.deadline_ns = now_ns() + NEAR_NS;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_WAIT, &a.wait), -1);
	ck_assert_int_eq(errno, EINVAL);

	memset(&a, 0, sizeof(a));
	a.swap.wait_uaddr = (uintptr_t)&word;
	a.swap.wake_uaddr = (uintptr_t)&other;
	a.swap.val = 1;
	a.swap.deadline_ns = UINT64_MAX;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_SWAP, &a.swap), -1);
	ck_assert_int_eq(errno, EINVAL);
	close(fd);
}
END_TEST

/* ---- owner_death_tid_reused ---- */

struct reuse {
	int fd;
	uint32_t word;
	struct holder owner;
	struct holder heir;		/* mode 0: the new thread */
	uint32_t heir_word;		/* what the new thread holds */
	atomic_uint heir_tid;		/* mode 2: the new thread that locks */
	atomic_int heir_result;		/* its LOCK's, -1 until it returned */
	uint32_t heir_status;
	pthread_t heir_locker;
	char waiter_proc[64];		/* "<pid>/task/<tid>", host PIDs */
	atomic_bool waiter_ready;
	atomic_int result;		/* -1 until the waiter's LOCK returned */
	uint32_t status;
	pthread_t waiter;
};

static void *reuse_waiter_main(void *p)
{
	struct reuse *s = p;
	ssize_t n;
	int r;

	n = readlink("/proc/thread-self", s->waiter_proc,
		     sizeof(s->waiter_proc) - 1);
	s->waiter_proc[n > 0 ? n : 0] = '\0';
	atomic_store(&s->waiter_ready, true);
	r = raw_lock(s->fd, &s->word, now_ns() + TEST_WAIT_NS, &s->status);
	atomic_store(&s->result, r);
	return NULL;
}

/* Mode 2's new thread: LOCK on the word, which names its TID; release. */
static void *reuse_heir_main(void *p)
{
	struct reuse *s = p;
	uint32_t tid = test_gettid();
	int r;

	atomic_store(&s->heir_tid, tid);
	r = raw_lock(s->fd, &s->word, now_ns() + TEST_WAIT_NS, &s->heir_status);
	if (!r)
		r = raw_unlock(s->fd, &s->word);
	atomic_store(&s->heir_result, r);
	return NULL;
}

/* Is the task at /proc/@where asleep (in any call)? */
static bool proc_asleep(const char *where)
{
	char path[96], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/syscall", where);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strncmp(buf, "running", 7) != 0;
}

/* Poll @cond every 100 us for up to TEST_WAIT_NS; the result. */
#define POLL_FOR(cond)							\
	({								\
		bool ok_;						\
		WAIT_UNTIL(ok_, (cond), TEST_WAIT_NS);			\
		ok_;							\
	})

/* This process's PID as the host sees it (for the debug window). */
static pid_t host_pid(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

static int set_last_pid(uint32_t pid)
{
	char buf[16];
	int fd, n, r = 0;

	fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%u", pid);
	if (write(fd, buf, (size_t)n) != n)
		r = errno;
	close(fd);
	return r;
}

/*
 * The owner exits and its TID @tid is handed on: to a new thread (@mode
 * 0) or a new process (1, its PID in *@heir_pid). 0 or a child exit code.
 */
static int reuse_tid(struct reuse *s, uint32_t tid, int mode, pid_t *heir_pid)
{
	int r;

	holder_stop(&s->owner);
	if (!POLL_FOR(syscall(SYS_tgkill, getpid(), tid, 0) != 0))
		return child_fail(30, "the owner's TID stays in use", 0);
	r = set_last_pid(tid - 1);
	if (r)
		return child_fail(31, "ns_last_pid", r);
	if (mode == 0) {
		r = holder_start(&s->heir, &s->heir_word, 0);
		if (r)
			return child_fail(32, "pthread_create", r);
		if (atomic_load(&s->heir.tid) != tid)
			return child_fail(33, "new thread's TID is not the owner's",
					  (int)atomic_load(&s->heir.tid));
		return 0;
	}
	if (mode == 2) {
		r = pthread_create(&s->heir_locker, NULL, reuse_heir_main, s);
		if (r)
			return child_fail(35, "pthread_create", r);
		if (!POLL_FOR(atomic_load(&s->heir_tid)) ||
		    atomic_load(&s->heir_tid) != tid)
			return child_fail(36, "new thread's TID is not the owner's",
					  (int)atomic_load(&s->heir_tid));
		return 0;
	}
	*heir_pid = fork();
	if (*heir_pid == 0) {
		pause();
		_exit(0);
	}
	if (*heir_pid != (pid_t)tid)
		return child_fail(34, "new process's PID is not the owner's TID",
				  (int)*heir_pid);
	return 0;
}

/* Wait for the waiter to leave a sleep: it is in the debug window then. */
static int reuse_catch_window(struct reuse *s)
{
	if (!POLL_FOR(proc_asleep(s->waiter_proc)))
		return child_fail(20, "the waiter never slept", 0);
	if (!POLL_FOR(!proc_asleep(s->waiter_proc)))
		return child_fail(21, "the waiter never woke to poll", 0);
	return 0;
}

static int reuse_child(void *arg)
{
	int mode = *(int *)arg, r;
	static struct reuse s;
	pid_t heir_pid = 0;
	uint32_t tid;

	atomic_store(&s.result, -1);
	atomic_store(&s.heir_result, -1);
	s.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (s.fd < 0)
		return child_fail(11, "open", errno);
	r = holder_start(&s.owner, &s.word, 0);
	if (r)
		return child_fail(12, "pthread_create", r);
	tid = atomic_load(&s.owner.tid);
	r = pthread_create(&s.waiter, NULL, reuse_waiter_main, &s);
	if (r)
		return child_fail(13, "pthread_create", r);
	if (!POLL_FOR(atomic_load(&s.waiter_ready) &&
		      (word_load(&s.word) & WAITERS) &&
		      proc_asleep(s.waiter_proc)))
		return child_fail(14, "the waiter never slept on the owner", 0);
	r = param_write("debug_window_ns", NSEC_PER_SEC) ?:
	    param_write("debug_window_id", WINDOW_COMPETE) ?:
	    param_write("debug_window_tgid", (unsigned long)host_pid());
	if (r)
		return child_fail(15, "opening the debug window", r);
	r = reuse_catch_window(&s) ?: reuse_tid(&s, tid, mode, &heir_pid);
	if (!r && !POLL_FOR(atomic_load(&s.result) >= 0))
		r = child_fail(40, "LOCK did not return", 0);
	window_close();
	if (heir_pid > 0)
		kill(heir_pid, SIGKILL);
	if (atomic_load(&s.heir.tid))
		holder_stop(&s.heir);
	if (atomic_load(&s.heir_tid))
		pthread_join(s.heir_locker, NULL);
	if (r)
		return r;
	if (mode == 2 && (atomic_load(&s.heir_result) ||
			  (s.heir_status & TOFUTEX_STATUS_HOW_MASK) !=
			  TOFUTEX_STATUS_OWNER_DIED))
		return child_fail(43, "LOCK by the thread given the dead owner's TID (result; status in the message above)",
				  atomic_load(&s.heir_result) ?:
				  (int)s.heir_status);
	if (atomic_load(&s.result))
		return child_fail(41, "LOCK after the owner died",
				  atomic_load(&s.result));
	if ((s.status & TOFUTEX_STATUS_HOW_MASK) != TOFUTEX_STATUS_OWNER_DIED ||
	    !(word_load(&s.word) & OWNER_DIED))
		return child_fail(42, "LOCK took the word, not from a dead owner; status",
				  (int)s.status);
	return 0;
}

START_TEST(test_owner_death_tid_reused)
{
	static const char *const heirs[] = {
		"thread", "process", "thread that locks",
	};
	int mode = _i, r;

	ck_assert_msg(access(PARAM_DIR "debug_window_id", W_OK) == 0,
		      "the module has no debug windows: build it with TOFUTEX_DEBUG=y (the test harness does)");
	if (access("/proc/sys/kernel/ns_last_pid", F_OK) && errno == ENOENT) {
		printf("SKIPPED: test_owner_death_tid_reused (%s) needs /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE) to hand a TID on: nothing checked\n",
		       heirs[mode]);
		return;
	}
	ck_assert_msg(unshare(CLONE_NEWPID) == 0, "unshare(CLONE_NEWPID): %s",
		      strerror(errno));
	r = run_child(reuse_child, &mode, 3 * TEST_WAIT_NS);
	window_close();
	ck_assert_msg(r == 0,
		      "owner's TID reused by a new %s: child %d (-1: hung; see its output)",
		      heirs[mode], r);
}
END_TEST

/* ---- unlock_keeps_owner_died / handoff_keeps_owner_died ---- */

START_TEST(test_unlock_keeps_owner_died)
{
	uint32_t tid = test_gettid();
	const uint32_t before[] = { OWNER_DIED | WAITERS,
				    tid | OWNER_DIED | WAITERS,
				    tid | OWNER_DIED };
	int fd = dev_open();
	unsigned int i;
	uint32_t word;

	for (i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		word = before[i];
		ck_assert_int_eq(raw_unlock(fd, &word), 0);
		ck_assert_msg(word == OWNER_DIED,
			      "UNLOCK of 0x%08x left 0x%08x, want OWNER_DIED",
			      before[i], word);
	}
	close(fd);
}
END_TEST

struct locker {
	int fd;
	uint32_t *word;
	atomic_uint tid;
	atomic_int result;
	uint32_t status;
	pthread_t thread;
};

static void *locker_main(void *p)
{
	struct locker *l = p;

	atomic_store(&l->tid, test_gettid());
	atomic_store(&l->result, raw_lock(l->fd, l->word,
					  now_ns() + TEST_WAIT_NS,
					  &l->status));
	return NULL;
}

/* The parameters test_handoff_keeps_owner_died changes, saved before. */
static const char *const saved_names[] = { "spin_ns", "handoff_ns" };
static unsigned long saved_values[2];
static bool saved[2];

static void params_save(void)
{
	unsigned int i;

	for (i = 0; i < 2; i++)
		saved[i] = param_read(saved_names[i], &saved_values[i]);
}

static void params_restore(void)
{
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (saved[i])
			param_write(saved_names[i], saved_values[i]);
}

START_TEST(test_handoff_keeps_owner_died)
{
	uint32_t tid = test_gettid(), word = tid | OWNER_DIED;
	struct locker l = { .word = &word };
	bool ok;

	param_set("handoff_ns", 0);
	param_set("spin_ns", 0);
	l.fd = dev_open();
	atomic_store(&l.result, -1);
	ck_assert_int_eq(pthread_create(&l.thread, NULL, locker_main, &l), 0);
	WAIT_UNTIL(ok, atomic_load(&l.tid) &&
		   (word_load(&word) & WAITERS) &&
		   asleep_in_ioctl(atomic_load(&l.tid), TOFUTEX_IOC_LOCK),
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "the locker never slept");
	ck_assert_int_eq(raw_unlock(l.fd, &word), 0);
	ck_assert(join_within(l.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&l.result), 0);
	ck_assert_msg(word_load(&word) == (atomic_load(&l.tid) | OWNER_DIED),
		      "hand-off of an OWNER_DIED word left 0x%08x",
		      word_load(&word));
	ck_assert_uint_eq(l.status & TOFUTEX_STATUS_HOW_MASK,
			  TOFUTEX_STATUS_OWNER_DIED);
	close(l.fd);
}
END_TEST

/* ---- unlock_writeback_fault_after_release ---- */

/*
 * _i = 0: UNLOCK of a held TO lock; 1: RWUNLOCK of one of two read locks,
 * which must leave the other: the word is released exactly once.
 */
START_TEST(test_unlock_writeback_fault_after_release)
{
	static const unsigned long cmds[] = {
		TOFUTEX_IOC_UNLOCK, TOFUTEX_IOC_RWUNLOCK,
	};
	static const uint32_t after[] = {
		0, TOFUTEX_RW_SHARED | 1 | WAITERS,
	};
	long page = sysconf(_SC_PAGESIZE);
	uint32_t word = _i ? TOFUTEX_RW_SHARED | 2 | WAITERS :
			     test_gettid() | WAITERS;
	struct tofutex_unlock *a;
	int fd = dev_open();

	a = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(a != MAP_FAILED);
	a->uaddr = (uintptr_t)&word;
	ck_assert_int_eq(mprotect(a, (size_t)page, PROT_READ), 0);
	ck_assert_int_eq(raw_unlock_arg_cmd(fd, cmds[_i], a), 0);
	ck_assert_uint_eq(word_load(&word), after[_i]);
	munmap(a, (size_t)page);
	close(fd);
}
END_TEST

/* ---- fault_on_userfaultfd_page_* ---- */

/*
 * A page in a userfaultfd range. MISSING mode: anonymous memory that is
 * not there until served (zeros). MINOR mode: a memfd page whose content
 * is in the page cache already, so that the word holds a value, but
 * which this mapping maps only when served (UFFDIO_CONTINUE): every
 * access to the word faults and waits until then.
 */
struct uffd_page {
	int uffd;
	int memfd;		/* -1 in MISSING mode */
	uint32_t *page;
	size_t size;
};

/* Register @u->page, mapped already, with a new userfaultfd. */
static void uffd_page_register(struct uffd_page *u, uint64_t features,
			       uint64_t mode)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	struct uffdio_register reg;

	u->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	ck_assert_msg(u->uffd >= 0,
		      "userfaultfd: %s (needs CONFIG_USERFAULTFD; root)",
		      strerror(errno));
	ck_assert_msg(ioctl(u->uffd, UFFDIO_API, &api) == 0,
		      "UFFDIO_API, features 0x%llx: %s",
		      (unsigned long long)features, strerror(errno));
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)u->page;
	reg.range.len = u->size;
	reg.mode = mode;
	ck_assert_int_eq(ioctl(u->uffd, UFFDIO_REGISTER, &reg), 0);
}

/* A missing page. */
static void uffd_page_setup(struct uffd_page *u)
{
	u->size = (size_t)sysconf(_SC_PAGESIZE);
	u->memfd = -1;
	u->page = mmap(NULL, u->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(u->page != MAP_FAILED);
	uffd_page_register(u, 0, UFFDIO_REGISTER_MODE_MISSING);
}

/* A page whose word holds @value, yet faults on every access. */
static void uffd_minor_setup(struct uffd_page *u, uint32_t value)
{
	uint32_t *fill;

	u->size = (size_t)sysconf(_SC_PAGESIZE);
	u->memfd = memfd_create("tofutex-minor", MFD_CLOEXEC);
	ck_assert(u->memfd >= 0);
	ck_assert_int_eq(ftruncate(u->memfd, (off_t)u->size), 0);
	fill = mmap(NULL, u->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    u->memfd, 0);
	ck_assert(fill != MAP_FAILED);
	*fill = value;
	munmap(fill, u->size);
	u->page = mmap(NULL, u->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       u->memfd, 0);
	ck_assert(u->page != MAP_FAILED);
	uffd_page_register(u, UFFD_FEATURE_MINOR_SHMEM,
			   UFFDIO_REGISTER_MODE_MINOR);
}

/* Wait for a fault on @u's range to be reported: its call waits now. */
static void uffd_page_await_fault(struct uffd_page *u)
{
	struct pollfd pfd = { .fd = u->uffd, .events = POLLIN };
	struct uffd_msg msg;

	ck_assert_msg(poll(&pfd, 1, (int)(TEST_WAIT_NS / NSEC_PER_MSEC)) == 1,
		      "no fault on the userfaultfd page");
	ck_assert_int_eq(read(u->uffd, &msg, sizeof(msg)),
			 (ssize_t)sizeof(msg));
	ck_assert_uint_eq(msg.event, UFFD_EVENT_PAGEFAULT);
}

/*
 * Provide the page (zeros), or map the one that is there already: a
 * waiting fault ends.
 */
static void uffd_page_serve(struct uffd_page *u)
{
	struct uffdio_zeropage zp;
	struct uffdio_continue c;

	if (u->memfd < 0) {
		memset(&zp, 0, sizeof(zp));
		zp.range.start = (uintptr_t)u->page;
		zp.range.len = u->size;
		ioctl(u->uffd, UFFDIO_ZEROPAGE, &zp);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.range.start = (uintptr_t)u->page;
	c.range.len = u->size;
	ioctl(u->uffd, UFFDIO_CONTINUE, &c);
}

static void uffd_page_teardown(struct uffd_page *u)
{
	close(u->uffd);
	munmap(u->page, u->size);
	if (u->memfd >= 0)
		close(u->memfd);
}

/* One call on a word in a userfaultfd range, in a thread of its own. */
struct uffd_locker {
	int fd;
	unsigned long cmd;	/* LOCK, RDLOCK, WRLOCK or RWUNLOCK */
	uint32_t *word;
	uint64_t deadline;
	atomic_int result;	/* -1 while in the call */
	pthread_t thread;
};

static void *uffd_locker_main(void *p)
{
	struct uffd_locker *l = p;
	int r;

	if (l->cmd == TOFUTEX_IOC_RWUNLOCK)
		r = raw_unlock_cmd(l->fd, l->cmd, l->word);
	else
		r = raw_lock_cmd(l->fd, l->cmd, l->word, l->deadline, NULL);
	atomic_store(&l->result, r);
	return NULL;
}

static void uffd_locker_start(struct uffd_locker *l, unsigned long cmd,
			      uint32_t *word, uint64_t deadline)
{
	l->fd = dev_open();
	l->cmd = cmd;
	l->word = word;
	l->deadline = deadline;
	atomic_store(&l->result, -1);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, uffd_locker_main,
					l), 0);
}

static const char *const lock_names[] = { "LOCK", "RDLOCK", "WRLOCK" };
static const unsigned long lock_cmds[] = {
	TOFUTEX_IOC_LOCK, TOFUTEX_IOC_RDLOCK, TOFUTEX_IOC_WRLOCK,
};

/*
 * lock_cmds[@i] on the missing page; @signal: SIGUSR1 it once the fault
 * waits.
 */
static int uffd_lock(int i, uint64_t deadline, bool signal)
{
	struct uffd_page u;
	struct uffd_locker l;
	bool ended;

	install_sigusr1(false);
	uffd_page_setup(&u);
	uffd_locker_start(&l, lock_cmds[i], u.page, deadline);
	uffd_page_await_fault(&u);
	if (signal)
		ck_assert_int_eq(pthread_kill(l.thread, SIGUSR1), 0);
	ended = join_within(l.thread, NULL, TEST_WAIT_NS);
	if (!ended) {
		uffd_page_serve(&u);
		ck_assert(join_within(l.thread, NULL, TEST_WAIT_NS));
	}
	uffd_page_teardown(&u);
	close(l.fd);
	ck_assert_msg(ended, "%s waited for the page until it was served",
		      lock_names[i]);
	return atomic_load(&l.result);
}

/* _i indexes lock_cmds[]. */
START_TEST(test_fault_on_userfaultfd_page_signal)
{
	int r = uffd_lock(_i, 0, true);

	ck_assert_msg(r == EINTR, "%s: %d (%s), want EINTR", lock_names[_i],
		      r, strerror(r));
}
END_TEST

/* _i indexes lock_cmds[]. */
START_TEST(test_fault_on_userfaultfd_page_deadline)
{
	int r = uffd_lock(_i, now_ns() + FAULT_DEADLINE_NS, false);

	ck_assert_msg(r == ETIMEDOUT, "%s: %d (%s), want ETIMEDOUT",
		      lock_names[_i], r, strerror(r));
}
END_TEST

/* ---- rwunlock_fault_signal_restarts ---- */

/*
 * RWUNLOCK of the last read lock whose fault-in waits and is interrupted
 * by a signal without SA_RESTART: a release is restarted, never given up
 * with EINTR, so the call is still in the kernel after the handler ran,
 * and releases the word once the page comes.
 */
START_TEST(test_rwunlock_fault_signal_restarts)
{
	const uint32_t held = TOFUTEX_RW_SHARED | 1 | WAITERS;
	struct uffd_page m;
	struct uffd_locker l;
	bool ended;
	int r;

	install_sigusr1(false);
	uffd_minor_setup(&m, held);
	uffd_locker_start(&l, TOFUTEX_IOC_RWUNLOCK, m.page, 0);
	uffd_page_await_fault(&m);
	ck_assert_int_eq(pthread_kill(l.thread, SIGUSR1), 0);
	sleep_ns(NEAR_NS);
	r = atomic_load(&l.result);
	ck_assert_int_ge(atomic_load(&sig_count), 1);
	/* Mapped for good: the restarted call's fault ends, or never comes. */
	uffd_page_serve(&m);
	ended = join_within(l.thread, NULL, TEST_WAIT_NS);
	ck_assert_msg(r == -1, "RWUNLOCK returned %d (%s) after the signal",
		      r, r > 0 ? strerror(r) : "");
	ck_assert(ended);
	ck_assert_int_eq(atomic_load(&l.result), 0);
	ck_assert_uint_eq(word_load(m.page), 0);
	uffd_page_teardown(&m);
	close(l.fd);
}
END_TEST

static atomic_uint waiter_tid;
static atomic_int waiter_err;

static void *cond_waiter_main(void *p)
{
	struct tofutex_wait a = { .uaddr = (uintptr_t)p };
	int fd = dev_open();

	atomic_store(&waiter_tid, test_gettid());
	if (ioctl(fd, TOFUTEX_IOC_WAIT, &a))
		atomic_store(&waiter_err, errno);
	close(fd);
	return NULL;
}

struct uffd_requeuer {
	uint32_t *cond, *lock;
	atomic_int result;	/* -1 while in the call */
};

static void *uffd_requeuer_main(void *p)
{
	struct uffd_requeuer *q = p;
	struct tofutex_requeue a = {
		.uaddr = (uintptr_t)q->cond, .lock_uaddr = (uintptr_t)q->lock,
		.requeue_count = INT32_MAX,
	};
	int fd = dev_open();

	atomic_store(&q->result, ioctl(fd, TOFUTEX_IOC_REQUEUE, &a) ? errno : 0);
	close(fd);
	return NULL;
}

/*
 * REQUEUE whose lock word's fault-in waits and is interrupted by a signal
 * without SA_RESTART, before it woke or moved anyone: restarted, never
 * EINTR (a condition variable's broadcast cannot fail so), and the waiter
 * is moved once the page comes.
 */
START_TEST(test_requeue_fault_signal_restarts)
{
	static uint32_t cond;
	struct uffd_requeuer q;
	struct uffd_page m;
	pthread_t w, t;
	bool ended;
	int r, fd;

	install_sigusr1(false);
	atomic_store(&waiter_tid, 0);
	atomic_store(&waiter_err, 0);
	cond = 0;
	ck_assert_int_eq(pthread_create(&w, NULL, cond_waiter_main, &cond), 0);
	while (!atomic_load(&waiter_tid))
		sched_yield();
	wait_asleep_in(atomic_load(&waiter_tid), TOFUTEX_IOC_WAIT, "WAIT");
	uffd_minor_setup(&m, test_gettid());
	q = (struct uffd_requeuer) { .cond = &cond, .lock = m.page };
	atomic_store(&q.result, -1);
	ck_assert_int_eq(pthread_create(&t, NULL, uffd_requeuer_main, &q), 0);
	uffd_page_await_fault(&m);
	ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
	sleep_ns(NEAR_NS);
	r = atomic_load(&q.result);
	ck_assert_int_ge(atomic_load(&sig_count), 1);
	uffd_page_serve(&m);
	ended = join_within(t, NULL, TEST_WAIT_NS);
	ck_assert_msg(r == -1, "REQUEUE returned %d (%s) after the signal",
		      r, r > 0 ? strerror(r) : "");
	ck_assert(ended);
	ck_assert_int_eq(atomic_load(&q.result), 0);
	/* Moved onto the lock: our unlock (WAITERS now set) releases it. */
	ck_assert_uint_eq(word_load(m.page), test_gettid() | WAITERS);
	fd = dev_open();
	ck_assert_int_eq(raw_unlock_cmd(fd, TOFUTEX_IOC_UNLOCK, m.page), 0);
	close(fd);
	ck_assert(join_within(w, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&waiter_err), 0);
	uffd_page_teardown(&m);
}
END_TEST

static Suite *lock_bounds_suite(void)
{
	Suite *s = suite_create("lock_bounds");
	TCase *tc;

	tc = tcase_create("namespaces");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_deadline_in_time_namespace);
	tcase_add_loop_test(tc, test_owner_death_tid_reused, 0, 3);
	suite_add_tcase(s, tc);

	tc = tcase_create("abi");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_unchecked_fixture(tc, params_save, params_restore);
	tcase_add_test(tc, test_deadline_ns_without_flag);
	tcase_add_test(tc, test_unlock_keeps_owner_died);
	tcase_add_test(tc, test_handoff_keeps_owner_died);
	tcase_add_loop_test(tc, test_unlock_writeback_fault_after_release,
			    0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_fault_on_userfaultfd_page_signal, 0, 3);
	tcase_add_loop_test(tc, test_fault_on_userfaultfd_page_deadline, 0, 3);
	tcase_add_test(tc, test_rwunlock_fault_signal_restarts);
	tcase_add_test(tc, test_requeue_fault_signal_restarts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lock_bounds_suite());
}
