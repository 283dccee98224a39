// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - glibc's own pthread functions, for the mutexes and
 * condition variables that stay glibc's (preload.h).
 *
 * The definitions after ours in the lookup order: glibc's, in their
 * default versions (pthread_cond_* at GLIBC_2.3.2, the condition
 * variables of <pthread.h>), or another interposer's (start.c). Found in
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

static void *tfx_next(const char *name)
{
	void *fn = NULL;

#ifdef TFX_ELF_HOOKS
	fn = tfx_elf_after(name);
#endif
	/* Loaded by dlopen() (tofutex-run's check), glibc comes before. */
	if (!fn)
		fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		fprintf(stderr, "libtofutex-pthread: no %s after this library\n",
			name);
		abort();
	}
	return fn;
}

#define TFX_RESOLVE(field, name) \
	__atomic_store_n((void **)&tfx_real.field, tfx_next(name), \
			 __ATOMIC_RELEASE)

void tfx_real_resolve(void)
{
	TFX_RESOLVE(mutex_init, "pthread_mutex_init");
	TFX_RESOLVE(mutex_destroy, "pthread_mutex_destroy");
	TFX_RESOLVE(mutex_lock, "pthread_mutex_lock");
	TFX_RESOLVE(mutex_trylock, "pthread_mutex_trylock");
	TFX_RESOLVE(mutex_timedlock, "pthread_mutex_timedlock");
	TFX_RESOLVE(mutex_clocklock, "pthread_mutex_clocklock");
	TFX_RESOLVE(mutex_unlock, "pthread_mutex_unlock");
	TFX_RESOLVE(mutex_consistent, "pthread_mutex_consistent");
	TFX_RESOLVE(cond_init, "pthread_cond_init");
	TFX_RESOLVE(cond_destroy, "pthread_cond_destroy");
	TFX_RESOLVE(cond_wait, "pthread_cond_wait");
	TFX_RESOLVE(cond_timedwait, "pthread_cond_timedwait");
	TFX_RESOLVE(cond_clockwait, "pthread_cond_clockwait");
	TFX_RESOLVE(cond_signal, "pthread_cond_signal");
	TFX_RESOLVE(rwlock_init, "pthread_rwlock_init");
	TFX_RESOLVE(rwlock_destroy, "pthread_rwlock_destroy");
	TFX_RESOLVE(rwlock_rdlock, "pthread_rwlock_rdlock");
	TFX_RESOLVE(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
	TFX_RESOLVE(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
	TFX_RESOLVE(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
	TFX_RESOLVE(rwlock_wrlock, "pthread_rwlock_wrlock");
	TFX_RESOLVE(rwlock_trywrlock, "pthread_rwlock_trywrlock");
	TFX_RESOLVE(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
	TFX_RESOLVE(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
	TFX_RESOLVE(rwlock_unlock, "pthread_rwlock_unlock");
	/* Last: tfx_glibc() tests this one. */
	TFX_RESOLVE(cond_broadcast, "pthread_cond_broadcast");
}

__attribute__((constructor)) static void tfx_real_init(void)
{
	tfx_real_resolve();
}
