// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread keeps glibc's SDT probe points: the preload library
 * (from LD_PRELOAD, under tofutex-run) carries a .note.stapsdt note
 * (what `readelf -n` lists) for each probe glibc 2.36's nptl has on the
 * mutex, condition variable and rwlock functions, with glibc's provider
 * (libc), name and number of arguments, so that scripts written against
 * a glibc built with SystemTap probes find them under tofutex-run. And
 * they fire where glibc's do: uprobes (tracefs, uprobe_events) at each
 * site of a probe count this thread's hits (root only, and a kernel with
 * uprobes; else SKIPPED): mutex_acquired once per lock, not for a
 * recursive mutex's relock, mutex_init and mutex_clocklock_entry not
 * for a call that fails glibc's checks before them, and lll_lock_wait
 * for a lock that waits, not for one that does not.
 */
#include <elf.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "../common.h"

#define NT_STAPSDT	3
#define MAX_SITES	8

/* glibc 2.36's LIBC_PROBE()s on the functions the preload replaces. */
static const struct {
	const char *name;
	int args;
} glibc_probes[] = {
	{ "mutex_init", 1 }, { "mutex_destroy", 1 }, { "mutex_entry", 1 },
	{ "mutex_acquired", 1 }, { "mutex_release", 1 },
	{ "mutex_timedlock_entry", 2 }, { "mutex_clocklock_entry", 3 },
	{ "mutex_timedlock_acquired", 1 },
	{ "cond_init", 2 }, { "cond_destroy", 1 }, { "cond_wait", 2 },
	{ "cond_signal", 1 }, { "cond_broadcast", 1 },
	{ "rdlock_entry", 1 }, { "rdlock_acquire_read", 1 },
	{ "wrlock_entry", 1 }, { "wrlock_acquire_write", 1 },
	{ "rwlock_unlock", 1 }, { "rwlock_destroy", 1 },
	{ "lll_lock_wait", 1 },
};

#define N_PROBES (sizeof(glibc_probes) / sizeof(glibc_probes[0]))

/* The number of space-separated arguments in a stapsdt argument string. */
static int count_args(const char *s)
{
	int n = 0;
	bool in = false;

	for (; *s; s++) {
		if (*s != ' ' && !in)
			n++;
		in = *s != ' ';
	}
	return n;
}

/* The preload's probe notes: which were found, and where one is. */
struct notes {
	bool found[N_PROBES];
	const char *site_name;		/* the probe whose sites are kept */
	uint64_t sites[MAX_SITES];	/* their addresses (link-time) */
	unsigned int n_sites;
};

/* Mark in @nt each of glibc_probes the note at @desc describes. */
static void note_seen(const char *desc, size_t len, struct notes *nt)
{
	/* pc, base, semaphore, then provider, name and arguments. */
	const char *provider = desc + 3 * 8, *name, *args;
	size_t i;

	ck_assert_uint_gt(len, 3 * 8 + 3);
	name = provider + strlen(provider) + 1;
	args = name + strlen(name) + 1;
	ck_assert_msg(args < desc + len, "truncated note");
	for (i = 0; i < N_PROBES; i++) {
		if (strcmp(name, glibc_probes[i].name))
			continue;
		ck_assert_str_eq(provider, "libc");
		ck_assert_msg(count_args(args) == glibc_probes[i].args,
			      "%s: arguments %s", name, args);
		nt->found[i] = true;
	}
	if (nt->site_name && !strcmp(name, nt->site_name) &&
	    nt->n_sites < MAX_SITES)
		memcpy(&nt->sites[nt->n_sites++], desc, 8);
}

/* Walk the notes of section @sh of the file mapped at @base. */
static void section_notes(const char *base, const Elf64_Shdr *sh,
			  struct notes *nt)
{
	size_t off = 0;

	while (off + sizeof(Elf64_Nhdr) <= sh->sh_size) {
		const Elf64_Nhdr *nh = (const void *)(base + sh->sh_offset + off);
		const char *name = (const char *)(nh + 1);
		const char *desc = name + ((nh->n_namesz + 3) & ~3u);

		if (nh->n_type == NT_STAPSDT && !strcmp(name, "stapsdt"))
			note_seen(desc, nh->n_descsz, nt);
		off += sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) +
		       ((nh->n_descsz + 3) & ~3u);
	}
}

/* The preload's path, from LD_PRELOAD, into @lib. */
static void preload_path(char *lib, size_t len)
{
	const char *env = getenv("LD_PRELOAD");
	char rel[PATH_MAX];

	ck_assert_msg(env && *env, "run under tofutex-run");
	snprintf(rel, sizeof(rel), "%.*s", (int)strcspn(env, ": "), env);
	ck_assert_msg(realpath(rel, lib) && strlen(lib) < len, "%s", rel);
}

/*
 * Read the notes of @lib into @nt; with @offsets, turn the sites'
 * addresses into file offsets (what a uprobe is placed at).
 */
