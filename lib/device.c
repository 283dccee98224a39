// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the process's descriptor for /dev/tofutex, and fork().
 *
 * The kernel binds a descriptor to the process that opened it: an ioctl
 * through a descriptor that reached another process (inherited over
 * fork(), passed over a Unix socket) fails with EBADFD. So the library
 * keeps exactly one descriptor per process:
 *
 * - It is opened on first use, not at load time: a program that links
 *   libtofutex but never contends on a lock never needs the device, and
 *   uncontended lock and unlock work without it. Two uses come early on
 *   purpose: the pthread preload chooses the backend when it is loaded
 *   (lib/pthread/start.c), and the fork handler of a process on the
 *   module makes the child's own (fork.c), both before the code that
 *   might forbid openat() runs; the child's comes from the inherited
 *   descriptor, with no openat() at all.
 *
 * - It is kept above descriptor 2 (tofutex_fd_high()): opened at start,
 *   it must not take a standard descriptor a program started without,
 *   whose first open() expects that number.
 *
 * - Threads race to open it: each loser of the compare-and-swap that
 *   publishes the descriptor closes its own and uses the winner's. A failed
 *   open is not cached, so loading the module later makes the library work.
 *
 * - The child of fork() must not use the parent's descriptor. The
 *   pthread_atfork() child handler (fork.c) closes the inherited copy
 *   (fork() duplicated the descriptor table, so this does not affect the
 *   parent), on the module after making the child's own from it.
 *   Neither the lock fast paths nor the ioctl path call getpid() for this.
 *
 * - A process created without the fork handlers (_Fork(), a raw clone())
 *   still holds the old number. The kernel's EBADFD tells; the library then
 *   compares the pid recorded with the descriptor against getpid(), drops
 *   the stale number and opens its own. It does not close the stale one:
 *   such a process may share its descriptor table with its creator.
 *
 * The cache is one 64-bit word, (pid << 32) | fd, or 0 for "not open", so
 * that a descriptor and the process it belongs to are read together.
 * The descriptor is never closed in the process that opened it: other
 * threads may be using it at any time, up to and during exit().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sys.h"

static uint64_t tofutex_fd_cache;

static int tofutex_cache_fd(uint64_t cache)
{
	return (int)(uint32_t)cache;
}

static pid_t tofutex_cache_pid(uint64_t cache)
{
	return (pid_t)(cache >> 32);
}

/* The device's number, from the first descriptor this library opened. */
static dev_t tofutex_fd_rdev;

/*
 * Is @fd, a number this library cached, still a descriptor of the device?
 * A program may have closed it behind the library (closefrom() in a
 * daemon) and the number now be another file of the program's, which a
 * fork child must neither close nor make an ioctl() on.
 */
static bool tofutex_fd_is_device(int fd)
{
	dev_t rdev = __atomic_load_n(&tofutex_fd_rdev, __ATOMIC_RELAXED);
	struct stat st;

	return rdev && !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       st.st_rdev == rdev;
}

/*
 * @fd (or an error) moved above standard error: a program started with
 * descriptor 0, 1 or 2 closed finds it closed, as without the library
 * (its first open() gets it; a daemon fills it with /dev/null).
 */
static int tofutex_fd_high(int fd)
{
	int high;

	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	high = (int)tofutex__sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC,
				 STDERR_FILENO + 1, 0, 0, 0);
	tofutex__sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return high;
}

/*
 * Opened with the system calls themselves (sys.h), which are no
 * cancellation points: the first use of the device comes inside calls that
 * must not be one (the first contended pthread_mutex_lock() of a process
 * under the preload) or before a condition wait has set up its cleanup.
 * @from, when not -1, is a descriptor of the device that another process
 * opened (the parent's, in a fork child): the kernel makes this process's
 * own from it (TOFUTEX_IOC_REOPEN), with no openat() that a confined
 * process may not make; a module without that operation refuses, and the
 * device is opened by name. @pid: the caller's process, 0 to ask.
 */
