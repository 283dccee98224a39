// SPDX-License-Identifier: GPL-2.0
/*
 * The writer reservation of TO reader/writer locks through the raw ABI
 * (uapi/tofutex.h): a writer that starves (handoff_ns since it queued, or
 * at once with TOFUTEX_LOCK_RW_RESERVE) raises RW_HANDOFF and is handed
 * the word ahead of the readers; a reader queued behind it waits; a writer
 * that gives up withdraws the bits and wakes whoever slept on them; a
 * reservation whose writer a signal took out is waited for by one clock
 * and then cleared; a writer's spin on readers that keep moving the count
 * is capped; signals (EINTR, restarts, killing ones) and a writer that
 * exits holding the lock. These tests set the module's handoff_ns and put
 * it back.
 */
#include <sys/resource.h>

#include "rwlock_abi.h"

/* ---- A starving writer ---- */

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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	rw_done(fd, &word);
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
	/*
	 * The longest budget: a spin that each move of the count re-armed
	 * would end only at a gap of that long between two moves, which
	 * the churning readers (or the host under a guest) never leave.
	 */
	param_set("spin_ns", 10 * NSEC_PER_MSEC);
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
	rw_done(tw.fd, &word);
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
	rw_done(fd, &word);
}

/*
 * A reserving writer W2 queues behind a plain writer W1 that does not
 * starve yet (handoff_ns 1 s): W2 goes ahead of it, reserves the word at
 * once (new readers stay out), and gets the word from the last reader
 * before W1 does.
 */
START_TEST(test_rw_reserving_writer_ahead_of_plain_writer)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker w1, w2;

	param_set("handoff_ns", NSEC_PER_SEC);
	locker_start(&w1, fd, &word, true, true);
	ck_assert_uint_eq(word_load(&word) & HANDOFF, 0);
	locker_start_flags(&w2, fd, &word, true, true,
			   TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_msg(word_load(&word) & HANDOFF,
		      "word 0x%08x: the reserving writer behind a plain one did not reserve",
		      word_load(&word));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	locker_has_it(&w2, "the reserving writer");
	ck_assert_msg(!atomic_load(&w1.done),
		      "the plain writer got the word before the reserving one");
	locker_release(&w2);
	locker_has_it(&w1, "the plain writer");
	locker_release(&w1);
	rw_done(fd, &word);
}
END_TEST

/*
 * A plain writer W queued behind a reader R starves (handoff_ns 100 ms,
 * 200 ms waited); a reserving writer X that comes then queues behind W,
 * not ahead of R and W: the write unlock gives R the word with W's
 * reservation, R's unlock hands it to W, and X gets it after W.
 */
