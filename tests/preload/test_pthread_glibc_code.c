// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, glibc's own code on the preload's
 * mutexes (under tofutex-run). Four ways a program reaches glibc's mutex
 * functions besides the names the preload replaces:
 *
 *   compat    glibc's __pthread_mutex_* at GLIBC_2.2.5, which older
 *             binaries call: the preload exports them, so they are ours
 *   dlsym     pthread_mutex_lock() taken with dlsym() from a
 *             dlopen("libpthread.so.0") handle (or libc.so.6's, where
 *             the stub is not installed): the preload's dlsym() hands
 *             out its own (x86-64), elsewhere glibc's
 *   deepbind  a plugin loaded with RTLD_DEEPBIND (plugin_deepbind.c):
 *             its calls bind to glibc first; the preload's dlopen()
 *             makes them its own (x86-64), elsewhere they are glibc's
 *   pshared   a PTHREAD_PROCESS_SHARED condition variable waited on with
 *             one of our mutexes: glibc's wait unlocks and relocks it
 *
 * Whichever code runs on a mutex, a lock waits for the holder's unlock
 * and is woken by it, exclusion holds, and the wait returns with the
 * mutex held, for each type the preload runs.
 *
 * glibc's rwlock code cannot run on the preload's rwlocks, so it must
 * never meet them, nor its condition variable code the preload's
 * condition variables: the compat names are the preload's, and so is
 * every rwlock and condition variable function dlsym() or dlvsym() finds
 * on a handle of glibc and
 * every rwlock, condition variable and mutex call of a plugin loaded with
 * RTLD_DEEPBIND, and of one it loads so itself (x86-64, where the preload
 * interposes them), while RTLD_DEFAULT and RTLD_NEXT still answer for the
 * object that calls them (plugin_dlnext.c).
 */
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

enum { W_COMPAT, W_DLSYM, W_DEEPBIND, W_COUNT };
static const char *const way_name[W_COUNT] = { "compat", "dlsym", "deepbind" };

enum { T_DEFAULT, T_ERRORCHECK, T_RECURSIVE, T_COUNT };

typedef int (*mutex_fn)(pthread_mutex_t *);

struct way {
	mutex_fn lock, unlock;
};

static void mutex_make(pthread_mutex_t *m, int t)
{
	static const int kind[T_COUNT] = {
		PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_ERRORCHECK,
		PTHREAD_MUTEX_RECURSIVE,
	};
	pthread_mutexattr_t a;

	ck_assert_int_eq(pthread_mutexattr_init(&a), 0);
	ck_assert_int_eq(pthread_mutexattr_settype(&a, kind[t]), 0);
	ck_assert_int_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static bool is_preloads(void *fn)
{
	Dl_info info;

	return dladdr(fn, &info) && info.dli_fname &&
	       strstr(info.dli_fname, TOFUTEX_PRELOAD_NAME);
}

/* The path of the plugin @name, next to this program, into @path. */
static void plugin_path(char *path, size_t size, const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	ck_assert(n > 0);
	self[n] = '\0';
	snprintf(path, size, "%s/%s", dirname(self), name);
}

/* The plugin @name, next to this program, with @mode (RTLD_NOW unless lazy). */
static void *plugin_open(const char *name, int mode)
{
	char path[PATH_MAX + 64];
	void *h;

	plugin_path(path, sizeof(path), name);
	h = dlopen(path, (mode & RTLD_LAZY ? 0 : RTLD_NOW) | mode);
	ck_assert_msg(h, "%s", dlerror());
	return h;
}

/* libpthread.so.0's handle (a stub of libc.so.6's), or libc.so.6's. */
static void *glibc_handle(void)
{
	void *h = dlopen("libpthread.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		h = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h, "%s", dlerror());
	return h;
}

/* The lock and unlock a program gets the way @w. */
static struct way way_get(int w)
{
	struct way f = { NULL, NULL };
	pthread_mutex_t probe = PTHREAD_MUTEX_INITIALIZER;
	void *h;

	switch (w) {
	case W_COMPAT:
		f.lock = (mutex_fn)dlvsym(RTLD_DEFAULT, "__pthread_mutex_lock",
					  "GLIBC_2.2.5");
		f.unlock = (mutex_fn)dlvsym(RTLD_DEFAULT,
					    "__pthread_mutex_unlock",
					    "GLIBC_2.2.5");
		break;
	case W_DLSYM:
		h = glibc_handle();
		f.lock = (mutex_fn)dlsym(h, "pthread_mutex_lock");
		f.unlock = (mutex_fn)dlsym(h, "pthread_mutex_unlock");
#if defined(__x86_64__)
		/* The preload's dlsym() hands out its own (dlsym.c). */
		ck_assert(f.lock && is_preloads((void *)f.lock));
#else
		ck_assert(f.lock && !is_preloads((void *)f.lock));
#endif
		break;
	case W_DEEPBIND:
		h = plugin_open(PLUGIN_NAME, RTLD_LOCAL | RTLD_DEEPBIND);
		f.lock = (mutex_fn)dlsym(h, "tfx_plugin_lock");
		f.unlock = (mutex_fn)dlsym(h, "tfx_plugin_unlock");
		ck_assert(f.lock && f.unlock);
		ck_assert_int_eq(f.lock(&probe), 0);
#if defined(__x86_64__)
		/* Our lock writes our TID: the preload's code runs. */
		ck_assert_int_eq(probe.__data.__lock, test_gettid());
#else
		/* glibc's lock writes 1, not our TID: glibc's code runs. */
		ck_assert_int_eq(probe.__data.__lock, 1);
#endif
		ck_assert_int_eq(f.unlock(&probe), 0);
		break;
	}
	ck_assert(f.lock && f.unlock);
	return f;
}

START_TEST(test_compat_symbols_are_the_preloads)
{
	static const char *const names[] = {
		"__pthread_mutex_init", "__pthread_mutex_destroy",
		"__pthread_mutex_lock", "__pthread_mutex_trylock",
		"__pthread_mutex_unlock",
	};
	unsigned int i;
	void *fn;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fn = dlvsym(RTLD_DEFAULT, names[i], "GLIBC_2.2.5");
		ck_assert_msg(fn && is_preloads(fn),
			      "%s@GLIBC_2.2.5 is not the preload's", names[i]);
	}
}
END_TEST

/* ---- one side locks, the other waits, either way round ---- */

struct hand {
	pthread_mutex_t m;
	struct way f;
	uint32_t tid;
	int ret;
};

static void *hand_way_main(void *arg)
{
	struct hand *h = arg;

	__atomic_store_n(&h->tid, test_gettid(), __ATOMIC_RELEASE);
	h->ret = h->f.lock(&h->m);
	if (!h->ret)
		h->ret = h->f.unlock(&h->m);
	return NULL;
}

static void *hand_ours_main(void *arg)
{
	struct hand *h = arg;

	__atomic_store_n(&h->tid, test_gettid(), __ATOMIC_RELEASE);
	h->ret = pthread_mutex_lock(&h->m);
	if (!h->ret)
		h->ret = pthread_mutex_unlock(&h->m);
	return NULL;
}

/* _i: way * T_COUNT + type. */
START_TEST(test_glibc_code_waits_for_and_wakes_ours)
{
	struct hand h = { .f = way_get(_i / T_COUNT), .ret = -1 };
	pthread_t t;

	mutex_make(&h.m, _i % T_COUNT);

	/* Ours holds, the other way waits and is woken by our unlock. */
	ck_assert_int_eq(pthread_mutex_lock(&h.m), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hand_way_main, &h), 0);
	ck_assert(thread_asleep_within(&h.tid));
	ck_assert_int_eq(pthread_mutex_unlock(&h.m), 0);
	ck_assert_msg(join_within(t, NULL, TEST_WAIT_NS),
		      "%s: a waiter sleeps on after our unlock", way_name[_i / T_COUNT]);
	ck_assert_int_eq(h.ret, 0);

	/* The other way holds, ours waits and is woken by its unlock. */
	h.tid = 0;
	h.ret = -1;
	ck_assert_int_eq(h.f.lock(&h.m), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hand_ours_main, &h), 0);
	ck_assert(thread_asleep_within(&h.tid));
	ck_assert_int_eq(h.f.unlock(&h.m), 0);
	ck_assert_msg(join_within(t, NULL, TEST_WAIT_NS),
		      "%s: our waiter sleeps on after its unlock", way_name[_i / T_COUNT]);
	ck_assert_int_eq(h.ret, 0);

	/* Free again, for either. */
	ck_assert_int_eq(pthread_mutex_trylock(&h.m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&h.m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&h.m), 0);
}
END_TEST

