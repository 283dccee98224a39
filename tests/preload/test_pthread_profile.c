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
 * The same report comes from a process that ends with _exit() (its
 * frames then without function names), from a fork() child that does,
 * and exactly once from a process whose vfork() child calls _exit();
 * so does TOFUTEX_RUN_STATS's line, which names the backend the report
 * was made on (the one TOFUTEX_BACKEND forces: the guests run this
 * program on the module and on futex(2)). A condition variable made in
 * a destroyed mutex's memory gets a record of its own, a program
 * name that is not UTF-8 is escaped in the JSON, and a reader that waits
 * behind a waiting writer counts as contended.
 */
#include <execinfo.h>
#include <libgen.h>

#include "../common.h"
#include "sleeping.h"

/* How the child ends after its work: returns from main(), or ... */
#define WORK_ARG	"--work"
#define WORK_EXIT_ARG	"--work-_exit"	/* calls _exit() */
#define WORK_FORK_ARG	"--work-fork"	/* works in a fork() child, _exit() */
#define WORK_VFORK_ARG	"--work-vfork"	/* a vfork() child calls _exit() */
#define WORK_UNWIND_ARG	"--work-unwind"	/* threads contend in the unwinder */
/* closes fds 3-1023, writes DATA_LINE to TOFUTEX_TEST_DATA, returns */
#define WORK_CLOSE_ARG	"--work-closefds"
/* a mutex contended and destroyed, a cond made in its memory waited on */
#define WORK_REUSE_ARG	"--work-reuse"
/* a reader waits behind a waiting writer (writer preference) */
#define WORK_WRITER_PREF_ARG	"--work-writer-pref"
/* a condition wait ended by cancellation */
#define WORK_COND_CANCEL_ARG	"--work-cond-cancel"
#define DATA_LINE	"DATA\n"
#define UNWIND_ROUNDS	50000
#define HOT_ROUNDS	3
#define HOT_HOLD_NS	(300 * NSEC_PER_MSEC)
#define HOT_EXTRA	1000
#define REUSE_WAIT_NS	(100 * NSEC_PER_MSEC)

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
	const struct timespec bad = { .tv_nsec = -1 };
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
	/* Refused without a wait: no contention. */
	pthread_rwlock_wrlock(&rw);
	if (pthread_rwlock_wrlock(&rw) != EDEADLK ||
	    pthread_rwlock_timedwrlock(&rw, &bad) == 0 ||
	    pthread_rwlock_unlock(&rw))
		return 3;
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
	printf("pid=%d hot=%p cold=%p rw=%p cv=%p\n", (int)getpid(),
	       (void *)&hot, (void *)&cold, (void *)&rw, (void *)&cv);
	return 0;
}

/*
 * Registered unwind information (as a JIT registers its code's) makes
 * libgcc's unwinder lock a pthread mutex of its own, object_mutex, on
 * each backtrace(): two threads unwinding contend on it, and the report
 * must not unwind while it holds it. One CIE and the terminator.
 */
extern void __register_frame_info(const void *begin, void *ob);
static const uint32_t unwind_eh[] __attribute__((aligned(8))) = {
	12, 0, 0x7801, 0x10, 0, 0
};
static char unwind_object[256] __attribute__((aligned(16)));

static void *unwinder(void *arg)
{
	void *frames[16];
	int i;

	for (i = 0; i < UNWIND_ROUNDS; i++)
		backtrace(frames, 16);
	return arg;
}

static int work_unwind(void)
{
	pthread_t t[2];
	int i;

	/* A hang is a failure, not a stuck test. */
	alarm(60);
	__register_frame_info(unwind_eh, unwind_object);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, unwinder, NULL))
			return 3;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("unwound\n");
	return 0;
}

/*
 * WORK_REUSE_ARG: a mutex contended once and destroyed, then a condition
 * variable made in its memory and waited on (timed out) once.
 */
