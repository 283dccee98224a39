// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_wait(), tofutex_wake(), tofutex_swap() and their
 * clock variants: TOFUTEX_IOC_WAIT, _WAKE and _SWAP on the module backend,
 * FUTEX_WAIT_BITSET and FUTEX_WAKE on the futex backend (where a swap is
 * a wake followed by a wait: same result, without the module's placement
 * of the woken thread on the waker's CPU), with pthread-style returns.
 *
 * Unlike the lock functions these do not retry after a signal: like
 * futex(2) waiters, callers re-check their condition in a loop anyway, and
 * EINTR lets them notice the signal. The module restarts the ioctl itself
 * for handlers installed with SA_RESTART; futex(2) does the same for
 * FUTEX_WAIT_BITSET.
 */
#include <limits.h>

#include "internal.h"

static bool tofutex_word_bad(const uint32_t *addr)
{
	return !addr || ((uintptr_t)addr & (sizeof(*addr) - 1));
}

/* TOFUTEX_IOC_WAIT or _SWAP (@wake_addr not NULL) on the module. */
static int tofutex_module_wait(uint32_t *addr, uint32_t expected,
			       uint32_t *wake_addr,
			       const struct tofutex__deadline *dl)
{
	uint32_t flags;
	uint64_t ns;
	bool sliced;
	int err;

	for (;;) {
		sliced = tofutex__module_deadline(dl, TOFUTEX_WAIT_DEADLINE,
						  TOFUTEX_WAIT_CLOCK_REALTIME,
						  &flags, &ns);
		if (wake_addr) {
			struct tofutex_swap arg = {
				.wait_uaddr = (uintptr_t)addr,
				.wake_uaddr = (uintptr_t)wake_addr,
				.deadline_ns = ns,
				.val = expected,
				.flags = flags,
			};

			err = tofutex__ioctl(TOFUTEX_IOC_SWAP, &arg, NULL);
			/* The wake is done; another slice only waits. */
			wake_addr = NULL;
		} else {
			struct tofutex_wait arg = {
				.uaddr = (uintptr_t)addr,
				.deadline_ns = ns,
				.val = expected,
				.flags = flags,
			};

			err = tofutex__ioctl(TOFUTEX_IOC_WAIT, &arg, NULL);
		}
		if (err != ETIMEDOUT || !sliced || tofutex__deadline_passed(dl))
			return err;
	}
}

static int tofutex_wait_common(uint32_t *addr, uint32_t expected,
			       uint32_t *wake_addr, clockid_t clockid,
			       const struct timespec *abstime)
{
	struct tofutex__deadline dl;
	int err;

	err = tofutex__deadline_init(&dl, clockid, abstime);
	if (err)
		return err;
	if (!tofutex__on_futex())
		return tofutex_module_wait(addr, expected, wake_addr, &dl);
	if (tofutex_word_bad(addr) || (wake_addr && tofutex_word_bad(wake_addr)))
		return EINVAL;
	if (wake_addr) {
		err = tofutex__futex_wake(wake_addr, 1);
		if (err < 0)
			return -err;
	}
	return tofutex__futex_wait(addr, expected, &dl, 0);
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
	struct tofutex_wake arg = {
		.uaddr = (uintptr_t)addr,
		.count = count,
	};
	int err, n = 0;

	if (tofutex__on_futex()) {
		if (tofutex_word_bad(addr))
			return EINVAL;
		n = tofutex__futex_wake(addr, count > INT_MAX ? INT_MAX :
						(int)count);
		err = n < 0 ? -n : 0;
	} else {
		err = tofutex__ioctl(TOFUTEX_IOC_WAKE, &arg, &n);
	}
	if (!err && woken)
		*woken = (unsigned int)n;
	return err;
}
