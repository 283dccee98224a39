// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - deadlines: an optional absolute time on CLOCK_MONOTONIC or
 * CLOCK_REALTIME, checked once on entry, and turned into what each
 * backend's wait takes.
 *
 * A realtime deadline is never converted to the monotonic clock once and
 * for all: clock_settime() would then not move it. The futex backend
 * passes it to the kernel with FUTEX_CLOCK_REALTIME, the module with
 * TOFUTEX_*_CLOCK_REALTIME when it reports TOFUTEX_FEAT_CLOCK_REALTIME. A
 * module without that feature gets monotonic slices of at most
 * TOFUTEX_POLL_NS, each converted at the time it starts, so that a clock
 * change is followed within one slice.
 */
#include "internal.h"

int tofutex__deadline_init(struct tofutex__deadline *dl, clockid_t clock,
			   const struct timespec *abstime)
{
	if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME)
		return EINVAL;
	dl->clock = clock;
	dl->set = abstime != NULL;
	dl->ns = 0;
	if (!abstime)
		return 0;
	return tofutex__deadline_ns(abstime, &dl->ns);
}

uint64_t tofutex__clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * TOFUTEX_NSEC_PER_SEC +
	       (uint64_t)ts.tv_nsec;
}

bool tofutex__deadline_passed(const struct tofutex__deadline *dl)
{
	return dl->set && tofutex__clock_ns(dl->clock) >= dl->ns;
}

bool tofutex__module_deadline(const struct tofutex__deadline *dl,
			      uint32_t deadline_flag, uint32_t realtime_flag,
			      uint32_t *flags, uint64_t *ns)
{
	uint64_t now, left;

	*flags = 0;
	*ns = 0;
	if (!dl->set)
		return false;
	*flags = deadline_flag;
	*ns = dl->ns;
	if (dl->clock == CLOCK_MONOTONIC)
		return false;
	if (tofutex__has(TOFUTEX_FEAT_CLOCK_REALTIME)) {
		*flags |= realtime_flag;
		return false;
	}
	now = tofutex__clock_ns(CLOCK_REALTIME);
	left = dl->ns > now ? dl->ns - now : 0;
	if (left > TOFUTEX_POLL_NS)
		left = TOFUTEX_POLL_NS;
	*ns = tofutex__clock_ns(CLOCK_MONOTONIC) + left;
	return true;
}
