// SPDX-License-Identifier: GPL-2.0
/*
 * TO lock races that need two vCPUs running at once, the kernel loops'
 * response to signals and deadlines, the LOCK status, and the module
 * parameters' ranges.
 *
 * Races whose window is a few instructions wide are made deterministic
 * with the module's debug windows (module/debug.c, built by the test
 * harness): the test names its own process and a window, and in that
 * process the kernel busy-waits at that point until the lock word changes
 * or the window's time is up, while a test thread acts. A window's wait
 * ends early on a change, so the waits below are bounds, not timings.
 *
 * - unlock_vs_new_locker: UNLOCK finds no kernel state for a word with a
 *   stale WAITERS bit and is held in the window; a new locker creates the
 *   state and would sleep. Whenever the locker slept, the UNLOCK must have
 *   woken it: a release that nobody is told about is a lost wake-up.
 * - changing_word_*: the top waiter's loop, held in its window until the
 *   word changes, faces a word that another thread changes without end.
 *   LOCK must still end at its deadline, and a SIGKILLed locker must die.
 * - queued_sleeper_status: a waiter that slept in the queue before it
 *   became top waiter reports WOKEN and its sleeps, even when it then
 *   takes the lock while spinning.
 * - lost_wakeup_handoff: a top waiter that an unlock woke and a thief
 *   beat to the word is handed the lock by the next unlock, without
 *   waiting for handoff_ns; with handoff_lost off, it is not.
 * - status_unmapped: LOCK takes the word after the argument was unmapped:
 *   it returns 0, because the caller owns the lock.
 * - steal_keeps_owner_died: a free word with OWNER_DIED taken on entry
 *   keeps the bit and says OWNER_DIED, as the library's user-space take.
 * - params_*: each parameter refuses values outside its documented range;
 *   wake_local can be turned off and on again by root.
 *
 * The tests that set module parameters restore them in an unchecked
 * teardown, which runs even when the test failed.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "common.h"
#include "params.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED
#define TID_MASK	TOFUTEX_TID_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

/* TIDs from here up name no task: pid_max is at most 2^22. */
#define FIRST_NO_SUCH_TID	(1U << 22)

/* ---- Raw calls and parameters ---- */

static int dev_open(void)
{
	int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEVICE_PATH, strerror(errno));
	return fd;
}

/* LOCK through @a (cleared, then filled in): 0 or the errno value. */
static int raw_lock_arg(int fd, struct tofutex_lock *a, uint32_t *w,
			uint64_t deadline)
{
	memset(a, 0, sizeof(*a));
	a->uaddr = (uintptr_t)w;
	if (deadline) {
		a->flags = TOFUTEX_LOCK_DEADLINE;
		a->deadline_ns = deadline;
	}
	return ioctl(fd, TOFUTEX_IOC_LOCK, a) ? errno : 0;
}

static int raw_lock(int fd, uint32_t *w, uint64_t deadline, uint32_t *status)
{
	struct tofutex_lock a;
	int r = raw_lock_arg(fd, &a, w, deadline);

	if (!r && status)
		*status = a.status;
	return r;
}

static int raw_unlock(int fd, uint32_t *w, uint32_t *woken)
{
	struct tofutex_unlock a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	if (ioctl(fd, TOFUTEX_IOC_UNLOCK, &a))
		return errno;
	if (woken)
		*woken = a.woken;
	return 0;
}

static struct tofutex_stats raw_stats(int fd)
{
	struct tofutex_stats st;

	memset(&st, 0, sizeof(st));
	st.flags = TOFUTEX_STATS_PROCESS;
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_STATS, &st) == 0,
		      "TOFUTEX_IOC_STATS: %s", strerror(errno));
	return st;
}

