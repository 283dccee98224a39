// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - which backend the process runs on: the table of operations
 * (backend.h) its primitives call once user space cannot finish alone.
 *
 * Both backends use the same lock word (TID | WAITERS | OWNER_DIED) and
 * the same user-space fast paths and spin; they differ in who queues the
 * waiters: the module (/dev/tofutex, backend_module.c) or futex(2)
 * (backend_futex.c). Waiters of one backend cannot be woken by the other,
 * so the choice is made once per process, on the first call that needs
 * it, and every thread keeps it:
 *
 * - TOFUTEX_BACKEND=futex in the environment (env.c): futex(2);
 * - TOFUTEX_BACKEND=module: the module, even when it is missing (calls
 *   that need it then fail with the error of opening it, e.g. ENOENT;
 *   tofutex__backend_refused() tells a caller that must not start so,
 *   the pthread preload);
 * - otherwise (unset, "auto", or not valid): the module when
 *   /dev/tofutex opens and TOFUTEX_IOC_VERSION reports ABI version
 *   TOFUTEX_ABI_VERSION with LOCK, WAITWAKE and SWAP, else futex(2).
 *   REQUEUE, RWLOCK and CLOCK_REALTIME are used when offered and
 *   replaced by slower equivalents when not: the module's table is
 *   chosen for the features it reports (tofutex__module_ops()).
 *
 * Threads that choose at the same moment agree through a compare-and-swap
 * on the cached table: the first one published wins. The child of fork()
 * keeps its parent's choice (fork.c), and on the module opens its own
 * descriptor.
 */
#include <string.h>

#include "backend.h"

const struct tofutex__backend_ops *tofutex__ops_cached;
uint64_t tofutex__features;

#define TOFUTEX_FEAT_NEEDED \
	(TOFUTEX_FEAT_VERSION | TOFUTEX_FEAT_LOCK | TOFUTEX_FEAT_WAITWAKE | \
	 TOFUTEX_FEAT_SWAP)

/*
 * The module's features when it is usable, else 0 with *@err saying why
 * (the error of opening the device or of the ioctl; EPROTONOSUPPORT for a
 * module of another ABI or without an operation the library needs).
 */
static uint64_t tofutex_probe_module(int *err)
{
	struct tofutex_version arg;

	memset(&arg, 0, sizeof(arg));
	*err = tofutex__ioctl(TOFUTEX_IOC_VERSION, &arg, NULL);
	if (*err)
		return 0;
	if (arg.abi_version != TOFUTEX_ABI_VERSION ||
	    (arg.features & TOFUTEX_FEAT_NEEDED) != TOFUTEX_FEAT_NEEDED) {
		*err = EPROTONOSUPPORT;
		return 0;
	}
	return arg.features;
}

int tofutex__backend_refused(void)
{
	int err = 0;

	if (tofutex__env_backend() != TOFUTEX_BACKEND_MODULE)
		return 0;
	tofutex_probe_module(&err);
	return err;
}

const struct tofutex__backend_ops *tofutex__ops_slow(void)
{
	const struct tofutex__backend_ops *ops, *expected = NULL;
	int choice = tofutex__env_backend(), err;
	uint64_t features = 0;

	if (choice != TOFUTEX_BACKEND_FUTEX)
		features = tofutex_probe_module(&err);
	if (!choice)
		choice = features ? TOFUTEX_BACKEND_MODULE :
				    TOFUTEX_BACKEND_FUTEX;
	ops = choice == TOFUTEX_BACKEND_FUTEX ? &tofutex__futex_ops :
						tofutex__module_ops(features);

	/*
	 * The features are published before the table, so that a thread
	 * that sees the table sees them too. A racing loser may overwrite
	 * them with its own probe's, which found the same module (a failed
	 * probe stores nothing).
	 */
	if (features)
		__atomic_store_n(&tofutex__features, features,
				 __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&tofutex__ops_cached, &expected, ops,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		ops = expected;
	return ops;
}

int tofutex_backend(void)
{
	return tofutex__ops()->backend;
}
