// SPDX-License-Identifier: GPL-2.0
/*
 * TO locks through the raw ABI of uapi/tofutex.h: bad input, the UNLOCK
 * and LOCK corner cases, EINTR and restart of a sleeping LOCK, descriptors
 * inherited over fork(), and the TO futex RFC's sample mutex written fresh
 * with cmpxchg and raw ioctls.
 *
 * Only the fork test uses libtofutex (the library must reopen the device
 * in the child); everything else opens /dev/tofutex itself.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/*
 * A TID no task can have: pid_max is at most 2^22 (PID_MAX_LIMIT). Below
 * RW_SHARED, bit 29: a word with it is a reader/writer lock held by
 * readers, which LOCK refuses (EINVAL) rather than taking it over.
 */
#define NO_SUCH_TID	TOFUTEX_RW_COUNT_MASK

/*
 * Addresses user space can never access on x86-64, and on arm64: the
 * kernel's there too; NON_CANONICAL_ADDR is above the user range, which
 * on arm64 reaches 2^52 (52-bit VA): 2^47 is a user address there.
 */
#define KERNEL_TEXT_ADDR	0xffffffff81000000ULL
#define KERNEL_DIRECT_ADDR	0xffff888000000000ULL
#if defined(__aarch64__)
#define NON_CANONICAL_ADDR	0x0010000000000000ULL
#else
#define NON_CANONICAL_ADDR	0x0000800000000000ULL
#endif

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

/* TOFUTEX_IOC_LOCK: 0 or the errno value. */
static int raw_lock_full(int fd, uint64_t uaddr, uint32_t flags,
			 uint64_t deadline_ns, uint64_t reserved,
			 uint32_t *status)
{
	struct tofutex_lock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.flags = flags;
	a.deadline_ns = deadline_ns;
	a.reserved = reserved;
	if (ioctl(fd, TOFUTEX_IOC_LOCK, &a))
		return errno;
	if (status)
		*status = a.status;
	return 0;
}

/* LOCK with a deadline far enough away that only a bug reaches it. */
static int raw_lock(int fd, const void *uaddr, uint32_t *status)
{
	return raw_lock_full(fd, (uintptr_t)uaddr, TOFUTEX_LOCK_DEADLINE,
			     now_ns() + TEST_WAIT_NS, 0, status);
}

/* TOFUTEX_IOC_UNLOCK: 0 or the errno value. */
static int raw_unlock_full(int fd, uint64_t uaddr, uint32_t flags,
			   uint64_t reserved, uint32_t *woken)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = uaddr;
	a.flags = flags;
	a.reserved = reserved;
	if (ioctl(fd, TOFUTEX_IOC_UNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
}

static int raw_unlock(int fd, const void *uaddr, uint32_t *woken)
{
	return raw_unlock_full(fd, (uintptr_t)uaddr, 0, 0, woken);
}

static struct tofutex_stats raw_stats(int fd, uint32_t scope)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	st.flags = scope;
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_STATS, &st) == 0,
		      "TOFUTEX_IOC_STATS: %s", strerror(errno));
	return st;
}

static void assert_no_live_states(int fd)
{
	struct tofutex_stats p = raw_stats(fd, TOFUTEX_STATS_PROCESS);
	struct tofutex_stats g = raw_stats(fd, TOFUTEX_STATS_GLOBAL);

	ck_assert_msg(p.live_states == 0, "process live_states = %llu, want 0",
		      (unsigned long long)p.live_states);
	ck_assert_msg(g.live_states == 0, "global live_states = %llu, want 0",
		      (unsigned long long)g.live_states);
}