struct count {
	pthread_mutex_t m;
	struct way f;
	unsigned long n, total;
};

static void *count_way_main(void *arg)
{
	struct count *c = arg;
	unsigned long i;

	for (i = 0; i < c->n; i++) {
		TCHECK(c->f.lock(&c->m) == 0, "lock failed");
		c->total++;
		TCHECK(c->f.unlock(&c->m) == 0, "unlock failed");
	}
	return NULL;
}

static void *count_ours_main(void *arg)
{
	struct count *c = arg;
	unsigned long i;

	for (i = 0; i < c->n; i++) {
		TCHECK(pthread_mutex_lock(&c->m) == 0, "lock failed");
		c->total++;
		TCHECK(pthread_mutex_unlock(&c->m) == 0, "unlock failed");
	}
	return NULL;
}

/* _i: way * T_COUNT + type. Two threads of each kind. */
START_TEST(test_glibc_code_mutual_exclusion)
{
	struct count c = { .f = way_get(_i / T_COUNT),
			   .n = scaled(20000, 1000) };
	pthread_t t[4];
	int i;

	tfail_reset();
	mutex_make(&c.m, _i % T_COUNT);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						i % 2 ? count_ours_main :
							count_way_main, &c), 0);
	for (i = 0; i < 4; i++)
		ck_assert_msg(join_within(t[i], NULL, TEST_WAIT_NS * 3),
			      "%s: a locker hangs", way_name[_i / T_COUNT]);
	tfail_assert();
	ck_assert_uint_eq(c.total, 4 * c.n);
	ck_assert_int_eq(pthread_mutex_destroy(&c.m), 0);
}
END_TEST

static void *trylock_main(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_trylock(arg);
}

/* Another thread's trylock of @m. */
static int trylock_other(pthread_mutex_t *m)
{
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_create(&t, NULL, trylock_main, m), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	return (int)(intptr_t)ret;
}

/*
 * _i: way. A RECURSIVE mutex locked through the plain names, then once
 * more and released through the way: still held by the outer level, for
 * every other thread, until the plain unlock (glibc's own unlock there
 * would find its depth at 0 and free the word).
 */
START_TEST(test_glibc_code_recursion_keeps_the_outer_level)
{
	struct way f = way_get(_i);
	pthread_mutex_t m;

	mutex_make(&m, T_RECURSIVE);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(f.lock(&m), 0);
	ck_assert_int_eq(f.unlock(&m), 0);
	ck_assert_msg(trylock_other(&m) == EBUSY,
		      "%s: another thread took a held RECURSIVE mutex",
		      way_name[_i]);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(trylock_other(&m), 0);
	/* Taken and never released by that thread, which exited. */
	ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
}
END_TEST

/* ---- rwlocks: glibc's compat names ---- */

typedef int (*rwlock_fn)(pthread_rwlock_t *);

/* glibc's compat name @name@GLIBC_2.2.5 as a program bound to it gets it. */
static void *rwlock_compat(const char *name)
{
	void *f = dlvsym(RTLD_DEFAULT, name, "GLIBC_2.2.5");

	ck_assert_msg(f, "%s@GLIBC_2.2.5: %s", name, dlerror());
	return f;
}

START_TEST(test_compat_rwlock_symbols_are_the_preloads)
{
	static const char *const names[] = {
		"__pthread_rwlock_init", "__pthread_rwlock_destroy",
		"__pthread_rwlock_rdlock", "__pthread_rwlock_tryrdlock",
		"__pthread_rwlock_wrlock", "__pthread_rwlock_trywrlock",
		"__pthread_rwlock_unlock",
	};
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(is_preloads(rwlock_compat(names[i])),
			      "%s@GLIBC_2.2.5 is not the preload's", names[i]);
}
END_TEST

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
static void rwcount_rounds(struct rwcount *c, bool way)
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

static void *rwcount_way_main(void *arg)
{
	rwcount_rounds(arg, true);
	return NULL;
}

static void *rwcount_ours_main(void *arg)
{
	rwcount_rounds(arg, false);
	return NULL;
}

/*
 * Two threads through @c's pointers, two through the plain names; the
 * rwlock is made and left free by the test. An alarm turns a locker
 * that never returns into a failure.
 */
static void rwcount_run(struct rwcount *c)
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

