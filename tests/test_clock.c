// SPDX-License-Identifier: GPL-2.0
/*
 * CLOCK_REALTIME deadlines (TOFUTEX_LOCK_CLOCK_REALTIME and
 * TOFUTEX_WAIT_CLOCK_REALTIME) on LOCK, WAIT and SWAP, through the raw ABI:
 *
 * - the feature bit is reported;
 * - a near realtime deadline ends the call with ETIMEDOUT, a past one at
 *   once, a far one not before the caller is woken;
 * - the flag without a deadline is EINVAL;
 * - the deadline follows clock_settime(): setting the clock past it while
 *   the caller sleeps ends the call with ETIMEDOUT, and setting the clock
 *   back moves the deadline away, as FUTEX_CLOCK_REALTIME does.
 *
 * The tests that set the clock run as root in the guest and put the clock
 * back (by the monotonic time that passed) before they assert anything,
 * so a failing assertion never leaves the clock wrong for later tests.
 */
#include "common.h"

/* How far the tests move the realtime clock. */
#define CLOCK_JUMP_NS	(3600 * NSEC_PER_SEC)

/* Long enough that a deadline this far ahead is not reached by accident. */
#define FAR_NS		(TEST_WAIT_NS)

enum op { OP_LOCK, OP_WAIT, OP_SWAP, NR_OPS };

static const char *const op_names[NR_OPS] = { "LOCK", "WAIT", "SWAP" };
static const unsigned long op_cmds[NR_OPS] = {
	TOFUTEX_IOC_LOCK, TOFUTEX_IOC_WAIT, TOFUTEX_IOC_SWAP,
};

static int dev_fd(void)
{
	int fd = tofutex_fd();

	ck_assert_msg(fd >= 0, "tofutex_fd() = %d (%s)", fd, strerror(-fd));
	return fd;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Move the realtime clock by @delta_ns; false when not permitted. */
static bool clock_shift(int64_t delta_ns)
{
	uint64_t t = realtime_ns() + (uint64_t)delta_ns;
	struct timespec ts = ts_from_ns(t);

	return clock_settime(CLOCK_REALTIME, &ts) == 0;
}

/*
 * The words of one call: @word is what LOCK takes (held by the test's
 * main thread) or what WAIT and SWAP wait on (holding 0); SWAP wakes
 * nobody on @other.
 */
struct call {
	enum op op;
	uint32_t word;
	uint32_t other;
	uint32_t flags;
	uint64_t deadline_ns;
	atomic_uint tid;
	atomic_int result;	/* -1 until the call returned */
	pthread_t thread;
};

/* One raw call as @c says: 0 or the errno value. */
static int call_once(struct call *c)
{
	union any_arg a;

	memset(&a, 0, sizeof(a));
	switch (c->op) {
	case OP_LOCK:
		a.lock.uaddr = (uintptr_t)&c->word;
		a.lock.flags = c->flags;
		a.lock.deadline_ns = c->deadline_ns;
		break;
	case OP_WAIT:
		a.wait.uaddr = (uintptr_t)&c->word;
		a.wait.flags = c->flags;
		a.wait.deadline_ns = c->deadline_ns;
		break;
	default:
		a.swap.wait_uaddr = (uintptr_t)&c->word;
		a.swap.wake_uaddr = (uintptr_t)&c->other;
		a.swap.flags = c->flags;
		a.swap.deadline_ns = c->deadline_ns;
		break;
	}
	return ioctl(dev_fd(), op_cmds[c->op], &a) ? errno : 0;
}

static void *call_main(void *arg)
{
	struct call *c = arg;

	atomic_store(&c->tid, test_gettid());
	atomic_store(&c->result, call_once(c));
	return NULL;
}

/*
 * Prepare @c for @op with a realtime deadline @rel_ns from now. For LOCK
 * the caller (the main thread) takes the word first, so that the call
 * must wait.
 */
static void call_prepare(struct call *c, enum op op, int64_t rel_ns)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->flags = TOFUTEX_WAIT_DEADLINE | TOFUTEX_WAIT_CLOCK_REALTIME;
	c->deadline_ns = realtime_ns() + (uint64_t)rel_ns;
	atomic_store(&c->result, -1);
	if (op == OP_LOCK)
		c->word = test_gettid();
}

