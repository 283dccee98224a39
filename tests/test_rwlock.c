// SPDX-License-Identifier: GPL-2.0
/*
 * TO reader/writer locks through the raw ABI of uapi/tofutex.h
 * (TOFUTEX_IOC_RDLOCK, WRLOCK, RWUNLOCK): exclusion, readers sharing the
 * word, queued readers entering together, a writer that gets the lock
 * while readers keep arriving, deadlines on both clocks, signals, a
 * writer that exits holding the lock, a release that wakes one writer
 * (no herd), a reader that queued behind a starving writer, a writer
 * that gives up taking back its RW_HANDOFF, a writer that starves by its
 * own clock when another's RW_HANDOFF is withdrawn, a writer's spin on
 * readers that keep moving the count (bounded, then a sleep), and bad
 * input (words of another kind included).
 *
 * The user-space side is written here from the ABI's description (one
 * cmpxchg per uncontended operation), not taken from libtofutex, so that
 * these tests check the ABI and the library's own tests check the
 * library. The starving-writer group sets the module's handoff_ns and
 * puts it back.
 */
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

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

static bool cas(uint32_t *w, uint32_t old, uint32_t new)
{
	return __atomic_compare_exchange_n(w, &old, new, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* RDLOCK or WRLOCK: 0 or the errno value. */
static int ioc_lock(int fd, unsigned long cmd, uint64_t uaddr, uint32_t flags,
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
static int ioc_unlock(int fd, uint64_t uaddr, uint32_t *woken)
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
static uint64_t far(void)
{
	return now_ns() + 3 * TEST_WAIT_NS;
}

/* The uapi's user-space read lock: one cmpxchg, else RDLOCK. */
static int rd_lock(int fd, uint32_t *w, uint32_t *status)
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
static int wr_lock(int fd, uint32_t *w, uint32_t tid, uint32_t *status)
{
	if (status)
		*status = 0;
	if (cas(w, 0, tid))
		return 0;
	return ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)w,
			TOFUTEX_LOCK_DEADLINE, far(), status);
}

/* The uapi's user-space unlock of either kind. */
static int rw_unlock(int fd, uint32_t *w, uint32_t tid, uint32_t *woken)
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

static struct tofutex_stats raw_stats(int fd)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_STATS, &st) == 0,
		      "TOFUTEX_IOC_STATS: %s", strerror(errno));
	return st;
}

static void assert_no_live_states(int fd)
{
	struct tofutex_stats st = raw_stats(fd);

	ck_assert_msg(st.live_states == 0, "live_states = %llu, want 0",
		      (unsigned long long)st.live_states);
}

static uint32_t how(uint32_t status)
{
	return status & TOFUTEX_STATUS_HOW_MASK;
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

static void *locker_main(void *arg)
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
 * wait, with TOFUTEX_LOCK_DEADLINE and @flags, and wait until it sleeps
 * there. @release: it unlocks again once may_release is set.
 */
static void locker_start_flags(struct locker *l, int fd, uint32_t *word,
			       bool write, bool release, uint32_t flags)
{
	unsigned long cmd = write ? TOFUTEX_IOC_WRLOCK : TOFUTEX_IOC_RDLOCK;
	bool ok;

	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->word = word;
	l->write = write;
	l->flags = TOFUTEX_LOCK_DEADLINE | flags;
	l->deadline = far();
	atomic_store(&l->release, release);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, locker_main, l), 0);
	WAIT_UNTIL(ok, atomic_load(&l->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&l->tid), cmd, write ? "WRLOCK" : "RDLOCK");
	ck_assert_msg(!atomic_load(&l->done), "lock returned %d while held",
		      l->ret);
}

static void locker_start(struct locker *l, int fd, uint32_t *word, bool write,
			 bool release)
{
	locker_start_flags(l, fd, word, write, release, 0);
}

static void locker_join(struct locker *l)
{
	ck_assert_msg(join_within(l->thread, NULL, 3 * TEST_WAIT_NS),
		      "locker did not return");
}

/* ---- Uncontended and simple cases ---- */

START_TEST(test_rw_uncontended_kernel_paths)
{
	uint32_t tid = test_gettid(), word = 0, status = 0;
	int fd = dev_open();

	/* The kernel takes a free word as the user-space paths would. */
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  0, 0, &status), 0);
	ck_assert_uint_eq(word, SHARED | 1);
	ck_assert_uint_eq(how(status), TOFUTEX_STATUS_STOLEN);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  0, 0, &status), 0);
	ck_assert_uint_eq(word, SHARED | 2);
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
	ck_assert_uint_eq(word, SHARED | 1);
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
	ck_assert_uint_eq(word, 0);

	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  0, 0, &status), 0);
	ck_assert_uint_eq(word, tid);
	/* The writer itself: EDEADLK for either kind. */
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  0, 0, NULL), EDEADLK);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  0, 0, NULL), EDEADLK);
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
	ck_assert_uint_eq(word, 0);

	/* Stale WAITERS and RW_HANDOFF on a word nobody waits for go. */
	word = SHARED | HANDOFF | WAITERS | 1;
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
	ck_assert_uint_eq(word, 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* Writers exclude everyone, readers only writers; counted inside. */
#define EXCL_THREADS	4

struct excl {
	int fd;
	uint32_t word;
	atomic_int readers_in;
	atomic_int writers_in;
	atomic_ulong reads;
	atomic_ulong writes;
	unsigned long iters;
	unsigned long plain;	/* written by writers only, unsynchronised */
};

static void *excl_main(void *arg)
{
	struct excl *x = arg;
	uint32_t tid = test_gettid();
	unsigned long i, p;
	int r, w;

	for (i = 0; i < x->iters && !tfailed(); i++) {
		if ((i + tid) % 3 == 0) {
			TCHECK(wr_lock(x->fd, &x->word, tid, NULL) == 0,
			       "wrlock failed");
			w = atomic_fetch_add(&x->writers_in, 1);
			r = atomic_load(&x->readers_in);
			TCHECK(w == 0 && r == 0,
			       "writer inside with %d writers, %d readers", w, r);
			p = x->plain;
			busy_work(200);
			x->plain = p + 1;
			atomic_fetch_sub(&x->writers_in, 1);
			atomic_fetch_add(&x->writes, 1);
		} else {
			TCHECK(rd_lock(x->fd, &x->word, NULL) == 0,
			       "rdlock failed");
			atomic_fetch_add(&x->readers_in, 1);
			w = atomic_load(&x->writers_in);
			TCHECK(w == 0, "reader inside with %d writers", w);
			busy_work(200);
			atomic_fetch_sub(&x->readers_in, 1);
			atomic_fetch_add(&x->reads, 1);
		}
		TCHECK(rw_unlock(x->fd, &x->word, tid, NULL) == 0,
		       "unlock failed, word 0x%08x", word_load(&x->word));
	}
	return NULL;
}

START_TEST(test_rw_exclusion)
{
	pthread_t t[EXCL_THREADS];
	struct excl x;
	int i;

	memset(&x, 0, sizeof(x));
	x.fd = dev_open();
	x.iters = scaled(3000, 200);
	for (i = 0; i < EXCL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, excl_main, &x), 0);
	for (i = 0; i < EXCL_THREADS; i++)
		ck_assert_msg(join_within(t[i], NULL, 6 * TEST_WAIT_NS),
			      "thread %d did not finish", i);
	tfail_assert();
	ck_assert_uint_eq(x.plain, atomic_load(&x.writes));
	ck_assert_uint_eq(atomic_load(&x.reads) + atomic_load(&x.writes),
			  EXCL_THREADS * x.iters);
	ck_assert_uint_eq(word_load(&x.word), 0);
	assert_no_live_states(x.fd);
	close(x.fd);
}
END_TEST

/* A second reader joins a read-held word without waiting. */
START_TEST(test_rw_readers_share)
{
	uint32_t word = 0, status = 0;
	int fd = dev_open();

	ck_assert_int_eq(rd_lock(fd, &word, NULL), 0);
	/* Through the kernel, as a reader that found the word busy would. */
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE, 0, &status), 0);
	ck_assert_uint_eq(word, SHARED | 2);
	ck_assert_uint_eq(how(status), TOFUTEX_STATUS_STOLEN);
	/* A writer cannot: a past deadline fails at once. */
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE, 0, NULL), ETIMEDOUT);
	ck_assert_uint_eq(word, SHARED | 2);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word, 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * Readers queued behind a writer are given the lock together by its
 * unlock: each one returns with HANDOFF and they hold it at once.
 */
