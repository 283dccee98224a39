/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex - the backend: what a primitive (mutex.c, cond.c, rwlock.c,
 * waitwake.c, info.c) asks of the kernel once user space cannot finish
 * alone, as one table of operations per backend; not installed.
 *
 * Two implementations, each in its own file: backend_module.c
 * (/dev/tofutex, every TOFUTEX_IOC_* call) and backend_futex.c (futex(2)).
 * backend.c chooses one table per process, on the first call that needs
 * it, and again in the child of fork(); every thread keeps it, since
 * waiters of one backend cannot be woken by the other. The tables are
 * const and live as long as the process: what a module lacks
 * (TOFUTEX_FEAT_REQUEUE, TOFUTEX_FEAT_RWLOCK) is replaced when the table
 * is chosen (tofutex__module_ops()), not on every call.
 *
 * The uncontended paths never read the table: they are compare-and-swaps
 * in user space (mutex.h, rwlock.h, the preload's lib/pthread/), and
 * tofutex__ops() is called only on a contended or kernel path, so that a
 * program that never contends never chooses a backend nor opens the
 * device.
 *
 * Every operation returns 0 or a positive errno value, pthread style, and
 * preserves errno. A word argument is the caller's lock or wait word; the
 * lock operations assume the layout of uapi/tofutex.h (TID | WAITERS |
 * OWNER_DIED, or the reader/writer word), shared by both backends, so
 * that the user-space fast paths and the spin are the same on each. A
 * third backend, or a test double for the fault paths, is one more table.
 */
#ifndef TOFUTEX_BACKEND_H
#define TOFUTEX_BACKEND_H

#include "internal.h"

struct tofutex__backend_ops {
	/* TOFUTEX_BACKEND_MODULE or _FUTEX: what tofutex_backend() reports. */
	int backend;

	/*
	 * @lock: take the lock word @word, which another thread held when
	 * the user-space spin gave up, as @tid: sleep until it is free,
	 * take over from an owner that died, wait for glibc's code (glibc.c)
	 * where it holds the word. Returns 0; EOWNERDEAD when taken from a
	 * dead owner (OWNER_DIED is then set in the word); ETIMEDOUT at @dl;
	 * EPERM when a live thread of another process holds it; or the
	 * device's error on the module (e.g. ENOENT when TOFUTEX_BACKEND
	 * forced a missing module). Never EINTR: a signal does not interrupt
	 * a lock, and a retry keeps @dl, which is absolute. @robust false:
	 * the sleeper need not watch for the owner's death (a non-robust
	 * pthread mutex, which then costs no periodic wake-up). May set
	 * WAITERS in the word, which the owner's ->unlock() then honours.
	 * The module records the kernel's status in tofutex__self.
	 */
	int (*lock)(uint32_t *word, uint32_t tid,
		    const struct tofutex__deadline *dl, bool robust);
	/*
	 * @unlock: release @word, held by the caller, which the user-space
	 * fast path did not release (@seen, the word as last seen, is not
	 * the caller's TID alone: WAITERS, or a TID the module would not
	 * count as the caller's), and wake a waiter where WAITERS says there
	 * may be one. @own: the word holds the caller's current TID (false:
	 * the TID the caller had before fork(), fork.c, or another thread's,
	 * a pthread NORMAL mutex, lib/pthread/). Returns 0 or the device's
	 * error.
	 */
	int (*unlock)(uint32_t *word, uint32_t seen, bool own);
	/*
	 * @unlock_glibc: release @word, held by the caller but possibly
	 * saying glibc's 1 or 2 instead of a TID, as glibc's unlock does, and
	 * wake one sleeper of either kind: glibc's futex sleeper, and the
	 * backend's own, whom no WAITERS bit announces any more (glibc.c's
	 * tofutex__glibc_release()). Returns 0 or the device's error.
	 */
	int (*unlock_glibc)(uint32_t *word);
	/*
	 * @relock_moved: a waiter that ->requeue() moved onto a lock word
	 * sleeps there without WAITERS set, so a thread coming back from a
	 * condition wait that a broadcast may have ended takes the mutex
	 * through ->lock(), which sets WAITERS: its unlock then wakes the
	 * next (mutex.c's tofutex__mutex_relock()). false: the backend
	 * tracks the moved waiters itself, and the ordinary lock does.
	 */
	bool relock_moved;

	/*
	 * @wait: sleep while *@addr == @expected, until ->wake() (or a
	 * spurious wake-up: 0), a signal (EINTR; both kernels restart the
	 * call themselves for an SA_RESTART handler) or @dl (ETIMEDOUT).
	 * EAGAIN when *@addr != @expected at the start; EINVAL for a NULL or
	 * misaligned @addr; EFAULT.
	 */
	int (*wait)(uint32_t *addr, uint32_t expected,
		    const struct tofutex__deadline *dl);
	/*
	 * @wake: wake up to @count sleepers of ->wait() on @addr; the number
	 * woken in *@woken when @woken is not NULL. 0, EINVAL or EFAULT.
	 */
	int (*wake)(uint32_t *addr, unsigned int count, unsigned int *woken);
	/*
	 * @swap: wake one sleeper of @wake_addr, then ->wait() on @wait_addr;
	 * returns as ->wait(). The module puts the woken thread on the
	 * caller's CPU; futex(2) only wakes, then waits.
	 */
	int (*swap)(uint32_t *wait_addr, uint32_t expected,
		    uint32_t *wake_addr, const struct tofutex__deadline *dl);
	/*
	 * @requeue: a condition variable's broadcast (cond.c): while
	 * *@addr == @val, wake one sleeper of @addr and move the others, still
	 * asleep, onto the lock word @lock_addr, where each unlock releases
	 * one. EAGAIN when *@addr changed (the caller reads it again and
	 * retries: the sleepers are still there). Where the waiters cannot be
	 * moved (a module without TOFUTEX_FEAT_REQUEUE), it wakes them all
	 * and they compete for the mutex. Else 0 or the error of ->wake().
	 */
	int (*requeue)(uint32_t *addr, uint32_t val, uint32_t *lock_addr);
	/*
	 * @prepare_wait: set up, before the caller enables asynchronous
	 * cancellation around a ->wait() (cond.c), what the wait would
	 * otherwise set up inside it: the module's descriptor, whose opening
	 * must not be cancelled halfway. Nothing on futex(2).
	 */
	void (*prepare_wait)(void);

	/*
	 * @rdlock: read-lock @rw once the user-space attempts failed (a
	 * writer holds it, or a starving writer has reserved it,
	 * RW_HANDOFF). Returns 0; EAGAIN when the reader count is full;
	 * ETIMEDOUT at @dl; EPERM when a live writer of another process
	 * holds it; or the device's error. Never EINTR. A dead writer's lock
	 * is taken over (rwlocks have no EOWNERDEAD); @robust false: on
	 * futex(2) the caller does not look at the writer at all (no
	 * periodic wake-up, no EPERM: a writer of another process, or dead,
	 * is waited for as glibc waits, the pthread preload's). @join: reader
	 * preference (glibc's default rwlock kind, for the pthread preload):
	 * RW_HANDOFF does not stop the caller, and a caller waiting behind a
	 * writer joins readers that took the word meanwhile in user space,
	 * which wakes nobody, looking every TOFUTEX_POLL_NS: one of them may
	 * be waiting for this caller's read lock.
	 * @wrlock: write-lock @rw as @tid after the user-space attempt
	 * failed; returns as @rdlock, never EAGAIN. @reserve: writer
	 * preference (glibc's PREFER_WRITER_NONRECURSIVE_NP kind): the
	 * caller reserves the lock as soon as it waits (RW_HANDOFF: new
	 * readers queue behind it) rather than once it has waited the
	 * hand-off time; a module without TOFUTEX_FEAT_RW_RESERVE does the
	 * latter.
	 * @rwunlock: release @rw, held by the caller, which the user-space
	 * release did not (@seen, the word as last seen: the write lock with
	 * more than the TID in it, or the last read lock with WAITERS), and
	 * let in whom that frees. 0 or the device's error.
	 * A module without TOFUTEX_FEAT_RWLOCK has futex(2)'s three, on the
	 * same word.
	 */
	int (*rdlock)(tofutex_rwlock_t *rw, const struct tofutex__deadline *dl,
		      bool join, bool robust);
	int (*wrlock)(tofutex_rwlock_t *rw, uint32_t tid,
		      const struct tofutex__deadline *dl, bool robust,
		      bool reserve);
	int (*rwunlock)(tofutex_rwlock_t *rw, uint32_t seen);

	/*
	 * @version: the module's ABI version and TOFUTEX_FEAT_* bits, each
	 * stored where the pointer is not NULL (TOFUTEX_IOC_VERSION);
	 * ENOTSUP on futex(2).
	 * @stats: the module's statistics for @scope (TOFUTEX_STATS_*) in
	 * *@out, not NULL (TOFUTEX_IOC_STATS); ENOTSUP on futex(2).
	 */
	int (*version)(uint32_t *abi_version, uint64_t *features);
	int (*stats)(uint32_t scope, struct tofutex_stats *out);
};

/*
 * backend.c: the process's table, NULL until chosen (and again in a
 * fork child), and the module's TOFUTEX_FEAT_* bits (0 on futex(2)),
 * published before the table.
 */
extern const struct tofutex__backend_ops *tofutex__ops_cached TOFUTEX_HIDDEN;
extern uint64_t tofutex__features TOFUTEX_HIDDEN;
TOFUTEX_HIDDEN const struct tofutex__backend_ops *tofutex__ops_slow(void);

/* The process's backend; chooses it on first use. */
static inline const struct tofutex__backend_ops *tofutex__ops(void)
{
	const struct tofutex__backend_ops *ops =
		__atomic_load_n(&tofutex__ops_cached, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!ops, 0))
		ops = tofutex__ops_slow();
	return ops;
}

