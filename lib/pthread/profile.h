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
 * look the lock up in profile.c's table (one hash probe for a lock that
 * was never contended) and read the clock only for the locks in it.
 */
#ifndef TOFUTEX_PTHREAD_PROFILE_H
#define TOFUTEX_PTHREAD_PROFILE_H

#include <stdint.h>

#include "../internal.h"

extern bool tfx_prof_on TOFUTEX_HIDDEN;

/* What a record is kept for (the report's "kind" column). */
enum tfx_prof_kind {
	TFX_PROF_MUTEX,
	TFX_PROF_RWLOCK,
	TFX_PROF_COND,
};

static inline bool tfx_prof(void)
{
	return __builtin_expect(tfx_prof_on, 0);
}

/*
 * profile.c. @lock: the object's address, the record's key.
 * tfx_prof_locked(): taken without waiting (fast path, trylock).
 * tfx_prof_waited(): taken (@err 0) or not after waiting since @t0
 * (tfx_prof_now()); creates the lock's record. tfx_prof_unlock(): about
 * to be released by its holder (before the release, so that the next
 * owner's acquire does not overwrite what the hold is measured from).
 */
TOFUTEX_HIDDEN uint64_t tfx_prof_now(void);
TOFUTEX_HIDDEN void tfx_prof_locked(const void *lock, bool exclusive);
TOFUTEX_HIDDEN void tfx_prof_waited(const void *lock, enum tfx_prof_kind kind,
				    bool exclusive, uint64_t t0, int err);
TOFUTEX_HIDDEN void tfx_prof_unlock(const void *lock);

#endif /* TOFUTEX_PTHREAD_PROFILE_H */