START_TEST(test_rw_reserving_writer_behind_starving_writer)
{
	uint32_t tid = test_gettid(), word = tid;
	int fd = dev_open();
	struct locker r, w, x;

	param_set("handoff_ns", 100 * NSEC_PER_MSEC);
	locker_start(&r, fd, &word, false, true);
	locker_start(&w, fd, &word, true, true);
	sleep_ns(200 * NSEC_PER_MSEC);
	locker_start_flags(&x, fd, &word, true, true, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	locker_has_it(&r, "the reader ahead");
	locker_release(&r);
	locker_has_it(&w, "the starving plain writer");
	ck_assert_msg(!atomic_load(&x.done),
		      "the reserving writer overtook the starving writer");
	locker_release(&w);
	locker_has_it(&x, "the reserving writer");
	locker_release(&x);
	rw_done(fd, &word);
}
END_TEST

/*
 * A reserving writer that a signal takes out of WRLOCK (EINTR, no
 * SA_RESTART) withdraws its reservation like any writer that leaves: a
 * reservation lives while its writer is queued, and the kernel keeps
 * nothing for one in its handler. New readers join the readers in user
 * space again.
 */
START_TEST(test_rw_reserving_writer_signalled_withdraws)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();

	reserving_writer_signalled_out(fd, &word);
	ck_assert_msg(word_load(&word) == (SHARED | 1),
		      "word 0x%08x: the signalled writer left its reservation",
		      word_load(&word));
	ck_assert(cas(&word, SHARED | 1, SHARED | 2));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

/*
 * A reader waits behind a reserving writer; a signal takes the writer out
 * (EINTR): its withdrawal wakes the reader, which joins the readers at
 * once rather than wait for a writer the kernel no longer knows of.
 */
START_TEST(test_rw_reader_behind_signalled_writer_gets_in)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_signalled_out_beside(fd, &word, &r, far());
	locker_has_it(&r, "the reader behind the signalled writer");
	ck_assert_uint_eq(word_load(&word) & ~WAITERS, SHARED | 2);
	locker_release(&r);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

/*
 * A reserving writer whose signal handler was installed with SA_RESTART:
 * its call is restarted after the handler and reserves the word again at
 * once, so a reader arriving then waits, and the writer gets the word
 * when the last reader leaves.
 */
START_TEST(test_rw_restarted_reserving_writer_reserves_again)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker w, r;
	bool ok;

	install_sigusr1(true);
	locker_start_flags(&w, fd, &word, true, true, TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
	WAIT_UNTIL(ok, atomic_load(&sig_count) >= 1, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&w.tid), TOFUTEX_IOC_WRLOCK, "WRLOCK");
	ck_assert_uint_eq(word_load(&word), SHARED | HANDOFF | WAITERS | 1);
	locker_start(&r, fd, &word, false, true);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	locker_has_it(&w, "the restarted writer");
	ck_assert_msg(!atomic_load(&r.done), "the reader got in first");
	locker_release(&w);
	locker_has_it(&r, "the reader");
	locker_release(&r);
	rw_done(fd, &word);
}
END_TEST

/*
 * Start a reserving writer whose deadline is @rel_ns away on the
 * reader-held @word, and wait until its RW_HANDOFF is in the word: the
 * bits are its own, and it takes them back as it times out.
 */
static void reserving_writer_timed(struct timed *t, pthread_t *th, int fd,
				   uint32_t *word, uint64_t rel_ns)
{
	bool ok;

	*t = (struct timed) {
		.fd = fd, .word = word, .cmd = TOFUTEX_IOC_WRLOCK,
		.flags = TOFUTEX_LOCK_DEADLINE | TOFUTEX_LOCK_RW_RESERVE,
		.clock = CLOCK_MONOTONIC, .deadline = now_ns() + rel_ns,
	};
	ck_assert_int_eq(pthread_create(th, NULL, timed_main, t), 0);
	WAIT_UNTIL(ok, word_load(word) & HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(ok, "word 0x%08x: the reserving writer never reserved",
		      word_load(word));
}

/* Wait for the writer of reserving_writer_timed() to time out. */
static void reserving_writer_timed_out(struct timed *t, pthread_t th)
{
	ck_assert(join_within(th, NULL, TEST_WAIT_NS));
	ck_assert_msg(t->ret == ETIMEDOUT, "the reserving writer: %d (%s)",
		      t->ret, strerror(t->ret));
}

/*
 * A reserving writer W1 times out with a reader R queued behind it: R,
 * top waiter now and woken by W1's leaving, finds W1's RW_HANDOFF still in
 * the word (W1's withdrawal held back between its look at the queue and
 * its cmpxchg, 300 ms); no starving writer queued owns it, so R enters at
 * once, and the withdrawal, which found the count moved, is done again.
 */
START_TEST(test_rw_withdrawal_wakes_reader_waiting_for_reservation)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r;
	struct timed w1;
	uint64_t end;
	pthread_t th;
	bool ok;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_timed(&w1, &th, fd, &word, 300 * NSEC_PER_MSEC);
	locker_start(&r, fd, &word, false, true);
	window_open(getpid(), WINDOW_RW_WITHDRAW, 300 * NSEC_PER_MSEC);
	reserving_writer_timed_out(&w1, th);
	window_close();
	/* Well before the window, 300 ms, ends: R did not wait for it. */
	end = now_ns() + 500 * NSEC_PER_MSEC;
	WAIT_UNTIL(ok, atomic_load(&r.done),
		   now_ns() < end ? end - now_ns() : 0);
	ck_assert_msg(ok,
		      "word 0x%08x: the reader still waits for a withdrawn reservation",
		      word_load(&word));
	locker_has_it(&r, "the reader");
	locker_release(&r);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

/*
 * A withdrawal that judged the top waiter W not starving yet, and whose
 * cmpxchg comes after W began to starve (the window between the two
 * widened to 1 s): W found RW_HANDOFF in the word already (the leaving
 * reserving writer's) and slept on it with no timer. The withdrawal
 * clears it and wakes W, which raises it again: a new reader cannot join,
 * and the last reader out hands W the word.
 */
START_TEST(test_rw_withdrawal_racing_top_writer_starve_time)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker w;
	struct timed w1;
	pthread_t th;
	bool ok;

	param_set("handoff_ns", 300 * NSEC_PER_MSEC);
	reserving_writer_timed(&w1, &th, fd, &word, 100 * NSEC_PER_MSEC);
	locker_start(&w, fd, &word, true, true);
	window_open(getpid(), WINDOW_RW_WITHDRAW, NSEC_PER_SEC);
	reserving_writer_timed_out(&w1, th);
	window_close();
	WAIT_UNTIL(ok, word_load(&word) & HANDOFF, TEST_WAIT_NS);
	ck_assert_msg(ok && !atomic_load(&w.done),
		      "word 0x%08x: the starving writer asleep did not raise RW_HANDOFF again",
		      word_load(&word));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	locker_has_it(&w, "the starving writer");
	locker_release(&w);
	rw_done(fd, &word);
}
END_TEST