/* backend_futex.c: the futex(2) backend's table. */
extern const struct tofutex__backend_ops tofutex__futex_ops TOFUTEX_HIDDEN;
/*
 * backend_module.c: the module's table for a module with @features, what
 * it lacks taken from futex(2) or done the slower way.
 */
TOFUTEX_HIDDEN const struct tofutex__backend_ops *
tofutex__module_ops(uint64_t features);

/*
 * backend_futex.c: futex(2) itself, also for the module backend's glibc
 * paths (glibc.c). Waits return 0, EAGAIN, EINTR, ETIMEDOUT at @dl (the
 * kernel's clock said so: the caller takes its word and reads no clock
 * of its own, which an interposer may have stopped), ETIME at @poll_ns
 * from now on @dl's clock when @poll_ns is not 0 and comes first, or
 * EFAULT; wakes return the number woken or a negative errno value.
 */
TOFUTEX_HIDDEN int tofutex__futex_wait(uint32_t *addr, uint32_t val,
				       const struct tofutex__deadline *dl,
				       uint64_t poll_ns);
TOFUTEX_HIDDEN int tofutex__futex_wake(uint32_t *addr, int count);
/*
 * backend_futex.c: the number of futex(2) waits, counted only while
 * tofutex__futex_counting is set (by the preload's TOFUTEX_RUN_STATS), so
 * that no other program pays for a shared counter.
 */