static bool cas(uint32_t *w, uint32_t old, uint32_t new)
{
	return __atomic_compare_exchange_n(w, &old, new, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Release a lock the caller owns, in user space or through UNLOCK. */
static int raw_release(int fd, uint32_t *w, uint32_t tid)
{
	if (cas(w, tid, 0))
		return 0;
	return raw_unlock(fd, w, NULL);
}

/* The parameters the tests change, saved before the test case. */
static const char *const saved_names[] = {
	"spin_ns", "handoff_ns", "owner_check_ns",
};
static unsigned long saved_values[3];
static bool saved[3];

/* handoff_lost, a bool: "Y" or "N" as read, "" when unreadable. */
static char saved_lost[4];

static void params_save(void)
{
	unsigned int i;
	ssize_t n;
	int fd;

	for (i = 0; i < 3; i++)
		saved[i] = param_read(saved_names[i], &saved_values[i]);
	saved_lost[0] = '\0';
	fd = open(PARAM_DIR "handoff_lost", O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, saved_lost, 1);
	saved_lost[n == 1 ? 1 : 0] = '\0';
	close(fd);
}

static void params_restore(void)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (saved[i])
			param_write(saved_names[i], saved_values[i]);
	if (saved_lost[0])
		param_write_str("handoff_lost", saved_lost);
	window_close();
}

/* ---- A thread that runs one LOCK ---- */

struct locker {
	int fd;
	uint32_t *word;
	struct tofutex_lock *arg;	/* NULL: on the thread's stack */
	bool release;			/* unlock as soon as LOCK returns */
	atomic_uint tid;
	atomic_int result;		/* -1 until LOCK returned */
	uint32_t status;
	pthread_t thread;
};

static void *locker_main(void *p)
{
	struct locker *l = p;
	struct tofutex_lock local, *a = l->arg ? l->arg : &local;
	int r;

	uint32_t tid = test_gettid();

	atomic_store(&l->tid, tid);
	r = raw_lock_arg(l->fd, a, l->word, 0);
	/* @a may be unmapped by now: only a LOCK on @local reports a status. */
	if (!r && !l->arg)
		l->status = local.status;
	if (!r && l->release)
		r = raw_release(l->fd, l->word, tid);
	atomic_store(&l->result, r);
	return NULL;
}

static uint32_t locker_start(struct locker *l, int fd, uint32_t *word,
			     struct tofutex_lock *arg, bool release)
{
	bool ok;

	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->word = word;
	l->arg = arg;
	l->release = release;
	atomic_store(&l->result, -1);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, locker_main, l), 0);
	WAIT_UNTIL(ok, atomic_load(&l->tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);
	return atomic_load(&l->tid);
}

static int locker_join(struct locker *l)
{
	ck_assert_msg(join_within(l->thread, NULL, TEST_WAIT_NS),
		      "LOCK did not return");
	return atomic_load(&l->result);
}

/* ---- UNLOCK without a state vs a new locker ---- */

struct unlocker {
	int fd;
	uint32_t *word;
	atomic_uint tid;
	atomic_int result;
	uint32_t woken;
	atomic_bool go;
	pthread_t thread;
};

static void *unlocker_main(void *p)
{
	struct unlocker *u = p;
	uint32_t tid = test_gettid();
	bool ok;

	/* Own the word, with a WAITERS bit whose waiter has gone. */
	__atomic_store_n(u->word, tid | WAITERS, __ATOMIC_RELEASE);
	atomic_store(&u->tid, tid);
	WAIT_UNTIL(ok, atomic_load(&u->go), TEST_WAIT_NS);
	atomic_store(&u->result, ok ? raw_unlock(u->fd, u->word, &u->woken) :
				      ETIMEDOUT);
	return NULL;
}

