/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex internals shared by the library's source files; not installed.
 *
 * Everything here has hidden visibility: the shared library exports only
 * the tofutex_* functions of <tofutex.h> (see libtofutex.map), and in the
 * static library the tofutex__ prefix keeps these names out of the way.
 */
#ifndef TOFUTEX_INTERNAL_H
#define TOFUTEX_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <tofutex.h>

#define TOFUTEX_HIDDEN __attribute__((visibility("hidden")))

#define TOFUTEX_DEVICE_PATH "/dev/" TOFUTEX_DEVICE_NAME

/*
 * Per-thread state. The TID is read on every lock and unlock, so it lives
 * in the initial-exec TLS model: a direct %fs-relative access instead of a
 * __tls_get_addr() call per access in the shared library. The cost is a
 * few bytes of the static TLS surplus glibc reserves for exactly this kind
 * of library, should libtofutex.so be dlopen()ed.
 *
 * @tid:         the thread's TID as gettid() returns it, 0 until first use
 *               and again in the child of fork() (see device.c)
 * @last_status: TOFUTEX_STATUS_* of the thread's last lock that entered
 *               the kernel, for tofutex_mutex_last_status()
 * @fork_tid:    in the child of fork(), the TID the forking thread had in
 *               the parent: the words it locked in a pthread_atfork()
 *               prepare handler hold that TID, and it may unlock them
 *               (see fork.c), while no thread of the process has that TID
 *               (tofutex__fork_tid_mine()); 0 otherwise
 */
struct tofutex__thread {
	pid_t tid;
	uint32_t last_status;
	pid_t fork_tid;
};

extern _Thread_local struct tofutex__thread tofutex__self
	__attribute__((tls_model("initial-exec"))) TOFUTEX_HIDDEN;

/* tid.c: fills tofutex__self.tid; 0 only when tofutex__fork_ready() failed. */
TOFUTEX_HIDDEN pid_t tofutex__tid_slow(void);
/*
 * tid.c: has a thread of this process needed its TID, that is, locked or
 * unlocked anything of ours (every lock and unlock asks for it)? Set by
 * tofutex__tid_slow(), cleared in the child of fork(); the pthread
 * preload's TOFUTEX_RUN_STATS prints only for a process that did.
 */
extern bool tofutex__tid_used TOFUTEX_HIDDEN;
/*
 * tid.c: in the child of fork(): forget the cached TID (the child has a
 * new one) and remember the old one in @fork_tid.
 */
TOFUTEX_HIDDEN void tofutex__tid_forget(void);

/* tid.c: getpid(), cached; forgotten in the child of fork(). */
TOFUTEX_HIDDEN pid_t tofutex__pid(void);

/*
 * The calling thread's TID if it is known yet, else 0: for a fast path
 * that hands a 0 to its out-of-line rest, which calls tofutex__tid().
 */
static inline pid_t tofutex__tid_known(void)
{
	return tofutex__self.tid;
}

/* The calling thread's TID, or 0 when the library cannot work (ENOMEM). */
static inline pid_t tofutex__tid(void)
{
	pid_t tid = tofutex__tid_known();

	if (__builtin_expect(tid == 0, 0))
		tid = tofutex__tid_slow();
	return tid;
}

/*
 * tid.c: does a word holding @fork_tid (the calling thread's) hold it for
 * this thread, from before fork()? Not when a thread of this process has
 * that TID now: the parent's thread has exited and its TID came round
 * again (or the child is in a new PID namespace, whose TIDs start at 1).
 */
TOFUTEX_HIDDEN bool tofutex__fork_tid_mine(uint32_t fork_tid);

/* Is @owner, the TID bits of a word, the calling thread (see @fork_tid)? */
static inline bool tofutex__is_self(uint32_t owner, uint32_t tid)
{
	return owner == tid ||
	       (owner && owner == (uint32_t)tofutex__self.fork_tid &&
		tofutex__fork_tid_mine(owner));
}

/*
 * fork.c: the fork handler, registered when the library is loaded. 0, or
 * ENOMEM when pthread_atfork() failed; then the library refuses to cache
 * anything, since it could not forget it in a child.
 */
TOFUTEX_HIDDEN int tofutex__fork_ready(void);
/*
 * fork.c: the child's side of fork(), in its only thread (the handler
 * fork.c registers; the pthread preload's _Fork() calls it too).
 */