/* Start @c in a thread; returns once it sleeps in its ioctl. */
static void call_start_asleep(struct call *c)
{
	bool ok;

	ck_assert_int_eq(pthread_create(&c->thread, NULL, call_main, c), 0);
	WAIT_UNTIL(ok, atomic_load(&c->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(atomic_load(&c->tid), op_cmds[c->op], op_names[c->op]);
}

/*
 * End @c: release the lock, or change the word and wake its sleeper.
 * Returns 0 or an errno value, and asserts nothing: it also runs while
 * the clock is moved.
 */
static int call_release_err(struct call *c)
{
	struct tofutex_unlock u = { .uaddr = (uintptr_t)&c->word };
	uint32_t tid = test_gettid();

	if (c->op == OP_LOCK) {
		if (__atomic_compare_exchange_n(&c->word, &tid, 0, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
		return ioctl(dev_fd(), TOFUTEX_IOC_UNLOCK, &u) ? errno : 0;
	}
	__atomic_store_n(&c->word, 1, __ATOMIC_SEQ_CST);
	return tofutex_wake(&c->word, 1, NULL);
}

static void call_release(struct call *c)
{
	int r = call_release_err(c);

	ck_assert_msg(r == 0, "release: %s", strerror(r));
}

static int call_join(struct call *c)
{
	ck_assert_msg(join_within(c->thread, NULL, TEST_WAIT_NS),
		      "%s did not return", op_names[c->op]);
	return atomic_load(&c->result);
}

START_TEST(test_feature)
{
	uint64_t features;
	uint32_t abi;

	ck_assert_int_eq(tofutex_version(&abi, &features), 0);
	ck_assert(features & TOFUTEX_FEAT_CLOCK_REALTIME);
	ck_assert_uint_eq(TOFUTEX_LOCK_CLOCK_REALTIME,
			  TOFUTEX_WAIT_CLOCK_REALTIME);
}
END_TEST

/*
 * _i is the op: a deadline 200 ms ahead ends the call with ETIMEDOUT, not
 * before the realtime clock reaches it.
 */
START_TEST(test_near_deadline)
{
	struct call c;

	call_prepare(&c, (enum op)_i, 200 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, call_main, &c), 0);
	ck_assert_int_eq(call_join(&c), ETIMEDOUT);
	ck_assert_uint_ge(realtime_ns(), c.deadline_ns);
}
END_TEST

/* _i is the op: a deadline in the past ends the call at once. */
START_TEST(test_past_deadline)
{
	struct call c;

	call_prepare(&c, (enum op)_i, 0);
	c.deadline_ns -= NSEC_PER_SEC;
	ck_assert_int_eq(pthread_create(&c.thread, NULL, call_main, &c), 0);
	ck_assert_int_eq(call_join(&c), ETIMEDOUT);
	/* 0 and 1 are valid, long-past realtime deadlines too. */
	c.deadline_ns = 1;
	ck_assert_int_eq(pthread_create(&c.thread, NULL, call_main, &c), 0);
	ck_assert_int_eq(call_join(&c), ETIMEDOUT);
}
END_TEST

/* _i is the op: a far deadline does not end the call; the release does. */
START_TEST(test_far_deadline)
{
	struct call c;

	call_prepare(&c, (enum op)_i, FAR_NS);
	call_start_asleep(&c);
	call_release(&c);
	ck_assert_int_eq(call_join(&c), 0);
}
END_TEST

/* _i is the op: the clock flag without the deadline flag is EINVAL. */
START_TEST(test_flag_without_deadline)
{
	struct call c;

	call_prepare(&c, (enum op)_i, FAR_NS);
	c.flags = TOFUTEX_WAIT_CLOCK_REALTIME;
	ck_assert_int_eq(call_once(&c), EINVAL);
}
END_TEST

/*
 * _i is the op: with the caller asleep until a deadline an hour ahead,
 * the clock is set two hours forward: the call ends with ETIMEDOUT.
 */
START_TEST(test_clock_set_forward)
{
	uint64_t mono0, rt0;
	bool shifted, ok = false;
	struct call c;
	int r;

	call_prepare(&c, (enum op)_i, CLOCK_JUMP_NS);
	call_start_asleep(&c);
	mono0 = now_ns();
	rt0 = realtime_ns();
	shifted = clock_shift(2 * CLOCK_JUMP_NS);
	if (shifted)
		WAIT_UNTIL(ok, atomic_load(&c.result) != -1, TEST_WAIT_NS);
	/* Back to where it would be, before any assertion. */
	if (shifted) {
		struct timespec ts = ts_from_ns(rt0 + (now_ns() - mono0));

		clock_settime(CLOCK_REALTIME, &ts);
	}
	ck_assert_msg(shifted, "clock_settime: %s", strerror(errno));
	if (!ok)
		call_release(&c);
	r = call_join(&c);
	ck_assert_msg(r == ETIMEDOUT, "%s returned %d (%s), want ETIMEDOUT",
		      op_names[c.op], r, strerror(r));
	if (c.op == OP_LOCK)
		call_release(&c);
}
END_TEST

/*
 * _i is the op: with the caller asleep until a deadline 2 s ahead, the
 * clock is set an hour back: after 4 s the call still sleeps, and it
 * returns 0 when released. The release comes before the clock is put
 * back: by then the deadline has passed on the restored clock. A call
 * that ended before the clock went back is accepted only when the clock
 * may have reached the deadline first (a slow machine); then the round
 * is repeated with twice the margin.
 */
START_TEST(test_clock_set_back)
{
	bool shifted, asleep, late, ok = false;
	int64_t margin = 2 * (int64_t)NSEC_PER_SEC;
	uint64_t mono0, rt0, reached;
	unsigned int attempt;
	struct call c;
	int r, rel = 0;

	for (attempt = 0;; attempt++) {
		call_prepare(&c, (enum op)_i, margin);
		call_start_asleep(&c);
		mono0 = now_ns();
		rt0 = realtime_ns();
		shifted = clock_shift(-(int64_t)CLOCK_JUMP_NS);
		/* The most the clock can have read when it was set back. */
		reached = rt0 + (now_ns() - mono0);
		late = reached >= c.deadline_ns;
		if (shifted)
			sleep_ns(4 * NSEC_PER_SEC);
		asleep = atomic_load(&c.result) == -1;
		if (asleep)
			rel = call_release_err(&c);
		WAIT_UNTIL(ok, atomic_load(&c.result) != -1, TEST_WAIT_NS);
		if (shifted) {
			struct timespec ts;

			ts = ts_from_ns(rt0 + (now_ns() - mono0));
			clock_settime(CLOCK_REALTIME, &ts);
		}
		ck_assert_msg(shifted, "clock_settime: %s", strerror(errno));
		ck_assert_msg(rel == 0, "release: %s", strerror(rel));
		ck_assert_msg(ok, "%s did not return when released",
			      op_names[c.op]);
		r = call_join(&c);
		if (asleep || !late || attempt == 3)
			break;
		/* It timed out before the clock went back: again. */
		ck_assert_msg(r == ETIMEDOUT,
			      "%s returned %d (%s), want ETIMEDOUT",
			      op_names[c.op], r, strerror(r));
		if (c.op == OP_LOCK)
			call_release(&c);
		margin *= 2;
	}
	ck_assert_msg(asleep, "%s ended (%d) although the clock went back%s",
		      op_names[c.op], r,
		      late ? " (its deadline had passed, 4 times)" : "");
	ck_assert_int_eq(r, 0);
}
END_TEST

static Suite *clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc;

	tc = tcase_create("realtime");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_feature);
	tcase_add_loop_test(tc, test_near_deadline, 0, NR_OPS);
	tcase_add_loop_test(tc, test_past_deadline, 0, NR_OPS);
	tcase_add_loop_test(tc, test_far_deadline, 0, NR_OPS);
	tcase_add_loop_test(tc, test_flag_without_deadline, 0, NR_OPS);
	suite_add_tcase(s, tc);

	tc = tcase_create("clock-settime");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_clock_set_forward, 0, NR_OPS);
	tcase_add_loop_test(tc, test_clock_set_back, 0, NR_OPS);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(clock_suite());
}
