// SPDX-License-Identifier: GPL-2.0
/*
 * TO reader/writer locks through the raw ABI of uapi/tofutex.h
 * (TOFUTEX_IOC_RDLOCK, WRLOCK, RWUNLOCK): exclusion, readers sharing the
 * word, queued readers entering together, a writer that gets the lock
 * while readers keep arriving, deadlines on both clocks, a release that
 * wakes one writer (no herd), and bad input (words of another kind
 * included). Writers that starve, their reservation and its withdrawal,
 * signals and a writer's death are test_rw_reserve.c's.
 */
#include "rwlock_abi.h"

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
	rw_done(x.fd, &x.word);
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
	rw_done(fd, &word);
}
END_TEST

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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	rw_done(rl->fd, &rl->word);
	free(rl);
}
END_TEST

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
	rw_done(fd, &word);
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
