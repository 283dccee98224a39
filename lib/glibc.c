// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - a lock word that glibc's own mutex code has used.
 *
 * The pthread preload (lib/pthread/) keeps its mutexes' lock word in
 * glibc's __lock, and some glibc code cannot be kept away from them:
 * where the preload cannot hand out its own functions (a plugin loaded
 * with RTLD_DEEPBIND, in its constructors; a handle's dlsym() on other
 * architectures than x86-64; tofutex-run(1), BUGS), and glibc's wait on
 * a process-shared condition variable, which unlocks and relocks the
 * mutex with its internal functions. glibc's protocol on the word ("mutex take 2"):
 *
 *   lock    0 -> 1 with a compare-and-swap; when that fails, exchange in
 *           2 until the old value was 0, FUTEX_WAIT (private) for 2
 *           between tries (its lock that woke from the sleep owns 2)
 *   unlock  exchange in 0; FUTEX_WAKE one if the old value was above 1
 *
 * So a word whose TID bits are 1 or 2 is held by glibc's code, and a word
 * glibc's code locked over ours says 2, without our TID or WAITERS. That
 * reading holds only for the preload's words, which enables it
 * (tofutex__glibc_words_enable()), and only for a 1 or 2 that is no
 * thread's of the process (the main process of a PID namespace, pid 1 or
 * 2, a container's, has threads 1 and 2). libtofutex then
 *
 * - counts 1 and 2 as a live owner of this process, and waits for such a
 *   word the way glibc's lock does (tofutex__glibc_lock()): it marks it 2
 *   and sleeps on it with FUTEX_WAIT, so that glibc's unlock, which
 *   wakes only when the old value as an int is above 1 (a word with
 *   WAITERS, the sign bit, is not), wakes it; never writing over one of
 *   our TIDs, it goes back to its own path when one of ours holds the
 *   word. The module's LOCK, which would count such an owner as another
 *   process's, is not used for it. Once it has the word it puts its own
 *   TID back, with WAITERS (tofutex__glibc_adopt()), so that the owner
 *   is known again and its unlock wakes whoever sleeps; on the module
 *   that unlock then wakes a futex sleeper of glibc's too;
 * - before glibc's code releases a word one of ours holds (glibc's wait
 *   on a process-shared condition variable), makes it 2
 *   (tofutex__glibc_handover()), so that glibc's unlock wakes a sleeper;
 * - releases a word it holds that says 1 or 2 the way glibc does, waking
 *   a glibc sleeper with FUTEX_WAKE and, on the module, a sleeper of the
 *   module with TOFUTEX_IOC_UNLOCK, since glibc's lock erased the WAITERS
 *   bit that would have told (tofutex__glibc_release(), the backend's
 *   ->unlock_glibc()): its unlock wakes whenever the word holds anything
 *   but its own TID alone;
 * - remembers, once it has seen glibc's code on a word (or a
 *   process-shared condition variable, whose glibc wait may come to use
 *   one, lib/pthread/cond.c), that glibc's unlock wakes only futex
 *   sleepers: from then on, on the module backend too, the preload's
 *   contended locks wait with futex(2)'s lock, and a contended
 *   release is glibc's (backend_module.c): glibc's code may write
 *   its 2 over the word at any moment, and the module's UNLOCK would
 *   leave a word that does not hold the caller's TID alone.
 *   A thread already asleep in the module is woken by our releases
 *   (TOFUTEX_IOC_UNLOCK, also for a word glibc's code marked), but not by
 *   glibc's: only glibc's wait on a process-shared condition variable
 *   releases a word one of ours held, and the first sight of such a
 *   condition variable comes before.
 *
 * What is lost while glibc's value is in the word is the owner's identity;
 * the preload keeps it for ERRORCHECK and RECURSIVE mutexes where glibc
 * does, in __owner (lib/pthread/mutex.c).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "sys.h"

bool tofutex__glibc_words;
static bool tofutex_glibc_seen;

/*
 * A word's 1 or 2 is glibc's value unless a thread of this process has
 * that TID: process 1 or 2 of a PID namespace (a container's main
 * process, or any process forked or cloned into a new namespace, with or
 * without the fork handlers) has threads 1 and 2, and a process restored
 * with its TIDs (clone3()'s set_tid, ns_last_pid) may have either.
 * Asked each time a word says 1 or 2, on a path that is about to wait,
 * so that it is this process's answer whoever made it and whenever.
 */
bool tofutex__glibc_not_a_thread(uint32_t owner)
{
	pid_t pid = (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0);

	return tofutex__sys(SYS_tgkill, pid, (long)owner, 0, 0, 0, 0) ==
	       -ESRCH;
}

void tofutex__glibc_words_enable(void)
{
	__atomic_store_n(&tofutex__glibc_words, true, __ATOMIC_RELAXED);
}

void tofutex__glibc_ran(void)
{
	if (!__atomic_load_n(&tofutex_glibc_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&tofutex_glibc_seen, true, __ATOMIC_RELAXED);
}

bool tofutex__glibc_has_run(void)
{
	return __atomic_load_n(&tofutex_glibc_seen, __ATOMIC_RELAXED);
}

void tofutex__glibc_adopt(uint32_t *word, uint32_t tid)
{
	uint32_t w = __atomic_load_n(word, __ATOMIC_RELAXED);

	while (tid && tofutex__glibc_owner(w & TOFUTEX_TID_MASK) &&
	       !__atomic_compare_exchange_n(word, &w, tid | TOFUTEX_WAITERS,
					    false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

int tofutex__glibc_lock(uint32_t *word, uint32_t tid,
			const struct tofutex__deadline *dl)
{
	uint32_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
	int saved_errno = errno, err = 0;

	tofutex__glibc_ran();
	for (;;) {
		if (!(w & TOFUTEX_TID_MASK)) {
			/* Free: take it as glibc's contended lock does. */
			if (__atomic_compare_exchange_n(word, &w, 2, false,
							__ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				break;
			continue;
		}
		/* One of ours holds it now: the caller's own path. */
		if (!tofutex__glibc_owner(w & TOFUTEX_TID_MASK)) {
			err = EAGAIN;
			break;
		}
		/* 2, glibc's "with waiters", so that its unlock wakes. */
		if (w != 2 && !__atomic_compare_exchange_n(word, &w, 2, false,
							    __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED))
			continue;
		/* A raw futex wait on either backend: glibc wakes with futex. */
		err = tofutex__futex_wait(word, 2, dl, 0);
		if (err == ETIMEDOUT)
			break;
		err = 0;
		w = __atomic_load_n(word, __ATOMIC_RELAXED);
	}
	errno = saved_errno;
	if (!err)
		tofutex__glibc_adopt(word, tid);
	return err;
}

void tofutex__glibc_handover(uint32_t *word)
{
	uint32_t w = __atomic_load_n(word, __ATOMIC_RELAXED);

	tofutex__glibc_ran();
	while (!__atomic_compare_exchange_n(word, &w, 2, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int tofutex__glibc_release(uint32_t *word)
{
	tofutex__glibc_ran();
	return tofutex__ops()->unlock_glibc(word);
}
