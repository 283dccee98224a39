// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - a lock word that glibc's own mutex code has used.
 *
 * The pthread preload (lib/pthread/) keeps its mutexes' lock word in
 * glibc's __lock, and some glibc code cannot be kept away from them: a
 * plugin loaded with RTLD_DEEPBIND or a pthread_mutex_lock() taken with
 * dlsym() from a handle binds to glibc's functions, and glibc's wait on a
 * process-shared condition variable unlocks and relocks the mutex with its
 * internal functions. glibc's protocol on the word ("mutex take 2"):
 *
 *   lock    0 -> 1 with a compare-and-swap; when that fails, exchange in
 *           2 until the old value was 0, FUTEX_WAIT (private) for 2
 *           between tries (its lock that woke from the sleep owns 2)
 *   unlock  exchange in 0; FUTEX_WAKE one if the old value was above 1
 *
 * So a word whose TID bits are 1 or 2 is held by glibc's code (no TID is
 * 1 or 2 outside a PID namespace whose init is the program itself), and a
 * word glibc's code locked over ours says 2, without our TID or WAITERS.
 * libtofutex therefore
 *
 * - counts 1 and 2 as a live owner of this process, and waits for such a
 *   word the way glibc's lock does (tofutex__glibc_lock()), so that
 *   glibc's unlock wakes it; the module's LOCK, which would count such an
 *   owner as another process's, is not used for it;
 * - releases a word it holds that says 1 or 2 the way glibc does, waking
 *   a glibc sleeper with FUTEX_WAKE and, on the module, a sleeper of the
 *   module with TOFUTEX_IOC_UNLOCK, since glibc's lock erased the WAITERS
 *   bit that would have told (tofutex__glibc_release()): its unlock wakes
 *   whenever the word holds anything but its own TID alone;
 * - remembers, once it has seen glibc's code on a word, that glibc's
 *   unlock (which wakes only futex sleepers) may leave a module sleeper
 *   asleep: from then on every waiter in the module checks its owner
 *   every owner_check_ns (no TOFUTEX_LOCK_NO_OWNER_POLL), which ends such
 *   a sleep when the word is free.
 *
 * What is lost while glibc's value is in the word is the owner's identity:
 * an error-checking unlock cannot tell the owner from another thread then.
 */
#include "internal.h"

static bool tofutex_glibc_seen;

void tofutex__glibc_ran(void)
{
	if (!__atomic_load_n(&tofutex_glibc_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&tofutex_glibc_seen, true, __ATOMIC_RELAXED);
}

bool tofutex__glibc_has_run(void)
{
	return __atomic_load_n(&tofutex_glibc_seen, __ATOMIC_RELAXED);
}

int tofutex__glibc_lock(uint32_t *word, const struct tofutex__deadline *dl)
{
	int saved_errno = errno, err;

	tofutex__glibc_ran();
	while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0) {
		/* A raw futex wait on either backend: glibc wakes with futex. */
		err = tofutex__futex_wait(word, 2, dl, 0);
		if (err == ETIMEDOUT) {
			errno = saved_errno;
			return ETIMEDOUT;
		}
	}
	errno = saved_errno;
	return 0;
}

int tofutex__glibc_release(uint32_t *word)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)word };

	tofutex__glibc_ran();
	__atomic_exchange_n(word, 0, __ATOMIC_RELEASE);
	tofutex__futex_wake(word, 1);
	if (tofutex__on_futex())
		return 0;
	/* The word no longer holds our TID: the module only wakes. */
	return tofutex__ioctl(TOFUTEX_IOC_UNLOCK, &arg, NULL);
}
