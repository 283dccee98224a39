// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, reader/writer locks: who gets a lock
 * that is released while threads wait for it. The writer-preferring
 * kinds' waiting writer, as glibc's: it goes before readers that come
 * after it or blocked before it, and the lock it reserved is no free one
 * to another thread's trywrlock or tryrdlock, nor stays reserved once it
 * timed out. Unlike glibc's, a reader-preferring lock's release may go to
 * a thread that tries first (tofutex-run(1), BUGS), and every waiter
 * still gets the lock. Runs under tofutex-run (LD_PRELOAD); the first
 * test fails when the preload is not in effect.
 */
#include <semaphore.h>
#include <sys/prctl.h>

#include "rwlock.h"

START_TEST(test_preload_in_effect)
{
	rwlock_preload_in_effect();
}
END_TEST

/*
 * The writer-preferring nonrecursive kind: once a writer waits (new
 * readers' tryrdlock fails), a reader that comes after it gets the lock
 * only after that writer, however long the readers ahead hold it.
 */

START_TEST(test_waiting_writer_before_later_readers)
{
	int k = _i ? K_NONRECURSIVE : K_STATIC_NONRECURSIVE, next = 0;
	struct order w = { .write = true, .next = &next };
	struct order r = { .write = false, .next = &next };
	pthread_rwlock_t rw;
	pthread_t tw, tr;
	bool waits;

	rwlock_make(&rw, k);
	w.rw = r.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&tw, NULL, order_main, &w), 0);
	/* The writer waits when new readers are refused. */
	WAIT_UNTIL(waits, in_thread(tryrd_and_unlock, &rw) == EBUSY,
		   TEST_WAIT_NS);
	ck_assert_msg(waits, "new readers still join: the writer never waits");
	ck_assert_int_eq(pthread_create(&tr, NULL, order_main, &r), 0);
	/* Long enough for any poll of the reader's to run out; not needed. */
	sleep_ns(200 * NSEC_PER_MSEC);
	ck_assert_int_eq(__atomic_load_n(&next, __ATOMIC_SEQ_CST), 0);
	ck_assert_int_eq(in_thread(tryrd_and_unlock, &rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(tw, NULL, TEST_WAIT_NS));
	ck_assert(join_within(tr, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(w.got, 1);
	ck_assert_int_eq(r.got, 2);
}
END_TEST

/* The kinds whose waiting writer glibc marks as the lock's next owner. */
static const int writer_first[] = {
	K_STATIC_NONRECURSIVE, K_NONRECURSIVE, K_WRITER,
};
#define N_WRITER_FIRST	((int)(sizeof(writer_first) / sizeof(writer_first[0])))

/*
 * The writer-preferring kinds: a writer's release while another writer
 * waits, queued before the readers that wait too, goes to that writer, as
 * glibc's does, not to the readers.
 */
START_TEST(test_write_release_to_waiting_writer)
{
	int k = writer_first[_i], next = 0, i;
	struct order w = { .write = true, .next = &next }, r[4];
	pthread_t tw, tr[4];
	pthread_rwlock_t rw;

	rwlock_make(&rw, k);
	w.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&tw, NULL, order_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	for (i = 0; i < 4; i++) {
		r[i] = (struct order){ .rw = &rw, .next = &next };
		ck_assert_int_eq(pthread_create(&tr[i], NULL, order_main,
						&r[i]), 0);
		ck_assert(thread_asleep_within(&r[i].tid));
	}
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(tw, NULL, TEST_WAIT_NS));
	for (i = 0; i < 4; i++) {
		ck_assert(join_within(tr[i], NULL, TEST_WAIT_NS));
		ck_assert_int_gt(r[i].got, 1);
	}
	ck_assert_msg(w.got == 1, "the waiting writer came %d of 5", w.got);
}
END_TEST

/*
 * The writer-preferring kinds, as glibc's: readers that blocked on the
 * write lock before a writer did still go after that writer: the write
 * unlock goes to the waiting writer.
 */
START_TEST(test_write_release_to_writer_behind_readers)
{
	int k = writer_first[_i], next = 0, i;
	struct order w = { .write = true, .next = &next }, r[4];
	pthread_t tw, tr[4];
	pthread_rwlock_t rw;

	rwlock_make(&rw, k);
	w.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	for (i = 0; i < 4; i++) {
		r[i] = (struct order){ .rw = &rw, .next = &next };
		ck_assert_int_eq(pthread_create(&tr[i], NULL, order_main,
						&r[i]), 0);
		ck_assert(thread_asleep_within(&r[i].tid));
	}
	ck_assert_int_eq(pthread_create(&tw, NULL, order_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(tw, NULL, TEST_WAIT_NS));
	for (i = 0; i < 4; i++) {
		ck_assert(join_within(tr[i], NULL, TEST_WAIT_NS));
		ck_assert_int_gt(r[i].got, 1);
	}
	ck_assert_msg(w.got == 1, "the waiting writer came %d of 5", w.got);
}
END_TEST

/*
 * The writer-preferring kinds: while a writer waits for the readers,
 * another thread's trywrlock fails with EBUSY, also in the moment the
 * last reader has left and the waiting writer is not yet back on a CPU
 * (glibc's waiting writer has marked the lock write-locked): the lock is
 * the waiting writer's, 20 rounds out of 20.
 */
static int trywr_busy(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_trywrlock(rw);

	if (!r)
		pthread_rwlock_unlock(rw);
	return r;
}

START_TEST(test_trywrlock_behind_waiting_writer)
{
	int k = writer_first[_i], next, round, taken = 0;
	struct order w;
	bool ok;
	pthread_rwlock_t rw;
	pthread_t tw;

	rwlock_make(&rw, k);
	for (round = 0; round < 20; round++) {
		next = 0;
		w = (struct order){ .rw = &rw, .write = true, .next = &next };
		ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
		ck_assert_int_eq(pthread_create(&tw, NULL, order_main, &w), 0);
		ck_assert(thread_asleep_within(&w.tid));
		/* Asleep in its wait, not on the way to it: reserved. */
		WAIT_UNTIL(ok, rw_word(&rw) & TOFUTEX_RW_HANDOFF,
			   TEST_WAIT_NS);
		ck_assert_msg(ok, "round %d: the writer never reserved the lock (word 0x%08x)",
			      round, rw_word(&rw));
		ck_assert_int_eq(in_thread(trywr_busy, &rw), EBUSY);
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		if (in_thread(trywr_busy, &rw) == 0 &&
		    !__atomic_load_n(&next, __ATOMIC_SEQ_CST))
			taken++;
		ck_assert(join_within(tw, NULL, TEST_WAIT_NS));
		ck_assert_int_eq(w.got, 1);
	}
	ck_assert_msg(taken == 0,
		      "another thread's trywrlock took the lock the waiting writer was due, %d of 20 rounds",
		      taken);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/*
 * A free lock whose word keeps RW_HANDOFF (with WAITERS) is reserved for
 * the writer that waits for it: its wake-up is under way, or it runs a
 * signal handler. No reader takes it, not even one of a kind whose
 * readers join a read-held lock past a waiting writer: glibc's release
 * has given such a lock to the writer. (Written into the word here: the
 * moment a release leaves it so is too short to catch.)
 */
START_TEST(test_free_reserved_lock_refuses_readers)
{
	static const uint32_t reserved[] = {
		TOFUTEX_RW_HANDOFF | TOFUTEX_WAITERS,
		TOFUTEX_RW_SHARED | TOFUTEX_RW_HANDOFF | TOFUTEX_WAITERS,
	};
	pthread_rwlock_t rw;
	unsigned int i;

	rwlock_make(&rw, _i);
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		__atomic_store_n(&rw.__data.__readers, reserved[i],
				 __ATOMIC_RELEASE);
		ck_assert_msg(in_thread(tryrd_and_unlock, &rw) == EBUSY,
			      "kind %d: a reader took the free word 0x%08x reserved for a writer",
			      _i, reserved[i]);
		ck_assert_int_eq(in_thread(trywr_and_unlock, &rw), EBUSY);
		ck_assert_uint_eq(rw_word(&rw), reserved[i]);
	}
	__atomic_store_n(&rw.__data.__readers, 0, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/*
 * A write unlock that races the timed wait of a reserving writer (the
 * writer-preferring kinds) reaching its deadline: swept across the
 * deadline, round after round for 3 s. After each round nobody holds or
 * waits for the lock, and a reader gets it: the release must not reserve
 * the word for a writer that has just left the count.
 */
struct race_writer {
	pthread_rwlock_t *rw;
	sem_t go, done;
	_Atomic uint64_t deadline;
	atomic_bool stop;
};

static void *race_writer_main(void *arg)
{
	struct race_writer *r = arg;
	struct timespec ts;

	/* Its deadline on time, not up to 50 us late: the sweep's width. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (;;) {
		sem_wait(&r->go);
		if (atomic_load(&r->stop))
			return NULL;
		ts = ts_from_ns(atomic_load(&r->deadline));
		if (!pthread_rwlock_clockwrlock(r->rw, CLOCK_MONOTONIC, &ts))
			pthread_rwlock_unlock(r->rw);
		sem_post(&r->done);
	}
}

START_TEST(test_release_racing_timed_writer_leaves_no_reservation)
{
	static const int kinds[] = { K_WRITER, K_NONRECURSIVE };
	struct race_writer r = { 0 };
	pthread_rwlock_t rw;
	uint64_t end, d;
	unsigned long n;
	pthread_t t;
	int64_t off;

	rwlock_make(&rw, kinds[_i]);
	r.rw = &rw;
	ck_assert_int_eq(sem_init(&r.go, 0, 0), 0);
	ck_assert_int_eq(sem_init(&r.done, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, race_writer_main, &r), 0);
	end = now_ns() + 3 * NSEC_PER_SEC;
	for (n = 0; now_ns() < end; n++) {
		ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
		d = now_ns() + 300 * NSEC_PER_USEC;
		atomic_store(&r.deadline, d);
		sem_post(&r.go);
		/* From 10 us before the deadline to 60 us after it. */
		off = ((int64_t)(n * 37 % 700) - 100) * 100;
		while ((int64_t)(now_ns() - d) < off)
			;
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		sem_wait(&r.done);
		ck_assert_msg(in_thread(tryrd_and_unlock, &rw) == 0,
			      "round %lu: an idle lock refuses readers (word 0x%08x)",
			      n, rw_word(&rw));
	}
	atomic_store(&r.stop, true);
	sem_post(&r.go);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

/*
 * A write lock whose deadline has passed, then at once a read attempt:
 * EBUSY when the lock stays reserved for another writer.
 */
static int timedwr_passed_then_tryrd(pthread_rwlock_t *rw)
{
	struct timespec ts = realtime_in(0);
	int r = pthread_rwlock_timedwrlock(rw, &ts);

	if (r != ETIMEDOUT)
		return r ? -r : -1;
	return tryrd_and_unlock(rw);
}

/*
 * The nonrecursive kinds: a writer whose deadline has passed leaves the
 * lock reserved for the writer that still waits: new readers stay out.
 */
START_TEST(test_timed_out_writer_keeps_others_reservation)
{
	struct sleeper w = { .write = true, .ret = -1 };
	pthread_rwlock_t rw;
	pthread_t t;
	int i;

	rwlock_make(&rw, _i ? K_NONRECURSIVE : K_STATIC_NONRECURSIVE);
	w.rw = &rw;
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, sleeper_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	for (i = 0; i < 20; i++) {
		ck_assert_msg(in_thread(timedwr_passed_then_tryrd, &rw) == EBUSY,
			      "round %d: a reader got in while a writer waits",
			      i);
	}
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(w.ret, 0);
}
END_TEST

/*
 * A reader-preferring lock (the default kind) released while threads wait
 * for it is not always handed over as glibc's is (tofutex-run(1), BUGS):
 * glibc's release gives it to the waiters it chose before it returns, so
 * that a trywrlock right after it fails with EBUSY; ours may free it and
 * wake the waiters, and a thread that tries first takes it (lock
 * stealing). The test thread write-holds the lock while a writer (_i 0),
 * or readers and a writer (_i 1), sleep in their locks; it releases it
 * and at once tries to write-lock it again: EBUSY, or 0 with the word
 * its write lock, and then it releases it again. Either way every waiter
 * gets the lock, each round of 20.
 */
#define STEAL_READERS	3

START_TEST(test_release_to_waiters_may_be_stolen)
{
	int nw = _i ? STEAL_READERS + 1 : 1, next, round, r, i;
	struct order w[STEAL_READERS + 1];
	pthread_t t[STEAL_READERS + 1];
	pthread_rwlock_t rw;
	uint32_t word;

	rwlock_make(&rw, K_STATIC);
	for (round = 0; round < 20; round++) {
		next = 0;
		ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
		for (i = 0; i < nw; i++) {
			/* The last one the writer, after the readers. */
			w[i] = (struct order){ .rw = &rw, .next = &next,
					       .write = i == nw - 1 };
			ck_assert_int_eq(pthread_create(&t[i], NULL, order_main,
							&w[i]), 0);
			ck_assert(thread_asleep_within(&w[i].tid));
		}
		ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		r = pthread_rwlock_trywrlock(&rw);
		ck_assert_msg(r == 0 || r == EBUSY,
			      "round %d: trywrlock after the release: %d",
			      round, r);
		/* Stolen: the test thread's write lock, none of theirs. */
		word = rw_word(&rw);
		ck_assert_msg(r || (!(word & TOFUTEX_RW_SHARED) &&
				    (word & TOFUTEX_RW_COUNT_MASK) ==
				    test_gettid()),
			      "round %d: trywrlock said 0, word 0x%08x",
			      round, word);
		if (!r)
			ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
		for (i = 0; i < nw; i++) {
			ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS),
				      "round %d: %s %d never got the lock%s",
				      round, w[i].write ? "the writer" : "reader",
				      i, r ? "" : " the test thread stole");
			ck_assert_msg(w[i].got >= 1 && w[i].got <= nw,
				      "round %d: waiter %d: %d", round, i,
				      w[i].got);
		}
	}
	ck_assert_uint_eq(rw_word(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
}
END_TEST

static Suite *pthread_rwlock_handover_suite(void)
{
	Suite *s = suite_create("pthread_rwlock hand-over under libtofutex-pthread");
	TCase *tc;

	tc = tcase_create("preload");
	tcase_add_test(tc, test_preload_in_effect);
	suite_add_tcase(s, tc);

	tc = tcase_create("hand-over");
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_waiting_writer_before_later_readers, 0, 2);
	tcase_add_loop_test(tc, test_write_release_to_waiting_writer, 0,
			    N_WRITER_FIRST);
	tcase_add_loop_test(tc, test_trywrlock_behind_waiting_writer, 0,
			    N_WRITER_FIRST);
	tcase_add_loop_test(tc, test_free_reserved_lock_refuses_readers, 0,
			    K_COUNT);
	tcase_add_loop_test(tc,
			    test_release_racing_timed_writer_leaves_no_reservation,
			    0, 2);
	tcase_add_loop_test(tc, test_write_release_to_writer_behind_readers, 0,
			    N_WRITER_FIRST);
	tcase_add_loop_test(tc, test_timed_out_writer_keeps_others_reservation,
			    0, 2);
	tcase_add_loop_test(tc, test_release_to_waiters_may_be_stolen, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pthread_rwlock_handover_suite());
}
