// SPDX-License-Identifier: GPL-2.0
/*
 * What the suites of glibc's code on the preload's objects share
 * (test_pthread_glibc_code.c, test_pthread_deepbind.c): the plugins next
 * to the program, whether a function is the preload's, glibc's handle, a
 * counted round of reader/writer locking through two sets of functions,
 * and a condition wait through a function pointer.
 */
#ifndef TOFUTEX_TESTS_PRELOAD_GLIBC_CODE_H
#define TOFUTEX_TESTS_PRELOAD_GLIBC_CODE_H

#include <dlfcn.h>
#include <libgen.h>
#include <signal.h>
#include <stdatomic.h>

#include "sleeping.h"

#define TOFUTEX_PRELOAD_NAME "libtofutex-pthread.so"
#define PLUGIN_NAME "libtfx-plugin-deepbind.so"
#define PLUGIN_DLNEXT "libtfx-plugin-dlnext.so"
#define PLUGIN_NESTED "libtfx-plugin-nested.so"
#define PLUGIN_RUNPATH "libtfx-plugin-runpath.so"
#define PLUGIN_CTOR "libtfx-plugin-ctor.so"
#define PLUGIN_BLOCKING "libtfx-plugin-blocking.so"
#define PLUGIN_TEXTREL "libtfx-plugin-textrel.so"
#define PLUGIN_REGISTER "libtfx-plugin-register.so"

static inline bool is_preloads(void *fn)
{
	Dl_info info;

	return dladdr(fn, &info) && info.dli_fname &&
	       strstr(info.dli_fname, TOFUTEX_PRELOAD_NAME);
}

/* The path of the plugin @name, next to this program, into @path. */
static inline void plugin_path(char *path, size_t size, const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	ck_assert(n > 0);
	self[n] = '\0';
	snprintf(path, size, "%s/%s", dirname(self), name);
}

/* The plugin @name, next to this program, with @mode (RTLD_NOW unless lazy). */
static inline void *plugin_open(const char *name, int mode)
{
	char path[PATH_MAX + 64];
	void *h;

	plugin_path(path, sizeof(path), name);
	h = dlopen(path, (mode & RTLD_LAZY ? 0 : RTLD_NOW) | mode);
	ck_assert_msg(h, "%s", dlerror());
	return h;
}

/* libpthread.so.0's handle (a stub of libc.so.6's), or libc.so.6's. */
static inline void *glibc_handle(void)
{
	void *h = dlopen("libpthread.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		h = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h, "%s", dlerror());
	return h;
}

typedef int (*rwlock_fn)(pthread_rwlock_t *);

struct rwcount {
	pthread_rwlock_t rw;
	rwlock_fn rdlock, wrlock, unlock;
	unsigned long n, total;
	int busy;
};

/*
 * @way: through the pointers, else the plain names. Each round writes
 * (the counter, @busy raised inside) and every eighth one then reads
 * (@busy must be down: no reader inside a writer's section).
 */
static inline void rwcount_rounds(struct rwcount *c, bool way)
{
	pthread_rwlock_t *rw = &c->rw;
	unsigned long i;

	for (i = 0; i < c->n; i++) {
		TCHECK((way ? c->wrlock(rw) : pthread_rwlock_wrlock(rw)) == 0,
		       "wrlock failed");
		TCHECK(!__atomic_exchange_n(&c->busy, 1, __ATOMIC_RELAXED),
		       "two writers inside");
		c->total++;
		__atomic_store_n(&c->busy, 0, __ATOMIC_RELAXED);
		TCHECK((way ? c->unlock(rw) : pthread_rwlock_unlock(rw)) == 0,
		       "write unlock failed");
		if (i % 8)
			continue;
		TCHECK((way ? c->rdlock(rw) : pthread_rwlock_rdlock(rw)) == 0,
		       "rdlock failed");
		TCHECK(!__atomic_load_n(&c->busy, __ATOMIC_RELAXED),
		       "a reader inside a writer's section");
		TCHECK((way ? c->unlock(rw) : pthread_rwlock_unlock(rw)) == 0,
		       "read unlock failed");
	}
}

static inline void *rwcount_way_main(void *arg)
{
	rwcount_rounds(arg, true);
	return NULL;
}

static inline void *rwcount_ours_main(void *arg)
{
	rwcount_rounds(arg, false);
	return NULL;
}

/*
 * Two threads through @c's pointers, two through the plain names; the
 * rwlock is made and left free by the test. An alarm turns a locker
 * that never returns into a failure.
 */
static inline void rwcount_run(struct rwcount *c)
{
	pthread_t t[4];
	int i;

	tfail_reset();
	c->n = scaled(20000, 1000);
	signal(SIGALRM, SIG_DFL);
	alarm(TEST_TIMEOUT_LONG / 2);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						i % 2 ? rwcount_ours_main :
							rwcount_way_main,
						c), 0);
	for (i = 0; i < 4; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS * 3),
			      "a locker hangs");
	alarm(0);
	tfail_assert();
	ck_assert_uint_eq(c->total, 4 * c->n);
	/* Free for either, the way the test left it. */
	ck_assert_int_eq(pthread_rwlock_trywrlock(&c->rw), 0);
	ck_assert_int_eq(c->unlock(&c->rw), 0);
}

struct cwait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int (*wait)(pthread_cond_t *, pthread_mutex_t *);
	uint32_t tid;
	int ready, ret;
};

static inline void *cwait_main(void *arg)
{
	struct cwait *w = arg;

	pthread_mutex_lock(&w->m);
	__atomic_store_n(&w->tid, test_gettid(), __ATOMIC_RELEASE);
	while (!w->ready && !w->ret)
		w->ret = w->wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

#if defined(__x86_64__) || defined(__aarch64__)

/* The plugin's function @name (plugin_deepbind.c). */
static inline void *deepbind_fn(void *h, const char *name)
{
	void *fn = dlsym(h, name);

	ck_assert_msg(fn, "%s: %s", name, dlerror());
	return fn;
}
#endif

#endif /* TOFUTEX_TESTS_PRELOAD_GLIBC_CODE_H */