START_TEST(test_unlock_vs_new_locker)
{
	struct tofutex_stats st;
	struct unlocker u;
	struct locker l;
	uint32_t word = 0, how, sleeps;
	int fd = dev_open();
	bool ok;
	int r;

	memset(&u, 0, sizeof(u));
	u.fd = fd;
	u.word = &word;
	ck_assert_int_eq(pthread_create(&u.thread, NULL, unlocker_main, &u),
			 0);
	WAIT_UNTIL(ok, atomic_load(&u.tid) != 0, TEST_WAIT_NS);
	ck_assert(ok);

	/* UNLOCK waits in its window, after finding no state, for 300 ms. */
	window_open(getpid(), WINDOW_UNLOCK_UNQUEUED, 300 * NSEC_PER_MSEC);
	atomic_store(&u.go, true);
	WAIT_UNTIL(ok, raw_stats(fd).unlock_calls == 1, TEST_WAIT_NS);
	ck_assert(ok);
	sleep_ns(20 * NSEC_PER_MSEC);

	/* A locker arrives while the UNLOCK is in its window. */
	locker_start(&l, fd, &word, NULL, false);
	r = locker_join(&l);
	ck_assert(join_within(u.thread, NULL, TEST_WAIT_NS));
	ck_assert_int_eq(atomic_load(&u.result), 0);
	ck_assert_msg(r == 0, "LOCK: %s", strerror(r));
	ck_assert_uint_eq(word & TID_MASK, atomic_load(&l.tid));

	how = l.status & TOFUTEX_STATUS_HOW_MASK;
	sleeps = l.status >> TOFUTEX_STATUS_SLEEPS_SHIFT;
	ck_assert_msg(!sleeps || u.woken == 1,
		      "the locker slept %u times (status %#x) but UNLOCK woke nobody: its wake-up was lost",
		      sleeps, how);
	st = raw_stats(fd);
	ck_assert_uint_eq(st.live_states, 0);
	close(fd);
}
END_TEST

/* ---- A word that keeps changing ---- */

/*
 * Writes a new TID of no task into the word until told to stop, or, so
 * that a call stuck on it ends and the test can report it, until
 * CHANGER_LIFE_NS passed (then @gave_up is set).
 */
#define CHANGER_LIFE_NS	(2 * TEST_WAIT_NS)

struct changer {
	uint32_t *word;
	atomic_bool stop;
	atomic_bool gave_up;
	atomic_ulong changes;
	pthread_t thread;
};

static void *changer_main(void *p)
{
	struct changer *c = p;
	uint32_t v = FIRST_NO_SUCH_TID;
	uint64_t end = now_ns() + CHANGER_LIFE_NS;

	while (!atomic_load(&c->stop)) {
		if (++v > TID_MASK)
			v = FIRST_NO_SUCH_TID;
		__atomic_store_n(c->word, v, __ATOMIC_RELEASE);
		if ((atomic_fetch_add(&c->changes, 1) & 0xfff) == 0 &&
		    now_ns() > end) {
			atomic_store(&c->gave_up, true);
			break;
		}
	}
	return NULL;
}

static void changer_start(struct changer *c, uint32_t *word)
{
	bool ok;

	memset(c, 0, sizeof(*c));
	c->word = word;
	*word = FIRST_NO_SUCH_TID;
	ck_assert_int_eq(pthread_create(&c->thread, NULL, changer_main, c), 0);
	WAIT_UNTIL(ok, atomic_load(&c->changes) > 0, TEST_WAIT_NS);
	ck_assert(ok);
}

static void changer_stop(struct changer *c)
{
	atomic_store(&c->stop, true);
	ck_assert(join_within(c->thread, NULL, TEST_WAIT_NS));
}

/*
 * Each pass of the top waiter finds the word changed before it acts, so
 * it never takes it. The deadline must end the call all the same, while
 * the word still changes.
 */
START_TEST(test_changing_word_deadline)
{
	struct changer c;
	uint32_t word;
	int fd = dev_open();
	int r;

	window_open(getpid(), WINDOW_COMPETE, NSEC_PER_SEC);
	changer_start(&c, &word);
	r = raw_lock(fd, &word, now_ns() + 200 * NSEC_PER_MSEC, NULL);
	ck_assert_msg(!atomic_load(&c.gave_up),
		      "LOCK with a deadline in 200 ms returned %d only after the word stopped changing",
		      r);
	changer_stop(&c);
	ck_assert_msg(r == ETIMEDOUT,
		      "LOCK on a word that keeps changing, deadline in 200 ms: %d (%s), want ETIMEDOUT",
		      r, strerror(r));
	close(fd);
}
END_TEST

