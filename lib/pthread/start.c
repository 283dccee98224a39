// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - the checks made when the library is loaded, before
 * the program's own constructors run.
 *
 * A backend that cannot be had: with TOFUTEX_BACKEND=module and no usable
 * module, libtofutex's calls that need the module fail with the error of
 * opening it, which no pthread function may return (pthread_mutex_lock()
 * does not fail with ENOENT) and which almost no program checks. So the
 * process does not start: one line on stderr says why, and it exits with
 * status 127, as a program that could not be run. tofutex-run loads the
 * library before it runs the program, so it stops there with the same
 * line (and only the program reports a TOFUTEX_* value that is not valid,
 * env.c). Without the variable, or with TOFUTEX_BACKEND=auto, a missing
 * module means the futex backend, chosen on first use as usual.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"
#include "str.h"

/*
 * Was this library loaded with the program (LD_PRELOAD) rather than by
 * dlopen()? The objects loaded with the program come first in the
 * loader's list, preloaded ones ahead of the C library, which every
 * dynamically linked program loads at start; a dlopen()ed one comes after
 * it. (Whose pthread_mutex_lock() the program calls does not tell: a
 * sanitizer's runtime or the user's interposer may come before ours.)
 */
bool tfx_preloaded(void)
{
	struct link_map *l = NULL;
	Dl_info info;

	if (!dladdr1((void *)tfx_preloaded, &info, (void **)&l,
		     RTLD_DL_LINKMAP) || !l)
		return false;
	for (l = l->l_prev; l; l = l->l_prev)
		if (l->l_name && tfx_str_prefix(tfx_str_base(l->l_name),
						"libc.so."))
			return false;
	return true;
}

int tfx_glibc_all;

/*
 * The libraries of valgrind's tools that wrap glibc's pthread functions
 * (vgpreload_<tool>-<arch>-linux.so), which valgrind adds to the client's
 * LD_PRELOAD and loads first. Decided by our constructor (tfx_start()),
 * or by a lock call before it (another library's constructor).
 */
static const char *const tfx_checker_libs[] = {
	"vgpreload_helgrind-", "vgpreload_drd-",
};

/* Does @name name one of the checkers' libraries? */
static bool tfx_checker_lib(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(tfx_checker_libs) /
				 sizeof(tfx_checker_libs[0]); i++)
		if (strstr(name, tfx_checker_libs[i]))
			return true;
	return false;
}

/* dl_iterate_phdr(): stop at a checker's library among those loaded. */
static int tfx_checker_loaded(struct dl_phdr_info *info, size_t size,
			      void *arg)
{
	(void)size;
	(void)arg;
	return tfx_checker_lib(info->dlpi_name);
}

/*
 * The sanitizer runtime this library was itself built with, which comes
 * after it (a ThreadSanitizer build of the preload, which the project's
 * checks use to see its own atomics: tests/tsan/). Its functions pass
 * the objects this library leaves to glibc on to glibc's.
 */
static bool tfx_own_runtime(const char *base)
{
#ifdef __SANITIZE_THREAD__
	return tfx_str_prefix(base, "libtsan.so.");
#else
	(void)base;
	return false;
#endif
}

/*
 * A library after this one in the lookup order that defines a function
 * this one replaces: a wrapper that appended its own library to
 * LD_PRELOAD (faketime's libfaketime, which shifts condition-variable
 * deadlines; a lock tracer added by a script that tofutex-run started).
 * Our definitions come first, so its functions would never run for the
 * objects this library serves; passed an object of ours, they would run
 * glibc's code on it. The library's file name, or NULL: the functions
 * after ours (real.c) are glibc's own.
 */
static const char *tfx_interposer_after(void)
{
	const struct tfx_real *real = tfx_glibc();
	void *const *fn = (void *const *)real;
	const char *base;
	Dl_info info;
	size_t i;

	for (i = 0; i < sizeof(*real) / sizeof(*fn); i++) {
		if (!dladdr(fn[i], &info) || !info.dli_fname)
			continue;
		base = tfx_str_base(info.dli_fname);
		/*
		 * glibc's, or another copy of this library (nested
		 * tofutex-run of two installs), whose functions serve the
		 * objects this one leaves to glibc as glibc's do.
		 */
		if (!tfx_str_prefix(base, "libc.so.") &&
		    !tfx_str_prefix(base, "libpthread.so.") &&
		    !tfx_str_prefix(base, "libtofutex-pthread.so.") &&
		    !tfx_own_runtime(base))
			return info.dli_fname;
	}
	return NULL;
}

/*
 * From LD_PRELOAD, and from the objects loaded: a library whose
 * constructor ran before ours may have cleared LD_PRELOAD. A library
 * after ours that replaces the same functions makes glibc serve every
 * object too, through that library (real.c finds its functions), so that
 * it sees every call as without us; the process says so once.
 */
int tfx_glibc_all_decide(void)
{
	const char *after = NULL;
	int v = tfx_checker_lib(getenv("LD_PRELOAD")) ||
		dl_iterate_phdr(tfx_checker_loaded, NULL) ? 1 : -1;

	if (v < 0 && (after = tfx_interposer_after()))
		v = 1;
	/*
	 * One thread reports: the first to decide; not in tofutex-run's
	 * check, which loads this library by dlopen(), after glibc.
	 */
	if (!__atomic_exchange_n(&tfx_glibc_all, v, __ATOMIC_RELAXED) && after &&
	    tfx_preloaded())
		fprintf(stderr,
			"libtofutex-pthread: %s comes after it and replaces pthread functions too: the program runs on glibc's locks, through it (start the program that adds it under tofutex-run, not the other way round)\n",
			after);
	return v;
}

__attribute__((constructor)) static void tfx_start(void)
{
	bool preloaded = tfx_preloaded();
	int err;

	/*
	 * Before any thread the program starts, and before it can change its
	 * environment: a program that clears LD_PRELOAD before its first
	 * lock still runs under the tool that valgrind preloaded.
	 */
	if (!__atomic_load_n(&tfx_glibc_all, __ATOMIC_RELAXED))
		tfx_glibc_all_decide();

	/*
	 * Loaded by dlopen() (tofutex-run's check) rather than preloaded:
	 * the program that will be preloaded reports invalid settings.
	 * Preloaded: report them now rather than at the first contention.
	 */
	if (!preloaded)
		tofutex__env_quiet();
	else
		tofutex__spin_budget();
	/* glibc's own code may use our mutexes' words (lib/glibc.c). */
	tofutex__glibc_words_enable();
	err = tofutex__backend_refused();

	/*
	 * Preloaded, the backend is chosen now, before the program's code
	 * runs, rather than at its first contended lock: a program that
	 * confines itself later (a seccomp filter that kills openat(), a
	 * chroot without /dev) has its descriptor open already; the child
	 * of its fork() chooses in the fork handler (lib/fork.c), before
	 * its own code runs too.
	 */
	if (!err && preloaded &&
	    __atomic_load_n(&tfx_glibc_all, __ATOMIC_RELAXED) < 0)
		tofutex_backend();
	if (!err)
		return;
	fprintf(stderr,
		"libtofutex-pthread: TOFUTEX_BACKEND=module, but the module cannot be used: %s: %s\n",
		TOFUTEX_DEVICE_PATH,
		err == EPROTONOSUPPORT ?
		"not an ABI version or feature set this library can use" :
		strerror(err));
	_exit(127);
}
