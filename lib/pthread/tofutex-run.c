// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tofutex-run [--profile[=FILE]] [--] CMD [ARGS...] - run a program with
 * its pthread mutexes, condition variables and reader/writer locks on
 * tofutex: exec CMD with libtofutex-pthread.so in LD_PRELOAD (and
 * TOFUTEX_PROFILE set for --profile). See tofutex-run(1). It comes last
 * there: after the sanitizer runtime CMD is built with, if any, and after
 * the user's own LD_PRELOAD.
 *
 * The library is looked for, in this order: TOFUTEX_RUN_LIBRARY; relative
 * to this program's own location, at the path from the install's BINDIR
 * to its LIBDIR (TOFUTEX_RUN_RELDIR, e.g. ../lib/x86_64-linux-gnu), so
 * that an installed tree that was moved as a whole still works; ../lib
 * (the build tree, where `make` puts both); then the absolute LIBDIR of
 * the build (TOFUTEX_RUN_LIBDIR). The Makefile rebuilds this program when
 * LIBDIR or BINDIR change.
 *
 * The dynamic linker ignores LD_PRELOAD for a statically linked CMD (no
 * dynamic linker at all) and, with a path, for one that runs in secure-
 * execution mode (set-user-ID or set-group-ID to someone else, or with
 * file capabilities): the program would silently keep glibc's locks.
 * tofutex-run says so on stderr and runs it anyway (its exit status is
 * CMD's). A static program with libtofutex linked in keeps glibc's
 * pthread locks too, but its own tofutex_* locks run on tofutex as
 * always: the message says which of the two it is.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <tofutex.h>

#ifndef TOFUTEX_RUN_LIBDIR
#define TOFUTEX_RUN_LIBDIR "/usr/local/lib"
#endif
#ifndef TOFUTEX_RUN_RELDIR
#define TOFUTEX_RUN_RELDIR "../lib"
#endif
#define TOFUTEX_RUN_SONAME "libtofutex-pthread.so.0"

static const char *prog = "tofutex-run";

/* Where CMD is: as execvp() would find it; NULL if nowhere. */
static char *find_cmd(const char *cmd, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *p, *end;

	if (strchr(cmd, '/'))
		return snprintf(buf, len, "%s", cmd) < (int)len &&
		       access(buf, X_OK) == 0 ? buf : NULL;
	for (p = path ? path : "/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		if (snprintf(buf, len, "%.*s/%s", (int)(end - p), end == p ? "." : p,
			     cmd) >= (int)len)
			continue;
		if (end == p)
			snprintf(buf, len, "./%s", cmd);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/*
 * Does @fd's file hold @needle? A static program linked with libtofutex
 * holds the name of the variable that chooses its backend
 * (TOFUTEX_BACKEND, lib/env.c): every lock function reaches that code.
 */
static bool file_has(int fd, const char *needle)
{
	const size_t n = strlen(needle);
	char buf[65536];
	size_t have = 0;
	off_t off = 0;
	ssize_t r;

	for (;;) {
		r = pread(fd, buf + have, sizeof(buf) - have, off);
		if (r <= 0)
			return false;
		off += r;
		have += (size_t)r;
		if (memmem(buf, have, needle, n))
			return true;
		/* Keep the tail that may start a match across the reads. */
		if (have >= n) {
			memmove(buf, buf + have - (n - 1), n - 1);
			have = n - 1;
		}
	}
}

/*
 * Is @file a 64-bit ELF executable without a PT_INTERP header? If so,
 * *@tofutex says whether libtofutex is linked into it.
 */
static bool is_static_elf(const char *file, bool *tofutex)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool interp = false;
	int fd, i;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph)) {
		close(fd);
		return false;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) !=
		    sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			interp = true;
	}
	if (!interp)
		*tofutex = file_has(fd, "TOFUTEX_BACKEND");
	close(fd);
	return !interp;
}

