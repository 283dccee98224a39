// SPDX-License-Identifier: GPL-2.0
/*
 * libtfx-foreign.so - a library with functions of glibc's names at a
 * version of its own (TFX_FOREIGN_1, tests/tools/run.sh writes the
 * version script), as a library with its own threads or its own loader
 * may export: no program's reference to glibc's versions binds to them,
 * so after the preload in the lookup order they are not glibc's, nor an
 * interposer's. Each says on stderr that it was called and does nothing
 * (a mutex lock that excludes nobody, a dlsym() that finds nothing).
 */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static void said(const char *msg, size_t len)
{
	(void)!write(STDERR_FILENO, msg, len);
}

#define SAY(s) said(s, sizeof(s) - 1)

int pthread_mutex_lock(pthread_mutex_t *m)
{
	(void)m;
	SAY("foreign: pthread_mutex_lock\n");
	return 0;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	(void)m;
	SAY("foreign: pthread_mutex_unlock\n");
	return 0;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	(void)c;
	(void)m;
	SAY("foreign: pthread_cond_wait\n");
	return 0;
}

void *dlsym(void *handle, const char *name)
{
	(void)handle;
	(void)name;
	SAY("foreign: dlsym\n");
	return NULL;
}
