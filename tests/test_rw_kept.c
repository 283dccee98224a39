// SPDX-License-Identifier: GPL-2.0
/*
 * A reserving writer (TOFUTEX_LOCK_RW_RESERVE) that a signal took out of
 * WRLOCK to run its handler keeps the word reserved for its return, as
 * glibc's writer in its handler keeps a writer-preferring lock, whatever
 * happens meanwhile: the readers that waited behind it leave and come
 * back (each word's state retiring with them), the word it waited on was
 * a writer's, another writer gives up, or the last reader releases the
 * word with nobody in the kernel. Readers wait for it up to handoff_ns
 * after it left, then get in. Each case signals the writer out with no
 * SA_RESTART and never retries it, so that, as far as the kernel can
 * tell, it stays in its handler; another thread then plays its return
 * (a reserving writer, which goes before the readers).
 */
#include "rwlock_abi.h"

/* A SIGUSR2 handler that does nothing: the call it interrupts restarts. */
static void on_sigusr2(int sig)
{
	(void)sig;
}

static void install_sigusr2_restart(void)
{
	struct sigaction sa = { .sa_handler = on_sigusr2,
				.sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
}

/*
 * The writer is back (@back, a reserving writer) while the test thread
 * holds a read lock, which then goes: the writer gets the word before
 * reader @r, which gets it next.
 */
static void writer_back_goes_first(int fd, uint32_t *word, struct locker *r)
{
	struct locker back;

	locker_start_flags(&back, fd, word, true, true,
			   TOFUTEX_LOCK_RW_RESERVE);
	ck_assert_int_eq(rw_unlock(fd, word, 0, NULL), 0);
	locker_has_it(&back, "the writer back from its handler");
	ck_assert_msg(!atomic_load(&r->done),
		      "the reader got in past the writer's reservation (word 0x%08x)",
		      r->word_after);
	locker_release(&back);
	locker_has_it(r, "the reader");
	locker_release(r);
}

/*
 * The same on a free reserved word: the test thread plays the writer
 * back, and takes the word at once.
 */
static void writer_back_takes_free_word(int fd, uint32_t *word,
					struct locker *r)
{
	uint32_t tid = test_gettid();

	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_WRLOCK, (uintptr_t)word,
				  TOFUTEX_LOCK_DEADLINE |
				  TOFUTEX_LOCK_RW_RESERVE, far(), NULL), 0);
	ck_assert_uint_eq(word_load(word) & ~WAITERS, tid);
	ck_assert_msg(!atomic_load(&r->done),
		      "the reader got in past the writer's reservation");
	ck_assert_int_eq(rw_unlock(fd, word, tid, NULL), 0);
	locker_has_it(r, "the reader");
	locker_release(r);
}

/*
 * The reader waiting behind the writer is interrupted (SA_RESTART) while
 * the writer is in its handler: its call ends, the word's state retires
 * with it (nobody else is in a call on the word), and its restarted call
 * finds the reservation kept all the same.
 */
START_TEST(test_rw_kept_when_waiting_reader_restarts)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r;

	param_set("handoff_ns", NSEC_PER_SEC);
	install_sigusr2_restart();
	reserving_writer_signalled_out_beside(fd, &word, &r, far());
	ck_assert_int_eq(pthread_kill(r.thread, SIGUSR2), 0);
	sleep_ns(20 * NSEC_PER_MSEC);
	wait_asleep_in(atomic_load(&r.tid), TOFUTEX_IOC_RDLOCK, "RDLOCK");
	ck_assert_msg(!atomic_load(&r.done),
		      "the restarted reader got in past the writer's reservation");
	ck_assert_uint_eq(word_load(&word) & HANDOFF, HANDOFF);
	writer_back_goes_first(fd, &word, &r);
	rw_done(fd, &word);
}
END_TEST

/*
 * The writer waited on a writer's word (its reservation never reached
 * the word) with a reader queued behind it; the write unlock that frees
 * the word while the writer is in its handler does not give it to the
 * reader: the word is left free and reserved.
 */
