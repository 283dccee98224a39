// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - TOFUTEX_RUN_STATS=1: one line on stderr when the
 * process exits, with the process's tofutex statistics (tofutex_stats(),
 * TOFUTEX_STATS_PROCESS; see tofutex(4)), so that a run under
 * tofutex-run(1) shows whether its locks went through the module:
 *
 *   tofutex-run: pid 123 backend=module lock=.. unlock=.. spins=..
 *                sleeps=.. steals=.. handoffs=.. owner_deaths=..
 *                timeouts=.. wait=.. wake=..
 *
 * (one line). On the futex backend there are no kernel statistics; the
 * line says backend=futex. The line is written with one write(2), so
 * that the lines of several processes sharing stderr do not interleave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

static void tfx_stats_print(void)
{
	struct tofutex_stats st;
	char line[512];
	int n, err;

	err = tofutex_stats(TOFUTEX_STATS_PROCESS, &st);
	if (err) {
		n = snprintf(line, sizeof(line),
			     "tofutex-run: pid %d backend=%s (no statistics: %s)\n",
			     (int)getpid(),
			     tofutex_backend() == TOFUTEX_BACKEND_FUTEX ?
			     "futex" : "module", strerror(err));
	} else {
		n = snprintf(line, sizeof(line),
			     "tofutex-run: pid %d backend=module lock=%llu unlock=%llu spins=%llu sleeps=%llu steals=%llu handoffs=%llu owner_deaths=%llu timeouts=%llu wait=%llu wake=%llu\n",
			     (int)getpid(),
			     (unsigned long long)st.lock_calls,
			     (unsigned long long)st.unlock_calls,
			     (unsigned long long)st.spins,
			     (unsigned long long)st.sleeps,
			     (unsigned long long)st.steals,
			     (unsigned long long)st.handoffs,
			     (unsigned long long)st.owner_deaths,
			     (unsigned long long)st.timeouts,
			     (unsigned long long)st.wait_calls,
			     (unsigned long long)st.wake_calls);
	}
	if (n > 0)
		(void)!write(STDERR_FILENO, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

__attribute__((constructor)) static void tfx_stats_init(void)
{
	const char *env = getenv("TOFUTEX_RUN_STATS");

	if (env && strcmp(env, "1") == 0)
		atexit(tfx_stats_print);
}
