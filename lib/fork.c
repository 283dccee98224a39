// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - fork().
 *
 * The child of fork() is a new process with one thread, the forking one,
 * under a new TID. What the library cached for the parent must go: the
 * descriptor (the kernel binds it to the parent, device.c) and the
 * thread's TID (tid.c); the backend chosen stays (backend.c). A pthread_atfork()
 * child handler does it, registered by a constructor when the library is
 * loaded, before any caller's own handlers: glibc runs child handlers in
 * the order of registration, so ours always runs first, and the caller's
 * child handler then finds the library ready for the child.
 *
 * That makes the usual idiom deterministic: lock every mutex in a prepare
 * handler, unlock them in the parent and child handlers. In the child, the
 * words locked in prepare hold the forking thread's TID in the parent; the
 * child handler keeps that TID as the thread's @fork_tid, and the mutex
 * functions treat a word holding it as the caller's own (internal.h).
 *
 * A process made by _Fork(), which runs no fork handlers, gets the same
 * from the pthread preload's _Fork() (lib/pthread/fork.c).
 *
 * The handler is registered before the first TID is cached (a TID is
 * cached only once tofutex__fork_ready() said yes), so no TID cached by
 * this library can survive a fork() unnoticed.
 */
#include <pthread.h>

#include "backend.h"
#include "internal.h"

static pthread_once_t tofutex_fork_once = PTHREAD_ONCE_INIT;
static int tofutex_fork_err;

/*
 * Runs in the child, in its only thread; touches no lock. The child keeps
 * its parent's backend, without looking at the environment again (the
 * parent may have changed it for the programs it will run) and, on
 * futex(2), without a system call. On the module it needs a descriptor
 * of its own and gets it here, before fork() returns and so before the
 * child's own code runs: a child that then confines itself (a seccomp
 * filter that forbids openat(), a chroot without /dev) has it already.
 * It is made from the inherited descriptor, not opened by name (device.c),
 * so a parent that forbade openat() before forking keeps its children too.
 * The system calls are async-signal-safe, as a child handler of a
 * multithreaded parent requires.
 */
void tofutex__fork_child(void)
{
	int saved_errno = errno;
	const struct tofutex__backend_ops *ops =
		__atomic_load_n(&tofutex__ops_cached, __ATOMIC_RELAXED);

	tofutex__fd_fork_child(ops && ops->backend == TOFUTEX_BACKEND_MODULE);
	tofutex__spin_forget();
	tofutex__tid_forget();
	errno = saved_errno;
}

static void tofutex_fork_register(void)
{
	tofutex_fork_err = pthread_atfork(NULL, NULL, tofutex__fork_child);
}

int tofutex__fork_ready(void)
{
	int saved_errno = errno;

	/*
	 * pthread_once() is itself safe against fork() in glibc. The
	 * allocation in pthread_atfork() may set errno.
	 */
	pthread_once(&tofutex_fork_once, tofutex_fork_register);
	errno = saved_errno;
	return tofutex_fork_err ? ENOMEM : 0;
}

/*
 * At load time (for the static library: when the program starts, since
 * tid.c, which every lock links, refers to this file).
 */
__attribute__((constructor)) static void tofutex_fork_init(void)
{
	tofutex__fork_ready();
	tofutex__bind_calls();
	tofutex__vdso_find();
}
