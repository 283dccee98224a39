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
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

/* Does the program's pthread_mutex_lock() come from this library? */
static bool tfx_preloaded(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	Dl_info theirs, ours;

	return fn && dladdr(fn, &theirs) && dladdr((void *)tfx_preloaded, &ours) &&
	       theirs.dli_fbase == ours.dli_fbase;
}

__attribute__((constructor)) static void tfx_start(void)
{
	int err;

	/*
	 * Loaded by dlopen() (tofutex-run's check) rather than preloaded:
	 * the program that will be preloaded reports invalid settings.
	 * Preloaded: report them now rather than at the first contention.
	 */
	if (!tfx_preloaded())
		tofutex__env_quiet();
	else
		tofutex__spin_budget();
	/* glibc's own code may use our mutexes' words (lib/glibc.c). */
	tofutex__glibc_words_enable();
	err = tofutex__backend_refused();

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
