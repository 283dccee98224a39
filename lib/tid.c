// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the calling thread's TID, cached per thread.
 *
 * A lock word holds its owner's TID, so every lock and unlock needs the
 * caller's; gettid() is a system call, the cache makes it a TLS load. A
 * thread's TID never changes, except that the child of fork() runs the
 * forking thread's code under a new TID: the fork handler in device.c
 * calls tofutex__tid_forget() there. The handler is registered before the
 * first TID is cached, so no TID cached by this library can survive a
 * fork() unnoticed.
 *
 * TIDs fit in TOFUTEX_TID_MASK: the kernel caps pid_max at
 * PID_MAX_LIMIT, 2^22 on 64-bit and 32768 on 32-bit machines.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

_Thread_local struct tofutex__thread tofutex__self
	__attribute__((tls_model("initial-exec")));

pid_t tofutex__tid_slow(void)
{
	int saved_errno;
	pid_t tid;

	if (tofutex__fork_ready())
		return 0;
	saved_errno = errno;
	tid = (pid_t)syscall(SYS_gettid);
	errno = saved_errno;
	tofutex__self.tid = tid;
	return tid;
}

void tofutex__tid_forget(void)
{
	tofutex__self.tid = 0;
}
