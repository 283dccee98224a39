/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Module parameters for the tests that set them (as root): plain
 * parameters and the debug windows of module/debug.c, which the test
 * harness's module build has.
 *
 * A debug window, once opened for a process, makes that process's calls
 * busy-wait at one point of the kernel code until the word there changes
 * or the window's time is up (module/debug.c). A test that opens one
 * closes it again in an unchecked teardown (window_close()), which runs
 * even when the test failed.
 */
#ifndef TOFUTEX_TESTS_PARAMS_H
#define TOFUTEX_TESTS_PARAMS_H

#include "common.h"

#define PARAM_DIR	"/sys/module/tofutex/parameters/"

/* Debug windows, as numbered by debug_window_id (module/debug.c). */
#define WINDOW_UNLOCK_UNQUEUED	1
#define WINDOW_COMPETE		2
#define WINDOW_WAKE_BATCH	3
#define WINDOW_REQUEUE_STEP	4
#define WINDOW_REQUEUE_ARM	5
#define WINDOW_REQUEUE_RELEASE	6
#define WINDOW_REQUEUE_RESULT	7
#define WINDOW_SWAP_QUEUED	8
#define WINDOW_GIVEN	9
#define WINDOW_RW_WITHDRAW	10
#define WINDOW_OWNER_DEAD	11

/* Write a parameter: 0 or the errno value of the write. */
static inline int param_write(const char *name, unsigned long v)
{
	char path[128], buf[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%lu", v);
	if (write(fd, buf, (size_t)n) != n)
		r = errno;
	close(fd);
	return r;
}

/* Write a parameter as text: 0 or the errno value of the write. */
static inline int param_write_str(const char *name, const char *v)
{
	char path[128];
	int fd, r = 0;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	if (write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		r = errno;
	close(fd);
	return r;
}

static inline bool param_read(const char *name, unsigned long *v)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*v = strtoul(buf, NULL, 0);
	return true;
}

static inline void param_set(const char *name, unsigned long v)
{
	int r = param_write(name, v);

	ck_assert_msg(r == 0, "setting " PARAM_DIR "%s to %lu: %s", name, v,
		      strerror(r));
}

/* Widen window @id for process @tgid, up to @ns. */
static inline void window_open(pid_t tgid, unsigned int id, uint64_t ns)
{
	ck_assert_msg(access(PARAM_DIR "debug_window_id", W_OK) == 0,
		      "the module has no debug windows: build it with TOFUTEX_DEBUG=y (the test harness does)");
	param_set("debug_window_ns", ns);
	param_set("debug_window_id", id);
	param_set("debug_window_tgid", (unsigned long)tgid);
}

/* Close any debug window. */
static inline void window_close(void)
{
	param_write("debug_window_tgid", 0);
	param_write("debug_window_id", 0);
	param_write("debug_window_ns", 0);
}

#endif /* TOFUTEX_TESTS_PARAMS_H */
