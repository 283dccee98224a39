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
 * - owner_record_after_release: a top waiter that read the word before
 *   its owner's UNLOCK does not make the state remember that owner after
 *   the release: when the TID goes to a new thread that takes the lock,
 *   with WAIT waiters moved onto it keeping the state alive, their poller
 *   does not judge the new owner dead (nobody died; no OWNER_DIED).
 * - writer_tid_reused: the same for a reader/writer lock's writer: the
 *   new thread given a dead writer's TID does not hold its lock (its
 *   RWUNLOCK fails with EPERM; a waiter takes the lock over) and its
 *   WRLOCK takes the lock over rather than failing with EDEADLK.
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
 *   handler and releases the word once the page comes; the statistics
 *   count it as one call.
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

/*
 * The timeout of a call whose page fault is never served, from the moment
 * its thread makes the call: long enough for the call to reach the fault
 * first on a debug kernel in an emulated guest.
 */
#define FAULT_TIMEOUT_NS	(200 * NSEC_PER_MSEC)

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
	/*
	 * The kernel gave the heir another TID (a setup step, not the
	 * module's answer: seen on a loaded guest).
	 */
	if (r == 33 || r == 34 || r == 36) {
		printf("SKIPPED: test_owner_death_tid_reused (%s): the owner's TID did not go to the heir: nothing checked\n",
		       heirs[mode]);
		return;
	}
	ck_assert_msg(r == 0,
		      "owner's TID reused by a new %s: child %d (-1: hung; see its output)",
		      heirs[mode], r);
}
END_TEST

/* ---- owner_record_after_release ---- */

struct stale;

/*
 * Moved waiters: the first is woken by the owner's UNLOCK, the last polls
 * the owner, and the one between keeps the lock's state alive when the
 * last leaves.
 */
#define STALE_MOVED	3
#define STALE_POLLER	(STALE_MOVED - 1)

/* owner_check_ns here: the longest, so the poller looks late. */
#define OWNER_CHECK_SLOW_NS	(100 * NSEC_PER_MSEC)

/* A WAIT waiter that REQUEUE moves onto the lock. */
struct stale_moved {
	struct stale *s;
	bool locks;			/* LOCK when its WAIT returns 0 */
	char proc[64];			/* "<pid>/task/<tid>", host PIDs */
	atomic_uint tid;
	atomic_int wait;		/* -1 until its WAIT returned */
	atomic_int lock;		/* -1 until its LOCK returned */
	uint32_t status;
	pthread_t thread;
};

/* The threads and words of test_owner_record_after_release. */
struct stale {
	int fd;
	uint32_t word;
	uint32_t cond;
	atomic_uint owner_tid;
	atomic_int owner_cmd;		/* 1: unlock, 2: exit */
	atomic_int owner_unlock;	/* -1 until its UNLOCK returned */
	pthread_t owner;
	char waiter_proc[64];
	atomic_uint waiter_tid;
	atomic_int waiter_result;	/* -1 until its LOCK returned */
	pthread_t waiter;
	struct stale_moved moved[STALE_MOVED];
	atomic_uint heir_tid;
	atomic_int heir_result;		/* -1 until its LOCK returned */
	atomic_bool heir_stop;
	pthread_t heir;
};

static void thread_proc(char *where, size_t size)
{
	ssize_t n = readlink("/proc/thread-self", where, size - 1);

	where[n > 0 ? n : 0] = '\0';
}

/* The owner: holds the word, releases it through UNLOCK, exits. */
static void *stale_owner_main(void *p)
{
	struct stale *s = p;
	uint32_t tid = test_gettid();

	__atomic_store_n(&s->word, tid, __ATOMIC_RELEASE);
	atomic_store(&s->owner_tid, tid);
	while (atomic_load(&s->owner_cmd) < 1)
		sleep_ns(NSEC_PER_MSEC);
	atomic_store(&s->owner_unlock, raw_unlock(s->fd, &s->word));
	while (atomic_load(&s->owner_cmd) < 2)
		sleep_ns(NSEC_PER_MSEC);
	return NULL;
}

