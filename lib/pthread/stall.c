// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - the wait of a lock that glibc would let stall:
 * a mutex its own owner relocks, a dead owner's, one held by a thread of
 * another process, a fork() child's rwlock held by the parent's thread.
 * Nothing wakes such a waiter, so it polls; what ends the stall is the
 * caller's to judge between the steps.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "../internal.h"
#include "preload.h"

int tfx_stall_step(clockid_t clockid, const struct timespec *abstime)
{
	uint32_t never = 0;
	struct timespec now, slice;
	int err;

	/* The kernel's clock, as the wait below keeps it (vdso.c). */
	tofutex__clock_read(clockid, &now);
	if (abstime && (now.tv_sec > abstime->tv_sec ||
			(now.tv_sec == abstime->tv_sec &&
			 now.tv_nsec >= abstime->tv_nsec)))
		return ETIMEDOUT;
	slice = now;
	slice.tv_nsec += TOFUTEX_POLL_NS;
	if (slice.tv_nsec >= (long)TOFUTEX_NSEC_PER_SEC) {
		slice.tv_sec++;
		slice.tv_nsec -= TOFUTEX_NSEC_PER_SEC;
	}
	if (abstime && (slice.tv_sec > abstime->tv_sec ||
			(slice.tv_sec == abstime->tv_sec &&
			 slice.tv_nsec > abstime->tv_nsec)))
		slice = *abstime;
	err = tofutex_clockwait(&never, 0, clockid, &slice);
	if (err && err != ETIMEDOUT && err != EINTR)
		return err;
	return 0;
}