START_TEST(test_compat_rwlock_mutual_exclusion)
{
	struct rwcount c = { .busy = 0 };
	int (*init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);

	c.rdlock = (rwlock_fn)rwlock_compat("__pthread_rwlock_rdlock");
	c.wrlock = (rwlock_fn)rwlock_compat("__pthread_rwlock_wrlock");
	c.unlock = (rwlock_fn)rwlock_compat("__pthread_rwlock_unlock");
	init = rwlock_compat("__pthread_rwlock_init");
	ck_assert_int_eq(init(&c.rw, NULL), 0);
	rwcount_run(&c);
	ck_assert_int_eq(((rwlock_fn)rwlock_compat("__pthread_rwlock_destroy"))(&c.rw),
			 0);
}
END_TEST

/* ---- rwlocks: dlsym() on a handle of glibc ---- */

/* Interposed on x86-64 alone (lib/pthread/dlsym.c). */
#if defined(__x86_64__)

/*
 * Every mutex, rwlock and condition variable function, by each name and
 * version, is the preload's.
 */
START_TEST(test_dlsym_lock_functions_are_the_preloads)
{
	static const char *const names[] = {
		"pthread_mutex_init", "pthread_mutex_destroy",
		"pthread_mutex_lock", "pthread_mutex_trylock",
		"pthread_mutex_timedlock", "pthread_mutex_clocklock",
		"pthread_mutex_unlock", "pthread_mutex_consistent",
		"pthread_cond_init", "pthread_cond_destroy", "pthread_cond_wait",
		"pthread_cond_timedwait", "pthread_cond_clockwait",
		"pthread_cond_signal", "pthread_cond_broadcast",
		"pthread_rwlock_init", "pthread_rwlock_destroy",
		"pthread_rwlock_rdlock", "pthread_rwlock_tryrdlock",
		"pthread_rwlock_timedrdlock", "pthread_rwlock_clockrdlock",
		"pthread_rwlock_wrlock", "pthread_rwlock_trywrlock",
		"pthread_rwlock_timedwrlock", "pthread_rwlock_clockwrlock",
		"pthread_rwlock_unlock",
	};
	void *h[2] = { glibc_handle(), dlopen("libc.so.6", RTLD_NOW) };
	unsigned int i, j;
	void *fn;

	for (j = 0; j < 2; j++) {
		ck_assert(h[j]);
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			fn = dlsym(h[j], names[i]);
			ck_assert_msg(fn && is_preloads(fn),
				      "dlsym(%s) is not the preload's", names[i]);
		}
		/* The compat names exist only in a version. */
		fn = dlvsym(h[j], "pthread_rwlock_wrlock", "GLIBC_2.2.5");
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(pthread_rwlock_wrlock) is not the preload's");
		fn = dlvsym(h[j], "__pthread_rwlock_rdlock", "GLIBC_2.2.5");
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(__pthread_rwlock_rdlock) is not the preload's");
		fn = dlvsym(h[j], "__pthread_mutex_lock", "GLIBC_2.2.5");
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(__pthread_mutex_lock) is not the preload's");
		fn = dlvsym(h[j], "pthread_cond_wait", "GLIBC_2.3.2");
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(pthread_cond_wait) is not the preload's");
	}
	/*
	 * Other functions stay glibc's, and so does the condition variable
	 * of glibc before 2.3.2, another function for another object.
	 */
	ck_assert(!is_preloads(dlsym(h[1], "malloc")));
	ck_assert(!is_preloads(dlsym(h[1], "pthread_mutexattr_init")));
	ck_assert(!is_preloads(dlvsym(h[1], "pthread_cond_wait",
				      "GLIBC_2.2.5")));
	dlclose(h[0]);
	dlclose(h[1]);
}
END_TEST

/*
 * A versioned lookup with RTLD_DEFAULT gives the preload's too: glibc's
 * dlvsym() never answers with its unversioned definitions. (Names this
 * program does not call: it would answer with its own PLT entry.)
 */
START_TEST(test_dlvsym_default_is_the_preloads)
{
	static const char *const found[][2] = {
		{ "pthread_rwlock_clockwrlock", "GLIBC_2.34" },
		{ "pthread_rwlock_clockwrlock", "GLIBC_2.30" },
		{ "pthread_cond_clockwait", "GLIBC_2.34" },
		{ "pthread_cond_broadcast", "GLIBC_2.3.2" },
		{ "pthread_mutex_timedlock", "GLIBC_2.2.5" },
		{ "pthread_mutex_timedlock", "GLIBC_2.34" },
		{ "pthread_mutex_consistent", "GLIBC_2.12" },
	};
	unsigned int i;
	void *fn;

	for (i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		fn = dlvsym(RTLD_DEFAULT, found[i][0], found[i][1]);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(RTLD_DEFAULT, %s, %s) is not the preload's",
			      found[i][0], found[i][1]);
	}
	ck_assert(!is_preloads(dlvsym(RTLD_DEFAULT, "malloc", "GLIBC_2.2.5")));
	/* Both the preload's, not always one address (tofutex-run(1), BUGS). */
	fn = dlsym(RTLD_DEFAULT, "pthread_mutex_timedlock");
	ck_assert(fn && is_preloads(fn));
}
END_TEST

/*
 * "The real dlsym", as interposers find it (dlvsym(RTLD_NEXT, "dlsym",
 * version), or dlsym() on a handle of glibc), is the preload's at every
 * version glibc has, and so are dlvsym, dlopen and dlmopen; the lock
 * functions it finds on glibc's handle are the preload's (x86-64, where
 * they are interposed).
 */
START_TEST(test_dlsym_the_real_dlsym_is_the_preloads)
{
#if defined(__x86_64__)
	static const char *const found[][2] = {
		{ "dlsym", "GLIBC_2.34" }, { "dlsym", "GLIBC_2.2.5" },
		{ "dlvsym", "GLIBC_2.34" }, { "dlvsym", "GLIBC_2.2.5" },
		{ "dlopen", "GLIBC_2.34" }, { "dlopen", "GLIBC_2.2.5" },
		{ "dlmopen", "GLIBC_2.34" }, { "dlmopen", "GLIBC_2.3.4" },
	};
	void *(*real)(void *, const char *);
	void *libc = dlopen("libc.so.6", RTLD_NOW);
	unsigned int i;
	void *fn;

	ck_assert(libc);
	for (i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		fn = dlvsym(RTLD_NEXT, found[i][0], found[i][1]);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(RTLD_NEXT, %s, %s) is not the preload's",
			      found[i][0], found[i][1]);
		fn = dlsym(libc, found[i][0]);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlsym(libc.so.6, %s) is not the preload's",
			      found[i][0]);
	}
	real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym",
							 "GLIBC_2.2.5");
	fn = real(libc, "pthread_rwlock_wrlock");
	ck_assert_msg(fn && is_preloads(fn),
		      "the real dlsym's pthread_rwlock_wrlock is glibc's");
	real = (void *(*)(void *, const char *))dlsym(libc, "dlsym");
	fn = real(libc, "pthread_rwlock_wrlock");
	ck_assert_msg(fn && is_preloads(fn),
		      "libc.so.6's dlsym's pthread_rwlock_wrlock is glibc's");
	ck_assert(!is_preloads(real(libc, "malloc")));
	dlclose(libc);