static void read_notes(const char *lib, struct notes *nt, bool offsets)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;
	struct stat st;
	unsigned int i, j;
	char *map;
	int fd;

	fd = open(lib, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", lib, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert(map != MAP_FAILED);
	close(fd);
	eh = (const void *)map;
	ck_assert(!memcmp(eh->e_ident, ELFMAG, SELFMAG));
	sh = (const void *)(map + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_NOTE)
			section_notes(map, &sh[i], nt);
	ph = (const void *)(map + eh->e_phoff);
	for (j = 0; offsets && j < nt->n_sites; j++)
		for (i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD &&
			    nt->sites[j] >= ph[i].p_vaddr &&
			    nt->sites[j] < ph[i].p_vaddr + ph[i].p_filesz) {
				nt->sites[j] += ph[i].p_offset - ph[i].p_vaddr;
				break;
			}
	munmap(map, (size_t)st.st_size);
}

START_TEST(test_glibc_probe_notes_in_preload)
{
	struct notes nt = { .site_name = NULL };
	char lib[PATH_MAX];
	size_t i;

	preload_path(lib, sizeof(lib));
	read_notes(lib, &nt, false);
	for (i = 0; i < N_PROBES; i++)
		ck_assert_msg(nt.found[i], "%s: no libc:%s probe note", lib,
			      glibc_probes[i].name);
}
END_TEST

/* tracefs, mounted by us if it was not: its path, or NULL. */
static const char *tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[PATH_MAX];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/uprobe_events", dirs[i]);
		if (access(path, W_OK) == 0)
			return dirs[i];
	}
	if (mount("nodev", dirs[0], "tracefs", 0, NULL) == 0 &&
	    access("/sys/kernel/tracing/uprobe_events", W_OK) == 0)
		return dirs[0];
	return NULL;
}

/* Write @text to tracefs file @dir/@file (appending); errno or 0. */
static int trace_write(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

/*
 * The lines of trace buffer @dir/@file this thread wrote: its task
 * column is COMM-TID.
 */
static unsigned long trace_lines_of_self(const char *dir, const char *file)
{
	char path[PATH_MAX], line[1024], me[32];
	unsigned long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(me, sizeof(me), "-%d ", (int)gettid());
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
	if (line[0] != '#' && strstr(line, me))
			n++;
	fclose(f);
	return n;
}

/*
 * How often the sites of glibc's probe @probe fired in this thread
 * while @action ran (without ck_assert(); nonzero: it failed), counted by uprobes at those sites tracing into a
 * tracefs instance of our own; -1: no tracefs uprobes (root, kernel
 * with CONFIG_UPROBE_EVENTS), the caller is SKIPPED.
 */
static long probe_fired(const char *probe, int (*action)(void))
{
	struct notes nt = { .site_name = probe };
	char lib[PATH_MAX], name[32], def[PATH_MAX + 128], en[128], inst[64];
	const char *dir = tracefs();
	unsigned long hits;
	unsigned int i;
	int err = 0;

	if (!dir || trace_write(dir, "uprobe_events", "") != 0)
		return -1;
	preload_path(lib, sizeof(lib));
	read_notes(lib, &nt, true);
	ck_assert_msg(nt.n_sites > 0, "no %s probe", probe);
	/* Group tfxsdt, events tfx<pid>_<site>: another run's are apart. */
	snprintf(name, sizeof(name), "tfx%d_", (int)getpid());
	snprintf(inst, sizeof(inst), "instances/tfx%d", (int)getpid());
	snprintf(def, sizeof(def), "%s/%s", dir, inst);
	ck_assert_msg(mkdir(def, 0700) == 0, "%s: %s", def, strerror(errno));
	for (i = 0; i < nt.n_sites; i++) {
		snprintf(def, sizeof(def), "p:tfxsdt/%s%u %s:0x%llx\n", name,
			 i, lib, (unsigned long long)nt.sites[i]);
		ck_assert_int_eq(trace_write(dir, "uprobe_events", def), 0);
	}
	/*
	 * No ck_assert() from here to the read: Check's own bookkeeping
	 * locks a mutex (ours) in each.
	 */
	for (i = 0; i < nt.n_sites; i++) {
		snprintf(en, sizeof(en), "%s/events/tfxsdt/%s%u/enable", inst,
			 name, i);
		err |= trace_write(dir, en, "1");
	}
	err |= action();
	for (i = 0; i < nt.n_sites; i++) {
		snprintf(en, sizeof(en), "%s/events/tfxsdt/%s%u/enable", inst,
			 name, i);
		err |= trace_write(dir, en, "0");
	}
	ck_assert_int_eq(err, 0);
	snprintf(en, sizeof(en), "%s/trace", inst);
	hits = trace_lines_of_self(dir, en);
	snprintf(def, sizeof(def), "%s/%s", dir, inst);
	ck_assert_msg(rmdir(def) == 0, "%s: %s", def, strerror(errno));
	for (i = 0; i < nt.n_sites; i++) {
		snprintf(def, sizeof(def), "-:tfxsdt/%s%u\n", name, i);
		ck_assert_int_eq(trace_write(dir, "uprobe_events", def), 0);
	}
	return (long)hits;
}

#define SKIP_IF_NO_UPROBES(hits) do {					\
	if ((hits) < 0) {						\
		printf("SKIPPED: %s: no writable tracefs uprobe_events (root, CONFIG_UPROBE_EVENTS)\n", __func__); \
		return;							\
	}								\
} while (0)