static void *stale_waiter_main(void *p)
{
	struct stale *s = p;

	thread_proc(s->waiter_proc, sizeof(s->waiter_proc));
	atomic_store(&s->waiter_tid, test_gettid());
	atomic_store(&s->waiter_result,
		     raw_lock(s->fd, &s->word, now_ns() + TEST_WAIT_NS, NULL));
	return NULL;
}

static void *stale_moved_main(void *p)
{
	struct stale_moved *m = p;
	struct stale *s = m->s;
	int r;

	thread_proc(m->proc, sizeof(m->proc));
	atomic_store(&m->tid, test_gettid());
	r = raw_wait(s->fd, &s->cond, 0, now_ns() + TEST_WAIT_NS);
	atomic_store(&m->wait, r);
	if (r || !m->locks)
		return NULL;
	r = raw_lock(s->fd, &s->word, now_ns() + TEST_WAIT_NS, &m->status);
	atomic_store(&m->lock, r);
	if (!r)
		raw_unlock(s->fd, &s->word);
	return NULL;
}

/* The thread given the owner's TID: LOCK, hold until told, release. */
static void *stale_heir_main(void *p)
{
	struct stale *s = p;
	int r;

	atomic_store(&s->heir_tid, test_gettid());
	r = raw_lock(s->fd, &s->word, now_ns() + TEST_WAIT_NS, NULL);
	atomic_store(&s->heir_result, r);
	while (!atomic_load(&s->heir_stop))
		sleep_ns(NSEC_PER_MSEC);
	if (!r)
		raw_unlock(s->fd, &s->word);
	return NULL;
}

static int stale_move(struct stale *s)
{
	struct tofutex_requeue a;
	int i, r;

	for (i = 0; i < STALE_MOVED; i++) {
		s->moved[i].s = s;
		s->moved[i].locks = i == STALE_POLLER;
		atomic_store(&s->moved[i].wait, -1);
		atomic_store(&s->moved[i].lock, -1);
		r = pthread_create(&s->moved[i].thread, NULL,
				   stale_moved_main, &s->moved[i]);
		if (r)
			return child_fail(13, "pthread_create", r);
		/* In queue order: the last is the poller. */
		if (!POLL_FOR(atomic_load(&s->moved[i].tid) &&
			      proc_asleep(s->moved[i].proc)))
			return child_fail(14, "a condition waiter never slept",
					  i);
	}
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)&s->cond;
	a.lock_uaddr = (uintptr_t)&s->word;
	a.requeue_count = STALE_MOVED;
	if (ioctl(s->fd, TOFUTEX_IOC_REQUEUE, &a) || a.requeued != STALE_MOVED)
		return child_fail(15, "REQUEUE moved (errno)", (int)a.requeued);
	return 0;
}

/*
 * The owner releases the word while the top waiter, in its debug window,
 * holds a read naming it; a signal then ends the waiter's LOCK.
 * 0, STALE_MISSED when the waiter got the word (its round came too late),
 * or a child exit code.
 */
#define STALE_MISSED	99

