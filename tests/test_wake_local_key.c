// SPDX-License-Identifier: GPL-2.0
/*
 * SWAP's CPU hand-off (module/wake_local.c) uses the scheduler's preempt
 * notifiers, a static key in every context switch of the system. Only the
 * administrator switches it on (loading the module, writing wake_local);
 * no SWAP may, since any user can call SWAP.
 *
 * - unprivileged_swap_leaves_key: a kprobe counts the calls of
 *   preempt_notifier_inc(); an unprivileged process's SWAPs, each waking a
 *   waiter and sleeping, must add none. Reloading the module, which does
 *   switch the key on, must add one: that shows the probe counts.
 *
 * Needs root, kprobe events in tracefs (CONFIG_KPROBE_EVENTS, which the
 * Debian kernels have) and TOFUTEX_KO (the harness sets it) for the
 * reload. Without them the test says it was skipped, in a line that the
 * guest harness reports.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME
#define SYSFS_MODULE	"/sys/module/tofutex"

#define PROBE_GROUP	"tofutex_key"
#define PROBE_NAME	"tofutex_notifier_inc"
#define PROBE_TARGET	"preempt_notifier_inc"

/* SWAPs of the unprivileged child: each wakes a waiter and sleeps. */
#define ROUNDS		50

static const char *const tracefs_dirs[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

static char tracefs[64];

/* Find tracefs, mounting it where the kernel provides its mount point. */
static bool tracefs_find(void)
{
	char path[128];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/kprobe_events",
			 tracefs_dirs[i]);
		if (access(path, W_OK) != 0 && i == 0)
			mount("tracefs", tracefs_dirs[0], "tracefs", 0, NULL);
		if (access(path, W_OK) == 0) {
			snprintf(tracefs, sizeof(tracefs), "%s",
				 tracefs_dirs[i]);
			return true;
		}
	}
	return false;
}

/* Write @s to tracefs file @name; 0 or the errno value. */
static int trace_write(const char *name, const char *s, bool append)
{
	char path[192];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", tracefs, name);
	fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		r = errno;
	close(fd);
	return r;
}

#define PROBE_ENABLE	"events/" PROBE_GROUP "/" PROBE_NAME "/enable"

static void probe_remove(void)
{
	if (!tracefs[0])
		return;
	trace_write(PROBE_ENABLE, "0", false);
	trace_write("kprobe_events", "-:" PROBE_GROUP "/" PROBE_NAME "\n",
		    true);
}

/* The probe's hit count from kprobe_profile; fails the test if absent. */
static unsigned long probe_hits(void)
{
	char path[192], line[256], name[128];
	unsigned long hits, missed;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kprobe_profile", tracefs);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%127s %lu %lu", name, &hits, &missed) == 3 &&
			strcmp(name, PROBE_NAME) == 0;
	fclose(f);
	ck_assert_msg(found, "no %s in %s", PROBE_NAME, path);
	return hits;
}

static int delete_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) == 0 ? 0 : errno;
}

static int load_module(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno;
	err = syscall(SYS_finit_module, fd, "", 0) == 0 ? 0 : errno;
	close(fd);
	return err;
}

/* Whatever happened, leave the module loaded and the probe gone. */
static void teardown(void)
{
	const char *ko = getenv("TOFUTEX_KO");

	probe_remove();
	if (ko && access(SYSFS_MODULE, F_OK) != 0)
		load_module(ko);
}

/* Does the module's wake_local_mechanism read @name? */
static bool mechanism_is(const char *name)
{
	char buf[32] = "";
	FILE *f = fopen(SYSFS_MODULE "/parameters/wake_local_mechanism", "r");

	ck_assert_msg(f, "wake_local_mechanism: %s", strerror(errno));
	ck_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return strcmp(buf, name) == 0;
}

/* ---- The unprivileged child ---- */

struct pong {
	int fd;
	uint32_t ping, pong;
	atomic_uint rounds;
};

static int raw_wait(int fd, uint32_t *w, uint32_t val)
{
	struct tofutex_wait a;

	memset(&a, 0, sizeof(a));
	a.uaddr = (uintptr_t)w;
	a.val = val;
	a.flags = TOFUTEX_WAIT_DEADLINE;
	a.deadline_ns = now_ns() + TEST_WAIT_NS;
	return ioctl(fd, TOFUTEX_IOC_WAIT, &a) ? errno : 0;
}