TOFUTEX_HIDDEN void tofutex__fork_child(void);
/*
 * device.c: in the child of fork(): close the parent's descriptor and,
 * @own, make the child's own from it.
 */
TOFUTEX_HIDDEN void tofutex__fd_fork_child(bool own);

/*
 * backend.c: 0, or when TOFUTEX_BACKEND forces the module and it cannot
 * be used, why (an errno value: e.g. ENOENT, no /dev/tofutex;
 * EPROTONOSUPPORT, a module of another ABI).
 */
TOFUTEX_HIDDEN int tofutex__backend_refused(void);
/*
 * env.c: TOFUTEX_BACKEND: TOFUTEX_BACKEND_MODULE or _FUTEX when forced,
 * 0 for auto (also unset, or not valid: reported on stderr).
 */
TOFUTEX_HIDDEN int tofutex__env_backend(void);
/*
 * env.c: TOFUTEX_SPIN_NS, when set and valid (else reported on stderr,
 * false): *@autospin for "auto" or "auto:N", *@ns the N (0 for plain
 * "auto"), at most @max_ns.
 */
TOFUTEX_HIDDEN bool tofutex__env_spin(uint32_t max_ns, uint32_t *ns,
				      bool *autospin);
/* env.c: report nothing from now on. */
TOFUTEX_HIDDEN void tofutex__env_quiet(void);
/* spin.c: in the child of fork(): read TOFUTEX_SPIN_NS again. */
TOFUTEX_HIDDEN void tofutex__spin_forget(void);
/* spin.c: the calling thread's user-space spin budget now, in ns. */
TOFUTEX_HIDDEN uint32_t tofutex__spin_budget(void);
/*
 * spin.c: the calling thread's spin ended: it took the word (@taken), or
 * ran out its budget with the owner it began on still holding it
 * (@stuck), or ran out while the word changed hands.
 */
TOFUTEX_HIDDEN void tofutex__spin_ended(bool taken, bool stuck);
/* spin.c: does the budget follow the kernel trips' cost (auto)? */
TOFUTEX_HIDDEN bool tofutex__spin_auto(void);
/* spin.c: a contended lock of the calling thread spent @ns in the kernel. */
TOFUTEX_HIDDEN void tofutex__spin_learn(uint64_t ns);

/*
 * How often a waiter that cannot be woken by what it waits for looks
 * around: the futex backend checks that a robust lock's owner still
 * lives (the module does the same in the kernel, owner_check_ns), and a
 * realtime deadline on a module without TOFUTEX_FEAT_CLOCK_REALTIME is
 * re-read against the clock. 25 ms is the module's owner_check_ns
 * default: a dead owner is noticed as fast on either backend, at a cost
 * of 40 wake-ups a second for a thread waiting on a robust lock that is
 * never freed. A non-robust lock's waiter does not poll.
 */
#define TOFUTEX_POLL_NS		25000000ull
#define TOFUTEX_NSEC_PER_SEC	1000000000ull

/*
 * device.c: ioctl(2) on the process's descriptor, opening it on first use.
 * Returns 0 or a positive errno value, with the ioctl's non-negative
 * return value in *@result when @result is not NULL; errno is preserved.
 */
TOFUTEX_HIDDEN int tofutex__ioctl(unsigned long request, void *arg,
				  int *result);

/*
 * clock.c: an optional absolute deadline on CLOCK_MONOTONIC or
 * CLOCK_REALTIME.
 * @set:   false: wait forever
 * @clock: the clock @ns is on
 * @ns:    the deadline in ns since the clock's epoch (see
 *         tofutex__deadline_ns())
 */
struct tofutex__deadline {
	bool set;
	clockid_t clock;
	uint64_t ns;
};

/* The clocks a deadline may be on (glibc's futex_abstimed_supported_clockid()). */
static inline bool tofutex__clock_ok(clockid_t clock)
{
	return clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME;
}

/*
 * clock.c: fill @dl; EINVAL for a clock other than CLOCK_MONOTONIC and
 * CLOCK_REALTIME or a bad timespec. @abstime NULL: no deadline.
 */
TOFUTEX_HIDDEN int tofutex__deadline_init(struct tofutex__deadline *dl,
					  clockid_t clock,
					  const struct timespec *abstime);