static int stale_release(struct stale *s)
{
	int r;

	r = pthread_create(&s->waiter, NULL, stale_waiter_main, s);
	if (r)
		return child_fail(16, "pthread_create", r);
	if (!POLL_FOR(atomic_load(&s->waiter_tid) &&
		      proc_asleep(s->waiter_proc)))
		return child_fail(17, "the waiter never slept", 0);
	r = param_write("debug_window_ns", NSEC_PER_SEC) ?:
	    param_write("debug_window_id", WINDOW_COMPETE) ?:
	    param_write("debug_window_tgid", (unsigned long)host_pid());
	if (r)
		return child_fail(18, "opening the debug window", r);
	if (!POLL_FOR(!proc_asleep(s->waiter_proc)))
		return child_fail(19, "the waiter never woke to poll", 0);
	/* Into the window (1 s), not still on its way from its sleep. */
	sleep_ns(50 * NSEC_PER_MSEC);
	syscall(SYS_tgkill, getpid(), atomic_load(&s->waiter_tid), SIGUSR1);
	atomic_store(&s->owner_cmd, 1);
	if (!POLL_FOR(atomic_load(&s->owner_unlock) >= 0 &&
		      atomic_load(&s->waiter_result) >= 0))
		return child_fail(20, "UNLOCK or the waiter's LOCK did not return",
				  0);
	window_close();
	pthread_join(s->waiter, NULL);
	if (atomic_load(&s->owner_unlock))
		return child_fail(21, "UNLOCK", atomic_load(&s->owner_unlock));
	if (atomic_load(&s->waiter_result) == 0)
		return STALE_MISSED;
	if (atomic_load(&s->waiter_result) != EINTR)
		return child_fail(22, "the signalled waiter's LOCK",
				  atomic_load(&s->waiter_result));
	return 0;
}

/*
 * tid_hand_on()'s exit code when the kernel gave the new thread another
 * TID (the old one not yet free on a slow guest): nothing to check then.
 */
#define TID_NOT_HANDED_ON	98

/*
 * Thread @tid has exited (or is exiting): wait until its TID is free, and
 * start @fn(@arg) as the new thread given that TID, which stores its TID
 * in *@new_tid. 0, TID_NOT_HANDED_ON, or a child exit code (from @code on).
 */
static int tid_hand_on(uint32_t tid, pthread_t *t, void *(*fn)(void *),
		       void *arg, atomic_uint *new_tid, int code)
{
	int r;

	if (!POLL_FOR(syscall(SYS_tgkill, getpid(), tid, 0) != 0))
		return child_fail(code, "the old thread's TID stays in use", 0);
	r = set_last_pid(tid - 1);
	if (r)
		return child_fail(code + 1, "ns_last_pid", r);
	r = pthread_create(t, NULL, fn, arg);
	if (r)
		return child_fail(code + 2, "pthread_create", r);
	if (!POLL_FOR(atomic_load(new_tid)) || atomic_load(new_tid) != tid)
		return child_fail(TID_NOT_HANDED_ON,
				  "new thread's TID is not the old one's",
				  (int)atomic_load(new_tid));
	return 0;
}

/* The owner exits; its TID goes to the heir, which takes the word. */
static int stale_reuse(struct stale *s)
{
	uint32_t tid = atomic_load(&s->owner_tid);
	int r;

	atomic_store(&s->owner_cmd, 2);
	pthread_join(s->owner, NULL);
	r = tid_hand_on(tid, &s->heir, stale_heir_main, s, &s->heir_tid, 23);
	if (r)
		return r;
	if (!POLL_FOR(atomic_load(&s->heir_result) >= 0) ||
	    atomic_load(&s->heir_result))
		return child_fail(27, "the heir's LOCK",
				  atomic_load(&s->heir_result));
	return 0;
}

static int stale_child(void *arg)
{
	static struct stale s;
	struct sigaction sa;
	struct stale_moved *poller = &s.moved[STALE_POLLER];
	int r, i;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;	/* no SA_RESTART: EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	atomic_store(&s.owner_unlock, -1);
	atomic_store(&s.waiter_result, -1);
	atomic_store(&s.heir_result, -1);
	s.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (s.fd < 0)
		return child_fail(11, "open", errno);
	r = pthread_create(&s.owner, NULL, stale_owner_main, &s);
	if (r || !POLL_FOR(atomic_load(&s.owner_tid)))
		return child_fail(12, "pthread_create", r);
	r = stale_move(&s) ?: stale_release(&s) ?: stale_reuse(&s);
	if (!r) {
		/* A few of the poller's owner checks with the heir holding. */
		sleep_ns(4 * OWNER_CHECK_SLOW_NS);
		for (i = 0; i < STALE_MOVED; i++)
			if (atomic_load(&s.moved[i].wait) < 0)
				syscall(SYS_tgkill, getpid(),
					atomic_load(&s.moved[i].tid), SIGUSR1);
		if (!POLL_FOR(atomic_load(&poller->wait) >= 0 &&
			      (atomic_load(&poller->wait) ||
			       atomic_load(&poller->lock) >= 0)))
			r = child_fail(30, "the moved waiter did not return", 0);
	}
	window_close();
	atomic_store(&s.heir_stop, true);
	if (atomic_load(&s.heir_tid))
		pthread_join(s.heir, NULL);
	for (i = 0; i < STALE_MOVED; i++)
		if (atomic_load(&s.moved[i].tid))
			pthread_join(s.moved[i].thread, NULL);
	if (r)
		return r;
	if (atomic_load(&poller->lock) == 0 &&
	    (poller->status & TOFUTEX_STATUS_HOW_MASK) ==
	    TOFUTEX_STATUS_OWNER_DIED)
		return child_fail(31, "a moved waiter took the heir's lock as a dead owner's; status",
				  (int)poller->status);
	return 0;
}

