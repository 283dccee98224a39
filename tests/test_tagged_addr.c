// SPDX-License-Identifier: GPL-2.0
/*
 * arm64's tagged user addresses (the kernel's tagged-address ABI: a tag in
 * the top byte of a user pointer, which the CPU ignores on access): the
 * module answers a word's address with a tag as futex(2) answers it, with
 * the ABI off (the default) and on (PR_SET_TAGGED_ADDR_CTRL). Each case
 * runs against futex(2) first and the module must give the same: the
 * error of a wait and a wake on a tagged address, and whether a wake
 * through the untagged address, or another tag, reaches a waiter on the
 * tagged one. Other architectures have no tags: nothing to compare.
 */
#include <linux/futex.h>
#include <sys/prctl.h>

#include "common.h"

#if defined(__aarch64__)

#ifndef PR_SET_TAGGED_ADDR_CTRL
#define PR_SET_TAGGED_ADDR_CTRL 55
#define PR_TAGGED_ADDR_ENABLE (1UL << 0)
#endif

#define TAG(p, t) ((uint64_t)(uintptr_t)(p) | ((uint64_t)(t) << 56))

enum backend { B_FUTEX, B_MODULE };

static int dev_fd(void)
{
	int fd = tofutex_fd();

	ck_assert_msg(fd >= 0, "tofutex_fd() = %d (%s)", fd, strerror(-fd));
	return fd;
}

/* A wait on @uaddr for @val until @rel_ns from now: 0 or the errno. */
static int wait_on(enum backend b, uint64_t uaddr, uint32_t val,
		   uint64_t rel_ns)
{
	struct timespec ts = ts_in(rel_ns);
	struct tofutex_wait a;

	if (b == B_FUTEX)
		return syscall(SYS_futex, (void *)(uintptr_t)uaddr,
			       FUTEX_WAIT_BITSET_PRIVATE, val, &ts, NULL,
			       FUTEX_BITSET_MATCH_ANY) ? errno : 0;
	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.val = val;
	a.flags = TOFUTEX_WAIT_DEADLINE;
	a.deadline_ns = ts_ns(&ts);
	return ioctl(dev_fd(), TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

/* A wake of one on @uaddr: the number woken, or -errno. */
static long wake_on(enum backend b, uint64_t uaddr)
{
	struct tofutex_wake a;
	long r;

	if (b == B_FUTEX) {
		r = syscall(SYS_futex, (void *)(uintptr_t)uaddr,
			    FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		return r < 0 ? -errno : r;
	}
	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.count = 1;
	r = ioctl(dev_fd(), TOFUTEX_IOC_WAKE, &a);
	return r < 0 ? -errno : r;
}

struct waiter {
	enum backend b;
	uint64_t uaddr;
	uint32_t *word;
	atomic_uint tid;
	int err;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, test_gettid());
	w->err = wait_on(w->b, w->uaddr, 0, 2 * NSEC_PER_SEC);
	return NULL;
}

/*
 * A waiter on @word through tag @wait_tag, asleep; then a wake through tag
 * @wake_tag: the number it woke (the waiter's own end is awaited either
 * way, by its timeout when the wake missed it).
 */
static long cross_wake(enum backend b, uint32_t *word, unsigned int wait_tag,
		       unsigned int wake_tag)
{
	struct waiter w = { .b = b, .uaddr = TAG(word, wait_tag), .word = word };
	pthread_t t;
	long woken;
	bool ok;

	*word = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, waiter_main, &w), 0);
	WAIT_UNTIL(ok, atomic_load(&w.tid) && thread_state(atomic_load(&w.tid)) == 'S',
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "the waiter did not sleep");
	woken = wake_on(b, TAG(word, wake_tag));
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	return woken;
}

/* The ABI off: a tagged address's wait and wake, as futex(2) answers. */
START_TEST(test_tagged_without_abi)
{
	uint32_t word = 1;
	uint64_t tagged = TAG(&word, 0x5a);
	int fe = wait_on(B_FUTEX, tagged, 0, NSEC_PER_MSEC);
	int me = wait_on(B_MODULE, tagged, 0, NSEC_PER_MSEC);
	long fw = wake_on(B_FUTEX, tagged), mw = wake_on(B_MODULE, tagged);

	ck_assert_msg(fe == me, "wait, tagged, ABI off: futex(2) %s, module %s",
		      strerror(fe), strerror(me));
	ck_assert_msg(fw == mw, "wake, tagged, ABI off: futex(2) %ld, module %ld",
		      fw, mw);
}
END_TEST

