// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel loops that something outside the call keeps going: each must
 * end, or give way to a signal, and a page that is merely absent must be
 * waited for, never reported as EFAULT.
 *
 * - unlock_changing_word_signal: UNLOCK of a word whose value keeps
 *   changing under its cmpxchg retries without end (a debug window,
 *   module/debug.c, holds each pass until the word changed). A signal
 *   must still be handled, the call restarting after the handler (seen
 *   in the context the handler is given: the statistics count a
 *   restarted call once). The
 *   caller and the thread that signals it share one CPU, so under
 *   preempt=none the signaller runs only if the retry loop offers the CPU.
 * - wake_requeueing_waiters: waiters that WAIT again as soon as they are
 *   woken, and a WAKE of UINT32_MAX held between its batches until the
 *   woken ones are asleep again (the WAKE_BATCH window): WAKE must wake at
 *   most the waiters queued when it began, and return.
 * - rwlock_changing_word_*: RDLOCK on a word whose writer TID keeps
 *   changing between two live threads, WRLOCK on one whose reader count
 *   keeps moving: the top waiter's retries (its spins, the cmpxchg that
 *   sets WAITERS or RW_HANDOFF) must end on a signal (EINTR without
 *   SA_RESTART) and on SIGKILL. The caller and the signalling thread
 *   share one CPU, as for UNLOCK.
 * - fault_in_uffd_*: LOCK on a word whose page userfaultfd keeps absent
 *   must wait for the page, take the word once the page is provided, and
 *   die on SIGKILL while it waits.
 *
 * Debug windows are closed again in an unchecked teardown, which runs
 * even when a test failed.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "common.h"
#include "params.h"

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/*
 * A thread that keeps a call going (changing the word, waking waiters)
 * stops on its own after this long, so that a call stuck on it ends and
 * the test can report it.
 */
#define DRIVER_LIFE_NS	TEST_WAIT_NS

/* ---- Raw calls ---- */

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

static int raw_lock(int fd, uint32_t *w)
{
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	return ioctl(fd, TOFUTEX_IOC_LOCK, &a) ? errno : 0;
}

static int raw_unlock(int fd, uint32_t *w)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	return ioctl(fd, TOFUTEX_IOC_UNLOCK, &a) ? errno : 0;
}

static int raw_wait(int fd, uint32_t *w, uint32_t val)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.val = val;
	return ioctl(fd, TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

/* Run thread @t on CPU @cpu only; the guests have two. */
static void pin(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(pthread_setaffinity_np(t, sizeof(set), &set), 0);
}

static void unpin(pthread_t t)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	pthread_setaffinity_np(t, sizeof(set), &set);
}

/*
 * Fork a child that runs @child_main(@arg, @up), where @up is the write
 * end of a pipe on which it reports one byte when it is set up; wait for
 * that byte (in *@ch, 0 when none came) and return the child. A child
 * that did not report 'B' is killed.
 */
static pid_t child_start(void (*child_main)(long arg, int up), long arg,
			 char *ch)
{
	int up[2];
	struct pollfd pf;
	pid_t child;

	*ch = 0;
	ck_assert_int_eq(pipe(up), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(up[0]);
		child_main(arg, up[1]);
		_exit(1);
	}
	close(up[1]);
	pf = (struct pollfd){ .fd = up[0], .events = POLLIN };
	if (poll(&pf, 1, TEST_WAIT_NS / NSEC_PER_MSEC) != 1 ||
	    read(up[0], ch, 1) != 1)
		*ch = 0;
	close(up[0]);
	if (*ch != 'B')
		kill(child, SIGKILL);
	return child;
}

/*
 * SIGKILL @child and reap it within TEST_WAIT_NS. Return: whether it was
 * reaped; its wait status in *@status.
 */
static bool child_kill_reap(pid_t child, int *status)
{
	uint64_t end = now_ns() + TEST_WAIT_NS;
	pid_t w = 0;

	*status = 0;
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	while (now_ns() < end) {
		w = waitpid(child, status, WNOHANG);
		if (w)
			break;
		sleep_ns(NSEC_PER_MSEC);
	}
	return w == child;
}

/* ---- UNLOCK on a word that keeps changing ---- */

struct unlock_loop {
	int fd;
	uint32_t word;
	atomic_uint tid;		/* the unlocker's */
	atomic_bool go, stop_unlock, stop_change, gave_up;
	atomic_ulong issued;		/* UNLOCK calls the unlocker made */
	atomic_ulong changes;
	pthread_t unlocker, changer;
};