#endif
}
END_TEST

/* Two threads through functions dlsym() gave, two through the names. */
START_TEST(test_dlsym_rwlock_mutual_exclusion)
{
	struct rwcount c = { .rw = PTHREAD_RWLOCK_INITIALIZER };
	void *h = glibc_handle();

	c.rdlock = (rwlock_fn)dlsym(h, "pthread_rwlock_rdlock");
	c.wrlock = (rwlock_fn)dlsym(h, "pthread_rwlock_wrlock");
	c.unlock = (rwlock_fn)dlsym(h, "pthread_rwlock_unlock");
	ck_assert(c.rdlock && c.wrlock && c.unlock);
	rwcount_run(&c);
	ck_assert_int_eq(pthread_rwlock_destroy(&c.rw), 0);
	dlclose(h);
}
END_TEST
#endif /* __x86_64__ */

/* ---- rwlocks, condition variables: a plugin loaded with RTLD_DEEPBIND ---- */

/* Made the preload's on x86-64 alone (lib/pthread/deepbind.c). */
#if defined(__x86_64__)

/* The plugin's function @name (plugin_deepbind.c). */
static void *deepbind_fn(void *h, const char *name)
{
	void *fn = dlsym(h, name);

	ck_assert_msg(fn, "%s: %s", name, dlerror());
	return fn;
}

/* How the plugin is bound: _i indexes these. */
static const int deepbind_mode[] = { RTLD_NOW, RTLD_LAZY };

/*
 * The plugin's own pthread_rwlock_wrlock is the preload's, and so are its
 * lookups of one on a handle of glibc or RTLD_DEFAULT; opened twice, and
 * again after dlclose() unloaded it.
 */
START_TEST(test_deepbind_binds_to_the_preload)
{
	int mode = deepbind_mode[_i] | RTLD_LOCAL | RTLD_DEEPBIND;
	void *h = plugin_open(PLUGIN_NAME, mode), *again;
	void *(*fn)(void) = (void *(*)(void))deepbind_fn(h, "tfx_plugin_rwlock_fn");
	void *(*plugin_dlsym)(void *, const char *) =
		(void *(*)(void *, const char *))deepbind_fn(h, "tfx_plugin_dlsym");
	void *(*plugin_default)(const char *) =
		(void *(*)(const char *))deepbind_fn(h, "tfx_plugin_default");
	void *glibc = glibc_handle();
	char path[PATH_MAX + 64];

	ck_assert_msg(is_preloads(fn()),
		      "the plugin's pthread_rwlock_wrlock is not the preload's");
	/* Its lookups on a handle of glibc come through the preload too. */
	ck_assert(is_preloads(plugin_dlsym(glibc, "pthread_rwlock_rdlock")));
	ck_assert(!is_preloads(plugin_dlsym(glibc, "malloc")));
	/* RTLD_DEFAULT: the preload's, as its calls; its own names still. */
	ck_assert(is_preloads(plugin_default("pthread_rwlock_rdlock")));
	ck_assert(plugin_default("tfx_plugin_lock") == dlsym(h, "tfx_plugin_lock"));
	ck_assert(!is_preloads(plugin_default("malloc")));
	dlclose(glibc);
	again = plugin_open(PLUGIN_NAME, mode);
	ck_assert(again == h && is_preloads(fn()));
	dlclose(again);
	dlclose(h);
	plugin_path(path, sizeof(path), PLUGIN_NAME);
	ck_assert_msg(!dlopen(path, RTLD_NOW | RTLD_NOLOAD), "still loaded");
	h = plugin_open(PLUGIN_NAME, mode);
	fn = (void *(*)(void))deepbind_fn(h, "tfx_plugin_rwlock_fn");
	ck_assert_msg(is_preloads(fn()),
		      "the plugin loaded again calls glibc's pthread_rwlock_wrlock");
	dlclose(h);
}
END_TEST

/*
 * A plugin whose table of lock functions is in read-only pages (text
 * relocations): loaded with RTLD_DEEPBIND, the table holds the preload's
 * functions too, and the pages keep their protection (a write faults).
 */
START_TEST(test_deepbind_text_relocations)
{
	void *h = plugin_open(PLUGIN_TEXTREL, RTLD_LOCAL | RTLD_DEEPBIND);
	void *(*wr)(void) = (void *(*)(void))deepbind_fn(h, "tfx_textrel_wrlock");
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	int (*lock)(pthread_rwlock_t *) = (int (*)(pthread_rwlock_t *))wr();

	ck_assert_msg(is_preloads((void *)lock),
		      "the plugin's read-only table holds glibc's pthread_rwlock_wrlock");
	ck_assert_int_eq(lock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	dlclose(h);
}
END_TEST

/*
 * dlmopen() into the base namespace, where the preload is, with
 * RTLD_DEEPBIND: as dlopen(); a new namespace keeps its own glibc, and
 * its plugin glibc's functions (the preload is not loaded there).
 */
START_TEST(test_deepbind_dlmopen)
{
	char path[PATH_MAX + 64];
	void *(*fn)(void);
	void *h;

	plugin_path(path, sizeof(path), PLUGIN_NAME);
	h = dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	ck_assert_msg(h, "%s", dlerror());
	fn = (void *(*)(void))deepbind_fn(h, "tfx_plugin_rwlock_fn");
	ck_assert_msg(is_preloads(fn()),
		      "dlmopen(LM_ID_BASE): the plugin's pthread_rwlock_wrlock is not the preload's");
	dlclose(h);
	/*
	 * A new namespace loads its own glibc by name: where the system's
	 * search path has none (the test guests' packed libraries), skip.
	 */
	h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!h) {
		printf("SKIPPED: %s: no glibc for a new namespace: %s\n",
		       __func__, dlerror());
		return;
	}
	fn = (void *(*)(void))deepbind_fn(h, "tfx_plugin_rwlock_fn");
	ck_assert(fn() && !is_preloads(fn()));
	dlclose(h);
}
END_TEST

