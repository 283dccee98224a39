// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code that registers itself, from its
 * constructor, under its loader's RECURSIVE mutex (tfx_registry, the
 * program's), which the loader holds across the dlopen(): a lock and an
 * unlock one level deeper. Loaded with RTLD_DEEPBIND, its constructor
 * runs glibc's functions (the preload makes the plugin's references its
 * own only once glibc's dlopen() has returned).
 */
#include <pthread.h>

extern pthread_mutex_t tfx_registry;
int tfx_registered = -1;

__attribute__((constructor)) static void tfx_register(void)
{
	int err = pthread_mutex_lock(&tfx_registry);

	if (!err)
		err = pthread_mutex_unlock(&tfx_registry);
	tfx_registered = err;
}