#define GROUP_READERS	3

START_TEST(test_rw_queued_readers_enter_together)
{
	uint32_t tid = test_gettid(), word = tid, woken = 0;
	struct locker r[GROUP_READERS];
	int fd = dev_open();
	bool ok;
	int i;

	for (i = 0; i < GROUP_READERS; i++)
		locker_start(&r[i], fd, &word, false, true);
	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	/* Nobody has released yet: all of them hold it. */
	WAIT_UNTIL(ok, atomic_load(&r[0].done) && atomic_load(&r[1].done) &&
		   atomic_load(&r[2].done), TEST_WAIT_NS);
	ck_assert_msg(ok, "the queued readers did not all enter");
	ck_assert_uint_eq(word_load(&word), SHARED | GROUP_READERS);
	for (i = 0; i < GROUP_READERS; i++) {
		ck_assert_int_eq(r[i].ret, 0);
		ck_assert_msg(how(r[i].status) == TOFUTEX_STATUS_HANDOFF,
			      "reader %d: status %#x, want HANDOFF", i,
			      r[i].status);
		atomic_store(&r[i].may_release, true);
	}
	for (i = 0; i < GROUP_READERS; i++) {
		locker_join(&r[i]);
		ck_assert_int_eq(r[i].unlock_ret, 0);
	}
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* Wait until locker @l has returned from its lock call, and check it. */
static void locker_has_it(struct locker *l, const char *who)
{
	bool ok;

	WAIT_UNTIL(ok, atomic_load(&l->done), TEST_WAIT_NS);
	ck_assert_msg(ok, "%s did not get the lock", who);
	ck_assert_msg(l->ret == 0, "%s: %d (%s)", who, l->ret,
		      strerror(l->ret));
}

/* Let locker @l release the lock it holds, and wait for it to. */
static void locker_release(struct locker *l)
{
	atomic_store(&l->may_release, true);
	locker_join(l);
	ck_assert_int_eq(l->unlock_ret, 0);
}

/* Thread @tid's voluntary context switches so far (its sleeps). */
static unsigned long voluntary_switches(uint32_t tid)
{
	char path[64], line[128];
	unsigned long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%u/status", tid);
	f = fopen(path, "re");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %lu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * No herd: a contended RWUNLOCK wakes one writer, the first; the writers
 * queued behind it sleep on, without a wake-up, until one of them is
 * first. (Granted readers are all woken: test_rw_queued_readers_enter_together.)
 */
START_TEST(test_rw_release_wakes_one_writer)
{
	uint32_t tid = test_gettid(), word = tid, woken = 0;
	struct locker w[3];
	unsigned long before;
	int fd = dev_open();
	bool ok;

	for (int i = 0; i < 3; i++)
		locker_start(&w[i], fd, &word, true, true);
	before = voluntary_switches(atomic_load(&w[2].tid));
	ck_assert_int_eq(rw_unlock(fd, &word, tid, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	locker_has_it(&w[0], "the first writer");
	/* The second is first now: woken, it finds the word held again. */
	WAIT_UNTIL(ok, (word_load(&word) & WAITERS) &&
		   asleep_in_ioctl(atomic_load(&w[1].tid), TOFUTEX_IOC_WRLOCK),
		   TEST_WAIT_NS);
	ck_assert(ok);
	ck_assert_msg(voluntary_switches(atomic_load(&w[2].tid)) == before,
		      "the third writer was woken by a release for the first");
	ck_assert(!atomic_load(&w[1].done) && !atomic_load(&w[2].done));
	for (int i = 0; i < 3; i++) {
		locker_release(&w[i]);
		if (i < 2)
			locker_has_it(&w[i + 1], "the next writer");
	}
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * The last reader out hands a sleeping writer the word, and a second
 * writer queued behind the first gets it from the first's unlock.
 */
START_TEST(test_rw_writers_after_readers)
{
	uint32_t word = SHARED | 1, woken = 0;
	struct locker w1, w2;
	int fd = dev_open();

	locker_start(&w1, fd, &word, true, true);
	locker_start(&w2, fd, &word, true, true);
	ck_assert_uint_eq(word_load(&word) & (SHARED | COUNT_MASK),
			  SHARED | 1);
	ck_assert(word_load(&word) & WAITERS);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	atomic_store(&w1.may_release, true);
	locker_join(&w1);
	ck_assert_int_eq(w1.ret, 0);
	ck_assert_uint_eq(w1.word_after & COUNT_MASK, atomic_load(&w1.tid));
	ck_assert_int_eq(w1.unlock_ret, 0);
	atomic_store(&w2.may_release, true);
	locker_join(&w2);
	ck_assert_int_eq(w2.ret, 0);
	ck_assert_uint_eq(w2.word_after & COUNT_MASK, atomic_load(&w2.tid));
	ck_assert_int_eq(w2.unlock_ret, 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * No writer starvation. Two reader threads relay the read lock so that
 * the count never falls to 0 by itself: each releases only once the other
 * has taken it again, or is blocked in RDLOCK. The writer must get the
 * word while the readers keep arriving: RW_HANDOFF makes the next reader
 * queue behind it, the count drains, and the last reader's RWUNLOCK
 * hands the writer the word.
 */
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

static void *relay_main(void *arg)
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
static void relay_start(struct relay *rl, struct relay_arg ra[2],
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

START_TEST(test_rw_writer_not_starved_by_reader_relay)
{
	struct relay_arg ra[2];
	uint32_t tid = test_gettid(), status = 0;
	unsigned long before[2];
	struct relay *rl;
	pthread_t t[2];
	bool ok;
	int i, r;

	rl = calloc(1, sizeof(*rl));
	ck_assert_ptr_nonnull(rl);
	rl->fd = dev_open();
	relay_start(rl, ra, t);
	before[0] = atomic_load(&rl->taken[0]);
	before[1] = atomic_load(&rl->taken[1]);

	r = ioc_lock(rl->fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&rl->word,
		     TOFUTEX_LOCK_DEADLINE, now_ns() + TEST_WAIT_NS, &status);
	ck_assert_msg(r == 0, "writer under a reader relay: %d (%s)", r,
		      strerror(r));
	atomic_store(&rl->writer_has_it, true);
	ck_assert_uint_eq(word_load(&rl->word) & (SHARED | COUNT_MASK), tid);
	ck_assert_msg(how(status) == TOFUTEX_STATUS_HANDOFF,
		      "writer status %#x, want HANDOFF", status);
	/*
	 * The relay never stops by itself, so the readers were still
	 * arriving; they queued behind the writer and go on after it.
	 */
	sleep_ns(2 * NSEC_PER_MSEC);
	atomic_store(&rl->writer_has_it, false);
	ck_assert_int_eq(rw_unlock(rl->fd, &rl->word, tid, NULL), 0);
	WAIT_UNTIL(ok, atomic_load(&rl->taken[0]) + atomic_load(&rl->taken[1]) >
		   before[0] + before[1] + 2 || tfailed(), TEST_WAIT_NS);
	ck_assert_msg(ok, "the reader relay did not go on after the writer");

	atomic_store(&rl->stop, true);
	for (i = 0; i < 2; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
			      "relay reader %d did not stop", i);
	tfail_assert();
	ck_assert_uint_eq(word_load(&rl->word), 0);
	assert_no_live_states(rl->fd);
	close(rl->fd);
	free(rl);
}
END_TEST

/* ---- A starving writer ---- */

/* handoff_ns, saved before a test of this group changes it. */
static unsigned long saved_handoff_ns;
static bool handoff_saved;

static void handoff_save(void)
{
	tfail_reset();
	handoff_saved = param_read("handoff_ns", &saved_handoff_ns);
}

static void handoff_restore(void)
{
	window_close();
	if (handoff_saved)
		param_write("handoff_ns", saved_handoff_ns);
}



/*
 * Queue a reader and then a writer on @word, which the caller holds for
 * writing, with handoff_ns 0 (the writer starves from the moment it
 * queues). Return: the descriptor they use.
 */
static int reader_then_starving_writer(uint32_t *word, struct locker *r1,
				       struct locker *w)
{
	int fd = dev_open();

	param_set("handoff_ns", 0);
	locker_start(r1, fd, word, false, true);
	locker_start(w, fd, word, true, true);
	return fd;
}

/*
 * A starving writer behind a queued reader: the unlock that grants the
 * reader the word puts RW_HANDOFF into it at once, so a reader arriving
 * before the writer ever ran again queues behind it, and the granted
 * reader's unlock hands the writer the word. handoff_ns is 0, so the
 * writer starves from the moment it queues; the granted reader is held
 * in the kernel before it leaves the queue (WINDOW_GIVEN) while the
 * word is looked at and the next reader arrives.
 */
START_TEST(test_rw_starving_writer_behind_granted_readers)
{
	uint32_t tid = test_gettid(), word = tid;
	struct locker r1, w, r2;
	int fd = reader_then_starving_writer(&word, &r1, &w);

	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	window_open(getpid(), WINDOW_GIVEN, NSEC_PER_SEC);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	ck_assert_msg(word_load(&word) == (SHARED | HANDOFF | WAITERS | 1),
		      "word 0x%08x after the grant to the reader: new readers could join ahead of the starving writer",
		      word_load(&word));

	/* A reader arriving now queues behind the writer. */
	locker_start(&r2, fd, &word, false, true);
	window_close();
	locker_has_it(&r1, "the queued reader");
	ck_assert_msg(!atomic_load(&w.done), "the writer got in beside a reader");

	locker_release(&r1);
	locker_has_it(&w, "the starving writer");
	ck_assert_msg(how(w.status) == TOFUTEX_STATUS_HANDOFF,
		      "writer status %#x, want HANDOFF", w.status);
	ck_assert_uint_eq(w.word_after & (SHARED | COUNT_MASK),
			  atomic_load(&w.tid));
	ck_assert_msg(!atomic_load(&r2.done),
		      "the later reader got in before the starving writer");

	locker_release(&w);
	locker_has_it(&r2, "the later reader");
	locker_release(&r2);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * The writer's bound: a reader queued behind a starving writer is not
 * given the word with the readers ahead of it, so that the writer waits
 * only for those. handoff_ns is 0: the writer starves from the moment it
 * queues.
 */
START_TEST(test_rw_reader_behind_starving_writer_waits)
{
	uint32_t tid = test_gettid(), word = tid;
	struct locker r1, w, r2;
	int fd = reader_then_starving_writer(&word, &r1, &w);

	locker_start(&r2, fd, &word, false, true);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	/* The grant is one cmpxchg: its count is the readers given the word. */
	ck_assert_msg(word_load(&word) == (SHARED | HANDOFF | WAITERS | 1),
		      "word 0x%08x after the grant: the reader behind the starving writer was given the word too",
		      word_load(&word));
	locker_has_it(&r1, "the reader ahead of the writer");
	locker_release(&r1);
	locker_has_it(&w, "the starving writer");
	ck_assert_msg(!atomic_load(&r2.done),
		      "the reader behind the writer got in before it");
	locker_release(&w);
	locker_has_it(&r2, "the reader behind the writer");
	locker_release(&r2);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A writer that began to starve while asleep, before it could raise
 * RW_HANDOFF itself: the last reader's RWUNLOCK judges it by its clock
 * and hands it the word. It queues while handoff_ns is a second, so that
 * it sleeps on the readers; then handoff_ns drops to 0.
 */
START_TEST(test_rw_sleeping_starved_writer_handed_off)
{
	uint32_t word = SHARED | 1, woken = 0;
	int fd = dev_open();
	struct locker w;

	param_set("handoff_ns", NSEC_PER_SEC);
	locker_start(&w, fd, &word, true, true);
	ck_assert_uint_eq(word_load(&word), SHARED | WAITERS | 1);
	param_set("handoff_ns", 0);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	locker_has_it(&w, "the writer");
	ck_assert_msg(how(w.status) == TOFUTEX_STATUS_HANDOFF,
		      "writer status %#x, want HANDOFF", w.status);
	locker_release(&w);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A writer that reserves the lock (TOFUTEX_LOCK_RW_RESERVE) starves from
 * the moment it queues, however long handoff_ns is (a second here): it
 * is asleep on the readers only with RW_HANDOFF raised, a reader that
 * comes after it queues, and the last reader's unlock hands it the word.
 */
START_TEST(test_rw_reserving_writer_starves_at_once)
{
	uint32_t word = SHARED | 1, woken = 0;
	int fd = dev_open();
	struct locker w, r;

	param_set("handoff_ns", NSEC_PER_SEC);
	locker_start_flags(&w, fd, &word, true, true, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_msg(word_load(&word) == (SHARED | HANDOFF | WAITERS | 1),
		      "word 0x%08x with the reserving writer asleep: it did not reserve the lock",
		      word_load(&word));
	locker_start(&r, fd, &word, false, true);
	ck_assert_uint_eq(word_load(&word), SHARED | HANDOFF | WAITERS | 1);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	locker_has_it(&w, "the writer");
	ck_assert_msg(how(w.status) == TOFUTEX_STATUS_HANDOFF,
		      "writer status %#x, want HANDOFF", w.status);
	ck_assert_msg(!atomic_load(&r.done), "the reader got in before the writer");
	locker_release(&w);
	locker_has_it(&r, "the reader");
	locker_release(&r);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A writer-preferring lock: readers that blocked behind the write lock
 * before a reserving writer queued still go after it. The write release
 * hands the word to the reserving writer (as glibc's write unlock goes to
 * a waiting writer of that kind), and the readers enter together after
 * its unlock.
 */
START_TEST(test_rw_reserving_writer_ahead_of_queued_readers)
{
	uint32_t tid = test_gettid(), word = tid, woken = 0;
	int fd = dev_open();
	struct locker r[2], w;

	for (int i = 0; i < 2; i++)
		locker_start(&r[i], fd, &word, false, true);
	locker_start_flags(&w, fd, &word, true, true, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	locker_has_it(&w, "the reserving writer");
	ck_assert_msg(how(w.status) == TOFUTEX_STATUS_HANDOFF,
		      "writer status %#x, want HANDOFF", w.status);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(!atomic_load(&r[i].done),
			      "reader %d got in before the reserving writer", i);
	locker_release(&w);
	for (int i = 0; i < 2; i++)
		locker_has_it(&r[i], "a reader");
	ck_assert_uint_eq(word_load(&word) & ~WAITERS, SHARED | 2);
	for (int i = 0; i < 2; i++)
		locker_release(&r[i]);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

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

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void *timed_main(void *arg)
{
	struct timed *t = arg;

	t->ret = ioc_lock(t->fd, t->cmd, (uintptr_t)t->word, t->flags,
			  t->deadline, NULL);
	t->ended = clock_ns(t->clock);
	return NULL;
}

START_TEST(test_rw_deadline)
{
	const int clocks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	uint32_t tid = test_gettid(), word;
	struct timed t;
	pthread_t th;
	int fd = dev_open();
	int c, k;

	for (c = 0; c < 2; c++) {
		for (k = 0; k < 2; k++) {
			/* A reader waits on our write lock, a writer on readers. */
			word = k ? tid : SHARED | 1;
			t = (struct timed) {
				.fd = fd, .word = &word,
				.cmd = k ? TOFUTEX_IOC_RDLOCK :
					   TOFUTEX_IOC_WRLOCK,
				.flags = TOFUTEX_LOCK_DEADLINE |
					 (c ? TOFUTEX_LOCK_CLOCK_REALTIME : 0),
				.clock = clocks[c],
				.deadline = clock_ns(clocks[c]) +
					    30 * NSEC_PER_MSEC,
			};
			ck_assert_int_eq(pthread_create(&th, NULL, timed_main,
							&t), 0);
			ck_assert(join_within(th, NULL, TEST_WAIT_NS));
			ck_assert_msg(t.ret == ETIMEDOUT,
				      "clock %d kind %d: %d (%s), want ETIMEDOUT",
				      c, k, t.ret, strerror(t.ret));
			/* Not before the deadline, on the deadline's clock. */
			ck_assert_msg(t.ended >= t.deadline,
				      "clock %d kind %d: ETIMEDOUT %llu ns before the deadline",
				      c, k,
				      (unsigned long long)(t.deadline - t.ended));
			/* A waiter that timed out leaves WAITERS at most. */
			ck_assert_uint_eq(word_load(&word) & ~WAITERS &
					  ~HANDOFF, k ? tid : SHARED | 1);
			ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word,
						    NULL), 0);
			ck_assert_uint_eq(word_load(&word), 0);
		}
	}
	/* CLOCK_REALTIME without a deadline is refused. */
	word = SHARED | 1;
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_CLOCK_REALTIME, 0, NULL),
			 EINVAL);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A writer that gives up (its deadline) after it raised RW_HANDOFF on a
 * reader-owned word takes the bits back: new readers may join the
 * readers again, in user space too, when nobody else waits. A starving
 * writer queued ahead of it keeps them: they are its. handoff_ns is 0, so
 * every writer starves from the moment it queues.
 */
START_TEST(test_rw_timed_out_writer_withdraws_handoff)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct timed t = {
		.fd = fd, .word = &word, .cmd = TOFUTEX_IOC_WRLOCK,
		.flags = TOFUTEX_LOCK_DEADLINE, .clock = CLOCK_MONOTONIC,
	};
	struct locker w;
	pthread_t th;
	int pass;

	param_set("handoff_ns", 0);
	for (pass = 0; pass < 2; pass++) {
		/* Second pass: a starving writer queued ahead of it. */
		if (pass)
			locker_start(&w, fd, &word, true, true);
		t.deadline = clock_ns(CLOCK_MONOTONIC) + 30 * NSEC_PER_MSEC;
		ck_assert_int_eq(pthread_create(&th, NULL, timed_main, &t), 0);
		ck_assert(join_within(th, NULL, TEST_WAIT_NS));
		ck_assert_int_eq(t.ret, ETIMEDOUT);
		if (!pass) {
			ck_assert_msg(word_load(&word) == (SHARED | 1),
				      "word 0x%08x after the writer gave up: new readers stay out",
				      word_load(&word));
			ck_assert_int_eq(rd_lock(fd, &word, NULL), 0);
			ck_assert_uint_eq(word_load(&word), SHARED | 2);
			ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
			continue;
		}
		ck_assert_msg(word_load(&word) == (SHARED | HANDOFF | WAITERS | 1),
			      "word 0x%08x: the writer behind took the starving writer's bits",
			      word_load(&word));
		ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
		locker_has_it(&w, "the starving writer");
		locker_release(&w);
	}
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* ---- Signals ---- */

/* A thread that moves the reader count up and down, ignoring RW_HANDOFF. */
struct churn {
	uint32_t *word;
	atomic_bool stop;
	atomic_ulong moves;
};

/* Busy for @ns: a read critical section, or the time between two. */
static void busy_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

#define CHURN_HOLD_NS	(5 * NSEC_PER_USEC)

/*
 * Each hold and each pause is far shorter than the module's spin budget
 * (spin_ns, 50 us): the count a spinning writer watches never stands
 * still that long.
 */
static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	uint32_t v;

	while (!atomic_load(&ch->stop)) {
		v = word_load(ch->word);
		if (!(v & SHARED) || !(v & COUNT_MASK) || !cas(ch->word, v, v + 1))
			continue;
		busy_ns(CHURN_HOLD_NS);
		do
			v = word_load(ch->word);
		while (!cas(ch->word, v, v - 1));
		atomic_fetch_add(&ch->moves, 1);
		busy_ns(CHURN_HOLD_NS);
	}
	return NULL;
}

/* Run thread @t on CPU @cpu, if there is one. */
static void pin_to(pthread_t t, int cpu)
{
	cpu_set_t set;

	if (cpu >= sysconf(_SC_NPROCESSORS_ONLN))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(pthread_setaffinity_np(t, sizeof(set), &set), 0);
}

static uint64_t thread_stime_ns(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return (uint64_t)ru.ru_stime.tv_sec * NSEC_PER_SEC +
	       (uint64_t)ru.ru_stime.tv_usec * 1000;
}

#define CHURN_THREADS	2
#define CHURN_DEADLINE_NS	(100 * NSEC_PER_MSEC)
/* How long the readers keep moving the count at most: a spin's bound. */
#define CHURN_MAX_NS	(20 * CHURN_DEADLINE_NS)

/* The writer with a deadline, SCHED_FIFO where allowed, on CPU 1. */
struct timed_writer {
	int fd;
	uint32_t *word;
	int ret;
	uint64_t elapsed, stime;
	struct tofutex_stats before, after;
	atomic_bool done;
};

static void *timed_writer_main(void *arg)
{
	struct timed_writer *tw = arg;
	struct sched_param sp = { .sched_priority = 1 };
	uint64_t t0;

	pin_to(pthread_self(), 1);
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	tw->before = raw_stats(tw->fd);
	tw->stime = thread_stime_ns();
	t0 = now_ns();
	tw->ret = ioc_lock(tw->fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)tw->word,
			   TOFUTEX_LOCK_DEADLINE | TOFUTEX_LOCK_RW_RESERVE,
			   t0 + CHURN_DEADLINE_NS, NULL);
	tw->elapsed = now_ns() - t0;
	tw->stime = thread_stime_ns() - tw->stime;
	tw->after = raw_stats(tw->fd);
	atomic_store(&tw->done, true);
	return NULL;
}

/*
 * Readers that ignore RW_HANDOFF (as a thread that holds a read lock
 * already may, uapi/tofutex.h) keep the count of a reader-held word
 * moving under a reserving writer alone on the other CPU, as SCHED_FIFO
 * (nothing there asks it to reschedule): its spin ends within its
 * budget however the count moves, and it sleeps until its deadline:
 * ETIMEDOUT on time, with a small part of the wait spent in the kernel.
 * A spin that the moving count re-armed would last as long as the
 * readers (CHURN_MAX_NS).
 */
START_TEST(test_rw_writer_spin_capped_under_moving_readers)
{
	uint32_t word = SHARED | 1;
	struct churn ch = { .word = &word };
	struct timed_writer tw = { .word = &word };
	pthread_t t[CHURN_THREADS], wt;
	int i;
	bool ok;

	tw.fd = dev_open();
	pin_to(pthread_self(), 0);
	for (i = 0; i < CHURN_THREADS; i++) {
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn_main, &ch), 0);
		pin_to(t[i], 0);
	}
	WAIT_UNTIL(ok, atomic_load(&ch.moves) > 100, TEST_WAIT_NS);
	ck_assert_msg(ok, "the count does not move");
	ck_assert_int_eq(pthread_create(&wt, NULL, timed_writer_main, &tw), 0);
	WAIT_UNTIL(ok, atomic_load(&tw.done), CHURN_MAX_NS);
	atomic_store(&ch.stop, true);
	for (i = 0; i < CHURN_THREADS; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	ck_assert(join_within(wt, NULL, TEST_WAIT_NS));
	ck_assert_msg(tw.ret == ETIMEDOUT, "WRLOCK: %d (%s)", tw.ret,
		      strerror(tw.ret));
	ck_assert_msg(ok && tw.elapsed < 2 * CHURN_DEADLINE_NS,
		      "returned after %llu ms: it spun past its deadline",
		      (unsigned long long)(tw.elapsed / NSEC_PER_MSEC));
	ck_assert_msg(tw.stime < tw.elapsed / 2,
		      "%llu us of system time in a %llu us wait (%llu spins, %llu sleeps): it spun",
		      (unsigned long long)(tw.stime / 1000),
		      (unsigned long long)(tw.elapsed / 1000),
		      (unsigned long long)(tw.after.spins - tw.before.spins),
		      (unsigned long long)(tw.after.sleeps - tw.before.sleeps));
	ck_assert_uint_eq(word_load(&word) & ~WAITERS, SHARED | 1);
	ck_assert_int_eq(rw_unlock(tw.fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(tw.fd);
	close(tw.fd);
}
END_TEST

static void rw_signal_run(bool write, bool restart)
{
	uint32_t tid = test_gettid();
	uint32_t word = write ? SHARED | 1 : tid;
	struct locker l;
	int fd = dev_open();
	bool ok;

	install_sigusr1(restart);
	locker_start(&l, fd, &word, write, true);
	ck_assert_int_eq(pthread_kill(l.thread, SIGUSR1), 0);
	if (!restart) {
		locker_join(&l);
		ck_assert_msg(l.ret == EINTR, "%s interrupted: %d (%s)",
			      write ? "WRLOCK" : "RDLOCK", l.ret,
			      strerror(l.ret));
		ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
		ck_assert_uint_eq(word_load(&word), 0);
		assert_no_live_states(fd);
		close(fd);
		return;
	}
	WAIT_UNTIL(ok, atomic_load(&sig_count) >= 1, TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(5 * NSEC_PER_MSEC);
	ck_assert_msg(!atomic_load(&l.done),
		      "returned %d under SA_RESTART while held", l.ret);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	atomic_store(&l.may_release, true);
	locker_join(&l);
	ck_assert_int_eq(l.ret, 0);
	ck_assert_int_eq(l.unlock_ret, 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}

/*
 * Queue a TOFUTEX_LOCK_RW_RESERVE writer on the reader-held @word and take
 * it out of WRLOCK with SIGUSR1 (EINTR: no SA_RESTART). It keeps its
 * reservation: as far as the kernel can tell, it is in its handler.
 */
static void reserving_writer_signalled_out(int fd, uint32_t *word)
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
 * A reserving writer that a signal takes out of WRLOCK (EINTR, no
 * SA_RESTART) keeps its reservation for its retry: the readers' word
 * keeps RW_HANDOFF, so user space's read attempts keep failing. If it
 * does not come back, the next RDLOCK's top reader clears it and enters
 * (after waiting handoff_ns for it).
 */
START_TEST(test_rw_reserving_writer_signalled_keeps_reservation)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();

	reserving_writer_signalled_out(fd, &word);
	ck_assert_msg(word_load(&word) & HANDOFF,
		      "word 0x%08x: the signalled writer dropped its reservation",
		      word_load(&word));
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE, far(), NULL), 0);
	ck_assert_uint_eq(word_load(&word), SHARED | 2);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * While a reserving writer that a signal took out of WRLOCK runs its
 * handler, a reader that blocks waits for it (up to handoff_ns, 1 s
 * here) rather than taking the word past its reservation; the writer,
 * back from the handler, goes first, and the reader after it.
 */
START_TEST(test_rw_reader_waits_for_signalled_writer)
{
	uint32_t word = SHARED | 1, woken = 0;
	int fd = dev_open();
	struct locker r, back;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_signalled_out(fd, &word);
	/* The writer is in its handler: a reader comes. */
	locker_start(&r, fd, &word, false, true);
	/* The writer is back. */
	locker_start_flags(&back, fd, &word, true, true,
			   TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, &woken), 0);
	locker_has_it(&back, "the writer back from its handler");
	ck_assert_msg(!atomic_load(&r.done),
		      "the reader got in past the writer's reservation");
	locker_release(&back);
	locker_has_it(&r, "the reader");
	locker_release(&r);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A reader R waits for the reservation of a writer that a signal took out
 * (handoff_ns, 1 s here); a timed writer queued behind R gives up and
 * withdraws that reservation. R relied on it to sleep: the withdrawal
 * wakes R, which enters at once instead of at the end of its wait.
 */
START_TEST(test_rw_withdrawal_wakes_reader_waiting_for_reservation)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r;
	uint64_t start, end;
	bool ok;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_signalled_out(fd, &word);
	start = now_ns();
	locker_start(&r, fd, &word, false, true);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE,
				  now_ns() + 50 * NSEC_PER_MSEC, NULL),
			 ETIMEDOUT);
	/* Its wait would end 1 s after it queued, after start. */
	end = start + 800 * NSEC_PER_MSEC;
	WAIT_UNTIL(ok, atomic_load(&r.done),
		   now_ns() < end ? end - now_ns() : 0);
	ck_assert_msg(ok,
		      "word 0x%08x: the reader still waits for a withdrawn reservation",
		      word_load(&word));
	locker_has_it(&r, "the reader");
	locker_release(&r);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A withdrawal that judged the top waiter W not starving yet, and whose
 * cmpxchg comes after W began to starve (the window between the two
 * widened to 1 s): W found its RW_HANDOFF in the word already (a signalled
 * reserving writer's) and slept on it with no timer. The withdrawal clears
 * it and wakes W, which raises it again: a new reader cannot join, and the
 * last reader out hands W the word.
 */
START_TEST(test_rw_withdrawal_racing_top_writer_starve_time)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker w;
	bool ok;

	param_set("handoff_ns", 300 * NSEC_PER_MSEC);
	reserving_writer_signalled_out(fd, &word);
	locker_start(&w, fd, &word, true, true);
	window_open(getpid(), WINDOW_RW_WITHDRAW, NSEC_PER_SEC);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE,
				  now_ns() + 100 * NSEC_PER_MSEC, NULL),
			 ETIMEDOUT);
	window_close();
	WAIT_UNTIL(ok, word_load(&word) & HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(ok && !atomic_load(&w.done),
		      "word 0x%08x: the starving writer asleep did not raise RW_HANDOFF again",
		      word_load(&word));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	locker_has_it(&w, "the starving writer");
	locker_release(&w);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A plain writer W becomes top waiter behind a reserving writer that a
 * signal took out (its RW_HANDOFF stays in the readers' word); a timed
 * writer queued behind W gives up and withdraws that RW_HANDOFF without
 * waking W; then two readers relay the word, never leaving it free.
 * W starves by its own clock (handoff_ns, 1 s here), whatever the word
 * said when it went to sleep, raises RW_HANDOFF itself and is handed the
 * word while the relay runs.
 */
START_TEST(test_rw_writer_starves_by_its_clock_after_a_withdrawal)
{
	struct relay *rl = calloc(1, sizeof(*rl));
	struct relay_arg ra[2];
	unsigned long taken[2];
	struct locker w;
	pthread_t t[2];
	bool had;
	uint32_t seen;
	int i, r;

	ck_assert_ptr_nonnull(rl);
	param_set("handoff_ns", NSEC_PER_SEC);
	rl->fd = dev_open();
	rl->word = SHARED | 1;
	reserving_writer_signalled_out(rl->fd, &rl->word);
	locker_start(&w, rl->fd, &rl->word, true, true);
	r = ioc_lock(rl->fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)&rl->word,
		     TOFUTEX_LOCK_DEADLINE, now_ns() + 50 * NSEC_PER_MSEC, NULL);
	ck_assert_int_eq(r, ETIMEDOUT);
	ck_assert_msg(!(word_load(&rl->word) & HANDOFF),
		      "word 0x%08x: the timed writer did not withdraw",
		      word_load(&rl->word));
	relay_start(rl, ra, t);
	ck_assert_int_eq(rw_unlock(rl->fd, &rl->word, 0, NULL), 0);
	WAIT_UNTIL(had, atomic_load(&w.done), 3 * NSEC_PER_SEC);
	seen = word_load(&rl->word);
	taken[0] = atomic_load(&rl->taken[0]);
	taken[1] = atomic_load(&rl->taken[1]);
	atomic_store(&w.may_release, true);
	atomic_store(&rl->stop, true);
	locker_join(&w);
	for (i = 0; i < 2; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
			      "relay reader %d did not stop", i);
	tfail_assert();
	ck_assert_msg(had, "the writer did not get the word in 3 s of relay (word 0x%08x, %lu + %lu reads)",
		      seen, taken[0], taken[1]);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(w.unlock_ret, 0);
	ck_assert_uint_eq(word_load(&rl->word), 0);
	assert_no_live_states(rl->fd);
	close(rl->fd);
	free(rl);
}
END_TEST

/*
 * A free word reserved for a writer that is not queued (one that a signal
 * took out and that never came back) keeps a blocking reader waiting up
 * to handoff_ns (1 s here) for it; a reader whose deadline comes first
 * times out, and as the last waiter to leave the free word it clears the
 * reservation, so that the next reader does not wait from the beginning
 * again, and a reader that only tries gets in.
 */
START_TEST(test_rw_timed_out_reader_clears_orphan_reservation)
{
	uint32_t word = SHARED | HANDOFF | WAITERS;
	int fd = dev_open();

	param_set("handoff_ns", NSEC_PER_SEC);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE,
				  now_ns() + 20 * NSEC_PER_MSEC, NULL),
			 ETIMEDOUT);
	ck_assert_msg(word_load(&word) == 0,
		      "word 0x%08x after the reader timed out: the reservation stayed",
		      word_load(&word));
	ck_assert(cas(&word, 0, SHARED | 1));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * Readers that come and go on a word reserved for a writer that is not
 * queued: two readers, each blocking 100 ms at a time and at once again,
 * half a period apart, so that one of them is always queued. The wait for
 * the lost writer runs by one clock for all of them, not from whichever
 * reader happens to be first: handoff_ns (1 s here) after the first of
 * them found the reservation, a reader gets in, well within the 5 s the
 * readers try. Timed from each call's own queueing, no reader ever would.
 */
struct orphan_reader {
	int fd;
	uint32_t *word;
	uint64_t offset_ns;
	uint64_t end;
	_Atomic bool *got;
	int bad;		/* an error other than ETIMEDOUT, or 0 */
};

static void *orphan_reader_main(void *arg)
{
	struct orphan_reader *r = arg;
	int ret;

	sleep_ns(r->offset_ns);
	while (!atomic_load(r->got) && now_ns() < r->end) {
		ret = ioc_lock(r->fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)r->word,
			       TOFUTEX_LOCK_DEADLINE,
			       now_ns() + 100 * NSEC_PER_MSEC, NULL);
		if (ret == 0) {
			atomic_store(r->got, true);
			ret = rw_unlock(r->fd, r->word, 0, NULL);
		}
		if (ret && ret != ETIMEDOUT) {
			r->bad = ret;
			break;
		}
	}
	return NULL;
}

START_TEST(test_rw_orphan_wait_one_clock_for_overlapping_readers)
{
	uint32_t word = SHARED | HANDOFF | WAITERS;
	struct orphan_reader r[2];
	_Atomic bool got = false;
	pthread_t t[2];
	int fd = dev_open();
	int i;

	param_set("handoff_ns", NSEC_PER_SEC);
	for (i = 0; i < 2; i++) {
		r[i] = (struct orphan_reader) {
			.fd = fd, .word = &word, .got = &got,
			.offset_ns = (uint64_t)i * 50 * NSEC_PER_MSEC,
			.end = now_ns() + 5 * NSEC_PER_SEC,
		};
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						orphan_reader_main, &r[i]), 0);
	}
	for (i = 0; i < 2; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
			      "orphan reader %d did not stop", i);
	for (i = 0; i < 2; i++)
		ck_assert_msg(r[i].bad == 0, "reader %d: %s", i,
			      strerror(r[i].bad));
	ck_assert_msg(atomic_load(&got),
		      "no reader got in in 5 s (word 0x%08x)",
		      word_load(&word));
	ck_assert_uint_eq(word_load(&word) & ~WAITERS, 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A reserving writer killed while it waits (in another process on a
 * shared word) withdraws its reservation: it will not be back, and
 * readers that only try would be kept out. The signals: SIGKILL, and one
 * whose default action terminates (SIGTERM), which the kernel turns into
 * a SIGKILL of the process at once (fatal_signal_pending()). One whose
 * default action dumps core (SIGQUIT) is not fatal by the kernel's
 * account until the dump begins, after the call returned: there the
 * next reader's wait for the orphaned reservation clears it.
 */
static const int killing_signals[] = { SIGKILL, SIGTERM, SIGQUIT };
#define N_KILLING_SIGNALS \
	((int)(sizeof(killing_signals) / sizeof(killing_signals[0])))

START_TEST(test_rw_reserving_writer_killed_withdraws)
{
	uint32_t *word = mmap(NULL, sizeof(*word), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int sig = killing_signals[_i], status, fd;
	pid_t pid;
	bool ok;

	ck_assert(word != MAP_FAILED);
	__atomic_store_n(word, SHARED | 1, __ATOMIC_RELAXED);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		int fd = dev_open();

		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);

		ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)word,
			 TOFUTEX_LOCK_DEADLINE | TOFUTEX_LOCK_RW_RESERVE,
			 far(), NULL);
		_exit(1);
	}
	WAIT_UNTIL(ok, word_load(word) & HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(ok, "word 0x%08x: the writer never reserved",
		      word_load(word));
	ck_assert_int_eq(kill(pid, sig), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == sig);
	if (sig != SIGQUIT) {
		ck_assert_msg((word_load(word) & ~WAITERS) == (SHARED | 1),
			      "word 0x%08x after the writer was killed by %s: its reservation stayed",
			      word_load(word), strsignal(sig));
		munmap(word, sizeof(*word));
		return;
	}
	/* A reader gets in once it has waited handoff_ns for the writer. */
	fd = dev_open();
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)word,
				  TOFUTEX_LOCK_DEADLINE, far(), NULL), 0);
	ck_assert_uint_eq(word_load(word), SHARED | 2);
	ck_assert_int_eq(rw_unlock(fd, word, 0, NULL), 0);
	ck_assert_int_eq(rw_unlock(fd, word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(word), 0);
	assert_no_live_states(fd);
	close(fd);
	munmap(word, sizeof(*word));
}
END_TEST

START_TEST(test_rw_signal_eintr)
{
	rw_signal_run(_i & 1, false);
}
END_TEST

START_TEST(test_rw_signal_restart)
{
	rw_signal_run(_i & 1, true);
}
END_TEST

/* ---- A writer that exits holding the lock ---- */

struct dying {
	uint32_t *word;
	atomic_bool locked;
	atomic_bool die;
};

static void *wrlock_and_exit_main(void *arg)
{
	struct dying *d = arg;

	TCHECK(cas(d->word, 0, test_gettid()), "dying writer could not lock");
	atomic_store(&d->locked, true);
	while (!atomic_load(&d->die))
		sleep_ns(100 * NSEC_PER_USEC);
	pthread_exit(NULL);
}

/*
 * _i 0: a reader is asleep in RDLOCK when the writer exits, and finds out
 * by its periodic owner check; 1: the writer exited before anybody
 * waited, and the next reader finds out on entry.
 */
START_TEST(test_rw_writer_death)
{
	struct tofutex_stats before, after;
	uint32_t word = 0, status = 0;
	struct dying d = { .word = &word };
	struct locker l;
	int fd = dev_open();
	pthread_t t;
	bool ok;

	before = raw_stats(fd);
	ck_assert_int_eq(pthread_create(&t, NULL, wrlock_and_exit_main, &d),
			 0);
	WAIT_UNTIL(ok, atomic_load(&d.locked) || tfailed(), TEST_WAIT_NS);
	tfail_assert();
	ck_assert(ok);
	if (_i == 0) {
		locker_start(&l, fd, &word, false, true);
		atomic_store(&d.die, true);
		ck_assert(join_within(t, NULL, TEST_WAIT_NS));
		WAIT_UNTIL(ok, atomic_load(&l.done), TEST_WAIT_NS);
		ck_assert_msg(ok, "the reader did not take the dead writer's lock");
		ck_assert_msg(l.ret == 0, "reader: %d (%s)", l.ret,
			      strerror(l.ret));
		ck_assert_msg(how(l.status) == TOFUTEX_STATUS_OWNER_DIED,
			      "reader status %#x, want OWNER_DIED", l.status);
		ck_assert_uint_eq(l.word_after, SHARED | 1);
		atomic_store(&l.may_release, true);
		locker_join(&l);
		ck_assert_int_eq(l.unlock_ret, 0);
	} else {
		atomic_store(&d.die, true);
		ck_assert(join_within(t, NULL, TEST_WAIT_NS));
		ck_assert_uint_ne(word_load(&word), 0);
		ck_assert_int_eq(rd_lock(fd, &word, &status), 0);
		ck_assert_uint_eq(how(status), TOFUTEX_STATUS_OWNER_DIED);
		ck_assert_uint_eq(word_load(&word), SHARED | 1);
		ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	}
	ck_assert_uint_eq(word_load(&word), 0);
	after = raw_stats(fd);
	ck_assert_uint_eq(after.owner_deaths, before.owner_deaths + 1);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* ---- Bad input ---- */

START_TEST(test_rw_bad_argument)
{
	uint32_t tid = test_gettid(), word = 0;
	char buf[8] __attribute__((aligned(8)));
	struct tofutex_lock a;
	struct tofutex_unlock u;
	int fd = dev_open();
	uint32_t *ro;

	/* Misaligned, unmapped, kernel and read-only words. */
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)buf + 1,
				  0, 0, NULL), EINVAL);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, unmapped_addr(),
				  0, 0, NULL), EFAULT);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK,
				  0xffffffff81000000ULL, 0, 0, NULL), EFAULT);
	ck_assert_int_eq(ioc_unlock(fd, unmapped_addr(), NULL), EFAULT);
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)buf + 2, NULL), EINVAL);
	ro = ro_word(0);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)ro,
				  0, 0, NULL), EFAULT);
	munmap(ro, (size_t)sysconf(_SC_PAGESIZE));
	ro = ro_word(SHARED | 1);
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)ro, NULL), EFAULT);
	munmap(ro, (size_t)sysconf(_SC_PAGESIZE));

	/* Unknown flags, reserved field, NULL argument. */
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)&word;
	a.flags = 1U << 7;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_RDLOCK, &a), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* A reader reserves nothing; neither does a TO lock. */
	a.flags = TOFUTEX_LOCK_RW_RESERVE;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_RDLOCK, &a), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK, &a), -1);
	ck_assert_int_eq(errno, EINVAL);
	a.flags = 0;
	a.reserved = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_WRLOCK, &a), -1);
	ck_assert_int_eq(errno, EINVAL);
	memset(&u, 0, sizeof(u));
	u.uaddr = (uintptr_t)&word;
	u.flags = 1;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_RWUNLOCK, &u), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_RWUNLOCK, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(word, 0);

	/* Unlocks of what the caller does not hold. */
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), EPERM);
	word = tid + 1;
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), EPERM);
	ck_assert_uint_eq(word, tid + 1);
	word = SHARED;
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), EPERM);
	ck_assert_uint_eq(word, SHARED);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * Odd words: a clear error or a sane result, never a hang or a leak. The
 * calls that may wait get a short deadline; those whose result is checked
 * below (a dead or foreign writer, judged after the deadline is looked
 * at) get a long one, so that a test thread held up past the short one
 * cannot turn their answer into ETIMEDOUT.
 */