/*
 * The same loop in a child process, with no deadline: SIGKILL must end
 * it while the word still changes. The word is in shared memory, changed
 * by the parent.
 */
START_TEST(test_changing_word_sigkill)
{
	uint32_t *word = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int up[2], go[2], status = 0;
	struct changer c;
	pid_t child, w = 0;
	uint64_t end;
	char ch;

	ck_assert(word != MAP_FAILED);
	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(go), 0);
	changer_start(&c, word);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);

		close(up[0]);
		close(go[1]);
		if (fd < 0 || write(up[1], "x", 1) != 1 ||
		    read(go[0], &ch, 1) != 1)
			_exit(2);
		raw_lock(fd, word, 0, NULL);
		_exit(3);
	}
	close(up[1]);
	close(go[0]);
	ck_assert_int_eq(read(up[0], &ch, 1), 1);
	window_open(child, WINDOW_COMPETE, NSEC_PER_SEC);
	ck_assert_int_eq(write(go[1], "x", 1), 1);
	/* Let it enter the loop; were it not there yet, it would die anyway. */
	sleep_ns(100 * NSEC_PER_MSEC);
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	end = now_ns() + TEST_WAIT_NS;
	while (now_ns() < end) {
		w = waitpid(child, &status, WNOHANG);
		if (w)
			break;
		sleep_ns(NSEC_PER_MSEC);
	}
	ck_assert_msg(!atomic_load(&c.gave_up),
		      "a SIGKILLed LOCK left the kernel only after the word stopped changing");
	changer_stop(&c);
	if (w != child) {
		/* Stuck in the kernel: let it go, then fail. */
		waitpid(child, &status, 0);
		ck_abort_msg("a SIGKILLed LOCK stayed in the kernel while its word kept changing");
	}
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the child was not killed: status %#x", status);
	close(up[0]);
	close(go[1]);
	munmap(word, 4096);
}
END_TEST

/* ---- The LOCK status ---- */

/*
 * A (top waiter) and B (queued behind it) both sleep; the owner's UNLOCK
 * wakes A, or hands it the lock; A's leaving the queue wakes B, and A
 * releases the lock at once, while B spins on it (spin_ns and handoff_ns
 * are at their maximum, so B takes it spinning rather than sleep as top
 * waiter or be handed it).
 * B slept before it became top waiter: WOKEN, with its sleeps counted.
 */
START_TEST(test_queued_sleeper_status)
{
	uint32_t tid = test_gettid(), word = tid, a_tid, b_tid, how, sleeps;
	struct locker a, b;
	int fd = dev_open();
	bool ok;

	param_set("spin_ns", 10 * NSEC_PER_MSEC);
	param_set("handoff_ns", NSEC_PER_SEC);
	a_tid = locker_start(&a, fd, &word, NULL, true);
	WAIT_UNTIL(ok, (word_load(&word) & WAITERS) && thread_state(a_tid) == 'S',
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "A did not go to sleep as top waiter");
	b_tid = locker_start(&b, fd, &word, NULL, true);
	WAIT_UNTIL(ok, raw_stats(fd).lock_calls == 2 &&
		   thread_state(b_tid) == 'S', TEST_WAIT_NS);
	ck_assert_msg(ok, "B did not go to sleep in the queue");

	ck_assert_int_eq(raw_unlock(fd, &word, NULL), 0);
	ck_assert_int_eq(locker_join(&a), 0);
	ck_assert_int_eq(locker_join(&b), 0);
	ck_assert_uint_eq(word_load(&word), 0);

	how = b.status & TOFUTEX_STATUS_HOW_MASK;
	sleeps = b.status >> TOFUTEX_STATUS_SLEEPS_SHIFT;
	/* WOKEN, or HANDOFF if A was held up long enough for B to starve. */
	ck_assert_msg((how == TOFUTEX_STATUS_WOKEN ||
		       how == TOFUTEX_STATUS_HANDOFF) && sleeps >= 1,
		      "B slept in the queue: status how %u, sleeps %u; want WOKEN (%u) or HANDOFF (%u), >= 1",
		      how, sleeps, TOFUTEX_STATUS_WOKEN,
		      TOFUTEX_STATUS_HANDOFF);
	close(fd);
}
END_TEST

