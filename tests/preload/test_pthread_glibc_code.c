// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, glibc's own code on the preload's
 * mutexes (under tofutex-run). Five ways a program reaches glibc's mutex
 * functions besides the names the preload replaces:
 *
 *   compat    glibc's __pthread_mutex_* at GLIBC_2.2.5, which older
 *             binaries call: the preload exports them, so they are ours
 *   dlsym     pthread_mutex_lock() taken with dlsym() from a
 *             dlopen("libpthread.so.0") handle (or libc.so.6's, where
 *             the stub is not installed): the preload's dlsym() hands
 *             out its own (x86-64, arm64), elsewhere glibc's
 *   deepbind  a plugin loaded with RTLD_DEEPBIND (plugin_deepbind.c):
 *             its calls bind to glibc first; the preload's dlopen()
 *             makes them its own (x86-64, arm64), elsewhere they are glibc's
 *   newlm     pthread_mutex_lock() of another copy of glibc, in a
 *             namespace of dlmopen(LM_ID_NEWLM): glibc's code, always
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
 * on a handle of glibc (x86-64 and arm64, where the preload interposes them), while
 * RTLD_DEFAULT and RTLD_NEXT still answer for the object that calls them
 * (plugin_dlnext.c). A plugin loaded with RTLD_DEEPBIND is
 * test_pthread_deepbind.c's.
 */
#include "glibc_code.h"

/*
 * glibc's versions of the names looked up below: x86-64's first glibc
 * was 2.2.5; arm64's was 2.17, where every older name is at GLIBC_2.17.
 */
#if defined(__aarch64__)
#define V_BASE "GLIBC_2.17"
#define V_COND "GLIBC_2.17"
#define V_2_3_4 "GLIBC_2.17"
#define V_2_12 "GLIBC_2.17"
#else
#define V_BASE "GLIBC_2.2.5"
#define V_COND "GLIBC_2.3.2"
#define V_2_3_4 "GLIBC_2.3.4"
#define V_2_12 "GLIBC_2.12"
#endif

enum { W_COMPAT, W_DLSYM, W_DEEPBIND, W_NEWLM, W_COUNT };
static const char *const way_name[W_COUNT] = {
	"compat", "dlsym", "deepbind", "newlm",
};

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



/* The lock and unlock a program gets the way @w. */
static struct way way_get(int w)
{
	struct way f = { NULL, NULL };
	pthread_mutex_t probe = PTHREAD_MUTEX_INITIALIZER;
	void *h;

	switch (w) {
	case W_COMPAT:
		f.lock = (mutex_fn)dlvsym(RTLD_DEFAULT, "__pthread_mutex_lock",
					  V_BASE);
		f.unlock = (mutex_fn)dlvsym(RTLD_DEFAULT,
					    "__pthread_mutex_unlock",
					    V_BASE);
		break;
	case W_DLSYM:
		h = glibc_handle();
		f.lock = (mutex_fn)dlsym(h, "pthread_mutex_lock");
		f.unlock = (mutex_fn)dlsym(h, "pthread_mutex_unlock");
#if defined(__x86_64__) || defined(__aarch64__)
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
#if defined(__x86_64__) || defined(__aarch64__)
		/* Our lock writes our TID: the preload's code runs. */
		ck_assert_int_eq(probe.__data.__lock, test_gettid());
#else
		/* glibc's lock writes 1, not our TID: glibc's code runs. */
		ck_assert_int_eq(probe.__data.__lock, 1);
#endif
		ck_assert_int_eq(f.unlock(&probe), 0);
		break;
	case W_NEWLM:
		/* Another copy of glibc, in a namespace of its own. */
		h = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW);
		ck_assert_msg(h, "dlmopen: %s", dlerror());
		f.lock = (mutex_fn)dlsym(h, "pthread_mutex_lock");
		f.unlock = (mutex_fn)dlsym(h, "pthread_mutex_unlock");
		ck_assert(f.lock && f.unlock);
		ck_assert_int_eq(f.lock(&probe), 0);
		ck_assert_int_eq(probe.__data.__lock, 1);
		ck_assert_int_eq(f.unlock(&probe), 0);
		break;
	}
	ck_assert(f.lock && f.unlock);
	return f;
}