static const uint32_t odd_words[] = {
	TOFUTEX_RW_RESERVED,
	TOFUTEX_RW_RESERVED | 5,
	0xffffffffU,
	SHARED | COUNT_MASK,
	SHARED | HANDOFF | COUNT_MASK,
	SHARED,
	HANDOFF,
	WAITERS,
	HANDOFF | WAITERS,
	NO_SUCH_TID,
	NO_SUCH_TID | WAITERS | HANDOFF,
	1,	/* TID 1: another process's thread (init) */
};

#define NR_ODD	(sizeof(odd_words) / sizeof(odd_words[0]))

/* RW_HANDOFF beside a writer's TID: no word the kernel writes. */
static bool writer_handoff(uint32_t w)
{
	return (w & HANDOFF) && !(w & SHARED) && (w & COUNT_MASK);
}

START_TEST(test_rw_odd_words)
{
	static const unsigned long cmds[2] = {
		TOFUTEX_IOC_RDLOCK, TOFUTEX_IOC_WRLOCK,
	};
	uint32_t word, w0, status;
	int fd = dev_open();
	unsigned int i, k;
	int r;

	for (i = 0; i < NR_ODD; i++) {
		for (k = 0; k < 3; k++) {
			w0 = odd_words[i];
			word = w0;
			status = 0;
			if (k < 2)
				r = ioc_lock(fd, cmds[k], (uintptr_t)&word,
					     TOFUTEX_LOCK_DEADLINE,
					     now_ns() + (w0 == 1 ||
							 w0 == NO_SUCH_TID ?
							 TEST_WAIT_NS :
							 20 * NSEC_PER_MSEC),
					     &status);
			else
				r = ioc_unlock(fd, (uintptr_t)&word, NULL);
			if (w0 & TOFUTEX_RW_RESERVED ||
			    (k < 2 && writer_handoff(w0))) {
				ck_assert_msg(r == EINVAL,
					      "word 0x%08x op %u: %d, want EINVAL",
					      w0, k, r);
				ck_assert_uint_eq(word, w0);
			} else if (w0 == 1 && k < 2 && getpid() != 1) {
				ck_assert_msg(r == EPERM,
					      "word 0x%08x op %u: %d, want EPERM",
					      w0, k, r);
			} else {
				ck_assert_msg(r == 0 || r == EPERM ||
					      r == EAGAIN || r == ETIMEDOUT,
					      "word 0x%08x op %u: %d (%s)",
					      w0, k, r, strerror(r));
			}
			if (w0 == (SHARED | COUNT_MASK) && k == 0)
				ck_assert_int_eq(r, EAGAIN);
			if (w0 == NO_SUCH_TID && k < 2) {
				ck_assert_int_eq(r, 0);
				ck_assert_uint_eq(how(status),
						  TOFUTEX_STATUS_OWNER_DIED);
			}
		}
	}
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * RW_HANDOFF written beside a live writer's TID (only the kernel sets
 * RW_HANDOFF, and never in a writer-owned word): read as a TO lock's TID,
 * the word would name no thread, and the live writer's lock would be
 * taken over as a dead one's. RDLOCK and WRLOCK refuse it (EINVAL) and
 * leave it alone; the writer's own RWUNLOCK still releases it.
 */
