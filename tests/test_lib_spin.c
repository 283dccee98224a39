// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex's user-space spin budget (lib/spin.c): the default, which
 * backs off after spins that ran out on an owner that kept the word,
 * TOFUTEX_SPIN_NS overriding it, and the auto budget following the cost
 * of the thread's kernel trips, up to its cap -- both fed directly and
 * through a contended tofutex_mutex_lock() that has to wait in the
 * kernel. The budget is the library's internal state, so this program
 * reads it through the library's hidden functions (linked statically).
 * Runs on whichever backend the library chose, natively too.
 */
#include "common.h"
#include "internal.h"

/* lib/spin.c's defaults, as tofutex(3) documents them. */
#define SPIN_DEFAULT_NS		5000u
#define SPIN_AUTO_CAP_NS	50000u

/* Every test sets the environment itself, then makes the library reread it. */
static void spin_env(const char *value)
{
	if (value)
		ck_assert_int_eq(setenv("TOFUTEX_SPIN_NS", value, 1), 0);
	else
		ck_assert_int_eq(unsetenv("TOFUTEX_SPIN_NS"), 0);
	tofutex__spin_forget();
}

static void spin_env_reset(void)
{
	unsetenv("TOFUTEX_SPIN_NS");
	tofutex__spin_forget();
}

/*
 * The estimate after @n kernel trips of @ns each, from @est, as spin.c
 * keeps it: a trip above @cap counts as @cap.
 */