/* Is @file this program's own dynamic linker (its PT_INTERP)? */
static bool is_own_interp(const char *file)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	unsigned long i, n = getauxval(AT_PHNUM);
	const char *interp = NULL;
	struct stat a, b;
	uintptr_t bias = 0;

	for (i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	for (i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_INTERP)
			interp = (const char *)(bias + ph[i].p_vaddr);
	return interp && !stat(interp, &a) && !stat(file, &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * The dynamic linker run as the command (ld.so [OPTION]... PROGRAM, at
 * @cmd, with @argv) honours LD_PRELOAD for PROGRAM as when it starts it
 * itself: what is checked below is PROGRAM, its path put in @cmd. False
 * when there is none to check: no PROGRAM, or a name without a slash,
 * which ld.so looks up as it looks up a library.
 */
static bool loader_program(char *const *argv, char *cmd, size_t len)
{
	static const char *const with_arg[] = {
		"--library-path", "--inhibit-rpath", "--audit", "--preload",
		"--argv0", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask",
	};
	size_t i, j;

	if (!is_own_interp(cmd))
		return true;
	for (i = 1; argv[i] && !strncmp(argv[i], "--", 2); i++)
		for (j = 0; j < sizeof(with_arg) / sizeof(with_arg[0]); j++)
			if (!strcmp(argv[i], with_arg[j]) && argv[i + 1]) {
				i++;
				break;
			}
	if (!argv[i] || !strchr(argv[i], '/'))
		return false;
	return snprintf(cmd, len, "%s", argv[i]) < (int)len;
}

/* @file's offset of the address @vaddr, from its PT_LOAD headers; -1 if none. */
static off_t elf_offset(int fd, const Elf64_Ehdr *eh, Elf64_Addr vaddr)
{
	Elf64_Phdr ph;
	int i;

	for (i = 0; i < eh->e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh->e_phoff + (Elf64_Off)i * sizeof(ph))) !=
		    sizeof(ph))
			return -1;
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			return (off_t)(ph.p_offset + (vaddr - ph.p_vaddr));
	}
	return -1;
}

/*
 * The sanitizer runtime @file needs (DT_NEEDED libasan.so.N, libtsan,
 * liblsan, libubsan, libhwasan: gcc's -fsanitize=...), in @buf; NULL if
 * none, or not a 64-bit ELF file of ours to read.
 */
static const char *sanitizer_runtime(const char *file, char *buf, size_t len)
{
	static const char *const runtime[] = {
		"libasan.so.", "libtsan.so.", "liblsan.so.", "libubsan.so.",
		"libhwasan.so.",
	};
	Elf64_Dyn dyn[512];
	Elf64_Addr strtab = 0;
	const char *found = NULL;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	ssize_t got = 0;
	off_t stroff;
	size_t i, j, n;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph))
		goto out;
	for (i = 0; i < eh.e_phnum && !got; i++)
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) ==
		    sizeof(ph) && ph.p_type == PT_DYNAMIC)
			got = pread(fd, dyn,
				    ph.p_filesz < sizeof(dyn) ? ph.p_filesz :
								sizeof(dyn),
				    (off_t)ph.p_offset);
	n = got > 0 ? (size_t)got / sizeof(dyn[0]) : 0;
	for (i = 0; i < n && dyn[i].d_tag != DT_NULL; i++)
		if (dyn[i].d_tag == DT_STRTAB)
			strtab = dyn[i].d_un.d_ptr;
	stroff = strtab ? elf_offset(fd, &eh, strtab) : -1;
	for (i = 0; stroff >= 0 && !found && i < n && dyn[i].d_tag != DT_NULL;
	     i++) {
		if (dyn[i].d_tag != DT_NEEDED ||
		    pread(fd, buf, len - 1,
			  stroff + (off_t)dyn[i].d_un.d_val) <= 0)
			continue;
		buf[len - 1] = '\0';
		for (j = 0; j < sizeof(runtime) / sizeof(runtime[0]); j++)
			if (!strncmp(buf, runtime[j], strlen(runtime[j])))
				found = buf;
	}
out:
	close(fd);
	return found;
}

/*
 * The valgrind tool that checks glibc's pthread functions themselves
 * (helgrind, drd: they wrap libc's, not ours), if @argv runs valgrind
 * with one; else NULL.
 */
static const char *pthread_checker(char **argv)
{
	const char *base = strrchr(argv[0], '/');
	int i;

	base = base ? base + 1 : argv[0];
	if (strcmp(base, "valgrind") && strcmp(base, "valgrind.bin"))
		return NULL;
	for (i = 1; argv[i] && argv[i][0] == '-'; i++)
		if (!strcmp(argv[i], "--tool=helgrind") ||
		    !strcmp(argv[i], "--tool=drd"))
			return argv[i] + 7;
	return NULL;
}

/*
 * Why the dynamic linker would ignore LD_PRELOAD for @file run by us
 * (secure-execution mode), or NULL.
 */
static const char *secure_exec_reason(const char *file)
{
	struct stat st;

	if (stat(file, &st) != 0)
		return NULL;
	if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
		return "is set-user-ID";
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) &&
	    st.st_gid != getegid())
		return "is set-group-ID";
	if (getuid() != 0 &&
	    getxattr(file, "security.capability", NULL, 0) >= 0)
		return "has file capabilities";
	return NULL;
}