START_TEST(test_rw_handoff_beside_live_writer)
{
	uint32_t tid = test_gettid(), word;
	int fd = dev_open();
	struct timed t;
	pthread_t th;
	unsigned int k;
	int r;

	for (k = 0; k < 2; k++) {
		word = tid | HANDOFF | (k ? WAITERS : 0);
		/* Another thread: the caller's own call would be EDEADLK. */
		t = (struct timed) {
			.fd = fd, .word = &word,
			.cmd = k ? TOFUTEX_IOC_WRLOCK : TOFUTEX_IOC_RDLOCK,
			.flags = TOFUTEX_LOCK_DEADLINE,
			.clock = CLOCK_MONOTONIC,
			.deadline = now_ns() + 2 * NSEC_PER_SEC,
		};
		ck_assert_int_eq(pthread_create(&th, NULL, timed_main, &t), 0);
		ck_assert(join_within(th, NULL, TEST_WAIT_NS));
		r = t.ret;
		ck_assert_msg(r == EINVAL, "word 0x%08x: %d (%s), want EINVAL",
			      tid | HANDOFF, r, strerror(r));
		ck_assert_uint_eq(word_load(&word),
				  tid | HANDOFF | (k ? WAITERS : 0));
		ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
		ck_assert_uint_eq(word_load(&word), 0);
	}
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* A word in use as a TO lock is not also a reader/writer lock. */
START_TEST(test_rw_word_of_other_kind)
{
	uint32_t tid = test_gettid(), word = tid;
	struct tofutex_unlock u;
	struct locker l;
	int fd = dev_open();

	/* A reader sleeps in RDLOCK: the word has an RWLOCK state. */
	locker_start(&l, fd, &word, false, false);
	memset(&u, 0, sizeof(u));
	u.uaddr = (uintptr_t)&word;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_UNLOCK, &u), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	locker_join(&l);
	ck_assert_int_eq(l.ret, 0);
	ck_assert_uint_eq(word_load(&word), SHARED | 1);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* A thread in LOCK on a word, for test_rw_unlock_beside_lock_state. */
struct mutex_locker {
	uint32_t *word;
	int fd;
	atomic_uint tid;
	uint32_t flags;		/* beside TOFUTEX_LOCK_DEADLINE */
	atomic_int result;	/* -1 until LOCK returned */
};

static void *mutex_locker_main(void *p)
{
	struct mutex_locker *m = p;
	struct tofutex_lock a;

	atomic_store(&m->tid, test_gettid());
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)m->word;
	a.flags = TOFUTEX_LOCK_DEADLINE | m->flags;
	a.deadline_ns = far();
	atomic_store(&m->result, ioctl(m->fd, TOFUTEX_IOC_LOCK, &a) ? errno : 0);
	return NULL;
}

