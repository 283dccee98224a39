// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_wait(), tofutex_wake(), tofutex_swap(): thin
 * wrappers of TOFUTEX_IOC_WAIT, _WAKE and _SWAP, with pthread-style
 * returns.
 *
 * Unlike the lock functions these do not retry after a signal: like
 * futex(2) waiters, callers re-check their condition in a loop anyway, and
 * EINTR lets them notice the signal. The kernel restarts the ioctl itself
 * for handlers installed with SA_RESTART.
 */
#include "internal.h"

/* Fill @flags and @deadline_ns from an optional absolute deadline. */
static int tofutex_wait_deadline(const struct timespec *abstime,
				 __u32 *flags, __u64 *deadline_ns)
{
	uint64_t ns;
	int err;

	*flags = 0;
	*deadline_ns = 0;
	if (!abstime)
		return 0;
	err = tofutex__deadline_ns(abstime, &ns);
	if (err)
		return err;
	*flags = TOFUTEX_WAIT_DEADLINE;
	*deadline_ns = ns;
	return 0;
}

int tofutex_wait(uint32_t *addr, uint32_t expected,
		 const struct timespec *abstime)
{
	struct tofutex_wait arg = {
		.uaddr = (uintptr_t)addr,
		.val = expected,
	};
	int err;

	err = tofutex_wait_deadline(abstime, &arg.flags, &arg.deadline_ns);
	if (err)
		return err;
	return tofutex__ioctl(TOFUTEX_IOC_WAIT, &arg, NULL);
}

int tofutex_wake(uint32_t *addr, unsigned int count, unsigned int *woken)
{
	struct tofutex_wake arg = {
		.uaddr = (uintptr_t)addr,
		.count = count,
	};
	int err, n = 0;

	err = tofutex__ioctl(TOFUTEX_IOC_WAKE, &arg, &n);
	if (!err && woken)
		*woken = (unsigned int)n;
	return err;
}

int tofutex_swap(uint32_t *wait_addr, uint32_t expected, uint32_t *wake_addr,
		 const struct timespec *abstime)
{
	struct tofutex_swap arg = {
		.wait_uaddr = (uintptr_t)wait_addr,
		.wake_uaddr = (uintptr_t)wake_addr,
		.val = expected,
	};
	int err;

	err = tofutex_wait_deadline(abstime, &arg.flags, &arg.deadline_ns);
	if (err)
		return err;
	return tofutex__ioctl(TOFUTEX_IOC_SWAP, &arg, NULL);
}