static int tofutex_fd_open(int *from, pid_t pid)
{
	uint64_t cache, expected = 0;
	int fd = -1, err;

	err = tofutex__fork_ready();
	if (err)
		return -err;

	if (from && *from >= 0)
		fd = (int)tofutex__sys(SYS_ioctl, *from, TOFUTEX_IOC_REOPEN,
				       O_CLOEXEC, 0, 0, 0);
	/*
	 * A child of a parent at its RLIMIT_NOFILE has no number for a
	 * second descriptor: the inherited one, which it closes anyway,
	 * makes room for the open by name.
	 */
	if (fd == -EMFILE) {
		tofutex__sys(SYS_close, *from, 0, 0, 0, 0, 0);
		*from = -1;
	}
	if (fd < 0)
		fd = (int)tofutex__sys(SYS_openat, AT_FDCWD,
				       (long)TOFUTEX_DEVICE_PATH,
				       O_RDWR | O_CLOEXEC, 0, 0, 0);
	fd = tofutex_fd_high(fd);
	if (fd < 0)
		return fd;
	if (!__atomic_load_n(&tofutex_fd_rdev, __ATOMIC_RELAXED)) {
		struct stat st;

		if (!fstat(fd, &st))
			__atomic_store_n(&tofutex_fd_rdev, st.st_rdev,
					 __ATOMIC_RELAXED);
	}

	if (!pid)
		pid = (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	cache = (uint64_t)(uint32_t)pid << 32 | (uint32_t)fd;
	if (!__atomic_compare_exchange_n(&tofutex_fd_cache, &expected, cache,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread published its descriptor first. */
		tofutex__sys(SYS_close, fd, 0, 0, 0, 0, 0);
		fd = tofutex_cache_fd(expected);
	}
	return fd;
}

int tofutex_fd(void)
{
	uint64_t cache = __atomic_load_n(&tofutex_fd_cache, __ATOMIC_ACQUIRE);

	if (__builtin_expect(cache != 0, 1))
		return tofutex_cache_fd(cache);
	return tofutex_fd_open(NULL, 0);
}

/*
 * Runs in the child of fork(), in its only thread, before fork() returns
 * (fork.c). The inherited copy of the parent's descriptor is closed (fork()
 * duplicated the table: the parent's stays open), if it still is one.
 * @own: the child is on the module and gets its own descriptor now, made
 * from the inherited one while it is still open. fstat(), ioctl(),
 * openat() and close() are async-signal-safe, as a child handler of a
 * multithreaded parent requires.
 */
void tofutex__fd_fork_child(bool own)
{
	uint64_t cache = __atomic_exchange_n(&tofutex_fd_cache, 0,
					     __ATOMIC_RELAXED);
	int inherited = cache ? tofutex_cache_fd(cache) : -1;

	if (inherited >= 0 && !tofutex_fd_is_device(inherited))
		inherited = -1;
	/*
	 * The child's only thread's TID is its pid: no getpid(), which a
	 * program may forbid before it forks.
	 */
	if (own)
		(void)tofutex_fd_open(&inherited,
				      (pid_t)tofutex__sys(SYS_gettid, 0, 0, 0,
							  0, 0, 0));
	if (inherited >= 0)
		tofutex__sys(SYS_close, inherited, 0, 0, 0, 0, 0);
}

/*
 * The kernel said EBADFD for @fd: is it a descriptor this process inherited
 * without the fork handler running? If so, drop it from the cache (without
 * closing it, see the top of the file) and tell the caller to try again.
 */
static bool tofutex_fd_forget_foreign(int fd)
{
	uint64_t cache = __atomic_load_n(&tofutex_fd_cache, __ATOMIC_ACQUIRE);

	if (!cache || tofutex_cache_fd(cache) != fd)
		return true;	/* another thread replaced it already */
	if (tofutex_cache_pid(cache) ==
	    (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0))
		return false;	/* our own descriptor: a genuine EBADFD */
	__atomic_compare_exchange_n(&tofutex_fd_cache, &cache, 0, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return true;
}

/*
 * The program closed the cached number behind the library (closefrom()
 * or close_range() in a daemon, EBADF) or reused it for a file of its own
 * (ENOTTY, or EINVAL, whatever that file answers): drop it from the cache, without
 * closing it (it is not ours any more), so that the caller opens the
 * device again. Not when another thread replaced it already.
 */
static bool tofutex_fd_lost(int fd)
{
	uint64_t cache = __atomic_load_n(&tofutex_fd_cache, __ATOMIC_ACQUIRE);

	if (!cache || tofutex_cache_fd(cache) != fd)
		return true;
	if (tofutex_fd_is_device(fd))
		return false;
	__atomic_compare_exchange_n(&tofutex_fd_cache, &cache, 0, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return true;
}

/* Is @err, from an ioctl() on @fd, one that another open would not give? */
static bool tofutex_fd_stale(int fd, int err)
{
	if (err == EBADFD)
		return tofutex_fd_forget_foreign(fd);
	return (err == EBADF || err == ENOTTY || err == EINVAL) &&
	       tofutex_fd_lost(fd);
}

int tofutex__ioctl(unsigned long request, void *arg, int *result)
{
	int saved_errno = errno;
	bool retried = false;
	int err;

	for (;;) {
		int fd = tofutex_fd();
		int ret;

		if (fd < 0) {
			err = -fd;
			break;
		}
		ret = (int)tofutex__sys(SYS_ioctl, fd, (long)request, (long)arg,
					0, 0, 0);
		if (ret >= 0) {
			if (result)
				*result = ret;
			err = 0;
			break;
		}
		err = -ret;
		if (retried || !tofutex_fd_stale(fd, err))
			break;
		retried = true;
	}
	errno = saved_errno;
	return err;
}