/*
 * @name, which glibc has only as a compat symbol, is not found by dlsym()
 * (an unversioned lookup takes no compat version), in the global scope
 * or on the program's handle, as with glibc alone.
 */
static void compat_not_found_unversioned(const char *name)
{
	void *self = dlopen(NULL, RTLD_NOW);

	ck_assert_msg(!dlsym(RTLD_DEFAULT, name),
		      "dlsym(RTLD_DEFAULT) finds %s, a compat symbol", name);
	ck_assert(self);
	ck_assert_msg(!dlsym(self, name),
		      "dlsym(dlopen(NULL)) finds %s, a compat symbol", name);
	dlclose(self);
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
		fn = dlvsym(RTLD_DEFAULT, names[i], V_BASE);
		ck_assert_msg(fn && is_preloads(fn),
			      "%s@" V_BASE " is not the preload's", names[i]);
		compat_not_found_unversioned(names[i]);
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

/* The mutex plugin_register.c's constructor registers under. */
pthread_mutex_t tfx_registry = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/*
 * A plugin loaded with RTLD_DEEPBIND while its loader holds a RECURSIVE
 * mutex, whose constructor (glibc's functions) locks and unlocks it once
 * more: the loader's level still holds it until the loader unlocks.
 */
START_TEST(test_deepbind_constructor_nests_in_a_held_recursive_mutex)
{
	void *h;
	int *registered;

	ck_assert_int_eq(pthread_mutex_lock(&tfx_registry), 0);
	h = plugin_open(PLUGIN_REGISTER, RTLD_LOCAL | RTLD_DEEPBIND);
	registered = dlsym(h, "tfx_registered");
	ck_assert(registered);
	ck_assert_int_eq(*registered, 0);
	ck_assert_msg(trylock_other(&tfx_registry) == EBUSY,
		      "another thread took a held RECURSIVE mutex");
	ck_assert_int_eq(pthread_mutex_unlock(&tfx_registry), 0);
	ck_assert_int_eq(trylock_other(&tfx_registry), 0);
	dlclose(h);
}
END_TEST

/* ---- rwlocks: glibc's compat names ---- */


/* glibc's compat name @name@GLIBC_2.2.5 as a program bound to it gets it. */
static void *rwlock_compat(const char *name)
{
	void *f = dlvsym(RTLD_DEFAULT, name, V_BASE);

	ck_assert_msg(f, "%s@" V_BASE ": %s", name, dlerror());
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

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_msg(is_preloads(rwlock_compat(names[i])),
			      "%s@" V_BASE " is not the preload's", names[i]);
		compat_not_found_unversioned(names[i]);
	}
}
END_TEST


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

/* Interposed on x86-64 and arm64 alone (lib/pthread/dlsym.c). */
#if defined(__x86_64__) || defined(__aarch64__)

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
		fn = dlvsym(h[j], "pthread_rwlock_wrlock", V_BASE);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(pthread_rwlock_wrlock) is not the preload's");
		fn = dlvsym(h[j], "__pthread_rwlock_rdlock", V_BASE);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(__pthread_rwlock_rdlock) is not the preload's");
		fn = dlvsym(h[j], "__pthread_mutex_lock", V_BASE);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(__pthread_mutex_lock) is not the preload's");
		fn = dlvsym(h[j], "pthread_cond_wait", V_COND);
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
		{ "pthread_cond_broadcast", V_COND },
		{ "pthread_mutex_timedlock", V_BASE },
		{ "pthread_mutex_timedlock", "GLIBC_2.34" },
		{ "pthread_mutex_consistent", V_2_12 },
	};
	unsigned int i;
	void *fn;

	for (i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		fn = dlvsym(RTLD_DEFAULT, found[i][0], found[i][1]);
		ck_assert_msg(fn && is_preloads(fn),
			      "dlvsym(RTLD_DEFAULT, %s, %s) is not the preload's",
			      found[i][0], found[i][1]);
	}
	ck_assert(!is_preloads(dlvsym(RTLD_DEFAULT, "malloc", V_BASE)));
	/* Both the preload's, not always one address (tofutex-run(1), BUGS). */
	fn = dlsym(RTLD_DEFAULT, "pthread_mutex_timedlock");
	ck_assert(fn && is_preloads(fn));
}
END_TEST

