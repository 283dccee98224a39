// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code: loaded with RTLD_DEEPBIND, its
 * references to the pthread functions, dlsym() and dlopen() bind to its
 * own dependencies first, glibc, before the preload, as in a real plugin
 * loaded so; the preload's dlopen() makes them its own again (x86-64, arm64).
 */
#include <dlfcn.h>
#include <pthread.h>

int tfx_plugin_lock(pthread_mutex_t *m);
int tfx_plugin_unlock(pthread_mutex_t *m);
int tfx_plugin_rdlock(pthread_rwlock_t *rw);
int tfx_plugin_wrlock(pthread_rwlock_t *rw);
int tfx_plugin_tryrdlock(pthread_rwlock_t *rw);
int tfx_plugin_trywrlock(pthread_rwlock_t *rw);
int tfx_plugin_rwunlock(pthread_rwlock_t *rw);
int tfx_plugin_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
void *tfx_plugin_rwlock_fn(void);
void *tfx_plugin_dlopen(const char *path, int mode);
void *tfx_plugin_dlsym(void *handle, const char *name);
void *tfx_plugin_default(const char *name);

int tfx_plugin_lock(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m);
}

int tfx_plugin_unlock(pthread_mutex_t *m)
{
	return pthread_mutex_unlock(m);
}

int tfx_plugin_rdlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_rdlock(rw);
}

int tfx_plugin_wrlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_wrlock(rw);
}

int tfx_plugin_tryrdlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_tryrdlock(rw);
}

int tfx_plugin_trywrlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_trywrlock(rw);
}

int tfx_plugin_rwunlock(pthread_rwlock_t *rw)
{
	return pthread_rwlock_unlock(rw);
}

int tfx_plugin_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return pthread_cond_wait(c, m);
}

/* The address this object has for pthread_rwlock_wrlock (GLOB_DAT). */
void *tfx_plugin_rwlock_fn(void)
{
	return (void *)pthread_rwlock_wrlock;
}

/*
 * The address of pthread_rwlock_wrlock this object had while its
 * constructor ran: inside glibc's dlopen(), before the preload's made the
 * object's references its own.
 */
void *tfx_plugin_ctor_rwlock_fn(void);

static void *tfx_plugin_ctor_fn;

__attribute__((constructor)) static void tfx_plugin_ctor(void)
{
	tfx_plugin_ctor_fn = (void *)pthread_rwlock_wrlock;
}

void *tfx_plugin_ctor_rwlock_fn(void)
{
	return tfx_plugin_ctor_fn;
}

/* Not tail calls: glibc takes the calling object from the return address. */
void *tfx_plugin_dlopen(const char *path, int mode)
{
	void *h = dlopen(path, mode);

	__asm__ volatile("" : : "r"(h) : "memory");
	return h;
}

void *tfx_plugin_dlsym(void *handle, const char *name)
{
	void *fn = dlsym(handle, name);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

void *tfx_plugin_default(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

/*
 * A table of functions the plugin calls through, filled by the dynamic
 * linker (R_X86_64_64 data relocations, not the GOT); read through a
 * volatile pointer, so that the compiler cannot call the names directly.
 */
struct tfx_plugin_ops {
	int (*wrlock)(pthread_rwlock_t *rw);
	int (*signal)(pthread_cond_t *c);
	int (*lock)(pthread_mutex_t *m);
};

static const struct tfx_plugin_ops tfx_plugin_table = {
	pthread_rwlock_wrlock, pthread_cond_signal, pthread_mutex_lock,
};

static const struct tfx_plugin_ops *volatile tfx_plugin_ops =
	&tfx_plugin_table;

void *tfx_plugin_table_wrlock(void);
void *tfx_plugin_table_signal(void);
void *tfx_plugin_table_lock(void);

void *tfx_plugin_table_wrlock(void)
{
	return (void *)tfx_plugin_ops->wrlock;
}

void *tfx_plugin_table_signal(void)
{
	return (void *)tfx_plugin_ops->signal;
}

void *tfx_plugin_table_lock(void)
{
	return (void *)tfx_plugin_ops->lock;
}

#ifdef __x86_64__
/*
 * glibc's condition variables before 2.3.2, as a binary linked against
 * them references them (pthread_cond_wait@GLIBC_2.2.5): another object
 * behind another function, which stays glibc's.
 */
int tfx_plugin_old_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
__asm__(".symver tfx_plugin_old_cond_wait, pthread_cond_wait@GLIBC_2.2.5");

void *tfx_plugin_old_cond_wait_fn(void);

void *tfx_plugin_old_cond_wait_fn(void)
{
	return (void *)tfx_plugin_old_cond_wait;
}
#endif
