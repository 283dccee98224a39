// SPDX-License-Identifier: GPL-2.0
/*
 * What the reader/writer lock tests (test_rwlock.c, test_rw_reserve.c)
 * share: the raw ABI of uapi/tofutex.h written out from its description
 * (one cmpxchg per uncontended operation, not libtofutex's code, so that
 * these tests check the ABI and the library's own tests the library),
 * threads blocked in RDLOCK or WRLOCK, a relay of readers that never
 * leaves the word free, and a timed call in a thread of its own.
 */
#ifndef TOFUTEX_TESTS_RWLOCK_ABI_H
#define TOFUTEX_TESTS_RWLOCK_ABI_H

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "common.h"
#include "params.h"

#define WAITERS		TOFUTEX_WAITERS
#define SHARED		TOFUTEX_RW_SHARED
#define HANDOFF		TOFUTEX_RW_HANDOFF
#define COUNT_MASK	TOFUTEX_RW_COUNT_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/* A TID no task can have: pid_max is at most 2^22 (PID_MAX_LIMIT). */
#define NO_SUCH_TID	(COUNT_MASK - 1)

static inline int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

static inline bool cas(uint32_t *w, uint32_t old, uint32_t new)
{
	return __atomic_compare_exchange_n(w, &old, new, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* RDLOCK or WRLOCK: 0 or the errno value. */
static inline int ioc_lock(int fd, unsigned long cmd, uint64_t uaddr, uint32_t flags,
		    uint64_t deadline_ns, uint32_t *status)
{
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.flags = flags;
	a.deadline_ns = deadline_ns;
	if (ioctl(fd, cmd, &a))
		return errno;
	if (status)
		*status = a.status;
	return 0;
}

/* RWUNLOCK: 0 or the errno value. */
static inline int ioc_unlock(int fd, uint64_t uaddr, uint32_t *woken)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	if (ioctl(fd, TOFUTEX_IOC_RWUNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
}

/* A deadline far enough away that only a bug reaches it. */
static inline uint64_t far(void)
{
	return now_ns() + 3 * TEST_WAIT_NS;
}

/* The uapi's user-space read lock: one cmpxchg, else RDLOCK. */
static inline int rd_lock(int fd, uint32_t *w, uint32_t *status)
{
	uint32_t v = word_load(w);

	if (status)
		*status = 0;
	if (v == 0 && cas(w, 0, SHARED | 1))
		return 0;
	if ((v & SHARED) && !(v & HANDOFF) && (v & COUNT_MASK) &&
	    (v & COUNT_MASK) != COUNT_MASK && cas(w, v, v + 1))
		return 0;
	return ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)w,
			TOFUTEX_LOCK_DEADLINE, far(), status);
}

/* The uapi's user-space write lock. */
static inline int wr_lock(int fd, uint32_t *w, uint32_t tid, uint32_t *status)
{
	if (status)
		*status = 0;
	if (cas(w, 0, tid))
		return 0;
	return ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)w,
			TOFUTEX_LOCK_DEADLINE, far(), status);
}

/* The uapi's user-space unlock of either kind. */
static inline int rw_unlock(int fd, uint32_t *w, uint32_t tid, uint32_t *woken)
{
	uint32_t v = word_load(w), n;

	if (woken)
		*woken = 0;
	for (;;) {
		n = v & COUNT_MASK;
		if (v == tid && cas(w, tid, 0))
			return 0;
		if (!(v & SHARED) || n == 0 || (n == 1 && v != (SHARED | 1)))
			break;
		if (__atomic_compare_exchange_n(w, &v, n > 1 ? v - 1 : 0,
						false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}
	return ioc_unlock(fd, (uintptr_t)w, woken);
}

static inline struct tofutex_stats raw_stats(int fd)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_STATS, &st) == 0,
		      "TOFUTEX_IOC_STATS: %s", strerror(errno));
	return st;
}

static inline void assert_no_live_states(int fd)
{
	struct tofutex_stats st = raw_stats(fd);

	ck_assert_msg(st.live_states == 0, "live_states = %llu, want 0",
		      (unsigned long long)st.live_states);
}

static inline uint32_t how(uint32_t status)
{
	return status & TOFUTEX_STATUS_HOW_MASK;
}

/* The end of a test: @word left free, no state left, @fd closed. */
static inline void rw_done(int fd, uint32_t *word)
{
	ck_assert_uint_eq(word_load(word), 0);
	assert_no_live_states(fd);
	close(fd);
}

/* ---- A thread blocked in RDLOCK or WRLOCK ---- */