/* UNLOCKs the word again and again: each call counted before it is made. */
static void *unlocker_main(void *p)
{
	struct unlock_loop *u = p;
	bool ok;

	atomic_store(&u->tid, test_gettid());
	WAIT_UNTIL(ok, atomic_load(&u->go), TEST_WAIT_NS);
	while (ok && !atomic_load(&u->stop_unlock)) {
		atomic_fetch_add(&u->issued, 1);
		raw_unlock(u->fd, &u->word);
	}
	return NULL;
}

/*
 * Cycles the word through every value UNLOCK acts on: the unlocker's TID
 * or none, with each combination of WAITERS and OWNER_DIED. A pass that
 * read one of them finds another at its cmpxchg and retries (unless the
 * cycle came round to the same value in between: then UNLOCK returns and
 * the unlocker calls it again).
 */
static void *changer_main(void *p)
{
	struct unlock_loop *u = p;
	uint32_t tid = atomic_load(&u->tid), i = 0, v;
	uint64_t end = now_ns() + DRIVER_LIFE_NS;

	while (!atomic_load(&u->stop_change)) {
		i++;
		v = (i & 4 ? 0 : tid) | (i & 1 ? TOFUTEX_WAITERS : 0) |
		    (i & 2 ? TOFUTEX_OWNER_DIED : 0);
		__atomic_store_n(&u->word, v, __ATOMIC_RELEASE);
		if ((atomic_fetch_add(&u->changes, 1) & 0xfff) == 0 &&
		    now_ns() > end) {
			atomic_store(&u->gave_up, true);
			break;
		}
	}
	return NULL;
}

/* SIGUSR1 handlers that ran with a system call to be restarted after them. */
static atomic_int restarts_seen;

/*
 * Count SIGUSR1 (sig_count), and whether the interrupted thread is to
 * restart a system call: the kernel then hands the handler a context
 * whose instruction pointer is back on the syscall instruction and whose
 * rax holds the call's number again (x86-64's handle_signal() for
 * -ERESTARTNOINTR and friends), where a call that returned has its result
 * in rax and the next instruction in rip (arm64: pc back on "svc #0").
 */
static void on_sigusr1_restart(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
#if defined(__x86_64__)
	const unsigned char *ip =
		(const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	bool restart = uc->uc_mcontext.gregs[REG_RAX] == SYS_ioctl &&
		       ip[0] == 0x0f && ip[1] == 0x05;	/* syscall */
#elif defined(__aarch64__)
	/*
	 * arm64 (arch/arm64/kernel/signal.c): a call to be restarted has
	 * pc moved back onto its "svc #0"; x8 keeps the call's number
	 * either way.
	 */
	const uint32_t *ip = (const uint32_t *)uc->uc_mcontext.pc;
	bool restart = uc->uc_mcontext.regs[8] == SYS_ioctl &&
		       ip[0] == 0xd4000001;		/* svc #0 */
#else
#error "on_sigusr1_restart: no restart check for this architecture"
#endif

	(void)sig;
	(void)si;
	atomic_fetch_add(&sig_count, 1);
	if (restart)
		atomic_fetch_add(&restarts_seen, 1);
}

static void install_sigusr1_restart(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigusr1_restart;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&sig_count, 0);
	atomic_store(&restarts_seen, 0);
}

