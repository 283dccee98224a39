// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - glibc's own pthread functions, for the mutexes and
 * condition variables that stay glibc's (preload.h).
 *
 * The definitions after ours in the lookup order that a reference to
 * glibc's default version of the name binds to (pthread_cond_* at
 * GLIBC_2.3.2, the condition variables of <pthread.h>): glibc's, or
 * another interposer's, unversioned or at that version (start.c); not
 * another library's function of that name at a version of its own. Found in
 * the objects' own symbol tables where the architecture lets dlsym.c
 * read them, not with dlsym(RTLD_NEXT) (but where dlopen() loaded this
 * library after glibc): since glibc 2.35 an LD_AUDIT
 * module's la_symbind() sees dlsym()'s answers too and may hand back its
 * own wrapper, which would call ours again (a wrapper that keeps the last
 * definition it was shown). The table is filled by a
 * constructor, before any thread but the first exists; a call from
 * another library's constructor that runs before ours fills it then. The
 * stores are idempotent, so two threads racing there store the same
 * pointers; the last pointer written is the one every caller tests.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "preload.h"

struct tfx_real tfx_real;

static void *tfx_next(const char *name, const char *version)
{
	void *fn = NULL;

#ifdef TFX_ELF_HOOKS
	fn = tfx_elf_after(name, version);
#endif
	/* Loaded by dlopen() (tofutex-run's check), glibc comes before. */
	if (!fn)
		fn = version ? dlvsym(RTLD_NEXT, name, version) :
			       dlsym(RTLD_NEXT, name);

	if (!fn) {
		fprintf(stderr, "libtofutex-pthread: no %s@%s after this library\n",
			name, version ? version : "");
		abort();
	}
	return fn;
}

#define TFX_RESOLVE(field) \
	__atomic_store_n((void **)&tfx_real.field, \
			 tfx_next("pthread_" #field, \
				  TFX_LIBC_VERSION_pthread_##field), \
			 __ATOMIC_RELEASE)

void tfx_real_resolve(void)
{
	TFX_RESOLVE(mutex_init);
	TFX_RESOLVE(mutex_destroy);
	TFX_RESOLVE(mutex_lock);
	TFX_RESOLVE(mutex_trylock);
	TFX_RESOLVE(mutex_timedlock);
	TFX_RESOLVE(mutex_clocklock);
	TFX_RESOLVE(mutex_unlock);
	TFX_RESOLVE(mutex_consistent);
	TFX_RESOLVE(cond_init);
	TFX_RESOLVE(cond_destroy);
	TFX_RESOLVE(cond_wait);
	TFX_RESOLVE(cond_timedwait);
	TFX_RESOLVE(cond_clockwait);
	TFX_RESOLVE(cond_signal);
	TFX_RESOLVE(rwlock_init);
	TFX_RESOLVE(rwlock_destroy);
	TFX_RESOLVE(rwlock_rdlock);
	TFX_RESOLVE(rwlock_tryrdlock);
	TFX_RESOLVE(rwlock_timedrdlock);
	TFX_RESOLVE(rwlock_clockrdlock);
	TFX_RESOLVE(rwlock_wrlock);
	TFX_RESOLVE(rwlock_trywrlock);
	TFX_RESOLVE(rwlock_timedwrlock);
	TFX_RESOLVE(rwlock_clockwrlock);
	TFX_RESOLVE(rwlock_unlock);
	/* Last: tfx_glibc() tests this one. */
	TFX_RESOLVE(cond_broadcast);
}

__attribute__((constructor)) static void tfx_real_init(void)
{
	tfx_real_resolve();
}