/*
 * A writer-held word, which looks like a TO lock word, that a thread
 * also locks with LOCK (against the ABI) gets a TO lock state: the
 * writer's RWUNLOCK still releases it (not EINVAL, which would leave the
 * write lock held for ever and the LOCK waiter waiting for it), and wakes
 * the LOCK waiter, which then takes the released word: also one that
 * never looks at the owner by itself (second run, NO_OWNER_POLL).
 */
START_TEST(test_rw_unlock_beside_lock_state)
{
	uint32_t tid = test_gettid(), word = tid, woken = 0;
	struct mutex_locker m = {
		.word = &word,
		.flags = _i ? TOFUTEX_LOCK_NO_OWNER_POLL : 0,
	};
	pthread_t t;
	bool ok;

	m.fd = dev_open();
	atomic_store(&m.result, -1);
	ck_assert_int_eq(pthread_create(&t, NULL, mutex_locker_main, &m), 0);
	WAIT_UNTIL(ok, atomic_load(&m.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&m.tid), TOFUTEX_IOC_LOCK, "LOCK");
	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	ck_assert_int_eq(ioc_unlock(m.fd, (uintptr_t)&word, &woken), 0);
	ck_assert_msg(woken == 1, "RWUNLOCK left the LOCK waiter asleep");
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&m.result), 0);
	ck_assert_uint_eq(word_load(&word) & COUNT_MASK, atomic_load(&m.tid));
	assert_no_live_states(m.fd);
	close(m.fd);
}
END_TEST