START_TEST(test_unlock_changing_word_signal)
{
	struct unlock_loop u;
	bool restarted = false, ok;
	unsigned long changes;
	uint64_t end;

	memset(&u, 0, sizeof(u));
	u.fd = dev_open();
	install_sigusr1_restart();
	ck_assert_int_eq(pthread_create(&u.unlocker, NULL, unlocker_main, &u),
			 0);
	WAIT_UNTIL(ok, atomic_load(&u.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert_int_eq(pthread_create(&u.changer, NULL, changer_main, &u),
			 0);
	pin(u.changer, 1);
	pin(u.unlocker, 0);
	pin(pthread_self(), 0);
	WAIT_UNTIL(ok, atomic_load(&u.changes) > 0, TEST_WAIT_NS);
	ck_assert(ok);

	/* Each pass waits in its window until the word changed. */
	window_open(getpid(), WINDOW_UNLOCK_UNQUEUED, 100 * NSEC_PER_MSEC);
	atomic_store(&u.go, true);
	WAIT_UNTIL(ok, atomic_load(&u.issued) > 0, TEST_WAIT_NS);
	ck_assert(ok);
	end = now_ns() + TEST_WAIT_NS;
	while (!restarted && !atomic_load(&u.gave_up) && now_ns() < end) {
		pthread_kill(u.unlocker, SIGUSR1);
		sleep_ns(NSEC_PER_MSEC);
		restarted = atomic_load(&restarts_seen) > 0;
	}
	ok = !atomic_load(&u.gave_up);
	changes = atomic_load(&u.changes);

	atomic_store(&u.stop_unlock, true);
	atomic_store(&u.stop_change, true);
	ck_assert(join_within(u.changer, NULL, TEST_WAIT_NS));
	/* The word is still now: the last UNLOCK releases it. */
	ck_assert_msg(join_within(u.unlocker, NULL, TEST_WAIT_NS),
		      "UNLOCK did not return once the word stopped changing");
	window_close();
	unpin(pthread_self());
	ck_assert_msg(restarted && ok,
		      "UNLOCK retrying on a word that kept changing (%lu changes) was never interrupted by a signal (%d delivered) and restarted%s",
		      changes, atomic_load(&sig_count),
		      ok ? "" : ", until the word stopped changing");
	close(u.fd);
}
END_TEST

/* ---- RDLOCK and WRLOCK on a word that keeps changing ---- */

struct rw_churn {
	int fd;
	bool write;
	uint32_t word;
	uint32_t vals[2];
	atomic_uint tid;		/* the changer's */
	atomic_bool stop, gave_up, in_call, done;
	atomic_ulong changes;
	int ret;
	pthread_t changer, locker;
};

/*
 * Alternates the word between @vals until told to stop, or gives up after
 * DRIVER_LIFE_NS; leaves it free, so that a lock still in the kernel then
 * takes it and returns.
 */
static void *rw_changer_main(void *p)
{
	struct rw_churn *c = p;
	uint64_t end = now_ns() + DRIVER_LIFE_NS;
	uint32_t i = 0;

	atomic_store(&c->tid, test_gettid());
	while (!atomic_load(&c->stop)) {
		__atomic_store_n(&c->word, c->vals[i++ & 1], __ATOMIC_RELEASE);
		if ((atomic_fetch_add(&c->changes, 1) & 0xfff) == 0 &&
		    now_ns() > end) {
			atomic_store(&c->gave_up, true);
			break;
		}
	}
	__atomic_store_n(&c->word, 0, __ATOMIC_RELEASE);
	return NULL;
}

/* One RDLOCK or WRLOCK without a deadline; its errno value in @ret. */
static void *rw_locker_main(void *p)
{
	struct rw_churn *c = p;
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)&c->word;
	atomic_store(&c->in_call, true);
	c->ret = ioctl(c->fd, c->write ? TOFUTEX_IOC_WRLOCK :
		       TOFUTEX_IOC_RDLOCK, &a) ? errno : 0;
	atomic_store(&c->done, true);
	return NULL;
}

/*
 * Start the changer on CPU 1: RDLOCK (@write false) sees a writer, the
 * changer itself or the caller's thread, that changes with every store;
 * WRLOCK sees one reader, then two, then one. Neither can be taken.
 */
static void rw_churn_start(struct rw_churn *c, bool write)
{
	bool ok;

	memset(c, 0, sizeof(*c));
	c->fd = dev_open();
	c->write = write;
	c->vals[0] = TOFUTEX_RW_SHARED | 1;
	c->vals[1] = TOFUTEX_RW_SHARED | 2;
	if (!write) {
		c->vals[0] = test_gettid();
		c->vals[1] = test_gettid();
	}
	c->word = c->vals[0];
	ck_assert_int_eq(pthread_create(&c->changer, NULL, rw_changer_main, c),
			 0);
	pin(c->changer, 1);
	WAIT_UNTIL(ok, atomic_load(&c->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	if (!write)
		c->vals[1] = atomic_load(&c->tid);
	WAIT_UNTIL(ok, atomic_load(&c->changes) > 0, TEST_WAIT_NS);
	ck_assert(ok);
}

START_TEST(test_rwlock_changing_word_signal)
{
	static struct rw_churn c;
	unsigned long changes;
	bool gave_up;
	uint64_t end;

	install_sigusr1(false);
	pin(pthread_self(), 0);
	rw_churn_start(&c, _i);
	ck_assert_int_eq(pthread_create(&c.locker, NULL, rw_locker_main, &c),
			 0);
	pin(c.locker, 0);
	end = now_ns() + TEST_WAIT_NS;
	while (!atomic_load(&c.done) && !atomic_load(&c.gave_up) &&
	       now_ns() < end) {
		if (atomic_load(&c.in_call))
			pthread_kill(c.locker, SIGUSR1);
		sleep_ns(NSEC_PER_MSEC);
	}
	gave_up = atomic_load(&c.gave_up);
	changes = atomic_load(&c.changes);
	atomic_store(&c.stop, true);
	ck_assert(join_within(c.changer, NULL, TEST_WAIT_NS));
	ck_assert_msg(join_within(c.locker, NULL, TEST_WAIT_NS),
		      "%s did not return once the word stopped changing",
		      _i ? "WRLOCK" : "RDLOCK");
	unpin(pthread_self());
	ck_assert_msg(!gave_up && c.ret == EINTR,
		      "%s on a word that kept changing (%lu changes): %s after %d signals%s",
		      _i ? "WRLOCK" : "RDLOCK", changes, strerror(c.ret),
		      atomic_load(&sig_count),
		      gave_up ? ", only once the word stopped changing" : "");
	close(c.fd);
}
END_TEST

/*
 * The child of the SIGKILL test: a churn, and a lock in a thread of its
 * own that cannot return (the main thread's TID is one of the writers).
 */
static void rw_churn_child(long wr, int up)
{
	static struct rw_churn c;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(2);
	rw_churn_start(&c, wr);
	if (pthread_create(&c.locker, NULL, rw_locker_main, &c))
		_exit(3);
	while (!atomic_load(&c.in_call))
		sleep_ns(NSEC_PER_MSEC);
	if (write(up, "B", 1) != 1)
		_exit(4);
	pthread_join(c.locker, NULL);
	_exit(5);
}

START_TEST(test_rwlock_changing_word_sigkill)
{
	int status;
	pid_t child;
	bool reaped;
	char ch;

	pin(pthread_self(), 0);
	child = child_start(rw_churn_child, _i, &ch);
	ck_assert_msg(ch == 'B', "the child could not set up ('%c')", ch);
	/* Let it enter the call and retry there, then kill it. */
	sleep_ns(20 * NSEC_PER_MSEC);
	reaped = child_kill_reap(child, &status);
	unpin(pthread_self());
	ck_assert_msg(reaped,
		      "a SIGKILLed %s stayed in the kernel on a word that kept changing",
		      _i ? "WRLOCK" : "RDLOCK");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the child was not killed: status %#x", status);
}
END_TEST

/* ---- WAKE while its waiters keep queuing again ---- */

/* More waiters than one of WAKE's batches (8, module/waitwake.c). */
#define REQUEUERS	16

struct requeue_loop {
	int fd;
	uint32_t word;
	atomic_bool stop, stop_observer, gave_up;
	atomic_uint tids[REQUEUERS];
	atomic_uint started;
	pthread_t threads[REQUEUERS], observer;
};

/* WAITs on the word until told to stop, again as soon as it is woken. */
static void *requeuer_main(void *p)
{
	struct requeue_loop *r = p;
	unsigned int i = atomic_fetch_add(&r->started, 1);
	uint32_t v;

	atomic_store(&r->tids[i], test_gettid());
	while (!atomic_load(&r->stop)) {
		v = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
		raw_wait(r->fd, &r->word, v);
	}
	return NULL;
}

static bool all_asleep(struct requeue_loop *r)
{
	unsigned int i;

	for (i = 0; i < REQUEUERS; i++)
		if (!asleep_in_ioctl(atomic_load(&r->tids[i]),
				     TOFUTEX_IOC_WAIT))
			return false;
	return true;
}

/*
 * Changes the word whenever every waiter is asleep in WAIT, which ends a
 * WAKE's wait in its window: so WAKE takes its next batch only once the
 * batch it woke has queued again. After DRIVER_LIFE_NS it gives up and
 * stops the waiters, so that a WAKE that would go on forever ends.
 */
static void *observer_main(void *p)
{
	struct requeue_loop *r = p;
	uint64_t end = now_ns() + DRIVER_LIFE_NS;

	while (!atomic_load(&r->stop_observer)) {
		if (now_ns() > end) {
			atomic_store(&r->gave_up, true);
			atomic_store(&r->stop, true);
			break;
		}
		if (all_asleep(r))
			__atomic_add_fetch(&r->word, 1, __ATOMIC_RELEASE);
		sleep_ns(NSEC_PER_MSEC);
	}
	return NULL;
}

START_TEST(test_wake_requeueing_waiters)
{
	struct requeue_loop r;
	unsigned int i, left;
	bool ok, gave_up;
	long woken;

	memset(&r, 0, sizeof(r));
	r.fd = dev_open();
	for (i = 0; i < REQUEUERS; i++)
		ck_assert_int_eq(pthread_create(&r.threads[i], NULL,
						requeuer_main, &r), 0);
	WAIT_UNTIL(ok, atomic_load(&r.started) == REQUEUERS, TEST_WAIT_NS);
	ck_assert(ok);
	WAIT_UNTIL(ok, all_asleep(&r), TEST_WAIT_NS);
	ck_assert_msg(ok, "the waiters never were all asleep in WAIT");

	window_open(getpid(), WINDOW_WAKE_BATCH, NSEC_PER_SEC);
	ck_assert_int_eq(pthread_create(&r.observer, NULL, observer_main, &r),
			 0);
	woken = fd_wake(r.fd, &r.word, UINT32_MAX);
	gave_up = atomic_load(&r.gave_up);
	window_close();

	atomic_store(&r.stop_observer, true);
	ck_assert(join_within(r.observer, NULL, TEST_WAIT_NS));
	atomic_store(&r.stop, true);
	for (i = 0, left = REQUEUERS; left && i < 1000; i++) {
		fd_wake(r.fd, &r.word, UINT32_MAX);
		while (left && join_within(r.threads[left - 1], NULL,
					   10 * NSEC_PER_MSEC))
			left--;
	}
	ck_assert_msg(!left, "%u waiters did not leave", left);

	ck_assert_msg(!gave_up,
		      "WAKE of UINT32_MAX was still waking waiters that kept queuing again after %llu s (returned %ld)",
		      DRIVER_LIFE_NS / NSEC_PER_SEC, woken);
	ck_assert_msg(woken >= 1 && woken <= REQUEUERS,
		      "WAKE woke %ld with %d waiters queued when it began",
		      woken, REQUEUERS);
	close(r.fd);
}
END_TEST

/* ---- A word whose page userfaultfd keeps absent ---- */

/*
 * One anonymous page, never touched, registered with a new userfaultfd
 * for missing-page faults, kernel ones included (root). @flags: O_NONBLOCK
 * for a userfaultfd to poll() (poll() reports a blocking one as an error
 * at once), or 0.
 * Return: the userfaultfd, or -errno (then *@page is not set).
 */
static int uffd_page(uint32_t **page, int flags)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct uffdio_register reg;
	struct uffdio_api api;
	void *p;
	int uffd, e;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | flags);
	if (uffd < 0)
		return -errno;
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	p = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ioctl(uffd, UFFDIO_API, &api) || p == MAP_FAILED)
		goto fail;
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = psz;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		goto fail;
	*page = p;
	return uffd;
fail:
	e = errno;
	close(uffd);
	return -e;
}