#define ROUNDS	5

static int lock_rounds(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int i, err = 0;

	for (i = 0; i < ROUNDS; i++) {
		err |= pthread_mutex_lock(&m);
		err |= pthread_mutex_unlock(&m);
	}
	return err;
}

START_TEST(test_uprobe_on_mutex_acquired_fires)
{
	long hits = probe_fired("mutex_acquired", lock_rounds);

	SKIP_IF_NO_UPROBES(hits);
	ck_assert_int_eq(hits, ROUNDS);
}
END_TEST

/* A RECURSIVE mutex locked twice, by each lock call, unlocked twice. */
static int relock(int (*lock)(pthread_mutex_t *))
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int err;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	err = pthread_mutex_init(&m, &a);
	err |= lock(&m);
	err |= lock(&m);
	err |= pthread_mutex_unlock(&m);
	err |= pthread_mutex_unlock(&m);
	err |= pthread_mutex_destroy(&m);
	pthread_mutexattr_destroy(&a);
	return err;
}

static int timedlock(pthread_mutex_t *m)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec++;
	return pthread_mutex_timedlock(m, &ts);
}

static int relock_lock(void)
{
	return relock(pthread_mutex_lock);
}

static int relock_timed(void)
{
	return relock(timedlock);
}

/* glibc's recursive relock bumps its count and returns before the probe. */
START_TEST(test_uprobe_recursive_relock_not_acquired)
{
	long hits = probe_fired("mutex_acquired", relock_lock);

	SKIP_IF_NO_UPROBES(hits);
	ck_assert_int_eq(hits, 1);
	ck_assert_int_eq(probe_fired("mutex_timedlock_acquired", relock_timed), 1);
}
END_TEST

/* A mutex_init that fails (robust and priority-protect: ENOTSUP). */
static int init_fails(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int err;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	err = pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	return err != ENOTSUP;
}

/* A clocklock on a clock a deadline cannot be on: EINVAL. */
static int clocklock_bad_clock(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = { .tv_sec = 0 };

	return pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts) !=
	       EINVAL;
}

/* Holds the mutex until the thread that contends for it sleeps. */
struct holder {
	pthread_mutex_t *m;
	uint32_t waiter;
	int err;
};

static void *hold_until_asleep(void *arg)
{
	struct holder *h = arg;
	bool asleep;

	h->err = pthread_mutex_lock(h->m);
	WAIT_UNTIL(asleep, thread_state(h->waiter) == 'S', TEST_WAIT_NS);
	h->err |= !asleep;
	h->err |= pthread_mutex_unlock(h->m);
	return NULL;
}

/* This thread waits once for a mutex another thread holds. */
static int contended_lock(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct holder h = { .m = &m, .waiter = (uint32_t)gettid() };
	pthread_t t;
	int err;

	err = pthread_mutex_lock(&m);
	err |= pthread_create(&t, NULL, hold_until_asleep, &h);
	err |= pthread_mutex_unlock(&m);
	/* The holder has it once it is no longer free (or it failed). */
	while (!err && pthread_mutex_trylock(&m) == 0) {
		pthread_mutex_unlock(&m);
		sched_yield();
	}
	err |= pthread_mutex_lock(&m);
	err |= pthread_mutex_unlock(&m);
	err |= pthread_join(t, NULL);
	return err | h.err;
}

/*
 * lll_lock_wait, which contention scripts count: for a lock that waits,
 * not for one that does not.
 */
START_TEST(test_uprobe_lll_lock_wait_when_contended)
{
	long hits = probe_fired("lll_lock_wait", lock_rounds);

	SKIP_IF_NO_UPROBES(hits);
	ck_assert_int_eq(hits, 0);
	ck_assert_int_ge(probe_fired("lll_lock_wait", contended_lock), 1);
}
END_TEST

/* glibc fires these after its checks: not for a call that fails them. */
START_TEST(test_uprobe_not_before_checks)
{
	long hits = probe_fired("mutex_init", init_fails);

	SKIP_IF_NO_UPROBES(hits);
	ck_assert_int_eq(hits, 0);
	ck_assert_int_eq(probe_fired("mutex_clocklock_entry",
				     clocklock_bad_clock), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("libtofutex-pthread probe points");
	TCase *tc = tcase_create("probes");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_glibc_probe_notes_in_preload);
	tcase_add_test(tc, test_uprobe_on_mutex_acquired_fires);
	tcase_add_test(tc, test_uprobe_recursive_relock_not_acquired);
	tcase_add_test(tc, test_uprobe_not_before_checks);
	tcase_add_test(tc, test_uprobe_lll_lock_wait_when_contended);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