/* @dir/@name in @buf if it is readable; else NULL. */
static const char *try_library(const char *dir, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", dir, TOFUTEX_RUN_SONAME) >= (int)len)
		return NULL;
	return access(buf, R_OK) == 0 ? buf : NULL;
}

/* The preload library's path, in @buf; NULL when there is none. */
static const char *find_library(char *buf, size_t len)
{
	const char *env = getenv("TOFUTEX_RUN_LIBRARY");
	char self[PATH_MAX], dir[PATH_MAX], *bindir;
	const char *rel[] = { TOFUTEX_RUN_RELDIR, "../lib" };
	ssize_t n;
	size_t i;

	/*
	 * A relative path made absolute, as the command's processes may run
	 * in other directories; a bare name is the loader's to search for.
	 */
	if (env && *env)
		return env[0] != '/' && strchr(env, '/') &&
		       len >= PATH_MAX && realpath(env, buf) ? buf : env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		bindir = dirname(self);
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
			if (snprintf(dir, sizeof(dir), "%s/%s", bindir,
				     rel[i]) < (int)sizeof(dir) &&
			    try_library(dir, buf, len))
				return buf;
	}
	return try_library(TOFUTEX_RUN_LIBDIR, buf, len);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--profile[=FILE]] [--] CMD [ARGS...]\n"
		"       %s --help | --version\n"
		"Runs CMD with its pthread mutexes, condition variables and reader/writer\n"
		"locks on tofutex (LD_PRELOAD=%s).\n"
		"  --profile[=FILE]        each process that locked something prints, at exit,\n"
		"                          its most waited-on locks (to stderr, or appended to\n"
		"                          FILE: one JSON object a line if FILE ends in .json);\n"
		"                          sets TOFUTEX_PROFILE=FILE (1: stderr)\n"
		"  TOFUTEX_PROFILE_TOP=N   ... the N most waited-on (default 10, 0: all)\n"
		"  TOFUTEX_RUN_STATS=1     each process that locked something prints its lock\n"
		"                          statistics at exit (=all: every process)\n"
		"  TOFUTEX_RUN_STATS=FILE  ... appends them to FILE instead\n"
		"  TOFUTEX_BACKEND=futex   use futex(2) even when /dev/tofutex exists\n"
		"  TOFUTEX_RUN_LIBRARY=SO  preload this library\n"
		"See tofutex-run(1).\n",
		prog, prog, TOFUTEX_RUN_SONAME);
}

/*
 * --profile[=FILE] (@arg): TOFUTEX_PROFILE for the library (profile.c),
 * FILE made absolute so that a CMD that changes directory, and its
 * children, append to the same file. 0 when set.
 */
static int set_profile(const char *arg)
{
	const char *file = arg[9] == '=' ? arg + 10 : "1";
	char abs[PATH_MAX], cwd[PATH_MAX];
	struct stat st;

	if (!*file) {
		fprintf(stderr, "%s: --profile= wants a file name\n", prog);
		return -1;
	}
	/* The library would refuse it at exit, in every process (report.h). */
	if (strcmp(file, "1") && !lstat(file, &st) && S_ISLNK(st.st_mode)) {
		fprintf(stderr, "%s: --profile=%s is a symbolic link, which the report does not follow: name the file itself\n",
			prog, file);
		return -1;
	}
	if (strcmp(file, "1") && file[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, file) < (int)sizeof(abs))
		file = abs;
	if (setenv("TOFUTEX_PROFILE", file, 1)) {
		perror(prog);
		return -1;
	}
	return 0;
}

/* Is @file an ELF file of another class than this program's (32-bit)? */
static bool is_other_elf_class(const char *file)
{
	unsigned char ident[EI_NIDENT];
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool other;

	if (fd < 0)
		return false;
	other = pread(fd, ident, sizeof(ident), 0) == sizeof(ident) &&
		!memcmp(ident, ELFMAG, SELFMAG) &&
		ident[EI_CLASS] != ELFCLASS64;
	close(fd);
	return other;
}

/*
 * What is said of the command at @cmd before it runs: statically linked,
 * in secure execution, or of another ELF class; else the sanitizer
 * runtime it needs first, in @san (@buf). False when it is to run
 * without the preload: a 32-bit program, into which the dynamic linker
 * cannot preload a 64-bit library (it would print an error of its own).
 */