struct fault_locker {
	int fd;
	uint32_t *word;
	int done;			/* eventfd, or pipe to write "E" to */
	bool exit_on_return;		/* then _exit() the process */
	atomic_uint tid;
	atomic_int result;
	pthread_t thread;
};

static void *fault_locker_main(void *p)
{
	struct fault_locker *l = p;
	uint64_t one = 1;
	int r;

	atomic_store(&l->tid, test_gettid());
	r = raw_lock(l->fd, l->word);
	atomic_store(&l->result, r);
	if (l->exit_on_return) {
		if (write(l->done, "E", 1) != 1)
			_exit(5);
		_exit(4);
	}
	if (write(l->done, &one, sizeof(one)) != sizeof(one))
		atomic_store(&l->result, -1);
	return NULL;
}

START_TEST(test_fault_in_uffd_provided)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct fault_locker l;
	struct uffdio_copy copy;
	struct pollfd pf[2];
	struct uffd_msg msg;
	uint32_t *page;
	void *src;
	int uffd;

	uffd = uffd_page(&page, O_NONBLOCK);
	ck_assert_msg(uffd >= 0, "userfaultfd: %s", strerror(-uffd));
	memset(&l, 0, sizeof(l));
	l.fd = dev_open();
	l.word = page;
	l.done = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(l.done, 0);
	ck_assert_int_eq(pthread_create(&l.thread, NULL, fault_locker_main,
					&l), 0);

	/* Either LOCK faults on the page, or it returns. */
	pf[0] = (struct pollfd){ .fd = uffd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = l.done, .events = POLLIN };
	ck_assert_int_gt(poll(pf, 2, TEST_WAIT_NS / NSEC_PER_MSEC), 0);
	ck_assert_msg(!(pf[1].revents & POLLIN),
		      "LOCK on a word whose page is not present yet returned %s instead of waiting for the page",
		      strerror(atomic_load(&l.result)));
	ck_assert(pf[0].revents & POLLIN);
	ck_assert_int_eq(read(uffd, &msg, sizeof(msg)), sizeof(msg));
	ck_assert_int_eq(msg.event, UFFD_EVENT_PAGEFAULT);
	ck_assert_uint_eq(msg.arg.pagefault.address & ~(uint64_t)(psz - 1),
			  (uintptr_t)page);

	/* Provide the page, the lock word free in it. */
	src = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(src != MAP_FAILED);
	memset(&copy, 0, sizeof(copy));
	copy.dst = (uintptr_t)page;
	copy.src = (uintptr_t)src;
	copy.len = psz;
	ck_assert_msg(ioctl(uffd, UFFDIO_COPY, &copy) == 0,
		      "UFFDIO_COPY: %s", strerror(errno));
	ck_assert_msg(join_within(l.thread, NULL, TEST_WAIT_NS),
		      "LOCK did not return once its page was there");
	ck_assert_msg(atomic_load(&l.result) == 0, "LOCK: %s",
		      strerror(atomic_load(&l.result)));
	ck_assert_uint_eq(*page & TOFUTEX_TID_MASK, atomic_load(&l.tid));
	munmap(src, psz);
	munmap(page, psz);
	close(uffd);
	close(l.done);
	close(l.fd);
}
END_TEST

