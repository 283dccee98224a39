// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_wait(), tofutex_wake(), tofutex_swap() and their
 * clock variants, with pthread-style returns: the backend's ->wait(),
 * ->wake() and ->swap() (backend.h; TOFUTEX_IOC_WAIT, _WAKE and _SWAP on
 * the module, FUTEX_WAIT_BITSET and FUTEX_WAKE on futex(2), where a swap
 * is a wake followed by a wait).
 *
 * Unlike the lock functions these do not retry after a signal: like
 * futex(2) waiters, callers re-check their condition in a loop anyway, and
 * EINTR lets them notice the signal. The module restarts the ioctl itself
 * for handlers installed with SA_RESTART; futex(2) does the same for
 * FUTEX_WAIT_BITSET.
 */
#include "backend.h"

static int tofutex_wait_common(uint32_t *addr, uint32_t expected,
			       uint32_t *wake_addr, clockid_t clockid,
			       const struct timespec *abstime)
{
	const struct tofutex__backend_ops *ops;
	struct tofutex__deadline dl;
	int err;

	err = tofutex__deadline_init(&dl, clockid, abstime);
	if (err)
		return err;
	ops = tofutex__ops();
	/* tofutex_swap() without a word to wake is a wait. */
	if (wake_addr)
		return ops->swap(addr, expected, wake_addr, &dl);
	return ops->wait(addr, expected, &dl);
}

int tofutex_wait(uint32_t *addr, uint32_t expected,
		 const struct timespec *abstime)
{
	return tofutex_wait_common(addr, expected, NULL, CLOCK_MONOTONIC,
				   abstime);
}

int tofutex_clockwait(uint32_t *addr, uint32_t expected, clockid_t clockid,
		      const struct timespec *abstime)
{
	return tofutex_wait_common(addr, expected, NULL, clockid, abstime);
}

int tofutex_swap(uint32_t *wait_addr, uint32_t expected, uint32_t *wake_addr,
		 const struct timespec *abstime)
{
	return tofutex_wait_common(wait_addr, expected, wake_addr,
				   CLOCK_MONOTONIC, abstime);
}

int tofutex_clockswap(uint32_t *wait_addr, uint32_t expected,
		      uint32_t *wake_addr, clockid_t clockid,
		      const struct timespec *abstime)
{
	return tofutex_wait_common(wait_addr, expected, wake_addr, clockid,
				   abstime);
}

int tofutex_wake(uint32_t *addr, unsigned int count, unsigned int *woken)
{
	return tofutex__ops()->wake(addr, count, woken);
}