/* clock.c: @clock now, in ns. */
TOFUTEX_HIDDEN uint64_t tofutex__clock_ns(clockid_t clock);
/* clock.c: has the deadline passed? Never, when there is none. */
TOFUTEX_HIDDEN bool tofutex__deadline_passed(const struct tofutex__deadline *dl);
/*
 * mutex.c: tofutex_mutex_clocklock() with @abstime NULL for no deadline;
 * @robust false: a sleeping waiter does not look for the owner's death
 * (no periodic wake-up: a non-robust mutex, the pthread preload's).
 */
TOFUTEX_HIDDEN int tofutex__mutex_clocklock(tofutex_mutex_t *m,
					    clockid_t clockid,
					    const struct timespec *abstime,
					    bool robust);

/*
 * rwlock.c: the pthread preload's locks: as tofutex_rwlock_clockwrlock()
 * (@write) or tofutex_rwlock_clockrdlock() (@abstime NULL: no deadline),
 * but not robust: a waiter on futex(2) does not look at the writer (no
 * periodic wake-up; a dead writer's or another process's lock is waited
 * for, as glibc's lock does). @prefer: the lock's kind prefers the
 * caller's side. A reader of a reader-preferring kind (glibc's readers
 * join a read-held lock even while writers wait): RW_HANDOFF does not
 * stop the caller, and a caller waiting behind a writer joins the readers
 * that took the word meanwhile (the preload's tryrdlock joins so too,
 * with rwlock.h's tofutex_rw_try_read_all()). A writer of a
 * writer-preferring kind (glibc's PREFER_WRITER_NONRECURSIVE_NP: readers
 * do not join once a writer waits): the caller reserves the lock
 * (RW_HANDOFF) as soon as it waits on readers, not after the hand-off
 * time (backend.h's @reserve).
 */
TOFUTEX_HIDDEN int tofutex__rwlock_lock(tofutex_rwlock_t *rw, bool write,
					bool prefer, clockid_t clockid,
					const struct timespec *abstime);

/*
 * glibc.c: lock words glibc's own mutex code may use, the pthread
 * preload's (tofutex__glibc_words_enable()); false for libtofutex's own
 * users, whose words hold TIDs only.
 */
extern bool tofutex__glibc_words TOFUTEX_HIDDEN;
TOFUTEX_HIDDEN void tofutex__glibc_words_enable(void);
/* glibc.c: is @owner (1 or 2) no thread of this process? */
TOFUTEX_HIDDEN bool tofutex__glibc_not_a_thread(uint32_t owner);

/*
 * glibc.c: is the owner @owner (a word's TID bits) glibc's code, which
 * writes 1 or 2?
 */
static inline bool tofutex__glibc_owner(uint32_t owner)
{
	return (owner == 1 || owner == 2) &&
	       __atomic_load_n(&tofutex__glibc_words, __ATOMIC_RELAXED) &&
	       tofutex__glibc_not_a_thread(owner);
}
/*
 * glibc.c: take @word, held by glibc's code, as glibc's lock does, then
 * adopt it as @tid; 0, ETIMEDOUT at @dl, or EAGAIN when one of ours holds
 * it now (then lock it the ordinary way).
 */
TOFUTEX_HIDDEN int tofutex__glibc_lock(uint32_t *word, uint32_t tid,
				       const struct tofutex__deadline *dl);
/*
 * glibc.c: @word, held by the caller @tid, may hold glibc's 1 or 2: make
 * it @tid with WAITERS (one attempt; a glibc locker that just wrote 2
 * keeps it so, and the unlock then releases it as glibc's).
 */
TOFUTEX_HIDDEN void tofutex__glibc_adopt(uint32_t *word, uint32_t tid);
/*
 * glibc.c: @word, held by the caller, is about to be released by glibc's
 * code: make it 2, which glibc's unlock wakes a sleeper for.
 */
TOFUTEX_HIDDEN void tofutex__glibc_handover(uint32_t *word);
/* glibc.c: release a held @word as glibc does, and wake either kind. */
TOFUTEX_HIDDEN int tofutex__glibc_release(uint32_t *word);
/*
 * glibc.c: glibc's code has run on one of our words (or is about to):
 * from now on the module backend leaves contended non-robust locks and
 * releases to futex(2) and glibc's release (backend_module.c).
 */
TOFUTEX_HIDDEN void tofutex__glibc_ran(void);
TOFUTEX_HIDDEN bool tofutex__glibc_has_run(void);

/*
 * mutex.c: lock after a condition wait (see cond.c); @moved: a broadcast
 * may have moved the caller onto the lock word.
 */