/*
 * A plain writer W queues behind a reserving writer W1 and sleeps, not
 * yet starving, on W1's RW_HANDOFF; W1 times out and takes its bits back;
 * then two readers relay the word, never leaving it free. W starves by
 * its own clock (handoff_ns, 1 s here), whatever the word said when it
 * went to sleep, raises RW_HANDOFF itself and is handed the word while
 * the relay runs.
 */
START_TEST(test_rw_writer_starves_by_its_clock_after_a_withdrawal)
{
	struct relay *rl = calloc(1, sizeof(*rl));
	struct relay_arg ra[2];
	unsigned long taken[2];
	struct locker w;
	struct timed w1;
	pthread_t t[2], th;
	bool had;
	uint32_t seen;
	int i;

	ck_assert_ptr_nonnull(rl);
	param_set("handoff_ns", NSEC_PER_SEC);
	rl->fd = dev_open();
	rl->word = SHARED | 1;
	reserving_writer_timed(&w1, &th, rl->fd, &rl->word,
			       300 * NSEC_PER_MSEC);
	locker_start(&w, rl->fd, &rl->word, true, true);
	reserving_writer_timed_out(&w1, th);
	ck_assert_msg(!(word_load(&rl->word) & HANDOFF),
		      "word 0x%08x: the timed-out writer did not withdraw",
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
	rw_done(rl->fd, &rl->word);
	free(rl);
}
END_TEST

/*
 * Two reserving writers with deadlines: W1 raises RW_HANDOFF, W2 queues
 * behind it and inherits the bit when W1 times out (it is the starving
 * top waiter then). When W2 times out too, nobody is left to own the bit:
 * W2 takes it back, and new readers join the readers again.
 */
START_TEST(test_rw_inherited_reservation_withdrawn)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker w2;
	struct timed w1;
	pthread_t th;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_timed(&w1, &th, fd, &word, 300 * NSEC_PER_MSEC);
	locker_start_until(&w2, fd, &word, true, false,
			   TOFUTEX_LOCK_RW_RESERVE,
			   now_ns() + 600 * NSEC_PER_MSEC);
	reserving_writer_timed_out(&w1, th);
	locker_join(&w2);
	ck_assert_int_eq(w2.ret, ETIMEDOUT);
	ck_assert_msg(!(word_load(&word) & HANDOFF),
		      "word 0x%08x: both writers gave up and the reservation stayed",
		      word_load(&word));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

/*
 * A reserving writer WR raises RW_HANDOFF and a signal takes it out (its
 * call is not retried), withdrawing it; the plain writer W behind it
 * becomes top, starves (handoff_ns, 300 ms here) and raises the bit
 * again. When W gives up (its deadline), it takes the bit back: no
 * reservation is left with nobody to own it.
 */
START_TEST(test_rw_starving_writer_withdraws_bit_it_found)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker wr, w;

	param_set("handoff_ns", 300 * NSEC_PER_MSEC);
	install_sigusr1(false);
	locker_start_flags(&wr, fd, &word, true, false,
			   TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_uint_eq(word_load(&word), SHARED | HANDOFF | WAITERS | 1);
	locker_start_until(&w, fd, &word, true, false, 0,
			   now_ns() + 1500 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_kill(wr.thread, SIGUSR1), 0);
	locker_join(&wr);
	ck_assert_int_eq(wr.ret, EINTR);
	locker_join(&w);
	ck_assert_int_eq(w.ret, ETIMEDOUT);
	ck_assert_msg(!(word_load(&word) & HANDOFF),
		      "word 0x%08x: the writer that owned the bit left it behind",
		      word_load(&word));
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

/*
 * RW_HANDOFF that no starving writer queued owns (written here; a
 * withdrawal that gave up leaves such a bit too) keeps readers of user
 * space out, but the first reader that blocks takes the word at once,
 * free or held by readers, and the bit goes.
 */
START_TEST(test_rw_unowned_reservation_taken_by_first_reader)
{
	static const uint32_t words[] = {
		SHARED | HANDOFF | WAITERS,
		SHARED | HANDOFF | WAITERS | 1,
	};
	int fd = dev_open();
	unsigned int i;
	uint32_t word;

	param_set("handoff_ns", NSEC_PER_SEC);
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		word = words[i];
		ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK,
					  (uintptr_t)&word,
					  TOFUTEX_LOCK_DEADLINE,
					  now_ns() + 20 * NSEC_PER_MSEC, NULL),
				 0);
		ck_assert_uint_eq(word_load(&word),
				  SHARED | ((words[i] & COUNT_MASK) + 1));
		while (word_load(&word))
			ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	}
	rw_done(fd, &word);
}
END_TEST

