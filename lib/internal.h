/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex internals shared by the library's source files; not installed.
 *
 * Everything here has hidden visibility: the shared library exports only
 * the tofutex_* functions of <tofutex.h> (see libtofutex.map), and in the
 * static library the tofutex__ prefix keeps these names out of the way.
 */
#ifndef TOFUTEX_INTERNAL_H
#define TOFUTEX_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <tofutex.h>

#define TOFUTEX_HIDDEN __attribute__((visibility("hidden")))

#define TOFUTEX_DEVICE_PATH "/dev/" TOFUTEX_DEVICE_NAME

/*
 * Per-thread state. The TID is read on every lock and unlock, so it lives
 * in the initial-exec TLS model: a direct %fs-relative access instead of a
 * __tls_get_addr() call per access in the shared library. The cost is a
 * few bytes of the static TLS surplus glibc reserves for exactly this kind
 * of library, should libtofutex.so be dlopen()ed.
 *
 * @tid:         the thread's TID as gettid() returns it, 0 until first use
 *               and again in the child of fork() (see device.c)
 * @last_status: TOFUTEX_STATUS_* of the thread's last lock that entered
 *               the kernel, for tofutex_mutex_last_status()
 */
struct tofutex__thread {
	pid_t tid;
	uint32_t last_status;
};

extern _Thread_local struct tofutex__thread tofutex__self
	__attribute__((tls_model("initial-exec"))) TOFUTEX_HIDDEN;

/* tid.c: fills tofutex__self.tid; 0 only when tofutex__fork_ready() failed. */
TOFUTEX_HIDDEN pid_t tofutex__tid_slow(void);
/* tid.c: forget the cached TID (the child of fork() has a new one). */
TOFUTEX_HIDDEN void tofutex__tid_forget(void);

/* The calling thread's TID, or 0 when the library cannot work (ENOMEM). */
static inline pid_t tofutex__tid(void)
{
	pid_t tid = tofutex__self.tid;

	if (__builtin_expect(tid == 0, 0))
		tid = tofutex__tid_slow();
	return tid;
}

/*
 * device.c: registers the fork handler once per process. 0, or ENOMEM when
 * pthread_atfork() failed; then the library refuses to cache anything,
 * since it could not forget it in a child.
 */
TOFUTEX_HIDDEN int tofutex__fork_ready(void);

/*
 * device.c: ioctl(2) on the process's descriptor, opening it on first use.
 * Returns 0 or a positive errno value, with the ioctl's non-negative
 * return value in *@result when @result is not NULL; errno is preserved.
 */
TOFUTEX_HIDDEN int tofutex__ioctl(unsigned long request, void *arg,
				  int *result);

/*
 * An absolute CLOCK_MONOTONIC timespec as the ABI's deadline in ns.
 * EINVAL unless 0 <= tv_nsec < 1e9, like the pthread timed functions. A
 * negative time is in the past: deadline 0. A time beyond what the kernel
 * can represent (KTIME_MAX, year 2262) is clamped to it: never.
 */
static inline int tofutex__deadline_ns(const struct timespec *ts,
				       uint64_t *ns)
{
	const uint64_t nsec_per_sec = 1000000000u;

	if (ts->tv_nsec < 0 || (uint64_t)ts->tv_nsec >= nsec_per_sec)
		return EINVAL;
	if (ts->tv_sec < 0)
		*ns = 0;
	else if ((uint64_t)ts->tv_sec >
		 ((uint64_t)INT64_MAX - (uint64_t)ts->tv_nsec) / nsec_per_sec)
		*ns = INT64_MAX;
	else
		*ns = (uint64_t)ts->tv_sec * nsec_per_sec +
		      (uint64_t)ts->tv_nsec;
	return 0;
}

#endif /* TOFUTEX_INTERNAL_H */
