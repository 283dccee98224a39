// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - _Fork(): glibc's (2.34), which runs no fork
 * handlers, then in the child what libtofutex's own handler gives the
 * child of fork() (lib/fork.c): its thread's new ID and, on the module,
 * a descriptor of its own. Without them the child's thread would lock
 * under its parent's TID, which another thread of the child waiting in
 * the module takes for a thread of another process. That handler makes
 * system calls only, so this stays async-signal-safe, as _Fork() is.
 * The reports' handlers do not run: such a child writes none (exit.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "../internal.h"

static pid_t (*tfx_fork_next)(void);

static void tfx_fork_resolve(void)
{
	__atomic_store_n(&tfx_fork_next,
			 (pid_t (*)(void))dlsym(RTLD_NEXT, "_Fork"),
			 __ATOMIC_RELAXED);
}

pid_t _Fork(void)
{
	pid_t pid;

	/* Called before the constructor (another library's): resolved now. */
	if (!__atomic_load_n(&tfx_fork_next, __ATOMIC_RELAXED))
		tfx_fork_resolve();
	/* A C library without it: the program could not have called it. */
	if (!tfx_fork_next) {
		errno = ENOSYS;
		return -1;
	}
	pid = tfx_fork_next();
	if (pid == 0)
		tofutex__fork_child();
	return pid;
}

__attribute__((constructor)) static void tfx_fork_start(void)
{
	tfx_fork_resolve();
}