/* A thread in WAIT on a condition word, for the test below. */
struct cond_waiter {
	uint32_t *cond;
	int fd;
	atomic_uint tid;
	atomic_int result;	/* -1 until WAIT returned */
};

static void *cond_waiter_main(void *p)
{
	struct cond_waiter *c = p;
	struct tofutex_wait a;

	atomic_store(&c->tid, test_gettid());
	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)c->cond;
	a.val = 0;
	atomic_store(&c->result, ioctl(c->fd, TOFUTEX_IOC_WAIT, &a) ?
				 errno : 0);
	return NULL;
}

/*
 * A WAIT waiter that REQUEUE moved onto a writer-held word (against the
 * ABI: a reader/writer word is no TO lock) waits on a TO lock state
 * beside it: the writer's RWUNLOCK is that lock's release, and wakes it
 * as UNLOCK would.
 */
START_TEST(test_rw_unlock_wakes_waiter_moved_beside)
{
	uint32_t tid = test_gettid(), word = tid, cond = 0, woken = 0;
	struct cond_waiter c = { .cond = &cond };
	struct tofutex_requeue rq;
	pthread_t t;
	bool ok;

	c.fd = dev_open();
	atomic_store(&c.result, -1);
	ck_assert_int_eq(pthread_create(&t, NULL, cond_waiter_main, &c), 0);
	WAIT_UNTIL(ok, atomic_load(&c.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&c.tid), TOFUTEX_IOC_WAIT, "WAIT");
	memset(&rq, 0, sizeof(rq));
	rq.uaddr = (uintptr_t)&cond;
	rq.lock_uaddr = (uintptr_t)&word;
	rq.requeue_count = 1;
	ck_assert_int_eq(ioctl(c.fd, TOFUTEX_IOC_REQUEUE, &rq), 0);
	ck_assert_uint_eq(rq.requeued, 1);
	ck_assert_uint_eq(word_load(&word), tid | WAITERS);
	ck_assert_int_eq(ioc_unlock(c.fd, (uintptr_t)&word, &woken), 0);
	ck_assert_msg(woken == 1, "RWUNLOCK left the moved waiter asleep");
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&c.result), 0);
	assert_no_live_states(c.fd);
	close(c.fd);
}
END_TEST

