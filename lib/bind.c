// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the calls into the C library that the contended paths
 * make, bound when the library is loaded rather than at their first call.
 *
 * A PLT slot is bound lazily, at its first call, by the loader's resolver,
 * which saves the vector registers on the caller's stack: some 3 KB,
 * taken by a thread's first contended lock, deep in its calls, where
 * glibc's own lock takes nothing (its slow paths call through no slot).
 * Linking with -z now would bind every import at load, but it also runs
 * the resolvers of IFUNCs that an interposer loaded before the library
 * defines (strlen, memcpy, ...) before that interposer is relocated,
 * which crashes it. So the contended paths make their system calls
 * themselves (sys.h), the clock too (clock.c), and the C library
 * functions they still call, a condition wait's pthread_setcanceltype()
 * and its cleanup buffer's _pthread_cleanup_push() and _pop()
 * (internal.h), are called once here, from a constructor, after every
 * object is relocated.
 */
#include <pthread.h>

#include "internal.h"

static void tofutex_bind_cleanup(void *arg)
{
	(void)arg;
}

void tofutex__bind_calls(void)
{
	int type;

	if (!pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type))
		pthread_setcanceltype(type, NULL);
	TOFUTEX_CLEANUP_PUSH(tofutex_bind_cleanup, NULL);
	TOFUTEX_CLEANUP_POP(0);
}
