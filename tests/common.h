/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the Check tests: time, scaling, bounded waits, a
 * failure record for worker threads, statistics. Header-only (static
 * inline) so that every tests/test_*.c builds into its own binary without
 * an extra object.
 *
 * Rules the tests follow: assert behaviour, never timing. Every wait is
 * bounded (generously: the guest is emulated and the debug kernel is ~15x
 * slower), and a test that would otherwise hang fails through a bounded
 * wait with a message or, at worst, through Check's per-test timeout.
 *
 * Worker threads must not call ck_assert*(): Check's assertions are not
 * thread-safe. They record the first failure with TFAIL()/TCHECK() and the
 * test's main thread reports it with tfail_assert() after joining them.
 */
#ifndef TOFUTEX_TESTS_COMMON_H
#define TOFUTEX_TESTS_COMMON_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tofutex.h>

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* Bound on waiting for something another thread does "soon". */
#define TEST_WAIT_NS	(20 * NSEC_PER_SEC)

/* Check's per-test timeouts (seconds); CK_TIMEOUT_MULTIPLIER scales them. */
#define TEST_TIMEOUT_SHORT	30
#define TEST_TIMEOUT_LONG	120

/*
 * TOFUTEX_TEST_SCALE (default 1) multiplies iteration counts; the debug
 * kernel run sets it below 1. Anything unparsable or not positive counts
 * as 1.
 */
static inline double test_scale(void)
{
	const char *s = getenv("TOFUTEX_TEST_SCALE");
	char *end;
	double v;

	if (!s || !*s)
		return 1.0;
	v = strtod(s, &end);
	if (*end || !(v > 0.0))
		return 1.0;
	return v;
}

/* @n scaled by TOFUTEX_TEST_SCALE, at least @min. */
static inline unsigned long scaled(unsigned long n, unsigned long min)
{
	double v = (double)n * test_scale();

	return v < (double)min ? min : (unsigned long)v;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline struct timespec ts_from_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	return ts;
}

static inline uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * NSEC_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* An absolute CLOCK_MONOTONIC time @rel_ns from now. */
static inline struct timespec ts_in(uint64_t rel_ns)
{
	return ts_from_ns(now_ns() + rel_ns);
}