/* Two threads through the plugin's rwlock calls, two through the names. */
START_TEST(test_deepbind_rwlock_mutual_exclusion)
{
	struct rwcount c = { .rw = PTHREAD_RWLOCK_INITIALIZER };
	void *h = plugin_open(PLUGIN_NAME, RTLD_LOCAL | RTLD_DEEPBIND);

	c.rdlock = (rwlock_fn)deepbind_fn(h, "tfx_plugin_rdlock");
	c.wrlock = (rwlock_fn)deepbind_fn(h, "tfx_plugin_wrlock");
	c.unlock = (rwlock_fn)deepbind_fn(h, "tfx_plugin_rwunlock");
	rwcount_run(&c);
	ck_assert_int_eq(pthread_rwlock_destroy(&c.rw), 0);
	dlclose(h);
}
END_TEST

/*
 * The plugin's try locks answer for the program's locks, and back (_i:
 * deepbind_mode, lazy binding included).
 */
START_TEST(test_deepbind_rwlock_try_answers)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	void *h = plugin_open(PLUGIN_NAME, deepbind_mode[_i] | RTLD_LOCAL |
				      RTLD_DEEPBIND);
	rwlock_fn tryrd = (rwlock_fn)deepbind_fn(h, "tfx_plugin_tryrdlock");
	rwlock_fn trywr = (rwlock_fn)deepbind_fn(h, "tfx_plugin_trywrlock");
	rwlock_fn wrlock = (rwlock_fn)deepbind_fn(h, "tfx_plugin_wrlock");
	rwlock_fn unlock = (rwlock_fn)deepbind_fn(h, "tfx_plugin_rwunlock");

	/* The program writes: the plugin can neither read nor write. */
	ck_assert_int_eq(pthread_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(tryrd(&rw), EBUSY);
	ck_assert_int_eq(trywr(&rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	/* The program reads: the plugin reads beside it, cannot write. */
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(tryrd(&rw), 0);
	ck_assert_int_eq(trywr(&rw), EBUSY);
	ck_assert_int_eq(unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	/* The plugin writes: the program can neither read nor write. */
	ck_assert_int_eq(wrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(unlock(&rw), 0);
	/* Free for both. */
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(trywr(&rw), 0);
	ck_assert_int_eq(unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_destroy(&rw), 0);
	dlclose(h);
}
END_TEST

struct cwait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int (*wait)(pthread_cond_t *, pthread_mutex_t *);
	uint32_t tid;
	int ready, ret;
};

static void *cwait_main(void *arg)
{
	struct cwait *w = arg;

	pthread_mutex_lock(&w->m);
	__atomic_store_n(&w->tid, test_gettid(), __ATOMIC_RELEASE);
	while (!w->ready && !w->ret)
		w->ret = w->wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

/* A wait in the plugin, signalled by the program, returns with the mutex. */
START_TEST(test_deepbind_cond_wait_signalled)
{
	struct cwait w = { .m = PTHREAD_MUTEX_INITIALIZER,
			   .c = PTHREAD_COND_INITIALIZER };
	void *h = plugin_open(PLUGIN_NAME, RTLD_LOCAL | RTLD_DEEPBIND);
	pthread_t t;

	w.wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))
		deepbind_fn(h, "tfx_plugin_cond_wait");
	ck_assert_int_eq(pthread_create(&t, NULL, cwait_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	ck_assert_int_eq(pthread_mutex_lock(&w.m), 0);
	w.ready = 1;
	ck_assert_int_eq(pthread_cond_signal(&w.c), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&w.m), 0);
	ck_assert_msg(join_within(t, NULL, TEST_WAIT_NS),
		      "the plugin's wait sleeps on after the program's signal");
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(pthread_mutex_trylock(&w.m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&w.m), 0);
	ck_assert_int_eq(pthread_cond_destroy(&w.c), 0);
	dlclose(h);
}
END_TEST

/*
 * Condition variables: the functions dlsym() finds on a handle of glibc
 * are the preload's, and a wait through them is woken by the program's
 * pthread_cond_signal().
 */
START_TEST(test_dlsym_cond_wait_signalled)
{
	static const char *const names[] = {
		"pthread_cond_init", "pthread_cond_destroy",
		"pthread_cond_wait", "pthread_cond_timedwait",
		"pthread_cond_clockwait", "pthread_cond_signal",
		"pthread_cond_broadcast",
	};
	struct cwait w = { .m = PTHREAD_MUTEX_INITIALIZER,
			   .c = PTHREAD_COND_INITIALIZER };
	void *h = dlopen("libc.so.6", RTLD_NOW);
	unsigned int i;
	pthread_t t;

	ck_assert(h);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(is_preloads(dlsym(h, names[i])),
			      "dlsym(%s) is not the preload's", names[i]);
	ck_assert(is_preloads(dlvsym(h, "pthread_cond_wait", "GLIBC_2.3.2")));
	w.wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))
		dlsym(h, "pthread_cond_wait");
	ck_assert_int_eq(pthread_create(&t, NULL, cwait_main, &w), 0);
	ck_assert(thread_asleep_within(&w.tid));
	ck_assert_int_eq(pthread_mutex_lock(&w.m), 0);
	w.ready = 1;
	ck_assert_int_eq(pthread_cond_signal(&w.c), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&w.m), 0);
	ck_assert_msg(join_within(t, NULL, TEST_WAIT_NS),
		      "glibc's wait sleeps on after the program's signal");
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(pthread_cond_destroy(&w.c), 0);
	dlclose(h);
}
END_TEST

/*
 * A table of function pointers in the plugin's data, which the dynamic
 * linker filled with glibc's functions, holds the preload's rwlock and
 * condition variable functions.
 */
START_TEST(test_deepbind_function_table)
{
	void *h = plugin_open(PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL |
					   RTLD_DEEPBIND);
	void *(*wr)(void) = (void *(*)(void))deepbind_fn(h, "tfx_plugin_table_wrlock");
	void *(*sig)(void) = (void *(*)(void))deepbind_fn(h, "tfx_plugin_table_signal");
	void *(*lock)(void) = (void *(*)(void))deepbind_fn(h, "tfx_plugin_table_lock");

	ck_assert_msg(is_preloads(wr()),
		      "the plugin's table holds glibc's pthread_rwlock_wrlock");
	ck_assert_msg(is_preloads(sig()),
		      "the plugin's table holds glibc's pthread_cond_signal");
	ck_assert_msg(is_preloads(lock()),
		      "the plugin's table holds glibc's pthread_mutex_lock");
	dlclose(h);
}
END_TEST

/*
 * The race below runs for a time budget rather than a round count: one
 * round's mappings cost ~100 times as much on a debug kernel in an
 * emulated guest as natively, and the race is as likely in each round.
 */
