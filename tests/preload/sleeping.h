/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the preload's conformance programs: whether a thread of this
 * process is asleep, from /proc (a thread that waits in the kernel for a
 * lock or a condition is in state S there; one that spins or yields is R).
 */
#ifndef TOFUTEX_TESTS_PRELOAD_SLEEPING_H
#define TOFUTEX_TESTS_PRELOAD_SLEEPING_H

#include "../common.h"

/* The state letter of thread @tid of this process, '?' if unknown. */
static inline char thread_state(uint32_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

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
