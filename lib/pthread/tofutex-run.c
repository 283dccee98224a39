// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tofutex-run CMD [ARGS...] - run a program with its pthread mutexes and
 * condition variables on tofutex: exec CMD with libtofutex-pthread.so
 * first in LD_PRELOAD. See tofutex-run(1).
 *
 * The library is looked for next to this program (../lib relative to its
 * directory, which is where `make` puts both in build/ and where
 * `make install` puts them with the default LIBDIR), then at the LIBDIR it
 * was installed to; TOFUTEX_RUN_LIBRARY overrides both.
 *
 * A statically linked CMD has no dynamic linker to read LD_PRELOAD: it
 * would silently keep glibc's locks. tofutex-run looks at CMD's program
 * headers and, for an ELF executable without PT_INTERP, says so and runs
 * it anyway (its exit status is CMD's).
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
#include <unistd.h>

#ifndef TOFUTEX_RUN_LIBDIR
#define TOFUTEX_RUN_LIBDIR "/usr/local/lib"
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

/* Is @file a 64-bit ELF executable without a PT_INTERP header? */
static bool is_static_elf(const char *file)
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
	close(fd);
	return !interp;
}

/* The preload library's path, in @buf; NULL when there is none. */
static const char *find_library(char *buf, size_t len)
{
	const char *env = getenv("TOFUTEX_RUN_LIBRARY");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if (snprintf(buf, len, "%s/../lib/%s", dirname(self),
			     TOFUTEX_RUN_SONAME) < (int)len &&
		    access(buf, R_OK) == 0)
			return buf;
	}
	snprintf(buf, len, "%s/%s", TOFUTEX_RUN_LIBDIR, TOFUTEX_RUN_SONAME);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

int main(int argc, char **argv)
{
	char lib[PATH_MAX], cmd[PATH_MAX], *preload;
	const char *old, *path;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: %s CMD [ARGS...]\n"
			"Runs CMD with its pthread mutexes and condition variables on tofutex\n"
			"(LD_PRELOAD=%s). TOFUTEX_RUN_STATS=1: each process prints its\n"
			"tofutex statistics at exit. See tofutex-run(1).\n",
			prog, TOFUTEX_RUN_SONAME);
		return argc < 2 ? 2 : 0;
	}
	path = find_library(lib, sizeof(lib));
	if (!path) {
		fprintf(stderr, "%s: %s not found in %s (set TOFUTEX_RUN_LIBRARY)\n",
			prog, TOFUTEX_RUN_SONAME, TOFUTEX_RUN_LIBDIR);
		return 127;
	}
	/* Its constructor refuses a backend that cannot be had (start.c). */
	if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "%s: %s\n", prog, dlerror());
		return 127;
	}
	if (find_cmd(argv[1], cmd, sizeof(cmd)) && is_static_elf(cmd))
		fprintf(stderr,
			"%s: %s is statically linked: LD_PRELOAD cannot replace its pthread functions; it runs on glibc's locks\n",
			prog, cmd);

	old = getenv("LD_PRELOAD");
	if (old && *old) {
		preload = malloc(strlen(path) + strlen(old) + 2);
		if (!preload) {
			perror(prog);
			return 127;
		}
		sprintf(preload, "%s:%s", path, old);
	} else {
		preload = (char *)path;
	}
	if (setenv("LD_PRELOAD", preload, 1)) {
		perror(prog);
		return 127;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "%s: %s: %s\n", prog, argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