struct locker {
	pthread_t thread;
	int fd;
	uint32_t *word;
	bool write;
	uint32_t flags;
	uint64_t deadline;
	_Atomic uint32_t tid;
	atomic_bool done;
	atomic_bool release;
	atomic_bool may_release;
	int ret;
	uint32_t status;
	uint32_t word_after;
	int unlock_ret;
};

static inline void *locker_main(void *arg)
{
	struct locker *l = arg;
	uint32_t tid = test_gettid();
	struct tofutex_lock a;

	atomic_store(&l->tid, tid);
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)l->word;
	a.flags = l->flags;
	a.deadline_ns = l->deadline;
	l->ret = ioctl(l->fd, l->write ? TOFUTEX_IOC_WRLOCK :
		       TOFUTEX_IOC_RDLOCK, &a) ? errno : 0;
	l->status = a.status;
	l->word_after = word_load(l->word);
	atomic_store(&l->done, true);
	if (l->ret || !atomic_load(&l->release))
		return NULL;
	while (!atomic_load(&l->may_release))
		sleep_ns(100 * NSEC_PER_USEC);
	l->unlock_ret = rw_unlock(l->fd, l->word, tid, NULL);
	return NULL;
}

/*
 * Start a thread in RDLOCK or WRLOCK on @word, held so that it must
 * wait, with TOFUTEX_LOCK_DEADLINE at @deadline and @flags, and wait until
 * it sleeps there. @release: it unlocks again once may_release is set.
 */
static inline void locker_start_until(struct locker *l, int fd,
				      uint32_t *word, bool write, bool release,
				      uint32_t flags, uint64_t deadline)
{
	unsigned long cmd = write ? TOFUTEX_IOC_WRLOCK : TOFUTEX_IOC_RDLOCK;
	bool ok;

	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->word = word;
	l->write = write;
	l->flags = TOFUTEX_LOCK_DEADLINE | flags;
	l->deadline = deadline;
	atomic_store(&l->release, release);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, locker_main, l), 0);
	WAIT_UNTIL(ok, atomic_load(&l->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&l->tid), cmd, write ? "WRLOCK" : "RDLOCK");
	ck_assert_msg(!atomic_load(&l->done), "lock returned %d while held",
		      l->ret);
}

/* The same, with no deadline to speak of. */
static inline void locker_start_flags(struct locker *l, int fd, uint32_t *word,
				      bool write, bool release, uint32_t flags)
{
	locker_start_until(l, fd, word, write, release, flags, far());
}

static inline void locker_start(struct locker *l, int fd, uint32_t *word, bool write,
			 bool release)
{
	locker_start_flags(l, fd, word, write, release, 0);
}

static inline void locker_join(struct locker *l)
{
	ck_assert_msg(join_within(l->thread, NULL, 3 * TEST_WAIT_NS),
		      "locker did not return");
}

/* Wait until locker @l has returned from its lock call, and check it. */
static inline void locker_has_it(struct locker *l, const char *who)
{
	bool ok;

	WAIT_UNTIL(ok, atomic_load(&l->done), TEST_WAIT_NS);
	ck_assert_msg(ok, "%s did not get the lock", who);
	ck_assert_msg(l->ret == 0, "%s: %d (%s)", who, l->ret,
		      strerror(l->ret));
}

/* Let locker @l release the lock it holds, and wait for it to. */
static inline void locker_release(struct locker *l)
{
	atomic_store(&l->may_release, true);
	locker_join(l);
	ck_assert_int_eq(l->unlock_ret, 0);
}

/* ---- handoff_ns, and reserving writers a signal took out ---- */

/* handoff_ns and spin_ns, saved before a test of this group changes them. */
static unsigned long saved_handoff_ns, saved_spin_ns;
static bool handoff_saved, spin_saved;

static inline void handoff_save(void)
{
	tfail_reset();
	handoff_saved = param_read("handoff_ns", &saved_handoff_ns);
	spin_saved = param_read("spin_ns", &saved_spin_ns);
}

static inline void handoff_restore(void)
{
	window_close();
	if (handoff_saved)
		param_write("handoff_ns", saved_handoff_ns);
	if (spin_saved)
		param_write("spin_ns", saved_spin_ns);
}

/*
 * Queue a TOFUTEX_LOCK_RW_RESERVE writer on the reader-held @word and take
 * it out of WRLOCK with SIGUSR1 (EINTR: no SA_RESTART). It keeps its
 * reservation: as far as the kernel can tell, it is in its handler.
 */