/*
 * Where the two lookups of one replaced function differ in address
 * (tofutex-run(1), BUGS): at a version of glibc's older than its default
 * one for the name (pthread_rwlock_timedwrlock@GLIBC_2.2.5, where
 * @@GLIBC_2.34 is the default), dlvsym() with RTLD_DEFAULT finds the
 * preload's entry that jumps to its function, not the function dlsym()
 * finds; at the default version, and for a name glibc has at one version
 * alone, it is that function; on a handle of glibc every version gives
 * the address dlsym() gives there. Either way the call is the preload's:
 * a lock through the older version's entry leaves the preload's word (the
 * holder's TID; glibc's lock would write 1, or its rwlock's phase bits).
 * (Names this program does not call: RTLD_DEFAULT would answer with its
 * own PLT entry.)
 */
START_TEST(test_dlvsym_older_version_is_another_address)
{
	static const char *const moved[][3] = {
		{ "pthread_rwlock_timedwrlock", V_BASE, "GLIBC_2.34" },
		{ "pthread_mutex_timedlock", V_BASE, "GLIBC_2.34" },
		{ "pthread_rwlock_clockrdlock", "GLIBC_2.30", "GLIBC_2.34" },
		{ "dlmopen", V_2_3_4, "GLIBC_2.34" },
	};
	static const char *const one[][2] = {
		{ "pthread_cond_broadcast", V_COND },
		{ "pthread_mutex_lock", V_BASE },
	};
	int (*timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*timedlock)(pthread_mutex_t *, const struct timespec *);
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	void *h = glibc_handle(), *fn, *old, *dflt;
	struct timespec ts;
	unsigned int i;

	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		fn = dlsym(RTLD_DEFAULT, moved[i][0]);
		old = dlvsym(RTLD_DEFAULT, moved[i][0], moved[i][1]);
		dflt = dlvsym(RTLD_DEFAULT, moved[i][0], moved[i][2]);
		ck_assert_msg(fn && is_preloads(fn) && old && is_preloads(old) &&
			      dflt && is_preloads(dflt),
			      "%s: not the preload's at every version", moved[i][0]);
		ck_assert_msg(old != fn, "%s@%s: the address dlsym() gives",
			      moved[i][0], moved[i][1]);
		ck_assert_msg(dflt == fn, "%s@@%s: not the address dlsym() gives",
			      moved[i][0], moved[i][2]);
		if (strncmp(moved[i][0], "pthread_", 8))
			continue;
		fn = dlsym(h, moved[i][0]);
		old = dlvsym(h, moved[i][0], moved[i][1]);
		ck_assert_msg(fn && is_preloads(fn) && old == fn,
			      "%s@%s on glibc's handle: not the address dlsym() gives there",
			      moved[i][0], moved[i][1]);
	}
	for (i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		fn = dlsym(RTLD_DEFAULT, one[i][0]);
		ck_assert_msg(fn && is_preloads(fn) &&
			      dlvsym(RTLD_DEFAULT, one[i][0], one[i][1]) == fn,
			      "%s@@%s: not the address dlsym() gives",
			      one[i][0], one[i][1]);
	}
	timedwrlock = dlvsym(RTLD_DEFAULT, "pthread_rwlock_timedwrlock",
			     V_BASE);
	ts = realtime_in(TEST_WAIT_NS);
	ck_assert_int_eq(timedwrlock(&rw, &ts), 0);
	ck_assert_uint_eq(word_load(&rw.__data.__readers), test_gettid());
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	timedlock = dlvsym(RTLD_DEFAULT, "pthread_mutex_timedlock",
			   V_BASE);
	ts = realtime_in(TEST_WAIT_NS);
	ck_assert_int_eq(timedlock(&m, &ts), 0);
	ck_assert_uint_eq(word_load((uint32_t *)&m.__data.__lock),
			  test_gettid());
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	dlclose(h);
}
END_TEST