/*
 * No owner died, so nobody may be told so: the record of the released
 * owner, made from a stale read, would make its TID's next thread look
 * dead. Its round is missed when the signalled waiter was given the word
 * first (it waited handoff_ns, which the test sets to the maximum).
 */
START_TEST(test_owner_record_after_release)
{
	int r;

	ck_assert_msg(access(PARAM_DIR "debug_window_id", W_OK) == 0,
		      "the module has no debug windows: build it with TOFUTEX_DEBUG=y (the test harness does)");
	if (access("/proc/sys/kernel/ns_last_pid", F_OK) && errno == ENOENT) {
		printf("SKIPPED: test_owner_record_after_release needs /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE) to hand a TID on: nothing checked\n");
		return;
	}
	param_set("handoff_ns", NSEC_PER_SEC);
	param_set("owner_check_ns", OWNER_CHECK_SLOW_NS);
	ck_assert_msg(unshare(CLONE_NEWPID) == 0, "unshare(CLONE_NEWPID): %s",
		      strerror(errno));
	r = run_child(stale_child, NULL, 3 * TEST_WAIT_NS);
	window_close();
	if (r == STALE_MISSED) {
		printf("SKIPPED: test_owner_record_after_release: the waiter was handed the word before the owner's release: nothing checked\n");
		return;
	}
	if (r == TID_NOT_HANDED_ON) {
		printf("SKIPPED: test_owner_record_after_release: the owner's TID did not go to the new thread: nothing checked\n");
		return;
	}
	ck_assert_msg(r == 0,
		      "owner record after its release: child %d (-1: hung; see its output)",
		      r);
}
END_TEST

/* ---- writer_tid_reused ---- */

/* The threads of test_writer_tid_reused. */
struct wreuse {
	int fd;
	int mode;			/* 0: the heir unlocks, 1: it locks,
					 * 2: it locks and holds the lock
					 * past the waiter's window */
	uint32_t word;
	struct holder writer;
	char waiter_proc[64];		/* "<pid>/task/<tid>", host PIDs */
	atomic_int waiter_result;	/* -1 until its WRLOCK returned */
	uint32_t waiter_status;
	pthread_t waiter;
	atomic_uint heir_tid;
	atomic_int heir_lock;		/* -1 until its WRLOCK returned */
	atomic_int heir_unlock;		/* -1 until its RWUNLOCK returned */
	uint32_t heir_status;
	pthread_t heir;
};

static void *wreuse_waiter_main(void *p)
{
	struct wreuse *s = p;

	thread_proc(s->waiter_proc, sizeof(s->waiter_proc));
	atomic_store(&s->waiter_result,
		     raw_lock_cmd(s->fd, TOFUTEX_IOC_WRLOCK, &s->word,
				  now_ns() + TEST_WAIT_NS, &s->waiter_status));
	return NULL;
}

