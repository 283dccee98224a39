// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex-stats - print the module's global statistics on one line, as
 * key=value pairs (tofutex_stats(), TOFUTEX_STATS_GLOBAL). The real
 * programs' runs (tests/programs/run.sh) read it before and after each
 * run under tofutex-run: programs whose worker processes leave through
 * _exit() never print their own TOFUTEX_RUN_STATS line.
 */
#include <stdio.h>
#include <string.h>

#include <tofutex.h>

int main(void)
{
	struct tofutex_stats st;
	int err = tofutex_stats(TOFUTEX_STATS_GLOBAL, &st);

	if (err) {
		fprintf(stderr, "tofutex-stats: %s\n", strerror(err));
		return 1;
	}
	printf("lock=%llu unlock=%llu spins=%llu sleeps=%llu steals=%llu handoffs=%llu wait=%llu wake=%llu\n",
	       (unsigned long long)st.lock_calls,
	       (unsigned long long)st.unlock_calls,
	       (unsigned long long)st.spins, (unsigned long long)st.sleeps,
	       (unsigned long long)st.steals, (unsigned long long)st.handoffs,
	       (unsigned long long)st.wait_calls,
	       (unsigned long long)st.wake_calls);
	return 0;
}