static bool cas(uint32_t *w, uint32_t old, uint32_t new)
{
	return __atomic_compare_exchange_n(w, &old, new, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void word_store(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
}

/*
 * Release a raw lock the caller owns: cmpxchg TID -> 0, else (WAITERS or
 * OWNER_DIED set) TOFUTEX_IOC_UNLOCK. 0 or the errno value.
 */
static int raw_release(int fd, uint32_t *w, uint32_t tid)
{
	if (cas(w, tid, 0))
		return 0;
	return raw_unlock(fd, w, NULL);
}

/* A live thread of this process that does nothing until told to exit. */
struct idler {
	atomic_uint tid;
	atomic_bool stop;
	pthread_t thread;
};

static void *idler_main(void *arg)
{
	struct idler *t = arg;

	atomic_store(&t->tid, test_gettid());
	while (!atomic_load(&t->stop))
		sleep_ns(NSEC_PER_MSEC);
	return NULL;
}

static uint32_t idler_start(struct idler *t)
{
	bool ok;

	memset(t, 0, sizeof(*t));
	ck_assert_int_eq(pthread_create(&t->thread, NULL, idler_main, t), 0);
	WAIT_UNTIL(ok, atomic_load(&t->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	return atomic_load(&t->tid);
}

static void idler_stop(struct idler *t)
{
	atomic_store(&t->stop, true);
	ck_assert(join_within(t->thread, NULL, TEST_WAIT_NS));
}

/* ---- Bad input ---- */

enum bad_word {
	BAD_NULL,
	BAD_MISALIGNED_1,
	BAD_MISALIGNED_2,
	BAD_MISALIGNED_3,
	BAD_UNMAPPED,
	BAD_KERNEL_TEXT,
	BAD_KERNEL_DIRECT,
	BAD_NON_CANONICAL,
	BAD_RO_FREE,		/* read-only, word 0 */
	BAD_RO_LIVE_OWNER,	/* read-only, another live thread's TID */
	BAD_RO_DEAD_OWNER,	/* read-only, a TID no thread has */
	BAD_RO_SELF_WAITERS,	/* read-only, own TID | WAITERS (UNLOCK) */
	BAD_FLAGS_BIT0,
	BAD_FLAGS_BIT1,
	BAD_FLAGS_BIT3,
	BAD_FLAGS_BIT31,
	BAD_RESERVED,
	BAD_NR
};

enum bad_op { OP_LOCK, OP_UNLOCK };

static const struct {
	enum bad_op op;
	enum bad_word word;
	const char *name;
	int want;		/* errno */
} bad_cases[] = {
	{ OP_LOCK,   BAD_NULL,		  "NULL",			EFAULT },
	{ OP_LOCK,   BAD_MISALIGNED_1,	  "addr % 4 == 1",		EINVAL },
	{ OP_LOCK,   BAD_MISALIGNED_2,	  "addr % 4 == 2",		EINVAL },
	{ OP_LOCK,   BAD_MISALIGNED_3,	  "addr % 4 == 3",		EINVAL },
	{ OP_LOCK,   BAD_UNMAPPED,	  "unmapped page",		EFAULT },
	{ OP_LOCK,   BAD_KERNEL_TEXT,	  "kernel text",		EFAULT },
	{ OP_LOCK,   BAD_KERNEL_DIRECT,	  "kernel direct map",		EFAULT },
	{ OP_LOCK,   BAD_NON_CANONICAL,	  "non-canonical",		EFAULT },
	{ OP_LOCK,   BAD_RO_FREE,	  "read-only, free",		EFAULT },
	{ OP_LOCK,   BAD_RO_LIVE_OWNER,	  "read-only, live owner",	EFAULT },
	{ OP_LOCK,   BAD_RO_DEAD_OWNER,	  "read-only, dead owner",	EFAULT },
	{ OP_LOCK,   BAD_FLAGS_BIT1,	  "CLOCK_REALTIME, no DEADLINE",	EINVAL },
	{ OP_LOCK,   BAD_FLAGS_BIT3,	  "flags bit 3",		EINVAL },
	{ OP_LOCK,   BAD_FLAGS_BIT31,	  "flags bit 31",		EINVAL },
	{ OP_LOCK,   BAD_RESERVED,	  "reserved != 0",		EINVAL },
	{ OP_UNLOCK, BAD_NULL,		  "NULL",			EFAULT },
	{ OP_UNLOCK, BAD_MISALIGNED_1,	  "addr % 4 == 1",		EINVAL },
	{ OP_UNLOCK, BAD_MISALIGNED_2,	  "addr % 4 == 2",		EINVAL },
	{ OP_UNLOCK, BAD_MISALIGNED_3,	  "addr % 4 == 3",		EINVAL },
	{ OP_UNLOCK, BAD_UNMAPPED,	  "unmapped page",		EFAULT },
	{ OP_UNLOCK, BAD_KERNEL_TEXT,	  "kernel text",		EFAULT },
	{ OP_UNLOCK, BAD_KERNEL_DIRECT,	  "kernel direct map",		EFAULT },
	{ OP_UNLOCK, BAD_NON_CANONICAL,	  "non-canonical",		EFAULT },
	{ OP_UNLOCK, BAD_RO_SELF_WAITERS, "read-only, own TID|WAITERS",	EFAULT },
	{ OP_UNLOCK, BAD_FLAGS_BIT0,	  "flags bit 0",		EINVAL },
	{ OP_UNLOCK, BAD_FLAGS_BIT31,	  "flags bit 31",		EINVAL },
	{ OP_UNLOCK, BAD_RESERVED,	  "reserved != 0",		EINVAL },
};

#define NR_BAD_CASES ((int)(sizeof(bad_cases) / sizeof(bad_cases[0])))

struct bad_input {
	uint64_t uaddr;
	uint32_t flags_extra;
	bool no_deadline;	/* LOCK without TOFUTEX_LOCK_DEADLINE */
	uint64_t reserved;
	uint32_t *check;	/* readable word that must stay unchanged */
	uint32_t value;		/* its value */
	uint32_t *ro;		/* read-only page to unmap */
	uint32_t aligned[2];
	struct idler idler;
	bool idler_used;
};

static void bad_setup(struct bad_input *b, enum bad_word which)
{
	unsigned char *bytes = (unsigned char *)b->aligned;

	memset(b, 0, sizeof(*b));
	b->uaddr = (uintptr_t)&b->aligned[0];
	b->check = &b->aligned[0];
	switch (which) {
	case BAD_NULL:
		b->uaddr = 0;
		b->check = NULL;
		break;
	case BAD_MISALIGNED_1:
	case BAD_MISALIGNED_2:
	case BAD_MISALIGNED_3:
		b->uaddr = (uintptr_t)(bytes + (which - BAD_MISALIGNED_1 + 1));
		break;
	case BAD_UNMAPPED:
		b->uaddr = unmapped_addr();
		b->check = NULL;
		break;
	case BAD_KERNEL_TEXT:
		b->uaddr = KERNEL_TEXT_ADDR;
		b->check = NULL;
		break;
	case BAD_KERNEL_DIRECT:
		b->uaddr = KERNEL_DIRECT_ADDR;
		b->check = NULL;
		break;
	case BAD_NON_CANONICAL:
		b->uaddr = NON_CANONICAL_ADDR;
		b->check = NULL;
		break;
	case BAD_RO_FREE:
		b->value = 0;
		break;
	case BAD_RO_LIVE_OWNER:
		b->value = idler_start(&b->idler);
		b->idler_used = true;
		break;
	case BAD_RO_DEAD_OWNER:
		b->value = NO_SUCH_TID;
		break;
	case BAD_RO_SELF_WAITERS:
		b->value = test_gettid() | WAITERS;
		break;
	case BAD_FLAGS_BIT0:
		b->flags_extra = 1U << 0;
		break;
	case BAD_FLAGS_BIT1:
		b->flags_extra = TOFUTEX_LOCK_CLOCK_REALTIME;
		b->no_deadline = true;
		break;
	case BAD_FLAGS_BIT3:
		b->flags_extra = 1U << 3;
		break;
	case BAD_FLAGS_BIT31:
		b->flags_extra = 1U << 31;
		break;
	case BAD_RESERVED:
		b->reserved = 1;
		break;
	case BAD_NR:
		break;
	}
	if (which >= BAD_RO_FREE && which <= BAD_RO_SELF_WAITERS) {
		b->ro = ro_word(b->value);
		b->uaddr = (uintptr_t)b->ro;
		b->check = b->ro;
	}
}

static void bad_teardown(struct bad_input *b)
{
	if (b->check)
		ck_assert_msg(word_load(b->check) == b->value,
			      "word changed: 0x%08x, was 0x%08x",
			      word_load(b->check), b->value);
	if (b->ro)
		ck_assert_int_eq(munmap(b->ro, (size_t)sysconf(_SC_PAGESIZE)),
				 0);
	if (b->idler_used)
		idler_stop(&b->idler);
}

/* _i indexes bad_cases: the ioctl fails as the table says, nothing changes. */
START_TEST(test_bad_input)
{
	const char *op = bad_cases[_i].op == OP_LOCK ? "LOCK" : "UNLOCK";
	int want = bad_cases[_i].want;
	struct bad_input b;
	int fd = dev_open();
	int r;

	bad_setup(&b, bad_cases[_i].word);
	if (bad_cases[_i].op == OP_LOCK)
		r = raw_lock_full(fd, b.uaddr,
				  (b.no_deadline ? 0 : TOFUTEX_LOCK_DEADLINE) |
				  b.flags_extra,
				  now_ns() + TEST_WAIT_NS, b.reserved, NULL);
	else
		r = raw_unlock_full(fd, b.uaddr, b.flags_extra, b.reserved,
				    NULL);
	ck_assert_msg(r == want, "%s, %s: got %d (%s), want %d (%s)", op,
		      bad_cases[_i].name, r, strerror(r), want,
		      strerror(want));
	bad_teardown(&b);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

START_TEST(test_bad_argument_pointer)
{
	int fd = dev_open();

	errno = 0;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	errno = 0;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_UNLOCK, NULL), -1);
	ck_assert_int_eq(errno, EFAULT);
	errno = 0;
	ck_assert_int_eq(ioctl(fd, TOFUTEX_IOC_LOCK,
			       (void *)(uintptr_t)KERNEL_TEXT_ADDR), -1);
	ck_assert_int_eq(errno, EFAULT);
	errno = 0;
	ck_assert_int_eq(ioctl(fd, _IOWR(TOFUTEX_IOC_MAGIC, 0x7f,
					  struct tofutex_lock), NULL), -1);
	ck_assert_int_eq(errno, ENOTTY);
	close(fd);
}
END_TEST

/* ---- LOCK and UNLOCK semantics at the word level ---- */

START_TEST(test_lock_free_word)
{
	uint32_t tid = test_gettid();
	uint32_t word = 0, status = 0;
	int fd = dev_open();

	ck_assert_int_eq(raw_lock(fd, &word, &status), 0);
	ck_assert_uint_eq(word, tid);
	ck_assert_uint_eq(status & TOFUTEX_STATUS_HOW_MASK,
			  TOFUTEX_STATUS_STOLEN);
	ck_assert_uint_eq(status >> TOFUTEX_STATUS_SLEEPS_SHIFT, 0);
	ck_assert_int_eq(raw_release(fd, &word, tid), 0);
	ck_assert_uint_eq(word, 0);
	close(fd);
}
END_TEST

struct no_poll {
	uint32_t word, tid;
	int fd, ret;
	long switches;
};

static long thread_voluntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw;
}

static void *no_poll_locker(void *arg)
{
	struct no_poll *n = arg;
	long before = thread_voluntary_switches();

	__atomic_store_n(&n->tid, test_gettid(), __ATOMIC_RELEASE);
	n->ret = raw_lock_full(n->fd, (uintptr_t)&n->word,
			       TOFUTEX_LOCK_DEADLINE |
			       TOFUTEX_LOCK_NO_OWNER_POLL,
			       now_ns() + TEST_WAIT_NS, 0, NULL);
	n->switches = thread_voluntary_switches() - before;
	if (!n->ret)
		raw_release(n->fd, &n->word, n->tid);
	return NULL;
}

/*
 * TOFUTEX_LOCK_NO_OWNER_POLL: the sleeping top waiter wakes for the
 * unlock only, not every owner_check_ns to look at its owner: over a
 * one-second wait its voluntary context switches stay few (the sleep and
 * the wake-up, with some slack), where owner_check_ns (25 ms by default)
 * would make it about forty.
 */
START_TEST(test_lock_no_owner_poll_sleeps_until_unlock)
{
	struct no_poll n = { .word = test_gettid(), .switches = -1 };
	struct tofutex_version v;
	pthread_t t;
	bool ok;

	n.fd = dev_open();
	memset(&v, 0, sizeof(v));
	ck_assert_int_eq(ioctl(n.fd, TOFUTEX_IOC_VERSION, &v), 0);
	ck_assert(v.features & TOFUTEX_FEAT_NO_OWNER_POLL);
	ck_assert_int_eq(pthread_create(&t, NULL, no_poll_locker, &n), 0);
	WAIT_UNTIL(ok, __atomic_load_n(&n.tid, __ATOMIC_ACQUIRE), TEST_WAIT_NS);
	ck_assert(ok);
	wait_asleep_in(n.tid, TOFUTEX_IOC_LOCK, "LOCK");
	sleep_ns(NSEC_PER_SEC);
	ck_assert_int_eq(raw_release(n.fd, &n.word, test_gettid()), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(n.ret, 0);
	ck_assert_msg(n.switches >= 0 && n.switches <= 10,
		      "the waiter woke %ld times in one second", n.switches);
	close(n.fd);
}
END_TEST

START_TEST(test_lock_relock_edeadlk)
{
	uint32_t tid = test_gettid();
	const uint32_t values[] = { tid, tid | WAITERS, tid | OWNER_DIED,
				    tid | WAITERS | OWNER_DIED };
	int fd = dev_open();
	uint32_t word;
	unsigned int i;
	int r;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		word = values[i];
		r = raw_lock(fd, &word, NULL);
		ck_assert_msg(r == EDEADLK, "LOCK on own word 0x%08x: %d (%s)",
			      values[i], r, strerror(r));
		ck_assert_uint_eq(word, values[i]);
	}
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * A word naming a live task of another process (a child, init) is never
 * taken over: LOCK fails with EPERM and leaves the word alone. A TID that
 * names no task is a dead owner's: LOCK takes it over and says so.
 */
START_TEST(test_lock_foreign_tid)
{
	uint32_t tid = test_gettid();
	struct tofutex_stats before, after;
	uint32_t owners[4], word, status;
	int fd = dev_open();
	int sync[2];
	unsigned int i;
	pid_t child;
	char c;
	int r;

	ck_assert_int_eq(pipe(sync), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* Alive until the parent closes its end. */
		close(sync[1]);
		while (read(sync[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(sync[0]);
	owners[0] = (uint32_t)child;
	owners[1] = (uint32_t)child | WAITERS;
	owners[2] = 1;
	owners[3] = NO_SUCH_TID;
	for (i = 0; i < 3; i++) {
		word = owners[i];
		r = raw_lock(fd, &word, NULL);
		ck_assert_msg(r == EPERM,
			      "LOCK on a word owned by another process's task 0x%08x: %d (%s), want EPERM",
			      owners[i], r, strerror(r));
		ck_assert_uint_eq(word, owners[i]);
	}
	before = raw_stats(fd, TOFUTEX_STATS_PROCESS);
	word = owners[3];
	status = 0;
	r = raw_lock(fd, &word, &status);
	ck_assert_msg(r == 0, "LOCK on a word owned by 0x%08x: %d (%s)",
		      owners[3], r, strerror(r));
	ck_assert_msg(word == (tid | OWNER_DIED),
		      "word 0x%08x after taking over 0x%08x, want 0x%08x",
		      word, owners[3], tid | OWNER_DIED);
	ck_assert_uint_eq(status & TOFUTEX_STATUS_HOW_MASK,
			  TOFUTEX_STATUS_OWNER_DIED);
	after = raw_stats(fd, TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.owner_deaths, before.owner_deaths + 1);
	close(sync[1]);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/*
 * UNLOCK by a caller that does not own the word: with the TID cleared
 * (the RFC's pattern) or stolen by another thread, there is nothing to do;
 * the word of a live owner is never released.
 */
START_TEST(test_unlock_not_owner)
{
	uint32_t tid = test_gettid();
	uint32_t word, woken;
	struct idler other;
	uint32_t other_tid = idler_start(&other);
	const uint32_t foreign[] = { other_tid, other_tid | WAITERS,
				     other_tid | OWNER_DIED };
	int fd = dev_open();
	unsigned int i;
	int r;

	/* Free: nothing to do. */
	word = 0;
	woken = 7;
	ck_assert_int_eq(raw_unlock(fd, &word, &woken), 0);
	ck_assert_uint_eq(word, 0);
	ck_assert_uint_eq(woken, 0);

	/* TID cleared by user space, nobody waiting. */
	word = WAITERS;
	woken = 7;
	ck_assert_int_eq(raw_unlock(fd, &word, &woken), 0);
	ck_assert_uint_eq(word & ~WAITERS, 0);
	ck_assert_uint_eq(woken, 0);

	/* Owned by another live thread of this process. */
	for (i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		word = foreign[i];
		woken = 7;
		r = raw_unlock(fd, &word, &woken);
		ck_assert_msg(r == 0, "UNLOCK of 0x%08x: %d (%s)", foreign[i],
			      r, strerror(r));
		ck_assert_msg(word == foreign[i],
			      "UNLOCK by a non-owner changed 0x%08x to 0x%08x",
			      foreign[i], word);
		ck_assert_uint_eq(woken, 0);
	}

	/* Own word without waiters: the kernel releases it. */
	word = tid;
	woken = 7;
	ck_assert_int_eq(raw_unlock(fd, &word, &woken), 0);
	ck_assert_uint_eq(word, 0);
	ck_assert_uint_eq(woken, 0);

	idler_stop(&other);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* A thread in a raw LOCK on a word. */
struct raw_waiter {
	int fd;
	uint32_t *word;
	uint64_t deadline;	/* 0: none */
	uint32_t tid;
	int ret;		/* 0 or errno */
	uint32_t status;
	uint32_t word_after;
	bool release;		/* release the lock after getting it */
	int release_ret;
	atomic_bool entering;
	atomic_bool done;
	pthread_t thread;
};

static void *raw_waiter_main(void *arg)
{
	struct raw_waiter *w = arg;

	w->tid = test_gettid();
	atomic_store(&w->entering, true);
	w->ret = raw_lock_full(w->fd, (uintptr_t)w->word,
			       w->deadline ? TOFUTEX_LOCK_DEADLINE : 0,
			       w->deadline, 0, &w->status);
	w->word_after = word_load(w->word);
	if (w->ret == 0 && w->release)
		w->release_ret = raw_release(w->fd, w->word, w->tid);
	atomic_store(&w->done, true);
	return NULL;
}

/* Start a raw waiter and wait until it sleeps (WAITERS set). */
static void raw_waiter_start(struct raw_waiter *w, int fd, uint32_t *word,
			     bool release)
{
	bool ok;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->word = word;
	w->deadline = now_ns() + 3 * TEST_WAIT_NS;
	w->release = release;
	ck_assert_int_eq(pthread_create(&w->thread, NULL, raw_waiter_main, w),
			 0);
	WAIT_UNTIL(ok, atomic_load(&w->entering) && (word_load(word) & WAITERS),
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "raw waiter never went to sleep: word 0x%08x (ret %d)",
		      word_load(word), w->ret);
	ck_assert_msg(!atomic_load(&w->done),
		      "LOCK returned %d while the word was held", w->ret);
}

static void raw_waiter_join(struct raw_waiter *w)
{
	ck_assert_msg(join_within(w->thread, NULL, 2 * TEST_WAIT_NS),
		      "raw waiter did not return");
}

/* An UNLOCK by a non-owner never hands a live owner's lock to a waiter. */
START_TEST(test_unlock_not_owner_with_waiter)
{
	uint32_t tid = test_gettid();
	struct raw_waiter w;
	struct idler other;
	uint32_t other_tid = idler_start(&other);
	uint32_t word = other_tid, held, woken;
	int fd = dev_open();

	raw_waiter_start(&w, fd, &word, true);
	held = word_load(&word);
	ck_assert_uint_eq(held, other_tid | WAITERS);
	ck_assert_int_eq(raw_unlock(fd, &word, NULL), 0);
	ck_assert_msg(word_load(&word) == held,
		      "UNLOCK by a non-owner changed 0x%08x to 0x%08x", held,
		      word_load(&word));
	/* Let a wrongly woken waiter take it, if it would. */
	sleep_ns(20 * NSEC_PER_MSEC);
	ck_assert_msg(!atomic_load(&w.done),
		      "waiter returned %d (word 0x%08x) while another thread owned the lock",
		      w.ret, w.word_after);
	ck_assert_uint_eq(word_load(&word) & TID_MASK, other_tid);

	/* Pretend to be the owner: take the word over from the idler. */
	ck_assert(cas(&word, held, tid | WAITERS));
	woken = 0;
	ck_assert_int_eq(raw_unlock(fd, &word, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	raw_waiter_join(&w);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_uint_eq(w.word_after & TID_MASK, w.tid);
	ck_assert_int_eq(w.release_ret, 0);
	ck_assert_uint_eq(word_load(&word), 0);
	idler_stop(&other);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* ---- Signals at the raw level: EINTR, or a restart ---- */

START_TEST(test_raw_lock_eintr)
{
	uint32_t tid = test_gettid();
	uint32_t word = tid;
	struct raw_waiter w;
	int fd = dev_open();
	bool ok;

	install_sigusr1(false);
	raw_waiter_start(&w, fd, &word, false);
	ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
	raw_waiter_join(&w);
	ck_assert_msg(w.ret == EINTR, "LOCK interrupted: %d (%s), want EINTR",
		      w.ret, strerror(w.ret));
	ck_assert_int_eq(atomic_load(&sig_count), 1);
	ck_assert_uint_eq(word_load(&word) & TID_MASK, tid);
	assert_no_live_states(fd);
	ck_assert_int_eq(raw_release(fd, &word, tid), 0);
	ck_assert_uint_eq(word_load(&word), 0);

	/* The word still works: a new waiter gets it. */
	word = tid;
	raw_waiter_start(&w, fd, &word, true);
	ck_assert_int_eq(raw_release(fd, &word, tid), 0);
	raw_waiter_join(&w);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(w.release_ret, 0);
	WAIT_UNTIL(ok, word_load(&word) == 0, TEST_WAIT_NS);
	ck_assert(ok);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

START_TEST(test_raw_lock_sa_restart)
{
	uint32_t tid = test_gettid();
	uint32_t word = tid;
	struct raw_waiter w;
	int fd = dev_open();
	bool ok;
	int k;

	install_sigusr1(true);
	raw_waiter_start(&w, fd, &word, false);
	for (k = 1; k <= 3; k++) {
		ck_assert_int_eq(pthread_kill(w.thread, SIGUSR1), 0);
		WAIT_UNTIL(ok, atomic_load(&sig_count) >= k, TEST_WAIT_NS);
		ck_assert_msg(ok, "handler did not run for signal %d", k);
		/* Give a LOCK that wrongly returned the chance to show it. */
		sleep_ns(5 * NSEC_PER_MSEC);
		ck_assert_msg(!atomic_load(&w.done),
			      "LOCK returned %d (%s) after signal %d under SA_RESTART while held",
			      w.ret, strerror(w.ret), k);
	}
	ck_assert_int_eq(raw_release(fd, &word, tid), 0);
	raw_waiter_join(&w);
	ck_assert_msg(w.ret == 0, "restarted LOCK: %d (%s)", w.ret,
		      strerror(w.ret));
	ck_assert_uint_eq(w.word_after & TID_MASK, w.tid);
	ck_assert_int_eq(atomic_load(&sig_count), 3);
	ck_assert_int_eq(raw_release(fd, &word, w.tid), 0);
	ck_assert_uint_eq(word_load(&word), 0);
	assert_no_live_states(fd);
	close(fd);
}
END_TEST

/* ---- fork(): the inherited descriptor cannot reach the parent ---- */

#define CHILD_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			dprintf(report, "child, line %d: ", __LINE__);	\
			dprintf(report, __VA_ARGS__);			\
			_exit(1);					\
		}							\
	} while (0)

struct child_locker {
	tofutex_mutex_t *m;
	int ret;
};

static void *child_locker_main(void *arg)
{
	struct child_locker *c = arg;

	c->ret = tofutex_mutex_lock(c->m);
	if (c->ret == 0)
		c->ret = tofutex_mutex_unlock(c->m);
	return NULL;
}

static void fork_child(int report, int inherited, int lib_inherited,
		       tofutex_mutex_t *held, uint32_t held_value,
		       tofutex_mutex_t *spare)
{
	uint32_t tid = test_gettid();
	struct child_locker cl = { .m = spare };
	struct tofutex_version ver;
	struct tofutex_stats st;
	pthread_t t;
	bool ok;
	int r, fd;

	/* Every ioctl through the parent's descriptor: EBADFD. */
	r = raw_lock_full(inherited, (uintptr_t)&held->word,
			  TOFUTEX_LOCK_DEADLINE, now_ns() + NSEC_PER_SEC, 0,
			  NULL);
	CHILD_CHECK(r == EBADFD, "LOCK via inherited fd: %d (%s)\n", r,
		    strerror(r));
	r = raw_unlock_full(inherited, (uintptr_t)&held->word, 0, 0, NULL);
	CHILD_CHECK(r == EBADFD, "UNLOCK via inherited fd: %d (%s)\n", r,
		    strerror(r));
	memset(&st, 0, sizeof(st));
	r = ioctl(inherited, TOFUTEX_IOC_STATS, &st) ? errno : 0;
	CHILD_CHECK(r == EBADFD, "STATS via inherited fd: %d (%s)\n", r,
		    strerror(r));
	memset(&ver, 0, sizeof(ver));
	r = ioctl(inherited, TOFUTEX_IOC_VERSION, &ver) ? errno : 0;
	CHILD_CHECK(r == EBADFD, "VERSION via inherited fd: %d (%s)\n", r,
		    strerror(r));
	CHILD_CHECK(word_load(&held->word) == held_value,
		    "own copy of the word changed: 0x%08x\n",
		    word_load(&held->word));

	/*
	 * The library's descriptor of the parent is closed in the child
	 * (EBADF) or, if it were still open, refused (EBADFD). The fork
	 * handler opens the child's own at once (the parent was on the
	 * module), which may take the number just closed: then that number
	 * is the child's.
	 */
	fd = tofutex_fd();
	CHILD_CHECK(fd >= 0, "tofutex_fd() = %d\n", fd);
	if (fd != lib_inherited) {
		r = raw_unlock_full(lib_inherited, (uintptr_t)&held->word, 0,
				    0, NULL);
		CHILD_CHECK(r == EBADF || r == EBADFD,
			    "UNLOCK via the library's inherited fd: %d (%s)\n",
			    r, strerror(r));
	}

	/* The library's descriptor is the child's own. */
	r = tofutex_stats(TOFUTEX_STATS_PROCESS, &st);
	CHILD_CHECK(r == 0, "tofutex_stats in the child: %d (%s)\n", r,
		    strerror(r));
	CHILD_CHECK(st.lock_calls == 0 && st.unlock_calls == 0,
		    "child sees %llu lock / %llu unlock calls: not its own table\n",
		    (unsigned long long)st.lock_calls,
		    (unsigned long long)st.unlock_calls);

	/* A contended lock in the child works. */
	r = tofutex_mutex_lock(spare);
	CHILD_CHECK(r == 0, "lock: %d\n", r);
	CHILD_CHECK(word_load(&spare->word) == tid,
		    "word 0x%08x, child tid %u: stale cached TID?\n",
		    word_load(&spare->word), tid);
	CHILD_CHECK(pthread_create(&t, NULL, child_locker_main, &cl) == 0,
		    "pthread_create\n");
	WAIT_UNTIL(ok, word_load(&spare->word) & WAITERS, TEST_WAIT_NS);
	CHILD_CHECK(ok, "child's waiter never slept: word 0x%08x\n",
		    word_load(&spare->word));
	r = tofutex_mutex_unlock(spare);
	CHILD_CHECK(r == 0, "unlock: %d\n", r);
	CHILD_CHECK(join_within(t, NULL, TEST_WAIT_NS),
		    "child's waiter did not get the lock\n");
	CHILD_CHECK(cl.ret == 0, "child's waiter: %d\n", cl.ret);
	r = tofutex_stats(TOFUTEX_STATS_PROCESS, &st);
	CHILD_CHECK(r == 0 && st.lock_calls >= 1 && st.live_states == 0,
		    "child stats: %d, lock_calls %llu, live %llu\n", r,
		    (unsigned long long)st.lock_calls,
		    (unsigned long long)st.live_states);

	/*
	 * The child's copy of the parent's held mutex names a live thread of
	 * another process: never taken over.
	 */
	r = tofutex_mutex_lock(held);
	CHILD_CHECK(r == EPERM, "lock of the copied held mutex: %d\n", r);
	CHILD_CHECK(word_load(&held->word) == held_value,
		    "word 0x%08x after EPERM\n", word_load(&held->word));
	_exit(0);
}

START_TEST(test_fork_inherited_descriptor)
{
	static tofutex_mutex_t held = TOFUTEX_MUTEX_INITIALIZER;
	static tofutex_mutex_t spare = TOFUTEX_MUTEX_INITIALIZER;
	struct tofutex_stats before, after;
	uint32_t holder_tid, held_value;
	struct raw_waiter w;
	struct idler holder;
	char msg[512] = "";
	int report[2], status = 0, fd, lib_fd;
	ssize_t n;
	pid_t pid;
	bool ok;

	/*
	 * Two descriptors reach the child: one the test opened (still open
	 * there: the kernel must refuse it) and the library's (which the
	 * library must not use in the child).
	 */
	fd = dev_open();
	lib_fd = tofutex_fd();
	ck_assert_int_ge(lib_fd, 0);
	/* A parent thread owns the mutex, another sleeps waiting for it. */
	holder_tid = idler_start(&holder);
	word_store(&held.word, holder_tid);
	raw_waiter_start(&w, fd, &held.word, true);
	held_value = word_load(&held.word);
	ck_assert_uint_eq(held_value, holder_tid | WAITERS);
	before = stats_get(TOFUTEX_STATS_PROCESS);

	ck_assert_int_eq(pipe(report), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(report[0]);
		fork_child(report[1], fd, lib_fd, &held, held_value, &spare);
	}
	close(report[1]);
	WAIT_UNTIL(ok, waitpid(pid, &status, WNOHANG) == pid,
		   2 * TEST_WAIT_NS);
	if (!ok) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	n = read(report[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(report[0]);
	ck_assert_msg(ok, "child hung: %s", msg);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child failed (status 0x%x): %s", status, msg);

	/* The parent's lock and waiter are as they were. */
	ck_assert_msg(word_load(&held.word) == held_value,
		      "parent's word changed from 0x%08x to 0x%08x",
		      held_value, word_load(&held.word));
	ck_assert_msg(!atomic_load(&w.done),
		      "parent's waiter returned %d during the child's run",
		      w.ret);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.unlock_calls, before.unlock_calls);
	ck_assert_uint_eq(after.lock_calls, before.lock_calls);
	ck_assert_uint_eq(after.live_states, 1);

	/* Release as the owner would: the waiter gets it. */
	ck_assert(cas(&held.word, held_value, test_gettid() | WAITERS));
	ck_assert_int_eq(raw_unlock(fd, &held.word, NULL), 0);
	raw_waiter_join(&w);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(w.release_ret, 0);
	ck_assert_uint_eq(word_load(&held.word), 0);
	idler_stop(&holder);
	after = stats_get(TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(after.live_states, 0);
	close(fd);
}
END_TEST

/* ---- The RFC's sample mutex, written against the raw ABI ---- */

/*
 * mutex_lock(): cmpxchg 0 -> TID, else LOCK until it succeeds.
 * mutex_unlock(): cmpxchg TID -> 0; else either call UNLOCK with the TID
 * still in the word, or (the RFC's variant) first clear the TID bits in
 * user space, keeping the flags, and call UNLOCK only if WAITERS was set.
 */
enum rfc_unlock {
	RFC_UNLOCK_KERNEL,	/* UNLOCK with the TID still in the word */
	RFC_UNLOCK_CLEAR_TID,	/* clear the TID bits, then UNLOCK */
};

struct rfc {
	int fd;
	uint32_t word;
	unsigned long counter;
	unsigned long iters;
	unsigned int variant;	/* 0, 1: all threads alike; 2: mixed */
};

struct rfc_thread {
	struct rfc *s;
	unsigned int idx;
	unsigned long how[TOFUTEX_STATUS_OWNER_DIED + 1];
	pthread_t thread;
};

static _Thread_local uint32_t rfc_tid;

static bool rfc_mutex_lock(struct rfc_thread *t, uint32_t *w)
{
	uint32_t status = 0, how, sleeps;
	int r;

	if (cas(w, 0, rfc_tid))
		return true;
	for (;;) {
		r = raw_lock_full(t->s->fd, (uintptr_t)w, 0, 0, 0, &status);
		if (r == 0)
			break;
		if (r != EINTR) {
			TFAIL("thread %u: LOCK = %d (%s)", t->idx, r,
			      strerror(r));
			return false;
		}
	}
	how = status & TOFUTEX_STATUS_HOW_MASK;
	sleeps = status >> TOFUTEX_STATUS_SLEEPS_SHIFT;
	if (how < TOFUTEX_STATUS_STOLEN || how > TOFUTEX_STATUS_HANDOFF) {
		TFAIL("thread %u: LOCK status 0x%08x", t->idx, status);
		return false;
	}
	if ((how == TOFUTEX_STATUS_STOLEN && sleeps) ||
	    (how == TOFUTEX_STATUS_WOKEN && !sleeps)) {
		TFAIL("thread %u: status 0x%08x: how %u after %u sleeps",
		      t->idx, status, how, sleeps);
		return false;
	}
	if ((word_load(w) & TID_MASK) != rfc_tid) {
		TFAIL("thread %u: LOCK returned 0, word 0x%08x", t->idx,
		      word_load(w));
		return false;
	}
	t->how[how]++;
	return true;
}

static bool rfc_mutex_unlock(struct rfc_thread *t, uint32_t *w,
			     enum rfc_unlock how)
{
	uint32_t old, fval = rfc_tid;
	int r;

	if (__atomic_compare_exchange_n(w, &fval, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return true;
	if (how == RFC_UNLOCK_CLEAR_TID) {
		/* Clear only the TID portion of the word. */
		do {
			old = fval;
		} while (!__atomic_compare_exchange_n(w, &fval,
						      old & ~TID_MASK, false,
						      __ATOMIC_RELEASE,
						      __ATOMIC_RELAXED));
		if (!(old & WAITERS))
			return true;
	}
	r = raw_unlock(t->s->fd, w, NULL);
	if (r) {
		TFAIL("thread %u: UNLOCK = %d (%s)", t->idx, r, strerror(r));
		return false;
	}
	return true;
}

static void *rfc_main(void *arg)
{
	struct rfc_thread *t = arg;
	struct rfc *s = t->s;
	enum rfc_unlock how;
	unsigned long k;

	rfc_tid = test_gettid();
	if (s->variant == 2)
		how = t->idx % 2 ? RFC_UNLOCK_CLEAR_TID : RFC_UNLOCK_KERNEL;
	else
		how = s->variant;
	for (k = 0; k < s->iters; k++) {
		volatile unsigned long *c = &s->counter;
		unsigned long v;

		if (!rfc_mutex_lock(t, &s->word))
			return NULL;
		v = *c;
		/* Now and then sleep holding it, so that waiters sleep. */
		if (k % 16 == t->idx)
			sleep_ns(100 * NSEC_PER_USEC);
		else
			busy_work(50);
		*c = v + 1;
		if (!rfc_mutex_unlock(t, &s->word, how))
			return NULL;
	}
	return NULL;
}

#define RFC_THREADS 4

/* _i: 0 UNLOCK with the TID, 1 clear the TID first, 2 both mixed. */
START_TEST(test_rfc_sample_mutex)
{
	struct rfc_thread t[RFC_THREADS];
	struct tofutex_stats before, after;
	unsigned long slow = 0;
	struct rfc *s;
	unsigned int i, h;

	s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->fd = dev_open();
	s->iters = scaled(10000, 100);
	s->variant = _i;
	before = raw_stats(s->fd, TOFUTEX_STATS_PROCESS);
	for (i = 0; i < RFC_THREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].s = s;
		t[i].idx = i;
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL, rfc_main,
						&t[i]), 0);
	}
	for (i = 0; i < RFC_THREADS; i++)
		ck_assert_msg(join_within(t[i].thread, NULL,
					  TEST_TIMEOUT_LONG * NSEC_PER_SEC),
			      "thread %u did not finish", i);
	tfail_assert();
	ck_assert_msg(s->counter == s->iters * RFC_THREADS,
		      "counter %lu, want %lu", s->counter,
		      s->iters * RFC_THREADS);
	ck_assert_msg((word_load(&s->word) & ~WAITERS) == 0,
		      "word 0x%08x after the run", word_load(&s->word));
	after = raw_stats(s->fd, TOFUTEX_STATS_PROCESS);
	for (i = 0; i < RFC_THREADS; i++)
		for (h = 0; h <= TOFUTEX_STATUS_OWNER_DIED; h++)
			slow += t[i].how[h];
	/* The sleeping owners made the test exercise the kernel paths. */
	ck_assert_msg(slow > 0 && after.sleeps > before.sleeps,
		      "no contended acquisition (LOCKs %lu, sleeps %llu)",
		      slow,
		      (unsigned long long)(after.sleeps - before.sleeps));
	ck_assert_uint_eq(after.lock_calls - before.lock_calls, slow);
	assert_no_live_states(s->fd);
	close(s->fd);
	free(s);
}
END_TEST

static Suite *lock_abi_suite(void)
{
	Suite *s = suite_create("lock_abi");
	TCase *tc;

	tc = tcase_create("bad_input");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_bad_input, 0, NR_BAD_CASES);
	tcase_add_test(tc, test_bad_argument_pointer);
	suite_add_tcase(s, tc);

	tc = tcase_create("word");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_lock_free_word);
	tcase_add_test(tc, test_lock_relock_edeadlk);
	tcase_add_test(tc, test_lock_no_owner_poll_sleeps_until_unlock);
	tcase_add_test(tc, test_lock_foreign_tid);
	tcase_add_test(tc, test_unlock_not_owner);
	tcase_add_test(tc, test_unlock_not_owner_with_waiter);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_raw_lock_eintr);
	tcase_add_test(tc, test_raw_lock_sa_restart);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_fork_inherited_descriptor);
	suite_add_tcase(s, tc);

	tc = tcase_create("rfc_sample");
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_rfc_sample_mutex, 0, 3);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(lock_abi_suite());
}
