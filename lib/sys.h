/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex internals: system calls made with the instruction itself,
 * as glibc's own lock code makes them, not through libc's syscall(),
 * open(), ioctl() and friends. Those are interposable: a tracer or path
 * remapper loaded with LD_PRELOAD that takes a pthread mutex inside its
 * open() or syscall() would re-enter the library's contended path from
 * within it, without end. And each is a PLT slot, bound lazily at its
 * first call, where the loader's resolver saves the vector registers on
 * the caller's stack: some 3 KB on a thread's first contended lock,
 * which glibc's does not take.
 *
 * tofutex__sys() returns what the kernel returns: -errno on failure.
 * tofutex__sys_errno() returns -1 and sets errno instead, as syscall().
 */
#ifndef TOFUTEX_SYS_H
#define TOFUTEX_SYS_H

#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
static inline long tofutex__sys(long nr, long a, long b, long c, long d,
				long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long tofutex__sys(long nr, long a, long b, long c, long d,
				long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
/* Elsewhere libc's, with what that costs. */
static inline long tofutex__sys(long nr, long a, long b, long c, long d,
				long e, long f)
{
	int saved_errno = errno;
	long ret = syscall(nr, a, b, c, d, e, f);

	if (ret == -1) {
		ret = -errno;
		errno = saved_errno;
	}
	return ret;
}
#endif

static inline long tofutex__sys_errno(long nr, long a, long b, long c,
				      long d, long e, long f)
{
	long ret = tofutex__sys(nr, a, b, c, d, e, f);

	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

#endif /* TOFUTEX_SYS_H */
