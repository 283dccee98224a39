// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the calling thread's TID, cached per thread.
 *
 * A lock word holds its owner's TID, so every lock and unlock needs the
 * caller's; gettid() is a system call, the cache makes it a TLS load. A
 * thread's TID never changes, except that the child of fork() runs the
 * forking thread's code under a new TID: the fork handler (fork.c) calls
 * tofutex__tid_forget() there.
 *
 * TIDs fit in TOFUTEX_TID_MASK: the kernel caps pid_max at
 * PID_MAX_LIMIT, 2^22 on 64-bit and 32768 on 32-bit machines.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "sys.h"

_Thread_local struct tofutex__thread tofutex__self
	__attribute__((tls_model("initial-exec")));

bool tofutex__tid_used;

/* The process ID, for tgkill() in backend_futex.c; 0 until first use. */
static pid_t tofutex_pid;

pid_t tofutex__pid(void)
{
	pid_t pid = __atomic_load_n(&tofutex_pid, __ATOMIC_RELAXED);

	if (!pid) {
		pid = (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
		__atomic_store_n(&tofutex_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

pid_t tofutex__tid_slow(void)
{
	int saved_errno;
	pid_t tid;

	if (tofutex__fork_ready())
		return 0;
	saved_errno = errno;
	tid = (pid_t)tofutex__sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	errno = saved_errno;
	tofutex__self.tid = tid;
	__atomic_store_n(&tofutex__tid_used, true, __ATOMIC_RELAXED);
	return tid;
}

bool tofutex__fork_tid_mine(uint32_t fork_tid)
{
	int saved_errno = errno;
	long ret = tofutex__sys(SYS_tgkill, tofutex__pid(), (long)fork_tid, 0,
				0, 0, 0);

	errno = saved_errno;
	return ret == -ESRCH;
}

void tofutex__tid_forget(void)
{
	/*
	 * Only a TID cached by the parent: a child that forks again before
	 * it used a lock keeps the fork_tid its own fork handler set.
	 */
	if (tofutex__self.tid)
		tofutex__self.fork_tid = tofutex__self.tid;
	tofutex__self.tid = 0;
	__atomic_store_n(&tofutex_pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&tofutex__tid_used, false, __ATOMIC_RELAXED);
}