/*
 * A reserving writer killed while it waits (in another process on a
 * shared word) withdraws its reservation, as one that any signal takes
 * out does: SIGKILL, one whose default action terminates (SIGTERM, which
 * the kernel turns into a SIGKILL of the process at once), and one whose
 * default action dumps core (SIGQUIT, not fatal by the kernel's account
 * until the dump begins, after the call returned).
 */
static const int killing_signals[] = { SIGKILL, SIGTERM, SIGQUIT };
#define N_KILLING_SIGNALS \
	((int)(sizeof(killing_signals) / sizeof(killing_signals[0])))

START_TEST(test_rw_reserving_writer_killed_withdraws)
{
	uint32_t *word = mmap(NULL, sizeof(*word), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int sig = killing_signals[_i], status;
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
	ck_assert_msg((word_load(word) & ~WAITERS) == (SHARED | 1),
		      "word 0x%08x after the writer was killed by %s: its reservation stayed",
		      word_load(word), strsignal(sig));
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
 * A writer asleep on a writer that exits: it takes the dead writer's word
 * over in one cmpxchg, and is told (OWNER_DIED). The window between its
 * read of the word and its action is widened (300 ms) while this thread
 * tries to take the word the moment it reads free: it never does, since
 * the word goes from the dead writer's TID straight to the waiter's.
 */
START_TEST(test_rw_writer_death_taken_over_in_one_step)
{
	uint32_t word = 0, v, w_tid;
	struct dying d = { .word = &word };
	bool ok, stolen = false;
	struct locker w;
	uint64_t end;
	pthread_t t;
	int fd = dev_open();

	ck_assert_int_eq(pthread_create(&t, NULL, wrlock_and_exit_main, &d),
			 0);
	WAIT_UNTIL(ok, atomic_load(&d.locked) || tfailed(), TEST_WAIT_NS);
	tfail_assert();
	ck_assert(ok);
	locker_start(&w, fd, &word, true, true);
	w_tid = atomic_load(&w.tid);
	window_open(getpid(), WINDOW_COMPETE, 300 * NSEC_PER_MSEC);
	atomic_store(&d.die, true);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	end = now_ns() + TEST_WAIT_NS;
	while (now_ns() < end && !atomic_load(&w.done)) {
		v = word_load(&word);
		if (v == 0 && cas(&word, 0, SHARED | 1)) {
			stolen = true;
			break;
		}
		if ((v & COUNT_MASK) == w_tid && !(v & SHARED))
			break;
		sched_yield();
	}
	window_close();
	if (stolen)
		ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_msg(!stolen,
		      "the dead writer's word went free and another thread took it, unaware of the death");
	locker_has_it(&w, "the writer behind the dead one");
	ck_assert_msg(how(w.status) == TOFUTEX_STATUS_OWNER_DIED,
		      "writer status %#x, want OWNER_DIED", w.status);
	locker_release(&w);
	rw_done(fd, &word);
}
END_TEST

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

static Suite *rw_reserve_suite(void)
{
	Suite *s = suite_create("rw_reserve");
	TCase *tc;

	tc = tcase_create("starving_writer");
	tcase_add_checked_fixture(tc, handoff_save, handoff_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rw_starving_writer_behind_granted_readers);
	tcase_add_test(tc, test_rw_sleeping_starved_writer_handed_off);
	tcase_add_test(tc, test_rw_reader_behind_starving_writer_waits);
	tcase_add_test(tc, test_rw_reserving_writer_starves_at_once);
	tcase_add_test(tc, test_rw_reserving_writer_ahead_of_queued_readers);
	tcase_add_test(tc, test_rw_reserving_writer_ahead_of_plain_writer);
	tcase_add_test(tc, test_rw_reserving_writer_behind_starving_writer);
	tcase_add_test(tc, test_rw_reader_behind_signalled_writer_gets_in);
	tcase_add_test(tc, test_rw_timed_out_writer_withdraws_handoff);
	tcase_add_test(tc, test_rw_writer_starves_by_its_clock_after_a_withdrawal);
	tcase_add_test(tc, test_rw_withdrawal_wakes_reader_waiting_for_reservation);
	tcase_add_test(tc, test_rw_withdrawal_racing_top_writer_starve_time);
	tcase_add_test(tc, test_rw_inherited_reservation_withdrawn);
	tcase_add_test(tc, test_rw_starving_writer_withdraws_bit_it_found);
	tcase_add_test(tc, test_rw_unowned_reservation_taken_by_first_reader);
	tcase_add_test(tc, test_rw_writer_spin_capped_under_moving_readers);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals_and_death");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_rw_signal_eintr, 0, 2);
	tcase_add_loop_test(tc, test_rw_signal_restart, 0, 2);
	tcase_add_test(tc, test_rw_reserving_writer_signalled_withdraws);
	tcase_add_test(tc, test_rw_restarted_reserving_writer_reserves_again);
	tcase_add_loop_test(tc, test_rw_reserving_writer_killed_withdraws, 0,
			    N_KILLING_SIGNALS);
	tcase_add_loop_test(tc, test_rw_writer_death, 0, 2);
	tcase_add_test(tc, test_rw_writer_death_taken_over_in_one_step);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(rw_reserve_suite());
}