/* Waits on ping; each time it is woken, bumps pong and wakes its waiter. */
static void *pong_main(void *p)
{
	struct pong *g = p;
	uint32_t v = 0;
	unsigned int i;

	for (i = 0; i < ROUNDS; i++) {
		while (__atomic_load_n(&g->ping, __ATOMIC_ACQUIRE) == v)
			if (raw_wait(g->fd, &g->ping, v) == ETIMEDOUT)
				return NULL;
		v++;
		__atomic_add_fetch(&g->pong, 1, __ATOMIC_RELEASE);
		fd_wake(g->fd, &g->pong, 1);
		atomic_fetch_add(&g->rounds, 1);
	}
	return NULL;
}

/*
 * As nobody: ROUNDS SWAPs, each waking the other thread (asleep on ping)
 * and sleeping on pong until it answers. Exit status 0 or a step number.
 */
static int unprivileged_swaps(void)
{
	struct pong g = { 0 };
	struct tofutex_swap a;
	pthread_t t;
	unsigned int i;
	int r;

	if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
		return 10;
	g.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (g.fd < 0)
		return 11;
	if (pthread_create(&t, NULL, pong_main, &g))
		return 12;
	for (i = 0; i < ROUNDS; i++) {
		__atomic_add_fetch(&g.ping, 1, __ATOMIC_RELEASE);
		memset(&a, 0, sizeof(a));
		a.wait_uaddr = (uintptr_t)&g.pong;
		a.wake_uaddr = (uintptr_t)&g.ping;
		a.val = i;
		a.flags = TOFUTEX_WAIT_DEADLINE;
		a.deadline_ns = now_ns() + TEST_WAIT_NS;
		r = ioctl(g.fd, TOFUTEX_IOC_SWAP, &a) ? errno : 0;
		if (r && r != EAGAIN)
			return 13;
		while (__atomic_load_n(&g.pong, __ATOMIC_ACQUIRE) == i)
			if (raw_wait(g.fd, &g.pong, i) == ETIMEDOUT)
				return 14;
	}
	if (!join_within(t, NULL, TEST_WAIT_NS) ||
	    atomic_load(&g.rounds) != ROUNDS)
		return 15;
	return 0;
}

START_TEST(test_unprivileged_swap_leaves_key)
{
	const char *ko = getenv("TOFUTEX_KO");
	unsigned long before, after;
	int status, r;
	pid_t pid;

	if (!mechanism_is("deferred")) {
		printf("SKIPPED: test_unprivileged_swap_leaves_key: wake_local_mechanism is not \"deferred\", the only one that uses preempt notifiers: nothing to check\n");
		return;
	}
	if (!ko || geteuid() != 0 || !tracefs_find()) {
		printf("SKIPPED: test_unprivileged_swap_leaves_key needs root, TOFUTEX_KO and kprobe events in tracefs (CONFIG_KPROBE_EVENTS)%s: nothing checked that SWAP leaves the preempt notifier key alone\n",
		       ko ? "" : "; TOFUTEX_KO is not set");
		return;
	}
	probe_remove();
	r = trace_write("kprobe_events",
			"p:" PROBE_GROUP "/" PROBE_NAME " " PROBE_TARGET "\n",
			true);
	ck_assert_msg(r == 0, "adding a kprobe on %s: %s", PROBE_TARGET,
		      strerror(r));
	r = trace_write(PROBE_ENABLE, "1", false);
	ck_assert_msg(r == 0, "enabling the kprobe: %s", strerror(r));

	before = probe_hits();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(unprivileged_swaps());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "unprivileged child: status %#x (10 setuid, 11 open, 12 thread, 13 SWAP failed, 14/15 no answer)",
		      status);
	after = probe_hits();
	ck_assert_msg(after == before,
		      "%d unprivileged SWAPs called %s %lu times",
		      ROUNDS, PROBE_TARGET, after - before);

	/* The probe counts: a reload switches the key on, once. */
	ck_assert_int_eq(delete_module("tofutex"), 0);
	ck_assert_int_eq(load_module(ko), 0);
	after = probe_hits();
	ck_assert_msg(after == before + 1,
		      "reloading the module (wake_local on) called %s %lu times, want 1: the probe does not count",
		      PROBE_TARGET, after - before);
}
END_TEST

static Suite *wake_local_key_suite(void)
{
	Suite *s = suite_create("wake_local_key");
	TCase *tc = tcase_create("key");

	tcase_add_unchecked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_unprivileged_swap_leaves_key);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(wake_local_key_suite());
}