static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = ts_from_ns(ns);

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline uint32_t test_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static inline uint32_t word_load(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/*
 * Poll @cond every 100 us until it holds or @timeout_ns passed; @ok is set
 * to whether it held. Polling sleeps, so the poller is off the CPU most of
 * the time (a lock owner that polls does not keep waiters spinning).
 */
#define WAIT_UNTIL(ok, cond, timeout_ns)				\
	do {								\
		uint64_t end_ = now_ns() + (timeout_ns);		\
		for (;;) {						\
			if (cond) {					\
				(ok) = true;				\
				break;					\
			}						\
			if (now_ns() > end_) {				\
				(ok) = false;				\
				break;					\
			}						\
			sleep_ns(100 * NSEC_PER_USEC);			\
		}							\
	} while (0)

/*
 * /proc/self/task/@tid/@file into @buf (@size bytes, NUL-terminated);
 * false when it cannot be read.
 */
static inline bool thread_proc_read(uint32_t tid, const char *file,
				    char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/%s", tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/*
 * The state letter of thread @tid of this process, '?' if unknown: a
 * thread that waits in the kernel for a lock or a condition is in state S
 * there; one that spins or yields is R.
 */
static inline char thread_state(uint32_t tid)
{
	char buf[512], *p;

	if (!thread_proc_read(tid, "stat", buf, sizeof(buf)))
		return '?';
	/* "tid (comm) S ...": comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * An absolute CLOCK_REALTIME time @rel_ns from now, for the interfaces
 * that take no other clock (pthread_timedjoin_np(), sem_timedwait()).
 */
static inline struct timespec realtime_in(uint64_t rel_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(rel_ns / NSEC_PER_SEC);
	ts.tv_nsec += (long)(rel_ns % NSEC_PER_SEC);
	if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= (long)NSEC_PER_SEC;
	}
	return ts;
}

/* Join @t within @timeout_ns; false if it is still running. */
static inline bool join_within(pthread_t t, void **ret, uint64_t timeout_ns)
{
	struct timespec ts = realtime_in(timeout_ns);

	return pthread_timedjoin_np(t, ret, &ts) == 0;
}

/* The first failure recorded by any thread of the test. */
struct tfail_record {
	pthread_mutex_t lock;
	bool failed;
	char msg[512];
};

static inline struct tfail_record *tfail_record(void)
{
	static struct tfail_record rec = { .lock = PTHREAD_MUTEX_INITIALIZER };

	return &rec;
}

__attribute__((format(printf, 3, 4)))
static inline void tfail_at(const char *file, int line, const char *fmt, ...)
{
	struct tfail_record *rec = tfail_record();
	va_list ap;
	int n;

	pthread_mutex_lock(&rec->lock);
	if (!rec->failed) {
		rec->failed = true;
		n = snprintf(rec->msg, sizeof(rec->msg), "%s:%d: ", file, line);
		va_start(ap, fmt);
		vsnprintf(rec->msg + n, sizeof(rec->msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&rec->lock);
}

#define TFAIL(...) tfail_at(__FILE__, __LINE__, __VA_ARGS__)
#define TCHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			TFAIL(__VA_ARGS__);				\
	} while (0)

static inline bool tfailed(void)
{
	struct tfail_record *rec = tfail_record();
	bool failed;

	pthread_mutex_lock(&rec->lock);
	failed = rec->failed;
	pthread_mutex_unlock(&rec->lock);
	return failed;
}

/* Checked fixture: a fresh record per test (matters with CK_FORK=no). */
static inline void tfail_reset(void)
{
	struct tfail_record *rec = tfail_record();

	pthread_mutex_lock(&rec->lock);
	rec->failed = false;
	rec->msg[0] = '\0';
	pthread_mutex_unlock(&rec->lock);
}

/* Call from the test's main thread after joining the workers. */
static inline void tfail_assert(void)
{
	struct tfail_record *rec = tfail_record();

	pthread_mutex_lock(&rec->lock);
	if (rec->failed) {
		pthread_mutex_unlock(&rec->lock);
		ck_abort_msg("%s", rec->msg);
	}
	pthread_mutex_unlock(&rec->lock);
}

/* A page holding @value, then made read-only. */
static inline uint32_t *ro_word(uint32_t value)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t *p;

	p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(p != MAP_FAILED);
	*p = value;
	ck_assert_int_eq(mprotect(p, (size_t)page, PROT_READ), 0);
	return p;
}

/* The address of a page that was mapped and is not any more. */
static inline uint64_t unmapped_addr(void)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(p != MAP_FAILED);
	ck_assert_int_eq(munmap(p, (size_t)page), 0);
	return (uintptr_t)p;
}

/* SIGUSR1 deliveries since install_sigusr1(). */
static atomic_int sig_count;

static inline void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&sig_count, 1);
}

/* Count SIGUSR1 in sig_count; @restart: SA_RESTART. */
static inline void install_sigusr1(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = restart ? SA_RESTART : 0;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&sig_count, 0);
}

/*
 * Whether a thread sleeps inside a given ioctl is read from
 * /proc/self/task/<tid>/syscall: the kernel fills it in only for a task
 * that is not running, so "ioctl <cmd>" there means "asleep in that call".
 */
/* Is thread @tid of this process asleep inside ioctl(@cmd)? */
static inline bool asleep_in_ioctl(uint32_t tid, unsigned long cmd)
{
	char path[64], buf[256];
	unsigned long arg0, arg1;
	long nr;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%ld 0x%lx 0x%lx", &nr, &arg0, &arg1) != 3)
		return false;	/* "running" */
	return nr == SYS_ioctl && arg1 == cmd;
}

static inline void wait_asleep_in(uint32_t tid, unsigned long cmd, const char *what)
{
	bool ok;

	WAIT_UNTIL(ok, asleep_in_ioctl(tid, cmd), TEST_WAIT_NS);
	ck_assert_msg(ok, "thread %u never went to sleep in %s", tid, what);
}