/*
 * The ABI on: a tagged address is the word's; a wake through the
 * untagged address or another tag reaches a waiter on a tagged one
 * exactly when futex(2)'s does (_i: 0 untagged wake, 1 another tag, 2 the
 * same tag).
 */
START_TEST(test_tagged_with_abi)
{
	static const unsigned int wake_tags[] = { 0, 0x33, 0x5a };
	uint32_t word = 1;
	uint64_t tagged = TAG(&word, 0x5a);
	long fw, mw;

	if (prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0, 0, 0)) {
		printf("skipped: no tagged-address ABI (%s)\n", strerror(errno));
		return;
	}
	/* A value that differs: both refuse to sleep the same way. */
	ck_assert_int_eq(wait_on(B_FUTEX, tagged, 0, NSEC_PER_MSEC),
			 wait_on(B_MODULE, tagged, 0, NSEC_PER_MSEC));
	fw = cross_wake(B_FUTEX, &word, 0x5a, wake_tags[_i]);
	mw = cross_wake(B_MODULE, &word, 0x5a, wake_tags[_i]);
	ck_assert_msg(fw == mw,
		      "wait with tag 0x5a, wake with tag %#x: futex(2) woke %ld, the module %ld",
		      wake_tags[_i], fw, mw);
}
END_TEST

/* A fresh page of its own, not touched yet: its first access faults. */
static uint32_t *fresh_word(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert(p != MAP_FAILED);
	return p;
}

/* A lock of a free word through @uaddr: 0 or the errno. */
static int lock_on(enum backend b, uint64_t uaddr)
{
	struct tofutex_lock a;

	if (b == B_FUTEX)
		return syscall(SYS_futex, (void *)(uintptr_t)uaddr,
			       FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0) ?
			       errno : 0;
	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	return ioctl(dev_fd(), TOFUTEX_IOC_LOCK, &a) ? errno : 0;
}

/*
 * The ABI on, a tagged word whose page is not there yet (never touched;
 * the same after MADV_DONTNEED, or a copy-on-write page in a fork child):
 * the call faults the page in by the untagged address, as futex(2) does,
 * rather than failing with EFAULT (_i: 0 wait, 1 lock).
 */
START_TEST(test_tagged_page_not_present)
{
	uint32_t *fw = fresh_word(), *mw = fresh_word();
	int fe, me;

	if (prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0, 0, 0)) {
		printf("skipped: no tagged-address ABI (%s)\n", strerror(errno));
		return;
	}
	if (_i == 0) {
		/* The word is 0, not 1: both refuse to sleep, EAGAIN. */
		fe = wait_on(B_FUTEX, TAG(fw, 0x5a), 1, NSEC_PER_MSEC);
		me = wait_on(B_MODULE, TAG(mw, 0x5a), 1, NSEC_PER_MSEC);
	} else {
		fe = lock_on(B_FUTEX, TAG(fw, 0x5a));
		me = lock_on(B_MODULE, TAG(mw, 0x5a));
		ck_assert_uint_eq(*mw & TOFUTEX_TID_MASK, test_gettid());
	}
	ck_assert_msg(fe == me,
		      "%s on a tagged word not present yet: futex(2) %s, module %s",
		      _i ? "lock" : "wait", strerror(fe), strerror(me));
	munmap(fw, 4096);
	munmap(mw, 4096);
}
END_TEST

static Suite *tagged_suite(void)
{
	Suite *s = suite_create("tagged addresses");
	TCase *tc = tcase_create("arm64");

	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_tagged_without_abi);
	tcase_add_loop_test(tc, test_tagged_with_abi, 0, 3);
	tcase_add_loop_test(tc, test_tagged_page_not_present, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

#else

START_TEST(test_no_tags_here)
{
	printf("skipped: tagged user addresses are arm64's\n");
}
END_TEST

static Suite *tagged_suite(void)
{
	Suite *s = suite_create("tagged addresses");
	TCase *tc = tcase_create("none");

	tcase_add_test(tc, test_no_tags_here);
	suite_add_tcase(s, tc);
	return s;
}

#endif

int main(void)
{
	SRunner *sr = srunner_create(tagged_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
