// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread conformance, plugins loaded with RTLD_DEEPBIND
 * (under tofutex-run): a plugin's calls bind to glibc's functions first;
 * the preload's dlopen() makes every rwlock, condition variable and mutex
 * call of the plugin, and of one it loads so itself, the preload's
 * (x86-64 and arm64, where the preload interposes them): lazily or not, through
 * text relocations, through a table of function pointers, from
 * dlmopen(LM_ID_BASE), at the versions the plugin asks for (glibc's
 * condition variables before 2.3.2 stay glibc's), from two threads
 * loading at once, from a
 * constructor beside another loader, across fork() in the middle of a
 * load, with a dependency found by RUNPATH, and no deeper into the
 * thread's stack than glibc's own dlopen() goes.
 */
#include "glibc_code.h"
#include "stack_depth.h"

/* ---- rwlocks, condition variables: a plugin loaded with RTLD_DEEPBIND ---- */

/* Made the preload's on x86-64 and arm64 alone (lib/pthread/deepbind.c). */
#if defined(__x86_64__) || defined(__aarch64__)

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
 * tofutex-run(1), BUGS: what stays glibc's in a plugin loaded with
 * RTLD_DEEPBIND: a function pointer its constructor took (inside glibc's
 * dlopen(), before the preload's made its references ours), and its
 * dlsym(RTLD_NEXT) lookups; its own references are ours by then.
 */
START_TEST(test_deepbind_what_stays_glibcs)
{
	void *h = plugin_open(PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	void *(*ctor_fn)(void) =
		(void *(*)(void))deepbind_fn(h, "tfx_plugin_ctor_rwlock_fn");
	void *(*fn)(void) = (void *(*)(void))deepbind_fn(h, "tfx_plugin_rwlock_fn");
	void *(*plugin_dlsym)(void *, const char *) =
		(void *(*)(void *, const char *))deepbind_fn(h, "tfx_plugin_dlsym");
	void *next = plugin_dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");

	ck_assert(is_preloads(fn()));
	ck_assert_msg(ctor_fn() && !is_preloads(ctor_fn()),
		      "the pointer the plugin's constructor took is the preload's");
	ck_assert_msg(next && !is_preloads(next),
		      "the plugin's dlsym(RTLD_NEXT) answers the preload's");
	ck_assert(next == ctor_fn());
	dlclose(h);
}
END_TEST

#ifdef __x86_64__
/*
 * The plugin's reference to glibc's condition variables before 2.3.2
 * (pthread_cond_wait@GLIBC_2.2.5) stays glibc's, that version's: the
 * preload has no function for their objects.
 */
START_TEST(test_deepbind_old_cond_version_stays_glibcs)
{
	void *h = plugin_open(PLUGIN_NAME,
			      deepbind_mode[_i] | RTLD_LOCAL | RTLD_DEEPBIND);
	void *(*fn)(void) =
		(void *(*)(void))deepbind_fn(h, "tfx_plugin_old_cond_wait_fn");
	void *glibc = glibc_handle();
	void *old = dlvsym(glibc, "pthread_cond_wait", "GLIBC_2.2.5");

	ck_assert(old && !is_preloads(old));
	ck_assert_msg(fn() == old,
		      "the plugin's pthread_cond_wait@GLIBC_2.2.5 is %s",
		      is_preloads(fn()) ? "the preload's" : "not glibc's");
	dlclose(glibc);
	dlclose(h);
}
END_TEST
#endif

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

struct stack_dlopen {
	const char *name;
	int mode;
	void *handle;
};

static void *stack_dlopen_main(void *p)
{
	struct stack_dlopen *sd = p;

	/* One of ours, next to the program; else a bare name, searched. */
	if (!strncmp(sd->name, "libtfx-plugin-", 14))
		sd->handle = plugin_open(sd->name, sd->mode);
	else
		sd->handle = dlopen(sd->name, RTLD_NOW | sd->mode);
	return NULL;
}

/* How deep @name's dlopen() with @mode went into a fresh thread's stack. */
static size_t dlopen_stack_depth(const char *name, int mode)
{
	struct stack_dlopen sd = { .name = name, .mode = mode };
	size_t depth = stack_depth(stack_dlopen_main, &sd);

	ck_assert_ptr_nonnull(sd.handle);
	return depth;
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
	/* A bare name: the preload compares the two search paths first. */
	plain = dlopen_stack_depth("libc.so.6", 0);
	deep = dlopen_stack_depth("libc.so.6", RTLD_DEEPBIND);
	ck_assert_msg(deep <= plain + 1024,
		      "dlopen(\"libc.so.6\", RTLD_DEEPBIND) took %zu bytes of stack, a plain one %zu",
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
#endif /* __x86_64__ || __aarch64__ */

static Suite *deepbind_suite(void)
{
	Suite *s = suite_create("RTLD_DEEPBIND plugins on libtofutex-pthread");
	TCase *tc;

#if defined(__x86_64__) || defined(__aarch64__)
	tc = tcase_create("deepbind");
	tcase_set_timeout(tc, TEST_TIMEOUT_LONG);
	tcase_add_loop_test(tc, test_deepbind_binds_to_the_preload, 0, 2);
	tcase_add_test(tc, test_deepbind_what_stays_glibcs);
#ifdef __x86_64__
	tcase_add_loop_test(tc, test_deepbind_old_cond_version_stays_glibcs, 0, 2);
#endif
	tcase_add_test(tc, test_deepbind_rwlock_mutual_exclusion);
	tcase_add_loop_test(tc, test_deepbind_rwlock_try_answers, 0, 2);
	tcase_add_test(tc, test_deepbind_cond_wait_signalled);
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
	(void)tc;
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(deepbind_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