/*
 * A word held by readers, with no kernel state, is not a TO lock held by
 * a thread whose TID is RW_SHARED | n: LOCK and UNLOCK fail with EINVAL
 * and leave it alone, whatever else the word holds.
 */
START_TEST(test_rw_lock_on_reader_held_word)
{
	static const uint32_t words[] = {
		SHARED | 1, SHARED | 2 | WAITERS, SHARED | 3 | HANDOFF | WAITERS,
	};
	struct tofutex_unlock u;
	struct tofutex_lock a;
	uint32_t word;
	unsigned int i;
	int fd = dev_open();

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		word = words[i];
		memset(&a, 0, sizeof(a));
		a.uaddr = (uintptr_t)&word;
		a.flags = TOFUTEX_LOCK_DEADLINE;
		a.deadline_ns = far();
		errno = 0;
		ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK, &a), -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(word_load(&word), words[i]);
		/* Nor does UNLOCK take it for a TO lock stolen meanwhile. */
		memset(&u, 0, sizeof(u));
		u.uaddr = (uintptr_t)&word;
		errno = 0;
		ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_UNLOCK, &u), -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(word_load(&word), words[i]);
	}
	/* The reader's RWUNLOCK still works on it. */
	ck_assert_int_eq(ioc_unlock(fd, (uintptr_t)&word, NULL), 0);
	ck_assert_uint_eq(word_load(&word), SHARED | 2 | HANDOFF | WAITERS);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