static bool check_cmd(const char *cmd, const char **san, char *buf,
		      size_t len)
{
	bool tofutex = false;
	const char *why;

	if (is_static_elf(cmd, &tofutex) && tofutex)
		fprintf(stderr,
			"%s: %s is statically linked: LD_PRELOAD cannot replace its pthread functions, which stay glibc's; the tofutex locks it calls itself run on tofutex, as without %s\n",
			prog, cmd, prog);
	else if (is_static_elf(cmd, &tofutex))
		fprintf(stderr,
			"%s: %s is statically linked: LD_PRELOAD cannot replace its pthread functions; it runs on glibc's locks\n",
			prog, cmd);
	else if (is_other_elf_class(cmd)) {
		fprintf(stderr,
			"%s: %s is a 32-bit program, which a 64-bit library cannot be preloaded into: running it without the preload, on glibc's locks\n",
			prog, cmd);
		return false;
	} else if ((why = secure_exec_reason(cmd)))
		fprintf(stderr,
			"%s: %s %s: the dynamic linker ignores LD_PRELOAD for it; it runs on glibc's locks\n",
			prog, cmd, why);
	else
		*san = sanitizer_runtime(cmd, buf, len);
	return true;
}

/*
 * End tofutex-run itself once it has loaded the library (its check that
 * the library loads): without the exit handlers the library registered
 * there, which would write reports of tofutex-run's own process.
 */
static int quit(int status)
{
	fflush(NULL);
	_exit(status);
}

int main(int argc, char **argv)
{
	char lib[PATH_MAX], cmd[PATH_MAX], sanbuf[64], *preload;
	const char *old, *path, *why, *san = NULL, *runtime;
	int first = 1;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("tofutex-run (tofutex) %s\n", TOFUTEX_VERSION_STRING);
		return 0;
	}
	if (argc > first && (!strcmp(argv[first], "--profile") ||
			     !strncmp(argv[first], "--profile=", 10))) {
		if (set_profile(argv[first]))
			return 2;
		first++;
	}
	if (argc > first && !strcmp(argv[first], "--"))
		first++;
	else if (argc > first && argv[first][0] == '-') {
		fprintf(stderr, "%s: unknown option %s (a command whose name starts with '-' goes after --)\n",
			prog, argv[first]);
		usage(stderr);
		return 2;
	}
	if (first >= argc) {
		usage(stderr);
		return 2;
	}
	path = find_library(lib, sizeof(lib));
	if (!path) {
		fprintf(stderr, "%s: %s is neither in %s nor next to %s (set TOFUTEX_RUN_LIBRARY)\n",
			prog, TOFUTEX_RUN_SONAME, TOFUTEX_RUN_LIBDIR, prog);
		return 127;
	}
	/* The dynamic linker splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(path, " :\t\n")) {
		fprintf(stderr, "%s: %s: LD_PRELOAD cannot name a library whose path holds a space or a colon; install it elsewhere or set TOFUTEX_RUN_LIBRARY to a path without one\n",
			prog, path);
		return 127;
	}
	/* Its constructor refuses a backend that cannot be had (start.c). */
	if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "%s: %s\n", prog, dlerror());
		return 127;
	}
	if (find_cmd(argv[first], cmd, sizeof(cmd)) &&
	    loader_program(argv + first, cmd, sizeof(cmd)) &&
	    !check_cmd(cmd, &san, sanbuf, sizeof(sanbuf))) {
		execvp(argv[first], argv + first);
		fprintf(stderr, "%s: %s: %s\n", prog, argv[first],
			strerror(errno));
		return quit(errno == ENOENT ? 127 : 126);
	}

	why = pthread_checker(argv + first);
	if (why) {
		fprintf(stderr,
			"%s: %s checks glibc's pthread functions, which the preload would replace: running it without the preload\n",
			prog, why);
		execvp(argv[first], argv + first);
		fprintf(stderr, "%s: %s: %s\n", prog, argv[first],
			strerror(errno));
		return quit(errno == ENOENT ? 127 : 126);
	}
	/*
	 * The order of LD_PRELOAD: a sanitizer runtime CMD needs first (ASan
	 * refuses to start behind another library; TSan must see the lock
	 * calls before us, and passes them on to ours), then the user's own
	 * interposers, whose calls go on to ours (RTLD_NEXT), then ours.
	 */
	old = getenv("LD_PRELOAD");
	runtime = san ? san : "";
	preload = malloc(strlen(runtime) + (old ? strlen(old) : 0) +
			 strlen(path) + 3);
	if (!preload) {
		perror(prog);
		return quit(127);
	}
	sprintf(preload, "%s%s%s%s%s", runtime, *runtime ? ":" : "",
		old ? old : "", old && *old ? ":" : "", path);
	if (setenv("LD_PRELOAD", preload, 1)) {
		perror(prog);
		return quit(127);
	}
	execvp(argv[first], argv + first);
	fprintf(stderr, "%s: %s: %s\n", prog, argv[first], strerror(errno));
	return quit(errno == ENOENT ? 127 : 126);
}