/* The thread given the dead writer's TID: WRLOCK (mode 1), RWUNLOCK. */
static void *wreuse_heir_main(void *p)
{
	struct wreuse *s = p;
	int r = 0;

	atomic_store(&s->heir_tid, test_gettid());
	if (s->mode >= 1) {
		r = raw_lock_cmd(s->fd, TOFUTEX_IOC_WRLOCK, &s->word,
				 now_ns() + TEST_WAIT_NS, &s->heir_status);
		atomic_store(&s->heir_lock, r);
		if (!r && s->mode == 2)
			sleep_ns(1500 * NSEC_PER_MSEC);
	}
	if (!r)
		atomic_store(&s->heir_unlock,
			     raw_unlock_cmd(s->fd, TOFUTEX_IOC_RWUNLOCK,
					    &s->word));
	return NULL;
}

/* The writer exits; its TID goes to the heir. 0 or a child exit code. */
static int wreuse_tid(struct wreuse *s, uint32_t tid)
{
	int r;

	holder_stop(&s->writer);
	/* Mode 2: the waiter's next owner check finds it dead, and holds. */
	if (s->mode == 2)
		sleep_ns(200 * NSEC_PER_MSEC);
	r = tid_hand_on(tid, &s->heir, wreuse_heir_main, s, &s->heir_tid, 30);
	if (r)
		return r;
	if (!POLL_FOR(atomic_load(&s->heir_unlock) >= 0 ||
		      atomic_load(&s->heir_lock) > 0))
		return child_fail(34, "the heir's calls did not return", 0);
	return 0;
}

static int wreuse_child(void *arg)
{
	static struct wreuse s;
	uint32_t tid;
	int r;

	s.mode = *(int *)arg;
	atomic_store(&s.waiter_result, -1);
	atomic_store(&s.heir_lock, -1);
	atomic_store(&s.heir_unlock, -1);
	s.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (s.fd < 0)
		return child_fail(11, "open", errno);
	r = holder_start(&s.writer, &s.word, 0);
	if (r)
		return child_fail(12, "pthread_create", r);
	tid = atomic_load(&s.writer.tid);
	r = pthread_create(&s.waiter, NULL, wreuse_waiter_main, &s);
	if (r)
		return child_fail(13, "pthread_create", r);
	if (!POLL_FOR(s.waiter_proc[0] && (word_load(&s.word) & WAITERS) &&
		      proc_asleep(s.waiter_proc)))
		return child_fail(14, "the waiter never slept on the writer", 0);
	r = param_write("debug_window_ns", NSEC_PER_SEC) ?:
	    param_write("debug_window_id", s.mode == 2 ? WINDOW_OWNER_DEAD :
					   WINDOW_COMPETE) ?:
	    param_write("debug_window_tgid", (unsigned long)host_pid());
	if (r)
		return child_fail(15, "opening the debug window", r);
	if (!POLL_FOR(!proc_asleep(s.waiter_proc)))
		return child_fail(16, "the waiter never woke to poll", 0);
	r = wreuse_tid(&s, tid);
	if (!r && !POLL_FOR(atomic_load(&s.waiter_result) >= 0))
		r = child_fail(40, "the waiter's WRLOCK did not return", 0);
	window_close();
	if (atomic_load(&s.heir_tid))
		pthread_join(s.heir, NULL);
	if (r)
		return r;
	if (s.mode == 0 && atomic_load(&s.heir_unlock) != EPERM)
		return child_fail(41, "RWUNLOCK by the thread given the dead writer's TID, want EPERM",
				  atomic_load(&s.heir_unlock));
	if (s.mode >= 1 && (atomic_load(&s.heir_lock) ||
			    (s.heir_status & TOFUTEX_STATUS_HOW_MASK) !=
			    TOFUTEX_STATUS_OWNER_DIED))
		return child_fail(42, "WRLOCK by the thread given the dead writer's TID (result; status in the message above)",
				  atomic_load(&s.heir_lock) ?:
				  (int)s.heir_status);
	if (s.mode >= 1 && atomic_load(&s.heir_unlock))
		return child_fail(43, "the heir's RWUNLOCK (EPERM: the waiter took the word it held)",
				  atomic_load(&s.heir_unlock));
	if (atomic_load(&s.waiter_result))
		return child_fail(44, "the waiter's WRLOCK",
				  atomic_load(&s.waiter_result));
	if (s.mode == 0 &&
	    (s.waiter_status & TOFUTEX_STATUS_HOW_MASK) !=
	    TOFUTEX_STATUS_OWNER_DIED)
		return child_fail(45, "the waiter took the word, not from a dead writer; status",
				  (int)s.waiter_status);
	return 0;
}

