// SPDX-License-Identifier: GPL-2.0
/*
 * An interposer as tracers and path remappers are: its open() and
 * syscall() each do their bookkeeping under a pthread mutex, which the
 * threads of shimprog.c contend for. The drop-in's own first use of the
 * device and its system calls must not come back through them (each
 * would re-enter the contended lock it is serving, without end).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sys_lock = PTHREAD_MUTEX_INITIALIZER;

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	va_list ap;
	int mode, fd;

	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	if (!real)
		real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	pthread_mutex_lock(&open_lock);
	usleep(5000);
	fd = real(path, flags, mode);
	pthread_mutex_unlock(&open_lock);
	return fd;
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], ret;
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	pthread_mutex_lock(&sys_lock);
	usleep(1000);
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	pthread_mutex_unlock(&sys_lock);
	return ret;
}