/*
 * One round of the lost wake-up: the caller owns @word and L sleeps as
 * top waiter; the caller's UNLOCK releases the word and wakes L, and the
 * caller takes the word back at once, before L can. L, held in the
 * COMPETE window should it read the free word first, then finds it taken.
 * Returns false when L took the word anyway (it was awake, in its owner
 * check, when the UNLOCK came, or the caller came after the window's
 * second): the round proves nothing.
 */
static bool lose_wakeup_round(int fd, uint32_t *word, uint32_t tid,
			      uint32_t l_tid)
{
	uint32_t woken = 0;
	bool stolen;

	window_open(getpid(), WINDOW_COMPETE, NSEC_PER_SEC);
	ck_assert_int_eq(raw_unlock(fd, word, &woken), 0);
	ck_assert_uint_eq(woken, 1);
	stolen = cas(word, 0, tid);
	/* The steal, if any, changed the word: L has left the window. */
	window_close();
	ck_assert_msg(stolen || (word_load(word) & TID_MASK) == l_tid,
		      "word 0x%08x after UNLOCK: neither free nor L's",
		      word_load(word));
	return stolen;
}

/*
 * A top waiter that an unlock woke, and that lost the word to a thief,
 * is handed the lock by the next unlock, long before handoff_ns (1 s):
 * the thief's unlock writes its TID into the word, and LOCK says HANDOFF.
 * With handoff_lost off (_i 1), the same unlock releases the word and the
 * waiter takes it as WOKEN: the rule, not the time, made the hand-off.
 * Only when the machine was so slow that the unlock came a whole
 * handoff_ns after L started (then L starves) may it be handed the lock
 * with the rule off as well.
 */
START_TEST(test_lost_wakeup_handoff)
{
	uint32_t tid = test_gettid(), word = tid, l_tid = 0, how, after;
	const bool rule = _i == 0;
	bool starved;
	unsigned int attempt;
	struct locker l;
	int fd = dev_open();
	uint64_t t0 = 0;
	bool ok, lost = false;

	/* Sleep at once instead of spinning; no hand-off for time. */
	param_set("spin_ns", 0);
	param_set("handoff_ns", NSEC_PER_SEC);
	param_set("owner_check_ns", 100 * NSEC_PER_MSEC);
	param_set("handoff_lost", rule);
	for (attempt = 0; attempt < 5 && !lost; attempt++) {
		if (attempt) {
			ck_assert_int_eq(locker_join(&l), 0);
			__atomic_store_n(&word, tid, __ATOMIC_RELEASE);
		}
		t0 = now_ns();
		l_tid = locker_start(&l, fd, &word, NULL, false);
		WAIT_UNTIL(ok, (word_load(&word) & WAITERS) &&
			   thread_state(l_tid) == 'S', TEST_WAIT_NS);
		ck_assert_msg(ok, "L did not go to sleep as top waiter");
		lost = lose_wakeup_round(fd, &word, tid, l_tid);
	}
	if (!lost) {
		/* L was awake each time, or the thief came too late. */
		printf("SKIPPED: test_lost_wakeup_handoff:%d: L took the word before the thief in 5 rounds: nothing checked\n",
		       _i);
		ck_assert_int_eq(locker_join(&l), 0);
		close(fd);
		return;
	}

	/* L, starving now or not, sleeps again with WAITERS set. */
	WAIT_UNTIL(ok, (word_load(&word) & WAITERS) && thread_state(l_tid) == 'S',
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "L did not go back to sleep after losing");
	ck_assert_int_eq(raw_unlock(fd, &word, NULL), 0);
	/* L became top waiter after t0: before this, it cannot starve. */
	starved = now_ns() - t0 >= NSEC_PER_SEC;
	/* Released (L may have taken it already), or handed to L. */
	after = word_load(&word) & TID_MASK;
	ck_assert_msg(rule ? after == l_tid : after == 0 || after == l_tid,
		      "handoff_lost %d: after L lost a wake-up, UNLOCK left the word 0x%08x, want TID %u%s",
		      rule, word_load(&word), l_tid, rule ? "" : " or 0");
	ck_assert_int_eq(locker_join(&l), 0);
	ck_assert_uint_eq(word_load(&word) & TID_MASK, l_tid);
	how = l.status & TOFUTEX_STATUS_HOW_MASK;
	ck_assert_msg(how == (rule ? TOFUTEX_STATUS_HANDOFF :
				     TOFUTEX_STATUS_WOKEN) ||
		      (starved && how == TOFUTEX_STATUS_HANDOFF),
		      "handoff_lost %d: L's LOCK status how %u, want %u", rule,
		      how, rule ? TOFUTEX_STATUS_HANDOFF : TOFUTEX_STATUS_WOKEN);
	close(fd);
}
END_TEST

