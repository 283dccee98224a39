// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, stack use: a thread's first contended
 * mutex, reader/writer lock and condition wait take about as much of its
 * stack as glibc's. glibc's slow paths call nothing through a PLT slot;
 * the library's call into libc (clock_gettime, syscall, sched_yield...),
 * and a slot bound lazily runs the loader's resolver on the caller's
 * stack the first time, which saves the vector registers there (some
 * 3 KB with AVX-512): a thread with a small stack that takes its first
 * contended lock deep in its calls would overflow where glibc's does not.
 * The library makes its system calls itself and calls the few C library
 * functions of its slow paths once from a constructor (lib/bind.c).
 *
 * Each test measures one thread that runs one contended operation (a
 * timed one that times out, so that no second thread must be timed) on a
 * painted stack, against the same thread running the same call
 * uncontended; the program's own PLT slots are bound before either runs,
 * so that only the library's show. Check forks each test, so each
 * contended path runs for the first time in its process.
 */
#include "stack_depth.h"

/* What the library's contended path may add to the uncontended one. */
#define CONTENDED_EXTRA	1536

enum op { OP_MUTEX, OP_RWLOCK, OP_COND };

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

struct run {
	enum op op;
	bool plain;	/* OP_COND: an invalid deadline, refused at once */
	int ret;
};

static void *op_main(void *arg)
{
	struct run *r = arg;
	struct timespec ts = realtime_in(2 * NSEC_PER_MSEC);

	switch (r->op) {
	case OP_MUTEX:
		r->ret = pthread_mutex_timedlock(&mutex, &ts);
		if (!r->ret)
			pthread_mutex_unlock(&mutex);
		break;
	case OP_RWLOCK:
		r->ret = pthread_rwlock_timedwrlock(&rwlock, &ts);
		if (!r->ret)
			pthread_rwlock_unlock(&rwlock);
		break;
	case OP_COND:
		if (r->plain)
			ts.tv_nsec = -1;
		pthread_mutex_lock(&mutex);
		r->ret = pthread_cond_timedwait(&cond, &mutex, &ts);
		pthread_mutex_unlock(&mutex);
		break;
	}
	return NULL;
}

/* Bytes of a painted stack that a thread running @op wrote. */
static size_t op_stack_depth(enum op op, bool plain, int *ret)
{
	struct run r = { .op = op, .plain = plain };
	size_t depth = stack_depth(op_main, &r);

	*ret = r.ret;
	return depth;
}

/* Hold what @op contends for, or release it. */
static void hold(enum op op, bool on)
{
	if (op == OP_MUTEX)
		ck_assert_int_eq(on ? pthread_mutex_lock(&mutex) :
				      pthread_mutex_unlock(&mutex), 0);
	else if (op == OP_RWLOCK)
		ck_assert_int_eq(on ? pthread_rwlock_rdlock(&rwlock) :
				      pthread_rwlock_unlock(&rwlock), 0);
}

START_TEST(test_first_contended_stack)
{
	enum op op = (enum op)_i;
	size_t plain, contended;
	int ret;

	/*
	 * Bind the program's own slots (the first thread), then measure the
	 * uncontended path (for a condition wait, one refused for its
	 * deadline before it waits).
	 */
	op_stack_depth(op, true, &ret);
	plain = op_stack_depth(op, true, &ret);
	ck_assert_int_eq(ret, op == OP_COND ? EINVAL : 0);
	hold(op, true);
	contended = op_stack_depth(op, false, &ret);
	hold(op, false);
	ck_assert_int_eq(ret, ETIMEDOUT);
	ck_assert_msg(contended <= plain + CONTENDED_EXTRA,
		      "op %d: the first contended call took %zu bytes of stack, the uncontended one %zu",
		      op, contended, plain);
}
END_TEST

static Suite *stack_suite(void)
{
	Suite *s = suite_create("libtofutex-pthread stack use");
	TCase *tc = tcase_create("stack");

	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_first_contended_stack, OP_MUTEX,
			    OP_COND + 1);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(stack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