START_TEST(test_rw_kept_on_a_writers_word)
{
	uint32_t tid = test_gettid(), word = tid;
	int fd = dev_open();
	struct locker w, r;

	param_set("handoff_ns", NSEC_PER_SEC);
	install_sigusr1(false);
	locker_start_flags(&w, fd, &word, true, false, TOFUTEX_LOCK_RW_RESERVE);
	locker_start(&r, fd, &word, false, true);
	ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
	locker_join(&w);
	ck_assert_int_eq(w.ret, EINTR);
	ck_assert_int_eq(rw_unlock(fd, &word, tid, NULL), 0);
	ck_assert_msg((word_load(&word) & (SHARED | HANDOFF)) ==
		      (SHARED | HANDOFF),
		      "word 0x%08x: the write unlock dropped the reservation",
		      word_load(&word));
	writer_back_takes_free_word(fd, &word, &r);
	rw_done(fd, &word);
}
END_TEST

/*
 * A second reserving writer, with a short deadline, becomes the starving
 * top waiter once the first left for its handler, and times out: its
 * withdrawal leaves the first one's reservation in the word.
 */
START_TEST(test_rw_kept_past_another_writers_timeout)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r, w2;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_signalled_out_beside(fd, &word, &r, far());
	locker_start_until(&w2, fd, &word, true, false,
			   TOFUTEX_LOCK_RW_RESERVE,
			   now_ns() + 100 * NSEC_PER_MSEC);
	locker_join(&w2);
	ck_assert_int_eq(w2.ret, ETIMEDOUT);
	ck_assert_msg(word_load(&word) & HANDOFF,
		      "word 0x%08x: the timed-out writer withdrew the kept reservation",
		      word_load(&word));
	writer_back_goes_first(fd, &word, &r);
	rw_done(fd, &word);
}
END_TEST

/*
 * The writer was the only one in a call on the word; the last read lock
 * is then released with nobody in the kernel: the word is left free and
 * reserved (a try lock fails), and a reader that blocks then waits for
 * the writer.
 */
START_TEST(test_rw_kept_by_a_release_with_nobody_queued)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();
	struct locker r;

	param_set("handoff_ns", NSEC_PER_SEC);
	reserving_writer_signalled_out(fd, &word);
	assert_no_live_states(fd);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_msg((word_load(&word) & (SHARED | HANDOFF | COUNT_MASK)) ==
		      (SHARED | HANDOFF),
		      "word 0x%08x: the release dropped the reservation",
		      word_load(&word));
	ck_assert(!cas(&word, 0, SHARED | 1));
	locker_start(&r, fd, &word, false, true);
	writer_back_takes_free_word(fd, &word, &r);
	rw_done(fd, &word);
}
END_TEST

/*
 * The reservation is kept handoff_ns (200 ms here) after the writer left,
 * no longer: a reader that blocks then gets in, and a try lock after it.
 */
START_TEST(test_rw_kept_reservation_ends)
{
	uint32_t word = SHARED | 1;
	int fd = dev_open();

	param_set("handoff_ns", 200 * NSEC_PER_MSEC);
	reserving_writer_signalled_out(fd, &word);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	ck_assert_int_eq(ioc_lock(fd, TOFUTEX_IOC_RDLOCK, (uintptr_t)&word,
				  TOFUTEX_LOCK_DEADLINE, far(), NULL), 0);
	ck_assert_uint_eq(word_load(&word) & ~WAITERS, SHARED | 1);
	ck_assert_int_eq(rw_unlock(fd, &word, 0, NULL), 0);
	rw_done(fd, &word);
}
END_TEST

static Suite *rw_kept_suite(void)
{
	Suite *s = suite_create("rw_kept");
	TCase *tc = tcase_create("kept");

	tcase_add_checked_fixture(tc, handoff_save, handoff_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_rw_kept_when_waiting_reader_restarts);
	tcase_add_test(tc, test_rw_kept_on_a_writers_word);
	tcase_add_test(tc, test_rw_kept_past_another_writers_timeout);
	tcase_add_test(tc, test_rw_kept_by_a_release_with_nobody_queued);
	tcase_add_test(tc, test_rw_kept_reservation_ends);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rw_kept_suite());
}