/*
 * The argument is unmapped while the caller sleeps in LOCK; the unlock
 * then gives it the word. It owns the lock, so LOCK returns 0 (the status
 * has nowhere to go).
 */
START_TEST(test_status_unmapped)
{
	uint32_t tid = test_gettid(), word = tid, l_tid;
	struct tofutex_lock *arg = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct locker l;
	int fd = dev_open();
	bool ok;
	int r;

	ck_assert(arg != MAP_FAILED);
	l_tid = locker_start(&l, fd, &word, arg, false);
	WAIT_UNTIL(ok, (word_load(&word) & WAITERS) && thread_state(l_tid) == 'S',
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "the locker did not go to sleep");
	ck_assert_int_eq(munmap(arg, 4096), 0);
	ck_assert_int_eq(raw_unlock(fd, &word, NULL), 0);
	r = locker_join(&l);
	ck_assert_uint_eq(word_load(&word) & TID_MASK, l_tid);
	ck_assert_msg(r == 0,
		      "LOCK returned %d (%s) although the caller owns the word 0x%08x",
		      r, strerror(r), word_load(&word));
	close(fd);
}
END_TEST

/* A free word with OWNER_DIED (and maybe WAITERS), taken on entry. */
START_TEST(test_steal_keeps_owner_died)
{
	uint32_t tid = test_gettid(), word, status = 0;
	const uint32_t free_words[] = { OWNER_DIED, OWNER_DIED | WAITERS };
	int fd = dev_open();
	unsigned int i;

	for (i = 0; i < 2; i++) {
		word = free_words[i];
		ck_assert_int_eq(raw_lock(fd, &word, now_ns() + TEST_WAIT_NS,
					  &status), 0);
		ck_assert_msg(word == (free_words[i] | tid),
			      "free word 0x%08x taken as 0x%08x, want 0x%08x",
			      free_words[i], word, free_words[i] | tid);
		ck_assert_uint_eq(status & TOFUTEX_STATUS_HOW_MASK,
				  TOFUTEX_STATUS_OWNER_DIED);
	}
	close(fd);
}
END_TEST

/* ---- Module parameter ranges ---- */

static const struct {
	const char *name;
	unsigned long min, max;
} ranges[] = {
	{ "spin_ns",		0,		10000000UL },
	{ "handoff_ns",		0,		1000000000UL },
	{ "owner_check_ns",	1000000UL,	100000000UL },
	{ "debug_window_ns",	0,		1000000000UL },
};