/*
 * The child's LOCK thread faults on the page; its main thread sees the
 * fault on the userfaultfd, tells the parent ("B") and never provides the
 * page. "E" instead: LOCK returned. Other bytes: set-up failed. (The
 * argument is child_start()'s, unused.)
 */
static void __attribute__((noreturn)) uffd_child(long unused, int up)
{
	struct fault_locker l;
	struct uffd_msg msg;
	uint32_t *page;
	int uffd;

	(void)unused;
	memset(&l, 0, sizeof(l));
	uffd = uffd_page(&page, 0);
	l.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	l.word = page;
	l.done = up;
	l.exit_on_return = true;
	if (uffd < 0 || l.fd < 0 ||
	    pthread_create(&l.thread, NULL, fault_locker_main, &l)) {
		if (write(up, "S", 1) != 1)
			_exit(5);
		_exit(2);
	}
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT || write(up, "B", 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

START_TEST(test_fault_in_uffd_sigkill)
{
	int status;
	pid_t child;
	char ch;

	child = child_start(uffd_child, 0, &ch);
	ck_assert_msg(ch != 'E',
		      "LOCK on a word whose page is not present yet returned instead of waiting for the page");
	ck_assert_msg(ch == 'B', "the child could not set up ('%c')", ch);

	/* LOCK waits in its fault-in: SIGKILL must end it. */
	ck_assert_msg(child_kill_reap(child, &status),
		      "a SIGKILLed LOCK stayed in the kernel, waiting for a page that is never provided");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the child was not killed: status %#x", status);
}
END_TEST

static Suite *loops_suite(void)
{
	Suite *s = suite_create("loops");
	TCase *tc;

	tc = tcase_create("windows");
	tcase_add_unchecked_fixture(tc, NULL, window_close);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_unlock_changing_word_signal);
	tcase_add_test(tc, test_wake_requeueing_waiters);
	suite_add_tcase(s, tc);

	tc = tcase_create("rwlock");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_rwlock_changing_word_signal, 0, 2);
	tcase_add_loop_test(tc, test_rwlock_changing_word_sigkill, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("fault_in");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_fault_in_uffd_provided);
	tcase_add_test(tc, test_fault_in_uffd_sigkill);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(loops_suite());
}