TOFUTEX_HIDDEN int tofutex__mutex_relock(tofutex_mutex_t *m, bool moved);
/*
 * mutex.c: release the held word of @m, @word its value last seen, and
 * wake a waiter if WAITERS is set. @own: the word holds the caller's
 * current TID; false releases a word some other thread holds (a pthread
 * NORMAL mutex may be unlocked by any thread, lib/pthread/).
 */
TOFUTEX_HIDDEN int tofutex__mutex_release(tofutex_mutex_t *m, uint32_t word,
					  bool own);

/*
 * cond.c: the mutex of a condition wait: a tofutex mutex (@tfx), or, with
 * @tfx NULL, any other mutex @other, released and taken again through
 * @unlock and @lock (pthread-style returns; @unlock fails with EPERM
 * when the caller does not hold it).
 */
struct tofutex__cond_mutex {
	tofutex_mutex_t *tfx;
	void *other;
	int (*unlock)(void *other);
	int (*lock)(void *other);
};
/*
 * cond.c: wait on @c with the mutex @cm, as tofutex_cond_clockwait()
 * (@abstime NULL: no deadline); a cancellation point.
 */
TOFUTEX_HIDDEN int tofutex__cond_wait(tofutex_cond_t *c,
				      const struct tofutex__cond_mutex *cm,
				      clockid_t clockid,
				      const struct timespec *abstime);

/*
 * cond.c: as tofutex_cond_destroy(), but wait (asleep) for the waiters
 * still inside a wait to leave it instead of failing with EBUSY; EINVAL
 * for a bad @c.
 */
TOFUTEX_HIDDEN int tofutex__cond_destroy_wait(tofutex_cond_t *c);

/*
 * An absolute timespec as the ABI's deadline in ns.
 * EINVAL unless 0 <= tv_nsec < 1e9, like the pthread timed functions. A
 * negative time is in the past: deadline 0. A time beyond what the kernel
 * can represent (KTIME_MAX, year 2262) is clamped to it: never.
 */
static inline int tofutex__deadline_ns(const struct timespec *ts,
				       uint64_t *ns)
{
	const uint64_t nsec_per_sec = 1000000000u;

	if (ts->tv_nsec < 0 || (uint64_t)ts->tv_nsec >= nsec_per_sec)
		return EINVAL;
	if (ts->tv_sec < 0)
		*ns = 0;
	else if ((uint64_t)ts->tv_sec >
		 ((uint64_t)INT64_MAX - (uint64_t)ts->tv_nsec) / nsec_per_sec)
		*ns = INT64_MAX;
	else
		*ns = (uint64_t)ts->tv_sec * nsec_per_sec +
		      (uint64_t)ts->tv_nsec;
	return 0;
}

/* bind.c: the slow paths' calls into libc, bound at load. */
void tofutex__bind_calls(void) TOFUTEX_HIDDEN;

/*
 * A cleanup handler on glibc's own chain of cleanup buffers, the one its
 * condition wait uses: run when a cancellation unwinds the frame, and also
 * when longjmp() leaves it (a signal handler's siglongjmp() out of a
 * wait), where pthread_cleanup_push()'s handlers run for cancellation and
 * pthread_exit() only. glibc exports the two functions (GLIBC_2.34, and
 * its first version as compat) without declaring them. Used as
 * pthread_cleanup_push() and _pop(): in pairs, in one block.
 */
struct _pthread_cleanup_buffer;
extern void _pthread_cleanup_push(struct _pthread_cleanup_buffer *buffer,
				  void (*routine)(void *), void *arg);
extern void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *buffer,
				 int execute);
#define TOFUTEX_CLEANUP_PUSH(routine, arg) \
	{ \
		struct _pthread_cleanup_buffer tofutex_cleanup_buf; \
		_pthread_cleanup_push(&tofutex_cleanup_buf, (routine), (arg))
#define TOFUTEX_CLEANUP_POP(execute) \
		_pthread_cleanup_pop(&tofutex_cleanup_buf, (execute)); \
	}

/* vdso.c: the kernel's clock, read through the vDSO. */
void tofutex__vdso_find(void) TOFUTEX_HIDDEN;
void tofutex__clock_read(clockid_t clock, struct timespec *ts) TOFUTEX_HIDDEN;

#endif /* TOFUTEX_INTERNAL_H */
