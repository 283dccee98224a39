// SPDX-License-Identifier: GPL-2.0
/*
 * libtofutex-pthread keeps glibc's SDT probe points: the preload library
 * (from LD_PRELOAD, under tofutex-run) carries a .note.stapsdt note
 * (what `readelf -n` lists) for each probe glibc 2.36's nptl has on the
 * mutex, condition variable and rwlock functions, with glibc's provider
 * (libc), name and number of arguments, so that scripts written against
 * a glibc built with SystemTap probes find them under tofutex-run.
 */
#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "../common.h"

#define NT_STAPSDT	3

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

/* Mark in @found each of glibc_probes the note at @desc describes. */
static void note_seen(const char *desc, size_t len, bool *found)
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
		found[i] = true;
	}
}

/* Walk the notes of section @sh of the file mapped at @base. */
static void section_notes(const char *base, const Elf64_Shdr *sh, bool *found)
{
	size_t off = 0;

	while (off + sizeof(Elf64_Nhdr) <= sh->sh_size) {
		const Elf64_Nhdr *nh = (const void *)(base + sh->sh_offset + off);
		const char *name = (const char *)(nh + 1);
		const char *desc = name + ((nh->n_namesz + 3) & ~3u);

		if (nh->n_type == NT_STAPSDT && !strcmp(name, "stapsdt"))
			note_seen(desc, nh->n_descsz, found);
		off += sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) +
		       ((nh->n_descsz + 3) & ~3u);
	}
}

START_TEST(test_glibc_probe_notes_in_preload)
{
	const char *env = getenv("LD_PRELOAD");
	char lib[PATH_MAX];
	bool found[N_PROBES] = { false };
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	struct stat st;
	char *map;
	size_t i;
	int fd;

	ck_assert_msg(env && *env, "run under tofutex-run");
	snprintf(lib, sizeof(lib), "%.*s", (int)strcspn(env, ": "), env);
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
			section_notes(map, &sh[i], found);
	for (i = 0; i < N_PROBES; i++)
		ck_assert_msg(found[i], "%s: no libc:%s probe note", lib,
			      glibc_probes[i].name);
	munmap(map, (size_t)st.st_size);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("libtofutex-pthread probe points");
	TCase *tc = tcase_create("probes");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_glibc_probe_notes_in_preload);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
