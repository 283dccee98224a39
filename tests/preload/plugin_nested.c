// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code that plugin_deepbind.c loads with
 * RTLD_DEEPBIND from its own code: its rwlock calls and the address it
 * has for pthread_rwlock_wrlock.
 */
#include <pthread.h>

int tfx_nested_wrlock(pthread_rwlock_t *rw);
int tfx_nested_rwunlock(pthread_rwlock_t *rw);
void *tfx_nested_rwlock_fn(void);

int tfx_nested_wrlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_wrlock(rw);
}

int tfx_nested_rwunlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_unlock(rw);
}

void *tfx_nested_rwlock_fn(void)
{
	return (void *)pthread_rwlock_wrlock;
}