static int work_reuse(void)
{
	union {
		pthread_mutex_t m;
		pthread_cond_t c;
	} *o = malloc(sizeof(*o));
	struct timespec ts;

	if (!o || pthread_mutex_init(&o->m, NULL))
		return 3;
	pthread_mutex_lock(&o->m);
	contend(&o->m, hot_locker, 0, mutex_release);
	pthread_mutex_destroy(&o->m);
	pthread_cond_init(&o->c, NULL);
	pthread_mutex_lock(&cv_mutex);
	/*
	 * Half as long again as the test asks of the report: the report
	 * times the wait from inside it, some time after this deadline
	 * was set (a loaded PREEMPT_RT guest took 0.6 ms).
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts = ts_from_ns(ts_ns(&ts) + REUSE_WAIT_NS + REUSE_WAIT_NS / 2);
	if (pthread_cond_timedwait(&o->c, &cv_mutex, &ts) != ETIMEDOUT)
		return 3;
	pthread_mutex_unlock(&cv_mutex);
	printf("obj=%p\n", (void *)o);
	return 0;
}

static pthread_cond_t cancel_cv = PTHREAD_COND_INITIALIZER;
static uint32_t cancel_tid;

static void cancel_unlock(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *cancelled_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cv_mutex);
	pthread_cleanup_push(cancel_unlock, &cv_mutex);
	__atomic_store_n(&cancel_tid, test_gettid(), __ATOMIC_RELEASE);
	for (;;)
		pthread_cond_wait(&cancel_cv, &cv_mutex);
	pthread_cleanup_pop(1);
	return NULL;
}

/* A thread cancelled in its condition wait after REUSE_WAIT_NS and more. */
static int work_cond_cancel(void)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, cancelled_waiter, NULL) ||
	    !thread_asleep_within(&cancel_tid))
		return 3;
	sleep_ns(REUSE_WAIT_NS + REUSE_WAIT_NS / 2);
	if (pthread_cancel(t) || pthread_join(t, &ret) ||
	    ret != PTHREAD_CANCELED)
		return 3;
	printf("cv=%p\n", (void *)&cancel_cv);
	return 0;
}

static void *writer(void *arg)
{
	struct locker *l = arg;

	__atomic_store_n(&l->tid, (uint32_t)gettid(), __ATOMIC_RELEASE);
	pthread_rwlock_wrlock(l->lock);
	pthread_rwlock_unlock(l->lock);
	return NULL;
}

/*
 * WORK_WRITER_PREF_ARG: a PREFER_WRITER_NONRECURSIVE lock read-locked; a
 * writer waits, then a reader waits behind it (the writer's preference
 * keeps it out of the readers' lock); the read lock is released.
 */
static int work_writer_pref(void)
{
	struct locker w = { 0 }, r = { 0 };
	pthread_rwlock_t *l = malloc(sizeof(*l));
	pthread_rwlockattr_t a;
	pthread_t tw, tr;

	if (!l || pthread_rwlockattr_init(&a) ||
	    pthread_rwlockattr_setkind_np(&a,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) ||
	    pthread_rwlock_init(l, &a) || pthread_rwlock_rdlock(l))
		return 3;
	w.lock = r.lock = l;
	if (pthread_create(&tw, NULL, writer, &w) || !thread_asleep_within(&w.tid))
		return 3;
	if (pthread_create(&tr, NULL, reader, &r) || !thread_asleep_within(&r.tid))
		return 3;
	pthread_rwlock_unlock(l);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	printf("rw=%p\n", (void *)l);
	return 0;
}

/* work(), ended as @how says (the WORK_*_ARG above). */
static int work_then(const char *how)
{
	int status, fd;
	pid_t pid;

	if (!strcmp(how, WORK_ARG))
		return work();
	if (!strcmp(how, WORK_UNWIND_ARG))
		return work_unwind();
	if (!strcmp(how, WORK_REUSE_ARG))
		return work_reuse();
	if (!strcmp(how, WORK_WRITER_PREF_ARG))
		return work_writer_pref();
	if (!strcmp(how, WORK_COND_CANCEL_ARG))
		return work_cond_cancel();
	if (!strcmp(how, WORK_CLOSE_ARG)) {
		status = work();
		for (fd = 3; fd < 1024; fd++)
			close(fd);
		fd = open(getenv("TOFUTEX_TEST_DATA"), O_WRONLY | O_CREAT | O_TRUNC,
			  0644);
		if (fd < 0 || write(fd, DATA_LINE, strlen(DATA_LINE)) < 0)
			return 3;
		return status;
	}
	if (!strcmp(how, WORK_EXIT_ARG)) {
		status = work();
		fflush(stdout);
		_exit(status);
	}
	if (!strcmp(how, WORK_FORK_ARG)) {
		pid = fork();
		if (pid == 0) {
			status = work();
			fflush(stdout);
			_exit(status);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 3;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
	}
	if (!strcmp(how, WORK_VFORK_ARG)) {
		status = work();
		fflush(stdout);
		pid = vfork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 3;
		return status;
	}
	return 2;
}

/*
 * Run this program (as @exe, a link to it, or NULL) (@how: WORK_ARG, ...)
 * under tofutex-run with TOFUTEX_PROFILE=@value, or with tofutex-run's
 * option @opt (@value NULL), and TOFUTEX_RUN_STATS=@stats unless NULL.
 */
static void run_work_as(const char *exe, const char *how, const char *opt,
			const char *value, const char *stats, char *out,
			size_t len)
{
	const char *env = getenv("LD_PRELOAD");
	char self[PATH_MAX], run[PATH_MAX], dir[PATH_MAX];
	char prof_env[PATH_MAX + 32], stats_env[PATH_MAX + 32];
	char *changes[6] = { "LD_PRELOAD", "TOFUTEX_PROFILE", "TOFUTEX_RUN_STATS" };
	char *args[5] = { run };
	int status, c = 3, i = 1;
	ssize_t n;

	ck_assert_msg(env && *env, "run under tofutex-run");
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(env, ": "), env);
	snprintf(run, sizeof(run), "%s/../bin/tofutex-run", dirname(dir));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	if (exe)
		snprintf(self, sizeof(self), "%s", exe);
	if (stats) {
		snprintf(stats_env, sizeof(stats_env), "TOFUTEX_RUN_STATS=%s", stats);
		changes[c++] = stats_env;
	}
	if (value) {
		snprintf(prof_env, sizeof(prof_env), "TOFUTEX_PROFILE=%s", value);
		changes[c++] = prof_env;
	} else {
		args[i++] = (char *)opt;
	}
	args[i++] = self;
	args[i++] = (char *)how;
	status = run_capture(args, changes, false, out, len);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "child status %#x", status);
}

