// SPDX-License-Identifier: GPL-2.0
/*
 * The module's tracepoints (tofutex(4), TRACEPOINTS), read through
 * tracefs: each test runs a known sequence - a contended lock, a
 * hand-off, a reader/writer grant, a swap - with the events enabled in a
 * tracing instance of its own, and checks that each event the sequence
 * must produce is in the buffer, from the right thread, with the right
 * process, address and outcome.
 *
 * Needs root (tracefs; the hand-off test sets handoff_ns). Skips, saying
 * so, only where the kernel has no tracefs; a kernel with tracefs and no
 * tofutex events fails. Tests assert what happened, never how long it
 * took: every wait is for a state (a sleeper's WAITERS bit, a thread
 * asleep), bounded by TEST_WAIT_NS.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "common.h"
#include "params.h"

#define TRACEFS		"/sys/kernel/tracing"
#define INSTANCE	TRACEFS "/instances/tofutex_test_trace"

/* The tofutex events' lines of a trace buffer, at most this much. */
#define TRACE_MAX	(1 << 20)

/* A user address as the events print it (0x%lx). */
#define UA(p)		((unsigned long)(uintptr_t)(p))

/*
 * Is tracefs there, mounted here if need be? False only when the kernel
 * has no tracefs at all (no CONFIG_TRACING): that is a skip. A tracefs
 * that the kernel has but that cannot be mounted is a failure.
 */