/*
 * A writer exits holding its write lock while a writer waits, and its
 * TID goes to a new thread of the process; the waiter is held in its
 * loop's debug window meanwhile. The new thread does not hold the dead
 * writer's lock: _i = 0, its RWUNLOCK fails with EPERM and the waiter
 * takes the lock over (OWNER_DIED); 1, its WRLOCK takes the lock over
 * (OWNER_DIED) rather than failing with EDEADLK; 2, it does so while the
 * waiter, which judged the writer dead already, is held before its own
 * take-over (the window after the judgement), and holds the lock past
 * it: the waiter must not take the word too (the new thread's word reads
 * the value the waiter judged), and gets it after the new thread's
 * unlock.
 */
START_TEST(test_writer_tid_reused)
{
	int mode = _i, r;

	ck_assert_msg(access(PARAM_DIR "debug_window_id", W_OK) == 0,
		      "the module has no debug windows: build it with TOFUTEX_DEBUG=y (the test harness does)");
	if (access("/proc/sys/kernel/ns_last_pid", F_OK) && errno == ENOENT) {
		printf("SKIPPED: test_writer_tid_reused needs /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE) to hand a TID on: nothing checked\n");
		return;
	}
	ck_assert_msg(unshare(CLONE_NEWPID) == 0, "unshare(CLONE_NEWPID): %s",
		      strerror(errno));
	r = run_child(wreuse_child, &mode, 3 * TEST_WAIT_NS);
	window_close();
	ck_assert_msg(r == 0,
		      "dead writer's TID reused by a thread that %s: child %d (-1: hung; see its output)",
		      mode == 2 ? "locks and holds" : mode ? "locks" : "unlocks",
		      r);
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

/* The parameters tests change, saved before and restored after. */
static const char *const saved_names[] = {
	"spin_ns", "handoff_ns", "owner_check_ns",
};
#define NR_SAVED	(sizeof(saved_names) / sizeof(saved_names[0]))
static unsigned long saved_values[NR_SAVED];
static bool saved[NR_SAVED];

static void params_save(void)
{
	unsigned int i;

	for (i = 0; i < NR_SAVED; i++)
		saved[i] = param_read(saved_names[i], &saved_values[i]);
}

static void params_restore(void)
{
	unsigned int i;

	for (i = 0; i < NR_SAVED; i++)
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

/*
 * Wait for a fault on @u's range to be reported: its call waits now, or
 * has waited: a fault whose thread stopped waiting (its deadline passed
 * before this thread ran: a slow guest) is taken back, and the read finds
 * nothing, having been told of it.
 */
static void uffd_page_await_fault(struct uffd_page *u)
{
	struct pollfd pfd = { .fd = u->uffd, .events = POLLIN };
	struct uffd_msg msg;
	ssize_t n;

	ck_assert_msg(poll(&pfd, 1, (int)(TEST_WAIT_NS / NSEC_PER_MSEC)) == 1,
		      "no fault on the userfaultfd page");
	n = read(u->uffd, &msg, sizeof(msg));
	if (n < 0 && errno == EAGAIN)
		return;
	ck_assert_int_eq(n, (ssize_t)sizeof(msg));
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
	uint64_t timeout;	/* ns from the call on; 0: none */
	atomic_int result;	/* -1 while in the call */
	atomic_uint tid;
	pthread_t thread;
};

static void *uffd_locker_main(void *p)
{
	struct uffd_locker *l = p;
	int r;

	atomic_store(&l->tid, test_gettid());
	if (l->cmd == TOFUTEX_IOC_RWUNLOCK)
		r = raw_unlock_cmd(l->fd, l->cmd, l->word);
	else
		r = raw_lock_cmd(l->fd, l->cmd, l->word,
				 l->timeout ? now_ns() + l->timeout : 0, NULL);
	atomic_store(&l->result, r);
	return NULL;
}

static void uffd_locker_start(struct uffd_locker *l, unsigned long cmd,
			      uint32_t *word, uint64_t timeout)
{
	l->fd = dev_open();
	l->cmd = cmd;
	l->word = word;
	l->timeout = timeout;
	atomic_store(&l->result, -1);
	atomic_store(&l->tid, 0);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, uffd_locker_main,
					l), 0);
}

