/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - the hooks of TOFUTEX_PROFILE, the per-lock
 * contention report (profile.c; tofutex-run --profile).
 *
 * Each hook is one line in mutex.c, rwlock.c or cond.c behind one load
 * of a read-mostly flag, tfx_prof_on, which is set once by the library's
 * constructor and never changes afterwards: with the report off, an
 * uncontended lock or unlock pays one predictable, not-taken branch
 * (bench/profile-cost.sh counts the instructions). With it on, the hooks
 * test the lock's bit in tfx_prof_bloom (a lock never contended stops
 * there), then look it up in profile.c's table and read the clock only
 * for the locks in it.
 */
#ifndef TOFUTEX_PTHREAD_PROFILE_H
#define TOFUTEX_PTHREAD_PROFILE_H

#include <stdint.h>

#include "../internal.h"

extern bool tfx_prof_on TOFUTEX_HIDDEN;

/*
 * Which lock addresses may have a record: one bit per hash of the
 * address, set when a record is made (profile.c), so that the hooks of a
 * lock that was never contended cost one load and a bit test, inline.
 */
#define TFX_PROF_BLOOM_BITS	65536u
extern uint64_t tfx_prof_bloom[TFX_PROF_BLOOM_BITS / 64] TOFUTEX_HIDDEN;

/* The hash of a lock's address: the record table's and the bits'. */
static inline uint32_t tfx_prof_hash(const void *lock)
{
	return (uint32_t)(((uintptr_t)lock >> 3) * 0x9e3779b97f4a7c15ull >> 40);
}

static inline bool tfx_prof_maybe(const void *lock)
{
	uint32_t h = tfx_prof_hash(lock) % TFX_PROF_BLOOM_BITS;

	return __atomic_load_n(&tfx_prof_bloom[h / 64], __ATOMIC_RELAXED) >>
	       (h % 64) & 1;
}

/*
 * What a record is kept for (the report's "kind" column): part of its
 * key with the object's address, in the address's low bits (the objects
 * are aligned to 8), so that an object made in the memory of one of
 * another kind gets a record of its own.
 */
enum tfx_prof_kind {
	TFX_PROF_MUTEX,
	TFX_PROF_RWLOCK,
	TFX_PROF_COND,
};
#define TFX_PROF_KIND_MASK	3u

static inline bool tfx_prof(void)
{
	return __builtin_expect(tfx_prof_on, 0);
}

/*
 * profile.c. @lock and @kind: the object, the record's key.
 * tfx_prof_locked(): taken without waiting (fast path, trylock).
 * tfx_prof_waited(): taken (@err 0) or not after waiting since @t0
 * (tfx_prof_now()); creates the lock's record. tfx_prof_unlock(): about
 * to be released by its holder (before the release, so that the next
 * owner's acquire does not overwrite what the hold is measured from).
 */
TOFUTEX_HIDDEN uint64_t tfx_prof_now(void);
TOFUTEX_HIDDEN void tfx_prof_stack(const void *lock);
TOFUTEX_HIDDEN void tfx_prof_locked_rec(const void *lock,
					enum tfx_prof_kind kind, bool exclusive);
TOFUTEX_HIDDEN void tfx_prof_waited(const void *lock, enum tfx_prof_kind kind,
				    bool exclusive, uint64_t t0, int err);
TOFUTEX_HIDDEN void tfx_prof_unlock_rec(const void *lock,
					enum tfx_prof_kind kind);
/*
 * The report, if TOFUTEX_PROFILE is on and the process locked something
 * (exit.c); @names: frames get their function's name (dladdr()), which
 * only a process that ends through exit() may ask for.
 */
TOFUTEX_HIDDEN void tfx_prof_print(bool names);
/*
 * start.c: loaded with the program (LD_PRELOAD), not by dlopen() (as
 * tofutex-run's check loads it, whose process says nothing of settings).
 */
TOFUTEX_HIDDEN bool tfx_preloaded(void);

/*
 * A wait on @lock begins now, if @waits: its start (tfx_prof_waited()'s
 * @t0), and, when @lock may have no record yet, the call stack that a
 * record made after the wait is to show. The stack is taken here, before
 * the lock is held: the unwinder locks a mutex of its own (libgcc's
 * object_mutex), which may be @lock.
 */
static inline uint64_t tfx_prof_begin(const void *lock, bool waits)
{
	if (waits && !tfx_prof_maybe(lock))
		tfx_prof_stack(lock);
	return tfx_prof_now();
}

static inline void tfx_prof_locked(const void *lock, enum tfx_prof_kind kind,
				   bool exclusive)
{
	if (tfx_prof_maybe(lock))
		tfx_prof_locked_rec(lock, kind, exclusive);
}

static inline void tfx_prof_unlock(const void *lock, enum tfx_prof_kind kind)
{
	if (tfx_prof_maybe(lock))
		tfx_prof_unlock_rec(lock, kind);
}

#endif /* TOFUTEX_PTHREAD_PROFILE_H */
