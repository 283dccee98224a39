// SPDX-License-Identifier: GPL-2.0
/*
 * Isolation between processes: one process cannot
 * read, block, wake or free another process's state through tofutex.
 *
 * - Two processes with lock and wait words at the same virtual address
 *   (mapped before fork(), or mapped by each at one fixed address) contend
 *   independently: a lock held in one, with a waiter asleep on it, does not
 *   block the other locking its own copy; an UNLOCK or WAKE in one does not
 *   wake the other's waiters.
 * - A descriptor passed over a Unix socket (SCM_RIGHTS) fails every ioctl
 *   with EBADFD in the receiver, and the sender's words, waiters and
 *   statistics are untouched.
 * - Per-process statistics count only the process's own calls.
 *
 * Every cross-process step is bounded: pipe reads poll with a timeout, a
 * waiter that should stay asleep has a deadline far beyond the test's
 * steps, and the child is killed if it does not finish.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME
#define PAGE_SZ		4096UL

/*
 * A TID no task can have: pid_max is at most 2^22 (PID_MAX_LIMIT). Below
 * RW_SHARED, bit 29: a word with it is a reader/writer lock held by
 * readers, which LOCK refuses (EINVAL) rather than taking it over.
 */
#define NO_SUCH_TID	TOFUTEX_RW_COUNT_MASK

/* ---- Raw calls: 0 or the errno value ---- */