static const char *const lock_names[] = { "LOCK", "RDLOCK", "WRLOCK" };
static const unsigned long lock_cmds[] = {
	TOFUTEX_IOC_LOCK, TOFUTEX_IOC_RDLOCK, TOFUTEX_IOC_WRLOCK,
};

/*
 * lock_cmds[@i] on the missing page, with @timeout (0: none); @signal:
 * SIGUSR1 it once the fault waits.
 */
static int uffd_lock(int i, uint64_t timeout, bool signal)
{
	struct uffd_page u;
	struct uffd_locker l;
	bool ended;

	install_sigusr1(false);
	uffd_page_setup(&u);
	uffd_locker_start(&l, lock_cmds[i], u.page, timeout);
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
	int r = uffd_lock(_i, FAULT_TIMEOUT_NS, false);

	ck_assert_msg(r == ETIMEDOUT, "%s: %d (%s), want ETIMEDOUT",
		      lock_names[_i], r, strerror(r));
}
END_TEST

/*
 * RDLOCK or WRLOCK (_i) waiting on a live writer, whose word's page goes
 * while it sleeps (MINOR mode: every access then waits for the page): its
 * deadline ends the call, the withdrawal it makes as it leaves included,
 * not the page's coming back.
 */
START_TEST(test_rwlock_leaves_at_deadline_page_gone)
{
	unsigned long cmd = lock_cmds[1 + _i];
	struct uffd_locker l;
	struct uffd_page m;
	bool ended, ok;

	uffd_minor_setup(&m, test_gettid());
	uffd_page_serve(&m);
	uffd_locker_start(&l, cmd, m.page, 300 * NSEC_PER_MSEC);
	WAIT_UNTIL(ok, atomic_load(&l.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&l.tid), cmd, lock_names[1 + _i]);
	ck_assert_int_eq(madvise(m.page, m.size, MADV_DONTNEED), 0);
	ended = join_within(l.thread, NULL, TEST_WAIT_NS);
	if (!ended) {
		uffd_page_serve(&m);
		ck_assert(join_within(l.thread, NULL, TEST_WAIT_NS));
	}
	uffd_page_teardown(&m);
	close(l.fd);
	ck_assert_msg(ended, "%s past its deadline waited for the page until it was served",
		      lock_names[1 + _i]);
	ck_assert_int_eq(atomic_load(&l.result), ETIMEDOUT);
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
	struct tofutex_stats before, after;
	struct uffd_page m;
	struct uffd_locker l;
	bool ended;
	int r;

	install_sigusr1(false);
	uffd_minor_setup(&m, held);
	before = stats_get(TOFUTEX_STATS_PROCESS);
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
	/* One call, however often it was restarted. */
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.unlock_calls - before.unlock_calls, 1);
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
	tcase_add_unchecked_fixture(tc, params_save, params_restore);
	tcase_add_test(tc, test_owner_record_after_release);
	tcase_add_loop_test(tc, test_writer_tid_reused, 0, 3);
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
	tcase_add_loop_test(tc, test_rwlock_leaves_at_deadline_page_gone, 0, 2);
	tcase_add_test(tc, test_rwunlock_fault_signal_restarts);
	tcase_add_test(tc, test_requeue_fault_signal_restarts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lock_bounds_suite());
}
