/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the preload's conformance programs: whether a thread of this
 * process is asleep (thread_state(), common.h).
 */
#ifndef TOFUTEX_TESTS_PRELOAD_SLEEPING_H
#define TOFUTEX_TESTS_PRELOAD_SLEEPING_H

#include "../common.h"

/* Wait (up to TEST_WAIT_NS) until thread *@tid exists and sleeps. */
static inline bool thread_asleep_within(const uint32_t *tid)
{
	bool ok;

	WAIT_UNTIL(ok, __atomic_load_n(tid, __ATOMIC_ACQUIRE) &&
		       thread_state(__atomic_load_n(tid, __ATOMIC_ACQUIRE)) == 'S',
		   TEST_WAIT_NS);
	return ok;
}

#endif /* TOFUTEX_TESTS_PRELOAD_SLEEPING_H */