static uint32_t ewma(uint32_t est, uint64_t ns, uint32_t cap, unsigned int n)
{
	int64_t e = est;

	if (ns > cap)
		ns = cap;
	while (n--)
		e += ((int64_t)ns - e) / 8;
	return (uint32_t)e;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* ---- fixed budgets ---- */

/* The default and explicit budgets do not move, whatever the trips cost. */
START_TEST(test_spin_fixed)
{
	static const struct {
		const char *env;
		uint32_t ns;
	} cases[] = {
		{ NULL, SPIN_DEFAULT_NS },
		{ "0", 0 },
		{ "1234", 1234 },
		{ "10000000", 10000000 },
		/* Ignored: not a number of ns in range, not auto. */
		{ "", SPIN_DEFAULT_NS },
		{ "5us", SPIN_DEFAULT_NS },
		{ "-1", SPIN_DEFAULT_NS },
		{ "10000001", SPIN_DEFAULT_NS },
		{ "auto:0", SPIN_DEFAULT_NS },
		{ "auto:", SPIN_DEFAULT_NS },
		{ "auto:20000000", SPIN_DEFAULT_NS },
		{ "autox", SPIN_DEFAULT_NS },
	};

	spin_env(cases[_i].env);
	ck_assert(!tofutex__spin_auto());
	ck_assert_uint_eq(tofutex__spin_budget(), cases[_i].ns);
	tofutex__spin_learn(1000000);
	tofutex__spin_learn(10);
	ck_assert_uint_eq(tofutex__spin_budget(), cases[_i].ns);
}
END_TEST

/* ---- the default's back-off after stuck spins ---- */

/*
 * Each spin that ran out on the owner it began with halves the default
 * budget, down to a sixteenth; a spin that ran out while the word changed
 * hands leaves it; a spin that took the word restores it whole.
 */
START_TEST(test_spin_default_backs_off)
{
	uint32_t want = SPIN_DEFAULT_NS;
	int n;

	spin_env(NULL);
	for (n = 0; n < 6; n++) {
		tofutex__spin_ended(false, true);
		if (want > SPIN_DEFAULT_NS / 16)
			want /= 2;
		ck_assert_uint_eq(tofutex__spin_budget(), want);
	}
	ck_assert_uint_eq(want, SPIN_DEFAULT_NS / 16);
	tofutex__spin_ended(false, false);
	ck_assert_uint_eq(tofutex__spin_budget(), want);
	tofutex__spin_ended(true, false);
	ck_assert_uint_eq(tofutex__spin_budget(), SPIN_DEFAULT_NS);
}
END_TEST

/* A budget set in TOFUTEX_SPIN_NS, fixed or auto, is spent whole. */
START_TEST(test_spin_set_no_backoff)
{
	static const char *const envs[] = { "5000", "auto" };
	uint32_t before;

	spin_env(envs[_i]);
	before = tofutex__spin_budget();
	for (int n = 0; n < 3; n++)
		tofutex__spin_ended(false, true);
	ck_assert_uint_eq(tofutex__spin_budget(), before);
}
END_TEST

/* The back-off is the calling thread's, as the auto estimate is. */
static void *stuck_main(void *arg)
{
	(void)arg;
	for (int n = 0; n < 4; n++)
		tofutex__spin_ended(false, true);
	return (void *)(uintptr_t)tofutex__spin_budget();
}

START_TEST(test_spin_backoff_per_thread)
{
	pthread_t t;
	void *ret;

	spin_env(NULL);
	ck_assert_int_eq(pthread_create(&t, NULL, stuck_main, NULL), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_uint_eq((uintptr_t)ret, SPIN_DEFAULT_NS / 16);
	ck_assert_uint_eq(tofutex__spin_budget(), SPIN_DEFAULT_NS);
}
END_TEST

/* ---- auto ---- */

/*
 * auto starts at the default, moves an eighth of the way to each trip's
 * cost, up and down, and never past its cap: the default one, or N.
 */
START_TEST(test_spin_auto_follows)
{
	static const struct {
		const char *env;
		uint32_t cap;
	} cases[] = {
		{ "auto", SPIN_AUTO_CAP_NS },
		{ "auto:200000", 200000 },
		{ "auto:3000", 3000 },
	};
	uint32_t cap = cases[_i].cap, est = SPIN_DEFAULT_NS;
	unsigned int n;

	spin_env(cases[_i].env);
	ck_assert(tofutex__spin_auto());
	ck_assert_uint_eq(tofutex__spin_budget(), min_u32(est, cap));

	for (n = 0; n < 50; n++) {
		tofutex__spin_learn(40000);
		est = ewma(est, 40000, cap, 1);
		ck_assert_uint_eq(tofutex__spin_budget(), min_u32(est, cap));
	}
	ck_assert_uint_ge(tofutex__spin_budget(), min_u32(39000, cap));
	/* A cost above the cap counts as the cap. */
	for (n = 0; n < 200; n++)
		tofutex__spin_learn(10 * (uint64_t)cap + 1000000);
	est = ewma(est, cap, cap, 200);
	ck_assert_uint_eq(tofutex__spin_budget(), min_u32(est, cap));
	ck_assert_uint_ge(tofutex__spin_budget(), cap - cap / 50);

	for (n = 0; n < 200; n++)
		tofutex__spin_learn(1500);
	ck_assert_uint_le(tofutex__spin_budget(), 1500 + 8);
	ck_assert_uint_ge(tofutex__spin_budget(), 1500);
}
END_TEST

/* The estimate is the calling thread's: another thread's trips leave it. */
static void *learn_main(void *arg)
{
	(void)arg;
	for (int n = 0; n < 100; n++)
		tofutex__spin_learn(SPIN_AUTO_CAP_NS);
	return (void *)(uintptr_t)tofutex__spin_budget();
}

START_TEST(test_spin_auto_per_thread)
{
	pthread_t t;
	void *ret;

	spin_env("auto");
	ck_assert_int_eq(pthread_create(&t, NULL, learn_main, NULL), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_uint_gt((uintptr_t)ret, SPIN_AUTO_CAP_NS - 1000);
	ck_assert_uint_eq(tofutex__spin_budget(), SPIN_DEFAULT_NS);
}
END_TEST

/* ---- through the mutex ---- */

struct holder {
	tofutex_mutex_t m;
	atomic_int locked;
};

/*
 * Hold the mutex until a locker waits in the kernel (WAITERS is set), and
 * then for longer than the auto cap, so that the locker's trip into the
 * kernel costs more than the cap however late it came.
 */
static void *holder_main(void *arg)
{
	struct holder *h = arg;
	bool ok;

	if (tofutex_mutex_lock(&h->m))
		return (void *)1;
	atomic_store(&h->locked, 1);
	WAIT_UNTIL(ok, word_load(&h->m.word) & TOFUTEX_WAITERS, TEST_WAIT_NS);
	sleep_ns(20 * SPIN_AUTO_CAP_NS);
	if (tofutex_mutex_unlock(&h->m) || !ok)
		return (void *)1;
	return NULL;
}

/*
 * A lock that waits in the kernel for longer than the cap moves an auto
 * budget by an eighth of the way to the cap; under a fixed budget
 * (TOFUTEX_SPIN_NS=N) the same wait leaves the budget at N.
 */
START_TEST(test_spin_learns_from_lock)
{
	static const char *const envs[] = { "auto", "2000" };
	struct holder h = { .m = TOFUTEX_MUTEX_INITIALIZER };
	uint32_t before;
	pthread_t t;
	void *ret;

	spin_env(envs[_i]);
	before = tofutex__spin_budget();
	ck_assert_int_eq(pthread_create(&t, NULL, holder_main, &h), 0);
	while (!atomic_load(&h.locked))
		sleep_ns(100 * NSEC_PER_USEC);
	ck_assert_int_eq(tofutex_mutex_lock(&h.m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&h.m), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_ptr_null(ret);
	if (_i == 0)
		ck_assert_uint_eq(tofutex__spin_budget(),
				  ewma(before, SPIN_AUTO_CAP_NS,
				       SPIN_AUTO_CAP_NS, 1));
	else
		ck_assert_uint_eq(tofutex__spin_budget(), before);
}
END_TEST

/* Hold the mutex until a locker waits in the kernel (WAITERS is set). */
static void *hold_until_waiters_main(void *arg)
{
	struct holder *h = arg;
	bool ok;

	if (tofutex_mutex_lock(&h->m))
		return (void *)1;
	atomic_store(&h->locked, 1);
	WAIT_UNTIL(ok, word_load(&h->m.word) & TOFUTEX_WAITERS, TEST_WAIT_NS);
	if (tofutex_mutex_unlock(&h->m) || !ok)
		return (void *)1;
	return NULL;
}

/*
 * A lock whose spin ran out while the owner it found kept the word (the
 * owner let go only once the locker waited in the kernel) halves the
 * default budget of the locking thread.
 */
START_TEST(test_spin_stuck_lock_backs_off)
{
	struct holder h = { .m = TOFUTEX_MUTEX_INITIALIZER };
	pthread_t t;
	void *ret;

	spin_env(NULL);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_until_waiters_main,
					&h), 0);
	while (!atomic_load(&h.locked))
		sleep_ns(100 * NSEC_PER_USEC);
	ck_assert_uint_eq(tofutex__spin_budget(), SPIN_DEFAULT_NS);
	ck_assert_int_eq(tofutex_mutex_lock(&h.m), 0);
	ck_assert_int_eq(tofutex_mutex_unlock(&h.m), 0);
	ck_assert(join_within(t, &ret, TEST_WAIT_NS));
	ck_assert_ptr_null(ret);
	ck_assert_uint_eq(tofutex__spin_budget(), SPIN_DEFAULT_NS / 2);
}
END_TEST

struct excl {
	tofutex_mutex_t m;
	unsigned long counter;
	atomic_int inside;
};

static void *excl_main(void *arg)
{
	struct excl *e = arg;

	for (int i = 0; i < 3000; i++) {
		if (tofutex_mutex_lock(&e->m)) {
			TFAIL("lock failed");
			return NULL;
		}
		TCHECK(atomic_fetch_add(&e->inside, 1) == 0, "two owners");
		e->counter++;
		busy_work(50);
		if (i % 200 == 0)
			sleep_ns(200 * NSEC_PER_USEC);
		atomic_fetch_sub(&e->inside, 1);
		TCHECK(tofutex_mutex_unlock(&e->m) == 0, "unlock failed");
	}
	return NULL;
}

/* Under auto the mutex still excludes and every locker gets through. */
START_TEST(test_spin_auto_excludes)
{
	struct excl e = { .m = TOFUTEX_MUTEX_INITIALIZER };
	pthread_t t[4];
	int i;

	spin_env("auto");
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, excl_main, &e), 0);
	for (i = 0; i < 4; i++)
		ck_assert(join_within(t[i], NULL, TEST_WAIT_NS));
	tfail_assert();
	ck_assert_uint_eq(e.counter, 4 * 3000);
	ck_assert_uint_eq(word_load(&e.m.word), 0);
}
END_TEST

static Suite *lib_spin_suite(void)
{
	Suite *s = suite_create("lib_spin");
	TCase *tc;

	tc = tcase_create("budget");
	tcase_add_checked_fixture(tc, tfail_reset, spin_env_reset);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_spin_fixed, 0, 12);
	tcase_add_loop_test(tc, test_spin_auto_follows, 0, 3);
	tcase_add_test(tc, test_spin_auto_per_thread);
	tcase_add_test(tc, test_spin_default_backs_off);
	tcase_add_loop_test(tc, test_spin_set_no_backoff, 0, 2);
	tcase_add_test(tc, test_spin_backoff_per_thread);
	suite_add_tcase(s, tc);

	tc = tcase_create("mutex");
	tcase_add_checked_fixture(tc, tfail_reset, spin_env_reset);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_spin_learns_from_lock, 0, 2);
	tcase_add_test(tc, test_spin_stuck_lock_backs_off);
	tcase_add_test(tc, test_spin_auto_excludes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(lib_spin_suite());
}