static inline void reserving_writer_signalled_out(int fd, uint32_t *word)
{
	struct locker w;

	install_sigusr1(false);
	locker_start_flags(&w, fd, word, true, false, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_uint_eq(word_load(word), SHARED | HANDOFF | WAITERS | 1);
	ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
	locker_join(&w);
	ck_assert_msg(w.ret == EINTR, "WRLOCK interrupted: %d (%s)", w.ret,
		      strerror(w.ret));
}

/*
 * reserving_writer_signalled_out(), with reader @r queued behind the
 * writer (RDLOCK until @deadline, unlocking when told) before the signal:
 * the word's state, and the time the writer left with it, outlive the
 * writer's call.
 */
static inline void
reserving_writer_signalled_out_beside(int fd, uint32_t *word,
						  struct locker *r,
						  uint64_t deadline)
{
	struct locker w;

	install_sigusr1(false);
	locker_start_flags(&w, fd, word, true, false, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_uint_eq(word_load(word), SHARED | HANDOFF | WAITERS | 1);
	locker_start_until(r, fd, word, false, true, 0, deadline);
	ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
	locker_join(&w);
	ck_assert_msg(w.ret == EINTR, "WRLOCK interrupted: %d (%s)", w.ret,
		      strerror(w.ret));
}

/* Two reader threads relaying the read lock: see test_rwlock.c. */
struct relay {
	int fd;
	uint32_t word;
	_Atomic uint32_t tid[2];
	atomic_ulong taken[2];
	atomic_bool stop;
	atomic_bool writer_has_it;
};

struct relay_arg {
	struct relay *rl;
	int me;
};

static inline void *relay_main(void *arg)
{
	struct relay_arg *ra = arg;
	struct relay *rl = ra->rl;
	int me = ra->me, other = 1 - me;
	unsigned long seen;
	bool yielded;

	atomic_store(&rl->tid[me], test_gettid());
	while (!atomic_load(&rl->stop) && !tfailed()) {
		TCHECK(rd_lock(rl->fd, &rl->word, NULL) == 0, "relay rdlock");
		TCHECK(!atomic_load(&rl->writer_has_it),
		       "a reader got in while the writer held the word");
		/*
		 * The other's count before this one's: read after, it may
		 * already count the other's next lock, taken after it saw
		 * this one's, and each would wait for the other for ever.
		 */
		seen = atomic_load(&rl->taken[other]);
		atomic_fetch_add(&rl->taken[me], 1);
		for (;;) {
			yielded = atomic_load(&rl->tid[other]) &&
				  asleep_in_ioctl(atomic_load(&rl->tid[other]),
						  TOFUTEX_IOC_RDLOCK);
			if (yielded || atomic_load(&rl->taken[other]) > seen ||
			    atomic_load(&rl->stop))
				break;
			sleep_ns(50 * NSEC_PER_USEC);
		}
		TCHECK(rw_unlock(rl->fd, &rl->word, 0, NULL) == 0,
		       "relay unlock, word 0x%08x", word_load(&rl->word));
	}
	return NULL;
}

/* Start the two relay readers on @rl and wait until the relay runs. */
static inline void relay_start(struct relay *rl, struct relay_arg ra[2],
			pthread_t t[2])
{
	bool ok;
	int i;

	for (i = 0; i < 2; i++) {
		ra[i].rl = rl;
		ra[i].me = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, relay_main,
						&ra[i]), 0);
	}
	/* The relay runs: both have taken the lock a few times. */
	WAIT_UNTIL(ok, atomic_load(&rl->taken[0]) > 3 &&
		   atomic_load(&rl->taken[1]) > 3, TEST_WAIT_NS);
	ck_assert_msg(ok, "the reader relay did not start");
}

/* ---- Deadlines ---- */

/*
 * A timed RDLOCK or WRLOCK in a thread of its own, so that it is not the
 * writer the main thread is.
 */
struct timed {
	int fd;
	uint32_t *word;
	unsigned long cmd;
	uint32_t flags;
	uint64_t deadline;
	clockid_t clock;	/* the deadline's */
	int ret;
	uint64_t ended;		/* @clock when the call returned */
};

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline void *timed_main(void *arg)
{
	struct timed *t = arg;

	t->ret = ioc_lock(t->fd, t->cmd, (uintptr_t)t->word, t->flags,
			  t->deadline, NULL);
	t->ended = clock_ns(t->clock);
	return NULL;
}


#endif /* TOFUTEX_TESTS_RWLOCK_ABI_H */