#define DEEPBIND_RACE_ROUNDS	5000
#define DEEPBIND_RACE_NS	(5 * NSEC_PER_SEC)

struct deepbind_race {
	uint64_t end_ns;
	long rounds, unpatched;
};

/* Each round: open the plugin, count it if it still calls glibc's. */
static void *deepbind_race_main(void *arg)
{
	struct deepbind_race *r = arg;
	void *(*fn)(void);
	void *h;

	for (; r->rounds < DEEPBIND_RACE_ROUNDS && now_ns() < r->end_ns;
	     r->rounds++) {
		h = plugin_open(PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL |
					     RTLD_DEEPBIND);
		fn = (void *(*)(void))dlsym(h, "tfx_plugin_rwlock_fn");
		if (!fn || !is_preloads(fn()))
			r->unpatched++;
		dlclose(h);
	}
	return NULL;
}

/*
 * Two threads load and unload the plugin at once: a dlopen() that finds
 * it being loaded by the other thread returns it patched too, never
 * before the other has patched it.
 */
START_TEST(test_deepbind_concurrent_dlopen)
{
	struct deepbind_race r[2] = { { 0 }, { 0 } };
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++) {
		r[i].end_ns = now_ns() + DEEPBIND_RACE_NS;
		ck_assert_int_eq(pthread_create(&t[i], NULL,
						deepbind_race_main, &r[i]), 0);
	}
	for (i = 0; i < 2; i++)
		ck_assert(join_within(t[i], NULL, DEEPBIND_RACE_NS +
						  TEST_WAIT_NS));
	ck_assert_msg(r[0].rounds && r[1].rounds,
		      "a thread ran no round: %ld and %ld",
		      r[0].rounds, r[1].rounds);
	ck_assert_msg(r[0].unpatched + r[1].unpatched == 0,
		      "%ld of %ld dlopen()s returned the plugin still calling glibc's pthread_rwlock_wrlock",
		      r[0].unpatched + r[1].unpatched,
		      r[0].rounds + r[1].rounds);
}
END_TEST

/* One side of the loader race below: its loads, for a time budget. */
struct loader_race {
	uint64_t end_ns;
	int mode;		/* the plugin's: RTLD_DEEPBIND or not */
	const char *name;
	long rounds, failed;
};

static void *loader_race_main(void *arg)
{
	struct loader_race *r = arg;
	void *h;

	for (; r->rounds < DEEPBIND_RACE_ROUNDS && now_ns() < r->end_ns;
	     r->rounds++) {
		h = plugin_open(r->name, RTLD_NOW | RTLD_LOCAL | r->mode);
		if (!h) {
			r->failed++;
			continue;
		}
		dlclose(h);
	}
	return NULL;
}

/*
 * One thread loads the RTLD_DEEPBIND plugin over and over, the other a
 * plain plugin whose constructor (inside glibc's loader lock) loads one
 * with RTLD_DEEPBIND: nothing of the preload's is held across glibc's
 * dlopen(), so the two take no locks in opposite orders and both finish.
 */
START_TEST(test_deepbind_dlopen_from_a_constructor_beside_another)
{
	struct loader_race r[2] = {
		{ .mode = RTLD_DEEPBIND, .name = PLUGIN_NAME },
		{ .mode = 0, .name = PLUGIN_CTOR },
	};
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++) {
		r[i].end_ns = now_ns() + DEEPBIND_RACE_NS / 5;
		ck_assert_int_eq(pthread_create(&t[i], NULL, loader_race_main,
						&r[i]), 0);
	}
	for (i = 0; i < 2; i++)
		ck_assert_msg(join_within(t[i], NULL, DEEPBIND_RACE_NS +
						      TEST_WAIT_NS),
			      "a loading thread hangs (%ld and %ld rounds)",
			      r[0].rounds, r[1].rounds);
	ck_assert(r[0].rounds && r[1].rounds);
	ck_assert_int_eq(r[0].failed + r[1].failed, 0);
}
END_TEST

/* The thread that loads the blocking plugin with RTLD_DEEPBIND. */
static void *blocking_load_main(void *arg)
{
	(void)arg;
	return plugin_open(PLUGIN_BLOCKING, RTLD_NOW | RTLD_LOCAL |
					    RTLD_DEEPBIND);
}

/*
 * fork() while another thread is inside an RTLD_DEEPBIND dlopen() (held
 * in the plugin's constructor, past the loader's list updates): the
 * child's own RTLD_DEEPBIND dlopen() returns, as glibc resets its
 * loader's lock in the child and the preload keeps none of its own.
 */
START_TEST(test_deepbind_dlopen_after_fork_inside_a_loader)
{
	int ready[2], wait[2], status;
	char fd[16], c;
	void *h = NULL;
	pthread_t t;
	pid_t pid;

	ck_assert(!pipe(ready) && !pipe(wait));
	snprintf(fd, sizeof(fd), "%d", ready[1]);
	ck_assert(!setenv("TFX_PLUGIN_READY_FD", fd, 1));
	snprintf(fd, sizeof(fd), "%d", wait[0]);
	ck_assert(!setenv("TFX_PLUGIN_WAIT_FD", fd, 1));
	ck_assert_int_eq(pthread_create(&t, NULL, blocking_load_main, NULL), 0);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);

	pid = fork();
	ck_assert(pid >= 0);
	if (!pid) {
		alarm(10);
		_exit(plugin_open(PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL |
					       RTLD_DEEPBIND) ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(write(wait[1], &c, 1), 1);
	ck_assert(join_within(t, &h, TEST_WAIT_NS));
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the fork child's dlopen() did not return (status %#x)",
		      status);
	ck_assert(h);
	dlclose(h);
}
END_TEST

/*
 * Loads the (already loaded) RTLD_DEEPBIND plugin again and again. No
 * ck_assert() here nor in the fork children: Check's bookkeeping takes a
 * lock a child forked meanwhile would find held.
 */
struct reopen {
	char path[PATH_MAX + 64];
	atomic_bool stop;
	atomic_long failed;
};