static void run_work(const char *how, const char *opt, const char *value,
		     const char *stats, char *out, size_t len)
{
	run_work_as(NULL, how, opt, value, stats, out, len);
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
	int pid;
	char hot[32], cold[32], rw[32], cv[32];
};

static void parse_addrs(const char *out, struct addrs *a)
{
	ck_assert_int_eq(sscanf(out, "pid=%d hot=%31s cold=%31s rw=%31s cv=%31s",
				&a->pid, a->hot, a->cold, a->rw, a->cv), 5);
}

static void tmp_path(char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/tofutex-profile-%d%s",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(),
		 suffix);
	unlink(buf);
}

/*
 * TOFUTEX_RUN_STATS's file @path: one line, from process @pid, on the
 * backend TOFUTEX_BACKEND forces (module, futex) if it forces one.
 */
static void check_stats_line(const char *path, int pid)
{
	const char *backend = getenv("TOFUTEX_BACKEND");
	char line[1024], want[64];

	read_file(path, line, sizeof(line));
	unlink(path);
	snprintf(want, sizeof(want), "[%d] backend=", pid);
	ck_assert_msg(strstr(line, want) &&
		      strchr(line, '\n') == line + strlen(line) - 1,
		      "one statistics line from %d: %s", pid, line);
	if (!backend || (strcmp(backend, "module") && strcmp(backend, "futex")))
		return;
	snprintf(want, sizeof(want), "backend=%s ", backend);
	ck_assert_msg(strstr(line, want), "not on %s: %s", backend, line);
}

/*
 * Run the work ended as @how with the JSON report and the statistics
 * on: one report and one statistics line, from the process that did the
 * work, the hot lock first with exact counts, first contended at @where
 * (a frame of this program's hot_locker()).
 */
