// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - deadlines: an optional absolute time on CLOCK_MONOTONIC or
 * CLOCK_REALTIME, checked once on entry, and turned into what each
 * backend's wait takes.
 *
 * A realtime deadline is never converted to the monotonic clock once and
 * for all: clock_settime() would then not move it. The futex backend
 * passes it to the kernel with FUTEX_CLOCK_REALTIME (backend_futex.c), the
 * module backend with TOFUTEX_*_CLOCK_REALTIME or, on a module without
 * TOFUTEX_FEAT_CLOCK_REALTIME, in monotonic slices (backend_module.c).
 */
#include "internal.h"
#include "sys.h"

int tofutex__deadline_init(struct tofutex__deadline *dl, clockid_t clock,
			   const struct timespec *abstime)
{
	if (!tofutex__clock_ok(clock))
		return EINVAL;
	dl->clock = clock;
	dl->set = abstime != NULL;
	dl->ns = 0;
	if (!abstime)
		return 0;
	return tofutex__deadline_ns(abstime, &dl->ns);
}

/*
 * The kernel's clock, read through the vDSO, not libc's interposable
 * clock_gettime() (vdso.c): the deadlines and polls computed from it are
 * handed to the kernel, which keeps time by the same clock.
 */
uint64_t tofutex__clock_ns(clockid_t clock)
{
	struct timespec ts;

	tofutex__clock_read(clock, &ts);
	return (uint64_t)ts.tv_sec * TOFUTEX_NSEC_PER_SEC +
	       (uint64_t)ts.tv_nsec;
}

bool tofutex__deadline_passed(const struct tofutex__deadline *dl)
{
	return dl->set && tofutex__clock_ns(dl->clock) >= dl->ns;
}