/*
 * "The real dlsym", as interposers find it (dlvsym(RTLD_NEXT, "dlsym",
 * version), or dlsym() on a handle of glibc), is the preload's at every
 * version glibc has, and so are dlvsym, dlopen and dlmopen; the lock
 * functions it finds on glibc's handle are the preload's (x86-64 and arm64, where
 * they are interposed).
 */
START_TEST(test_dlsym_the_real_dlsym_is_the_preloads)
{
#if defined(__x86_64__) || defined(__aarch64__)
	static const char *const found[][2] = {
		{ "dlsym", "GLIBC_2.34" }, { "dlsym", V_BASE },
		{ "dlvsym", "GLIBC_2.34" }, { "dlvsym", V_BASE },
		{ "dlopen", "GLIBC_2.34" }, { "dlopen", V_BASE },
		{ "dlmopen", "GLIBC_2.34" }, { "dlmopen", V_2_3_4 },
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
							 V_BASE);
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
#endif /* __x86_64__ || __aarch64__ */


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

#if defined(__x86_64__) || defined(__aarch64__)

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
	ck_assert(is_preloads(dlvsym(h, "pthread_cond_wait", V_COND)));
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
#endif

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

/* Another thread's trylock of @arg, unlocked again at once if it took it. */
static void *pshared_trylocker(void *arg)
{
	pthread_mutex_t *m = arg;
	int err = pthread_mutex_trylock(m);

	if (!err)
		pthread_mutex_unlock(m);
	return (void *)(intptr_t)err;
}

struct pshared_probe {
	pthread_mutex_t *m;
	uint32_t waiter;
	_Atomic int err;
};

/* While the main thread waits: try the mutex, once it is asleep. */
static void *pshared_prober(void *arg)
{
	struct pshared_probe *p = arg;
	void *ret;
	pthread_t t;

	if (!thread_asleep_within(&p->waiter) ||
	    pthread_create(&t, NULL, pshared_trylocker, p->m)) {
		p->err = -1;
		return NULL;
	}
	pthread_join(t, &ret);
	p->err = (int)(intptr_t)ret;
	return NULL;
}

/*
 * tofutex-run(1), BUGS: glibc's wait on a process-shared condition
 * variable releases a RECURSIVE mutex held at two levels entirely (as the
 * replaced wait does): another thread's trylock during the wait takes it,
 * where glibc's own mutex stays held (EBUSY). The levels are the waiter's
 * again when the wait ends.
 */
START_TEST(test_pshared_cond_releases_recursive_entirely)
{
	pthread_mutex_t m;
	pthread_cond_t c;
	pthread_condattr_t a;
	struct pshared_probe p = { .m = &m, .waiter = test_gettid(),
				   .err = -2 };
	struct timespec ts;
	pthread_t t;

	mutex_make(&m, T_RECURSIVE);
	pthread_condattr_init(&a);
	pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_cond_init(&c, &a), 0);
	pthread_condattr_destroy(&a);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, pshared_prober, &p), 0);
	ts = realtime_in(500 * NSEC_PER_MSEC);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	ck_assert_msg(p.err == 0,
		      "a trylock during the wait returned %d, not 0", p.err);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(pthread_cond_destroy(&c), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
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
	tcase_add_test(tc, test_deepbind_constructor_nests_in_a_held_recursive_mutex);
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
#if defined(__x86_64__) || defined(__aarch64__)
	tcase_add_test(tc, test_dlsym_lock_functions_are_the_preloads);
	tcase_add_test(tc, test_dlsym_rwlock_mutual_exclusion);
	tcase_add_test(tc, test_dlvsym_default_is_the_preloads);
	tcase_add_test(tc, test_dlvsym_older_version_is_another_address);
	tcase_add_test(tc, test_dlsym_the_real_dlsym_is_the_preloads);
#endif
#if defined(__x86_64__) || defined(__aarch64__)
	tcase_add_test(tc, test_dlsym_cond_wait_signalled);
#endif
	tcase_add_test(tc, test_dlsym_pseudo_handles_keep_the_caller);
	suite_add_tcase(s, tc);



	tc = tcase_create("pshared");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_pshared_cond_with_our_mutex, 0, T_COUNT);
	tcase_add_test(tc, test_pshared_cond_releases_recursive_entirely);
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
