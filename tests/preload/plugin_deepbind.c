// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code: loaded with RTLD_DEEPBIND, its
 * references to pthread_mutex_lock() and pthread_mutex_unlock() bind to
 * its own dependencies first, glibc, before the preload: glibc's own
 * code on the caller's mutexes, as in a real plugin loaded so.
 */
#include <pthread.h>

int tfx_plugin_lock(pthread_mutex_t *m);
int tfx_plugin_unlock(pthread_mutex_t *m);

int tfx_plugin_lock(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m);
}

int tfx_plugin_unlock(pthread_mutex_t *m)
{
	return pthread_mutex_unlock(m);
}
