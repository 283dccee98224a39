// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread, the contention report (TOFUTEX_PROFILE, tofutex-run
 * --profile): this program starts itself again (--work) under tofutex-run
 * with the report on, and that child contends a known hot mutex
 * HOT_ROUNDS times, each time holding it HOT_HOLD_NS past the moment its
 * waiter sleeps, a cold mutex once, a reader/writer lock once (a reader
 * behind the writer) and waits on a condition variable; then locks the
 * hot mutex HOT_EXTRA times uncontended. Every contention is made, not
 * hoped for: the holder keeps the lock until the other thread sleeps in
 * its lock call. The report must list the hot mutex first (the hold is
 * the margin: HOT_ROUNDS * HOT_HOLD_NS of wait against the cold one's
 * few polls), with exact counts of locks, contentions and owner changes,
 * say where it was first contended (this program's function), and be one
 * JSON object (python3 -m json.tool, where python3 is installed); the
 * table form (tofutex-run --profile=FILE) names the same lock first.
 */
#include <libgen.h>
#include <sys/wait.h>

#include "../common.h"
#include "sleeping.h"

#define WORK_ARG	"--work"
#define HOT_ROUNDS	3
#define HOT_HOLD_NS	(300 * NSEC_PER_MSEC)
#define HOT_EXTRA	1000

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static bool cv_done;

struct locker {
	void *lock;
	uint32_t tid;
};

/*
 * A thread that takes and releases a mutex (the contended side); not
 * static, so that dladdr() finds its name (-rdynamic) for the report.
 */
__attribute__((noinline)) void *hot_locker(void *arg);
__attribute__((noinline)) void *hot_locker(void *arg)
{
	struct locker *l = arg;

	__atomic_store_n(&l->tid, (uint32_t)gettid(), __ATOMIC_RELEASE);
	pthread_mutex_lock(l->lock);
	pthread_mutex_unlock(l->lock);
	return NULL;
}

static void *reader(void *arg)
{
	struct locker *l = arg;

	__atomic_store_n(&l->tid, (uint32_t)gettid(), __ATOMIC_RELEASE);
	pthread_rwlock_rdlock(l->lock);
	pthread_rwlock_unlock(l->lock);
	return NULL;
}

/*
 * @lock is held: start a thread running @fn on it, wait until it sleeps
 * there, hold on @hold_ns more, then @release it.
 */
static void contend(void *lock, void *(*fn)(void *), uint64_t hold_ns,
		    void (*release)(void *))
{
	struct locker l = { .lock = lock };
	pthread_t t;

	if (pthread_create(&t, NULL, fn, &l) || !thread_asleep_within(&l.tid))
		_exit(3);
	if (hold_ns)
		sleep_ns(hold_ns);
	release(lock);
	pthread_join(t, NULL);
}

static void mutex_release(void *m)
{
	pthread_mutex_unlock(m);
}

static void rw_release(void *l)
{
	pthread_rwlock_unlock(l);
}

static void *signaller(void *arg)
{
	pthread_mutex_lock(&cv_mutex);
	cv_done = true;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&cv_mutex);
	return arg;
}

/* The child's work: the known contention (see the top). */
static int work(void)
{
	pthread_t t;
	int i;

	for (i = 0; i < HOT_ROUNDS; i++) {
		pthread_mutex_lock(&hot);
		contend(&hot, hot_locker, HOT_HOLD_NS, mutex_release);
	}
	pthread_mutex_lock(&cold);
	contend(&cold, hot_locker, 0, mutex_release);
	pthread_rwlock_wrlock(&rw);
	contend(&rw, reader, 0, rw_release);
	pthread_mutex_lock(&cv_mutex);
	if (pthread_create(&t, NULL, signaller, NULL))
		return 3;
	while (!cv_done)
		pthread_cond_wait(&cv, &cv_mutex);
	pthread_mutex_unlock(&cv_mutex);
	pthread_join(t, NULL);
	for (i = 0; i < HOT_EXTRA; i++) {
		pthread_mutex_lock(&hot);
		pthread_mutex_unlock(&hot);
	}
	printf("hot=%p cold=%p rw=%p cv=%p\n", (void *)&hot, (void *)&cold,
	       (void *)&rw, (void *)&cv);
	return 0;
}

/*
 * Run this program (--work) under tofutex-run with TOFUTEX_PROFILE=@value,
 * or with tofutex-run's option @opt (@value NULL).
 */