static Suite *rwlock_suite(void)
{
	Suite *s = suite_create("rwlock");
	TCase *tc;

	tc = tcase_create("basic");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rw_uncontended_kernel_paths);
	tcase_add_test(tc, test_rw_readers_share);
	tcase_add_test(tc, test_rw_queued_readers_enter_together);
	tcase_add_test(tc, test_rw_writers_after_readers);
	tcase_add_test(tc, test_rw_release_wakes_one_writer);
	tcase_add_test(tc, test_rw_deadline);
	suite_add_tcase(s, tc);

	tc = tcase_create("contention");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_rw_exclusion);
	tcase_add_test(tc, test_rw_writer_not_starved_by_reader_relay);
	suite_add_tcase(s, tc);

	tc = tcase_create("starving_writer");
	tcase_add_checked_fixture(tc, handoff_save, handoff_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rw_starving_writer_behind_granted_readers);
	tcase_add_test(tc, test_rw_sleeping_starved_writer_handed_off);
	tcase_add_test(tc, test_rw_reader_behind_starving_writer_waits);
	tcase_add_test(tc, test_rw_reserving_writer_starves_at_once);
	tcase_add_test(tc, test_rw_reserving_writer_ahead_of_queued_readers);
	tcase_add_test(tc, test_rw_reader_waits_for_signalled_writer);
	tcase_add_test(tc, test_rw_timed_out_reader_clears_orphan_reservation);
	tcase_add_test(tc, test_rw_orphan_wait_one_clock_for_overlapping_readers);
	tcase_add_test(tc, test_rw_timed_out_writer_withdraws_handoff);
	tcase_add_test(tc, test_rw_writer_starves_by_its_clock_after_a_withdrawal);
	tcase_add_test(tc, test_rw_withdrawal_wakes_reader_waiting_for_reservation);
	tcase_add_test(tc, test_rw_withdrawal_racing_top_writer_starve_time);
	tcase_add_test(tc, test_rw_writer_spin_capped_under_moving_readers);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals_and_death");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_rw_signal_eintr, 0, 2);
	tcase_add_loop_test(tc, test_rw_signal_restart, 0, 2);
	tcase_add_test(tc, test_rw_reserving_writer_signalled_keeps_reservation);
	tcase_add_loop_test(tc, test_rw_reserving_writer_killed_withdraws, 0,
			    N_KILLING_SIGNALS);
	tcase_add_loop_test(tc, test_rw_writer_death, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad_input");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rw_bad_argument);
	tcase_add_test(tc, test_rw_odd_words);
	tcase_add_test(tc, test_rw_handoff_beside_live_writer);
	tcase_add_test(tc, test_rw_word_of_other_kind);
	tcase_add_test(tc, test_rw_lock_on_reader_held_word);
	tcase_add_loop_test(tc, test_rw_unlock_beside_lock_state, 0, 2);
	tcase_add_test(tc, test_rw_unlock_wakes_waiter_moved_beside);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(rwlock_suite());
}