extern bool tofutex__futex_counting TOFUTEX_HIDDEN;
extern uint64_t tofutex__futex_waits TOFUTEX_HIDDEN;
/*
 * backend_futex.c: the reader/writer operations on futex(2), which a
 * module without TOFUTEX_FEAT_RWLOCK uses too (see the table above).
 */
TOFUTEX_HIDDEN int tofutex__futex_rdlock(tofutex_rwlock_t *rw,
					 const struct tofutex__deadline *dl,
					 bool join, bool robust);
TOFUTEX_HIDDEN int tofutex__futex_wrlock(tofutex_rwlock_t *rw, uint32_t tid,
					 const struct tofutex__deadline *dl,
					 bool robust, bool reserve);
TOFUTEX_HIDDEN int tofutex__futex_rwunlock(tofutex_rwlock_t *rw,
					   uint32_t seen);

/* backend_futex.c: whose TID is @tid? */
enum tofutex__owner {
	TOFUTEX_OWNER_LIVE,	/* a thread of this process */
	TOFUTEX_OWNER_FOREIGN,	/* a live thread of another process */
	TOFUTEX_OWNER_DEAD,	/* no thread */
};
TOFUTEX_HIDDEN enum tofutex__owner tofutex__owner_of(uint32_t tid);
/*
 * backend_futex.c: @word held as @w by another thread: take it over with
 * OWNER_DIED and @waiters (0 or TOFUTEX_WAITERS) if that thread is dead
 * (EOWNERDEAD), EPERM if it is another process's, EBUSY if it lives,
 * EAGAIN if the word changed meanwhile.
 */
TOFUTEX_HIDDEN int tofutex__take_from_dead(uint32_t *word, uint32_t tid,
					   uint32_t w, uint32_t waiters);

#endif /* TOFUTEX_BACKEND_H */