static void run_work(const char *opt, const char *value, char *out, size_t len)
{
	const char *env = getenv("LD_PRELOAD");
	char self[PATH_MAX], run[PATH_MAX], dir[PATH_MAX];
	int po[2], status;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	ck_assert_msg(env && *env, "run under tofutex-run");
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(env, ": "), env);
	snprintf(run, sizeof(run), "%s/../bin/tofutex-run", dirname(dir));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	ck_assert_int_eq(pipe(po), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		unsetenv("LD_PRELOAD");
		unsetenv("TOFUTEX_PROFILE");
		if (value) {
			setenv("TOFUTEX_PROFILE", value, 1);
			execl(run, run, self, WORK_ARG, (char *)NULL);
		} else {
			execl(run, run, opt, self, WORK_ARG, (char *)NULL);
		}
		_exit(126);
	}
	close(po[1]);
	while (got < len - 1 && (n = read(po[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(po[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "child status %#x", status);
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The JSON object of the lock at address @addr, from its '{' on. */
static const char *lock_json(const char *json, const char *addr)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"address\": \"%s\"", addr);
	p = strstr(json, key);
	ck_assert_msg(p, "no lock %s in %s", addr, json);
	while (p > json && *p != '{')
		p--;
	return p;
}

/* The number after "@field": in the object at @obj. */
static unsigned long long field(const char *obj, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\": ", name);
	p = strstr(obj, key);
	ck_assert_msg(p && p < strchr(obj, '}'), "no %s in %.300s", name, obj);
	return strtoull(p + strlen(key), NULL, 10);
}

struct addrs {
	char hot[32], cold[32], rw[32], cv[32];
};

static void parse_addrs(const char *out, struct addrs *a)
{
	ck_assert_int_eq(sscanf(out, "hot=%31s cold=%31s rw=%31s cv=%31s",
				a->hot, a->cold, a->rw, a->cv), 4);
}

static void tmp_path(char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/tofutex-profile-%d%s",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(),
		 suffix);
	unlink(buf);
}

START_TEST(test_profile_json_hot_lock_first_exact_counts)
{
	char path[PATH_MAX], out[256], cmd[PATH_MAX + 64];
	static char json[65536];
	const char *h, *c, *first;
	struct addrs a;

	tmp_path(path, sizeof(path), ".json");
	run_work(NULL, path, out, sizeof(out));
	parse_addrs(out, &a);
	read_file(path, json, sizeof(json));
	ck_assert_msg(strchr(json, '\n') == json + strlen(json) - 1,
		      "one line: %s", json);
	first = strstr(json, "\"rank\": 1,");
	h = lock_json(json, a.hot);
	ck_assert_msg(first && h < first && strchr(h, '}') > first,
		      "hot lock %s not first: %s", a.hot, json);
	/* Its holder's lock at the first contention, then two per round. */
	ck_assert_uint_eq(field(h, "locked"), 2 * HOT_ROUNDS + HOT_EXTRA);
	ck_assert_uint_eq(field(h, "contended"), HOT_ROUNDS);
	/* Each waiter took it from the main thread, and gave it back. */
	ck_assert_uint_eq(field(h, "owner_changes"), 2 * HOT_ROUNDS - 1);
	ck_assert_uint_ge(field(h, "wait_ns"), HOT_ROUNDS * HOT_HOLD_NS);
	ck_assert_msg(strstr(h, "test_pthread_profile:hot_locker+"),
		      "first contended where? %.600s", h);
	c = lock_json(json, a.cold);
	ck_assert_uint_eq(field(c, "locked"), 2);
	ck_assert_uint_eq(field(c, "contended"), 1);
	ck_assert_uint_eq(field(lock_json(json, a.rw), "contended"), 1);
	ck_assert_uint_ge(field(lock_json(json, a.cv), "contended"), 1);
	ck_assert_msg(strstr(lock_json(json, a.cv), "\"kind\": \"cond\""),
		      "%s", json);
	if (access("/usr/bin/python3", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd),
			 "python3 -m json.tool '%s' >/dev/null", path);
		ck_assert_int_eq(system(cmd), 0);
	}
	unlink(path);
}
END_TEST

START_TEST(test_profile_table_hot_lock_first)
{
	char path[PATH_MAX], opt[PATH_MAX + 16], out[256], row[64];
	static char table[65536];
	const char *line;
	struct addrs a;

	tmp_path(path, sizeof(path), ".txt");
	snprintf(opt, sizeof(opt), "--profile=%s", path);
	run_work(opt, NULL, out, sizeof(out));
	parse_addrs(out, &a);
	read_file(path, table, sizeof(table));
	ck_assert_msg(strstr(table, "tofutex-run: profile of test_pthread_pro"),
		      "%s", table);
	line = strstr(table, "\n  1 ");
	snprintf(row, sizeof(row), " %s ", a.hot);
	ck_assert_msg(line && strstr(line, row) &&
		      strstr(line, row) < strchr(line + 1, '\n'),
		      "hot lock %s not first: %s", a.hot, table);
	unlink(path);
}
END_TEST

static Suite *pthread_profile_suite(void)
{
	Suite *s = suite_create("libtofutex-pthread contention report");
	TCase *tc;

	tc = tcase_create("profile");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_profile_json_hot_lock_first_exact_counts);
	tcase_add_test(tc, test_profile_table_hot_lock_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strcmp(argv[1], WORK_ARG))
		return work();
	sr = srunner_create(pthread_profile_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