static bool tracefs_ready(void)
{
	char buf[4096];
	ssize_t n;
	int fd;

	if (access(TRACEFS "/instances", F_OK) == 0)
		return true;
	fd = open("/proc/filesystems", O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "/proc/filesystems: %s", strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_msg(n > 0, "/proc/filesystems unreadable");
	buf[n] = '\0';
	if (!strstr(buf, "\ttracefs\n"))
		return false;
	ck_assert_msg(mount("tracefs", TRACEFS, "tracefs", 0, NULL) == 0,
		      "mount tracefs on " TRACEFS ": %s", strerror(errno));
	return true;
}

static int file_write(const char *path, const char *s, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : errno;
}

/*
 * Start a test: false (after a SKIPPED line) without tracefs; else a new
 * instance, empty, with every tofutex event enabled.
 */
static bool trace_start(const char *test)
{
	int r;

	if (!tracefs_ready()) {
		printf("SKIPPED: %s: this kernel has no tracefs (CONFIG_TRACING): nothing checked\n",
		       test);
		return false;
	}
	ck_assert_msg(mkdir(INSTANCE, 0700) == 0 || errno == EEXIST,
		      "mkdir " INSTANCE ": %s", strerror(errno));
	r = file_write(INSTANCE "/events/tofutex/enable", "1", 0);
	ck_assert_msg(r == 0, "enabling the tofutex events: %s (the module has no tracepoints?)",
		      strerror(r));
	r = file_write(INSTANCE "/trace", "", O_TRUNC);
	ck_assert_msg(r == 0, "clearing the buffer: %s", strerror(r));
	return true;
}

/* The instance's buffer (not consumed), a NUL-terminated malloc()ed copy. */
static char *trace_read(void)
{
	char *buf = malloc(TRACE_MAX + 1);
	size_t len = 0;
	ssize_t n;
	int fd;

	ck_assert_ptr_nonnull(buf);
	fd = open(INSTANCE "/trace", O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, INSTANCE "/trace: %s", strerror(errno));
	while (len < TRACE_MAX &&
	       (n = read(fd, buf + len, TRACE_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* Does @fields hold every space-separated token of @want, each whole? */
static bool has_tokens(const char *fields, const char *want)
{
	char tok[128];
	const char *p = want, *hit;
	size_t len;

	while (*p) {
		len = strcspn(p, " ");
		ck_assert_uint_lt(len, sizeof(tok));
		memcpy(tok, p, len);
		tok[len] = '\0';
		for (hit = fields; (hit = strstr(hit, tok)); hit++)
			if ((hit == fields || hit[-1] == ' ') &&
			    (hit[len] == ' ' || hit[len] == '\0'))
				break;
		if (!hit)
			return false;
		p += len;
		p += strspn(p, " ");
	}
	return true;
}

/*
 * The fields of the first @event in @buf from thread @tid that has every
 * token of @want ("key=value ..."), copied to @out; false when none.
 * A line reads "<comm>-<tid> [cpu] flags time: <event>: <fields>".
 */
static bool find_event(const char *buf, const char *event, uint32_t tid,
		       const char *want, char *out, size_t outlen)
{
	char name[64], line[512];
	const char *p = buf, *end, *ev, *dash;
	size_t len;

	snprintf(name, sizeof(name), ": %s: ", event);
	for (; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, '\n');
		len = (size_t)(end - p) < sizeof(line) - 1 ?
		      (size_t)(end - p) : sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = '\0';
		ev = strstr(line, name);
		dash = strchr(line, '[');
		if (!ev || line[0] == '#' || !dash)
			continue;
		while (dash > line && dash[-1] == ' ')
			dash--;
		while (dash > line && dash[-1] != '-')
			dash--;
		if (dash == line || strtoul(dash, NULL, 10) != tid)
			continue;
		ev += strlen(name);
		if (!has_tokens(ev, want))
			continue;
		snprintf(out, outlen, "%s", ev);
		return true;
	}
	return false;
}

/* Assert an event as find_event() finds it; the buffer is shown if not. */
#define ASSERT_EVENT(buf, event, tid, out, ...)				\
	do {								\
		uint32_t tid_ = (tid);					\
		char want_[256];					\
		snprintf(want_, sizeof(want_), __VA_ARGS__);		\
		ck_assert_msg(find_event(buf, event, tid_, want_, out,	\
					 sizeof(out)),			\
			      "no %s event from thread %u with \"%s\" in the trace:\n%s", \
			      event, tid_, want_, buf);			\
	} while (0)

/* A thread that takes a mutex or write lock and holds it until told. */
struct holder {
	tofutex_mutex_t *m;
	tofutex_rwlock_t *rw;
	atomic_uint tid;
	atomic_bool release;
	pthread_t thread;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	int r;

	r = h->m ? tofutex_mutex_lock(h->m) : tofutex_rwlock_wrlock(h->rw);
	if (r) {
		TFAIL("holder: lock = %d (%s)", r, strerror(r));
		return NULL;
	}
	atomic_store(&h->tid, test_gettid());
	while (!atomic_load(&h->release))
		sleep_ns(200 * NSEC_PER_USEC);
	r = h->m ? tofutex_mutex_unlock(h->m) : tofutex_rwlock_unlock(h->rw);
	TCHECK(r == 0, "holder: unlock = %d (%s)", r, strerror(r));
	return NULL;
}

/* A thread that takes a mutex or read lock, queuing behind the holder. */
struct locker {
	tofutex_mutex_t *m;
	tofutex_rwlock_t *rw;
	atomic_uint tid;
	pthread_t thread;
};

static void *locker_main(void *arg)
{
	struct locker *l = arg;
	int r;

	atomic_store(&l->tid, test_gettid());
	r = l->m ? tofutex_mutex_lock(l->m) : tofutex_rwlock_rdlock(l->rw);
	if (r) {
		TFAIL("locker: lock = %d (%s)", r, strerror(r));
		return NULL;
	}
	r = l->m ? tofutex_mutex_unlock(l->m) : tofutex_rwlock_unlock(l->rw);
	TCHECK(r == 0, "locker: unlock = %d (%s)", r, strerror(r));
	return NULL;
}

/*
 * The holder takes @word's lock, the locker queues behind it until it
 * sleeps in the kernel (WAITERS set, the thread asleep), the holder
 * releases: one contended acquisition, traced.
 */
static void contend(struct holder *h, struct locker *l, const uint32_t *word)
{
	bool ok;

	ck_assert_int_eq(pthread_create(&h->thread, NULL, holder_main, h), 0);
	WAIT_UNTIL(ok, atomic_load(&h->tid) != 0 || tfailed(), TEST_WAIT_NS);
	tfail_assert();
	ck_assert_msg(ok, "holder did not take the lock");
	ck_assert_int_eq(pthread_create(&l->thread, NULL, locker_main, l), 0);
	/* Asleep in the kernel: its acquisition counts a sleep. */
	WAIT_UNTIL(ok, (word_load(word) & TOFUTEX_WAITERS) &&
		   thread_state(atomic_load(&l->tid)) == 'S', TEST_WAIT_NS);
	ck_assert_msg(ok, "locker never went to sleep: word 0x%08x",
		      word_load(word));
	atomic_store(&h->release, true);
	ck_assert_msg(join_within(h->thread, NULL, TEST_WAIT_NS),
		      "holder did not finish");
	ck_assert_msg(join_within(l->thread, NULL, TEST_WAIT_NS),
		      "locker did not finish");
	tfail_assert();
}

/*
 * Start test @test as trace_start() does, on the module's backend: false
 * when it is skipped.
 */
static bool traced(const char *test)
{
	ck_assert_msg(tofutex_backend() == TOFUTEX_BACKEND_MODULE,
		      "the tracepoints are the module's: backend %d",
		      (int)tofutex_backend());
	return trace_start(test);
}

/* contend() on @word, traced: the buffer, or NULL when skipped. */
static char *traced_contend(const char *test, struct holder *h,
			    struct locker *l, const uint32_t *word)
{
	if (!traced(test))
		return NULL;
	contend(h, l, word);
	return trace_read();
}

START_TEST(test_trace_contended_lock)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct locker l = { .m = &m };
	char f[256], how[32];
	unsigned int sleeps;
	unsigned long long wait_ns;
	int tgid = getpid();
	char *buf;

	buf = traced_contend("test_trace_contended_lock", &h, &l, &m.word);
	if (!buf)
		return;

	ASSERT_EVENT(buf, "tofutex_lock_contended", l.tid, f,
		     "tgid=%d uaddr=0x%lx op=lock", tgid, UA(&m.word));
	ASSERT_EVENT(buf, "tofutex_lock_acquired", l.tid, f,
		     "tgid=%d uaddr=0x%lx op=lock", tgid, UA(&m.word));
	ck_assert_msg(sscanf(strstr(f, "how="), "how=%31s sleeps=%u wait_ns=%llu",
			     how, &sleeps, &wait_ns) == 3, "fields: %s", f);
	/* It slept until the release; a hand-off comes after handoff_ns. */
	ck_assert_msg(!strcmp(how, "woken") || !strcmp(how, "handoff"),
		      "acquired how=%s, want woken or handoff", how);
	ck_assert_uint_gt(sleeps, 0);
	ck_assert_uint_gt(wait_ns, 0);
	ASSERT_EVENT(buf, "tofutex_release_woke", h.tid, f,
		     "tgid=%d uaddr=0x%lx op=unlock", tgid, UA(&m.word));
	free(buf);
}
END_TEST

/* handoff_ns before the tests, read by the fixture that forks them. */
static unsigned long saved_handoff_ns = ULONG_MAX;

static void handoff_restore(void)
{
	if (saved_handoff_ns != ULONG_MAX)
		param_write("handoff_ns", saved_handoff_ns);
}

START_TEST(test_trace_handoff)
{
	tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	struct holder h = { .m = &m };
	struct locker l = { .m = &m };
	int tgid = getpid();
	char f[256];
	char *buf;

	/* A top waiter starves at once: the release hands it the word. */
	ck_assert(saved_handoff_ns != ULONG_MAX);
	ck_assert_int_eq(param_write("handoff_ns", 0), 0);
	buf = traced_contend("test_trace_handoff", &h, &l, &m.word);
	handoff_restore();
	if (!buf)
		return;

	ASSERT_EVENT(buf, "tofutex_handoff", h.tid, f,
		     "tgid=%d uaddr=0x%lx to=%u", tgid, UA(&m.word),
		     atomic_load(&l.tid));
	ASSERT_EVENT(buf, "tofutex_release_woke", h.tid, f,
		     "tgid=%d uaddr=0x%lx op=unlock", tgid, UA(&m.word));
	ASSERT_EVENT(buf, "tofutex_lock_acquired", l.tid, f,
		     "tgid=%d uaddr=0x%lx op=lock how=handoff", tgid,
		     UA(&m.word));
	free(buf);
}
END_TEST

START_TEST(test_trace_rw_grant)
{
	tofutex_rwlock_t rw = TOFUTEX_RWLOCK_INITIALIZER;
	struct holder h = { .rw = &rw };
	struct locker l = { .rw = &rw };
	int tgid = getpid();
	char f[256];
	char *buf;

	buf = traced_contend("test_trace_rw_grant", &h, &l, &rw.word);
	if (!buf)
		return;

	ASSERT_EVENT(buf, "tofutex_lock_contended", l.tid, f,
		     "tgid=%d uaddr=0x%lx op=rdlock", tgid, UA(&rw.word));
	ASSERT_EVENT(buf, "tofutex_rw_grant", h.tid, f,
		     "tgid=%d uaddr=0x%lx readers=1 held=0 writer=0", tgid,
		     UA(&rw.word));
	ASSERT_EVENT(buf, "tofutex_release_woke", h.tid, f,
		     "tgid=%d uaddr=0x%lx op=rwunlock", tgid, UA(&rw.word));
	ASSERT_EVENT(buf, "tofutex_lock_acquired", l.tid, f,
		     "tgid=%d uaddr=0x%lx op=rdlock how=handoff", tgid,
		     UA(&rw.word));
	free(buf);
}
END_TEST

/* A thread waiting on a word until woken. */
struct sleeper {
	uint32_t *word;
	atomic_uint tid;
	int ret;
	pthread_t thread;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	atomic_store(&s->tid, test_gettid());
	s->ret = tofutex_wait(s->word, 0, NULL);
	return NULL;
}

START_TEST(test_trace_swap)
{
	static uint32_t wake_word, wait_word = 1;
	struct sleeper s = { .word = &wake_word };
	int tgid = getpid(), r;
	char f[256];
	bool ok;
	char *buf;

	if (!traced("test_trace_swap"))
		return;
	ck_assert_int_eq(pthread_create(&s.thread, NULL, sleeper_main, &s), 0);
	WAIT_UNTIL(ok, atomic_load(&s.tid) && thread_state(s.tid) == 'S',
		   TEST_WAIT_NS);
	ck_assert_msg(ok, "the waiter never went to sleep");
	/* Wakes the waiter; the wait half finds 1, not 0, and returns. */
	r = tofutex_swap(&wait_word, 0, &wake_word, NULL);
	ck_assert_msg(r == 0 || r == EAGAIN, "swap = %d (%s)", r, strerror(r));
	ck_assert_msg(join_within(s.thread, NULL, TEST_WAIT_NS),
		      "the waiter was not woken");
	ck_assert_int_eq(s.ret, 0);
	buf = trace_read();

	ASSERT_EVENT(buf, "tofutex_swap", test_gettid(), f,
		     "tgid=%d uaddr=0x%lx wake_uaddr=0x%lx woken=1 ret=%d", tgid,
		     UA(&wait_word), UA(&wake_word), -EAGAIN);
	ASSERT_EVENT(buf, "tofutex_wait", s.tid, f,
		     "tgid=%d uaddr=0x%lx val=0 ret=0", tgid, UA(&wake_word));
	free(buf);
}
END_TEST

static void trace_setup(void)
{
	if (!param_read("handoff_ns", &saved_handoff_ns))
		saved_handoff_ns = ULONG_MAX;
}

/* After the tests, also failed ones: the parameter and instance back. */
static void trace_teardown(void)
{
	handoff_restore();
	file_write(INSTANCE "/events/tofutex/enable", "0", 0);
	rmdir(INSTANCE);
}

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("tracepoints");

	tcase_set_timeout(tc, TEST_TIMEOUT_SHORT);
	tcase_add_unchecked_fixture(tc, trace_setup, trace_teardown);
	tcase_add_test(tc, test_trace_contended_lock);
	tcase_add_test(tc, test_trace_handoff);
	tcase_add_test(tc, test_trace_rw_grant);
	tcase_add_test(tc, test_trace_swap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(trace_suite());
}