static void check_json_report(const char *how, const char *where)
{
	char path[PATH_MAX], stats[PATH_MAX], out[256], cmd[PATH_MAX + 64];
	static char json[65536];
	const char *h, *c, *first;
	struct addrs a;
	char pid[32];

	tmp_path(path, sizeof(path), ".json");
	tmp_path(stats, sizeof(stats), ".stats");
	run_work(how, NULL, path, stats, out, sizeof(out));
	parse_addrs(out, &a);
	check_stats_line(stats, a.pid);
	read_file(path, json, sizeof(json));
	ck_assert_msg(*json && strchr(json, '\n') == json + strlen(json) - 1,
		      "one report, on one line: %s", json);
	snprintf(pid, sizeof(pid), "\"pid\": %d,", a.pid);
	ck_assert_msg(strstr(json, pid), "not the report of %d: %s", a.pid,
		      json);
	first = strstr(json, "\"rank\": 1,");
	h = lock_json(json, a.hot);
	ck_assert_msg(first && h < first && strchr(h, '}') > first,
		      "hot lock %s not first: %s", a.hot, json);
	/* Its holder's lock at the first contention, then two per round. */
	ck_assert_uint_eq(field(h, "locked"), 2 * HOT_ROUNDS + HOT_EXTRA);
	ck_assert_uint_eq(field(h, "contended"), HOT_ROUNDS);
	/* Each waiter took it from the main thread, and gave it back. */
	ck_assert_uint_eq(field(h, "owner_changes"), 2 * HOT_ROUNDS);
	ck_assert_uint_ge(field(h, "wait_ns"), HOT_ROUNDS * HOT_HOLD_NS);
	ck_assert_msg(strstr(h, where), "first contended where? %.600s", h);
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

START_TEST(test_profile_json_hot_lock_first_exact_counts)
{
	check_json_report(WORK_ARG, "\"test_pthread_profile:hot_locker+");
}
END_TEST

/* Without dladdr() there: the binary and the address in it. */
START_TEST(test_profile_after__exit)
{
	check_json_report(WORK_EXIT_ARG, "[\"test_pthread_profile+0x");
}
END_TEST

START_TEST(test_profile_fork_child_after__exit)
{
	check_json_report(WORK_FORK_ARG, "[\"test_pthread_profile+0x");
}
END_TEST

/* The vfork() child has the parent's tables: it must not report them. */
START_TEST(test_profile_once_with_vfork_child__exit)
{
	check_json_report(WORK_VFORK_ARG, "\"test_pthread_profile:hot_locker+");
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
	run_work(WORK_ARG, opt, NULL, NULL, out, sizeof(out));
	parse_addrs(out, &a);
	read_file(path, table, sizeof(table));
	/* In the log, as a user would see it. */
	printf("%s", table);
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

/*
 * TOFUTEX_PROFILE_TOP that is not a number ("1x"): not read as far as it
 * goes (1), the default kept: every lock of the work is listed.
 */
START_TEST(test_profile_top_not_a_number)
{
	char path[PATH_MAX], opt[PATH_MAX + 16], out[256];
	static char table[65536];

	tmp_path(path, sizeof(path), ".txt");
	snprintf(opt, sizeof(opt), "--profile=%s", path);
	setenv("TOFUTEX_PROFILE_TOP", "1x", 1);
	run_work(WORK_ARG, opt, NULL, NULL, out, sizeof(out));
	unsetenv("TOFUTEX_PROFILE_TOP");
	read_file(path, table, sizeof(table));
	unlink(path);
	ck_assert_msg(strstr(table, "\n  1 ") && strstr(table, "\n  2 "),
		      "TOFUTEX_PROFILE_TOP=1x listed one lock: %s", table);
}
END_TEST

/*
 * A program that closes its descriptors and opens a file of its own
 * under the report's number: the file gets only its data, the report
 * and the statistics still go to theirs.
 */
START_TEST(test_profile_not_into_reused_fd)
{
	char data[PATH_MAX], buf[64];

	tmp_path(data, sizeof(data), ".data");
	setenv("TOFUTEX_TEST_DATA", data, 1);
	check_json_report(WORK_CLOSE_ARG, "\"test_pthread_profile:hot_locker+");
	read_file(data, buf, sizeof(buf));
	unlink(data);
	ck_assert_str_eq(buf, DATA_LINE);
}
END_TEST

/*
 * The unwinder's own mutex contended: the program ends, reported. The two
 * unwinding threads overlap only when both run at once, which a loaded
 * machine may not give them: a run without contention checks nothing and
 * is tried again, a few times.
 */
#define UNWIND_RUNS	5

START_TEST(test_profile_no_unwind_under_lock)
{
	char path[PATH_MAX], out[256];
	static char table[65536];
	int run;

	tmp_path(path, sizeof(path), ".txt");
	for (run = 0; run < UNWIND_RUNS; run++) {
		run_work(WORK_UNWIND_ARG, NULL, path, NULL, out, sizeof(out));
		ck_assert_str_eq(out, "unwound\n");
		read_file(path, table, sizeof(table));
		unlink(path);
		/*
		 * The unwinder's mutex was contended, and its record made
		 * (without frames: its stack would be taken inside the
		 * unwinder).
		 */
		if (strstr(table, "\n  1 mutex "))
			return;
		ck_assert_msg(strstr(table, ": 0 contended locks"),
			      "a report without the unwinder lock: %s", table);
	}
	printf("SKIPPED: %s: the unwinding threads never overlapped in %d runs: nothing checked\n",
	       __func__, UNWIND_RUNS);
}
END_TEST

/* A cond made in a destroyed mutex's memory: a record of its own. */
START_TEST(test_profile_reused_memory_other_kind)
{
	char path[PATH_MAX], out[256], obj[32];
	static char json[65536];
	const char *m, *c, *x;

	tmp_path(path, sizeof(path), ".json");
	run_work(WORK_REUSE_ARG, NULL, path, NULL, out, sizeof(out));
	ck_assert_int_eq(sscanf(out, "obj=%31s", obj), 1);
	read_file(path, json, sizeof(json));
	unlink(path);
	/* Two records at that address: the mutex's and the cond's. */
	m = lock_json(json, obj);
	c = lock_json(strchr(m, '}'), obj);
	if (strstr(m, "\"kind\": \"cond\"") < strchr(m, '}')) {
		x = m;
		m = c;
		c = x;
	}
	ck_assert_msg(strstr(m, "\"kind\": \"mutex\"") < strchr(m, '}'), "%s",
		      json);
	ck_assert_uint_eq(field(m, "contended"), 1);
	ck_assert_uint_eq(field(m, "locked"), 2);
	ck_assert_msg(strstr(c, "\"kind\": \"cond\"") < strchr(c, '}'), "%s",
		      json);
	ck_assert_uint_eq(field(c, "contended"), 1);
	ck_assert_uint_ge(field(json, "cond_wait_ns"), REUSE_WAIT_NS);
	ck_assert_uint_lt(field(json, "lock_wait_ns"), REUSE_WAIT_NS);
}
END_TEST

/* A condition wait that ends by cancellation is in the report. */
START_TEST(test_profile_cancelled_cond_wait)
{
	char path[PATH_MAX], out[256], cv[32];
	static char json[65536];

	tmp_path(path, sizeof(path), ".json");
	run_work(WORK_COND_CANCEL_ARG, NULL, path, NULL, out, sizeof(out));
	ck_assert_int_eq(sscanf(out, "cv=%31s", cv), 1);
	read_file(path, json, sizeof(json));
	unlink(path);
	ck_assert_msg(strstr(lock_json(json, cv), "\"kind\": \"cond\""),
		      "%s", json);
	ck_assert_uint_ge(field(json, "cond_wait_ns"), REUSE_WAIT_NS);
}
END_TEST

/*
 * A reader that waits behind a waiting writer (writer preference) waited:
 * both count as contended, and the wait of both is the lock's.
 */
START_TEST(test_profile_reader_behind_a_waiting_writer)
{
	char path[PATH_MAX], out[256], rw[32];
	static char json[65536];

	tmp_path(path, sizeof(path), ".json");
	run_work(WORK_WRITER_PREF_ARG, NULL, path, NULL, out, sizeof(out));
	ck_assert_int_eq(sscanf(out, "rw=%31s", rw), 1);
	read_file(path, json, sizeof(json));
	unlink(path);
	ck_assert_uint_eq(field(lock_json(json, rw), "contended"), 2);
}
END_TEST

/* Names are bytes: one that is not UTF-8 is escaped, the JSON valid. */
START_TEST(test_profile_json_program_name_not_utf8)
{
	char path[PATH_MAX], link[PATH_MAX], self[PATH_MAX], out[256];
	char want[128], cmd[PATH_MAX + 64];
	static char json[65536];
	ssize_t n;

	tmp_path(path, sizeof(path), ".json");
	/* Not UTF-8 (0xff), a quote, then UTF-8 (U+00E9). */
	tmp_path(link, sizeof(link), "-\xff\"\xc3\xa9");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(n > 0);
	self[n] = '\0';
	ck_assert_int_eq(symlink(self, link), 0);
	run_work_as(link, WORK_ARG, NULL, path, NULL, out, sizeof(out));
	unlink(link);
	read_file(path, json, sizeof(json));
	snprintf(want, sizeof(want),
		 "{\"program\": \"tofutex-profile-%d-\\u00ff\\\"\xc3\xa9\", ",
		 (int)getpid());
	ck_assert_msg(!strncmp(json, want, strlen(want)), "%.200s", json);
	if (access("/usr/bin/python3", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd),
			 "python3 -m json.tool '%s' >/dev/null", path);
		ck_assert_int_eq(system(cmd), 0);
	}
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
	tcase_add_test(tc, test_profile_top_not_a_number);
	tcase_add_test(tc, test_profile_cancelled_cond_wait);
	tcase_add_test(tc, test_profile_after__exit);
	tcase_add_test(tc, test_profile_fork_child_after__exit);
	tcase_add_test(tc, test_profile_once_with_vfork_child__exit);
	tcase_add_test(tc, test_profile_no_unwind_under_lock);
	tcase_add_test(tc, test_profile_not_into_reused_fd);
	tcase_add_test(tc, test_profile_reused_memory_other_kind);
	tcase_add_test(tc, test_profile_json_program_name_not_utf8);
	tcase_add_test(tc, test_profile_reader_behind_a_waiting_writer);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strncmp(argv[1], WORK_ARG, strlen(WORK_ARG)))
		return work_then(argv[1]);
	sr = srunner_create(pthread_profile_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
