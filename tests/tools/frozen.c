// SPDX-License-Identifier: GPL-2.0
/*
 * A clock that stands still, as test harnesses and libfaketime's frozen
 * mode make one: clock_gettime() answers the time of its first call, for
 * every clock, ever after. The kernel's timers still run on the real
 * clock; what the drop-in decides from the kernel's answers (a timeout)
 * must not be undone by what this clock says.
 */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	static struct timespec frozen[16];
	static int set[16];
	unsigned int i = (unsigned int)clock < 16 ? (unsigned int)clock : 0;

	if (!__atomic_load_n(&set[i], __ATOMIC_ACQUIRE)) {
		syscall(SYS_clock_gettime, clock, &frozen[i]);
		__atomic_store_n(&set[i], 1, __ATOMIC_RELEASE);
	}
	*ts = frozen[i];
	return 0;
}