/* Any ioctl's argument: for the tests that call every ioctl alike. */
union any_arg {
	struct tofutex_version ver;
	struct tofutex_lock lock;
	struct tofutex_unlock unlock;
	struct tofutex_wait wait;
	struct tofutex_wake wake;
	struct tofutex_swap swap;
	struct tofutex_stats stats;
	struct tofutex_requeue requeue;
};

/* TOFUTEX_IOC_WAKE on descriptor @fd: the number woken, or -errno. */
static inline long fd_wake(int fd, uint32_t *w, uint32_t count)
{
	struct tofutex_wake a;
	long r;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.count = count;
	r = ioctl(fd, TOFUTEX_IOC_WAKE, &a);
	return r < 0 ? -errno : r;
}

/* Statistics through the library; fails the test if they cannot be read. */
static inline struct tofutex_stats stats_get(uint32_t scope)
{
	struct tofutex_stats st;
	int r;

	memset(&st, 0, sizeof(st));
	r = tofutex_stats(scope, &st);
	ck_assert_msg(r == 0, "tofutex_stats(%u) = %d (%s)", scope, r,
		      strerror(r));
	return st;
}

/*
 * A unit of work that the compiler cannot drop and that widens the window
 * in which a broken lock lets two threads into a critical section.
 */
static inline void busy_work(unsigned int n)
{
	volatile unsigned int sink = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sink += i;
}

/*
 * The backend the library must have chosen (tofutex(3)): the one
 * TOFUTEX_BACKEND forces, else the module when /dev/tofutex exists (the
 * guests run the library suites both ways and again with the module
 * unloaded; natively they run with TOFUTEX_BACKEND=futex).
 */
static inline int expected_backend(void)
{
	const char *env = getenv("TOFUTEX_BACKEND");

	if (env && !strcmp(env, "futex"))
		return TOFUTEX_BACKEND_FUTEX;
	if (env && !strcmp(env, "module"))
		return TOFUTEX_BACKEND_MODULE;
	return access("/dev/" TOFUTEX_DEVICE_NAME, F_OK) ?
	       TOFUTEX_BACKEND_FUTEX : TOFUTEX_BACKEND_MODULE;
}

/*
 * May the test step CLOCK_REALTIME? Only as root, and only where nothing
 * else depends on the clock: the guests set TOFUTEX_TEST_SETTIME=1; on a
 * shared build host a jump of the wall clock would disturb make and other
 * users, so the native run leaves it unset unless asked.
 */
static inline bool settime_allowed(void)
{
	const char *env = getenv("TOFUTEX_TEST_SETTIME");

	return geteuid() == 0 && env && !strcmp(env, "1");
}

/* Step CLOCK_REALTIME by @delta_s seconds (either sign). */
static inline void realtime_step(long delta_s)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
	ts.tv_sec += delta_s;
	ck_assert_int_eq(clock_settime(CLOCK_REALTIME, &ts), 0);
}

/*
 * Run @argv (a path and its arguments) with @env's changes to the
 * environment ("NAME=value" set, "NAME" removed; NULL-terminated, or NULL
 * for none), its standard output, and its standard error too if @errs,
 * into @out (at most @len - 1 bytes, NUL-terminated); its wait status.
 */
static inline int run_capture(char *const argv[], char *const env[], bool errs,
			      char *out, size_t len)
{
	size_t got = 0;
	int po[2], status, i;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		if (errs)
			dup2(po[1], 2);
		for (i = 0; env && env[i]; i++) {
			if (strchr(env[i], '='))
				putenv(env[i]);
			else
				unsetenv(env[i]);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	while (got < len - 1 && (n = read(po[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(po[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* main() of every test binary: run @s with Check's CK_* environment. */
static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Run @fn(@arg) in a child of fork() (20 s at most) and return its exit
 * status, or -1 when it was killed by SIGBUS on arm64: calls on an object
 * not aligned for its word, where glibc's atomics fault on a CPU that
 * faults them (the hardware does, QEMU's TCG does not), as glibc's do.
 */
static inline int misaligned_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(20);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
#if defined(__aarch64__)
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS)
		return -1;
#endif
	ck_assert_msg(WIFEXITED(status), "child status %#x", status);
	return WEXITSTATUS(status);
}

#endif /* TOFUTEX_TESTS_COMMON_H */