static int dev_open_raw(void)
{
	return open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

static int raw_lock(int fd, uint32_t *w, uint64_t deadline, uint32_t *status)
{
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.flags = TOFUTEX_LOCK_DEADLINE;
	a.deadline_ns = deadline;
	if (ioctl(fd, TOFUTEX_IOC_LOCK, &a))
		return errno;
	if (status)
		*status = a.status;
	return 0;
}

static int raw_unlock(int fd, uint32_t *w, uint32_t *woken)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	if (ioctl(fd, TOFUTEX_IOC_UNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
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

static int raw_stats(int fd, uint32_t scope, struct tofutex_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->flags = scope;
	return ioctl(fd, TOFUTEX_IOC_STATS, st) ? errno : 0;
}

static uint64_t features_of(int fd)
{
	struct tofutex_version v;

	memset(&v, 0, sizeof(v));
	if (ioctl(fd, TOFUTEX_IOC_VERSION, &v))
		return 0;
	return v.features;
}

static bool cas(uint32_t *w, uint32_t old, uint32_t new)
{
	return __atomic_compare_exchange_n(w, &old, new, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* ---- Tokens between the two processes, bounded ---- */

static bool send_token(int fd, char c)
{
	return write(fd, &c, 1) == 1;
}

/* Read one byte within TEST_WAIT_NS; '\0' on timeout, EOF or error. */
static char recv_token(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t end = now_ns() + TEST_WAIT_NS;
	char c;

	while (now_ns() < end) {
		int r = poll(&p, 1, 100);

		if (r < 0 && errno != EINTR)
			return '\0';
		if (r > 0)
			return read(fd, &c, 1) == 1 ? c : '\0';
	}
	return '\0';
}

/*
 * Child reports: the first failed check is written to the report pipe and
 * the child exits 1; the parent prints it.
 */
static int child_report_fd = -1;

#define CHILD_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			dprintf(child_report_fd, "child, line %d: ",	\
				__LINE__);				\
			dprintf(child_report_fd, __VA_ARGS__);		\
			_exit(1);					\
		}							\
	} while (0)

/* Reap @pid within the bound (killing it otherwise); check it exited 0. */
static void reap_child(pid_t pid, int report)
{
	char msg[512] = "";
	int status = 0;
	ssize_t n;
	bool ok;

	WAIT_UNTIL(ok, waitpid(pid, &status, WNOHANG) == pid,
		   2 * TEST_WAIT_NS);
	if (!ok) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	n = read(report, msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	ck_assert_msg(ok, "child hung: %s", msg);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child failed (status 0x%x): %s", status, msg);
}

/* ---- Threads asleep in LOCK or WAIT ---- */

struct sleeper {
	int fd;
	uint32_t *word;
	bool wait;		/* WAIT for *word == 0, else LOCK */
	atomic_bool done;
	int ret;
	uint32_t status;
	uint32_t word_after;
	pthread_t thread;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	uint64_t deadline = now_ns() + 4 * TEST_WAIT_NS;

	if (s->wait) {
		s->ret = raw_wait(s->fd, s->word, 0, deadline);
	} else {
		s->ret = raw_lock(s->fd, s->word, deadline, &s->status);
		s->word_after = word_load(s->word);
		if (!s->ret && !cas(s->word, test_gettid(), 0))
			raw_unlock(s->fd, s->word, NULL);
	}
	atomic_store(&s->done, true);
	return NULL;
}

static int sleeper_start(struct sleeper *s, int fd, uint32_t *word, bool wait)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->word = word;
	s->wait = wait;
	return pthread_create(&s->thread, NULL, sleeper_main, s);
}

/* Poll until the process has @n live states (its sleepers are queued). */
static bool live_states_reach(int fd, uint64_t n)
{
	struct tofutex_stats st;
	bool ok;

	WAIT_UNTIL(ok, raw_stats(fd, TOFUTEX_STATS_PROCESS, &st) == 0 &&
		       st.live_states == n, TEST_WAIT_NS);
	return ok;
}

/*
 * Poll until @word holds @want. A LOCK sleeper's state exists from its
 * first spin; it sets WAITERS only when its spin budget runs out while the
 * owner, polling here, keeps running.
 */
static bool word_reaches(const uint32_t *word, uint32_t want)
{
	bool ok;

	WAIT_UNTIL(ok, word_load(word) == want, TEST_WAIT_NS);
	return ok;
}

/* ---- Lock and wait words at the same virtual address ---- */

/*
 * The side of the same-address test both processes run: own the lock word
 * (taken while the other process already holds its copy), put one LOCK
 * sleeper on it and, with wait/wake, one WAIT sleeper on the wait word.
 */
struct side {
	int fd;
	uint32_t *lock_word;
	uint32_t *wait_word;
	bool waitwake;
	struct sleeper locker, waiter;
};

/* Returns NULL or a description of what went wrong. */
static const char *side_setup(struct side *s)
{
	uint32_t tid = test_gettid(), status = 0;
	uint64_t states = 1;

	s->fd = dev_open_raw();
	if (s->fd < 0)
		return "open";
	s->waitwake = features_of(s->fd) & TOFUTEX_FEAT_WAITWAKE;
	/* Free in this process, whatever the other one did with its copy. */
	if (word_load(s->lock_word) != 0)
		return "lock word not 0 before locking";
	if (raw_lock(s->fd, s->lock_word, now_ns() + TEST_WAIT_NS, &status))
		return "LOCK of the own copy failed";
	if (word_load(s->lock_word) != tid ||
	    (status & TOFUTEX_STATUS_HOW_MASK) != TOFUTEX_STATUS_STOLEN)
		return "LOCK did not take the free own copy at once";
	if (sleeper_start(&s->locker, s->fd, s->lock_word, false))
		return "pthread_create";
	if (s->waitwake) {
		if (sleeper_start(&s->waiter, s->fd, s->wait_word, true))
			return "pthread_create";
		states = 2;
	}
	if (!live_states_reach(s->fd, states))
		return "sleepers did not queue";
	if (!word_reaches(s->lock_word, tid | WAITERS))
		return "lock word lacks WAITERS with a sleeper queued";
	return NULL;
}

/* Nothing of this side moved while the other process worked. */
static const char *side_untouched(struct side *s)
{
	if (atomic_load(&s->locker.done))
		return "the LOCK sleeper returned";
	if (s->waitwake && atomic_load(&s->waiter.done))
		return "the WAIT sleeper returned";
	if (word_load(s->lock_word) != (test_gettid() | WAITERS))
		return "the lock word changed";
	if (!live_states_reach(s->fd, s->waitwake ? 2 : 1))
		return "live states changed";
	return NULL;
}

/* Release: this side's own sleepers, and only they, are woken. */
static const char *side_release(struct side *s)
{
	uint32_t woken = 0;
	long n;

	if (raw_unlock(s->fd, s->lock_word, &woken) || woken != 1)
		return "UNLOCK did not wake the own LOCK sleeper";
	if (!join_within(s->locker.thread, NULL, TEST_WAIT_NS))
		return "the LOCK sleeper did not return";
	if (s->locker.ret ||
	    (s->locker.word_after & TID_MASK) == 0 ||
	    (s->locker.word_after & OWNER_DIED))
		return "the LOCK sleeper did not get the lock cleanly";
	if (s->waitwake) {
		/* One woken: the other process's sleeper is not ours. */
		n = fd_wake(s->fd, s->wait_word, INT32_MAX);
		if (n != 1)
			return "WAKE did not wake exactly the own sleeper";
		if (!join_within(s->waiter.thread, NULL, TEST_WAIT_NS))
			return "the WAIT sleeper did not return";
		if (s->waiter.ret)
			return "the WAIT sleeper did not return 0";
	}
	if (!live_states_reach(s->fd, 0))
		return "live states left";
	return NULL;
}

#define SAME_ADDR_MAP_BEFORE_FORK	0
#define SAME_ADDR_MAP_FIXED		1

/*
 * _i: SAME_ADDR_MAP_BEFORE_FORK (the child's copy of the page) or
 * SAME_ADDR_MAP_FIXED (each process maps its own page at one address).
 *
 * Order: the parent locks its copy and queues sleepers (A); the child,
 * while that holds, locks its copy and queues sleepers (B); the parent
 * checks nothing of its own moved, releases its lock and wakes its wait
 * word (C), waking only its own sleepers; the child checks that none of
 * its sleepers moved, then releases its own (D).
 */
START_TEST(test_same_address)
{
	int p2c[2], c2p[2], report[2];
	struct side side;
	const char *err;
	uint32_t *page;
	pid_t pid;
	char t;

	page = mmap(NULL, PAGE_SZ, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(page != MAP_FAILED);
	if (_i == SAME_ADDR_MAP_FIXED)
		ck_assert_int_eq(munmap(page, PAGE_SZ), 0);
	ck_assert_int_eq(pipe(p2c), 0);
	ck_assert_int_eq(pipe(c2p), 0);
	ck_assert_int_eq(pipe(report), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (_i == SAME_ADDR_MAP_FIXED) {
		void *p = mmap(page, PAGE_SZ, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_FIXED_NOREPLACE, -1, 0);

		if (pid == 0 && p != page)
			_exit(3);
		ck_assert_msg(p == page, "mmap at %p: %p", (void *)page, p);
	}
	memset(&side, 0, sizeof(side));
	side.lock_word = &page[0];
	side.wait_word = &page[1];

	if (pid == 0) {
		child_report_fd = report[1];
		CHILD_CHECK(recv_token(p2c[0]) == 'A', "no token A\n");
		err = side_setup(&side);
		CHILD_CHECK(!err, "%s\n", err);
		CHILD_CHECK(send_token(c2p[1], 'B'), "send B\n");
		CHILD_CHECK(recv_token(p2c[0]) == 'C', "no token C\n");
		/* The parent's UNLOCK and WAKE at this address are done. */
		err = side_untouched(&side);
		CHILD_CHECK(!err, "after the parent's release: %s\n", err);
		err = side_release(&side);
		CHILD_CHECK(!err, "%s\n", err);
		_exit(0);
	}

	close(report[1]);
	err = side_setup(&side);
	ck_assert_msg(!err, "parent: %s", err);
	ck_assert(send_token(p2c[1], 'A'));
	t = recv_token(c2p[0]);
	if (t != 'B') {
		kill(pid, SIGKILL);
		reap_child(pid, report[0]);
		ck_abort_msg("child did not lock its copy: token '%c'", t);
	}
	err = side_untouched(&side);
	ck_assert_msg(!err, "parent, after the child locked: %s", err);
	err = side_release(&side);
	ck_assert_msg(!err, "parent: %s", err);
	ck_assert(send_token(p2c[1], 'C'));
	reap_child(pid, report[0]);
	close(side.fd);
	munmap(page, PAGE_SZ);
}
END_TEST

/* ---- A descriptor passed over a Unix socket ---- */

static bool send_fd(int sock, int fd)
{
	char byte = 'F';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1;
}

/* Receive a descriptor within the bound; -1 on failure. */
static int recv_fd(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	int fd;

	if (poll(&p, 1, (int)(TEST_WAIT_NS / NSEC_PER_MSEC)) != 1)
		return -1;
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * Every ioctl through @fd, with arguments naming @word (a word at the
 * same address as the opener's held lock) and @other; each must fail with
 * EBADFD and leave the argument structs as they were. Returns NULL or the
 * failed call.
 */
static const char *all_ioctls_ebadfd(int fd, uint32_t *word, uint32_t *other)
{
	static char msg[128];
	union any_arg a, copy;
	static const unsigned int cmds[] = {
		TOFUTEX_IOC_VERSION, TOFUTEX_IOC_LOCK, TOFUTEX_IOC_UNLOCK,
		TOFUTEX_IOC_WAIT, TOFUTEX_IOC_WAKE, TOFUTEX_IOC_SWAP,
		TOFUTEX_IOC_STATS, TOFUTEX_IOC_STATS, TOFUTEX_IOC_REQUEUE,
	};
	unsigned int i;
	long r;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(&a, 0, sizeof(a));
		switch (cmds[i]) {
		case TOFUTEX_IOC_LOCK:
			a.lock.uaddr = (uintptr_t)word;
			a.lock.flags = TOFUTEX_LOCK_DEADLINE;
			a.lock.deadline_ns = now_ns() + TEST_WAIT_NS;
			a.lock.status = 0x5a5a5a5a;
			break;
		case TOFUTEX_IOC_UNLOCK:
			a.unlock.uaddr = (uintptr_t)word;
			a.unlock.woken = 0x5a5a5a5a;
			break;
		case TOFUTEX_IOC_WAIT:
			a.wait.uaddr = (uintptr_t)other;
			a.wait.val = word_load(other);
			a.wait.flags = TOFUTEX_WAIT_DEADLINE;
			a.wait.deadline_ns = now_ns() + TEST_WAIT_NS;
			break;
		case TOFUTEX_IOC_WAKE:
			a.wake.uaddr = (uintptr_t)other;
			a.wake.count = INT32_MAX;
			break;
		case TOFUTEX_IOC_SWAP:
			a.swap.wait_uaddr = (uintptr_t)other;
			a.swap.wake_uaddr = (uintptr_t)other;
			a.swap.val = word_load(other);
			a.swap.flags = TOFUTEX_WAIT_DEADLINE;
			a.swap.deadline_ns = now_ns() + TEST_WAIT_NS;
			a.swap.woken = 0x5a5a5a5a;
			break;
		case TOFUTEX_IOC_REQUEUE:
			a.requeue.uaddr = (uintptr_t)other;
			a.requeue.lock_uaddr = (uintptr_t)word;
			a.requeue.val = word_load(other);
			a.requeue.wake_count = 1;
			a.requeue.requeue_count = INT32_MAX;
			a.requeue.woken = 0x5a5a5a5a;
			a.requeue.requeued = 0x5a5a5a5a;
			break;
		case TOFUTEX_IOC_STATS:
			a.stats.flags = i == 6 ? TOFUTEX_STATS_PROCESS :
						 TOFUTEX_STATS_GLOBAL;
			a.stats.lock_calls = 0x5a5a5a5a5a5a5a5aULL;
			a.stats.live_states = 0x5a5a5a5a5a5a5a5aULL;
			break;
		default:
			a.ver.abi_version = 0x5a5a5a5a;
			break;
		}
		copy = a;
		errno = 0;
		r = ioctl(fd, cmds[i], &a);
		if (r != -1 || errno != EBADFD) {
			snprintf(msg, sizeof(msg),
				 "ioctl 0x%08x: %ld, errno %d (%s), want EBADFD",
				 cmds[i], r, errno, strerror(errno));
			return msg;
		}
		if (memcmp(&a, &copy, sizeof(a))) {
			snprintf(msg, sizeof(msg),
				 "ioctl 0x%08x wrote its argument", cmds[i]);
			return msg;
		}
	}
	return NULL;
}

START_TEST(test_scm_rights)
{
	static uint32_t word, other;
	struct tofutex_stats before, after;
	struct sleeper locker;
	int sv[2], report[2], fd, cfd, status;
	uint32_t tid = test_gettid();
	const char *err;
	pid_t pid;
	char t;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	ck_assert_int_eq(pipe(report), 0);
	/* Fork first: the child gets the descriptor only over the socket. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		child_report_fd = report[1];
		close(sv[0]);
		fd = recv_fd(sv[1]);
		CHILD_CHECK(fd >= 0, "no descriptor received\n");
		/*
		 * The child's copies of the words are 0: as a table lookup
		 * by address in the parent's table, LOCK would block on the
		 * parent's held lock and UNLOCK would release it.
		 */
		err = all_ioctls_ebadfd(fd, &word, &other);
		CHILD_CHECK(!err, "received descriptor: %s\n", err);
		close(fd);
		/* And the other way round: the child's own descriptor. */
		cfd = dev_open_raw();
		CHILD_CHECK(cfd >= 0, "open: %s\n", strerror(errno));
		CHILD_CHECK(send_fd(sv[1], cfd), "send_fd\n");
		/* Keep it open until the parent is done with it. */
		(void)recv_token(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	close(report[1]);

	/* The parent holds a lock with a sleeper queued on it. */
	fd = dev_open_raw();
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(raw_lock(fd, &word, now_ns() + TEST_WAIT_NS, NULL),
			 0);
	ck_assert_int_eq(sleeper_start(&locker, fd, &word, false), 0);
	ck_assert(live_states_reach(fd, 1));
	ck_assert(word_reaches(&word, tid | WAITERS));
	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS, &before), 0);

	ck_assert(send_fd(sv[0], fd));
	cfd = recv_fd(sv[0]);
	if (cfd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	ck_assert_msg(cfd >= 0, "no descriptor from the child");
	err = all_ioctls_ebadfd(cfd, &word, &other);
	ck_assert_msg(!err, "the child's descriptor in the parent: %s", err);
	close(cfd);
	t = 'F';
	ck_assert_int_eq(write(sv[0], &t, 1), 1);
	reap_child(pid, report[0]);

	/* Nothing of the parent's moved. */
	ck_assert_msg(!atomic_load(&locker.done), "the parent's sleeper returned %d",
		      locker.ret);
	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS, &after), 0);
	ck_assert_uint_eq(after.lock_calls, before.lock_calls);
	ck_assert_uint_eq(after.unlock_calls, before.unlock_calls);
	ck_assert_uint_eq(after.wait_calls, before.wait_calls);
	ck_assert_uint_eq(after.wake_calls, before.wake_calls);
	ck_assert_uint_eq(after.swap_calls, before.swap_calls);
	ck_assert_uint_eq(after.live_states, 1);

	ck_assert_int_eq(raw_unlock(fd, &word, NULL), 0);
	ck_assert(join_within(locker.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(locker.ret, 0);
	ck_assert(live_states_reach(fd, 0));
	close(fd);
	close(sv[0]);
}
END_TEST

/* ---- Per-process statistics ---- */

/* @n takeovers of a dead owner's lock and releases: n LOCK, n UNLOCK. */
static int dead_owner_rounds(int fd, uint32_t *w, unsigned int n)
{
	uint32_t tid = test_gettid();
	unsigned int i;
	int r;

	for (i = 0; i < n; i++) {
		__atomic_store_n(w, NO_SUCH_TID, __ATOMIC_RELEASE);
		r = raw_lock(fd, w, now_ns() + TEST_WAIT_NS, NULL);
		if (r)
			return r;
		if (word_load(w) != (tid | OWNER_DIED))
			return -1;
		r = raw_unlock(fd, w, NULL);
		if (r)
			return r;
	}
	return 0;
}

START_TEST(test_stats_per_process)
{
	static uint32_t word;
	const unsigned int n = 100, m = 37;
	struct tofutex_stats p0, p1, g0, g1, c0, c1;
	int p2c[2], c2p[2], report[2], fd, r;
	pid_t pid;
	char t;

	ck_assert_int_eq(pipe(p2c), 0);
	ck_assert_int_eq(pipe(c2p), 0);
	ck_assert_int_eq(pipe(report), 0);
	fd = dev_open_raw();
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dead_owner_rounds(fd, &word, 3), 0);
	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS, &p0), 0);
	ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_GLOBAL, &g0), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		child_report_fd = report[1];
		close(fd);
		fd = dev_open_raw();
		CHILD_CHECK(fd >= 0, "open\n");
		/* A new process starts from zero: nothing of the parent's. */
		CHILD_CHECK(raw_stats(fd, TOFUTEX_STATS_PROCESS, &c0) == 0,
			    "stats\n");
		CHILD_CHECK(c0.lock_calls == 0 && c0.unlock_calls == 0 &&
			    c0.owner_deaths == 0 && c0.live_states == 0,
			    "fresh process stats: lock %llu unlock %llu deaths %llu\n",
			    (unsigned long long)c0.lock_calls,
			    (unsigned long long)c0.unlock_calls,
			    (unsigned long long)c0.owner_deaths);
		r = dead_owner_rounds(fd, &word, n);
		CHILD_CHECK(r == 0, "child rounds: %d\n", r);
		CHILD_CHECK(raw_stats(fd, TOFUTEX_STATS_PROCESS, &c0) == 0,
			    "stats\n");
		CHILD_CHECK(c0.lock_calls == n && c0.unlock_calls == n &&
			    c0.owner_deaths == n,
			    "child stats: lock %llu unlock %llu deaths %llu, want %u\n",
			    (unsigned long long)c0.lock_calls,
			    (unsigned long long)c0.unlock_calls,
			    (unsigned long long)c0.owner_deaths, n);
		CHILD_CHECK(send_token(c2p[1], 'A'), "send\n");
		/* The parent's calls now do not show here. */
		CHILD_CHECK(recv_token(p2c[0]) == 'B', "no token B\n");
		CHILD_CHECK(raw_stats(fd, TOFUTEX_STATS_PROCESS, &c1) == 0,
			    "stats\n");
		CHILD_CHECK(c1.lock_calls == n && c1.unlock_calls == n &&
			    c1.owner_deaths == n,
			    "child stats after the parent's calls: lock %llu\n",
			    (unsigned long long)c1.lock_calls);
		_exit(0);
	}
	close(report[1]);
	t = recv_token(c2p[0]);
	if (t != 'A')
		kill(pid, SIGKILL);
	else {
		ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS, &p1), 0);
		ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_GLOBAL, &g1), 0);
		ck_assert_uint_eq(p1.lock_calls, p0.lock_calls);
		ck_assert_uint_eq(p1.unlock_calls, p0.unlock_calls);
		ck_assert_uint_eq(p1.owner_deaths, p0.owner_deaths);
		/* The global scope does see them. */
		ck_assert_uint_ge(g1.lock_calls, g0.lock_calls + n);
		ck_assert_uint_ge(g1.owner_deaths, g0.owner_deaths + n);
		ck_assert_int_eq(dead_owner_rounds(fd, &word, m), 0);
		ck_assert_int_eq(raw_stats(fd, TOFUTEX_STATS_PROCESS, &p1), 0);
		ck_assert_uint_eq(p1.lock_calls, p0.lock_calls + m);
		ck_assert(send_token(p2c[1], 'B'));
	}
	reap_child(pid, report[0]);
	ck_assert_msg(t == 'A', "child did not report");
	close(fd);
}
END_TEST

static Suite *security_suite(void)
{
	Suite *s = suite_create("security");
	TCase *tc;

	tc = tcase_create("isolation");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_same_address, SAME_ADDR_MAP_BEFORE_FORK,
			    SAME_ADDR_MAP_FIXED + 1);
	tcase_add_test(tc, test_scm_rights);
	tcase_add_test(tc, test_stats_per_process);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(security_suite());
}