START_TEST(test_params_ranges)
{
	const char *name = ranges[_i].name;
	unsigned long min = ranges[_i].min, max = ranges[_i].max, v, before;
	int r;

	ck_assert_msg(param_read(name, &before), "cannot read %s", name);
	ck_assert_int_eq(param_write(name, min), 0);
	ck_assert(param_read(name, &v) && v == min);
	ck_assert_int_eq(param_write(name, max), 0);
	ck_assert(param_read(name, &v) && v == max);
	if (min > 0) {
		r = param_write(name, min - 1);
		ck_assert_msg(r == EINVAL, "%s = %lu: %s", name, min - 1,
			      strerror(r));
	}
	r = param_write(name, max + 1);
	ck_assert_msg(r == EINVAL, "%s = %lu: %s", name, max + 1, strerror(r));
	r = param_write_str(name, "18446744073709551615");
	ck_assert_msg(r == EINVAL, "%s = ULONG_MAX: %s", name, strerror(r));
	r = param_write_str(name, "-1");
	ck_assert_msg(r == EINVAL, "%s = -1: %s", name, strerror(r));
	ck_assert(param_read(name, &v) && v == max);
	ck_assert_int_eq(param_write(name, before), 0);
}
END_TEST

/*
 * wake_local is a bool that root may flip both ways at any time; turning
 * it back on (which may switch the scheduler's preempt notifiers on) must
 * leave SWAP working. The harness fails the run on any kernel warning.
 */
START_TEST(test_param_wake_local)
{
	uint32_t a = 0, b = 1, woken = 7;
	int fd = dev_open(), r;
	struct tofutex_swap sw;
	char buf[8] = "";
	ssize_t n;
	int pfd;

	ck_assert_int_eq(param_write_str("wake_local", "N"), 0);
	ck_assert_int_eq(param_write_str("wake_local", "Y"), 0);
	r = param_write_str("wake_local", "maybe");
	ck_assert_msg(r == EINVAL, "wake_local = maybe: %s", strerror(r));
	pfd = open(PARAM_DIR "wake_local", O_RDONLY);
	ck_assert_int_ge(pfd, 0);
	n = read(pfd, buf, sizeof(buf) - 1);
	close(pfd);
	ck_assert_msg(n > 0 && buf[0] == 'Y', "wake_local reads \"%s\"", buf);

	/* A SWAP with nobody to wake and a word that differs: EAGAIN. */
	memset(&sw, 0, sizeof(sw));
	sw.wait_uaddr = (uintptr_t)&a;
	sw.wake_uaddr = (uintptr_t)&b;
	sw.val = 1;
	r = ioctl(fd, TOFUTEX_IOC_SWAP, &sw) ? errno : 0;
	woken = sw.woken;
	ck_assert_msg(r == EAGAIN && woken == 0, "SWAP: %d (%s), woken %u",
		      r, strerror(r), woken);
	close(fd);
}
END_TEST

static Suite *lock_race_suite(void)
{
	Suite *s = suite_create("lock_race");
	TCase *tc;

	tc = tcase_create("windows");
	tcase_add_unchecked_fixture(tc, params_save, params_restore);
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_unlock_vs_new_locker);
	tcase_add_test(tc, test_changing_word_deadline);
	tcase_add_test(tc, test_changing_word_sigkill);
	suite_add_tcase(s, tc);

	tc = tcase_create("status");
	tcase_add_unchecked_fixture(tc, params_save, params_restore);
	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_queued_sleeper_status);
	tcase_add_loop_test(tc, test_lost_wakeup_handoff, 0, 2);
	tcase_add_test(tc, test_status_unmapped);
	tcase_add_test(tc, test_steal_keeps_owner_died);
	suite_add_tcase(s, tc);

	tc = tcase_create("params");
	tcase_add_unchecked_fixture(tc, params_save, params_restore);
	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_loop_test(tc, test_params_ranges, 0,
			    (int)(sizeof(ranges) / sizeof(ranges[0])));
	tcase_add_test(tc, test_param_wake_local);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return run_suite(lock_race_suite());
}