static void *reopen_main(void *arg)
{
	struct reopen *r = arg;
	void *h;

	while (!atomic_load(&r->stop)) {
		h = dlopen(r->path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
		if (!h)
			atomic_fetch_add(&r->failed, 1);
		else
			dlclose(h);
	}
	return NULL;
}

#define REOPEN_FORKS	50

/*
 * fork() while another thread's RTLD_DEEPBIND dlopen() of a loaded
 * plugin is being patched: the child's dlopen() of a new plugin returns
 * (the patch walks the objects under a loader lock that glibc's fork()
 * does not reset; fork() waits for the walk instead).
 */
START_TEST(test_deepbind_fork_beside_a_reopening_loader)
{
	void *h = plugin_open(PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	uint64_t end = now_ns() + DEEPBIND_RACE_NS / 5;
	static struct reopen r;
	char other[PATH_MAX + 64];
	int forks, status = 0;
	pthread_t t;
	pid_t pid;

	plugin_path(r.path, sizeof(r.path), PLUGIN_NAME);
	plugin_path(other, sizeof(other), PLUGIN_DLNEXT);
	ck_assert_int_eq(pthread_create(&t, NULL, reopen_main, &r), 0);
	for (forks = 0; forks < REOPEN_FORKS && now_ns() < end; forks++) {
		pid = fork();
		if (!pid) {
			alarm(10);
			_exit(dlopen(other, RTLD_NOW | RTLD_LOCAL) ? 0 : 1);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			break;
	}
	atomic_store(&r.stop, true);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	dlclose(h);
	ck_assert_int_eq(atomic_load(&r.failed), 0);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "fork child %d's dlopen() did not return (status %#x)",
		      forks, status);
}
END_TEST

/* A plugin the plugin loads with RTLD_DEEPBIND calls the preload's too. */
START_TEST(test_deepbind_nested_dlopen)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	void *h = plugin_open(PLUGIN_NAME, RTLD_LOCAL | RTLD_DEEPBIND);
	void *(*plugin_dlopen)(const char *, int) =
		(void *(*)(const char *, int))deepbind_fn(h, "tfx_plugin_dlopen");
	char path[PATH_MAX + 64];
	void *(*fn)(void);
	rwlock_fn wrlock, unlock;
	void *n;

	plugin_path(path, sizeof(path), PLUGIN_NESTED);
	n = plugin_dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	ck_assert_msg(n, "%s", dlerror());
	fn = (void *(*)(void))deepbind_fn(n, "tfx_nested_rwlock_fn");
	ck_assert_msg(is_preloads(fn()),
		      "the nested plugin's pthread_rwlock_wrlock is not the preload's");
	wrlock = (rwlock_fn)deepbind_fn(n, "tfx_nested_wrlock");
	unlock = (rwlock_fn)deepbind_fn(n, "tfx_nested_rwunlock");
	ck_assert_int_eq(wrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(unlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_trywrlock(&rw), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	dlclose(n);
	dlclose(h);
}
END_TEST

/* A dlopen() in a thread whose stack is painted, for its depth. */
#define PAINT_STACK	(256 * 1024)
#define PAINT		0xa5

struct stack_dlopen {
	const char *name;
	int mode;
	void *handle;
};

static void *stack_dlopen_main(void *p)
{
	struct stack_dlopen *sd = p;

	sd->handle = plugin_open(sd->name, sd->mode);
	return NULL;
}

/* How deep @name's dlopen() with @mode went into a fresh thread's stack. */
static size_t dlopen_stack_depth(const char *name, int mode)
{
	struct stack_dlopen sd = { .name = name, .mode = mode };
	unsigned char *stack = mmap(NULL, PAINT_STACK, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_t a;
	pthread_t t;
	size_t i;

	ck_assert(stack != MAP_FAILED);
	memset(stack, PAINT, PAINT_STACK);
	ck_assert_int_eq(pthread_attr_init(&a), 0);
	ck_assert_int_eq(pthread_attr_setstack(&a, stack, PAINT_STACK), 0);
	ck_assert_int_eq(pthread_create(&t, &a, stack_dlopen_main, &sd), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
	for (i = 0; i < PAINT_STACK && stack[i] == PAINT; i++)
		;
	munmap(stack, PAINT_STACK);
	ck_assert_ptr_nonnull(sd.handle);
	return PAINT_STACK - i;
}

/*
 * A plugin loaded with RTLD_DEEPBIND takes no more of the thread's stack
 * than one loaded without (glibc's dlopen() alone, which the preload
 * passes on): the preload's patch of the plugin keeps its list of the
 * objects off the stack, so a thread with a small stack that loads a
 * plugin under glibc loads it under the preload too. Each plugin loads
 * for the first time in this process (Check forks each test).
 */
START_TEST(test_deepbind_dlopen_stack_depth)
{
	size_t plain = dlopen_stack_depth(PLUGIN_TEXTREL, 0);
	size_t deep = dlopen_stack_depth(PLUGIN_NESTED, RTLD_DEEPBIND);

	ck_assert_msg(deep <= plain + 1024,
		      "dlopen(RTLD_DEEPBIND) took %zu bytes of stack, a plain dlopen() %zu",
		      deep, plain);
}
END_TEST

/*
 * A new dependency of the plugin calls the preload's too, and a bare name
 * the plugin finds through its own RUNPATH still loads (the preload
 * leaves such a load to glibc, which knows the caller).
 */
START_TEST(test_deepbind_dependency_and_runpath)
{
	void *h = plugin_open(PLUGIN_RUNPATH, RTLD_LOCAL | RTLD_DEEPBIND);
	void *(*fn)(void) = (void *(*)(void))deepbind_fn(h, "tfx_nested_rwlock_fn");
	void *(*runpath_dlopen)(const char *, int) =
		(void *(*)(const char *, int))deepbind_fn(h, "tfx_runpath_dlopen");
	void *n;

	ck_assert_msg(is_preloads(fn()),
		      "the plugin's dependency calls glibc's pthread_rwlock_wrlock");
	n = runpath_dlopen(PLUGIN_DLNEXT, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	ck_assert_msg(n, "%s", dlerror());
	dlclose(n);
	/* Not on the program's search path: glibc's answer, as without us. */
	ck_assert(!dlopen(PLUGIN_DLNEXT, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND));
	dlclose(h);
}
END_TEST
#endif /* __x86_64__ */

/*
 * RTLD_DEFAULT and RTLD_NEXT find what they find without the preload:
 * they depend on the calling object, which must stay the caller's.
 */
START_TEST(test_dlsym_pseudo_handles_keep_the_caller)
{
	typedef void *(*lookup_fn)(const char *);
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *plugin = plugin_open(PLUGIN_DLNEXT, RTLD_LOCAL);
	lookup_fn next, dflt;
	pid_t (*getpid_wrapped)(void);

	ck_assert(libc);
	/* From this program: the preload's is the next definition. */
	ck_assert(is_preloads(dlsym(RTLD_NEXT, "pthread_rwlock_rdlock")));
	ck_assert(is_preloads(dlsym(RTLD_DEFAULT, "pthread_rwlock_rdlock")));
	ck_assert(dlsym(RTLD_NEXT, "malloc") == dlsym(libc, "malloc"));
	ck_assert(dlsym(RTLD_DEFAULT, "malloc") == dlsym(libc, "malloc"));
	ck_assert(!dlsym(RTLD_DEFAULT, "tfx_plugin_marker"));

	/* From a library: its own scope, and a wrapper of getpid(). */
	next = (lookup_fn)dlsym(plugin, "tfx_plugin_next");
	dflt = (lookup_fn)dlsym(plugin, "tfx_plugin_default");
	getpid_wrapped = (pid_t (*)(void))dlsym(plugin, "getpid");
	ck_assert(next && dflt && getpid_wrapped);
	ck_assert(dflt("tfx_plugin_marker") == dlsym(plugin, "tfx_plugin_marker"));
	ck_assert(next("malloc") == dlsym(libc, "malloc"));
	ck_assert(!is_preloads(next("pthread_mutex_lock")));
	ck_assert_int_eq(getpid_wrapped(), getpid());
	dlclose(plugin);
	dlclose(libc);
}
END_TEST

/* ---- a process-shared condition variable with one of our mutexes ---- */

#define PSHARED_ITEMS 2000

struct pshared {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned int items, taken;
};

static int pshared_lock(struct pshared *p)
{
	return pthread_mutex_lock(&p->m);
}

static int pshared_unlock(struct pshared *p)
{
	return pthread_mutex_unlock(&p->m);
}

static void *pshared_consumer(void *arg)
{
	struct pshared *p = arg;
	unsigned int i;
	int err;

	for (i = 0; i < PSHARED_ITEMS; i++) {
		TCHECK(pshared_lock(p) == 0, "lock failed");
		while (!p->items) {
			err = pthread_cond_wait(&p->c, &p->m);
			if (err) {
				TFAIL("pthread_cond_wait: %d", err);
				pshared_unlock(p);
				return NULL;
			}
		}
		p->items--;
		p->taken++;
		TCHECK(pshared_unlock(p) == 0, "unlock after the wait failed");
	}
	return NULL;
}

/* _i: the type. Exact counts, every wait returning with the mutex. */
START_TEST(test_pshared_cond_with_our_mutex)
{
	struct pshared p = { .items = 0 };
	pthread_condattr_t a;
	unsigned int i;
	pthread_t t;

	tfail_reset();
	mutex_make(&p.m, _i);
	pthread_condattr_init(&a);
	pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_cond_init(&p.c, &a), 0);
	pthread_condattr_destroy(&a);
	ck_assert_int_eq(pthread_create(&t, NULL, pshared_consumer, &p), 0);
	for (i = 0; i < PSHARED_ITEMS; i++) {
		ck_assert_int_eq(pshared_lock(&p), 0);
		p.items++;
		ck_assert_int_eq(pthread_cond_signal(&p.c), 0);
		ck_assert_int_eq(pshared_unlock(&p), 0);
	}
	ck_assert_msg(join_within(t, NULL, TEST_WAIT_NS * 3),
		      "the waiter hangs");
	tfail_assert();
	ck_assert_uint_eq(p.taken, PSHARED_ITEMS);
	ck_assert_int_eq(pthread_mutex_lock(&p.m), 0);
	if (_i != T_DEFAULT)
		ck_assert_int_eq(pthread_mutex_lock(&p.m),
				 _i == T_ERRORCHECK ? EDEADLK : 0);
	if (_i == T_RECURSIVE)
		ck_assert_int_eq(pthread_mutex_unlock(&p.m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&p.m), 0);
	ck_assert_int_eq(pthread_cond_destroy(&p.c), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&p.m), 0);
}
END_TEST

static Suite *glibc_code_suite(void)
{
	Suite *s = suite_create("glibc's code on libtofutex-pthread's mutexes");
	TCase *tc;

	tc = tcase_create("compat");
	tcase_add_test(tc, test_compat_symbols_are_the_preloads);
	suite_add_tcase(s, tc);

	tc = tcase_create("ways");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_glibc_code_waits_for_and_wakes_ours, 0,
			    W_COUNT * T_COUNT);
	tcase_add_loop_test(tc, test_glibc_code_recursion_keeps_the_outer_level,
			    0, W_COUNT);
	tcase_add_loop_test(tc, test_glibc_code_mutual_exclusion, 0,
			    W_COUNT * T_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("rwlock compat");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_test(tc, test_compat_rwlock_symbols_are_the_preloads);
	tcase_add_test(tc, test_compat_rwlock_mutual_exclusion);
	suite_add_tcase(s, tc);

	tc = tcase_create("rwlock dlsym");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
#if defined(__x86_64__)
	tcase_add_test(tc, test_dlsym_lock_functions_are_the_preloads);
	tcase_add_test(tc, test_dlsym_rwlock_mutual_exclusion);
	tcase_add_test(tc, test_dlvsym_default_is_the_preloads);
	tcase_add_test(tc, test_dlsym_the_real_dlsym_is_the_preloads);
#endif
	tcase_add_test(tc, test_dlsym_pseudo_handles_keep_the_caller);
	suite_add_tcase(s, tc);

#if defined(__x86_64__)
	tc = tcase_create("deepbind");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_deepbind_binds_to_the_preload, 0, 2);
	tcase_add_test(tc, test_deepbind_rwlock_mutual_exclusion);
	tcase_add_loop_test(tc, test_deepbind_rwlock_try_answers, 0, 2);
	tcase_add_test(tc, test_deepbind_cond_wait_signalled);
	tcase_add_test(tc, test_dlsym_cond_wait_signalled);
	tcase_add_test(tc, test_deepbind_nested_dlopen);
	tcase_add_test(tc, test_deepbind_concurrent_dlopen);
	tcase_add_test(tc, test_deepbind_dlopen_from_a_constructor_beside_another);
	tcase_add_test(tc, test_deepbind_dlopen_after_fork_inside_a_loader);
	tcase_add_test(tc, test_deepbind_fork_beside_a_reopening_loader);
	tcase_add_test(tc, test_deepbind_function_table);
	tcase_add_test(tc, test_deepbind_dlmopen);
	tcase_add_test(tc, test_deepbind_text_relocations);
	tcase_add_test(tc, test_deepbind_dependency_and_runpath);
	tcase_add_test(tc, test_deepbind_dlopen_stack_depth);
	suite_add_tcase(s, tc);
#endif

	tc = tcase_create("pshared");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_pshared_cond_with_our_mutex, 0, T_COUNT);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(glibc_code_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
